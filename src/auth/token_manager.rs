//! The token cache: one valid token shared by every clone of a client, refreshed ahead of
//! expiry by a single request however many callers need it at once.
//!
//! A token request runs in a task of its own. Callers wait on its shared result and may be
//! cancelled at any point (a timeout around a call, a dropped stream): the request still runs
//! to completion and its answer is kept. A failed request is given to every caller waiting on
//! it, and the next one starts only after a backoff with jitter; meanwhile a token that has
//! not expired keeps being served.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use tokio::sync::oneshot;
use tokio::time::Instant;
use tracing::Instrument;

use super::{AccessToken, TokenSet};
use crate::Error;
use crate::bounds::clamp_lifetime;
use crate::error::{HttpError, ReauthenticationRequired};
use crate::wire::{DEFAULT_TIMEOUT, HttpSender};

/// Refresh no later than this long before expiry...
const MAX_REFRESH_BUFFER: Duration = Duration::from_secs(300);
/// ...and no later than this fraction of the lifetime before it.
const REFRESH_BUFFER_DIVISOR: u32 = 10;
/// The pause after a failed token request before the next one may start; it doubles with
/// each failure in a row, up to [`FAILURE_BACKOFF_MAX`].
const FAILURE_BACKOFF_INITIAL: Duration = Duration::from_secs(1);
/// The longest pause between two token requests after failures, `Retry-After` included.
const FAILURE_BACKOFF_MAX: Duration = Duration::from_secs(60);
/// How errors about the token request name it.
const TOKEN_ENDPOINT: &str = "the token endpoint";

/// Where tokens come from: a grant against the authorization server, or the caller.
///
/// The token manager calls [`fetch`](Self::fetch) in a task of its own, one call at a time,
/// and never cancels it once started. A cache shared between processes plugs in here.
pub(crate) trait TokenSource: Send + Sync + std::fmt::Debug + 'static {
    /// Obtains a new token.
    fn fetch<'a>(&'a self, sender: &'a HttpSender) -> BoxFuture<'a, Result<IssuedToken, Error>>;

    /// Work left after a successful [`fetch`](Self::fetch), run in the same task once every
    /// waiting caller has its token (a user's ID token is verified here). Default: none.
    fn after_fetch<'a>(&'a self, _sender: &'a HttpSender) -> BoxFuture<'a, ()> {
        Box::pin(std::future::ready(()))
    }

    /// The API refused `token` (401 `invalid_token`); the manager forgot it and fetches anew.
    /// Default: nothing more to do.
    fn rejected(&self, _token: &AccessToken) {}

    /// Whether this source holds a signed-in user's tokens (and so can sign out). Default: no.
    fn has_user(&self) -> bool {
        false
    }

    /// The user's current token set. Default: none.
    fn current(&self) -> BoxFuture<'_, Option<TokenSet>> {
        Box::pin(std::future::ready(None))
    }

    /// Forgets the user's tokens, revokes them and clears the store; called once, after the
    /// manager stopped handing out tokens. Default (no user): nothing to do.
    fn sign_out<'a>(&'a self, _sender: &'a HttpSender) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(std::future::ready(Ok(())))
    }
}

/// What a client that signed its user out answers every request.
pub(crate) fn signed_out() -> Error {
    Error::ReauthenticationRequired(ReauthenticationRequired::new("the user signed out"))
}

/// How long before expiry a token of `lifetime` is refreshed: the smaller of five minutes and
/// a tenth of the lifetime.
pub(crate) fn refresh_buffer(lifetime: Duration) -> Duration {
    MAX_REFRESH_BUFFER.min(lifetime / REFRESH_BUFFER_DIVISOR)
}

/// A token as the authorization server issued it.
pub(crate) struct IssuedToken {
    pub(crate) access_token: AccessToken,
    /// `expires_in`: relative to when the request was sent.
    pub(crate) expires_in: Option<Duration>,
    #[allow(dead_code)]
    pub(crate) scopes: Vec<String>,
}

