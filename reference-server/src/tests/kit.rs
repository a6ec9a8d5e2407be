//! The test kit over HTTP: a test's own records and resources, faults by endpoint, expiry on
//! demand.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use super::{get_token, ids, list};
use crate::{Endpoint, Fault, Faults, ReferenceServer, Reply, RetryAfter, TokenSpec};

/// `method` to `{base_url}{path}` with `token`, a JSON body and `Idempotency-Key` when given:
/// the status and the body (JSON, or null).
async fn send(
    server: &ReferenceServer,
    method: Method,
    path: &str,
    token: &str,
    body: Option<Value>,
    key: Option<&str>,
) -> (u16, Value) {
    let mut request =
        reqwest::Client::new().request(method, format!("{}{path}", server.base_url())).bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

fn deals() -> Vec<Value> {
    vec![
        json!({"id": "d1", "stage": "won", "amount": 300, "owner": "ada"}),
        json!({"id": "d2", "stage": "lost", "amount": 100, "owner": "ada"}),
        json!({"id": "d3", "stage": "won", "amount": 200, "owner": "bob"}),
        json!({"id": "d4", "stage": "won", "amount": 300, "owner": "bob"}),
        json!({"id": "d5", "stage": "open", "owner": "ada"}),
    ]
}

#[tokio::test]
async fn own_records_are_served_with_the_real_filter_sort_cursor_and_total_rules() {
    let company =
        |id: &str, name: &str, status: &str| json!({"id": id, "name": name, "status": status, "tier": 1});
    let server = ReferenceServer::builder()
        .company(company("c3", "Cedar", "active"))
        .company(company("c1", "Acme", "active"))
        .company(company("c2", "Birch", "churned"))
        .company(company("c4", "Acme", "active"))
        .contact(json!({"id": "k1", "companyId": "c1", "name": "Ada"}))
        .start()
        .await;
    let dataset = server.dataset();
    assert_eq!(dataset.companies().len(), 4, "own records alone: none generated");
    assert_eq!(dataset.contacts().len(), 1);
    let http = reqwest::Client::new();
    let token = server.mint_token(TokenSpec::new());
    let query = [("status", "active"), ("sort", "-name"), ("limit", "2")];
    let (status, _, first) = list(&server, &http, &token, "/v1/companies", &query).await;
    assert_eq!((status, ids(&first)), (200, vec!["c3".to_owned(), "c1".to_owned()]), "ties by ascending id");
    assert_eq!(
        (first["pagination"]["totalCount"].as_u64(), first["pagination"]["hasMore"].as_bool()),
        (Some(3), Some(true))
    );
    assert_eq!(
        first["data"][0],
        json!({"id": "c3", "name": "Cedar", "status": "active", "tier": 1}),
        "as given"
    );
    let cursor = first["pagination"]["nextCursor"].as_str().unwrap();
    let (_, _, second) =
        list(&server, &http, &token, "/v1/companies", &[query[0], query[1], ("cursor", cursor)]).await;
    assert_eq!(
        (ids(&second), second["pagination"]["hasMore"].as_bool()),
        (vec!["c4".to_owned()], Some(false))
    );
    let (status, _, body) = list(&server, &http, &token, "/v1/companies", &[("sort", "tier")]).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_request")),
        "companies keep their sorts"
    );

    // Asked for, generated records come too.
    let both = ReferenceServer::builder().companies(3).company(company("zz", "Mine", "active")).start().await;
    assert_eq!(both.dataset().companies().len(), 4);
}

