//! What the client does with every answer a token endpoint can give: error statuses with HTML,
//! empty or JSON bodies, `Retry-After`, redirects, hanging servers, absurd lifetimes; one
//! failed token request shared by all callers; the caller's HTTP settings; both HTTP Basic
//! forms. The token endpoint is a scripted wiremock server in front of the reference API.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use business_records::error::{ErrorCode, Origin};
use business_records::{Auth, Client, ClientBuilder, Error, RetryPolicy};
use business_records_reference_server::{ReferenceServer, TokenSpec};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::support;

crate::cases! {
    Anywhere:
        transient_token_endpoint_failures_of_any_body_are_retried_honouring_retry_after,
        the_final_error_keeps_the_real_status_and_retry_after,
        definitive_token_errors_are_not_retried,
        concurrent_callers_share_one_failed_token_request_and_then_a_backoff,
        a_hanging_token_endpoint_costs_each_caller_one_timeout,
        an_absurd_expires_in_is_clamped_and_the_token_is_used,
        a_401_that_survives_the_refresh_and_resend_asks_for_a_new_sign_in,
        redirects_are_never_followed_whatever_the_http_settings,
        a_proxy_set_in_http_config_carries_the_requests,
        http_basic_is_form_encoded_by_default_and_literal_on_request,
        sign_in_refresh_and_introspection_follow_no_redirect_either,
        an_access_token_that_cannot_be_sent_is_a_bad_token_response;
}

/// Answers with each template in turn, then with the last one forever.
struct Script(Mutex<VecDeque<ResponseTemplate>>);

impl Script {
    fn new(answers: impl IntoIterator<Item = ResponseTemplate>) -> Self {
        Script(Mutex::new(answers.into_iter().collect()))
    }
}

impl Respond for Script {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let mut answers = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match answers.len() {
            0 => ResponseTemplate::new(500),
            1 => answers[0].clone(),
            _ => answers.pop_front().unwrap_or_else(|| ResponseTemplate::new(500)),
        }
    }
}

/// A token response carrying a token the reference API accepts.
pub fn token(api: &ReferenceServer, expires_in: serde_json::Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(serde_json::json!({
        "access_token": api.mint_token(TokenSpec::new().scopes(["api/read"])),
        "token_type": "Bearer",
        "expires_in": expires_in,
    }))
}

fn oauth_error(status: u16, code: &str) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .set_body_json(serde_json::json!({"error": code, "error_description": format!("scripted {code}")}))
}

fn html(status: u16) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .insert_header("content-type", "text/html")
        .set_body_string(format!("<html><body><h1>{status}</h1>nginx</body></html>"))
}

/// The reference API with a scripted authorization server.
pub struct Setup {
    pub api: ReferenceServer,
    pub auth: MockServer,
}

impl Setup {
    pub async fn new(answers: impl FnOnce(&ReferenceServer) -> Vec<ResponseTemplate>) -> Setup {
        let api = ReferenceServer::builder().companies(3).start().await;
        let auth = MockServer::builder().start().await;
        Mock::given(method("POST"))
            .and(path("/oauth2/token"))
            .respond_with(Script::new(answers(&api)))
            .mount(&auth)
            .await;
        Setup { api, auth }
    }

    pub fn client(&self) -> ClientBuilder {
        Client::builder()
            .base_url(self.api.base_url())
            .auth(Auth::client_credentials(self.auth.uri(), "scripted-client", "scripted-secret"))
            .retry(RetryPolicy::default().max_attempts(6).initial_delay(Duration::from_millis(5)))
            .timeout(Duration::from_secs(10))
    }

    pub async fn token_requests(&self) -> usize {
        self.auth.received_requests().await.map(|r| r.len()).unwrap_or_default()
    }
}

async fn transient_token_endpoint_failures_of_any_body_are_retried_honouring_retry_after() {
    let setup = Setup::new(|api| {
        vec![
            html(502),
            ResponseTemplate::new(504),
            oauth_error(503, "temporarily_unavailable"),
            oauth_error(500, "server_error"),
            html(429).insert_header("retry-after", "1"),
            token(api, 3600.into()),
        ]
    })
    .await;
    let client = setup.client().build().expect("client");
    let started = Instant::now();
    let page = client.companies().send().await.expect("the sixth answer is a token");
    assert_eq!(page.data.len(), 3);
    assert_eq!(setup.token_requests().await, 6, "one request per scripted answer");
    assert!(started.elapsed() >= Duration::from_secs(1), "the 429's Retry-After was waited out");
}

