//! The token manager's state machine on Tokio's paused clock, with a scripted refresh grant and
//! no HTTP: each transition of [`State`], and what a caller sees in each phase.

use std::collections::VecDeque;
use std::sync::Mutex;

use futures::future::BoxFuture;

use super::*;
use crate::auth::MemoryTokenStore;
use crate::error::{ApiError, ErrorCode, Origin};

/// A test's refresh grant: the answer to a refresh of a set.
pub(super) type Script = Box<dyn Fn(&TokenSet) -> BoxFuture<'static, Result<Refreshed, Error>> + Send + Sync>;

/// One answer of the scripted source: after `latency`, a token (its name and lifetime) or an
/// error.
struct Answer {
    latency: Duration,
    result: Result<(&'static str, Option<Duration>), Error>,
}

fn token(name: &'static str, lifetime: u64, latency_ms: u64) -> Answer {
    let latency = Duration::from_millis(latency_ms);
    Answer { latency, result: Ok((name, Some(Duration::from_secs(lifetime)))) }
}

fn failure(error: Error, latency_ms: u64) -> Answer {
    Answer { latency: Duration::from_millis(latency_ms), result: Err(error) }
}

/// A refresh grant that answers from a script, and notes when each request started and the
/// refresh token it presented. A set without a refresh token is refused before anything is
/// sent, as the flow refuses it.
#[derive(Default)]
struct Scripted {
    answers: Mutex<VecDeque<Answer>>,
    started: Mutex<Vec<(Instant, String)>>,
}

impl Scripted {
    fn new(answers: impl IntoIterator<Item = Answer>) -> Arc<Self> {
        Arc::new(Scripted { answers: Mutex::new(answers.into_iter().collect()), started: Mutex::default() })
    }

    /// Token requests started so far.
    fn fetches(&self) -> usize {
        self.started.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// The refresh tokens presented, in order.
    fn presented(&self) -> Vec<String> {
        self.started.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|(_, t)| t.clone()).collect()
    }

    /// Answers a refresh of `tokens`: a set named `n` carries the refresh token `r-n`.
    fn fetch(&self, tokens: &TokenSet) -> BoxFuture<'static, Result<Refreshed, Error>> {
        let Some(presented) = tokens.refresh_token.as_ref().map(|t| t.secret().to_owned()) else {
            return Box::pin(async { Err(Error::ReauthenticationRequired("no refresh token")) });
        };
        self.started.lock().unwrap_or_else(|e| e.into_inner()).push((Instant::now(), presented));
        let answer = self.answers.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
        Box::pin(async move {
            let answer = answer.expect("no more answers scripted");
            tokio::time::sleep(answer.latency).await;
            let (name, expires_in) = answer.result?;
            let tokens = TokenSet::new(name).with_refresh_token(format!("r-{name}"));
            Ok(Refreshed { tokens, expires_in, new_id_token: None })
        })
    }
}

/// A manager that starts from `tokens`, renews them from `script` and keeps them in `store`;
/// its callers wait at most `timeout_secs` for a token request.
fn scripted(
    script: &Arc<Scripted>,
    tokens: TokenSet,
    store: Option<MemoryTokenStore>,
    timeout_secs: u64,
) -> TokenManager {
    let script = Arc::clone(script);
    let grant = Grant::Scripted(Box::new(move |tokens| script.fetch(tokens)));
    let store = store.map(|store| Arc::new(store) as Arc<dyn TokenStore>);
    Manager::new(grant, store, tokens, Duration::from_secs(timeout_secs))
}

/// A signed-in user's set whose access token is due: the refresh token `r0`.
fn due() -> TokenSet {
    TokenSet::new("").with_refresh_token("r0")
}

fn manager_waiting(script: &Arc<Scripted>, timeout_secs: u64) -> TokenManager {
    scripted(script, due(), None, timeout_secs)
}

fn manager(script: &Arc<Scripted>) -> TokenManager {
    manager_waiting(script, 30)
}

async fn secret(manager: &TokenManager) -> Result<String, Error> {
    manager.token().await.map(|t| t.secret().to_owned())
}

