//! Testing your own code against the reference server, as an app's test suite would: the code
//! under test first (three functions of an app), then its tests, each saying what it needs in a
//! few lines, over real HTTP, with no sleep. Copy it as the start of your own.
//!
//! ```toml
//! [dev-dependencies]
//! business-records-reference-server = "0.1"
//! ```

use std::time::Duration;

use business_records::auth::AuthorizationCodeFlow;
use business_records::error::ErrorCode;
use business_records::{Auth, Client, Company, Contact, Method, Page, RetryPolicy};
use business_records_reference_server::{Endpoint, Fault, Faults, ReferenceServer, RetryAfter};
use serde_json::{Value, json};

// The code under test.

/// The names of a status's companies, in name order.
async fn company_names(client: &Client, status: &str) -> Result<Vec<String>, business_records::Error> {
    let companies: Vec<Company> =
        client.companies().status(status).sort("name").stream().try_collect().await?;
    Ok(companies.into_iter().map(|company| company.name).collect())
}

/// Adds a note to a company (scope `api/write`), created once however often it is retried.
async fn add_note(client: &Client, company_id: &str, text: &str) -> Result<Value, business_records::Error> {
    let note = json!({"companyId": company_id, "text": text});
    client
        .request(Method::POST, "notes")
        .json(&note)
        .idempotency_key(format!("{company_id}:{text}"))
        .send()
        .await
}

/// One line about a page of companies, as the app shows it.
fn page_summary(page: &Page<Company>) -> String {
    match (page.has_more, &page.next_cursor) {
        (true, Some(cursor)) => format!("{} companies, more from {}", page.data.len(), cursor.as_str()),
        _ => format!("{} companies, the last page", page.data.len()),
    }
}

// Its tests.

/// Where a desktop app would wait for its sign-in's callback.
const LOOPBACK: &str = "http://127.0.0.1:9/callback";

#[tokio::test]
async fn your_own_records_are_served_with_the_real_filters_and_sorts() {
    let server = ReferenceServer::builder()
        .company(json!({"id": "cmp_1", "name": "Globex", "status": "active"}))
        .company(json!({"id": "cmp_2", "name": "Acme", "status": "active"}))
        .company(json!({"id": "cmp_3", "name": "Initech", "status": "churned"}))
        .start()
        .await;
    let client = Client::builder().settings(server.settings()).build().unwrap();
    assert_eq!(company_names(&client, "active").await.unwrap(), ["Acme", "Globex"]);
}

#[tokio::test]
async fn records_change_while_the_server_runs() {
    let server = ReferenceServer::builder()
        .company(json!({"id": "cmp_1", "name": "Acme", "status": "active"}))
        .start()
        .await;
    let client = Client::builder().settings(server.settings()).build().unwrap();
    server.upsert_company(json!({"id": "cmp_2", "name": "Globex", "status": "active"})).unwrap();
    server.remove_company("cmp_1");
    assert_eq!(company_names(&client, "active").await.unwrap(), ["Globex"]);
}

#[tokio::test]
async fn a_fault_on_one_endpoint_and_a_retry_in_milliseconds() {
    let faults = Faults::new().on(Endpoint::Companies, 1, Fault::RateLimited(RetryAfter::Seconds(0)));
    let server = ReferenceServer::builder().companies(3).faults(faults).start().await;
    // A backoff of up to a minute: a client that ignored `Retry-After: 0` would wait for it.
    let minute = Duration::from_secs(60);
    let backoff = RetryPolicy::default().initial_delay(minute).max_delay(minute);
    let client = Client::builder().settings(server.settings()).retry(backoff).build().unwrap();
    assert_eq!(client.companies().send().await.unwrap().data.len(), 3);
    let asked: Vec<_> =
        server.journal().into_iter().filter(|entry| entry.endpoint() == Some(Endpoint::Companies)).collect();
    assert_eq!(asked.iter().map(|entry| entry.status()).collect::<Vec<_>>(), [429, 200]);
    // `Retry-After: 0` asks for the retry at once: measured where the requests arrived, it
    // takes milliseconds (a second leaves room for a loaded machine, not for a backoff).
    let retried_after = asked[1].received_at().duration_since(asked[0].received_at()).unwrap();
    assert!(retried_after < Duration::from_secs(1), "retried after {retried_after:?}");
}

#[tokio::test]
async fn tokens_expire_in_the_middle_of_one_call() {
    // The second page request finds every token issued so far expired, as if its lifetime had
    // run out between two pages of the same listing.
    let faults = Faults::new().on(Endpoint::Companies, 2, Fault::ExpireTokens);
    let server = ReferenceServer::builder().companies(5).faults(faults).start().await;
    let client = Client::builder().settings(server.settings()).build().unwrap();
    let all: Vec<Company> = client.companies().limit(2).stream().try_collect().await.unwrap();
    assert_eq!(all.len(), 5);
    let statuses: Vec<u16> = server
        .journal()
        .iter()
        .filter(|entry| entry.endpoint() == Some(Endpoint::Companies))
        .map(|entry| entry.status())
        .collect();
    assert_eq!((statuses, server.token_requests()), (vec![200, 401, 200, 200], 2), "a new token, one resend");
}

