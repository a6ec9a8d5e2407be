//! The token cache's arithmetic, and a property test: token responses of any shape, over
//! HTTP, never make the client panic.

use std::sync::Mutex;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::Value;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::*;
use crate::RetryPolicy;
use crate::auth::{AuthorizationCodeFlow, ClientCredentials, ClientSecret};
use crate::bounds::MAX_TOKEN_LIFETIME;
use crate::wire::HttpSender;

fn stamp(expires_in: Option<Duration>, now: Instant) -> CachedToken {
    CachedToken::stamp((AccessToken::new("t"), expires_in), now)
}

/// A manager of a static token.
fn fixed(tokens: TokenSet) -> TokenManager {
    Manager::new(Grant::Fixed, None, tokens, Duration::from_secs(1))
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
    let settings = ClientCredentials::new(auth_url.to_owned(), "id".into(), ClientSecret::new("secret"));
    let Ok((Grant::ClientCredentials(grant), _)) = settings.into_grant(sender) else {
        panic!("valid settings")
    };
    let flow =
        AuthorizationCodeFlow::for_refresh(auth_url, "app").expect("valid flow").with_sender(sender.clone());
    let previous = TokenSet::new("a").with_refresh_token("r");
    for answer in [grant.request().await, flow.refresh_unverified(&previous).await] {
        let Ok(refreshed) = answer else { continue };
        let tokens = refreshed.tokens;
        let _ = (tokens.is_expired(), format!("{:?}", fixed(tokens.clone())));
        let _ = CachedToken::stamp((tokens.access_token, refreshed.expires_in), now).refresh_at;
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
    let sender = HttpSender::shared_default().expect("sender").with_retry(RetryPolicy::none());
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
    let manager = fixed(TokenSet::new("t").with_expires_at(chrono::DateTime::<chrono::Utc>::MAX_UTC));
    let state = manager.lock();
    let cached = state.cached.as_ref().expect("a usable token");
    assert!(cached.expires_at.is_some_and(|at| at <= Instant::now() + MAX_TOKEN_LIFETIME));
}

#[tokio::test]
async fn a_static_token_is_never_replaced_and_cannot_sign_out() {
    let manager = fixed(TokenSet::new("static"));
    assert!(!manager.invalidate(&AccessToken::new("static")), "the same token would be sent again");
    assert!(matches!(manager.sign_out().await, Err(Error::InvalidArgument(_))));
    assert_eq!(manager.token().await.expect("still works").secret(), "static");
    assert!(manager.current().await.is_none());
}
