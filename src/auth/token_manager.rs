//! A client's tokens: where they come from (the client credentials grant, a signed-in user's
//! refresh token, a token the caller fixed), where they are kept, and one valid token shared by
//! every clone of the client, refreshed ahead of expiry by a single request however many
//! callers need it at once.
//!
//! A token request runs in a task of its own. Callers wait on its shared result and may be
//! cancelled at any point (a timeout around a call, a dropped stream): the request still runs
//! to completion and its answer is kept. A failed request is given to every caller waiting on
//! it, and the next one starts only after the crate's backoff (or the server's `Retry-After`);
//! meanwhile a token that has not expired keeps being served.
//!
//! A renewal holds the newest set, asks the store for its turn (a store shared by several
//! processes locks the renewal across them and hands back a set another process saved), renews,
//! keeps the new set in memory at once, saves it, and only then releases the turn and hands the
//! token out. A save that fails is retried in the background until it lands.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use tokio::time::Instant;
use tracing::Instrument;

use super::client_credentials::ClientCredentialsGrant;
use super::oauth::Refreshed;
use super::{AccessToken, AuthorizationCodeFlow, IdToken, RefreshTurn, TokenSet, TokenStore};
use crate::Error;
use crate::bounds::clamp_lifetime;
use crate::error::HttpErrorKind;
use crate::retry::{Failures, backoff};

/// Refresh no later than this long before expiry, and no later than a tenth of the lifetime
/// before it.
const MAX_REFRESH_BUFFER: Duration = Duration::from_secs(300);
/// The first and the longest pause after failed token requests, `Retry-After` included.
const FAILURE_BACKOFF: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(60));
/// How long one [`TokenStore::save`] may take before it counts as failed.
const SAVE_TIMEOUT: Duration = Duration::from_secs(10);
/// The first and the longest pause before a failed save is tried again.
const SAVE_RETRY: (Duration, Duration) = (Duration::from_millis(500), Duration::from_secs(300));
/// How errors about the token request name it.
const TOKEN_ENDPOINT: &str = "the token endpoint";

/// What a client that signed its user out answers every request.
const SIGNED_OUT: &str = "the user signed out";
/// What a client with a static token the API rejected answers.
const STATIC_REJECTED: &str = "the static token was rejected and cannot be renewed";

/// How a client's tokens are renewed.
pub(crate) enum Grant {
    /// The client credentials grant.
    ClientCredentials(Box<ClientCredentialsGrant>),
    /// The refresh-token grant of a signed-in user's flow.
    Refresh(AuthorizationCodeFlow),
    /// A token the caller manages: never renewed.
    Fixed,
    /// Answers from a test's script.
    #[cfg(test)]
    Scripted(Box<dyn Fn() -> BoxFuture<'static, Result<Refreshed, Error>> + Send + Sync>),
}

/// An access token and the time it has left from when it was asked for.
type Issued = (AccessToken, Option<Duration>);

#[derive(Clone)]
struct CachedToken {
    token: AccessToken,
    /// After this instant the token is refreshed before use.
    refresh_at: Option<Instant>,
    /// After this instant the token is never sent.
    expires_at: Option<Instant>,
}

impl CachedToken {
    /// The token of a request sent at `sent_at`; a lifetime over a year counts as one year.
    fn stamp((token, expires_in): Issued, sent_at: Instant) -> Self {
        let lifetime = expires_in.map(clamp_lifetime);
        let expires_at = lifetime.and_then(|lifetime| sent_at.checked_add(lifetime));
        let refresh_at = lifetime
            .and_then(|lifetime| sent_at.checked_add(lifetime - MAX_REFRESH_BUFFER.min(lifetime / 10)));
        CachedToken { token, refresh_at, expires_at }
    }
}

/// What a caller gets when no token request can serve it: `cached` while it has not expired,
/// unless `error` asks for a new sign-in.
fn fallback(cached: Option<&CachedToken>, error: Error) -> Result<AccessToken, Error> {
    match cached.filter(|cached| cached.expires_at.is_none_or(|at| Instant::now() < at)) {
        Some(valid) if !error.needs_reauthentication() => Ok(valid.token.clone()),
        _ => Err(error),
    }
}

/// The shared result of one token request.
type Flight = Shared<BoxFuture<'static, Result<AccessToken, Error>>>;

#[derive(Default)]
struct State {
    cached: Option<CachedToken>,
    /// The token request under way, if any.
    flight: Option<Flight>,
    /// The token requests that failed since the last success.
    failures: Failures,
}

/// Caches the current token and refreshes it with single flight; shared by every clone of a
/// client as a [`TokenManager`].
pub(crate) struct Manager {
    grant: Grant,
    store: Option<Arc<dyn TokenStore>>,
    /// The longest a caller waits for a token request: one request timeout.
    timeout: Duration,
    /// The user signed out: no token is handed out, saved or renewed any more.
    signed_out: AtomicBool,
    state: Mutex<State>,
    /// The newest set, whose refresh token is the one to use next, behind an async lock that a
    /// renewal holds from its store's turn to the save.
    current: tokio::sync::Mutex<TokenSet>,
}

/// A client's tokens, one [`Manager`] shared by its clones. Cheap to clone.
pub(crate) type TokenManager = Arc<Manager>;

impl std::fmt::Debug for Manager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenManager").field("store", &self.store.is_some()).finish_non_exhaustive()
    }
}

