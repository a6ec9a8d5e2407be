//! One request budget for a fleet of processes, kept in Redis: a GCRA schedule every process
//! takes its requests' slots from, atomically (a Lua script, on Redis's own clock), a pause a
//! 429 publishes to all of them, and a count of the processes that used the budget lately.
//! While Redis is out of reach, each process paces itself at its share of the rate.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use redis::Script;
use tokio::time::Instant;

use super::{Answer, Redis, Store, key_name};
use crate::bounds::{duration_from_secs, later};

/// How long a process counts as one of the fleet after its last request, in microseconds.
const ACTIVE_WINDOW_US: u64 = 10_000_000;
/// How long a process paces itself before asking an unreachable Redis again.
const PROBE_INTERVAL: Duration = Duration::from_secs(1);

/// `KEYS` are the schedule (GCRA's theoretical arrival time), the fleet's pause (a key that
/// lives as long as the pause) and the processes seen lately; `ARGV` the interval between two
/// requests and the burst tolerance (microseconds), the caller's id, the active window, and a
/// pause to publish (milliseconds; 0 to ask for a slot). Takes the slot due now and answers
/// `{0, 0, processes}`, or takes none and answers `{wait, 1, processes}` while the fleet is
/// paused, `{wait, 0, processes}` until the next slot (microseconds). Times come from Redis's
/// `TIME`, so the processes' clocks need not agree.
const SCRIPT: &str = r"
if redis.replicate_commands then redis.replicate_commands() end
local pause = redis.call('PTTL', KEYS[2])
if tonumber(ARGV[5]) > 0 then
    if tonumber(ARGV[5]) > pause then redis.call('SET', KEYS[2], 1, 'PX', ARGV[5]) end
    return {0, 0, 0}
end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
redis.call('ZADD', KEYS[3], now, ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - ARGV[4])
redis.call('PEXPIRE', KEYS[3], math.floor(ARGV[4] / 1000))
local processes = redis.call('ZCARD', KEYS[3])
if pause > 0 then
    return {pause * 1000, 1, processes}
end
local tat = math.max(tonumber(redis.call('GET', KEYS[1]) or '0') or 0, now)
if tat - ARGV[2] > now then
    return {tat - ARGV[2] - now, 0, processes}
end
redis.call('SET', KEYS[1], string.format('%.0f', tat + ARGV[1]), 'PX', math.floor((tat + ARGV[1] - now) / 1000) + 1000)
return {0, 0, processes}
";

/// The fleet's budget of one API and client id.
#[derive(Debug)]
pub(crate) struct SharedBudget {
    redis: Arc<Redis>,
    script: Script,
    /// The schedule, the pause and the processes, under one hashed name.
    keys: [String; 3],
    /// This client's id among the processes.
    member: String,
    /// The processes sharing the budget, when set.
    processes: Option<u32>,
    /// The processes that used the budget lately, as Redis last said, and until when Redis is
    /// taken for out of reach.
    status: Mutex<(u32, Option<Instant>)>,
}

impl SharedBudget {
    /// The budget in `store` for the API at `api` and `client_id`, shared by `processes` when
    /// set.
    pub(crate) fn new(store: &Store, processes: Option<u32>, api: &str, client_id: &str) -> Self {
        let base = key_name(&store.prefix, "rate-limit", &[], &[api, client_id]);
        SharedBudget {
            redis: Arc::clone(&store.redis),
            script: Script::new(SCRIPT),
            keys: ["schedule", "pause", "processes"].map(|key| format!("{base}:{key}")),
            member: format!("{:032x}", fastrand::u128(..)),
            processes,
            status: Mutex::new((1, None)),
        }
    }

    /// Takes the slot due now at `rate` requests a second with `burst` at once, if there is one.
    /// Redis is asked again [`PROBE_INTERVAL`] after it failed to answer, not before.
    pub(crate) async fn take(&self, rate: f64, burst: f64) -> Answer {
        let down = self.status().1.is_some_and(|until| Instant::now() < until);
        let interval = u64::try_from(duration_from_secs(1.0 / rate).as_micros()).unwrap_or(u64::MAX).max(1);
        // `as` saturates: the tolerance of a burst of billions is a long time, no more.
        let tolerance = interval.saturating_mul((burst - 1.0) as u64);
        let reply = if down { None } else { self.call(interval, tolerance, 0).await };
        let mut status = self.status();
        let Some([wait, paused, processes]) = reply else {
            let share = self.processes.unwrap_or(status.0);
            if !down {
                status.1 = Some(later(Instant::now(), PROBE_INTERVAL));
                self.redis.rate_limited(|| {
                    tracing::warn!(
                        rate = rate / f64::from(share),
                        processes = share,
                        "the shared rate limit is out of reach; this process paces itself at its share of the rate until it is back"
                    );
                });
            }
            return Answer::Down { processes: share };
        };
        if status.1.take().is_some() {
            tracing::info!("the shared rate limit answers again; the fleet shares one budget again");
        }
        status.0 = u32::try_from(processes).unwrap_or(u32::MAX).max(1);
        let wait = Duration::from_micros(u64::try_from(wait).unwrap_or(0));
        Answer::Wait { wait, paused: paused == 1 }
    }

    /// Tells every process to pause for `pause`, without holding up this request.
    pub(crate) fn pause(self: &Arc<Self>, pause: Duration) {
        let (budget, millis) =
            (Arc::clone(self), u64::try_from(pause.as_millis()).unwrap_or(u64::MAX).max(1));
        // Best effort: without Redis, this process pauses alone.
        tokio::spawn(async move { budget.call(0, 0, millis).await });
    }

    async fn call(&self, interval: u64, tolerance: u64, pause: u64) -> Option<[i64; 3]> {
        let mut invocation = self.script.prepare_invoke();
        invocation.key(&self.keys[0]).key(&self.keys[1]).key(&self.keys[2]);
        invocation.arg(interval).arg(tolerance).arg(&self.member).arg(ACTIVE_WINDOW_US).arg(pause);
        let reply: Vec<i64> = self.redis.invoke_quietly(&invocation).await?;
        reply.try_into().ok()
    }

    fn status(&self) -> MutexGuard<'_, (u32, Option<Instant>)> {
        self.status.lock().unwrap_or_else(|e| e.into_inner())
    }
}
