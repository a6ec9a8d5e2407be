//! Spec Part 5: client credentials, bearer tokens, token validation on every request.

use std::time::Duration;

use business_records::error::{ErrorCode, Origin};
use business_records::{Auth, Client, Error, Method};
use business_records_reference_server::{ClientAuthMethod, Endpoint, ReferenceServer, TokenSpec};
use serde_json::{Value, json};

use crate::support::{self, Target};

crate::cases! {
    Anywhere:
        basic_and_body_client_authentication_both_work,
        a_wrong_secret_is_a_typed_invalid_client_error,
        a_static_token_that_cannot_be_sent_is_refused_by_build [sync],
        plain_http_is_refused_except_on_loopback [sync];
    ServerControl:
        concurrent_first_calls_share_one_token_request,
        concurrent_calls_right_after_expiry_share_one_token_request,
        tokens_are_fetched_again_before_they_expire,
        expired_wrong_audience_wrong_issuer_and_unknown_key_tokens_are_invalid_token,
        missing_scope_is_insufficient_scope_and_never_refreshes,
        a_scope_the_client_may_not_have_is_invalid_scope,
        a_rejected_token_is_replaced_and_the_request_sent_once_more,
        a_server_taking_one_client_authentication_method_accepts_only_that_one,
        several_scopes_are_requested_joined_by_single_spaces,
        every_kind_of_client_sends_the_bearer_scheme_exactly;
}

async fn basic_and_body_client_authentication_both_work() {
    let target = Target::new().await;
    let basic = target.client().companies().limit(5).send().await.expect("basic auth works");
    assert_eq!(basic.data.len(), 5);

    let c = target.credentials();
    let body = Client::builder()
        .base_url(c.base_url)
        .auth(
            Auth::client_credentials(c.auth_url, c.client_id, c.client_secret)
                .scopes(["api/read"])
                .credentials_in_body(),
        )
        .build()
        .expect("valid client");
    let page = body.companies().limit(5).send().await.expect("credentials in the body work");
    assert_eq!(
        page.data.iter().map(|c| &c.id).collect::<Vec<_>>(),
        basic.data.iter().map(|c| &c.id).collect::<Vec<_>>()
    );
}

async fn a_wrong_secret_is_a_typed_invalid_client_error() {
    let target = Target::new().await;
    let c = target.credentials();
    let client = Client::builder()
        .base_url(c.base_url)
        .auth(Auth::client_credentials(c.auth_url, c.client_id, "definitely-not-the-secret"))
        .build()
        .expect("valid client");
    let err = client.companies().send().await.expect_err("a wrong secret is refused");
    assert!(matches!(err, Error::Api(ref e) if e.origin() == Origin::AuthorizationServer), "{err:?}");
    assert_eq!(err.code(), Some(&ErrorCode::InvalidClient));
    assert!(err.needs_reauthentication());
    assert!(!err.to_string().contains("definitely-not-the-secret"));
}

/// Sends 200 requests at once from clones of `client`.
async fn two_hundred_at_once(client: &Client) {
    let calls = (0..200).map(|_| {
        let client = client.clone();
        tokio::spawn(async move { client.companies().limit(1).send().await })
    });
    for call in futures::future::join_all(calls).await {
        call.expect("task ran").expect("request succeeded");
    }
}

async fn concurrent_first_calls_share_one_token_request() {
    let server = ReferenceServer::start().await;
    let client = support::client_for(&server).build().expect("valid client");
    two_hundred_at_once(&client).await;
    assert_eq!(server.token_requests(), 1);
    assert_eq!(support::api_requests(&server).len(), 200);
}

async fn concurrent_calls_right_after_expiry_share_one_token_request() {
    let server = ReferenceServer::builder().token_lifetime(Duration::from_secs(1)).start().await;
    let client = support::client_for(&server).build().expect("valid client");
    client.companies().limit(1).send().await.expect("first call");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    server.reset_counters();
    two_hundred_at_once(&client).await;
    assert_eq!(server.token_requests(), 1);
    assert!(support::api_requests(&server).iter().all(|r| r.status() == 200));
}

async fn tokens_are_fetched_again_before_they_expire() {
    let server = ReferenceServer::builder().token_lifetime(Duration::from_secs(2)).start().await;
    let client = support::client_for(&server).build().expect("valid client");
    client.companies().limit(1).send().await.expect("first call");
    client.companies().limit(1).send().await.expect("second call, same token");
    assert_eq!(server.token_requests(), 1);
    // The refresh point of a 2 s token is 0.2 s before expiry.
    tokio::time::sleep(Duration::from_millis(1900)).await;
    client.companies().limit(1).send().await.expect("third call, new token");
    assert_eq!(server.token_requests(), 2);
    assert!(
        support::api_requests(&server).iter().all(|r| r.status() == 200),
        "no request went out with an expired token"
    );
}

