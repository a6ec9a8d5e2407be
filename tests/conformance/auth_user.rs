//! Spec Parts 4.2 and 5.3: user sign-in with the authorization code and PKCE, refresh,
//! rotation and the token store, over real HTTP against the reference server.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use business_records::auth::{
    AuthServerMetadata, AuthorizationCodeFlow, AuthorizationRequest, LoopbackRedirect, MemoryTokenStore,
    TokenIntrospector, TokenSet, TokenStore, TokenStoreError,
};
use business_records::error::{ErrorCode, Origin};
use business_records::{Auth, Client, Error, RetryPolicy};
use business_records_reference_server::{Endpoint, Fault, Faults, ReferenceServer, ReferenceServerBuilder};
use futures::future::BoxFuture;

use crate::support;

crate::cases! {
    ServerControl:
        a_desktop_app_signs_in_through_the_loopback_redirect_and_lists_companies,
        a_code_is_exchanged_once,
        tokens_are_refreshed_ahead_of_expiry_and_rotated_ones_saved_before_use,
        a_refresh_response_without_a_refresh_token_keeps_the_old_one,
        a_revoked_refresh_token_is_a_typed_reauthentication_error,
        a_rejected_user_token_is_refreshed_once_and_the_request_resent_once,
        insufficient_scope_never_refreshes_a_user_token,
        two_hundred_concurrent_requests_right_after_expiry_share_one_refresh,
        a_stream_of_5000_companies_outlives_many_one_second_tokens,
        a_failing_store_does_not_fail_the_call_and_the_save_is_retried_until_it_lands,
        a_failed_refresh_keeps_a_token_that_still_works_and_the_next_try_waits_for_the_backoff,
        discovery_and_introspection_against_the_reference_server;
}

/// Stands in for the user's browser: opens the authorization URL (the reference server signs
/// the test user in at once) and follows its redirect to the application. Returns the page the
/// application showed.
pub(crate) async fn browse(authorize_url: &str) -> String {
    let http =
        reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    let response = http.get(authorize_url).send().await.expect("authorization request");
    assert_eq!(response.status(), 302, "the reference server redirects back at once");
    let location = response.headers()["location"].to_str().expect("ascii").to_owned();
    http.get(location).send().await.expect("the redirect").text().await.expect("a page")
}

/// The first half of a desktop app's sign-in: a loopback redirect, the authorization request
/// with `scopes`, and the callback the browser brought back.
pub(crate) async fn authorize(
    server: &ReferenceServer,
    scopes: &[&str],
) -> Result<(AuthorizationCodeFlow, AuthorizationRequest, String), Error> {
    let redirect = LoopbackRedirect::bind().await?.timeout(Duration::from_secs(20));
    let flow =
        AuthorizationCodeFlow::new(server.auth_url(), server.public_client_id(), redirect.redirect_uri())?
            .scopes(scopes.iter().copied());
    let request = flow.authorize_url();
    let (callback, _page) = tokio::join!(redirect.wait_for_callback_of(&request), browse(request.url()));
    Ok((flow, request, callback?))
}

/// The whole loopback sign-in of a desktop app, with `scopes`.
pub(crate) async fn sign_in_with(
    server: &ReferenceServer,
    scopes: &[&str],
) -> Result<(AuthorizationCodeFlow, TokenSet), Error> {
    let (flow, request, callback) = authorize(server, scopes).await?;
    let tokens = flow.exchange(request, &callback).await?;
    Ok((flow, tokens))
}

pub(crate) async fn sign_in(server: &ReferenceServer) -> (AuthorizationCodeFlow, TokenSet) {
    sign_in_with(server, &["openid", "profile", "api/read"]).await.expect("sign-in")
}

fn user_client(server: &ReferenceServer, flow: AuthorizationCodeFlow, tokens: TokenSet) -> Client {
    user_client_with(server, Auth::user(flow, tokens).into())
}

fn user_client_with(server: &ReferenceServer, auth: Auth) -> Client {
    Client::builder()
        .base_url(server.base_url())
        .auth(auth)
        .timeout(Duration::from_secs(20))
        .build()
        .expect("client")
}

