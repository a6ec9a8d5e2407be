//! A signed-in user's tokens ([`TokenSet`]), where they are kept between runs ([`TokenStore`],
//! [`KeyedTokenStore`] for many users, in memory here and in files in [`file`]), and the hook a
//! store shared by several processes uses to keep a user's refresh single flight across all of
//! them ([`RefreshTurn`]).

use std::collections::HashMap;
use std::fmt;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::token_manager::{REFRESH_DEADLINE, SAVE_TIMEOUT};
use super::{AccessToken, Claims, IdToken, RefreshToken, TokenStoreError};
use crate::bounds::later;
use crate::retry::backoff;

mod file;
pub use file::{DirectoryTokenStore, FileTokenStore};

/// What the methods of a [`TokenStore`] return.
pub(crate) type StoreFuture<'a, T> = BoxFuture<'a, Result<T, TokenStoreError>>;

/// The tokens of a signed-in user: what the authorization-code exchange and every refresh
/// return, and what a [`TokenStore`] keeps.
///
/// Serialises to JSON with the tokens in plain text (that is what a store needs); `Debug` prints
/// `[redacted]` for each of them.
///
/// ```
/// use business_records::auth::TokenSet;
/// let tokens = TokenSet::new("eyJhbGciOi...").with_refresh_token("r1").with_scopes(["api/read"]);
/// assert!(tokens.refresh_token.is_some());
/// assert!(!format!("{tokens:?}").contains("r1"));
/// ```
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TokenSet {
    /// The bearer token sent to the API.
    pub access_token: AccessToken,
    /// Renews the access token without the user; `None` when the server issued none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<RefreshToken>,
    /// The OpenID Connect ID token, when the `openid` scope was granted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_token: Option<IdToken>,
    /// When the access token expires, measured from when the token request was sent; `None`
    /// when the server gave no lifetime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
    /// The granted scopes.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The ID token's claims, set only after the ID token was verified; kept through a store
    /// (sets saved before they were kept read back without them).
    #[serde(default, rename = "id_token_claims", skip_serializing_if = "Option::is_none")]
    pub(crate) id_claims: Option<Claims>,
    /// Why the ID token of the refresh that made this set was dropped.
    #[serde(skip)]
    id_token_error: Option<Arc<crate::Error>>,
}

impl TokenSet {
    /// A set holding only an access token.
    pub fn new(access_token: impl Into<String>) -> Self {
        TokenSet { access_token: AccessToken::new(access_token), ..TokenSet::default() }
    }

    /// Sets the refresh token.
    #[must_use]
    pub fn with_refresh_token(mut self, token: impl Into<String>) -> Self {
        self.refresh_token = Some(RefreshToken::new(token));
        self
    }

    /// Sets when the access token expires.
    #[must_use]
    pub fn with_expires_at(mut self, expires_at: DateTime<Utc>) -> Self {
        self.expires_at = Some(expires_at);
        self
    }

    /// Sets the granted scopes.
    #[must_use]
    pub fn with_scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The verified claims of the ID token (`sub`, `email`, ...).
    ///
    /// Set on the sets returned by
    /// [`AuthorizationCodeFlow::exchange`](super::AuthorizationCodeFlow::exchange) and by
    /// refreshes, after the ID token's signature, issuer, audience and expiry were checked, and
    /// kept when the set is saved to a [`TokenStore`] and loaded again (so a web app knows who a
    /// stored set belongs to: `sub`). `None` on a set saved by a version of this crate that did
    /// not keep them (verify its ID token again with
    /// [`AuthorizationCodeFlow::verify_id_token`](super::AuthorizationCodeFlow::verify_id_token)).
    /// A refreshed ID token that failed verification was dropped: the claims are then those of
    /// the previous one, and [`id_token_error`](Self::id_token_error) says why.
    pub fn id_token_claims(&self) -> Option<&Claims> {
        self.id_claims.as_ref()
    }