#[tokio::test]
async fn upserts_and_removals_are_served_from_the_next_request() {
    let server = ReferenceServer::builder()
        .company(json!({"id": "c1", "name": "Acme", "createdAt": "2020-01-01T00:00:00Z"}))
        .start()
        .await;
    let before = server.dataset();
    let http = reqwest::Client::new();
    let token = server.mint_token(TokenSpec::new());

    let globex = server.upsert_company(json!({"id": "c2", "name": "Globex"})).unwrap();
    let stamp = globex.str("updatedAt").unwrap().to_owned();
    assert_eq!((globex.str("createdAt"), stamp.len()), (Some(stamp.as_str()), 20), "new: created now");
    let acme = server.upsert_company(json!({"id": "c1", "name": "Acme 2"})).unwrap();
    assert_eq!(acme.str("createdAt"), Some("2020-01-01T00:00:00Z"), "kept from the record replaced");
    assert!(acme.str("updatedAt").is_some_and(|t| t >= "2020"));
    let (_, _, page) = list(&server, &http, &token, "/v1/companies", &[("sort", "name")]).await;
    assert_eq!(ids(&page), ["c1", "c2"]);
    assert_eq!(page["data"][0]["name"], "Acme 2");
    assert_eq!(page["pagination"]["totalCount"], 2);

    assert_eq!(server.remove_company("c1").map(|r| r.id().to_owned()).as_deref(), Some("c1"));
    assert_eq!(server.remove_company("c1"), None);
    let (_, _, page) = list(&server, &http, &token, "/v1/companies", &[]).await;
    assert_eq!((ids(&page), page["pagination"]["totalCount"].as_u64()), (vec!["c2".to_owned()], Some(1)));
    assert_eq!(server.dataset().companies(), [globex]);
    assert_eq!(before.companies().len(), 1, "a dataset taken earlier does not change");

    let contact = server.upsert_contact(json!({"id": "k1", "companyId": "c2"})).unwrap();
    assert_eq!(server.dataset().contacts_of("c2").collect::<Vec<_>>(), [&contact]);
    assert!(server.remove_contact("k1").is_some());
    for (bad, resource) in
        [(json!(["x"]), "companies"), (json!({"name": "no id"}), "companies"), (json!({"id": "x"}), "orders")]
    {
        let error = server.upsert(resource, bad.clone()).unwrap_err();
        assert!(matches!(error, crate::Error::InvalidArgument { .. }), "{bad}: {error}");
    }
}

#[tokio::test]
async fn one_record_by_an_id_of_any_characters() {
    let odd = ["a/b", "../x", "100%", "q?x=1", "h#1", "with space", "näme/ü", "..", "a+b"];
    let mut builder = ReferenceServer::builder();
    for id in odd {
        builder = builder.company(json!({"id": id, "name": id}));
    }
    let server = builder.contact(json!({"id": "k/1", "companyId": "a/b"})).start().await;
    let token = server.mint_token(TokenSpec::new());
    for id in odd.iter().filter(|id| **id != "..") {
        // One segment, as a client encodes it (every reserved character escaped).
        let segment: String =
            url::form_urlencoded::byte_serialize(id.as_bytes()).collect::<String>().replace('+', "%20");
        let (status, body) =
            send(&server, Method::GET, &format!("/v1/companies/{segment}"), &token, None, None).await;
        assert_eq!((status, body["id"].as_str()), (200, Some(*id)), "{id} as {segment}");
    }
    let (status, body) = send(&server, Method::GET, "/v1/contacts/k%2F1", &token, None, None).await;
    assert_eq!((status, body["companyId"].as_str()), (200, Some("a/b")));
    for (path, why) in [
        ("/v1/companies/nope", "unknown"),
        ("/v1/companies/%zz", "broken escape"),
        ("/v1/companies/%FF", "not UTF-8"),
    ] {
        let (status, body) = send(&server, Method::GET, path, &token, None, None).await;
        assert_eq!((status, body["error"].as_str()), (404, Some("not_found")), "{why}");
    }
    let (status, _) = send(&server, Method::GET, "/v1/companies/a/b", &token, None, None).await;
    assert_eq!(status, 404, "two segments are not one id");
    let endpoints: Vec<_> = server.journal().iter().map(|r| r.endpoint()).collect();
    assert!(endpoints[..8].iter().all(|e| *e == Some(Endpoint::Company)), "{endpoints:?}");
    assert_eq!(endpoints[8], Some(Endpoint::Contact));
}