/// A small dataset and access tokens that live one second.
fn one_second_tokens() -> ReferenceServerBuilder {
    ReferenceServer::builder().companies(5).token_lifetime(Duration::from_secs(1))
}

/// A reference server from `builder` and its test user, signed in.
async fn signed_in(builder: ReferenceServerBuilder) -> (ReferenceServer, AuthorizationCodeFlow, TokenSet) {
    let server = builder.start().await;
    let (flow, tokens) = sign_in(&server).await;
    (server, flow, tokens)
}

async fn a_desktop_app_signs_in_through_the_loopback_redirect_and_lists_companies() {
    let server = ReferenceServer::builder().companies(30).start().await;
    let redirect = LoopbackRedirect::bind().await.expect("bind");
    assert!(redirect.redirect_uri().starts_with("http://127.0.0.1:"));
    let flow =
        AuthorizationCodeFlow::new(server.auth_url(), server.public_client_id(), redirect.redirect_uri())
            .expect("flow")
            .scopes(["openid", "profile", "email", "api/read"]);
    let request = flow.authorize_url();
    let (callback, page) = tokio::join!(redirect.wait_for_callback_of(&request), browse(request.url()));
    assert!(page.contains("You can close this window"), "{page}");
    let callback = callback.expect("callback");
    assert_eq!(server.token_requests(), 0, "nothing is exchanged before the callback is checked");

    let tokens = flow.exchange(request, &callback).await.expect("exchange");
    let claims = tokens.id_token_claims().expect("a verified id token");
    assert_eq!(claims.sub.as_deref(), Some(ReferenceServer::DEFAULT_TEST_USER));
    assert_eq!(claims.aud, [ReferenceServer::DEFAULT_PUBLIC_CLIENT_ID]);
    assert_eq!(claims.iss, server.auth_url());
    assert!(tokens.refresh_token.is_some());
    assert_eq!(tokens.scopes, ["openid", "profile", "email", "api/read"]);
    assert!(tokens.expires_at.is_some_and(|at| at > chrono::Utc::now()));
    assert_eq!(server.token_requests_for("authorization_code"), 1);

    let client = user_client(&server, flow.clone(), tokens.clone());
    let all: Vec<_> = client.companies().stream().try_collect().await.expect("listing");
    assert_eq!(all.len(), 30);
    assert_eq!(server.token_requests(), 1, "the signed-in token is used as it is");

    // A stored ID token can be checked again later.
    let sub = flow.verify_id_token(tokens.id_token.as_ref().expect("id token")).await.map(|c| c.sub);
    assert_eq!(sub.expect("verifies again").as_deref(), Some(ReferenceServer::DEFAULT_TEST_USER));
}

async fn a_code_is_exchanged_once() {
    let server = ReferenceServer::start().await;
    let (flow, request, callback) = authorize(&server, &["openid", "api/read"]).await.expect("authorize");
    flow.exchange(request.clone(), &callback).await.expect("first exchange");
    let err = flow.exchange(request, &callback).await.expect_err("a replayed code");
    assert!(matches!(err, Error::Api(ref e) if e.origin() == Origin::AuthorizationServer), "{err:?}");
    assert_eq!(err.code(), Some(&ErrorCode::InvalidGrant));
}

