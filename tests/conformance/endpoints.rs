//! Any endpoint through the one pipeline (API Part 9.3: new endpoints and parameters come
//! without a new version; Part 4.1: read one, create and delete exist unshown): paths that
//! stay below the version root, retries that cannot duplicate a write, any list with the same
//! paging rules, sunset, the 401 resend.

use std::time::Duration;

use business_records::error::ErrorCode;
use business_records::{Client, Company, Error, Method, RetryPolicy};
use business_records_reference_server::{
    DeprecationHeaders, Endpoint, Fault, Faults, JournalEntry, ReferenceServer,
};
use serde_json::{Value, json};

crate::cases! {
    ServerControl:
        ids_of_any_character_reach_the_server_as_one_segment,
        paths_that_leave_the_version_root_are_refused_with_nothing_sent,
        a_post_without_a_key_is_sent_once_and_with_one_retried_and_created_once,
        a_requests_own_retry_policy_takes_the_place_of_the_clients,
        a_declared_list_with_an_empty_middle_page_arrives_once_in_order,
        a_410_from_any_endpoint_is_a_sunset,
        a_deprecated_endpoint_of_any_method_says_so,
        a_rejected_token_on_any_call_is_refreshed_once_and_the_call_sent_once_more;
}

/// A client for `server` in one expression, with short retries.
fn client(server: &ReferenceServer) -> Client {
    let retry = RetryPolicy::default().initial_delay(Duration::from_millis(5));
    Client::builder().settings(server.settings()).retry(retry).build().expect("a client")
}

/// The requests the API received for `endpoint`.
fn sent(server: &ReferenceServer, endpoint: Endpoint) -> Vec<JournalEntry> {
    server.journal().into_iter().filter(|r| r.endpoint() == Some(endpoint)).collect()
}

async fn ids_of_any_character_reach_the_server_as_one_segment() {
    let ids = ["a/b", "a/../b", "..x", "%2F", "50%", "why?", "#1", "two words", "Zürich-日本"];
    let mut builder = ReferenceServer::builder();
    for id in ids {
        builder = builder.company(json!({"id": id, "name": format!("name of {id}"), "status": "active"}));
    }
    let server = builder.start().await;
    let client = client(&server);
    for id in ids {
        let company: Company =
            client.get(["companies", id]).send().await.unwrap_or_else(|e| panic!("{id}: {e}"));
        assert_eq!((company.id.as_str(), company.name), (id, format!("name of {id}")));
    }
    let requests = sent(&server, Endpoint::Company);
    assert_eq!(requests.len(), ids.len(), "one request each, all to the read-one endpoint");
    for request in &requests {
        assert!(request.path().starts_with("/v1/companies/"), "{}", request.path());
        assert_eq!(request.path().matches('/').count(), 3, "one segment for the id: {}", request.path());
        assert_eq!(request.status(), 200);
    }
    let missing = client.get(["companies", "cmp_none"]).send::<Company>().await.expect_err("404");
    assert_eq!((missing.status(), missing.code()), (Some(404), Some(&ErrorCode::NotFound)));
}

async fn paths_that_leave_the_version_root_are_refused_with_nothing_sent() {
    let server = ReferenceServer::builder().companies(2).start().await;
    let client = client(&server);
    let literals = [
        "../v2/companies",
        "companies/../../admin",
        "companies/%2E%2E/x",
        "/v1/companies",
        "https://evil.example/v1/companies",
        "//evil.example/companies",
        "companies?limit=1",
        "companies#top",
        "companies//cmp_1",
        "",
    ];
    for literal in literals {
        let refused = client.get(literal).send::<Value>().await.expect_err(literal);
        assert!(
            matches!(&refused, Error::InvalidArgument(e) if e.argument() == "path"),
            "{literal}: {refused:?}"
        );
    }
    for segments in [vec!["companies", ".."], vec!["..", "admin"], vec!["companies", ""], vec!["."]] {
        let refused =
            client.request(Method::DELETE, segments.clone()).send_empty().await.expect_err("refused");
        assert!(matches!(&refused, Error::InvalidArgument(e) if e.argument() == "path"), "{segments:?}");
    }
    assert!(server.journal().is_empty(), "nothing was sent, not even a token request");
}

async fn a_post_without_a_key_is_sent_once_and_with_one_retried_and_created_once() {
    let server = ReferenceServer::builder()
        .collection("notes", [])
        .faults(Faults::new().on(Endpoint::Resource("notes"), 1, Fault::Status(503)).on(
            Endpoint::Resource("notes"),
            2,
            Fault::Status(503),
        ))
        .start()
        .await;
    let client = client(&server);
    let note = json!({"companyId": "cmp_1", "text": "called"});

    let refused = client.request(Method::POST, "notes").json(&note).send::<Value>().await.expect_err("503");
    assert_eq!(refused.status(), Some(503), "{refused:?}");
    assert_eq!(sent(&server, Endpoint::Resource("notes")).len(), 1, "not sent again without a key");
    assert!(server.dataset().records("notes").is_empty());

    let created: Value = client
        .request(Method::POST, "notes")
        .json(&note)
        .idempotency_key("note-7f3a")
        .send()
        .await
        .expect("retried through the 503, then created");
    assert_eq!(created["text"], "called");
    let posts = sent(&server, Endpoint::Resource("notes"));
    let keyed: Vec<Option<&str>> = posts[1..].iter().map(JournalEntry::idempotency_key).collect();
    assert_eq!(keyed, [Some("note-7f3a"), Some("note-7f3a")], "the same key on every attempt");
    assert_eq!(posts.iter().map(JournalEntry::status).collect::<Vec<_>>(), [503, 503, 201]);
    assert_eq!(server.dataset().records("notes").len(), 1, "created once");

    // The same key again answers the first answer and creates nothing.
    let again: Value = client
        .request(Method::POST, "notes")
        .json(&note)
        .idempotency_key("note-7f3a")
        .send()
        .await
        .expect("replayed");
    assert_eq!(again, created);
    assert_eq!(server.dataset().records("notes").len(), 1);
    let id = created["id"].as_str().expect("an id");
    client.request(Method::DELETE, ["notes", id]).send_empty().await.expect("deleted");
    assert!(server.dataset().records("notes").is_empty());
}