#[tokio::test]
async fn a_declared_list_sorts_and_filters_on_any_field() {
    let server = ReferenceServer::builder().list("deals", deals()).start().await;
    let http = reqwest::Client::new();
    let token = server.mint_token(TokenSpec::new());
    let (status, _, page) =
        list(&server, &http, &token, "/v1/deals", &[("stage", "won"), ("sort", "-amount"), ("limit", "2")])
            .await;
    assert_eq!((status, ids(&page)), (200, vec!["d1".to_owned(), "d4".to_owned()]), "ties by ascending id");
    assert_eq!(page["pagination"]["totalCount"], 3);
    let cursor = page["pagination"]["nextCursor"].as_str().unwrap();
    let rest = [("stage", "won"), ("sort", "-amount"), ("cursor", cursor)];
    assert_eq!(ids(&list(&server, &http, &token, "/v1/deals", &rest).await.2), ["d3"]);
    let other = [("stage", "lost"), ("sort", "-amount"), ("cursor", cursor)];
    assert_eq!(list(&server, &http, &token, "/v1/deals", &other).await.2["error"], "invalid_cursor");
    let (_, _, numbers) =
        list(&server, &http, &token, "/v1/deals", &[("amount", "300"), ("owner", "bob")]).await;
    assert_eq!(ids(&numbers), ["d4"]);
    let dataset = server.dataset();
    let expected: Vec<&str> = dataset.sorted("deals", "amount", &[]).iter().map(|r| r.id()).collect();
    let (_, _, all) = list(&server, &http, &token, "/v1/deals", &[("sort", "amount")]).await;
    assert_eq!(ids(&all), expected);
    assert_eq!(ids(&all)[0], "d5", "a record without the field comes first");
    let (status, body) = send(&server, Method::GET, "/v1/deals/d2", &token, None, None).await;
    assert_eq!((status, body["stage"].as_str()), (200, Some("lost")));
    let (status, _) = send(&server, Method::POST, "/v1/deals", &token, Some(json!({})), None).await;
    assert_eq!(status, 405, "a list takes no writes");
}

#[tokio::test]
async fn a_collection_creates_and_deletes_once_per_idempotency_key() {
    let server =
        ReferenceServer::builder().collection("notes", [json!({"id": "n0", "text": "first"})]).start().await;
    let token = server.mint_token(TokenSpec::new());
    let note = json!({"companyId": "cmp_1", "text": "called"});
    let (status, created) =
        send(&server, Method::POST, "/v1/notes", &token, Some(note.clone()), Some("k1")).await;
    assert_eq!(
        (status, created["id"].as_str(), created["text"].as_str()),
        (201, Some("notes_1"), Some("called"))
    );
    let again = send(&server, Method::POST, "/v1/notes", &token, Some(note.clone()), Some("k1")).await;
    assert_eq!(again, (201, created.clone()), "the first answer again");
    assert_eq!(server.dataset().records("notes").len(), 2, "and nothing created");
    let other = send(&server, Method::POST, "/v1/notes", &token, Some(note.clone()), Some("k2")).await;
    assert_eq!(other.1["id"], "notes_2");
    let unkeyed = send(&server, Method::POST, "/v1/notes", &token, Some(note), None).await;
    assert_eq!(unkeyed.1["id"], "notes_3");
    let (status, body) = send(&server, Method::POST, "/v1/notes", &token, Some(json!([1])), None).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_request")));

    assert_eq!(send(&server, Method::GET, "/v1/notes/notes_1", &token, None, None).await, (200, created));
    assert_eq!(send(&server, Method::DELETE, "/v1/notes/notes_1", &token, None, Some("d1")).await.0, 204);
    assert_eq!(
        send(&server, Method::DELETE, "/v1/notes/notes_1", &token, None, Some("d1")).await.0,
        204,
        "replayed"
    );
    assert_eq!(send(&server, Method::DELETE, "/v1/notes/notes_1", &token, None, None).await.0, 404, "gone");
    assert_eq!(send(&server, Method::GET, "/v1/notes/notes_1", &token, None, None).await.0, 404);
    let (_, page) = send(&server, Method::GET, "/v1/notes?sort=-id", &token, None, None).await;
    assert_eq!(ids(&page), ["notes_3", "notes_2", "n0"]);

    // Writes need api/write; a read-only token reads.
    let reader = server.mint_token(TokenSpec::new().scopes(["api/read"]));
    let (status, body) = send(&server, Method::POST, "/v1/notes", &reader, Some(json!({})), None).await;
    assert_eq!((status, body["error"].as_str()), (401, Some("insufficient_scope")));
    assert_eq!(send(&server, Method::DELETE, "/v1/notes/n0", &reader, None, None).await.0, 401);
    assert_eq!(send(&server, Method::GET, "/v1/notes/n0", &reader, None, None).await.0, 200);
    let keys: Vec<Option<String>> =
        server.journal().iter().map(|r| r.idempotency_key().map(str::to_owned)).take(3).collect();
    assert_eq!(keys, [Some("k1".to_owned()), Some("k1".to_owned()), Some("k2".to_owned())]);
}