async fn tokens_are_refreshed_ahead_of_expiry_and_rotated_ones_saved_before_use() {
    let (server, flow, first) = signed_in(
        ReferenceServer::builder()
            .companies(5)
            .token_lifetime(Duration::from_secs(2))
            .refresh_token_rotation(true),
    )
    .await;
    let store = MemoryTokenStore::new();
    let client =
        user_client_with(&server, Auth::user(flow.clone(), first.clone()).store(store.clone()).into());
    client.companies().send().await.expect("first call");
    assert_eq!((server.token_requests_for("refresh_token"), store.saves()), (0, 0));

    // The refresh point of a 2 s token is 0.2 s before expiry.
    tokio::time::sleep(Duration::from_millis(1850)).await;
    client.companies().send().await.expect("second call, after a refresh");
    assert_eq!(server.token_requests_for("refresh_token"), 1);
    let saved = store.get().expect("the rotated set was saved");
    assert_eq!(store.saves(), 1);
    assert_ne!(saved.refresh_token, first.refresh_token, "the server rotated the refresh token");
    assert_ne!(saved.access_token, first.access_token);
    let new_id_token = saved.id_token.as_ref().expect("the refresh brought an id token");
    assert_ne!(saved.id_token, first.id_token);
    assert!(saved.id_token_error().is_none(), "the new id token passed verification");
    let claims = flow.verify_id_token(new_id_token).await.expect("the saved id token verifies");
    assert_eq!(claims.sub.as_deref(), Some(ReferenceServer::DEFAULT_TEST_USER));
    assert!(
        support::api_requests(&server).iter().all(|r| r.status() == 200),
        "no expired token was ever sent"
    );

    // The old refresh token is spent: presenting it again is reuse, which revokes the sign-in.
    let err = flow.refresh(&first).await.expect_err("reuse of a rotated refresh token");
    assert!(err.needs_reauthentication(), "{err:?}");
    tokio::time::sleep(Duration::from_millis(1900)).await;
    let err = client.companies().send().await.expect_err("the revoked sign-in cannot be renewed");
    assert!(matches!(err, Error::Api(ref e) if e.origin() == Origin::AuthorizationServer), "{err:?}");
    assert_eq!(err.code(), Some(&ErrorCode::InvalidGrant));
    assert!(err.needs_reauthentication());
}

async fn a_refresh_response_without_a_refresh_token_keeps_the_old_one() {
    let (server, flow, first) = signed_in(
        ReferenceServer::builder()
            .companies(5)
            .token_lifetime(Duration::from_secs(1))
            .refresh_token_rotation(false),
    )
    .await;
    let store = MemoryTokenStore::new();
    let client = user_client_with(&server, Auth::user(flow, first.clone()).store(store.clone()).into());
    for _ in 0..2 {
        tokio::time::sleep(Duration::from_millis(1000)).await;
        client.companies().send().await.expect("call after expiry");
    }
    assert_eq!(server.token_requests_for("refresh_token"), 2);
    let saved = store.get().expect("saved");
    assert_eq!(saved.refresh_token, first.refresh_token);
}

async fn a_revoked_refresh_token_is_a_typed_reauthentication_error() {
    let (server, flow, tokens) = signed_in(one_second_tokens()).await;
    let client = user_client(&server, flow, tokens);
    server.revoke_refresh_tokens();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let err = client.companies().send().await.expect_err("cannot renew");
    assert!(matches!(err, Error::Api(ref e) if e.origin() == Origin::AuthorizationServer), "{err:?}");
    assert_eq!(err.code(), Some(&ErrorCode::InvalidGrant));
    assert!(err.needs_reauthentication());
    assert_eq!(support::api_requests(&server).len(), 0, "no API request without a valid token");
}

async fn a_rejected_user_token_is_refreshed_once_and_the_request_resent_once() {
    let (server, flow, tokens) = signed_in(ReferenceServer::builder().companies(5)).await;
    let client = user_client(&server, flow, tokens);
    client.companies().send().await.expect("first call");
    server.expire_tokens();
    client.companies().send().await.expect("recovers with a refreshed token");
    assert_eq!(server.token_requests_for("refresh_token"), 1);
    let statuses: Vec<u16> = support::api_requests(&server).iter().map(|r| r.status()).collect();
    assert_eq!(statuses, [200, 401, 200]);
}

async fn insufficient_scope_never_refreshes_a_user_token() {
    let server = ReferenceServer::builder().companies(5).start().await;
    let (flow, tokens) = sign_in_with(&server, &["openid", "api/write"]).await.expect("sign-in");
    let client = user_client(&server, flow, tokens);
    let err = client.companies().send().await.expect_err("api/read is missing");
    assert_eq!(err.code(), Some(&ErrorCode::InsufficientScope));
    assert!(!err.needs_reauthentication());
    assert_eq!(server.token_requests_for("refresh_token"), 0);
    assert_eq!(support::api_requests(&server).len(), 1, "and nothing is resent");
}