/// A request's own retry policy takes the place of the client's: with none, the first 503 is
/// the answer; without one, the client's retries it.
async fn a_requests_own_retry_policy_takes_the_place_of_the_clients() {
    let faults = Faults::new().on(Endpoint::Company, 1, Fault::Status(503)).on(
        Endpoint::Company,
        2,
        Fault::Status(503),
    );
    let company = json!({"id": "cmp_1", "name": "Acme", "status": "active"});
    let server = ReferenceServer::builder().company(company).faults(faults).start().await;
    let client = client(&server);
    let once = client.get(["companies", "cmp_1"]).retry(RetryPolicy::none()).send::<Company>().await;
    assert_eq!(once.expect_err("503").status(), Some(503));
    client.get(["companies", "cmp_1"]).send::<Company>().await.expect("retried by the client's policy");
    let statuses: Vec<u16> = sent(&server, Endpoint::Company).iter().map(JournalEntry::status).collect();
    assert_eq!(statuses, [503, 503, 200]);
}

async fn a_declared_list_with_an_empty_middle_page_arrives_once_in_order() {
    let deals: Vec<Value> = (0..45)
        .map(|n| json!({"id": format!("d{n:02}"), "amount": (n * 37) % 101, "stage": "won"}))
        .collect();
    let server = ReferenceServer::builder()
        .list("deals", deals.clone())
        .faults(Faults::new().on(Endpoint::Resource("deals"), 2, Fault::EmptyPage))
        .start()
        .await;
    let client = client(&server);
    let got: Vec<Value> = client
        .list::<Value>("deals")
        .filter("stage", "won")
        .sort("-amount")
        .limit(10)
        .stream()
        .try_collect()
        .await
        .expect("listing");
    let mut expected = deals;
    expected.sort_by(|a, b| {
        b["amount"].as_i64().cmp(&a["amount"].as_i64()).then(a["id"].as_str().cmp(&b["id"].as_str()))
    });
    assert_eq!(got, expected, "every deal once, in the server's order, the empty page passed over");
    let pages = sent(&server, Endpoint::Resource("deals"));
    assert_eq!(pages.len(), 6, "five pages of ten and the empty one");
    for page in &pages {
        assert_eq!(
            (page.query("sort"), page.query("stage"), page.query("limit")),
            (Some("-amount"), Some("won"), Some("10"))
        );
    }
}

async fn a_410_from_any_endpoint_is_a_sunset() {
    let successor = DeprecationHeaders::new().successor("/v2/deals");
    let server = ReferenceServer::builder()
        .list("deals", [json!({"id": "d1"})])
        .sunset("/v1/deals", successor.clone())
        .sunset("/v1/deals/d1", successor)
        .start()
        .await;
    let client = client(&server);
    let error = client.get(["deals", "d1"]).send::<Value>().await.expect_err("gone");
    assert!(matches!(&error, Error::Sunset(_)), "{error:?}");
    let error = client.list::<Value>("deals").send().await.expect_err("gone");
    let Error::Sunset(sunset) = &error else { panic!("expected a sunset, got {error:?}") };
    assert_eq!(sunset.successor().map(|url| url.path()), Some("/v2/deals"));
    assert_eq!(error.status(), Some(410));
}

async fn a_deprecated_endpoint_of_any_method_says_so() {
    let server = ReferenceServer::builder()
        .collection("notes", [json!({"id": "n_1"}), json!({"id": "n_2"})])
        .deprecated("/v1/notes/n_1", DeprecationHeaders::deprecated())
        .deprecated("/v1/notes/n_2", DeprecationHeaders::deprecated())
        .start()
        .await;
    let heard = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let notices = std::sync::Arc::clone(&heard);
    let client = Client::builder()
        .settings(server.settings())
        .on_deprecation(move |notice| notices.lock().unwrap().push(notice.to_string()))
        .build()
        .expect("client");
    let _: Value = client.get(["notes", "n_1"]).send().await.expect("deprecated, served");
    client.request(Method::DELETE, ["notes", "n_2"]).send_empty().await.expect("deprecated, deleted");
    let heard = heard.lock().unwrap().clone();
    assert_eq!(heard, ["GET /v1/notes/n_1 is deprecated", "DELETE /v1/notes/n_2 is deprecated"]);
}

async fn a_rejected_token_on_any_call_is_refreshed_once_and_the_call_sent_once_more() {
    let server = ReferenceServer::builder().company(json!({"id": "cmp_1", "name": "Acme"})).start().await;
    let client = client(&server);
    let first: Company = client.get(["companies", "cmp_1"]).send().await.expect("read");
    server.expire_tokens();
    let second: Company = client.get(["companies", "cmp_1"]).send().await.expect("read after a refresh");
    assert_eq!(first, second);
    assert_eq!(server.requests(Endpoint::Token), 2, "one token, then one refresh");
    let statuses: Vec<u16> = sent(&server, Endpoint::Company).iter().map(JournalEntry::status).collect();
    assert_eq!(statuses, [200, 401, 200], "the rejected request sent once more");
    for request in sent(&server, Endpoint::Company) {
        assert_eq!(request.authorization_scheme(), Some("Bearer"));
    }
}
