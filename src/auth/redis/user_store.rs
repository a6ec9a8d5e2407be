//! A user's token set in Redis, with a refresh lock across processes.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use std::ops::ControlFlow;

use futures::future::BoxFuture;

use super::connection::Redis;
use crate::auth::refresh_turn::wait_for_lock;
use crate::auth::seal::{Sealer, random_bytes};
use crate::auth::{RefreshLock, RefreshTurn, TokenSet, TokenStore, TokenStoreError};

/// A stored set and its generation, which grows with every save: stored as
/// `<generation>:<sealed set>`.
struct Stored {
    generation: u64,
    tokens: TokenSet,
}

/// Splits `<generation>:<rest>`.
fn split_generation(value: &[u8]) -> Option<(u64, &[u8])> {
    let colon = value.iter().take(21).position(|&b| b == b':')?;
    let generation = std::str::from_utf8(&value[..colon]).ok()?.parse().ok()?;
    Some((generation, &value[colon + 1..]))
}

/// A [`TokenStore`] in Redis for one user, shared by every process; made by
/// [`RedisTokenCache::user_store`](super::RedisTokenCache::user_store).
///
/// Before a refresh, the client takes this store's lock (`SET NX PX`, released by
/// compare-and-delete, or by expiry if the holder dies) and reads the stored set: if another
/// process refreshed meanwhile, the client takes that set instead of presenting a refresh token
/// the server already retired. So a rotating refresh token is presented once across the fleet.
///
/// Each save carries a generation one above the stored one, and never replaces a set saved
/// after the one this store last read (a save retried after an outage loses to a newer set); a
/// store that has read nothing yet (right after a sign-in) replaces whatever is there.
///
/// The set is sealed with AES-256-GCM under a key derived from the cache's
/// [`user_secret`](super::RedisTokenCache::user_secret); the Redis key is a hash of the user
/// key. When Redis is unavailable, `load` and `save` fail (the client keeps a renewed set in
/// memory and saves it again in the background), and a refresh goes on without the lock, so
/// that requests keep working.
#[derive(Clone)]
pub struct RedisUserStore {
    pub(crate) redis: Arc<Redis>,
    pub(crate) sealer: Result<Arc<Sealer>, TokenStoreError>,
    pub(crate) key: String,
    pub(crate) lock_ttl: Duration,
    /// The highest generation this store has read or written.
    pub(crate) seen: Arc<AtomicU64>,
}

impl fmt::Debug for RedisUserStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisUserStore").field("key", &self.key).finish_non_exhaustive()
    }
}

impl RedisUserStore {
    fn sealer(&self) -> Result<&Sealer, TokenStoreError> {
        self.sealer.as_deref().map_err(Clone::clone)
    }

    /// The stored generation and set; `Ok(None)` without one, `Err` when Redis failed.
    async fn read(&self) -> Result<Option<Stored>, TokenStoreError> {
        let sealer = self.sealer()?;
        let Some(sealed) = self.redis.get(&self.key).await else {
            return Err(TokenStoreError::new("redis is unavailable"));
        };
        let Some(value) = sealed else { return Ok(None) };
        let stored = split_generation(&value)
            .and_then(|(generation, sealed)| {
                let json = sealer.open(&self.key, sealed)?;
                Some(Stored { generation, tokens: serde_json::from_slice(&json).ok()? })
            })
            .ok_or_else(|| {
                TokenStoreError::new("the stored tokens cannot be opened with this user secret")
            })?;
        self.seen.fetch_max(stored.generation, Ordering::SeqCst);
        Ok(Some(stored))
    }

    /// Takes the refresh lock (`SET NX PX`, released by compare-and-delete of this holder's
    /// random id, or by expiry), waiting (bounded) while another process holds it. `None` when
    /// Redis failed or the holder outlived the wait.
    async fn lock(&self) -> Option<RefreshLock> {
        let key = format!("{}:lock", self.key);
        let id = random_bytes::<16>()?;
        let wait = self.lock_ttl.saturating_add(Duration::from_secs(1));
        let try_lock = || async {
            match self.redis.set_if_absent(&key, &id, self.lock_ttl).await {
                Some(true) => ControlFlow::Break(Some(())),
                Some(false) => ControlFlow::Continue(()),
                None => ControlFlow::Break(None),
            }
        };
        wait_for_lock(wait, try_lock).await?;
        let redis = Arc::clone(&self.redis);
        Some(RefreshLock::new(async move {
            redis.compare_and_delete(&key, &id).await;
        }))
    }
}

impl TokenStore for RedisUserStore {
    fn load(&self) -> BoxFuture<'_, Result<Option<TokenSet>, TokenStoreError>> {
        Box::pin(async move { Ok(self.read().await?.map(|stored| stored.tokens)) })
    }

    fn save<'a>(&'a self, tokens: &'a TokenSet) -> BoxFuture<'a, Result<(), TokenStoreError>> {
        Box::pin(async move {
            let sealer = self.sealer()?;
            let json = serde_json::to_vec(tokens)
                .map_err(|e| TokenStoreError::with_source("the tokens could not be encoded", e))?;
            let sealed = sealer
                .seal(&self.key, &json)
                .ok_or_else(|| TokenStoreError::new("the tokens could not be sealed"))?;
            // Never over a set saved after the one this store last saw (a save retried late);
            // unavailable: the client keeps the new set in memory and saves it again later.
            let seen = self.seen.load(Ordering::SeqCst);
            match self.redis.save_unless_newer(&self.key, seen, &sealed).await {
                Some(Some(generation)) => {
                    self.seen.fetch_max(generation, Ordering::SeqCst);
                    Ok(())
                }
                Some(None) => {
                    tracing::debug!("a newer token set is stored; this one is not saved over it");
                    Ok(())
                }
                None => Err(TokenStoreError::new("redis is unavailable")),
            }
        })
    }

    /// Deletes the user's set from Redis (sign-out).
    fn clear(&self) -> BoxFuture<'_, Result<(), TokenStoreError>> {
        Box::pin(async move {
            self.redis
                .query::<i64>("delete", redis::cmd("DEL").arg(&self.key))
                .await
                .map(|_| ())
                .ok_or_else(|| TokenStoreError::new("redis is unavailable"))
        })
    }

    fn begin_refresh<'a>(
        &'a self,
        current: &'a TokenSet,
    ) -> BoxFuture<'a, Result<RefreshTurn, TokenStoreError>> {
        Box::pin(async move {
            self.sealer()?;
            let seen = self.seen.load(Ordering::SeqCst);
            // Saved by another process since this one last looked.
            let newer = |stored: Stored| {
                (stored.generation > seen && stored.tokens.access_token != current.access_token)
                    .then_some(stored.tokens)
            };
            // A newer set that still works needs no lock (its holder may be long gone).
            if let Ok(Some(tokens)) = self.read().await.map(|stored| stored.and_then(newer))
                && !tokens.is_expired()
            {
                return Ok(RefreshTurn::proceed().with_newer(tokens));
            }
            let Some(lock) = self.lock().await else {
                return Ok(RefreshTurn::proceed());
            };
            let turn = RefreshTurn::locked(lock);
            Ok(match self.read().await {
                Ok(stored) => match stored.and_then(newer) {
                    Some(tokens) => turn.with_newer(tokens),
                    None => turn,
                },
                Err(err) => {
                    tracing::debug!(error = %err, "stored tokens unreadable; refreshing with the current ones");
                    turn
                }
            })
        })
    }
}