#[tokio::test]
async fn the_journal_says_what_your_code_sent() {
    let server = ReferenceServer::builder().companies(5).start().await;
    let client = Client::builder().settings(server.settings()).build().unwrap();
    company_names(&client, "active").await.unwrap();
    let page = server.journal().into_iter().find(|r| r.endpoint() == Some(Endpoint::Companies)).unwrap();
    // One line per request; a listing sends limit, sort, its filters, then the cursor.
    assert_eq!(page.to_string(), "GET /v1/companies?limit=100&sort=name&status=active → 200");
    assert_eq!(page.authorization_scheme(), Some("Bearer"));
    assert_eq!(page.client_id(), Some(server.client_id()));
}

#[tokio::test]
async fn a_note_is_created_once_with_the_write_scope() {
    let server = ReferenceServer::builder().companies(1).collection("notes", []).start().await;
    let client = Client::builder().settings(server.settings()).build().unwrap();
    let note = add_note(&client, "cmp_0001", "called").await.unwrap();
    assert_eq!(add_note(&client, "cmp_0001", "called").await.unwrap(), note, "the same key, the same note");
    assert_eq!(server.dataset().records("notes").len(), 1);

    // A token for reads alone is refused the write, naming the scope it lacks.
    let auth = Auth::client_credentials(server.auth_url(), server.client_id(), server.client_secret());
    let reader =
        Client::builder().base_url(server.base_url()).auth(auth.scopes(["api/read"])).build().unwrap();
    let error = add_note(&reader, "cmp_0001", "again").await.unwrap_err();
    assert_eq!(error.code(), Some(&ErrorCode::InsufficientScope), "{error}");
    assert!(error.to_string().contains("api/write"), "{error}");
}

#[tokio::test]
async fn a_resource_nobody_declared_says_how_to_declare_it() {
    let server = ReferenceServer::builder().companies(1).start().await;
    let client = Client::builder().settings(server.settings()).build().unwrap();
    let error = add_note(&client, "cmp_0001", "called").await.unwrap_err();
    assert_eq!(error.status(), Some(404));
    assert!(error.to_string().contains(r#"`.collection("notes", records)`"#), "{error}");
}

#[tokio::test]
async fn expired_tokens_and_cursors_on_demand() {
    let server = ReferenceServer::builder().companies(150).start().await;
    let client = Client::builder().settings(server.settings()).retry(RetryPolicy::none()).build().unwrap();
    let mut pages = client.companies().limit(100).pages();
    pages.try_next().await.unwrap();
    server.expire_tokens();
    server.expire_cursors();
    let error = pages.try_next().await.unwrap_err();
    assert_eq!((error.items_delivered(), server.token_requests()), (Some(100), 2), "{error}");
}

#[tokio::test]
async fn a_user_signs_in_without_a_browser() {
    let server = ReferenceServer::start().await;
    let flow = AuthorizationCodeFlow::new(server.auth_url(), server.public_client_id(), LOOPBACK);
    let flow = flow.unwrap().scopes(["openid", "api/read"]);
    let request = flow.authorize_url();
    let callback = server.approve(request.url()).await.unwrap();
    let tokens = flow.exchange(request, &callback).await.unwrap();
    assert_eq!(tokens.id_token_claims().unwrap().sub.as_deref(), Some(server.test_user()));
    let user = Client::builder().base_url(server.base_url()).auth(Auth::user(flow, tokens)).build().unwrap();
    assert!(user.companies().send().await.unwrap().has_more, "the user's token works");
}

#[test]
fn records_and_pages_are_built_in_code_for_unit_tests() {
    let mut acme = Company::new("cmp_1", "Acme");
    acme.status = Some("active".into());
    let last = Page::new(vec![acme, Company::new("cmp_2", "Globex")]);
    assert_eq!(page_summary(&last), "2 companies, the last page");
    let mut first = Page::new(vec![Company::new("cmp_0", "Initech")]);
    first.has_more = true;
    first.next_cursor = Some("c2".into());
    assert_eq!(page_summary(&first), "1 companies, more from c2");

    // What the constructors leave unset is what a server that sent nothing more would give.
    let empty: Page<Company> = Page::new(Vec::new());
    assert_eq!((empty.has_more, empty.next_cursor, empty.total_count), (false, None, None));
    assert!(empty.deprecation.is_none() && empty.undecodable.is_empty() && empty.undecodable_total == 0);
    let globex = Company::new("cmp_2", "Globex");
    assert!(globex.extra.is_empty() && globex.fallbacks().is_empty());
    assert_eq!((globex.status, globex.created_at, globex.updated_at), (None, None, None));
    let ada = Contact::new("ct_1");
    assert_eq!((ada.id.as_deref(), ada.company_id, ada.extra.len()), (Some("ct_1"), None, 0));
}
