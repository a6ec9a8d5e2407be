//! Web apps (design section 1, "many users in one process"): users signed in through one flow
//! with sealed pending sign-ins, each with a client derived from one shared client, sign-out
//! with RFC 7009 revocation, and callbacks in the forms web frameworks hand over; over real
//! HTTP against the reference server.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use business_records::auth::{
    AuthServerMetadata, AuthorizationCodeFlow, KeyedTokenStore, MemoryKeyedStore, TokenSet, TokenStore,
};
use business_records::error::{CallbackError, ErrorCode};
use business_records::{Auth, Client, Error};
use business_records_reference_server::{DeprecationHeaders, Endpoint, Fault, Faults, ReferenceServer};

use crate::support;

crate::cases! {
    ServerControl:
        three_users_derived_from_one_client_sign_in_by_login_hint_and_one_signs_out,
        derived_clients_keep_the_shared_clients_settings_and_deprecation_reporting,
        sealed_sign_ins_tampered_expired_or_foreign_fail_before_any_token_request,
        every_callback_form_signs_in,
        sign_out_forgets_the_tokens_even_when_revocation_fails,
        sign_out_revokes_the_refresh_token_a_concurrent_refresh_just_rotated [multi_thread(2)];
}

/// The web app's callback: any loopback URL is registered for the reference server's public
/// client, and nothing needs to listen there (the "browser" stops at the redirect).
const REDIRECT_URI: &str = "http://127.0.0.1:1/callback";
const SECRET: &str = "conformance sealing secret, thirty-two bytes or more";

fn web_flow(server: &ReferenceServer) -> AuthorizationCodeFlow {
    AuthorizationCodeFlow::new(server.auth_url(), server.public_client_id(), REDIRECT_URI)
        .expect("flow")
        .scopes(["openid", "profile", "api/read"])
        .sealing_secret(SECRET)
}

/// Stands in for the browser: opens the authorization URL and returns where the reference
/// server sends it back (the callback URL, with `code`, `state` and `iss`, or `error`).
async fn authorize(authorize_url: &str) -> String {
    let http =
        reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    let response = http.get(authorize_url).send().await.expect("authorization request");
    assert_eq!(response.status(), 302, "the reference server redirects back at once");
    response.headers()["location"].to_str().expect("ascii").to_owned()
}

/// `/login` and `/callback` of a web app, for `user`: the pending sign-in sealed, the
/// browser's round trip, the exchange.
async fn sign_in(flow: &AuthorizationCodeFlow, user: &str) -> TokenSet {
    let request = flow.authorize_url_with([("login_hint", user)]).expect("request");
    let cookie = flow.seal_pending(&request).expect("sealed");
    let callback = authorize(request.url()).await;
    flow.exchange_sealed(&cookie, &callback).await.expect("sign-in")
}

fn sub(tokens: &TokenSet) -> Option<&str> {
    tokens.id_token_claims().and_then(|claims| claims.sub.as_deref())
}

fn callback_kind(result: Result<TokenSet, Error>) -> String {
    match result {
        Err(Error::Callback(kind)) => format!("{kind:?}"),
        other => panic!("expected a callback error, got {other:?}"),
    }
}

async fn three_users_derived_from_one_client_sign_in_by_login_hint_and_one_signs_out() {
    let server = ReferenceServer::builder().companies(30).users(["alice", "bob", "carol"]).start().await;
    let app = support::client_for(&server).build().expect("the app's client");
    let flow = web_flow(&server);
    let stores = MemoryKeyedStore::new();
    let mut users = Vec::new();
    for name in ["alice", "bob", "carol"] {
        let tokens = sign_in(&flow, name).await;
        assert_eq!(sub(&tokens), Some(name), "login_hint chose who signed in");
        let store = stores.for_user(name);
        store.save(&tokens).await.expect("saved");
        let client = app.with_auth(Auth::user(flow.clone(), tokens.clone()).store(store)).expect("derived");
        users.push((name, tokens, client));
    }
    assert_eq!(server.jwks_requests(), 1, "one JWKS fetch verified every user's ID token");

    // All three list at once, each with its own token.
    let pages = futures::future::join_all(users.iter().map(|(_, _, client)| client.companies().send())).await;
    for page in pages {
        assert_eq!(page.expect("a page").data.len(), 20);
    }
    for (name, _, client) in &users {
        let current = client.token_set().await.expect("a user's tokens");
        assert_eq!(sub(&current), Some(*name), "the claims travel with the set");
        let stored = stores.get(name).expect("stored");
        assert_eq!(sub(&stored), Some(*name), "and through the store");
    }

    // Alice signs out: two revocations (refresh token, then access token), her store is empty.
    let (_, alice_tokens, alice) = &users[0];
    assert_eq!(server.active_refresh_tokens("alice").len(), 1);
    let before = server.requests(Endpoint::Revoke);
    alice.sign_out().await.expect("sign-out");
    assert_eq!(server.requests(Endpoint::Revoke) - before, 2);
    assert!(server.active_refresh_tokens("alice").is_empty(), "her grant ended");
    assert!(stores.get("alice").is_none(), "her store was cleared");
    assert!(alice.token_set().await.is_none());
    let err = alice.companies().send().await.expect_err("signed out");
    assert!(err.needs_reauthentication(), "{err:?}");
    assert_eq!(err.to_string(), "sign-in required: the user signed out");
    let err = flow.refresh(alice_tokens).await.expect_err("her refresh token is refused");
    assert_eq!(err.code(), Some(&ErrorCode::InvalidGrant));
    let stolen = Client::builder()
        .base_url(server.base_url())
        .auth(Auth::static_token(alice_tokens.access_token.secret()))
        .build()
        .expect("client");
    let err = stolen.companies().send().await.expect_err("her access token is refused");
    assert_eq!(err.code(), Some(&ErrorCode::InvalidToken));
    // Revoking what the server no longer knows is no error (RFC 7009 section 2.2).
    flow.revoke(alice_tokens).await.expect("revoked twice");

    // The others go on, and their grants are intact.
    for (name, tokens, client) in &users[1..] {
        client.companies().send().await.expect("still signed in");
        assert_eq!(server.active_refresh_tokens(name).len(), 1, "{name}");
        assert!(stores.get(name).is_some(), "{name}");
        flow.refresh(tokens).await.expect("their refresh tokens work");
    }

    // A login_hint that names nobody is refused by the server, and the flow says so.
    let request = flow.authorize_url_with([("login_hint", "mallory")]).expect("request");
    let cookie = flow.seal_pending(&request).expect("sealed");
    let err = flow.exchange_sealed(&cookie, &authorize(request.url()).await).await.expect_err("unknown user");
    assert!(matches!(err, Error::Authorization(_)), "{err:?}");
    assert_eq!(err.code(), Some(&ErrorCode::AccessDenied));
}