#[tokio::test]
async fn a_name_nobody_declared_is_a_404_that_says_how_to_declare_it() {
    let server =
        ReferenceServer::builder().companies(1).list("deals", deals()).serve_version(2).start().await;
    let token = server.mint_token(TokenSpec::new());
    let description = |(status, body): (u16, Value)| {
        assert_eq!((status, body["error"].as_str()), (404, Some("not_found")));
        body["error_description"].as_str().unwrap_or_default().to_owned()
    };
    for (method, path) in
        [(Method::POST, "/v1/notes"), (Method::GET, "/v2/notes/n_1"), (Method::GET, "/v1/notes/")]
    {
        assert_eq!(
            description(send(&server, method, path, &token, Some(json!({})), None).await),
            "no resource `notes` is declared: declare it with `.list(\"notes\", records)` or \
             `.collection(\"notes\", records)` on `ReferenceServer::builder()`, or with \
             `--list notes=FILE.json` or `--collection notes` on the reference_server example",
            "{path}"
        );
    }
    // A declared name, a version not served, more segments, a name no resource could have:
    // nothing to declare.
    assert_eq!(send(&server, Method::GET, "/v1/deals", &token, None, None).await.0, 200);
    for path in ["/v3/notes", "/v1/companies/a/b", "/v1/deals/d1/notes", "/v1/no%20tes", "/notes", "/v1/"] {
        let reply = send(&server, Method::GET, path, &token, None, None).await;
        assert_eq!(description(reply), "no such resource", "{path}");
    }
    let auth = reqwest::get(format!("{}/v1/notes", server.auth_url())).await.unwrap();
    let body: Value = auth.json().await.unwrap();
    assert_eq!(body["error_description"], "no such resource", "the authorization server declares nothing");
}

#[tokio::test]
async fn a_declared_resource_takes_the_lifecycle_preview_rate_limit_and_faults_of_the_api() {
    let server = ReferenceServer::builder()
        .collection("notes", [json!({"id": "n1"})])
        .preview_feature("2026-03", "previewField")
        .sunset("/v1/notes/n1", crate::DeprecationHeaders::deprecated())
        .rate_limit(crate::TokenBucket::per_second(1).burst(2).fields(true))
        .faults(Faults::new().on(Endpoint::Resource("notes"), 2, Fault::Status(503)))
        .start()
        .await;
    let http = reqwest::Client::new();
    let token = server.mint_token(TokenSpec::new());
    let get = |path: &'static str, preview: &'static str| {
        http.get(format!("{}{path}", server.base_url()))
            .bearer_auth(&token)
            .header("x-api-preview", preview)
            .send()
    };
    let first = get("/v1/notes", "2026-03").await.unwrap();
    assert_eq!(first.headers()["ratelimit-policy"], "\"default\";q=1;w=1");
    let body: Value = first.json().await.unwrap();
    assert_eq!(body["data"][0]["previewField"], "2026-03");
    assert_eq!(get("/v1/notes", "2026-03").await.unwrap().status(), 503, "the second request to notes");
    assert_eq!(get("/v1/notes/n1", "2026-03").await.unwrap().status(), 410, "a sunset path");
    assert_eq!(get("/v1/notes", "March").await.unwrap().status(), 400, "a malformed label");
    assert_eq!(get("/v1/notes", "2026-03").await.unwrap().status(), 429, "over the rate limit");
    assert_eq!(server.fault_counts(Endpoint::Resource("notes")).get("status_503"), 1);
}