impl Manager {
    /// The tokens `grant` renews and `store` keeps, from `tokens` on (a sign-in, a stored set, a
    /// static token; an empty access token is none, an expired one is replaced on first use).
    /// Callers wait at most `timeout` for a token request.
    pub(crate) fn new(
        grant: Grant,
        store: Option<Arc<dyn TokenStore>>,
        tokens: TokenSet,
        timeout: Duration,
    ) -> TokenManager {
        let issued = (tokens.access_token.clone(), tokens.expires_in());
        let cached = (!issued.0.secret().is_empty()).then(|| CachedToken::stamp(issued, Instant::now()));
        let state = Mutex::new(State { cached, ..State::default() });
        let current = tokio::sync::Mutex::new(tokens);
        Arc::new(Manager { grant, store, timeout, signed_out: AtomicBool::default(), state, current })
    }

    /// A token that is good to send now, refreshing first when it is due.
    ///
    /// Waits at most one request timeout for a token request under way; the request itself
    /// goes on whatever happens to this caller.
    pub(crate) async fn token(self: &Arc<Self>) -> Result<AccessToken, Error> {
        let flight = {
            let mut state = self.lock();
            if self.is_signed_out() {
                return Err(Error::ReauthenticationRequired(SIGNED_OUT));
            }
            let now = Instant::now();
            let fresh = |cached: &&CachedToken| cached.refresh_at.is_none_or(|at| now < at);
            if let Some(cached) = state.cached.as_ref().filter(fresh) {
                return Ok(cached.token.clone());
            }
            // No request before the backoff after a failure is over.
            if let Some(error) = state.failures.pending(now) {
                return fallback(state.cached.as_ref(), error.clone());
            }
            // A flight that ended without an answer (its task panicked) is over too.
            let flight = state.flight.take().filter(|flight| flight.peek().is_none());
            state.flight.insert(flight.unwrap_or_else(|| self.start())).clone()
        };
        let timed_out = || Error::http(HttpErrorKind::Timeout, TOKEN_ENDPOINT, None);
        let answer = tokio::time::timeout(self.timeout, flight).await;
        answer.unwrap_or_else(|_| fallback(self.lock().cached.as_ref(), timed_out()))
    }