#[derive(Clone)]
struct CachedToken {
    token: AccessToken,
    /// After this instant the token is refreshed before use.
    refresh_at: Option<Instant>,
    /// After this instant the token is never sent.
    expires_at: Option<Instant>,
    /// False for a token the caller fixed: it is never replaced.
    renewable: bool,
}

impl CachedToken {
    fn stamp(issued: IssuedToken, sent_at: Instant) -> Self {
        let lifetime = issued.expires_in.map(clamp_lifetime);
        let expires_at = lifetime.and_then(|lifetime| sent_at.checked_add(lifetime));
        let refresh_at = lifetime
            .and_then(|lifetime| sent_at.checked_add(lifetime.saturating_sub(refresh_buffer(lifetime))));
        CachedToken { token: issued.access_token, refresh_at, expires_at, renewable: true }
    }

    fn is_fresh(&self, now: Instant) -> bool {
        self.refresh_at.is_none_or(|at| now < at)
    }

    fn is_unexpired(&self, now: Instant) -> bool {
        self.expires_at.is_none_or(|at| now < at)
    }
}

impl std::fmt::Debug for CachedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedToken").field("expires_at", &self.expires_at).finish_non_exhaustive()
    }
}

/// The shared result of one token request.
type Flight = Shared<BoxFuture<'static, Result<AccessToken, Error>>>;

/// The last token request failed; no new one starts before `retry_at`.
struct Failure {
    error: Error,
    retry_at: Instant,
}

#[derive(Default)]
struct State {
    cached: Option<CachedToken>,
    /// The token request under way, if any.
    flight: Option<Flight>,
    failure: Option<Failure>,
    /// Failed token requests in a row.
    failures: u32,
    /// The user signed out: no token is handed out any more.
    signed_out: bool,
}

struct Inner {
    source: Box<dyn TokenSource>,
    state: Mutex<State>,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records the answer of the request under way and says what its waiters get.
    fn finish(&self, result: Result<IssuedToken, Error>, sent_at: Instant) -> Result<AccessToken, Error> {
        let mut state = self.lock();
        state.flight = None;
        if state.signed_out {
            return Err(signed_out());
        }
        let now = Instant::now();
        match result {
            Ok(issued) => {
                let cached = CachedToken::stamp(issued, sent_at);
                tracing::debug!(expires_in = ?cached.expires_at.map(|at| at - sent_at), "access token obtained");
                let token = cached.token.clone();
                state.cached = Some(cached);
                state.failure = None;
                state.failures = 0;
                Ok(token)
            }
            Err(error) => {
                state.failures = state.failures.saturating_add(1);
                let delay = failure_backoff(state.failures, error.retry_after());
                tracing::warn!(error = %error, retry_in_ms = delay.as_millis() as u64, "token request failed");
                state.failure =
                    Some(Failure { error: error.clone(), retry_at: now.checked_add(delay).unwrap_or(now) });
                match state.cached.as_ref().filter(|c| c.is_unexpired(now)) {
                    // A failed refresh keeps a token that still works.
                    Some(still_valid) if !error.needs_reauthentication() => Ok(still_valid.token.clone()),
                    _ => Err(error),
                }
            }
        }
    }
}

/// Clears the request under way if its task ends without an answer (a panicking token store,
/// a runtime shutting down), so the next caller can start another.
struct FlightGuard {
    inner: Option<Arc<Inner>>,
}

impl Drop for FlightGuard {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            inner.finish(Err(Error::Http(HttpError::abandoned(TOKEN_ENDPOINT))), Instant::now()).ok();
        }
    }
}

/// The pause after `failures` failed requests in a row: exponential with equal jitter (between
/// half the ceiling and the ceiling), or the server's `Retry-After` when that is longer, at
/// most [`FAILURE_BACKOFF_MAX`].
fn failure_backoff(failures: u32, retry_after: Option<Duration>) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    let ceiling = FAILURE_BACKOFF_INITIAL.saturating_mul(1 << doublings).min(FAILURE_BACKOFF_MAX);
    let jittered = ceiling / 2 + (ceiling / 2).mul_f64(fastrand::f64());
    jittered.max(retry_after.unwrap_or_default()).min(FAILURE_BACKOFF_MAX)
}

