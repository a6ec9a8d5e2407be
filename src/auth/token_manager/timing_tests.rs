//! The token manager on Tokio's paused clock, with a scripted token source and no HTTP:
//! single flight, refresh ahead of expiry, the backoff after failures, callers that give up.

use std::collections::VecDeque;
use std::sync::Mutex;

use futures::future::BoxFuture;

use super::*;
use crate::error::{ApiError, Origin};

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

/// A token source that answers from a script, and notes when each request started.
#[derive(Default)]
struct Script {
    answers: Mutex<VecDeque<Answer>>,
    started: Mutex<Vec<Instant>>,
}

impl std::fmt::Debug for Script {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Script").finish_non_exhaustive()
    }
}

impl Script {
    fn new(answers: impl IntoIterator<Item = Answer>) -> Arc<Self> {
        Arc::new(Script { answers: Mutex::new(answers.into_iter().collect()), started: Mutex::default() })
    }

    /// Token requests started so far.
    fn fetches(&self) -> usize {
        self.started.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

impl Script {
    fn fetch(&self) -> BoxFuture<'static, Result<Refreshed, Error>> {
        self.started.lock().unwrap_or_else(|e| e.into_inner()).push(Instant::now());
        let answer = self.answers.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
        Box::pin(async move {
            let answer = answer.expect("no more answers scripted");
            tokio::time::sleep(answer.latency).await;
            let (name, expires_in) = answer.result?;
            Ok(Refreshed { tokens: TokenSet::new(name), expires_in, new_id_token: None })
        })
    }
}

/// A manager that starts from `tokens` and renews them from `script`, whose callers wait at
/// most `timeout_secs` for a token request.
fn scripted(script: &Arc<Script>, tokens: TokenSet, timeout_secs: u64) -> TokenManager {
    let script = Arc::clone(script);
    let grant = Grant::Scripted(Box::new(move || script.fetch()));
    Manager::new(grant, None, tokens, Duration::from_secs(timeout_secs))
}

fn manager_waiting(script: &Arc<Script>, timeout_secs: u64) -> TokenManager {
    scripted(script, TokenSet::new(""), timeout_secs)
}

fn manager(script: &Arc<Script>) -> TokenManager {
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

async fn advance(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

#[tokio::test(start_paused = true)]
async fn concurrent_callers_share_one_token_request() {
    let script = Script::new([token("t1", 3600, 200)]);
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

#[tokio::test(start_paused = true)]
async fn a_token_is_refreshed_ahead_of_its_expiry() {
    // A lifetime of 1,000 s is refreshed 100 s (a tenth) before it ends; one of an hour,
    // 300 s (five minutes) before.
    let script = Script::new([token("t1", 1000, 0), token("t2", 3600, 0), token("t3", 3600, 0)]);
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
    assert_eq!(script.fetches(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_failed_refresh_keeps_the_token_that_still_works_until_it_expires() {
    let script = Script::new([
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
    // Once t1 has expired and the backoff (at most two seconds) is over, a new token.
    advance(50_000).await;
    assert_eq!(secret(&manager).await.expect("t2"), "t2");
    assert_eq!(script.fetches(), 4);
}

#[tokio::test(start_paused = true)]
async fn failures_back_off_doubling_and_every_waiting_caller_gets_the_failure() {
    let script = Script::new([
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

#[tokio::test(start_paused = true)]
async fn retry_after_from_the_authorization_server_holds_the_next_request() {
    let script = Script::new([failure(unavailable(Some(Duration::from_secs(5))), 0), token("t1", 3600, 0)]);
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
        Script::new([failure(unavailable(Some(Duration::from_secs(3600))), 0), token("t2", 3600, 0)]);
    let manager = self::manager(&script);
    assert!(secret(&manager).await.is_err());
    tokio::time::sleep(FAILURE_BACKOFF.1).await;
    assert_eq!(secret(&manager).await.expect("t2"), "t2");
}

#[tokio::test(start_paused = true)]
async fn a_caller_that_gives_up_leaves_the_request_running_and_its_token_kept() {
    let script = Script::new([token("t1", 3600, 2_000)]);
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
    let script = Script::new([token("t1", 1000, 0), token("t2", 3600, 60_000)]);
    let manager = manager_waiting(&script, 5);
    assert_eq!(secret(&manager).await.expect("t1"), "t1");
    // Due for refresh, the request hangs: after 5 s the caller gets t1, which still works.
    advance(950_000).await;
    let start = Instant::now();
    assert_eq!(secret(&manager).await.expect("t1"), "t1");
    assert_eq!(start.elapsed(), Duration::from_secs(5));
    // Once t1 has expired, a caller still waiting gets a timeout (at 1009 s, before the
    // request under way answers at 1010 s).
    advance(49_000).await;
    let error = secret(&manager).await.expect_err("no token left");
    assert!(error.is_timeout(), "{error:?}");
    // The request under way goes on, and its token serves the next caller.
    advance(1_000).await;
    assert_eq!(secret(&manager).await.expect("t2"), "t2");
    assert_eq!(script.fetches(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_stored_expiry_becomes_time_left_on_tokios_clock() {
    let script = Script::new([token("fresh", 3600, 0), token("fresh", 3600, 0)]);
    let stored = |seconds: i64| {
        let expires_at = chrono::Utc::now() + chrono::Duration::seconds(seconds);
        scripted(&script, TokenSet::new("stored").with_expires_at(expires_at), 30)
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
