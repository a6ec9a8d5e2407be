//! The token cache: one valid token shared by every clone of a client, refreshed ahead of
//! expiry by a single request however many callers need it at once.
//!
//! A token request runs in a task of its own. Callers wait on its shared result and may be
//! cancelled at any point (a timeout around a call, a dropped stream): the request still runs
//! to completion and its answer is kept. A failed request is given to every caller waiting on
//! it, and the next one starts only after the crate's backoff (or the server's `Retry-After`);
//! meanwhile a token that has not expired keeps being served.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use tokio::sync::oneshot;
use tokio::time::Instant;
use tracing::Instrument;

use super::source::Source;
use super::{AccessToken, TokenSet};
use crate::Error;
use crate::bounds::clamp_lifetime;
use crate::error::{HttpError, ReauthenticationRequired};
use crate::retry::backoff;

/// Refresh no later than this long before expiry...
const MAX_REFRESH_BUFFER: Duration = Duration::from_secs(300);
/// ...and no later than this fraction of the lifetime before it.
const REFRESH_BUFFER_DIVISOR: u32 = 10;
/// The first and the longest pause after failed token requests, `Retry-After` included.
const FAILURE_BACKOFF: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(60));
/// How errors about the token request name it.
const TOKEN_ENDPOINT: &str = "the token endpoint";

/// What a client that signed its user out answers every request.
pub(crate) fn signed_out() -> Error {
    Error::ReauthenticationRequired(ReauthenticationRequired::new("the user signed out"))
}

/// How long before expiry a token of `lifetime` is refreshed: the smaller of five minutes and
/// a tenth of the lifetime.
pub(crate) fn refresh_buffer(lifetime: Duration) -> Duration {
    MAX_REFRESH_BUFFER.min(lifetime / REFRESH_BUFFER_DIVISOR)
}

/// A token as the authorization server issued it; `expires_in` is relative to when the request
/// was sent.
pub(crate) struct IssuedToken {
    pub(crate) access_token: AccessToken,
    pub(crate) expires_in: Option<Duration>,
}

#[derive(Clone)]
struct CachedToken {
    token: AccessToken,
    /// After this instant the token is refreshed before use.
    refresh_at: Option<Instant>,
    /// After this instant the token is never sent.
    expires_at: Option<Instant>,
}

impl CachedToken {
    fn stamp(issued: IssuedToken, sent_at: Instant) -> Self {
        let lifetime = issued.expires_in.map(clamp_lifetime);
        let expires_at = lifetime.and_then(|lifetime| sent_at.checked_add(lifetime));
        let refresh_at = lifetime
            .and_then(|lifetime| sent_at.checked_add(lifetime.saturating_sub(refresh_buffer(lifetime))));
        CachedToken { token: issued.access_token, refresh_at, expires_at }
    }

    fn is_fresh(&self, now: Instant) -> bool {
        self.refresh_at.is_none_or(|at| now < at)
    }

    fn is_unexpired(&self, now: Instant) -> bool {
        self.expires_at.is_none_or(|at| now < at)
    }
}

/// The shared result of one token request.
type Flight = Shared<BoxFuture<'static, Result<AccessToken, Error>>>;

#[derive(Default)]
struct State {
    cached: Option<CachedToken>,
    /// The token request under way, if any.
    flight: Option<Flight>,
    /// The last token request failed: its error, and no new request before the instant.
    failure: Option<(Error, Instant)>,
    /// The pauses after failures in a row (the crate's one backoff); `None` after a success.
    backoff: Option<Box<dyn Iterator<Item = Duration> + Send + Sync>>,
    /// The user signed out: no token is handed out any more.
    signed_out: bool,
}

impl State {
    /// What a caller gets when no token request can serve it: the token that still works,
    /// unless `error` asks for a new sign-in.
    fn fallback(&self, now: Instant, error: &Error) -> Result<AccessToken, Error> {
        match self.cached.as_ref().filter(|c| c.is_unexpired(now)) {
            Some(valid) if !error.needs_reauthentication() => Ok(valid.token.clone()),
            _ => Err(error.clone()),
        }
    }
}

struct Inner {
    source: Source,
    /// The longest a caller waits for a token request: one request timeout.
    timeout: Duration,
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
        let error = match result {
            Ok(issued) => {
                let cached = CachedToken::stamp(issued, sent_at);
                tracing::debug!(expires_in = ?cached.expires_at.map(|at| at - sent_at), "access token obtained");
                let token = cached.token.clone();
                *state = State { cached: Some(cached), ..State::default() };
                return Ok(token);
            }
            Err(error) => error,
        };
        let (initial, max) = FAILURE_BACKOFF;
        let pause = state.backoff.get_or_insert_with(|| Box::new(backoff(initial, max))).next();
        let delay = pause.unwrap_or(max).max(error.retry_after().unwrap_or_default()).min(max);
        tracing::warn!(error = %error, retry_in_ms = delay.as_millis() as u64, "token request failed");
        let now = Instant::now();
        state.failure = Some((error.clone(), now.checked_add(delay).unwrap_or(now)));
        state.fallback(now, &error)
    }
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
            .field("expires_at", &state.cached.as_ref().map(|c| c.expires_at))
            .field("in_flight", &state.flight.is_some())
            .finish()
    }
}