/// What a caller does next.
enum Next {
    Done(Result<AccessToken, Error>),
    /// Wait for the request under way; `fallback` still works if the wait runs out.
    Wait {
        flight: Flight,
        fallback: Option<CachedToken>,
    },
}

/// Caches the current token and refreshes it with single flight. Cheap to clone.
#[derive(Clone)]
pub(crate) struct TokenManager {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for TokenManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.inner.lock();
        f.debug_struct("TokenManager")
            .field("source", &self.inner.source)
            .field("cached", &state.cached)
            .field("in_flight", &state.flight.is_some())
            .field("failures", &state.failures)
            .finish()
    }
}

impl TokenManager {
    pub(crate) fn new(source: Box<dyn TokenSource>) -> Self {
        Self::with_state(source, None)
    }

    fn with_state(source: Box<dyn TokenSource>, cached: Option<CachedToken>) -> Self {
        let state = State { cached, ..State::default() };
        TokenManager { inner: Arc::new(Inner { source, state: Mutex::new(state) }) }
    }

    /// A manager that starts with a token obtained elsewhere (a sign-in, a token store), valid
    /// until `expires_at`; an expired one is replaced on first use.
    pub(crate) fn with_token(
        source: Box<dyn TokenSource>,
        token: AccessToken,
        expires_at: Option<chrono::DateTime<chrono::Utc>>,
    ) -> Self {
        Self::with_token_at(source, token, expires_at, chrono::Utc::now())
    }

    /// [`with_token`](Self::with_token) with the wall-clock time `wall_now` stands for: the
    /// one place the manager reads wall-clock time, to turn a stored expiry into time left on
    /// Tokio's clock, which everything after runs on.
    fn with_token_at(
        source: Box<dyn TokenSource>,
        token: AccessToken,
        expires_at: Option<chrono::DateTime<chrono::Utc>>,
        wall_now: chrono::DateTime<chrono::Utc>,
    ) -> Self {
        let now = Instant::now();
        let expires_in = expires_at.map(|at| (at - wall_now).to_std().unwrap_or(Duration::ZERO));
        let cached = match expires_in {
            Some(remaining) if remaining.is_zero() => None,
            // The lifetime is unknown here: the remaining time stands in for it.
            _ => Some(CachedToken::stamp(
                IssuedToken { access_token: token, expires_in, scopes: Vec::new() },
                now,
            )),
        };
        Self::with_state(source, cached)
    }

    /// A token fixed by the caller: never refreshed, never expires on our side.
    pub(crate) fn fixed(token: AccessToken) -> Self {
        let cached = CachedToken { token, refresh_at: None, expires_at: None, renewable: false };
        Self::with_state(Box::new(NoRefresh), Some(cached))
    }

    /// A token that is good to send now, refreshing first when it is due.
    ///
    /// Waits at most one request timeout of `sender` for a token request under way; the
    /// request itself goes on whatever happens to this caller.
    pub(crate) async fn token(&self, sender: &HttpSender) -> Result<AccessToken, Error> {
        let (flight, fallback) = match self.next(sender) {
            Next::Done(result) => return result,
            Next::Wait { flight, fallback } => (flight, fallback),
        };
        match tokio::time::timeout(sender.timeout().unwrap_or(DEFAULT_TIMEOUT), flight).await {
            Ok(Ok(token)) => Ok(token),
            Ok(Err(error)) => Err(error),
            Err(_) => match fallback.filter(|c| c.is_unexpired(Instant::now())) {
                Some(still_valid) => Ok(still_valid.token),
                None => Err(Error::Http(HttpError::timed_out(TOKEN_ENDPOINT))),
            },
        }
    }