async fn two_hundred_concurrent_requests_right_after_expiry_share_one_refresh() {
    let (server, flow, tokens) = signed_in(one_second_tokens()).await;
    let store = MemoryTokenStore::new();
    let client = user_client_with(&server, Auth::user(flow, tokens).store(store.clone()).into());
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let calls = (0..200).map(|_| {
        let client = client.clone();
        tokio::spawn(async move { client.companies().limit(1).send().await })
    });
    for call in futures::future::join_all(calls).await {
        call.expect("task ran").expect("request succeeded");
    }
    assert_eq!(server.token_requests_for("refresh_token"), 1);
    assert_eq!(store.saves(), 1);
    assert_eq!(support::api_requests(&server).len(), 200);
    assert!(support::api_requests(&server).iter().all(|r| r.status() == 200));
}

async fn a_stream_of_5000_companies_outlives_many_one_second_tokens() {
    let (server, flow, tokens) =
        signed_in(ReferenceServer::builder().companies(5_000).token_lifetime(Duration::from_secs(1))).await;
    let client = user_client(&server, flow, tokens);
    let started = Instant::now();
    let mut stream = client.companies().stream();
    let mut ids = std::collections::HashSet::new();
    let mut count = 0usize;
    while let Some(company) = stream.try_next().await.expect("every page arrives") {
        count += 1;
        assert!(ids.insert(company.id), "a company arrived twice");
        // A slow consumer: a millisecond's pause every other item.
        if count.is_multiple_of(2) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let refreshes = server.token_requests_for("refresh_token");
    assert_eq!(count, 5_000);
    let expected: std::collections::HashSet<String> =
        server.dataset().companies_sorted("createdAt", None).iter().map(|c| c.id().to_owned()).collect();
    assert_eq!(ids, expected, "every company exactly once");
    let requests = support::api_requests(&server);
    assert!(requests.iter().all(|r| r.status() == 200), "no request went out with an expired token");
    // Tokens live 1 s and are replaced 0.9 s after they were requested: one refresh per
    // expiry while the stream runs, never two.
    let (low, high) = ((elapsed / 1.0).floor() as usize, (elapsed / 0.9).ceil() as usize + 1);
    println!("5,000 companies in {elapsed:.1} s: {} pages, {refreshes} refreshes", requests.len());
    assert!(elapsed > 4.0, "the consumer was slow enough to need refreshes ({elapsed:.1} s)");
    assert!((low.saturating_sub(1)..=high).contains(&refreshes), "{refreshes} refreshes in {elapsed:.1} s");
}

/// A store whose first save fails.
#[derive(Clone, Default)]
struct FlakyStore {
    inner: MemoryTokenStore,
    attempts: Arc<AtomicUsize>,
}

impl TokenStore for FlakyStore {
    fn load(&self) -> BoxFuture<'_, Result<Option<TokenSet>, TokenStoreError>> {
        self.inner.load()
    }

    fn save<'a>(&'a self, tokens: &'a TokenSet) -> BoxFuture<'a, Result<(), TokenStoreError>> {
        if self.attempts.fetch_add(1, Ordering::SeqCst) == 0 {
            return Box::pin(async { Err(TokenStoreError::new("the disk is full")) });
        }
        self.inner.save(tokens)
    }
}

async fn a_failing_store_does_not_fail_the_call_and_the_save_is_retried_until_it_lands() {
    let (server, flow, first) = signed_in(one_second_tokens().refresh_token_rotation(true)).await;
    let store = FlakyStore::default();
    let client = user_client_with(&server, Auth::user(flow, first.clone()).store(store.clone()).into());
    tokio::time::sleep(Duration::from_millis(1000)).await;
    client.companies().send().await.expect("the refreshed token is used although its save failed");
    assert_eq!(server.token_requests_for("refresh_token"), 1);
    // The set stays in memory and the save is tried again in the background.
    support::eventually("the retried save", || store.inner.get().is_some()).await;
    let saved = store.inner.get().expect("saved");
    assert!(store.attempts.load(Ordering::SeqCst) >= 2);
    assert_eq!(server.token_requests_for("refresh_token"), 1, "a retried save needs no new refresh");
    assert_ne!(saved.refresh_token, first.refresh_token, "the store holds the rotated refresh token");
    // The next refresh presents that rotated token: no reuse, the sign-in lives on.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    client.companies().send().await.expect("the next refresh works");
    assert_eq!(server.token_requests_for("refresh_token"), 2);
    assert_ne!(store.inner.get().expect("saved").refresh_token, saved.refresh_token);
}