    /// Why the ID token of the refresh that made this set failed verification, if it did.
    ///
    /// Such an ID token is dropped: the set keeps the previous ID token and its claims, and its
    /// new access and refresh tokens, which the server has already issued in place of the old
    /// ones. `None` when the refresh brought no ID token or a valid one.
    ///
    /// ```
    /// # async fn run(flow: business_records::auth::AuthorizationCodeFlow,
    /// #              tokens: business_records::auth::TokenSet) -> Result<(), business_records::Error> {
    /// let renewed = flow.refresh(&tokens).await?;
    /// if let Some(error) = renewed.id_token_error() {
    ///     eprintln!("the new ID token was dropped: {error}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn id_token_error(&self) -> Option<&crate::Error> {
        self.id_token_error.as_deref()
    }

    /// Applies the verification of the ID token a refresh brought: kept with its claims, or
    /// dropped for the one of `previous` (the set the refresh replaced), with the reason kept
    /// and logged.
    pub(crate) fn settle_id_token(&mut self, outcome: Result<Claims, crate::Error>, previous: &TokenSet) {
        match outcome {
            Ok(claims) => {
                self.id_claims = Some(claims);
                self.id_token_error = None;
            }
            Err(error) => {
                tracing::warn!(error = %error, "the refreshed id token failed verification and was dropped");
                self.id_token = previous.id_token.clone();
                self.id_claims = previous.id_claims.clone();
                self.id_token_error = Some(Arc::new(error));
            }
        }
    }

    /// The time the access token has left (none when it has expired).
    pub(crate) fn expires_in(&self) -> Option<Duration> {
        self.expires_at.map(|at| (at - Utc::now()).to_std().unwrap_or_default())
    }

    /// True when this set, read from a store, was saved after `current`: it holds another
    /// refresh token or expiry (not the access token, which a provider may return unchanged)
    /// and expires no earlier (a set this process failed to save, and holds, is newer).
    pub(crate) fn replaces(&self, current: &TokenSet) -> bool {
        (&self.refresh_token, self.expires_at) != (&current.refresh_token, current.expires_at)
            && current.expires_at.is_none_or(|now| self.expires_at.is_none_or(|then| then >= now))
    }

    /// True when the access token has expired (a set without expiry never does).
    pub fn is_expired(&self) -> bool {
        self.expires_at.is_some_and(|at| at <= Utc::now())
    }
}

/// Where a user's tokens are kept between runs: a file, the OS keychain, a database.
///
/// The client saves every rotated token set through the store before anyone can use the new
/// tokens, so a crash never loses a refresh token the server has already replaced. Saving the
/// first set, right after sign-in, is the application's call (see `examples/desktop_login.rs`).
///
/// The trait is object safe: methods return boxed futures.
///
/// ```
/// use business_records::auth::{TokenSet, TokenStore, TokenStoreError};
/// use futures::future::BoxFuture;
///
/// /// Keeps nothing: every run signs in again.
/// struct Forgetful;
///
/// impl TokenStore for Forgetful {
///     fn load(&self) -> BoxFuture<'_, Result<Option<TokenSet>, TokenStoreError>> {
///         Box::pin(async { Ok(None) })
///     }
///     fn save<'a>(&'a self, _tokens: &'a TokenSet) -> BoxFuture<'a, Result<(), TokenStoreError>> {
///         Box::pin(async { Ok(()) })
///     }
/// }
/// ```
pub trait TokenStore: Send + Sync + 'static {
    /// The stored set, or `None` when nothing is stored yet.
    fn load(&self) -> StoreFuture<'_, Option<TokenSet>>;

    /// Replaces the stored set with `tokens`.
    fn save<'a>(&'a self, tokens: &'a TokenSet) -> StoreFuture<'a, ()>;

    /// Called before the client refreshes `current` with its refresh token. A store shared by
    /// several processes takes a lock here (waiting while another process holds it, and failing
    /// rather than going on without it while its holder lives) and returns the set another
    /// process saved meanwhile, one with another refresh token or expiry (see [`RefreshTurn`]);
    /// the default, for a store kept by one process, does nothing.
    fn begin_refresh<'a>(&'a self, current: &'a TokenSet) -> StoreFuture<'a, RefreshTurn> {
        let _ = current;
        Box::pin(async { Ok(RefreshTurn::proceed()) })
    }

    /// Deletes the stored set: the user signed out
    /// ([`Client::sign_out`](crate::Client::sign_out)). The default does nothing, so stores
    /// written before this method existed keep compiling; their sets stay stored, revoked and
    /// useless. The crate's stores delete them.
    fn clear(&self) -> StoreFuture<'_, ()> {
        Box::pin(async { Ok(()) })
    }
}