/// The authorization server is unavailable, and says when to come back.
fn unavailable(retry_after: Option<Duration>) -> Error {
    Error::Api(
        ApiError::new(503, None, "/token")
            .with_origin(Origin::AuthorizationServer)
            .with_retry_after(retry_after),
    )
}

fn transport(kind: HttpErrorKind) -> Error {
    Error::http(kind, "/token", None)
}

async fn advance(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

/// A flight that has already ended with `answer`.
async fn ended(answer: Result<AccessToken, Error>) -> Flight {
    let flight = futures::future::ready(answer).boxed().shared();
    let _ = flight.clone().await;
    flight
}

#[test]
fn a_refresh_waits_twice_the_request_timeout_within_one_and_five_minutes() {
    let secs = Duration::from_secs;
    for (timeout, deadline) in [(1, 60), (30, 60), (45, 90), (100, 200), (3600, 300)] {
        assert_eq!(refresh_deadline(secs(timeout)), secs(deadline), "a timeout of {timeout} s");
    }
    assert_eq!(refresh_deadline(Duration::MAX), secs(300));
}

/// Idle, and the token is fresh: served as it is, no request.
/// Idle, and the token is due: one flight, joined by every caller (Refreshing).
#[tokio::test(start_paused = true)]
async fn concurrent_callers_share_one_token_request() {
    let script = Scripted::new([token("t1", 3600, 200)]);
    let manager = manager(&script);
    let start = Instant::now();
    let callers = (0..20).map(|_| secret(&manager));
    let tokens = futures::future::join_all(callers).await;
    assert!(tokens.iter().all(|t| t.as_deref().ok() == Some("t1")), "{tokens:?}");
    assert_eq!(script.fetches(), 1);
    assert_eq!(start.elapsed(), Duration::from_millis(200), "every caller waited for the one request");
    // The token is cached: no request, no wait.
    assert_eq!(secret(&manager).await.expect("cached"), "t1");
    assert_eq!((script.fetches(), start.elapsed()), (1, Duration::from_millis(200)));
}

/// Refreshing, and the flight ended without an answer (its task stopped): a new flight.
#[tokio::test(start_paused = true)]
async fn a_flight_that_ended_without_an_answer_is_replaced() {
    let mut state = State::new(None);
    state.phase = Phase::Refreshing(ended(Ok(AccessToken::new("never handed out"))).await);
    let mut started = false;
    let replacement = futures::future::pending().boxed().shared();
    let step = state.call(Instant::now(), || {
        started = true;
        replacement.clone()
    });
    assert!(started && matches!(step, Step::Wait(_)));
    // A flight still under way is joined, not replaced.
    assert!(matches!(state.call(Instant::now(), || panic!("a second flight")), Step::Wait(_)));
}

#[tokio::test(start_paused = true)]
async fn a_token_is_refreshed_ahead_of_its_expiry() {
    // A lifetime of 1,000 s is refreshed 100 s (a tenth) before it ends; one of an hour,
    // 300 s (five minutes) before.
    let script = Scripted::new([token("t1", 1000, 0), token("t2", 3600, 0), token("t3", 3600, 0)]);
    let manager = manager(&script);
    assert_eq!(secret(&manager).await.expect("t1"), "t1");
    advance(899_000).await;
    assert_eq!(secret(&manager).await.expect("still t1"), "t1");
    assert_eq!(script.fetches(), 1);
    advance(1_000).await;
    assert_eq!(secret(&manager).await.expect("t2"), "t2", "refreshed at 900 s, before expiry");
    advance(3_299_000).await;
    assert_eq!(secret(&manager).await.expect("still t2"), "t2");
    advance(1_000).await;
    assert_eq!(secret(&manager).await.expect("t3"), "t3");
    // Each refresh presented the refresh token of the set before it.
    assert_eq!(script.presented(), ["r0", "r-t1", "r-t2"]);
}

/// FailedUntil: within the pause, a token that works is served; after it, a new flight.
#[tokio::test(start_paused = true)]
async fn a_failed_refresh_keeps_the_token_that_still_works_until_it_expires() {
    let script = Scripted::new([
        token("t1", 1000, 0),
        failure(unavailable(None), 0),
        failure(unavailable(None), 0),
        token("t2", 3600, 0),
    ]);
    let manager = manager(&script);
    assert_eq!(secret(&manager).await.expect("t1"), "t1");
    advance(950_000).await;
    // Due for refresh; the refresh fails, and t1 (50 s left) is served.
    assert_eq!(secret(&manager).await.expect("t1 again"), "t1");
    assert_eq!(script.fetches(), 2);
    // Within the backoff no request is sent; t1 is still served.
    assert_eq!(secret(&manager).await.expect("t1 again"), "t1");
    assert_eq!(script.fetches(), 2);
    // After the backoff (at most a second) the next caller tries again, and fails again.
    advance(1_001).await;
    assert_eq!(secret(&manager).await.expect("t1 again"), "t1");
    assert_eq!(script.fetches(), 3);
    // Once t1 has expired and the backoff (at most two seconds) is over, a new token. An error
    // answer issued nothing: the same refresh token is presented again.
    advance(50_000).await;
    assert_eq!(secret(&manager).await.expect("t2"), "t2");
    assert_eq!(script.presented(), ["r0", "r-t1", "r-t1", "r-t1"]);
}

/// FailedUntil with an error that asks for a new sign-in: the token that still works is not
/// served.
#[tokio::test(start_paused = true)]
async fn a_refused_refresh_token_ends_the_sign_in_at_once() {
    let invalid_grant = ApiError::new(400, Some(ErrorCode::InvalidGrant), "/token");
    let invalid_grant = Error::Api(invalid_grant.with_origin(Origin::AuthorizationServer));
    let script = Scripted::new([token("t1", 1000, 0), failure(invalid_grant, 0)]);
    let store = MemoryTokenStore::new();
    let manager = scripted(&script, due(), Some(store.clone()), 30);
    assert_eq!(secret(&manager).await.expect("t1"), "t1");
    advance(950_000).await;
    let error = secret(&manager).await.expect_err("t1 has 50 s left, but the grant is gone");
    assert!(error.needs_reauthentication(), "{error:?}");
    // The refused token is dropped, here and in the store, and never presented again.
    assert!(store.get().is_some_and(|saved| saved.refresh_token.is_none()));
    advance(60_000).await;
    assert!(secret(&manager).await.expect_err("no refresh token").needs_reauthentication());
    assert_eq!(script.presented(), ["r0", "r-t1"]);
}

/// `invalid_client` refuses the client's settings, not its refresh token: the token is kept,
/// in the set and the store, and presented again after the backoff.
#[tokio::test(start_paused = true)]
async fn a_refused_client_keeps_its_refresh_token() {
    let invalid_client = ApiError::new(401, Some(ErrorCode::InvalidClient), "/token");
    let invalid_client = Error::Api(invalid_client.with_origin(Origin::AuthorizationServer));
    let script = Scripted::new([failure(invalid_client, 0), token("t1", 3600, 0)]);
    let store = MemoryTokenStore::new();
    let manager = scripted(&script, due(), Some(store.clone()), 30);
    let error = secret(&manager).await.expect_err("invalid_client");
    assert_eq!(error.code(), Some(&ErrorCode::InvalidClient));
    assert!(store.get().is_none(), "no set without its refresh token was saved");
    advance(FAILURE_BACKOFF.1.as_millis() as u64).await;
    assert_eq!(secret(&manager).await.expect("t1"), "t1");
    assert_eq!(script.presented(), ["r0", "r0"]);
}

/// Refreshing → FailedUntil: the failure goes to every caller, and holds the next request back
/// for the backoff, doubling.
#[tokio::test(start_paused = true)]
async fn failures_back_off_doubling_and_every_waiting_caller_gets_the_failure() {
    let script = Scripted::new([
        failure(unavailable(None), 100),
        failure(unavailable(None), 0),
        failure(unavailable(None), 0),
        token("t1", 3600, 0),
    ]);
    let manager = manager(&script);
    let callers = futures::future::join_all((0..5).map(|_| secret(&manager))).await;
    assert!(callers.iter().all(|r| matches!(r, Err(Error::Api(e)) if e.status() == 503)), "{callers:?}");
    assert_eq!(script.fetches(), 1, "one request for the five callers");

    // After each failure in a row the next request waits for the crate's backoff, full jitter
    // under a ceiling of 1 s, then 2 s, then 4 s; meanwhile the failure is answered again.
    for (failures, ceiling_ms) in [(1, 1_000), (2, 2_000), (3, 4_000)] {
        assert!(secret(&manager).await.is_err());
        assert_eq!(script.fetches(), failures, "no request during the backoff");
        advance(ceiling_ms + 1).await;
        let next = secret(&manager).await;
        assert_eq!(script.fetches(), failures + 1, "a request once the ceiling has passed");
        assert_eq!(next.is_ok(), failures == 3, "{next:?}");
    }
}

/// Refreshing → Idle: an answer caches the token and starts the backoff over.
#[tokio::test(start_paused = true)]
async fn an_answer_starts_the_backoff_over() {
    let mut state = State::new(None);
    for _ in 0..6 {
        let _ = state.answered(Err(unavailable(None)), Instant::now());
    }
    let issued = (AccessToken::new("t1"), Some(Duration::from_secs(3600)));
    assert_eq!(state.answered(Ok(issued), Instant::now()).expect("t1").secret(), "t1");
    assert!(matches!(state.phase, Phase::Idle) && state.pauses.is_none());
    // The next failure pauses for at most the first ceiling again, not the sixth.
    let _ = state.answered(Err(unavailable(None)), Instant::now());
    let Phase::FailedUntil(_, until) = state.phase else { panic!("failed") };
    assert!(until <= Instant::now() + FAILURE_BACKOFF.0);
}

#[tokio::test(start_paused = true)]
async fn retry_after_from_the_authorization_server_holds_the_next_request() {
    let script = Scripted::new([failure(unavailable(Some(Duration::from_secs(5))), 0), token("t1", 3600, 0)]);
    let manager = manager(&script);
    assert!(secret(&manager).await.is_err());
    advance(4_999).await;
    let held = secret(&manager).await.expect_err("held for Retry-After");
    assert_eq!(held.retry_after(), Some(Duration::from_secs(5)));
    assert_eq!(script.fetches(), 1);
    advance(2).await;
    assert_eq!(secret(&manager).await.expect("t1"), "t1");
    assert_eq!(script.fetches(), 2);

    // A Retry-After of an hour holds no longer than the longest backoff.
    let script =
        Scripted::new([failure(unavailable(Some(Duration::from_secs(3600))), 0), token("t2", 3600, 0)]);
    let manager = self::manager(&script);
    assert!(secret(&manager).await.is_err());
    tokio::time::sleep(FAILURE_BACKOFF.1).await;
    assert_eq!(secret(&manager).await.expect("t2"), "t2");
}

/// SignedOut: every call fails, and a flight that ends afterwards changes nothing.
#[tokio::test(start_paused = true)]
async fn a_signed_out_state_serves_nothing_and_keeps_no_answer() {
    let issued = || (AccessToken::new("t1"), Some(Duration::from_secs(3600)));
    let mut state = State::new(Some(CachedToken::stamp(issued(), Instant::now())));
    state.sign_out();
    let step = state.call(Instant::now(), || panic!("no flight after sign-out"));
    assert!(matches!(step, Step::Answer(Err(Error::ReauthenticationRequired(SIGNED_OUT)))));
    let late = state.answered(Ok(issued()), Instant::now());
    assert!(matches!(late, Err(Error::ReauthenticationRequired(SIGNED_OUT))), "{late:?}");
    assert!(matches!(state.phase, Phase::SignedOut) && state.cached.is_none());
}

/// A rejected token is forgotten only when it is the cached one and can be renewed.
#[tokio::test(start_paused = true)]
async fn a_rejected_token_is_forgotten_unless_it_cannot_be_renewed() {
    let cached = || Some(CachedToken::stamp((AccessToken::new("t1"), None), Instant::now()));
    let mut state = State { cached: cached(), ..State::new(None) };
    assert!(!state.invalidate(&AccessToken::new("t1"), false), "a static token stays");
    assert!(state.invalidate(&AccessToken::new("older"), true), "a newer one replaced it");
    assert!(state.cached.is_some());
    assert!(state.invalidate(&AccessToken::new("t1"), true));
    assert!(state.cached.is_none());
}

/// A caller gives up after its own timeout (or the client's): the flight runs on and its token
/// is kept.
#[tokio::test(start_paused = true)]
async fn a_caller_that_gives_up_leaves_the_request_running_and_its_token_kept() {
    let script = Scripted::new([token("t1", 3600, 2_000)]);
    let manager = manager(&script);
    let gave_up = tokio::time::timeout(Duration::from_millis(100), secret(&manager)).await;
    assert!(gave_up.is_err(), "the caller's own timeout ran out");
    advance(2_000).await;
    let start = Instant::now();
    assert_eq!(secret(&manager).await.expect("kept"), "t1");
    assert_eq!((script.fetches(), start.elapsed()), (1, Duration::ZERO));
}

#[tokio::test(start_paused = true)]
async fn a_caller_waits_for_a_token_request_at_most_one_request_timeout() {
    let script = Scripted::new([token("t1", 1000, 0), token("t2", 3600, 58_000)]);
    let manager = manager_waiting(&script, 5);
    assert_eq!(secret(&manager).await.expect("t1"), "t1");
    // Due for refresh, the request hangs: after 5 s the caller gets t1, which still works.
    advance(950_000).await;
    let start = Instant::now();
    assert_eq!(secret(&manager).await.expect("t1"), "t1");
    assert_eq!(start.elapsed(), Duration::from_secs(5));
    // Once t1 has expired, a caller still waiting gets a timeout (at 1,005.5 s, before the
    // answer at 950 s + 58 s).
    advance(45_500).await;
    let error = secret(&manager).await.expect_err("no token left");
    assert!(error.is_timeout() && !error.needs_reauthentication(), "{error:?}");
    // The request under way goes on, and its token serves the next caller.
    advance(3_000).await;
    assert_eq!(secret(&manager).await.expect("t2"), "t2");
    assert_eq!(script.fetches(), 2);
}

/// A refresh answered after the caller's timeout, within the flight's deadline (60 s here): the
/// caller gets its timeout, the rotated set is kept and saved, and the next caller uses it.
#[tokio::test(start_paused = true)]
async fn a_refresh_answered_after_the_callers_timeout_is_saved_and_used() {
    let script = Scripted::new([token("t1", 3600, 59_000)]);
    let store = MemoryTokenStore::new();
    let manager = scripted(&script, due(), Some(store.clone()), 5);
    assert!(secret(&manager).await.expect_err("no answer in 5 s").is_timeout());
    advance(54_001).await;
    let saved = store.get().expect("saved once the answer came");
    assert_eq!(saved.refresh_token.as_ref().map(|t| t.secret()), Some("r-t1"));
    let start = Instant::now();
    assert_eq!(secret(&manager).await.expect("t1"), "t1");
    assert_eq!((script.presented(), start.elapsed()), (vec!["r0".to_owned()], Duration::ZERO));
}

/// Refreshing → FailedUntil when the answer never comes, or may have been lost: at the
/// deadline (60 s) or at the failure, the refresh token is dropped from the set and the store,
/// the next call asks for a new sign-in, and the token is never presented again.
#[tokio::test(start_paused = true)]
async fn a_refresh_that_lost_its_answer_is_never_sent_again() {
    let lost = [
        failure(transport(HttpErrorKind::Timeout), 20_000),
        failure(transport(HttpErrorKind::ConnectionLost), 10),
        failure(transport(HttpErrorKind::Body), 10),
        token("never", 3600, 600_000),
    ];
    for (answer, lost_after) in lost.into_iter().zip([20_000, 10, 10, 60_000]) {
        let script = Scripted::new([answer]);
        let store = MemoryTokenStore::new();
        let manager = scripted(&script, due(), Some(store.clone()), 30);
        let start = Instant::now();
        let error = secret(&manager).await.expect_err("the answer is lost");
        if lost_after < 30_000 {
            assert_eq!(start.elapsed(), Duration::from_millis(lost_after), "{error:?}");
            assert!(matches!(error, Error::ReauthenticationRequired(ANSWER_LOST)), "{error:?}");
        } else {
            assert!(error.is_timeout(), "the caller's own timeout first: {error:?}");
            advance(30_001).await;
        }
        assert!(store.get().is_some_and(|saved| saved.refresh_token.is_none()), "the store drops it");
        let next = secret(&manager).await.expect_err("a new sign-in is needed");
        assert!(next.needs_reauthentication() && !next.is_timeout(), "{next:?}");
        advance(120_000).await;
        assert!(secret(&manager).await.expect_err("still").needs_reauthentication());
        assert_eq!(script.presented(), ["r0"], "presented once");
    }
}

/// An error answer, or a connection never made, issued no token: the refresh token is kept and
/// presented again after the backoff.
#[tokio::test(start_paused = true)]
async fn a_refresh_that_reached_no_server_or_was_refused_keeps_its_token() {
    let script = Scripted::new([
        failure(unavailable(None), 0),
        failure(transport(HttpErrorKind::Connect), 0),
        token("t1", 3600, 0),
    ]);
    let manager = manager(&script);
    for _ in 0..2 {
        let error = secret(&manager).await.expect_err("no token issued");
        assert!(!error.needs_reauthentication(), "{error:?}");
        advance(FAILURE_BACKOFF.1.as_millis() as u64).await;
    }
    assert_eq!(secret(&manager).await.expect("t1"), "t1");
    assert_eq!(script.presented(), ["r0", "r0", "r0"]);
}

/// A store whose saves take a while.
#[derive(Clone, Default)]
struct SlowStore(MemoryTokenStore);

impl TokenStore for SlowStore {
    fn load(&self) -> crate::auth::store::StoreFuture<'_, Option<TokenSet>> {
        self.0.load()
    }

    fn save<'a>(&'a self, tokens: &'a TokenSet) -> crate::auth::store::StoreFuture<'a, ()> {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_secs(3)).await;
            self.0.save(tokens).await
        })
    }
}