async fn the_final_error_keeps_the_real_status_and_retry_after() {
    let setup = Setup::new(|_| vec![html(503).insert_header("retry-after", "0")]).await;
    let client = setup.client().retry(RetryPolicy::default().max_attempts(3)).build().expect("client");
    let err = client.companies().send().await.expect_err("the endpoint never recovers");
    assert!(matches!(err, Error::RetriesExhausted(ref e) if e.attempts() == 3), "{err:?}");
    assert_eq!(err.status(), Some(503));
    assert_eq!(err.retry_after(), Some(Duration::ZERO));
    assert!(err.is_retryable() && !err.needs_reauthentication());
    assert_eq!(setup.token_requests().await, 3);

    let setup = Setup::new(|_| vec![oauth_error(500, "server_error")]).await;
    let err = setup.client().retry(RetryPolicy::none()).build().expect("client").companies().send().await;
    let err = err.expect_err("server_error");
    assert!(matches!(err, Error::Api(ref e) if e.origin() == Origin::AuthorizationServer), "{err:?}");
    assert_eq!((err.status(), err.code()), (Some(500), Some(&ErrorCode::ServerError)), "not a made-up 400");
    assert_eq!(err.description(), Some("scripted server_error"));
}

async fn definitive_token_errors_are_not_retried() {
    let cases = [
        (401, "invalid_client", true),
        (400, "invalid_grant", true),
        (400, "invalid_scope", false),
        (400, "unauthorized_client", false),
        // Even with a status that is otherwise retried.
        (503, "invalid_client", true),
    ];
    for (status, code, reauthenticate) in cases {
        let setup = Setup::new(|_| vec![oauth_error(status, code)]).await;
        let err = setup.client().build().expect("client").companies().send().await.expect_err(code);
        assert!(
            matches!(err, Error::Api(ref e) if e.origin() == Origin::AuthorizationServer),
            "{code}: {err:?}"
        );
        assert_eq!(err.status(), Some(status), "{code}");
        assert_eq!(err.code(), Some(&ErrorCode::parse(code)));
        assert_eq!(err.needs_reauthentication(), reauthenticate, "{code}");
        assert!(!err.is_retryable(), "{code}");
        assert_eq!(setup.token_requests().await, 1, "{code} is not retried");
    }
}

async fn concurrent_callers_share_one_failed_token_request_and_then_a_backoff() {
    let setup =
        Setup::new(|_| vec![oauth_error(503, "temporarily_unavailable").insert_header("retry-after", "1")])
            .await;
    let client = setup.client().retry(RetryPolicy::none()).build().expect("client");
    let calls = (0..50).map(|_| {
        let client = client.clone();
        tokio::spawn(async move { client.companies().limit(1).send().await })
    });
    for call in futures::future::join_all(calls).await {
        let err = call.expect("task ran").expect_err("the token endpoint is down");
        assert!(matches!(err, Error::Api(ref e) if e.origin() == Origin::AuthorizationServer), "{err:?}");
        assert_eq!(err.status(), Some(503));
        assert_eq!(err.code(), Some(&ErrorCode::TemporarilyUnavailable));
        assert_eq!(err.retry_after(), Some(Duration::from_secs(1)));
        assert!(err.is_retryable() && !err.needs_reauthentication());
    }
    assert_eq!(setup.token_requests().await, 1, "one token request for fifty callers");

    // Within the backoff (here the server's Retry-After) callers get the failure at once.
    let err = client.companies().send().await.expect_err("still backing off");
    assert_eq!(err.status(), Some(503));
    assert_eq!(setup.token_requests().await, 1, "no request during the backoff");

    // After it, the next caller tries again.
    setup.auth.reset().await;
    Mock::given(method("POST"))
        .and(path("/oauth2/token"))
        .respond_with(token(&setup.api, 3600.into()))
        .mount(&setup.auth)
        .await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    client.companies().send().await.expect("the endpoint is back");
    assert_eq!(setup.token_requests().await, 1, "one request since the reset");
}

