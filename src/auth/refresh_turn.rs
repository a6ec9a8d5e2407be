//! The hook a [`TokenStore`](super::TokenStore) shared by several processes uses to keep a
//! user's refresh single flight across all of them.

use std::fmt;
use std::ops::ControlFlow;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::time::Instant;

use super::{TokenSet, TokenStoreError};
use crate::bounds::later;
use crate::retry::backoff;

/// The first and the longest pause of a process waiting for another's refresh lock.
const LOCK_POLL: (Duration, Duration) = (Duration::from_millis(10), Duration::from_millis(100));

/// Takes a lock another process may hold (the file stores' and Redis's): `try_lock` once, then
/// again after each of the crate's backoff pauses, until it breaks (with the lock, or `None`
/// when it failed) or `wait` has passed (`None`, with a warning).
pub(crate) async fn wait_for_lock<T, F>(wait: Duration, mut try_lock: impl FnMut() -> F) -> Option<T>
where
    F: Future<Output = ControlFlow<Option<T>>>,
{
    let deadline = later(Instant::now(), wait);
    let mut pauses = backoff(LOCK_POLL.0, LOCK_POLL.1);
    loop {
        if let ControlFlow::Break(lock) = try_lock().await {
            return lock;
        }
        if Instant::now() >= deadline {
            tracing::warn!(?wait, "another process held the refresh lock too long; refreshing without it");
            return None;
        }
        tokio::time::sleep(pauses.next().unwrap_or(LOCK_POLL.1)).await;
    }
}

/// The turn of a store shared by processes: a set another process saved since (what `read`
/// finds, `None` for anything else) that still works needs no lock, its holder may be long
/// gone; otherwise the turn holds the lock `lock` takes (without it, the refresh goes on as a
/// single process's would) and what `read` finds under it.
pub(crate) async fn shared_turn<R>(
    lock: impl Future<Output = Option<RefreshLock>>,
    read: impl Fn() -> R,
) -> RefreshTurn
where
    R: Future<Output = Result<Option<TokenSet>, TokenStoreError>>,
{
    if let Ok(Some(newer)) = read().await
        && !newer.is_expired()
    {
        return RefreshTurn::proceed().with_newer(newer);
    }
    let Some(lock) = lock.await else { return RefreshTurn::proceed() };
    let newer = read().await.unwrap_or_else(|error| {
        tracing::debug!(error = %error, "the stored tokens are unreadable; refreshing with the current ones");
        None
    });
    RefreshTurn { newer, lock: Some(lock) }
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