impl TokenManager {
    /// A manager whose callers wait at most `timeout` for a token request; it starts with
    /// `token` when given (a sign-in, a token store, a static token), valid until its expiry
    /// (an expired one is replaced on first use).
    pub(crate) fn new(
        source: Source,
        timeout: Duration,
        token: Option<(AccessToken, Option<chrono::DateTime<chrono::Utc>>)>,
    ) -> Self {
        Self::new_at(source, timeout, token, chrono::Utc::now())
    }

    /// [`new`](Self::new) with the wall-clock time `wall_now` stands for: the one place the
    /// manager reads wall-clock time, to turn a stored expiry into time left on Tokio's clock,
    /// which everything after runs on.
    fn new_at(
        source: Source,
        timeout: Duration,
        token: Option<(AccessToken, Option<chrono::DateTime<chrono::Utc>>)>,
        wall_now: chrono::DateTime<chrono::Utc>,
    ) -> Self {
        let cached = token.and_then(|(access_token, expires_at)| {
            let expires_in = expires_at.map(|at| (at - wall_now).to_std().unwrap_or(Duration::ZERO));
            // The lifetime is unknown here: the remaining time stands in for it.
            (expires_in != Some(Duration::ZERO))
                .then(|| CachedToken::stamp(IssuedToken { access_token, expires_in }, Instant::now()))
        });
        let state = Mutex::new(State { cached, ..State::default() });
        TokenManager { inner: Arc::new(Inner { source, timeout, state }) }
    }

    /// A token that is good to send now, refreshing first when it is due.
    ///
    /// Waits at most one request timeout for a token request under way; the request itself
    /// goes on whatever happens to this caller.
    pub(crate) async fn token(&self) -> Result<AccessToken, Error> {
        let (flight, fallback) = {
            let mut state = self.inner.lock();
            if state.signed_out {
                return Err(signed_out());
            }
            let now = Instant::now();
            if let Some(cached) = state.cached.as_ref().filter(|c| c.is_fresh(now)) {
                return Ok(cached.token.clone());
            }
            // A flight that ended without an answer (its task panicked) is over too.
            let flight = match state.flight.clone().filter(|flight| flight.peek().is_none()) {
                Some(flight) => flight,
                None => {
                    if let Some((error, retry_at)) = &state.failure
                        && now < *retry_at
                    {
                        return state.fallback(now, error);
                    }
                    let flight = self.start();
                    state.flight = Some(flight.clone());
                    flight
                }
            };
            (flight, state.cached.clone())
        };
        match tokio::time::timeout(self.inner.timeout, flight).await {
            Ok(answer) => answer,
            Err(_) => match fallback.filter(|c| c.is_unexpired(Instant::now())) {
                Some(still_valid) => Ok(still_valid.token),
                None => Err(Error::Http(HttpError::timed_out(TOKEN_ENDPOINT))),
            },
        }
    }

    /// Starts a token request in a task of its own and returns its shared result. The task runs
    /// in the span of the caller that started it, so the token request appears in that trace.
    fn start(&self) -> Flight {
        let (answer, answered) = oneshot::channel();
        let inner = self.inner.clone();
        tokio::spawn(
            async move {
                let sent_at = Instant::now();
                let result = inner.source.fetch().await;
                let fetched = result.is_ok();
                let _ = answer.send(inner.finish(result, sent_at));
                if fetched {
                    inner.source.after_fetch().await;
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
    pub(crate) async fn sign_out(&self) -> Result<(), Error> {
        if !self.inner.source.has_user() {
            return Err(Error::invalid(
                "auth",
                "sign-out is for a signed-in user's client (`Auth::user`); this client has no user",
            ));
        }
        *self.inner.lock() = State { signed_out: true, ..State::default() };
        // In a task of its own, like a token request: a caller that gives up while the
        // revocation is under way still leaves the tokens revoked and the store cleared.
        let inner = self.inner.clone();
        tokio::spawn(async move { inner.source.sign_out().await }.in_current_span())
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

    /// Forgets `rejected` after the API refused it, unless a newer token already replaced it or
    /// it cannot be renewed (a static token). Returns true when the next call to
    /// [`token`](Self::token) will not return `rejected`.
    pub(crate) fn invalidate(&self, rejected: &AccessToken) -> bool {
        let mut state = self.inner.lock();
        match state.cached.as_ref() {
            Some(cached) if cached.token == *rejected && self.inner.source.is_renewable() => {
                state.cached = None;
                true
            }
            Some(cached) => cached.token != *rejected,
            None => true,
        }
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod timing_tests;