    /// Starts a token request in a task of its own and returns its shared result: the token, or
    /// the failure, which holds the next request back for the crate's backoff (or the server's
    /// `Retry-After`). The task runs in the span of the caller that started it, so the token
    /// request appears in that trace.
    fn start(self: &Arc<Self>) -> Flight {
        let manager = Arc::clone(self);
        let request = async move {
            let sent_at = Instant::now();
            let result = manager.fetch().await;
            let mut state = manager.lock();
            state.flight = None;
            if manager.is_signed_out() {
                return Err(Error::ReauthenticationRequired(SIGNED_OUT));
            }
            let error = match result {
                Ok(issued) => {
                    let cached = CachedToken::stamp(issued, sent_at);
                    tracing::debug!(expires_in = ?cached.expires_at.map(|at| at - sent_at), "access token obtained");
                    *state = State { cached: Some(cached.clone()), ..State::default() };
                    return Ok(cached.token);
                }
                Err(error) => error,
            };
            let retry_after = error.retry_after().unwrap_or_default();
            state.failures.record("token request", &error, FAILURE_BACKOFF, retry_after);
            fallback(state.cached.as_ref(), error)
        };
        let abandoned = |e| Err(Error::task_failed(TOKEN_ENDPOINT, e));
        tokio::spawn(request.in_current_span())
            .map(move |answer| answer.unwrap_or_else(abandoned))
            .boxed()
            .shared()
    }

    /// Signs the user out: from now on no token is handed out (every request is
    /// "the user signed out"); then, once a refresh under way has ended (so the newest refresh token
    /// is the one revoked), the tokens are forgotten, revoked, and the store cleared, whatever
    /// the revocation's outcome. The first failure is returned.
    pub(crate) async fn sign_out(self: &Arc<Self>) -> Result<(), Error> {
        if !matches!(self.grant, Grant::Refresh(_)) {
            return Err(Error::invalid(
                "auth",
                "sign-out is for a signed-in user's client (`Auth::user`); this client has no user",
            ));
        }
        self.signed_out.store(true, Ordering::SeqCst);
        *self.lock() = State::default();
        // In a task of its own, like a token request: a caller that gives up while the
        // revocation is under way still leaves the tokens revoked and the store cleared.
        let manager = Arc::clone(self);
        let revoke = async move {
            let Grant::Refresh(flow) = &manager.grant else { return Ok(()) };
            let revoked = flow.revoke(&std::mem::take(&mut *manager.current.lock().await)).await;
            if let Err(error) = &revoked {
                tracing::warn!(error = %error, "revoking the user's tokens failed; they are forgotten here");
            }
            let cleared = match &manager.store {
                Some(store) => store.clear().await.map_err(Error::TokenStore),
                None => Ok(()),
            };
            revoked.and(cleared)
        };
        tokio::spawn(revoke.in_current_span())
            .await
            .unwrap_or_else(|e| Err(Error::task_failed("the revocation endpoint", e)))
    }

    /// The signed-in user's current tokens, once a refresh under way has ended; `None` for
    /// other clients and after sign-out.
    pub(crate) async fn current(&self) -> Option<TokenSet> {
        let user = matches!(self.grant, Grant::Refresh(_)) && !self.is_signed_out();
        let current = if user { Some(self.current.lock().await.clone()) } else { None };
        current.filter(|_| !self.is_signed_out())
    }