async fn static_token_error(server: &ReferenceServer, token: String) -> Error {
    let client = Client::builder()
        .base_url(server.base_url())
        .auth(Auth::static_token(token))
        .build()
        .expect("valid client");
    client.companies().send().await.expect_err("the token is refused")
}

async fn expired_wrong_audience_wrong_issuer_and_unknown_key_tokens_are_invalid_token() {
    let server = ReferenceServer::start().await;
    let cases = [
        ("expired", TokenSpec::new().lifetime_secs(-60)),
        ("wrong audience", TokenSpec::new().audience("another-api")),
        ("wrong issuer", TokenSpec::new().issuer("https://evil.example")),
        ("unknown key", TokenSpec::new().unknown_key()),
        ("bad signature", TokenSpec::new().bad_signature()),
    ];
    for (case, spec) in cases {
        let token = server.mint_token(spec);
        let err = static_token_error(&server, token.clone()).await;
        assert_eq!(err.status(), Some(401), "{case}: {err:?}");
        assert_eq!(err.code(), Some(&ErrorCode::InvalidToken), "{case}");
        assert!(!format!("{err} {err:?}").contains(&token), "{case}: the token leaked into the error");
    }
    let valid = server.mint_token(TokenSpec::new().scopes(["api/read"]));
    let client = Client::builder()
        .base_url(server.base_url())
        .auth(Auth::static_token(valid))
        .build()
        .expect("valid client");
    client.companies().limit(1).send().await.expect("a valid minted token works");
}

async fn missing_scope_is_insufficient_scope_and_never_refreshes() {
    let server = ReferenceServer::builder().client("writer", "writer-secret", ["api/write"]).start().await;
    let client = Client::builder()
        .base_url(server.base_url())
        .auth(Auth::client_credentials(server.auth_url(), "writer", "writer-secret").scopes(["api/write"]))
        .build()
        .expect("valid client");
    let err = client.companies().send().await.expect_err("api/read is missing");
    assert_eq!(err.status(), Some(401));
    assert_eq!(err.code(), Some(&ErrorCode::InsufficientScope));
    assert!(!err.needs_reauthentication());
    assert_eq!(server.token_requests(), 1, "insufficient_scope must not trigger a refresh");
    assert_eq!(support::api_requests(&server).len(), 1, "and must not be resent");
}

async fn a_scope_the_client_may_not_have_is_invalid_scope() {
    let server = ReferenceServer::start().await;
    let client = Client::builder()
        .base_url(server.base_url())
        .auth(
            Auth::client_credentials(server.auth_url(), server.client_id(), server.client_secret())
                .scopes(["api/admin"]),
        )
        .build()
        .expect("valid client");
    let err = client.companies().send().await.expect_err("api/admin is not granted");
    assert_eq!(err.code(), Some(&ErrorCode::InvalidScope));
    assert_eq!(support::api_requests(&server).len(), 0, "no API request without a token");
}

async fn a_rejected_token_is_replaced_and_the_request_sent_once_more() {
    let server = ReferenceServer::start().await;
    let client = support::client_for(&server).build().expect("valid client");
    client.companies().limit(1).send().await.expect("first call");
    server.expire_tokens();
    let page = client.companies().limit(1).send().await.expect("the client recovers with a new token");
    assert_eq!(page.data.len(), 1);
    assert_eq!(server.token_requests(), 2);
    let statuses: Vec<u16> = support::api_requests(&server).iter().map(|r| r.status()).collect();
    assert_eq!(statuses, [200, 401, 200]);

    // A static token cannot be replaced: the 401 is returned, and sent once.
    let token = server.mint_token(TokenSpec::new());
    server.expire_tokens();
    server.reset_counters();
    let err = static_token_error(&server, token).await;
    assert!(matches!(&err, Error::Api(e) if e.status() == 401), "the API's own answer: {err:?}");
    assert_eq!(err.code(), Some(&ErrorCode::InvalidToken));
    assert!(err.needs_reauthentication(), "a static token cannot be renewed: {err:?}");
    assert_eq!(support::api_requests(&server).len(), 1);
}

fn a_static_token_that_cannot_be_sent_is_refused_by_build() {
    let err = Client::builder()
        .base_url("https://api.example.com")
        .auth(Auth::static_token("abc\r\nX-Injected: 1"))
        .build()
        .expect_err("not a header value");
    assert!(matches!(&err, Error::InvalidArgument(e) if e.argument() == "auth"), "{err:?}");
    assert!(!err.to_string().contains("Injected"), "the token stays out of the message: {err}");
}

