//! One request budget for a fleet of processes, kept in Redis: a GCRA schedule every process
//! reserves its requests on, atomically (a Lua script, on Redis's own clock), a pause a 429
//! publishes to all of them, and a count of the processes that used the budget lately.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use redis::Script;

use super::RedisTokenCache;
use super::connection::Redis;
use crate::Error;
use crate::auth::seal;
use crate::pacing::{FleetBudget, FleetFactory, RateLimit, Reservation};

/// How long a process counts as one of the fleet after its last request, in microseconds.
const ACTIVE_WINDOW_US: u64 = 10_000_000;

/// Reserves the next slot: `KEYS` are the schedule (GCRA's theoretical arrival time), the
/// fleet's pause (when it ends) and the processes seen lately; `ARGV` the interval between two
/// requests, the burst tolerance and the caller's patience (all in microseconds), the caller's
/// id and the active window. Answers `{wait, 0, processes}`, or `{-1, pause left, processes}`
/// without reserving when the pause ends later than the caller would wait. Times come from
/// Redis's `TIME`, so the processes' clocks need not agree.
const RESERVE: &str = r"
if redis.replicate_commands then redis.replicate_commands() end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local window = tonumber(ARGV[5])
redis.call('ZADD', KEYS[3], now, ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - window)
redis.call('PEXPIRE', KEYS[3], math.floor(window / 1000))
local processes = redis.call('ZCARD', KEYS[3])
local pause = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
if pause - now > tonumber(ARGV[3]) then
    return {-1, pause - now, processes}
end
local tat = math.max(tonumber(redis.call('GET', KEYS[1]) or '0') or 0, now)
local at = math.max(tat - tonumber(ARGV[2]), now, pause)
local next_tat = math.max(tat, at) + tonumber(ARGV[1])
redis.call('SET', KEYS[1], string.format('%.0f', next_tat), 'PX', math.floor((next_tat - now) / 1000) + 1000)
return {at - now, 0, processes}
";

/// Pauses the fleet for `ARGV[1]` microseconds from now, unless a longer pause is in force.
const PAUSE: &str = r"
if redis.replicate_commands then redis.replicate_commands() end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local length = tonumber(ARGV[1])
if now + length > (tonumber(redis.call('GET', KEYS[1]) or '0') or 0) then
    redis.call('SET', KEYS[1], string.format('%.0f', now + length), 'PX', math.floor(length / 1000) + 1)
end
return 1
";

/// The budget of one API and client id in Redis.
struct RedisBudget {
    redis: Arc<Redis>,
    reserve: Script,
    pause: Script,
    /// The schedule, the pause and the processes, under one hashed name.
    keys: [String; 3],
    /// This client's id among the processes.
    member: String,
}

impl fmt::Debug for RedisBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisBudget").field("key", &self.keys[0]).finish_non_exhaustive()
    }
}

impl RedisBudget {
    fn new(redis: Arc<Redis>, prefix: &str, api: &str, client_id: &str) -> Self {
        let base = seal::key_name(prefix, "rate-limit", &[], &[api, client_id]);
        let member = seal::random_bytes::<16>()
            .map(|bytes| bytes.iter().map(|b| format!("{b:02x}")).collect())
            .unwrap_or_else(|| format!("process-{}", std::process::id()));
        RedisBudget {
            redis,
            reserve: Script::new(RESERVE),
            pause: Script::new(PAUSE),
            keys: [format!("{base}:schedule"), format!("{base}:pause"), format!("{base}:processes")],
            member,
        }
    }
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

impl FleetBudget for RedisBudget {
    fn reserve(&self, rate: f64, burst: u32, patience: Duration) -> BoxFuture<'_, Option<Reservation>> {
        Box::pin(async move {
            let interval = micros(
                Duration::try_from_secs_f64(1.0 / rate)
                    .unwrap_or(Duration::MAX)
                    .max(Duration::from_micros(1)),
            );
            let tolerance = interval.saturating_mul(u64::from(burst.saturating_sub(1)));
            let mut invocation = self.reserve.prepare_invoke();
            for key in &self.keys {
                invocation.key(key);
            }
            invocation
                .arg(interval)
                .arg(tolerance)
                .arg(micros(patience))
                .arg(&self.member)
                .arg(ACTIVE_WINDOW_US);
            let reply: Vec<i64> = self.redis.invoke_quietly(&invocation).await?;
            let [wait, pause, processes] = reply[..] else { return None };
            let processes = u32::try_from(processes).unwrap_or(u32::MAX);
            let positive = |micros: i64| Duration::from_micros(u64::try_from(micros).unwrap_or(0));
            Some(if wait < 0 {
                Reservation::Paused { remaining: positive(pause), processes }
            } else {
                Reservation::Go { wait: positive(wait), processes }
            })
        })
    }

    fn pause(&self, pause: Duration) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let mut invocation = self.pause.prepare_invoke();
            invocation.key(&self.keys[1]).arg(micros(pause));
            if self.redis.invoke_quietly::<i64>(&invocation).await.is_none() {
                tracing::debug!("the fleet's pause could not be published; this process pauses alone");
            }
        })
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
impl RateLimit {
    /// One budget for every process that uses `cache`'s Redis with the same API (its versioned
    /// URL) and client id (feature `redis`): requests are reserved on one schedule in Redis,
    /// atomically and on Redis's clock, and a 429's `Retry-After` seen by one process pauses
    /// all of them. Needs a rate ([`per_second`](Self::per_second) or
    /// [`per_minute`](Self::per_minute)); the key is a hash, as the cache's other keys are.
    ///
    /// When Redis does not answer within the cache's timeout, or is gone, each process paces
    /// itself at its share of the rate (the rate divided by [`processes`](Self::processes), or
    /// by the number of processes Redis last counted), with a warning at most every 30 seconds,
    /// asks Redis again every second, and shares again once it answers. Within a process,
    /// requests still wait in order of arrival.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), business_records::Error> {
    /// use business_records::auth::RedisTokenCache;
    /// use business_records::{Auth, Client, RateLimit};
    ///
    /// let shared = RedisTokenCache::connect("redis://127.0.0.1:6379").await?;
    /// let client = Client::builder()
    ///     .base_url("https://api.example.com")
    ///     .auth(Auth::client_credentials("https://auth.example.com", "my-client-id", "my-secret")
    ///         .shared_cache(shared.clone()))
    ///     .rate_limit(RateLimit::per_second(20).shared(&shared).processes(8))
    ///     .build()?;
    /// # let _ = client; Ok(()) }
    /// ```
    pub fn shared(mut self, cache: &RedisTokenCache) -> Self {
        if self.rate().is_none() {
            return self.fail(Error::invalid(
                "rate_limit",
                "a shared budget needs a rate: start from `RateLimit::per_second` or `per_minute`",
            ));
        }
        let redis = Arc::clone(&cache.redis);
        let prefix = Arc::clone(&cache.prefix);
        self.fleet = Some(FleetFactory(Arc::new(move |api: &str, client_id: &str| {
            Arc::new(RedisBudget::new(Arc::clone(&redis), &prefix, api, client_id)) as Arc<dyn FleetBudget>
        })));
        self
    }
}