async fn a_hanging_token_endpoint_costs_each_caller_one_timeout() {
    let setup = Setup::new(|api| vec![token(api, 3600.into()).set_delay(Duration::from_secs(30))]).await;
    let client = setup
        .client()
        .timeout(Duration::from_millis(300))
        .retry(RetryPolicy::none())
        .build()
        .expect("client");
    let calls = (0..20).map(|_| {
        let client = client.clone();
        tokio::spawn(async move { client.companies().limit(1).send().await })
    });
    for call in futures::future::join_all(calls).await {
        let err = call.expect("task ran").expect_err("the token endpoint hangs");
        assert!(err.is_timeout(), "{err:?}");
    }
    assert_eq!(setup.token_requests().await, 1, "callers joined the one request, none queued behind it");
}

async fn an_absurd_expires_in_is_clamped_and_the_token_is_used() {
    let setup = Setup::new(|api| vec![token(api, u64::MAX.into())]).await;
    let client = setup.client().build().expect("client");
    for _ in 0..3 {
        client.companies().send().await.expect("a token that never expires in practice");
    }
    assert_eq!(setup.token_requests().await, 1, "the token is cached, not refetched");
}

async fn an_access_token_that_cannot_be_sent_is_a_bad_token_response() {
    let setup = Setup::new(|_| {
        vec![ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "access_token": "line one\nline two",
            "token_type": "Bearer",
            "expires_in": 3600,
        }))]
    })
    .await;
    let err = setup.client().build().expect("client").companies().send().await.expect_err("unsendable");
    assert!(matches!(&err, Error::Decode(e) if e.endpoint() == "/oauth2/token"), "{err:?}");
    assert!(err.to_string().contains("not allowed in a header"), "{err}");
    assert!(!err.to_string().contains("line one"), "the token stays out of the message: {err}");
    assert!(support::api_requests(&setup.api).is_empty(), "nothing was sent with it");
}

async fn a_401_that_survives_the_refresh_and_resend_asks_for_a_new_sign_in() {
    let setup = Setup::new(|api| {
        vec![ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "access_token": api.mint_token(TokenSpec::new().audience("another-api")),
            "token_type": "Bearer",
            "expires_in": 3600,
        }))]
    })
    .await;
    let err = setup.client().build().expect("client").companies().send().await.expect_err("refused");
    assert_eq!((err.status(), err.code()), (Some(401), Some(&ErrorCode::InvalidToken)));
    assert!(err.needs_reauthentication(), "{err:?}");
    assert_eq!(setup.token_requests().await, 2, "one refresh after the first 401");
    let statuses: Vec<u16> = support::api_requests(&setup.api).iter().map(|r| r.status()).collect();
    assert_eq!(statuses, [401, 401], "sent once more, never twice");
}

async fn redirects_are_never_followed_whatever_the_http_settings() {
    let elsewhere = MockServer::builder().start().await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(200)).mount(&elsewhere).await;
    let target = format!("{}/steal", elsewhere.uri());
    let setup =
        Setup::new(|_| vec![ResponseTemplate::new(307).insert_header("location", target.as_str())]).await;
    let client = setup
        .client()
        .http_config(|http| {
            let mut headers = http::HeaderMap::new();
            headers.insert("x-configured", http::HeaderValue::from_static("yes"));
            // A caller asking to follow redirects does not get them.
            http.default_headers(headers).redirect(reqwest::redirect::Policy::limited(5))
        })
        .build()
        .expect("client");
    let err = client.companies().send().await.expect_err("a redirect is an error");
    assert!(matches!(&err, Error::Http(e) if e.is_redirect()), "{err:?}");
    let received = setup.auth.received_requests().await.unwrap_or_default();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].headers.get("x-configured").map(|v| v.as_bytes()), Some(&b"yes"[..]));
    assert!(elsewhere.received_requests().await.unwrap_or_default().is_empty(), "the secret stayed home");
}

async fn a_proxy_set_in_http_config_carries_the_requests() {
    let api = ReferenceServer::builder().companies(4).start().await;
    let token = api.mint_token(TokenSpec::new().scopes(["api/read"]));
    let proxy = reqwest::Proxy::http(api.base_url()).expect("proxy url");
    // Nothing listens on port 1: the page can only arrive through the proxy.
    let client = Client::builder()
        .base_url("http://127.0.0.1:1")
        .auth(Auth::static_token(token))
        .http_config(move |http| http.proxy(proxy))
        .build()
        .expect("client");
    let page = client.companies().send().await.expect("through the proxy");
    assert_eq!(page.data.len(), 4);
}