    fn next(&self, sender: &HttpSender) -> Next {
        let mut state = self.inner.lock();
        if state.signed_out {
            return Next::Done(Err(signed_out()));
        }
        let now = Instant::now();
        if let Some(cached) = state.cached.as_ref().filter(|c| c.is_fresh(now)) {
            return Next::Done(Ok(cached.token.clone()));
        }
        let fallback = state.cached.clone().filter(|c| c.is_unexpired(now));
        if let Some(flight) = &state.flight {
            return Next::Wait { flight: flight.clone(), fallback };
        }
        if let Some(failure) = state.failure.as_ref().filter(|f| now < f.retry_at) {
            return Next::Done(match fallback {
                Some(still_valid) if !failure.error.needs_reauthentication() => Ok(still_valid.token),
                _ => Err(failure.error.clone()),
            });
        }
        let flight = self.start(sender);
        state.flight = Some(flight.clone());
        Next::Wait { flight, fallback }
    }

    /// Starts a token request in a task of its own and returns its shared result. The task runs
    /// in the span of the caller that started it, so the token request appears in that trace.
    fn start(&self, sender: &HttpSender) -> Flight {
        let (answer, answered) = oneshot::channel();
        let inner = self.inner.clone();
        let sender = sender.clone();
        tokio::spawn(
            async move {
                let mut guard = FlightGuard { inner: Some(inner.clone()) };
                let sent_at = Instant::now();
                let result = inner.source.fetch(&sender).await;
                guard.inner = None;
                let fetched = result.is_ok();
                let _ = answer.send(inner.finish(result, sent_at));
                if fetched {
                    inner.source.after_fetch(&sender).await;
                }
            }
            .in_current_span(),
        );
        answered
            .map(|answer| answer.unwrap_or_else(|_| Err(Error::Http(HttpError::abandoned(TOKEN_ENDPOINT)))))
            .boxed()
            .shared()
    }

    /// Signs the user out: from now on no token is handed out (every request is
    /// [`signed_out`]), then the source revokes the tokens and clears its store. Either way the
    /// tokens are forgotten; the first failure is returned.
    pub(crate) async fn sign_out(&self, sender: &HttpSender) -> Result<(), Error> {
        if !self.inner.source.has_user() {
            return Err(Error::invalid(
                "auth",
                "sign-out is for a signed-in user's client (`Auth::user`); this client has no user",
            ));
        }
        {
            let mut state = self.inner.lock();
            state.signed_out = true;
            state.cached = None;
            state.failure = None;
        }
        // In a task of its own, like a token request: a caller that gives up while the
        // revocation is under way still leaves the tokens revoked and the store cleared.
        let inner = self.inner.clone();
        let sender = sender.clone();
        tokio::spawn(async move { inner.source.sign_out(&sender).await }.in_current_span())
            .await
            .unwrap_or_else(|e| Err(Error::Http(HttpError::task_failed("the revocation endpoint", e))))
    }

    /// The signed-in user's current tokens; `None` for other clients and after sign-out.
    pub(crate) async fn current(&self) -> Option<TokenSet> {
        if self.inner.lock().signed_out {
            return None;
        }
        self.inner.source.current().await
    }

    /// Forgets `rejected` after the API refused it, unless a newer token already replaced it.
    /// Returns true when the next call to [`token`](Self::token) will not return `rejected`.
    pub(crate) fn invalidate(&self, rejected: &AccessToken) -> bool {
        let mut state = self.inner.lock();
        match state.cached.as_ref() {
            Some(cached) if cached.token == *rejected && cached.renewable => {
                state.cached = None;
                drop(state);
                self.inner.source.rejected(rejected);
                true
            }
            Some(cached) => cached.token != *rejected,
            None => true,
        }
    }
}

/// The source behind a static token.
#[derive(Debug)]
struct NoRefresh;

impl TokenSource for NoRefresh {
    fn fetch<'a>(&'a self, _: &'a HttpSender) -> BoxFuture<'a, Result<IssuedToken, Error>> {
        Box::pin(async {
            Err(Error::ReauthenticationRequired(ReauthenticationRequired::new(
                "the static token was rejected and cannot be renewed",
            )))
        })
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod timing_tests;
