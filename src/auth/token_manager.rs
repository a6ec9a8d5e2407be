//! A client's tokens: where they come from (the client credentials grant, a signed-in user's
//! refresh token, a token the caller fixed), where they are kept, and one valid token shared by
//! every clone of the client, refreshed ahead of expiry by a single request however many
//! callers need it at once.
//!
//! Where the token stands is a [`Phase`], changed only by the transitions of [`State`] under
//! one lock; each transition has its unit test (`timing_tests`). A token request runs in a task
//! of its own (a flight): callers wait on its shared result, each at most one request timeout,
//! and may be cancelled at any point; the flight goes on to its own deadline, and its answer is
//! kept.
//!
//! A flight holds the newest set, asks the store for its turn (a store shared by several
//! processes locks the refresh across them and hands back a set another process saved),
//! renews, keeps the new set in memory at once, saves it, and only then releases the turn and
//! hands the token out. A refresh token is presented once: a refresh whose request may have
//! reached the server without its answer reaching the client is never sent again; its refresh
//! token is dropped from the set and the store, and the failure asks for a new sign-in.

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
use crate::bounds::{clamp_lifetime, later};
use crate::error::HttpErrorKind;
use crate::retry::backoff;
use crate::wire::HttpSender;

/// Refresh no later than this long before expiry, and no later than a tenth of the lifetime
/// before it.
const MAX_REFRESH_BUFFER: Duration = Duration::from_secs(300);
/// The first and the longest pause after failed token requests, `Retry-After` included.
const FAILURE_BACKOFF: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(60));
/// The shortest and the longest deadline of a refresh: twice the request timeout, within these.
pub(crate) const REFRESH_DEADLINE: (Duration, Duration) = (Duration::from_secs(60), Duration::from_secs(300));
/// How long one [`TokenStore::save`] may take before it counts as failed.
pub(crate) const SAVE_TIMEOUT: Duration = Duration::from_secs(10);
/// The first and the longest pause before a failed save is tried again.
const SAVE_RETRY: (Duration, Duration) = (Duration::from_millis(500), Duration::from_secs(300));
/// How errors about the token request name it.
const TOKEN_ENDPOINT: &str = "the token endpoint";

/// What a client that signed its user out answers every request.
const SIGNED_OUT: &str = "the user signed out";
/// What signing out a client without a user answers.
const NO_USER: &str = "sign-out is for a signed-in user's client (`Auth::user`); this client has no user";
/// What a client with a static token the API rejected answers.
const STATIC_REJECTED: &str = "the static token was rejected and cannot be renewed";
/// What a refresh whose answer never reached the client answers.
const ANSWER_LOST: &str = "the answer to a refresh was lost (none in time, a connection cut, an unreadable body) and its refresh token may be spent";

/// How a client's tokens are renewed.
pub(crate) enum Grant {
    /// The client credentials grant.
    ClientCredentials(Box<ClientCredentialsGrant>),
    /// The refresh-token grant of a signed-in user's flow.
    Refresh(AuthorizationCodeFlow),
    /// A token the caller manages: never renewed.
    Fixed,
    /// A refresh grant answering from a test's script.
    #[cfg(test)]
    Scripted(timing_tests::Script),
}

impl Grant {
    /// The refresh-token grant of `flow`, its requests through `sender` under a refresh's rules:
    /// one request may take the whole deadline, and it is sent again only after an error answer
    /// or a connection never made (nothing was issued), never after a timeout or a lost
    /// connection (the server may have rotated the refresh token).
    pub(crate) fn refresh(flow: AuthorizationCodeFlow, sender: &HttpSender) -> Grant {
        let policy = sender.retry_policy().clone();
        let once = policy.clone().retry_if(move |error| policy.should_retry(error) && issued_nothing(error));
        let sender = sender.clone().with_timeout(refresh_deadline(sender.timeout())).with_retry(once);
        Grant::Refresh(flow.with_sender(sender))
    }
}

/// True when `error` says that no token was issued: the server answered with an error, or no
/// connection was made.
fn issued_nothing(error: &Error) -> bool {
    let last = if let Error::RetriesExhausted(retried) = error { retried.last() } else { error };
    last.status().is_some() || last.is_unsent()
}