async fn derived_clients_keep_the_shared_clients_settings_and_deprecation_reporting() {
    let server = ReferenceServer::builder()
        .companies(30)
        .users(["alice", "bob"])
        .deprecated("/v1/companies", DeprecationHeaders::deprecated())
        .start()
        .await;
    let notices = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&notices);
    let app = support::client_for(&server)
        .user_agent("shared-app/1.0")
        .preview("2026-03")
        .on_deprecation(move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
        })
        .build()
        .expect("the app's client");
    let flow = web_flow(&server);
    for name in ["alice", "bob"] {
        let user = app.with_auth(Auth::user(flow.clone(), sign_in(&flow, name).await)).expect("derived");
        let page = user.companies().limit(5).send().await.expect("a page");
        assert!(page.deprecation.is_some());
    }
    assert_eq!(notices.load(Ordering::SeqCst), 2, "the shared callback saw both users' notices");
    let listings: Vec<_> = server.journal().into_iter().filter(|r| r.path() == "/v1/companies").collect();
    assert_eq!(listings.len(), 2);
    for (listing, name) in listings.iter().zip(["alice", "bob"]) {
        assert_eq!(listing.user(), Some(name), "each user's own token");
        assert_eq!(listing.header("user-agent"), Some("shared-app/1.0"));
        assert_eq!(listing.header("x-api-preview"), Some("2026-03"));
    }
}

async fn sealed_sign_ins_tampered_expired_or_foreign_fail_before_any_token_request() {
    let server = ReferenceServer::builder().companies(5).start().await;
    let flow = web_flow(&server);
    let request = flow.authorize_url();
    let cookie = flow.seal_pending(&request).expect("sealed");
    let callback = authorize(request.url()).await;

    let mut tampered: Vec<char> = cookie.chars().collect();
    let middle = tampered.len() / 2;
    tampered[middle] = if tampered[middle] == 'A' { 'B' } else { 'A' };
    let tampered: String = tampered.into_iter().collect();
    assert_eq!(callback_kind(flow.exchange_sealed(&tampered, &callback).await), "SealedSignInTampered");

    let other_secret = web_flow(&server).sealing_secret("another secret, also thirty-two bytes long");
    assert_eq!(callback_kind(other_secret.exchange_sealed(&cookie, &callback).await), "SealedSignInTampered");

    let other_app =
        AuthorizationCodeFlow::new(server.auth_url(), server.public_client_id(), "http://127.0.0.1:1/other")
            .expect("flow")
            .sealing_secret(SECRET);
    assert_eq!(callback_kind(other_app.exchange_sealed(&cookie, &callback).await), "SealedSignInForeign");

    let brief = web_flow(&server).pending_max_age(Duration::from_millis(100));
    tokio::time::sleep(Duration::from_millis(150)).await;
    let expected = format!("{:?}", CallbackError::SealedSignInExpired(Duration::from_millis(100)));
    assert_eq!(callback_kind(brief.exchange_sealed(&cookie, &callback).await), expected);

    assert_eq!(server.token_requests(), 0, "nothing was sent for a refused value");
    // The genuine value, on another instance of the app (same settings, same secret).
    let tokens = web_flow(&server).exchange_sealed(&cookie, &callback).await.expect("sign-in");
    assert_eq!(sub(&tokens), Some(ReferenceServer::DEFAULT_TEST_USER));
    assert_eq!(server.token_requests(), 1);
}

