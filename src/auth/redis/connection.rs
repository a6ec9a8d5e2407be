//! The one door to Redis: every command under a short timeout, and a failure turned into "use
//! the in-process path" with a rate-limited warning.

use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{FromRedisValue, Script};
use tokio::time::Instant;

/// At most one warning about Redis per this interval.
const WARNING_INTERVAL: Duration = Duration::from_secs(30);

/// Deletes `KEYS[1]` only if it still holds `ARGV[1]`: for shared tokens (the exact sealed
/// value a process read) and for locks (the holder's random id).
const COMPARE_AND_DELETE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
";

/// Stores `ARGV[2]` under `KEYS[1]` as `<generation>:<value>`, the generation one above the
/// stored one, unless the stored generation is above `ARGV[1]` (the one the writer last saw;
/// 0 when it saw none). Returns the new generation, or -1 when a newer value is stored.
const SAVE_UNLESS_NEWER: &str = r"
local current = redis.call('GET', KEYS[1])
local stored = 0
if current then
    stored = tonumber(string.match(current, '^(%d+):')) or 0
end
local seen = tonumber(ARGV[1])
if seen > 0 and stored > seen then
    return -1
end
local generation = stored + 1
redis.call('SET', KEYS[1], generation .. ':' .. ARGV[2])
return generation
";

/// A connection that reconnects by itself, with the cache's timeout on every command.
pub(crate) struct Redis {
    manager: ConnectionManager,
    compare_and_delete: Script,
    save_unless_newer: Script,
    timeout: Duration,
    last_warning: Mutex<Option<Instant>>,
    unavailable: AtomicBool,
}

impl fmt::Debug for Redis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redis").field("timeout", &self.timeout).finish_non_exhaustive()
    }
}

impl Redis {
    /// A connection made on first use; `url` is checked now.
    pub(crate) fn open(url: &str, timeout: Duration) -> Result<Self, redis::RedisError> {
        let client = redis::Client::open(url)?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(10))
            .set_max_delay(Duration::from_millis(200));
        let manager = ConnectionManager::new_lazy_with_config(client, config)?;
        Ok(Redis {
            manager,
            compare_and_delete: Script::new(COMPARE_AND_DELETE),
            save_unless_newer: Script::new(SAVE_UNLESS_NEWER),
            timeout,
            last_warning: Mutex::new(None),
            unavailable: AtomicBool::new(false),
        })
    }

    /// Runs `cmd`; `None` when Redis failed or did not answer in time (already reported).
    pub(crate) async fn query<T: FromRedisValue>(&self, what: &'static str, cmd: &redis::Cmd) -> Option<T> {
        let mut conn = self.manager.clone();
        let outcome = tokio::time::timeout(self.timeout, cmd.query_async::<T>(&mut conn)).await;
        self.settle(what, outcome)
    }

    /// Deletes `key` if it still holds `expected`. `Some(true)` when it did.
    pub(crate) async fn compare_and_delete(&self, key: &str, expected: &[u8]) -> Option<bool> {
        let mut conn = self.manager.clone();
        let mut invocation = self.compare_and_delete.key(key);
        let invocation = invocation.arg(expected).invoke_async::<i64>(&mut conn);
        let outcome = tokio::time::timeout(self.timeout, invocation).await;
        self.settle("compare-and-delete", outcome).map(|deleted| deleted == 1)
    }

    /// Stores `value` under `key` with the next generation, unless a generation above `seen`
    /// is stored. `Some(Some(generation))` when stored, `Some(None)` when a newer one is there.
    pub(crate) async fn save_unless_newer(&self, key: &str, seen: u64, value: &[u8]) -> Option<Option<u64>> {
        let mut conn = self.manager.clone();
        let mut invocation = self.save_unless_newer.key(key);
        let invocation = invocation.arg(seen).arg(value).invoke_async::<i64>(&mut conn);
        let outcome = tokio::time::timeout(self.timeout, invocation).await;
        self.settle("save", outcome).map(|generation| u64::try_from(generation).ok())
    }

    /// Runs a script without reporting a failure: the caller says what an unanswered command
    /// means, and warns its own way. `None` when Redis failed or did not answer in time.
    pub(crate) async fn invoke_quietly<T: FromRedisValue>(
        &self,
        invocation: &redis::ScriptInvocation<'_>,
    ) -> Option<T> {
        let mut conn = self.manager.clone();
        match tokio::time::timeout(self.timeout, invocation.invoke_async::<T>(&mut conn)).await {
            Ok(Ok(value)) => Some(value),
            Ok(Err(err)) => {
                tracing::debug!(error = %err, "redis script failed");
                None
            }
            Err(_) => None,
        }
    }

    /// `SET key value NX PX ttl`: `Some(true)` when this call set it.
    pub(crate) async fn set_if_absent(&self, key: &str, value: &[u8], ttl: Duration) -> Option<bool> {
        let mut cmd = redis::cmd("SET");
        cmd.arg(key).arg(value).arg("NX").arg("PX").arg(millis(ttl));
        self.query::<Option<String>>("lock", &cmd).await.map(|set| set.is_some())
    }

    /// `SET key value [PX ttl]`.
    pub(crate) async fn set(&self, key: &str, value: &[u8], ttl: Option<Duration>) -> Option<()> {
        let mut cmd = redis::cmd("SET");
        cmd.arg(key).arg(value);
        if let Some(ttl) = ttl {
            cmd.arg("PX").arg(millis(ttl));
        }
        self.query::<()>("write", &cmd).await
    }

    /// `GET key`: `Some(None)` when there is no such key.
    pub(crate) async fn get(&self, key: &str) -> Option<Option<Vec<u8>>> {
        self.query("read", redis::cmd("GET").arg(key)).await
    }

    fn settle<T>(
        &self,
        what: &'static str,
        outcome: Result<redis::RedisResult<T>, tokio::time::error::Elapsed>,
    ) -> Option<T> {
        let failure = match outcome {
            Ok(Ok(value)) => {
                if self.unavailable.swap(false, Ordering::Relaxed) {
                    tracing::info!("redis answers again; tokens are shared again");
                }
                return Some(value);
            }
            Ok(Err(err)) => err.to_string(),
            Err(_) => format!("no answer within {} ms", self.timeout.as_millis()),
        };
        self.unavailable.store(true, Ordering::Relaxed);
        self.warn(what, &failure);
        None
    }

    /// Logs a warning unless one was logged within [`WARNING_INTERVAL`].
    pub(crate) fn warn(&self, what: &'static str, failure: &str) {
        self.rate_limited(|| {
            tracing::warn!(
                operation = what,
                error = failure,
                "redis token cache unavailable; this process uses its own tokens until it is back"
            );
        });
    }

    /// Runs `warn` unless a warning about this Redis was logged within [`WARNING_INTERVAL`]:
    /// the crate's one limit on warnings about Redis, the shared rate limit's included.
    pub(crate) fn rate_limited(&self, warn: impl FnOnce()) {
        let now = Instant::now();
        let mut last = self.last_warning.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_none_or(|at| now.duration_since(at) >= WARNING_INTERVAL) {
            *last = Some(now);
            warn();
        }
    }
}

/// Whole milliseconds, at least one (`PX 0` is an error).
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX).max(1)
}
