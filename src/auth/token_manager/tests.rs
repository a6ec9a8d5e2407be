//! The token cache's arithmetic, and a property test: token responses of any shape, over
//! HTTP, never make the client panic.

use std::sync::Mutex;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::Value;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::*;
use crate::RetryPolicy;
use crate::auth::{AuthorizationCodeFlow, ClientCredentials, ClientSecret, TokenSet};
use crate::bounds::MAX_TOKEN_LIFETIME;

fn stamp(expires_in: Option<Duration>, now: Instant) -> CachedToken {
    CachedToken::stamp(IssuedToken { access_token: AccessToken::new("t"), expires_in, scopes: vec![] }, now)
}

#[test]
fn refresh_buffer_is_the_smaller_of_five_minutes_and_a_tenth() {
    let now = Instant::now();
    let hour = stamp(Some(Duration::from_secs(3600)), now);
    assert_eq!(hour.refresh_at, Some(now + Duration::from_secs(3300)));
    assert_eq!(hour.expires_at, Some(now + Duration::from_secs(3600)));
    let short = stamp(Some(Duration::from_secs(10)), now);
    assert_eq!(short.refresh_at, Some(now + Duration::from_secs(9)));
}

#[test]
fn lifetimes_beyond_a_year_count_as_one_year() {
    let now = Instant::now();
    let huge = stamp(Some(Duration::from_secs(u64::MAX)), now);
    assert_eq!(huge.expires_at, Some(now + MAX_TOKEN_LIFETIME));
    assert_eq!(huge.refresh_at, Some(now + MAX_TOKEN_LIFETIME - MAX_REFRESH_BUFFER));
}

#[test]
fn failure_backoff_doubles_with_jitter_and_honours_retry_after_up_to_the_cap() {
    for failures in 1..=10u32 {
        let ceiling = FAILURE_BACKOFF_INITIAL.saturating_mul(1 << (failures - 1)).min(FAILURE_BACKOFF_MAX);
        let delay = failure_backoff(failures, None);
        assert!(delay >= ceiling / 2 && delay <= ceiling, "{failures}: {delay:?} outside {ceiling:?}");
    }
    assert_eq!(failure_backoff(1, Some(Duration::from_secs(5))), Duration::from_secs(5));
    assert_eq!(failure_backoff(1, Some(Duration::from_secs(3600))), FAILURE_BACKOFF_MAX);
    assert!(failure_backoff(u32::MAX, None) <= FAILURE_BACKOFF_MAX);
}

/// Answers every token request with the body the current case set.
struct Scripted(Arc<Mutex<Vec<u8>>>);

impl Respond for Scripted {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let body = self.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        ResponseTemplate::new(200).set_body_raw(body, "application/json")
    }
}

/// A JSON value of an unexpected type.
fn odd() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        ".{0,24}".prop_map(Value::from),
        prop::collection::vec(any::<u8>().prop_map(Value::from), 0..3).prop_map(Value::from),
        Just(serde_json::json!({"nested": {"expires_in": 1}})),
    ]
}

/// A field: usually a plausible value, sometimes missing, sometimes of an odd type.
fn field(plausible: impl Strategy<Value = Value>) -> impl Strategy<Value = Option<Value>> {
    prop_oneof![4 => plausible.prop_map(Some), 1 => Just(None), 1 => odd().prop_map(Some)]
}

fn token_response() -> impl Strategy<Value = Value> {
    let expires_in = prop_oneof![
        any::<u64>().prop_map(Value::from),
        Just(Value::from(u64::MAX)),
        (0u64..7200).prop_map(Value::from),
        // Past chrono's last date (year 262143), within what a chrono duration can hold.
        (8_300_000_000_000u64..9_000_000_000_000_000).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        Just(serde_json::json!(1e300)),
        Just(serde_json::json!(3600.5)),
        Just(Value::from("3600")),
    ];
    (
        field("[A-Za-z0-9._~+/-]{1,40}".prop_map(Value::from)),
        field(prop_oneof![Just("Bearer"), Just("bearer"), Just("mac")].prop_map(Value::from)),
        field(expires_in),
        field("[A-Za-z0-9]{1,20}".prop_map(Value::from)),
        field("[A-Za-z0-9._-]{1,60}".prop_map(Value::from)),
        field(prop_oneof![Just("openid api/read"), Just(""), Just("  ")].prop_map(Value::from)),
    )
        .prop_map(|(access_token, token_type, expires_in, refresh_token, id_token, scope)| {
            let fields = [
                ("access_token", access_token),
                ("token_type", token_type),
                ("expires_in", expires_in),
                ("refresh_token", refresh_token),
                ("id_token", id_token),
                ("scope", scope),
            ];
            Value::Object(fields.into_iter().filter_map(|(k, v)| Some((k.to_owned(), v?))).collect())
        })
}