    /// Forgets `rejected` after the API refused it, unless a newer token already replaced it or
    /// it cannot be renewed (a static token). Returns true when the next call to
    /// [`token`](Self::token) will not return `rejected`.
    pub(crate) fn invalidate(&self, rejected: &AccessToken) -> bool {
        let mut state = self.lock();
        let renewable = !matches!(self.grant, Grant::Fixed);
        if renewable && state.cached.as_ref().is_some_and(|cached| cached.token == *rejected) {
            state.cached = None;
        }
        state.cached.as_ref().is_none_or(|cached| cached.token != *rejected)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn is_signed_out(&self) -> bool {
        self.signed_out.load(Ordering::SeqCst)
    }

    /// A new token. Runs in the manager's own task, never cancelled: the store's turn is taken,
    /// then a set another process saved is used or the tokens are renewed, the new set kept in
    /// memory the moment it arrives (refresh token first), saved, and only then handed out.
    async fn fetch(self: &Arc<Self>) -> Result<Issued, Error> {
        let mut current = self.current.lock().await;
        if self.is_signed_out() {
            return Err(Error::ReauthenticationRequired(SIGNED_OUT));
        }
        let RefreshTurn { newer, lock } = match &self.store {
            Some(store) => store.begin_refresh(&current).await.map_err(Error::TokenStore)?,
            None => RefreshTurn::proceed(),
        };
        // Its refresh token is the newest, whether or not its access token still works.
        let taken = newer.map(|newer| *current = newer).is_some();
        let result = if taken && !current.is_expired() {
            tracing::debug!("tokens taken from the store, renewed elsewhere");
            Ok((current.access_token.clone(), current.expires_in()))
        } else {
            self.renew(&mut current).await
        };
        if let Some(lock) = lock {
            lock.release().await;
        }
        result
    }

    /// Renews `current` with the grant, keeps the new set and saves it.
    async fn renew(self: &Arc<Self>, current: &mut TokenSet) -> Result<Issued, Error> {
        let Refreshed { tokens, expires_in, new_id_token } = match &self.grant {
            Grant::ClientCredentials(grant) => grant.request().await?,
            Grant::Refresh(flow) => flow.refresh_unverified(current).await?,
            Grant::Fixed => return Err(Error::ReauthenticationRequired(STATIC_REJECTED)),
            #[cfg(test)]
            Grant::Scripted(script) => script().await?,
        };
        let rotated = tokens.refresh_token != current.refresh_token;
        // Kept first: the server has already retired the old refresh token.
        *current = tokens;
        let saved = self.save(current).await;
        tracing::debug!(rotated, saved, "tokens renewed");
        if let Some(unverified) = new_id_token {
            tokio::spawn(self.clone().verify_id_token(unverified).in_current_span());
        }
        Ok((current.access_token.clone(), expires_in))
    }

    /// Saves `tokens`, the current set, and says whether it did; after a failure, tries again in
    /// the background after the crate's backoff until a save succeeds, a newer set replaced
    /// them, or the client is gone.
    async fn save(self: &Arc<Self>, tokens: &TokenSet) -> bool {
        let Some(store) = self.store.as_ref().filter(|_| !self.is_signed_out()) else { return false };
        if save_once(store.as_ref(), tokens).await {
            return true;
        }
        let (manager, unsaved) = (Arc::downgrade(self), tokens.access_token.clone());
        tokio::spawn(async move {
            for pause in backoff(SAVE_RETRY.0, SAVE_RETRY.1) {
                tokio::time::sleep(pause).await;
                let Some(manager) = Weak::upgrade(&manager) else { return };
                let current = manager.current.lock().await;
                let Some(store) = manager.store.as_ref().filter(|_| current.access_token == unsaved) else {
                    return;
                };
                if save_once(store.as_ref(), &current).await {
                    tracing::info!("renewed tokens saved after an earlier failure");
                    return;
                }
            }
        });
        false
    }

    /// Verifies the ID token a refresh brought into the set it replaced, `previous`, while its
    /// tokens are handed out; one that fails is dropped from the set (and the store).
    async fn verify_id_token(self: Arc<Self>, (id_token, previous): (IdToken, TokenSet)) {
        let Grant::Refresh(flow) = &self.grant else { return };
        let outcome = flow.verify_id_token(&id_token).await;
        let mut current = self.current.lock().await;
        if current.id_token.as_ref() != Some(&id_token) {
            return; // a newer refresh replaced it
        }
        let dropped = outcome.is_err();
        current.settle_id_token(outcome, &previous);
        if dropped {
            self.save(&current).await;
        }
    }
}

/// One save, bounded by [`SAVE_TIMEOUT`]; a failure is logged.
async fn save_once(store: &dyn TokenStore, tokens: &TokenSet) -> bool {
    let failure = match tokio::time::timeout(SAVE_TIMEOUT, store.save(tokens)).await {
        Ok(Ok(())) => return true,
        Ok(Err(error)) => error.to_string(),
        Err(_) => format!("no answer within {SAVE_TIMEOUT:?}"),
    };
    tracing::warn!(error = failure, "saving renewed tokens failed; kept in memory, the save is retried");
    false
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod timing_tests;