/// How long a refresh waits for its answer: twice the request `timeout`, within
/// [`REFRESH_DEADLINE`].
fn refresh_deadline(timeout: Duration) -> Duration {
    timeout.saturating_mul(2).clamp(REFRESH_DEADLINE.0, REFRESH_DEADLINE.1)
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

/// The shared result of one token request.
type Flight = Shared<BoxFuture<'static, Result<AccessToken, Error>>>;

/// Where a client's token stands.
enum Phase {
    /// No token request under way: the cached token, if any, is served until it is due.
    Idle,
    /// A token request is under way; callers wait for it, each at most one request timeout.
    Refreshing(Flight),
    /// The last token request failed: until the instant no other is made, and callers get its
    /// error, or the cached token while it works unless the error asks for a new sign-in.
    FailedUntil(Error, Instant),
    /// The user signed out: every caller gets an error; nothing is renewed or saved.
    SignedOut,
}

/// What a caller gets: an answer now, or a flight to wait for.
enum Step {
    Answer(Result<AccessToken, Error>),
    Wait(Flight),
}

/// The token, the phase, and the pauses after failures in a row; changed only by the
/// transitions below.
struct State {
    phase: Phase,
    cached: Option<CachedToken>,
    /// The coming pauses after failures; `None` until the first failure since a success.
    pauses: Option<Box<dyn Iterator<Item = Duration> + Send + Sync>>,
}

impl State {
    fn new(cached: Option<CachedToken>) -> Self {
        State { phase: Phase::Idle, cached, pauses: None }
    }

    /// A caller asks for a token at `now`: the cached one while it is fresh; the failure while
    /// it holds; else the flight under way, or a new one from `start`.
    fn call(&mut self, now: Instant, start: impl FnOnce() -> Flight) -> Step {
        if matches!(self.phase, Phase::SignedOut) {
            return Step::Answer(Err(Error::ReauthenticationRequired(SIGNED_OUT)));
        }
        let fresh = self.cached.as_ref().filter(|cached| cached.refresh_at.is_none_or(|at| now < at));
        if let Some(fresh) = fresh {
            return Step::Answer(Ok(fresh.token.clone()));
        }
        let flight = match &self.phase {
            Phase::FailedUntil(error, until) if now < *until => {
                return Step::Answer(self.fallback(now, error.clone()));
            }
            // A flight that ended without an answer (its task panicked) is over too.
            Phase::Refreshing(flight) if flight.peek().is_none() => flight.clone(),
            _ => start(),
        };
        self.phase = Phase::Refreshing(flight.clone());
        Step::Wait(flight)
    }

    /// The flight sent at `sent_at` ended with `result`: the new token is cached, or the failure
    /// holds the next request back for the backoff (at least the server's `Retry-After`).
    fn answered(&mut self, result: Result<Issued, Error>, sent_at: Instant) -> Result<AccessToken, Error> {
        if matches!(self.phase, Phase::SignedOut) {
            return Err(Error::ReauthenticationRequired(SIGNED_OUT));
        }
        let error = match result {
            Ok(issued) => {
                let cached = CachedToken::stamp(issued, sent_at);
                tracing::debug!(expires_in = ?cached.expires_at.map(|at| at - sent_at), "access token obtained");
                *self = State::new(Some(cached.clone()));
                return Ok(cached.token);
            }
            Err(error) => error,
        };
        let (first, longest) = FAILURE_BACKOFF;
        let pause = self.pauses.get_or_insert_with(|| Box::new(backoff(first, longest))).next();
        let pause = pause.unwrap_or(longest).max(error.retry_after().unwrap_or_default()).min(longest);
        tracing::warn!(error = %error, retry_in_ms = pause.as_millis() as u64, "token request failed");
        let now = Instant::now();
        self.phase = Phase::FailedUntil(error.clone(), later(now, pause));
        self.fallback(now, error)
    }

    /// The user signed out: nothing is served or renewed any more.
    fn sign_out(&mut self) {
        *self = State { phase: Phase::SignedOut, ..State::new(None) };
    }

    /// The API refused `rejected`: forgotten unless it cannot be renewed (`renewable` false) or
    /// a newer token replaced it. True when the next call will not return `rejected`.
    fn invalidate(&mut self, rejected: &AccessToken, renewable: bool) -> bool {
        if renewable && self.cached.as_ref().is_some_and(|cached| cached.token == *rejected) {
            self.cached = None;
        }
        self.cached.as_ref().is_none_or(|cached| cached.token != *rejected)
    }

    /// What a caller gets when no token request serves it: the cached token while it has not
    /// expired, unless `error` asks for a new sign-in.
    fn fallback(&self, now: Instant, error: Error) -> Result<AccessToken, Error> {
        let valid = self.cached.as_ref().filter(|cached| cached.expires_at.is_none_or(|at| now < at));
        valid.filter(|_| !error.needs_reauthentication()).map(|valid| valid.token.clone()).ok_or(error)
    }
}

/// Caches the current token and refreshes it with single flight; shared by every clone of a
/// client as a [`TokenManager`].
pub(crate) struct Manager {
    grant: Grant,
    store: Option<Arc<dyn TokenStore>>,
    /// The longest a caller waits for a token request: one request timeout.
    timeout: Duration,
    state: Mutex<State>,
    /// The newest set, whose refresh token is the one to use next, behind an async lock that a
    /// flight holds from its store's turn to the save.
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
        let (state, current) = (Mutex::new(State::new(cached)), tokio::sync::Mutex::new(tokens));
        Arc::new(Manager { grant, store, timeout, state, current })
    }

    /// A token that is good to send now, refreshing first when it is due. Waits at most one
    /// request timeout for a token request under way, which goes on whatever happens here.
    pub(crate) async fn token(self: &Arc<Self>) -> Result<AccessToken, Error> {
        let flight = match self.lock().call(Instant::now(), || self.start()) {
            Step::Answer(answer) => return answer,
            Step::Wait(flight) => flight,
        };
        let timed_out = || Error::http(HttpErrorKind::Timeout, TOKEN_ENDPOINT, None);
        let answer = tokio::time::timeout(self.timeout, flight).await;
        answer.unwrap_or_else(|_| self.lock().fallback(Instant::now(), timed_out()))
    }

    /// Starts a token request in a task of its own (in the span of the caller that started
    /// it, so it appears in that trace) and returns its shared result.
    fn start(self: &Arc<Self>) -> Flight {
        let manager = Arc::clone(self);
        let request = async move {
            let sent_at = Instant::now();
            let result = manager.fetch().await;
            manager.lock().answered(result, sent_at)
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
        let Grant::Refresh(flow) = &self.grant else { return Err(Error::invalid("auth", NO_USER)) };
        self.lock().sign_out();
        // In a task of its own, like a token request: a caller that gives up while the
        // revocation is under way still leaves the tokens revoked and the store cleared.
        let (manager, flow) = (Arc::clone(self), flow.clone());
        let revoke = async move {
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
        self.lock().invalidate(rejected, !matches!(self.grant, Grant::Fixed))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn is_signed_out(&self) -> bool {
        matches!(self.lock().phase, Phase::SignedOut)
    }

    /// A new token, in the flight's own task: the store's turn is taken, then a set another
    /// process saved is used or the tokens are renewed, kept and saved, and only then the turn
    /// released and the token handed out.
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

    /// Renews `current` with the grant, keeps the new set and saves it. After a failure that
    /// says the refresh token is spent (`invalid_grant`, or its answer lost), the set keeps
    /// no refresh token, here and in the store, so that no process presents it again.
    async fn renew(self: &Arc<Self>, current: &mut TokenSet) -> Result<Issued, Error> {
        let answer = match &self.grant {
            Grant::ClientCredentials(grant) => grant.request().await,
            Grant::Refresh(flow) => self.present_once(flow.refresh_unverified(current)).await,
            Grant::Fixed => Err(Error::ReauthenticationRequired(STATIC_REJECTED)),
            #[cfg(test)]
            Grant::Scripted(script) => self.present_once(script(current)).await,
        };
        let Refreshed { tokens, expires_in, new_id_token } = match answer {
            Ok(refreshed) => refreshed,
            Err(error) => {
                // `invalid_client` refuses the client's settings, not the refresh token: kept.
                let spent = matches!(error, Error::ReauthenticationRequired(_))
                    || error.code() == Some(&crate::error::ErrorCode::InvalidGrant);
                if spent && current.refresh_token.take().is_some() {
                    self.save(current).await;
                }
                return Err(error);
            }
        };
        let rotated = tokens.refresh_token != current.refresh_token;
        // Kept first: the server has already retired the old refresh token.
        *current = tokens;
        self.save(current).await;
        tracing::debug!(rotated, "tokens renewed");
        if let Some(unverified) = new_id_token {
            tokio::spawn(self.clone().verify_id_token(unverified).in_current_span());
        }
        Ok((current.access_token.clone(), expires_in))
    }

    /// A refresh `request`, given the flight's deadline ([`refresh_deadline`]); a failure that
    /// may have followed the server's rotation (no answer in time, a connection lost, an
    /// unreadable answer) asks for a new sign-in.
    async fn present_once(
        &self,
        request: impl Future<Output = Result<Refreshed, Error>>,
    ) -> Result<Refreshed, Error> {
        let answer = tokio::time::timeout(refresh_deadline(self.timeout), request).await;
        match answer.unwrap_or_else(|_| Err(Error::http(HttpErrorKind::Timeout, TOKEN_ENDPOINT, None))) {
            Err(error) if !issued_nothing(&error) && !error.needs_reauthentication() => {
                tracing::warn!(error = %error, "a refresh's answer was lost; its refresh token is not presented again");
                Err(Error::ReauthenticationRequired(ANSWER_LOST))
            }
            answer => answer,
        }
    }

    /// Saves `tokens`, the current set; after a failure (logged), tries again in the background
    /// after the crate's backoff until a save succeeds, a newer set replaced them, or the
    /// client is gone.
    async fn save(self: &Arc<Self>, tokens: &TokenSet) {
        let Some(store) = self.store.as_ref().filter(|_| !self.is_signed_out()) else { return };
        if save_once(store.as_ref(), tokens).await {
            return;
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