#[tokio::test]
async fn a_fault_on_one_endpoint_leaves_the_others_alone() {
    let faults = Faults::new()
        .on_every(Endpoint::Contacts, 1, Fault::RateLimited(RetryAfter::Seconds(0)))
        .on(Endpoint::Token, 2, Fault::RateLimited(RetryAfter::Raw("18446744073709551615".into())))
        .on(Endpoint::Discovery, 1, Fault::Reply(Reply::new(418).header("x-why", "teapot").body(vec![0xff])));
    let server = ReferenceServer::builder().companies(3).faults(faults).start().await;
    let http = reqwest::Client::new();
    let token = get_token(&server, &http).await;
    assert_eq!(list(&server, &http, &token, "/v1/companies", &[]).await.0, 200);
    let response =
        http.get(format!("{}/v1/contacts", server.base_url())).bearer_auth(&token).send().await.unwrap();
    assert_eq!((response.status().as_u16(), response.headers()["retry-after"].to_str().unwrap()), (429, "0"));
    let response = http
        .post(server.token_url())
        .form(&[("grant_type", "client_credentials")])
        .basic_auth(server.client_id(), Some(server.client_secret()))
        .send()
        .await
        .unwrap();
    assert_eq!(
        (response.status().as_u16(), response.headers()["retry-after"].to_str().unwrap()),
        (429, "18446744073709551615")
    );
    let discovery = http.get(server.discovery_url()).send().await.unwrap();
    assert_eq!(
        (discovery.status().as_u16(), discovery.headers()["x-why"].to_str().unwrap()),
        (418, "teapot")
    );
    assert_eq!(discovery.bytes().await.unwrap().as_ref(), [0xff]);
    assert_eq!(
        http.get(server.discovery_url()).send().await.unwrap().status(),
        200,
        "the first request only"
    );
    let counts = |endpoint| server.fault_counts(endpoint);
    assert_eq!((counts(Endpoint::Companies).total(), counts(Endpoint::Contacts).get("rate_limited")), (0, 1));
    assert_eq!((counts(Endpoint::Token).requests, counts(Endpoint::Jwks).requests), (2, 0));
    assert_eq!((server.requests(Endpoint::Companies), server.requests(Endpoint::Discovery)), (1, 2));
}

#[tokio::test]
async fn a_retry_after_of_zero_takes_milliseconds() {
    let faults = Faults::new()
        .on_sequence(Endpoint::Companies, vec![Some(Fault::RateLimited(RetryAfter::Seconds(0))); 3]);
    let server = ReferenceServer::builder().companies(2).faults(faults).start().await;
    let http = reqwest::Client::new();
    let token = server.mint_token(TokenSpec::new());
    let started = std::time::Instant::now();
    let mut statuses = Vec::new();
    loop {
        let response =
            http.get(format!("{}/v1/companies", server.base_url())).bearer_auth(&token).send().await.unwrap();
        statuses.push(response.status().as_u16());
        if response.status() != 429 {
            break;
        }
        let wait: u64 = response.headers()["retry-after"].to_str().unwrap().parse().unwrap();
        tokio::time::sleep(Duration::from_secs(wait)).await;
    }
    assert_eq!(statuses, [429, 429, 429, 200]);
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    assert_eq!(server.fault_counts(Endpoint::Companies).early_retries, 0, "a retry at once is not early");
}

#[tokio::test]
async fn tokens_and_cursors_expire_on_demand() {
    let server = ReferenceServer::builder().companies(5).start().await;
    let http = reqwest::Client::new();
    let token = get_token(&server, &http).await;
    let (_, _, first) = list(&server, &http, &token, "/v1/companies", &[("limit", "2")]).await;
    let cursor = first["pagination"]["nextCursor"].as_str().unwrap().to_owned();
    server.expire_cursors();
    let (status, _, body) =
        list(&server, &http, &token, "/v1/companies", &[("limit", "2"), ("cursor", &cursor)]).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("cursor_expired")));
    let (_, _, again) = list(&server, &http, &token, "/v1/companies", &[("limit", "2")]).await;
    let fresh = again["pagination"]["nextCursor"].as_str().unwrap();
    assert_eq!(
        list(&server, &http, &token, "/v1/companies", &[("limit", "2"), ("cursor", fresh)]).await.0,
        200
    );

    server.expire_tokens();
    let (status, _, body) = list(&server, &http, &token, "/v1/companies", &[]).await;
    assert_eq!((status, body["error"].as_str()), (401, Some("invalid_token")));
    let renewed = get_token(&server, &http).await;
    assert_eq!(list(&server, &http, &renewed, "/v1/companies", &[]).await.0, 200);
}