impl<T: TokenStore + ?Sized> TokenStore for Arc<T> {
    fn load(&self) -> StoreFuture<'_, Option<TokenSet>> {
        (**self).load()
    }

    fn save<'a>(&'a self, tokens: &'a TokenSet) -> StoreFuture<'a, ()> {
        (**self).save(tokens)
    }

    fn begin_refresh<'a>(&'a self, current: &'a TokenSet) -> StoreFuture<'a, RefreshTurn> {
        (**self).begin_refresh(current)
    }

    fn clear(&self) -> StoreFuture<'_, ()> {
        (**self).clear()
    }
}

/// The first and the longest pause of a process waiting for another's refresh lock.
const LOCK_POLL: (Duration, Duration) = (Duration::from_millis(10), Duration::from_millis(100));

/// How long a refresh waits for another process's turn on a user's tokens before it fails:
/// longer than a refresh holds the turn (its deadline of at most five minutes, then a save).
pub(crate) const LOCK_WAIT: Duration = Duration::from_secs(360);
const _: () = assert!(LOCK_WAIT.as_secs() > REFRESH_DEADLINE.1.as_secs() + 2 * SAVE_TIMEOUT.as_secs());

/// Takes a lock another process may hold (the file stores' and Redis's): `try_lock` once, then
/// again after each of the crate's backoff pauses, until it breaks with the lock (`true`) or
/// with none to be had here (`false`: the refresh goes on as a single process's), or `wait` has
/// passed: an error naming `lock`, since its holder lives.
pub(crate) async fn wait_for_lock<F: Future<Output = ControlFlow<bool>>>(
    lock: &str,
    wait: Duration,
    mut try_lock: impl FnMut() -> F,
) -> Result<bool, TokenStoreError> {
    let deadline = later(Instant::now(), wait);
    let mut pauses = backoff(LOCK_POLL.0, LOCK_POLL.1);
    loop {
        if let ControlFlow::Break(taken) = try_lock().await {
            return Ok(taken);
        }
        if Instant::now() >= deadline {
            return Err(TokenStoreError::new(format!("{lock} is held by another process for over {wait:?}")));
        }
        tokio::time::sleep(pauses.next().unwrap_or(LOCK_POLL.1)).await;
    }
}

/// The turn of a store shared by processes: a set another process saved since (what `read`
/// finds, `None` for anything else) that still works needs no lock, its holder may be long
/// gone; otherwise the turn holds the lock `lock` takes (without one to be had, the refresh
/// goes on as a single process's would) and what `read` finds under it.
pub(crate) async fn shared_turn<R: Future<Output = Result<Option<TokenSet>, TokenStoreError>>>(
    lock: impl Future<Output = Result<Option<RefreshLock>, TokenStoreError>>,
    read: impl Fn() -> R,
) -> Result<RefreshTurn, TokenStoreError> {
    if let Ok(Some(newer)) = read().await
        && !newer.is_expired()
    {
        return Ok(RefreshTurn::proceed().with_newer(newer));
    }
    let Some(lock) = lock.await? else { return Ok(RefreshTurn::proceed()) };
    let newer = read().await.unwrap_or_else(|error| {
        tracing::debug!(error = %error, "the stored tokens are unreadable; refreshing with the current ones");
        None
    });
    Ok(RefreshTurn { newer, lock: Some(lock) })
}