/// Turns the callback URL the browser came back with into the form a framework hands over.
type CallbackForm = fn(&url::Url) -> String;

async fn every_callback_form_signs_in() {
    let server = ReferenceServer::builder().companies(5).start().await;
    let flow = web_flow(&server);
    let forms: [(&str, CallbackForm); 5] = [
        ("absolute URL", |url| url.to_string()),
        ("origin-form, as axum's Uri", |url| format!("{}?{}", url.path(), url.query().unwrap_or(""))),
        ("query with ?", |url| format!("?{}", url.query().unwrap_or(""))),
        ("bare query", |url| url.query().unwrap_or("").to_owned()),
        ("iss left unencoded, as some browsers pass it on", |url| {
            let pairs: Vec<String> = url.query_pairs().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{}?{}", url.path(), pairs.join("&"))
        }),
    ];
    for (name, form) in forms {
        let request = flow.authorize_url();
        let cookie = flow.seal_pending(&request).expect("sealed");
        let callback = url::Url::parse(&authorize(request.url()).await).expect("a callback URL");
        let given = form(&callback);
        if name.starts_with("iss") {
            assert!(given.contains("iss=http://127.0.0.1:"), "{given}");
        }
        let tokens = flow.exchange_sealed(&cookie, &given).await.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(sub(&tokens), Some(ReferenceServer::DEFAULT_TEST_USER), "{name}");
    }
}

async fn sign_out_forgets_the_tokens_even_when_revocation_fails() {
    let server = ReferenceServer::builder().companies(5).start().await;
    let app = support::client_for(&server).build().expect("the app's client");
    let stores = MemoryKeyedStore::new();

    // The server answers 404 where the flow was told revocation is.
    let broken = web_flow(&server).revocation_url(format!("{}/no-revocation-here", server.auth_url()));
    let tokens = sign_in(&broken, ReferenceServer::DEFAULT_TEST_USER).await;
    let store = stores.for_user("u1");
    store.save(&tokens).await.expect("saved");
    let user = app.with_auth(Auth::user(broken, tokens.clone()).store(store)).expect("derived");
    user.companies().send().await.expect("signed in");
    let err = user.sign_out().await.expect_err("no revocation at that address");
    assert_eq!(err.status(), Some(404), "{err:?}");
    assert!(user.token_set().await.is_none(), "forgotten anyway");
    assert!(stores.get("u1").is_none(), "the store is cleared anyway");
    assert!(user.companies().send().await.expect_err("signed out").needs_reauthentication());

    // A discovery document without `revocation_endpoint`: a clear error, tokens forgotten.
    let mut metadata = AuthServerMetadata::discover(server.auth_url()).await.expect("discovery");
    assert_eq!(
        metadata.revocation_endpoint.as_ref().map(url::Url::as_str),
        Some(server.revocation_url().as_str())
    );
    metadata.revocation_endpoint = None;
    let flow = AuthorizationCodeFlow::from_metadata(&metadata, server.public_client_id(), REDIRECT_URI)
        .expect("flow")
        .scopes(["openid", "api/read"])
        .sealing_secret(SECRET);
    let tokens = sign_in(&flow, ReferenceServer::DEFAULT_TEST_USER).await;
    let user = app.with_auth(Auth::user(flow, tokens)).expect("derived");
    match user.sign_out().await {
        Err(Error::InvalidArgument(e)) => {
            assert_eq!(e.argument(), "revocation_url");
            assert!(e.message().contains("revocation endpoint"), "{}", e.message());
        }
        other => panic!("expected a missing revocation endpoint, got {other:?}"),
    }
    assert!(user.token_set().await.is_none());
    assert_eq!(server.requests(Endpoint::Revoke), 0);
}

async fn sign_out_revokes_the_refresh_token_a_concurrent_refresh_just_rotated() {
    let server = ReferenceServer::builder()
        .companies(5)
        .token_lifetime(Duration::from_secs(1))
        .refresh_token_rotation(true)
        .faults(Faults::new())
        .start()
        .await;
    let flow = web_flow(&server);
    let tokens = sign_in(&flow, ReferenceServer::DEFAULT_TEST_USER).await;
    let app = support::client_for(&server).build().expect("the app's client");
    let user = app.with_auth(Auth::user(flow, tokens)).expect("derived");
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    // The refresh is processed (the token rotates) and its answer held back for 500 ms.
    server.set_faults(Faults::new().on_every(Endpoint::Token, 1, Fault::Slow(Duration::from_millis(500))));
    let listing = tokio::spawn({
        let user = user.clone();
        async move { user.companies().send().await }
    });
    support::eventually("the refresh sent", || server.token_requests_for("refresh_token") == 1).await;
    user.sign_out().await.expect("sign-out");
    let listed = listing.await.expect("task");
    assert!(listed.is_err_and(|e| e.needs_reauthentication()), "the listing ends with the sign-out");
    assert!(
        server.active_refresh_tokens(ReferenceServer::DEFAULT_TEST_USER).is_empty(),
        "the rotated refresh token was the one revoked"
    );
    assert_eq!(server.refresh_token_reuses(), 0);
}