async fn a_failed_refresh_keeps_a_token_that_still_works_and_the_next_try_waits_for_the_backoff() {
    let (server, flow, first) = signed_in(
        ReferenceServer::builder()
            .companies(5)
            .token_lifetime(Duration::from_secs(4))
            .refresh_token_rotation(true)
            .faults(Faults::new()),
    )
    .await;
    let store = MemoryTokenStore::new();
    let client = Client::builder()
        .base_url(server.base_url())
        .auth(Auth::user(flow, first.clone()).store(store.clone()))
        .retry(RetryPolicy::none())
        .build()
        .expect("client");
    server.set_faults(Faults::new().on(Endpoint::Token, 1, Fault::Html(503)));
    // Inside the refresh window (the last 0.4 s) but before expiry: the refresh meets a
    // gateway's 503 page, and the call goes out with the current token.
    let expires_at = first.expires_at.expect("an expiry");
    let until_window = (expires_at - chrono::Utc::now()).to_std().unwrap_or_default();
    tokio::time::sleep(until_window.saturating_sub(Duration::from_millis(300))).await;
    client.companies().send().await.expect("the current token still works");
    assert_eq!(server.fault_counts(Endpoint::Token).get("html_503"), 1);
    // Within the backoff after the failure: the current token again, no token request.
    client.companies().send().await.expect("the current token still works");
    assert_eq!(server.fault_counts(Endpoint::Token).requests, 1);
    assert_eq!(store.saves(), 0);
    // Once the token has expired and the backoff (at most 1 s) is over, the next call
    // refreshes.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    client.companies().send().await.expect("refreshed");
    assert_eq!(server.fault_counts(Endpoint::Token).requests, 2);
    let saved = store.get().expect("saved");
    assert_ne!(saved.refresh_token, first.refresh_token);
    assert_eq!(
        server.active_refresh_tokens(server.test_user()),
        [saved.refresh_token.expect("rt").secret().to_owned()]
    );
    assert!(
        support::api_requests(&server).iter().all(|r| r.status() == 200),
        "no expired token was ever sent"
    );
}

async fn discovery_and_introspection_against_the_reference_server() {
    let server = ReferenceServer::builder().companies(1).start().await;
    let metadata = AuthServerMetadata::discover(server.auth_url()).await.expect("discovery");
    assert_eq!(metadata.issuer, server.auth_url());
    assert_eq!(metadata.token_endpoint.as_ref().map(|u| u.as_str()), Some(server.token_url().as_str()));
    assert!(metadata.supports_pkce_s256() && metadata.supports_grant("refresh_token"));
    assert!(metadata.authorization_response_iss_parameter_supported);

    let (_, tokens) = sign_in(&server).await;
    let introspector =
        TokenIntrospector::from_metadata(&metadata, server.client_id(), server.client_secret())
            .expect("introspector");
    let info = introspector.introspect(tokens.access_token.secret()).await.expect("introspection");
    assert!(info.active);
    assert_eq!(info.subject.as_deref(), Some(ReferenceServer::DEFAULT_TEST_USER));
    assert_eq!(info.client_id.as_deref(), Some(ReferenceServer::DEFAULT_PUBLIC_CLIENT_ID));
    assert!(info.scopes.iter().any(|s| s == "api/read"));
    let refresh = introspector.credentials_in_body();
    let info =
        refresh.introspect(tokens.refresh_token.as_ref().expect("rt").secret()).await.expect("introspection");
    assert!(info.active);
    assert!(!refresh.introspect("not-a-token").await.expect("introspection").active);

    let wrong = TokenIntrospector::new(server.auth_url(), server.client_id(), "wrong").expect("introspector");
    let err = wrong.introspect("x").await.expect_err("bad credentials");
    assert_eq!(err.code(), Some(&ErrorCode::InvalidClient));

    // The flow can be made from the document too.
    let flow =
        AuthorizationCodeFlow::from_metadata(&metadata, server.public_client_id(), "http://127.0.0.1:1/cb")
            .expect("flow from metadata");
    assert!(flow.authorize_url().url().starts_with(&server.authorize_url()));
}