/// What a store says when the client is about to refresh a user's tokens; returned by
/// [`TokenStore::begin_refresh`](super::TokenStore::begin_refresh).
///
/// A store kept by one process returns [`RefreshTurn::proceed`] (the default). A store shared
/// by several processes takes a lock first, so that a rotating refresh token is presented once,
/// and hands back the set another process saved meanwhile, if any: the client then uses that
/// set instead of refreshing again.
///
/// ```
/// use business_records::auth::{RefreshLock, RefreshTurn, TokenSet};
/// let turn = RefreshTurn::locked(RefreshLock::new(async { /* release the lock */ }))
///     .with_newer(TokenSet::new("eyJhbGciOi...").with_refresh_token("r2"));
/// assert!(turn.newer().is_some());
/// ```
#[must_use]
#[derive(Debug, Default)]
pub struct RefreshTurn {
    pub(crate) newer: Option<TokenSet>,
    pub(crate) lock: Option<RefreshLock>,
}

impl RefreshTurn {
    /// Refresh as a single process would: no lock, nothing newer in the store.
    pub fn proceed() -> Self {
        RefreshTurn::default()
    }

    /// Refresh while holding `lock`; the client releases it after it saved the new set.
    pub fn locked(lock: RefreshLock) -> Self {
        RefreshTurn { newer: None, lock: Some(lock) }
    }

    /// Another process saved `tokens` since this one last read the store: the client takes
    /// them, and refreshes only if their access token has expired.
    pub fn with_newer(mut self, tokens: TokenSet) -> Self {
        self.newer = Some(tokens);
        self
    }

    /// The newer set, if another process saved one.
    pub fn newer(&self) -> Option<&TokenSet> {
        self.newer.as_ref()
    }

    /// True when the store took a lock for this refresh.
    pub fn is_locked(&self) -> bool {
        self.lock.is_some()
    }
}

/// A lock held while a user's tokens are refreshed; made by a shared store, released by the
/// client once the new set is saved.
///
/// The release runs when [`release`](Self::release) is awaited, or, if the holder is dropped
/// first (a cancelled request), on a task of the current tokio runtime. A store should also give
/// its lock an expiry, so that a holder that dies releases it.
pub struct RefreshLock {
    release: Option<BoxFuture<'static, ()>>,
}

impl RefreshLock {
    /// A lock whose release is `release`.
    pub fn new(release: impl Future<Output = ()> + Send + 'static) -> Self {
        RefreshLock { release: Some(Box::pin(release)) }
    }

    /// Releases the lock now.
    pub async fn release(mut self) {
        if let Some(release) = self.release.take() {
            release.await;
        }
    }
}

impl Drop for RefreshLock {
    fn drop(&mut self) {
        if let Some(release) = self.release.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(release);
        }
    }
}

impl fmt::Debug for RefreshLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RefreshLock").field("held", &self.release.is_some()).finish()
    }
}

/// Token stores for many users, kept by one object: [`for_user`](Self::for_user) gives the
/// store of the user the app knows as `user_key` (a user id, a session id), to hand to
/// [`UserAuth::store`](super::UserAuth::store): in memory ([`MemoryKeyedStore`]), in a
/// directory of files ([`DirectoryTokenStore`]) or in Redis (`RedisTokenCache`, feature `redis`).
///
/// ```no_run
/// # async fn run(app: business_records::Client, flow: business_records::auth::AuthorizationCodeFlow)
/// #     -> Result<(), Box<dyn std::error::Error>> {
/// use business_records::Auth;
/// use business_records::auth::{DirectoryTokenStore, KeyedTokenStore, TokenStore};
///
/// let stores = DirectoryTokenStore::new("/var/lib/my-app/tokens");
/// // A request of the user with session id `sid`, on any instance that shares the directory:
/// let store = stores.for_user("sid-4f1c");
/// if let Some(tokens) = store.load().await? {
///     let user = app.with_auth(Auth::user(flow.clone(), tokens).store(store))?;
///     # let _ = user;
/// }
/// # Ok(()) }
/// ```
pub trait KeyedTokenStore: Send + Sync + 'static {
    /// The store of the user known as `user_key`; stores for the same key share what they keep.
    fn for_user(&self, user_key: &str) -> Arc<dyn TokenStore>;
}

