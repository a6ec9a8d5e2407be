//! The crate's public API, written as a user writes it, run against the
//! reference server. A change to a name or a shape in that contract breaks this file first.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use business_records::auth::{AuthorizationCodeFlow, FileTokenStore, LoopbackRedirect, TokenStore};
use business_records::{
    ApiVersion, Auth, Client, Company, CompanySort, Contact, DeprecationPolicy, Error, ItemStream, Page,
    PageStream, RetryPolicy,
};
use business_records_reference_server::{DeprecationHeaders, Endpoint, Fault, Faults, ReferenceServer};
use http::{HeaderMap, HeaderName, HeaderValue};

use crate::auth_user::browse;
use crate::support;

crate::cases! {
    Anywhere:
        the_server_to_server_snippet_runs_as_written,
        the_sign_in_snippet_runs_as_written;
    ServerControl:
        the_builder_takes_every_documented_setting;
}

/// The server-to-server snippet, with the reference server's URLs and ids in place of the
/// examples'.
async fn server_to_server(
    (base_url, auth_url, id, secret): (&str, &str, &str, &str),
    company: &str,
) -> Result<Summary, Error> {
    let client = Client::builder()
        .base_url(base_url)
        .auth(Auth::client_credentials(auth_url, id, secret).scopes(["api/read"]))
        .build()?;

    let mut active = Vec::new();
    let mut companies = client.companies().status("active").sort(CompanySort::CreatedAt.desc()).stream();
    while let Some(company) = companies.try_next().await? {
        active.push(company);
    }

    let page = client.contacts().company_id(company).limit(50).send().await?;
    let pages: Vec<Page<Contact>> = client.contacts().company_id(company).pages().try_collect().await?;
    let all: Vec<_> = client.companies().max_items(1_000).stream().try_collect().await?;
    Ok(Summary { active, page, pages, all })
}

struct Summary {
    active: Vec<Company>,
    page: Page<Contact>,
    pages: Vec<Page<Contact>>,
    all: Vec<Company>,
}

async fn the_server_to_server_snippet_runs_as_written() {
    let server = ReferenceServer::builder().companies(1_200).contacts_per_company(3).start().await;
    let dataset = server.dataset();
    let company = dataset.companies()[0].id();
    let (base_url, auth_url) = (server.base_url(), server.auth_url());
    let target = (base_url.as_str(), auth_url.as_str(), server.client_id(), server.client_secret());
    let Summary { active, page, pages, all } =
        server_to_server(target, company).await.expect("the snippet runs");

    let got: Vec<&str> = active.iter().map(|c| c.id.as_str()).collect();
    let want: Vec<&str> =
        dataset.companies_sorted("-createdAt", Some("active")).iter().map(|c| c.id()).collect();
    assert!(want.len() > 100, "several pages of active companies");
    assert_eq!(got, want, "every active company, newest first");

    let contacts = dataset.contacts_of(company).count();
    assert!(contacts > 0, "the company has contacts");
    assert_eq!(page.data.len(), contacts.min(50));
    assert!(page.data.iter().all(|c| c.company_id.as_deref() == Some(company)));
    assert_eq!(pages.iter().map(|p| p.data.len()).sum::<usize>(), contacts);
    assert_eq!(all.len(), 1_000, "max_items caps the total, not the page size");
}