/// Records the `Authorization` header of every token request, and issues a token.
struct Recorder {
    token: ResponseTemplate,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Respond for Recorder {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let header = request.headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default();
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).push(header.to_owned());
        self.token.clone()
    }
}

async fn http_basic_is_form_encoded_by_default_and_literal_on_request() {
    const ID: &str = "my client";
    const SECRET: &str = "s3cr:t/+=";
    let api = ReferenceServer::builder().companies(2).client(ID, SECRET, ["api/read"]).start().await;
    let auth = MockServer::builder().start().await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    Mock::given(method("POST"))
        .respond_with(Recorder { token: token(&api, 60.into()), seen: seen.clone() })
        .mount(&auth)
        .await;
    let decoded = |header: &str| {
        let encoded = header.strip_prefix("Basic ").expect("basic");
        String::from_utf8(base64::engine::general_purpose::STANDARD.decode(encoded).expect("base64"))
            .expect("utf-8")
    };
    for literal in [false, true] {
        let mut auth_settings = Auth::client_credentials(auth.uri(), ID, SECRET);
        if literal {
            auth_settings = auth_settings.literal_basic_auth();
        }
        let client = Client::builder().base_url(api.base_url()).auth(auth_settings).build().expect("client");
        client.companies().send().await.expect("listing");
    }
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert_eq!(
        seen.iter().map(|h| decoded(h)).collect::<Vec<_>>(),
        [
            "my+client:s3cr%3At%2F%2B%3D", // RFC 6749 section 2.3.1
            "my client:s3cr:t/+=",         // API Part 5.4
        ]
    );

    // The reference server accepts both, as API Part 5.4 and RFC 6749 allow.
    for literal in [false, true] {
        let mut settings = Auth::client_credentials(api.auth_url(), ID, SECRET).scopes(["api/read"]);
        if literal {
            settings = settings.literal_basic_auth();
        }
        let client = Client::builder().base_url(api.base_url()).auth(settings).build().expect("client");
        assert_eq!(client.companies().send().await.expect("signed in").data.len(), 2, "literal: {literal}");
    }
    let err = Client::builder()
        .base_url(api.base_url())
        .auth(Auth::client_credentials(api.auth_url(), "a:b", SECRET).literal_basic_auth())
        .build()
        .expect_err("a colon in the id");
    assert!(matches!(err, Error::InvalidArgument(ref e) if e.argument() == "client_id"), "{err:?}");
}

/// Keeps the flag set once any request came in.
struct Flag(Arc<AtomicBool>);

impl Respond for Flag {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        self.0.store(true, Ordering::SeqCst);
        ResponseTemplate::new(200)
    }
}

async fn sign_in_refresh_and_introspection_follow_no_redirect_either() {
    use business_records::auth::{AuthorizationCodeFlow, TokenIntrospector, TokenSet};
    let elsewhere = MockServer::builder().start().await;
    let followed = Arc::new(AtomicBool::new(false));
    Mock::given(method("POST")).respond_with(Flag(followed.clone())).mount(&elsewhere).await;
    let auth = MockServer::builder().start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(308).insert_header("location", format!("{}/x", elsewhere.uri())))
        .mount(&auth)
        .await;
    // A client whose HTTP settings ask to follow redirects carries the flow's requests.
    let following = Client::builder()
        .base_url(auth.uri())
        .auth(Auth::static_token("t"))
        .http_config(|http| http.redirect(reqwest::redirect::Policy::limited(3)))
        .build()
        .expect("client");
    let flow = AuthorizationCodeFlow::new(auth.uri(), "app", "http://127.0.0.1:9/cb")
        .expect("flow")
        .http(&following);
    let err = flow.refresh(&TokenSet::new("a").with_refresh_token("r")).await.expect_err("redirected");
    assert!(matches!(&err, Error::Http(e) if e.is_redirect()), "{err:?}");
    let introspector =
        TokenIntrospector::new(auth.uri(), "api", "secret").expect("introspector").http(&following);
    let err = introspector.introspect("t").await.expect_err("redirected");
    assert!(matches!(&err, Error::Http(e) if e.is_redirect()), "{err:?}");
    assert!(!followed.load(Ordering::SeqCst), "no refresh token or secret left for another address");
}
