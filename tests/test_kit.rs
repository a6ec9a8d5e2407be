//! Testing your own code against the reference server, as an app's test suite would: each
//! test says what it needs in a few lines, over real HTTP, with no sleep.

use business_records::auth::AuthorizationCodeFlow;
use business_records::{Auth, Client, Company, Contact, Page, RetryPolicy};
use business_records_reference_server::{Endpoint, Fault, Faults, ReferenceServer, RetryAfter};
use serde_json::json;

/// Where a desktop app would wait for its sign-in's callback.
const LOOPBACK: &str = "http://127.0.0.1:9/callback";

/// The code under test: the names of a status's companies, in name order.
async fn company_names(client: &Client, status: &str) -> Result<Vec<String>, business_records::Error> {
    let companies: Vec<Company> =
        client.companies().status(status).sort("name").stream().try_collect().await?;
    Ok(companies.into_iter().map(|company| company.name).collect())
}

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
    let client = Client::builder().settings(server.settings()).build().unwrap();
    assert_eq!(client.companies().send().await.unwrap().data.len(), 3);
    assert_eq!(server.requests(Endpoint::Companies), 2, "the 429, then the page");
}

#[tokio::test]
async fn the_journal_says_what_your_code_sent() {
    let server = ReferenceServer::builder().companies(5).start().await;
    let client = Client::builder().settings(server.settings()).build().unwrap();
    company_names(&client, "active").await.unwrap();
    let page = server.journal().into_iter().find(|r| r.endpoint() == Some(Endpoint::Companies)).unwrap();
    assert_eq!(
        (page.query("status"), page.query("sort"), page.authorization_scheme()),
        (Some("active"), Some("name"), Some("Bearer"))
    );
    assert_eq!(page.client_id(), Some(server.client_id()));
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
    let mut page = Page::new(vec![acme, Company::new("cmp_2", "Globex")]);
    page.has_more = true;
    page.next_cursor = Some("c2".into());
    assert_eq!(page.data.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["Acme", "Globex"]);
    assert_eq!(Contact::new("ct_1").id.as_deref(), Some("ct_1"));
}