/// Both grants read `body` and the cache stamps what they got: whatever happens must be an
/// `Ok` or an `Err`, never a panic.
async fn read_token_response(auth_url: &str, sender: &HttpSender) {
    let now = Instant::now();
    let source = ClientCredentials::new(auth_url.to_owned(), "id".into(), ClientSecret::new("secret"))
        .into_grant()
        .expect("valid settings");
    if let Ok(issued) = source.fetch(sender).await {
        let cached = CachedToken::stamp(issued, now);
        let _ = (cached.is_fresh(now), cached.is_unexpired(now));
    }
    let flow = AuthorizationCodeFlow::new(auth_url, "app", "http://127.0.0.1:1/cb").expect("valid flow");
    let previous = TokenSet::new("a").with_refresh_token("r");
    if let Ok(refreshed) = flow.refresh_with(sender, &previous).await {
        let tokens = refreshed.tokens;
        let manager =
            TokenManager::with_token(Box::new(NoRefresh), tokens.access_token.clone(), tokens.expires_at);
        let _ = (tokens.is_expired(), format!("{manager:?}"));
        let issued = IssuedToken {
            access_token: tokens.access_token,
            expires_in: refreshed.expires_in,
            scopes: vec![],
        };
        let _ = CachedToken::stamp(issued, now).is_fresh(now);
    }
}

#[test]
fn token_responses_of_any_shape_never_panic() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    let body = Arc::new(Mutex::new(Vec::new()));
    let server = runtime.block_on(async {
        let server = MockServer::builder().start().await;
        Mock::given(wiremock::matchers::method("POST"))
            .respond_with(Scripted(body.clone()))
            .mount(&server)
            .await;
        server
    });
    let sender =
        HttpSender::standalone(Duration::from_secs(5)).expect("sender").with_retry(RetryPolicy::none());
    let mut runner = TestRunner::new(Config { cases: 128, failure_persistence: None, ..Config::default() });
    let outcome = runner.run(&token_response(), |response| {
        *body.lock().unwrap_or_else(|e| e.into_inner()) = serde_json::to_vec(&response).unwrap_or_default();
        runtime.block_on(read_token_response(&server.uri(), &sender));
        Ok(())
    });
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
}

#[test]
fn a_stored_expiry_far_in_the_future_is_clamped_too() {
    let far = chrono::DateTime::<chrono::Utc>::MAX_UTC;
    let manager = TokenManager::with_token(Box::new(NoRefresh), AccessToken::new("t"), Some(far));
    let state = manager.inner.lock();
    let cached = state.cached.as_ref().expect("a usable token");
    assert!(cached.expires_at.is_some_and(|at| at <= Instant::now() + MAX_TOKEN_LIFETIME));
}

/// A user whose sign-out is counted; every fetch would be a fresh token.
#[derive(Debug, Default)]
struct CountingUser {
    sign_outs: std::sync::atomic::AtomicUsize,
}

impl TokenSource for Arc<CountingUser> {
    fn fetch<'a>(&'a self, _: &'a HttpSender) -> BoxFuture<'a, Result<IssuedToken, Error>> {
        Box::pin(async {
            Ok(IssuedToken { access_token: AccessToken::new("fresh"), expires_in: None, scopes: vec![] })
        })
    }

    fn has_user(&self) -> bool {
        true
    }

    fn current(&self) -> BoxFuture<'_, Option<TokenSet>> {
        Box::pin(async { Some(TokenSet::new("current")) })
    }

    fn sign_out<'a>(&'a self, _: &'a HttpSender) -> BoxFuture<'a, Result<(), Error>> {
        self.sign_outs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async { Ok(()) })
    }
}

#[tokio::test]
async fn a_signed_out_manager_hands_out_no_token_and_no_set() {
    let sender = HttpSender::standalone(Duration::from_secs(1)).expect("sender");
    let user = Arc::new(CountingUser::default());
    let manager = TokenManager::with_token(Box::new(Arc::clone(&user)), AccessToken::new("t0"), None);
    assert_eq!(manager.token(&sender).await.expect("a token").secret(), "t0");
    assert!(manager.current().await.is_some());
    manager.sign_out(&sender).await.expect("signed out");
    assert_eq!(user.sign_outs.load(std::sync::atomic::Ordering::SeqCst), 1);
    let err = manager.token(&sender).await.expect_err("no token after sign-out");
    assert!(err.needs_reauthentication(), "{err:?}");
    assert!(manager.current().await.is_none());
    assert!(manager.invalidate(&AccessToken::new("t0")), "nothing cached to send again");
    // A client without a user cannot sign out, and keeps working.
    let fixed = TokenManager::fixed(AccessToken::new("static"));
    assert!(matches!(fixed.sign_out(&sender).await, Err(Error::InvalidArgument(_))));
    assert_eq!(fixed.token(&sender).await.expect("still works").secret(), "static");
}
