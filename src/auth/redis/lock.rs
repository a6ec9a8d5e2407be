//! A short lock across processes: `SET key id NX PX ttl`, released by compare-and-delete of
//! the holder's random id, and by expiry when the holder dies.

use std::sync::Arc;
use std::time::Duration;

use super::connection::Redis;
use crate::auth::seal::random_bytes;

/// The outcome of one attempt to take a lock.
pub(crate) enum Attempt {
    /// This process holds it.
    Held(LockGuard),
    /// Another process holds it.
    Busy,
}

/// A held lock; [`release`](Self::release) it, or it is released on a task of the current
/// runtime when dropped (a cancelled caller), or it expires.
pub(crate) struct LockGuard {
    held: Option<(Arc<Redis>, String, Vec<u8>)>,
}

impl LockGuard {
    /// Deletes the lock if this process still holds it.
    pub(crate) async fn release(mut self) {
        if let Some((redis, key, id)) = self.held.take() {
            redis.compare_and_delete(&key, &id).await;
        }
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if let Some((redis, key, id)) = self.held.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                redis.compare_and_delete(&key, &id).await;
            });
        }
    }
}

/// Tries once to take the lock `key` for `ttl`; `None` when Redis failed.
pub(crate) async fn try_lock(redis: &Arc<Redis>, key: &str, ttl: Duration) -> Option<Attempt> {
    let Some(id) = random_bytes::<16>() else {
        redis.warn("lock", "no random lock id");
        return None;
    };
    let held = redis.set_if_absent(key, &id, ttl).await?;
    Some(if held {
        Attempt::Held(LockGuard { held: Some((Arc::clone(redis), key.to_owned(), id.to_vec())) })
    } else {
        Attempt::Busy
    })
}