impl<T: KeyedTokenStore + ?Sized> KeyedTokenStore for Arc<T> {
    fn for_user(&self, user_key: &str) -> Arc<dyn TokenStore> {
        (**self).for_user(user_key)
    }
}

/// Keeps the tokens in memory, for tests and for processes that sign in on every start.
///
/// Clones share the stored set.
///
/// ```
/// # async fn run() -> Result<(), business_records::auth::TokenStoreError> {
/// use business_records::auth::{MemoryTokenStore, TokenSet, TokenStore};
/// let store = MemoryTokenStore::new();
/// store.save(&TokenSet::new("t")).await?;
/// assert_eq!(store.saves(), 1);
/// assert!(store.load().await?.is_some());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct MemoryTokenStore {
    /// The entry `key` of `users`: a store of its own, or one user's of a [`MemoryKeyedStore`].
    users: MemoryKeyedStore,
    key: String,
    saves: Arc<AtomicUsize>,
}

impl MemoryTokenStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The stored set, without waiting.
    pub fn get(&self) -> Option<TokenSet> {
        self.users.get(&self.key)
    }

    /// How many times [`save`](TokenStore::save) was called.
    pub fn saves(&self) -> usize {
        self.saves.load(Ordering::SeqCst)
    }
}

impl TokenStore for MemoryTokenStore {
    fn load(&self) -> StoreFuture<'_, Option<TokenSet>> {
        Box::pin(async move { Ok(self.get()) })
    }

    fn save<'a>(&'a self, tokens: &'a TokenSet) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.users.users().insert(self.key.clone(), tokens.clone());
            self.saves.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
    }

    fn clear(&self) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            self.users.users().remove(&self.key);
            Ok(())
        })
    }
}

/// Every user's tokens in this process's memory, for tests and for apps that sign users in
/// again after a restart. Clones share the users.
///
/// An entry is made only when a set is saved, and removed when the user's store is cleared
/// (sign-out): looking up a key nobody saved under (a session cookie the app never issued)
/// keeps nothing, however many such lookups arrive.
///
/// ```
/// # async fn run() -> Result<(), business_records::auth::TokenStoreError> {
/// use business_records::auth::{KeyedTokenStore, MemoryKeyedStore, TokenSet, TokenStore};
/// let stores = MemoryKeyedStore::new();
/// assert!(stores.for_user("bob").load().await?.is_none());
/// stores.for_user("alice").save(&TokenSet::new("t")).await?;
/// assert!(stores.get("alice").is_some() && stores.get("bob").is_none());
/// assert_eq!(stores.len(), 1);
/// # Ok(()) }
/// ```
#[derive(Clone, Default)]
pub struct MemoryKeyedStore {
    users: Arc<Mutex<HashMap<String, TokenSet>>>,
}

impl fmt::Debug for MemoryKeyedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryKeyedStore").field("users", &self.len()).finish()
    }
}

impl MemoryKeyedStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn users(&self) -> MutexGuard<'_, HashMap<String, TokenSet>> {
        self.users.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The set stored for `user_key`, without waiting.
    pub fn get(&self, user_key: &str) -> Option<TokenSet> {
        self.users().get(user_key).cloned()
    }

    /// How many users have a stored set.
    pub fn len(&self) -> usize {
        self.users().len()
    }

    /// True when no user has a stored set.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl KeyedTokenStore for MemoryKeyedStore {
    fn for_user(&self, user_key: &str) -> Arc<dyn TokenStore> {
        Arc::new(MemoryTokenStore { users: self.clone(), key: user_key.to_owned(), saves: Arc::default() })
    }
}

#[cfg(test)]
mod tests;