/// The rotated set is saved before any caller gets its access token.
#[tokio::test(start_paused = true)]
async fn the_new_set_is_saved_before_its_token_is_handed_out() {
    let script = Scripted::new([token("t1", 3600, 1_000)]);
    let store = SlowStore::default();
    let grant = Grant::Scripted(Box::new({
        let script = Arc::clone(&script);
        move |tokens| script.fetch(tokens)
    }));
    let manager = Manager::new(grant, Some(Arc::new(store.clone())), due(), Duration::from_secs(30));
    let start = Instant::now();
    assert_eq!(secret(&manager).await.expect("t1"), "t1");
    assert_eq!(start.elapsed(), Duration::from_secs(4), "one second to answer, three to save");
    assert_eq!(
        store.0.get().and_then(|saved| saved.refresh_token).map(|t| t.secret().to_owned()),
        Some("r-t1".into())
    );
}

#[tokio::test(start_paused = true)]
async fn a_stored_expiry_becomes_time_left_on_tokios_clock() {
    let script = Scripted::new([token("fresh", 3600, 0), token("fresh", 3600, 0)]);
    let stored = |seconds: i64| {
        let expires_at = chrono::Utc::now() + chrono::Duration::seconds(seconds);
        scripted(
            &script,
            TokenSet::new("stored").with_refresh_token("r0").with_expires_at(expires_at),
            None,
            30,
        )
    };
    // 1,000 s left: refreshed 100 s before the end, on Tokio's clock from then on.
    let manager = stored(1000);
    advance(899_000).await;
    assert_eq!(secret(&manager).await.expect("stored"), "stored");
    assert_eq!(script.fetches(), 0);
    advance(2_000).await;
    assert_eq!(secret(&manager).await.expect("fresh"), "fresh");
    assert_eq!(script.fetches(), 1);
    // Already expired: replaced on first use.
    let manager = stored(-1);
    assert_eq!(secret(&manager).await.expect("fresh"), "fresh");
    assert_eq!(script.fetches(), 2);
}
