//! The hook a [`TokenStore`](super::TokenStore) shared by several processes uses to keep a
//! user's refresh single flight across all of them.

use std::fmt;
use std::time::Duration;

use futures::future::BoxFuture;

use super::TokenSet;

/// How long a process waiting for another's refresh lock sleeps between two looks, at least; a
/// random part is added so that waiters do not look in step.
const LOCK_POLL: Duration = Duration::from_millis(10);

/// Waits a little before a waiter looks at a lock again (the file stores' and Redis's).
pub(crate) async fn pause_before_next_look() {
    tokio::time::sleep(LOCK_POLL + Duration::from_millis(fastrand::u64(0..20))).await;
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