async fn the_builder_takes_every_documented_setting() {
    let server = ReferenceServer::builder()
        .companies(30)
        .deprecated("/v1/contacts", DeprecationHeaders::deprecated())
        .faults(Faults::new().on_every(Endpoint::Contacts, 2, Fault::Slow(Duration::from_secs(2))))
        .start()
        .await;
    let notices = Arc::new(AtomicUsize::new(0));
    let heard = Arc::clone(&notices);
    let client = Client::builder()
        .base_url(server.base_url())
        .auth(Auth::client_credentials(server.auth_url(), server.client_id(), server.client_secret()))
        .api_version(ApiVersion::V1)
        .preview("2026-01")
        .retry(RetryPolicy::default().max_attempts(3).initial_delay(Duration::from_millis(1)))
        .page_delay(Duration::from_millis(300))
        .prefetch(false)
        .on_deprecation(move |_notice| {
            heard.fetch_add(1, Ordering::SeqCst);
        })
        .deprecation_policy(DeprecationPolicy::WarnOnce)
        .timeout(Duration::from_millis(500))
        .http_config(|http| http.default_headers(contract_headers()))
        .user_agent("contract-test/1.0")
        .build()
        .expect("every setting is valid");

    // Pages of 10, without prefetch and 300 ms apart, with the preview label and headers.
    let mut pages = client.companies().limit(10).pages();
    pages.try_next().await.expect("page 1").expect("a page");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(server.requests(Endpoint::Companies), 1, "prefetch(false): nothing asked ahead");
    let started = std::time::Instant::now();
    pages.try_next().await.expect("page 2").expect("a page");
    pages.try_next().await.expect("page 3").expect("a page");
    assert!(started.elapsed() >= Duration::from_millis(300), "page_delay: {:?}", started.elapsed());
    for page in support::api_requests(&server) {
        assert!(page.path().starts_with("/v1/"), "api_version: {}", page.path());
        assert_eq!(page.header("x-api-preview"), Some("2026-01"), "preview");
        assert_eq!(page.header("user-agent"), Some("contract-test/1.0"), "user_agent");
        assert_eq!(page.header("x-contract"), Some("yes"), "http_config");
    }

    // A deprecated answer is heard and let through (WarnOnce); a slow one times out.
    client.contacts().send().await.expect("deprecated, not refused");
    assert_eq!(notices.load(Ordering::SeqCst), 1, "on_deprecation");
    let slow = client.contacts().retry(RetryPolicy::none()).send().await.expect_err("timeout");
    assert!(slow.is_timeout(), "timeout: {slow:?}");
    // Three attempts in all, then the last error.
    server.set_faults(Faults::new().on_every(Endpoint::Companies, 1, Fault::Status(503)));
    let error = client.companies().send().await.expect_err("503s");
    assert!(matches!(&error, Error::RetriesExhausted(e) if e.attempts() == 3), "retry: {error:?}");

    // Fallible setters keep the chain `Self -> Self` and `build()` names the bad argument.
    let error =
        Client::builder().base_url(server.base_url()).preview("2026-13").build().expect_err("month 13");
    assert!(error.to_string().contains("preview"), "{error}");
}

/// A header every request carries, set through `http_config`.
fn contract_headers() -> HeaderMap {
    HeaderMap::from_iter([(HeaderName::from_static("x-contract"), HeaderValue::from_static("yes"))])
}

async fn the_sign_in_snippet_runs_as_written() {
    let server = ReferenceServer::builder()
        .token_lifetime(Duration::from_secs(1))
        .refresh_token_rotation(true)
        .start()
        .await;
    let folder = std::env::temp_dir().join(format!("business-records-contract-{}", std::process::id()));
    let path = folder.join("tokens.json");

    let redirect = LoopbackRedirect::bind().await.expect("a loopback port");
    let flow =
        AuthorizationCodeFlow::new(server.auth_url(), server.public_client_id(), redirect.redirect_uri())
            .expect("a valid flow")
            .scopes(["openid", "profile", "email", "api/read"]);
    let request = flow.authorize_url();
    let open_browser = browse; // the reference server signs its test user in at once
    let (callback, _page) =
        tokio::join!(redirect.wait_for_callback_of(&request), open_browser(request.url()));
    let callback = callback.expect("the callback");
    let tokens = flow.exchange(request, &callback).await.expect("the code exchange");
    let signed_in_with = tokens.refresh_token.clone().expect("a refresh token from sign-in");
    let client = Client::builder()
        .base_url(server.base_url())
        .auth(Auth::user(flow, tokens).store(FileTokenStore::new(&path)))
        .build()
        .expect("a client");

    let first = client.companies().limit(3).send().await.expect("a page with the first token");
    assert_eq!(first.data.len(), 3);
    assert!(
        FileTokenStore::new(&path).load().await.expect("the store reads").is_none(),
        "nothing renewed yet"
    );
    assert_eq!(server.token_requests_for("refresh_token"), 0);
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let companies: Vec<Company> =
        client.companies().max_items(3).stream().try_collect().await.expect("companies");
    assert_eq!(companies.len(), 3);
    let saved =
        FileTokenStore::new(&path).load().await.expect("the store reads").expect("the renewed set was saved");
    assert!(server.token_requests_for("refresh_token") >= 1, "the expired token was refreshed");
    let rotated = saved.refresh_token.expect("the saved set carries a refresh token");
    assert_ne!(rotated, signed_in_with, "the rotated refresh token is the one saved");
    let _ = std::fs::remove_dir_all(&folder);
}

/// The stream types are named, own their client, and are `Send + Unpin + 'static`.
#[allow(dead_code)]
fn stream_types_are_named_and_owned(client: &Client) -> (ItemStream<Company>, PageStream<Contact>) {
    fn owned<S: Send + Unpin + 'static>(stream: S) -> S {
        stream
    }
    (owned(client.companies().stream()), owned(client.contacts().pages()))
}
