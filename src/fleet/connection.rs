//! The one door to Redis: every command under a short timeout, and a failure turned into "use
//! the in-process path" with a rate-limited warning.

use std::fmt;
use std::sync::Mutex;

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{FromRedisValue, RedisResult, ScriptInvocation};
use tokio::time::Instant;

use crate::error::TokenStoreError;

/// At most one warning about Redis per this interval.
const WARNING_INTERVAL: Duration = Duration::from_secs(30);

/// A connection that reconnects by itself, with the cache's timeout on every command.
pub(crate) struct Redis {
    manager: ConnectionManager,
    timeout: Duration,
    outage: Mutex<Outage>,
}

/// When the last warning about Redis was logged, and whether Redis failed since it last
/// answered.
#[derive(Default)]
struct Outage {
    last_warning: Option<Instant>,
    failing: bool,
}

impl fmt::Debug for Redis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redis").field("timeout", &self.timeout).finish_non_exhaustive()
    }
}

impl Redis {
    /// A connection made on first use; `url` is checked now.
    pub(crate) fn open(url: &str, timeout: Duration) -> RedisResult<Self> {
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(10))
            .set_max_delay(Duration::from_millis(200));
        let manager = ConnectionManager::new_lazy_with_config(redis::Client::open(url)?, config)?;
        Ok(Redis { manager, timeout, outage: Mutex::default() })
    }

    /// Runs `cmd`; an error when Redis failed or did not answer in time (already reported).
    pub(crate) async fn query<T>(&self, what: &'static str, cmd: &redis::Cmd) -> Result<T, TokenStoreError>
    where
        T: FromRedisValue,
    {
        let mut conn = self.manager.clone();
        let answer = self.settle(Some(what), cmd.query_async(&mut conn)).await;
        answer.ok_or_else(|| TokenStoreError::new("redis is unavailable"))
    }

    /// Runs a script; `None` when Redis failed or did not answer in time, which is not reported:
    /// the caller says what an unanswered script means, and warns its own way.
    pub(crate) async fn invoke_quietly<T: FromRedisValue>(&self, script: &ScriptInvocation<'_>) -> Option<T> {
        let mut conn = self.manager.clone();
        self.settle(None, script.invoke_async(&mut conn)).await
    }

    /// Waits for `answer` at most the timeout; a failure of an operation named `what` marks
    /// Redis unavailable, with a warning unless one was logged within [`WARNING_INTERVAL`].
    async fn settle<T, F>(&self, what: Option<&'static str>, answer: F) -> Option<T>
    where
        F: Future<Output = RedisResult<T>>,
    {
        let answer = tokio::time::timeout(self.timeout, answer).await;
        let mut outage = self.outage.lock().unwrap_or_else(|e| e.into_inner());
        let failure = match answer {
            Ok(Ok(value)) => {
                if std::mem::take(&mut outage.failing) {
                    tracing::info!("redis answers again; tokens are shared again");
                }
                return Some(value);
            }
            Ok(Err(err)) => err.to_string(),
            Err(_) => format!("no answer within {} ms", self.timeout.as_millis()),
        };
        let Some(what) = what else {
            tracing::debug!(error = failure, "redis script failed");
            return None;
        };
        outage.failing = true;
        drop(outage);
        self.rate_limited(|| {
            tracing::warn!(
                operation = what,
                error = failure,
                "redis token cache unavailable; this process uses its own tokens until it is back"
            );
        });
        None
    }

    /// Runs `warn` unless a warning about this Redis was logged within [`WARNING_INTERVAL`]:
    /// the crate's one limit on warnings about Redis, the shared rate limit's included.
    pub(crate) fn rate_limited(&self, warn: impl FnOnce()) {
        let now = Instant::now();
        let mut outage = self.outage.lock().unwrap_or_else(|e| e.into_inner());
        if outage.last_warning.is_none_or(|at| now.duration_since(at) >= WARNING_INTERVAL) {
            outage.last_warning = Some(now);
            drop(outage);
            warn();
        }
    }
}