fn plain_http_is_refused_except_on_loopback() {
    let err = Client::builder()
        .base_url("http://api.example.com")
        .auth(Auth::static_token("t"))
        .build()
        .expect_err("plain http to a remote host");
    assert!(matches!(err, Error::InvalidArgument(ref e) if e.argument() == "base_url"), "{err:?}");
    let err = Client::builder()
        .base_url("https://api.example.com")
        .auth(Auth::client_credentials("http://auth.example.com", "id", "secret"))
        .build()
        .expect_err("plain http to a remote authorization server");
    assert!(matches!(err, Error::InvalidArgument(ref e) if e.argument() == "auth_url"), "{err:?}");
}

async fn a_server_taking_one_client_authentication_method_accepts_only_that_one() {
    for (only, in_body) in [(ClientAuthMethod::Body, true), (ClientAuthMethod::Basic, false)] {
        let server = ReferenceServer::builder().companies(2).client_authentication(only).start().await;
        let client = |in_body: bool| {
            let auth =
                Auth::client_credentials(server.auth_url(), server.client_id(), server.client_secret())
                    .scopes(["api/read"]);
            let auth = if in_body { auth.credentials_in_body() } else { auth };
            Client::builder().base_url(server.base_url()).auth(auth).build().expect("valid client")
        };
        client(in_body).companies().send().await.expect("the method the server takes");
        let err = client(!in_body).companies().send().await.expect_err("the other method");
        assert_eq!((err.status(), err.code()), (Some(401), Some(&ErrorCode::InvalidClient)), "{err:?}");
        assert!(support::api_requests(&server).len() == 1, "the refused client sent no API request");
        // The journal shows how each token request authenticated: Basic only without the body.
        let token_requests: Vec<_> = server
            .journal()
            .iter()
            .filter(|r| r.endpoint() == Some(Endpoint::Token))
            .map(|r| (r.authorization_scheme().map(str::to_owned), r.status()))
            .collect();
        let basic = Some("Basic".to_owned());
        let expected = if in_body { [(None, 200), (basic, 401)] } else { [(basic, 200), (None, 401)] };
        assert_eq!(token_requests, expected, "{only:?}");
    }
}

async fn several_scopes_are_requested_joined_by_single_spaces() {
    // Reading companies needs `api/read`, creating a note `api/write`: one token does both only
    // when the server read the two scopes of the request, `api/read api/write`.
    let server = ReferenceServer::builder().companies(2).collection("notes", []).start().await;
    let client = Client::builder()
        .base_url(server.base_url())
        .auth(
            Auth::client_credentials(server.auth_url(), server.client_id(), server.client_secret())
                .scopes(["api/read", "api/write"]),
        )
        .build()
        .expect("valid client");
    client.companies().send().await.expect("api/read granted");
    let created: Value = client
        .request(Method::POST, "notes")
        .json(&json!({"text": "called"}))
        .send()
        .await
        .expect("api/write");
    assert_eq!(created["text"], "called");
    assert_eq!(server.token_requests(), 1, "one token carries both scopes");

    // A user's sign-in asks for them the same way, and the set says what was granted.
    let (_, tokens) =
        crate::auth_user::sign_in_with(&server, &["openid", "api/read", "api/write"]).await.expect("sign-in");
    for scope in ["openid", "api/read", "api/write"] {
        assert!(tokens.scopes.iter().any(|s| s == scope), "{scope} in {:?}", tokens.scopes);
    }
}

async fn every_kind_of_client_sends_the_bearer_scheme_exactly() {
    let server = ReferenceServer::builder().companies(2).start().await;
    let token = server.mint_token(TokenSpec::new().scopes(["api/read"]));
    let (flow, tokens) = crate::auth_user::sign_in(&server).await;
    for auth in [
        Auth::static_token(token),
        Auth::client_credentials(server.auth_url(), server.client_id(), server.client_secret())
            .scopes(["api/read"])
            .into(),
        Auth::user(flow, tokens).into(),
    ] {
        let client = Client::builder().base_url(server.base_url()).auth(auth).build().expect("valid client");
        client.companies().send().await.expect("a page");
        client.get(["companies", "cmp_0001"]).send::<Value>().await.ok();
    }
    let api = support::api_requests(&server);
    assert!(api.len() >= 6, "{api:?}");
    for request in &api {
        assert_eq!(request.authorization_scheme(), Some("Bearer"), "{request:?}");
    }
}
