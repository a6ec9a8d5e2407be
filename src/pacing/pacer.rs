//! The budget every request of a client waits for: in order of arrival, through pauses, at the
//! limiter's rate or at the fleet's (over Redis), and at this process's share of the fleet's
//! rate while Redis is out of reach.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use http::HeaderMap;
use tokio::time::Instant;

use super::hints::Hints;
use super::limiter::Limiter;
use super::{RateLimit, Setting};
use crate::Error;
use crate::bounds::{MAX_SERVER_WAIT, duration_from_secs, later};
use crate::error::{ApiError, ErrorCode};

/// A client's budget. Every client derived from one shares its pacer.
#[derive(Debug)]
pub(crate) struct Pacer {
    inner: Option<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Time zero of the limiter's clock.
    origin: Instant,
    /// The longest pause the client keeps: its retry policy's `max_delay`.
    longest_wait: Duration,
    /// Waiting requests, served in order of arrival (Tokio's mutex is fair).
    queue: tokio::sync::Mutex<()>,
    state: Mutex<Limiter>,
    /// The API's path, for the error of a request refused during a pause nobody explained.
    api_path: String,
    #[cfg(feature = "redis")]
    fleet: Option<fleet::Link>,
}

/// What the request at the head of the queue does next.
enum Step {
    Go,
    WaitUntil(f64),
    #[cfg(feature = "redis")]
    AskFleet(f64, u32),
}

impl Pacer {
    /// The budget `limit` sets for a client of the API at `api_root` (its versioned root URL)
    /// whose client id is `client_id` (empty when the client has none, as with a static token),
    /// and whose longest wait is `longest_wait` (its retry policy's `max_delay`): no pause lasts
    /// longer, whatever the server asks.
    ///
    /// # Errors
    ///
    /// The first invalid argument given to `limit`.
    pub(crate) fn new(
        limit: &RateLimit,
        api_root: &url::Url,
        client_id: &str,
        longest_wait: Duration,
    ) -> Result<Pacer, Error> {
        if let Some(error) = &limit.error {
            return Err(error.clone());
        }
        #[cfg(not(feature = "redis"))]
        let _ = client_id;
        let limiter = match limit.setting {
            Setting::Off => return Ok(Pacer { inner: None }),
            Setting::Adaptive => Limiter::new(f64::INFINITY, 1),
            Setting::Fixed { per_second, burst } => Limiter::new(per_second, burst),
        };
        Ok(Pacer {
            inner: Some(Inner {
                origin: Instant::now(),
                longest_wait,
                queue: tokio::sync::Mutex::new(()),
                state: Mutex::new(limiter),
                api_path: api_root.path().to_owned(),
                #[cfg(feature = "redis")]
                fleet: fleet::Link::new(limit, api_root, client_id),
            }),
        })
    }

    /// False for [`RateLimit::none`]: requests then go at once and retry on their own.
    /// A pacer that never holds a request: for the authorization server's requests.
    pub(crate) fn off() -> Pacer {
        Pacer { inner: None }
    }

    pub(crate) fn is_active(&self) -> bool {
        self.inner.is_some()
    }

    /// Waits until a request may be sent, and takes its slot; the time waited.
    ///
    /// # Errors
    ///
    /// The 429 behind a pause that ends later than `patience` from now (with its remaining
    /// time as `retry_after`), or with `time_left` (a request sent again after a failure), a
    /// wait in all longer than that: the request is not sent.
    pub(crate) async fn admit(
        &self,
        patience: Duration,
        time_left: Option<Duration>,
    ) -> Result<Duration, Error> {
        let Some(inner) = &self.inner else { return Ok(Duration::ZERO) };
        let started = Instant::now();
        let _turn = inner.queue.lock().await;
        // A slot of the fleet's budget taken, waiting only for a pause that began meanwhile.
        #[cfg_attr(not(feature = "redis"), allow(unused_mut))]
        let mut reserved = false;
        loop {
            let now = inner.now();
            let step = {
                let mut state = inner.state();
                if let Some(refusal) = inner.refusal(&state, now, patience) {
                    return Err(refusal);
                }
                inner.step(&mut state, now, reserved)
            };
            if let Step::WaitUntil(at) = step {
                let left = duration_from_secs(at - now);
                if time_left.is_some_and(|budget| started.elapsed().saturating_add(left) > budget) {
                    return Err(inner.too_long(now, left));
                }
            }
            match step {
                Step::Go => return Ok(started.elapsed()),
                Step::WaitUntil(at) => tokio::time::sleep_until(inner.instant(at)).await,
                #[cfg(feature = "redis")]
                Step::AskFleet(rate, burst) => {
                    let Some(link) = &inner.fleet else { continue };
                    match link.reserve(rate, burst, patience, inner.now()).await {
                        Ok(wait)
                            if time_left
                                .is_some_and(|budget| started.elapsed().saturating_add(wait) > budget) =>
                        {
                            return Err(inner.too_long(inner.now(), wait));
                        }
                        Ok(wait) => {
                            reserved = true;
                            tokio::time::sleep(wait).await;
                        }
                        Err(Some(remaining)) => return Err(inner.paused_error(None, remaining)),
                        Err(None) => link.fall_back(&mut inner.state(), inner.now()),
                    }
                }
            }
        }
    }

    /// Reads what a response sent at `sent_at` says: the server's advertised policy, a quota
    /// used up, or (for a success) a reason to speed up again.
    pub(crate) fn response(&self, sent_at: Instant, status: u16, headers: &HeaderMap) {
        let Some(inner) = &self.inner else { return };
        let hints = Hints::read(headers);
        let (now, sent) = (inner.now(), inner.at(sent_at));
        let mut state = inner.state();
        if let Some(rate) = hints.policy_rate {
            state.advertise(rate, now);
        }
        // With a policy the client already paces at its rate (a quota at zero is how a budget
        // used in full looks); without one, a spent quota waits for its reset.
        if hints.exhausted() && state.advertised().is_none() {
            if let Some(reset) = hints.reset.filter(|reset| !reset.is_zero()) {
                state.pause_until(now + reset.min(inner.longest_wait).as_secs_f64(), None);
            }
            state.throttled(now, sent);
        } else if (200..300).contains(&status) {
            state.succeeded(now);
        }
    }

    /// A request sent at `sent_at` was refused with `error` (a 429): the whole client pauses
    /// for its `Retry-After` (and with a shared budget, the whole fleet), and slows down. The
    /// pause lasts no longer than the client's longest wait, or `request_wait` (the `max_delay`
    /// of the request's own policy) when that is longer, and never more than a day: past it,
    /// requests are sent again.
    pub(crate) fn throttled(&self, sent_at: Instant, error: &Error, request_wait: Duration) {
        let Some(inner) = &self.inner else { return };
        let (now, sent) = (inner.now(), inner.at(sent_at));
        let mut state = inner.state();
        let longest = inner.longest_wait.max(request_wait).min(MAX_SERVER_WAIT);
        let pause = error.retry_after().map(|wait| wait.min(longest));
        if let Some(wait) = pause {
            state.pause_until(now + wait.as_secs_f64(), Some(error.clone()));
            tracing::debug!(retry_after_ms = wait.as_millis() as u64, "429: the client pauses");
        }
        #[cfg(feature = "redis")]
        if let Some(link) = inner.fleet.as_ref().filter(|link| link.usable(now)) {
            if let Some(wait) = pause {
                link.publish_pause(wait);
            }
            return;
        }
        state.throttled(now, sent);
    }

    /// The rate the client paces at now (requests a second), `None` when nothing limits it.
    #[cfg(test)]
    pub(crate) fn current_rate(&self) -> Option<f64> {
        self.inner.as_ref().and_then(|inner| inner.state().rate())
    }
}

impl Inner {
    /// What the request at the head of the queue does next.
    // Without the `redis` feature there is no fleet's budget to read from `self`.
    #[cfg_attr(not(feature = "redis"), expect(clippy::unused_self))]
    fn step(&self, state: &mut Limiter, now: f64, reserved: bool) -> Step {
        if let Some(pause) = state.pause(now) {
            return Step::WaitUntil(pause.until);
        }
        if reserved {
            state.record_send(now);
            return Step::Go;
        }
        #[cfg(feature = "redis")]
        if let Some(link) = self.fleet.as_ref().filter(|link| link.usable(now)) {
            return Step::AskFleet(link.rate(state), link.burst());
        }
        let slot = state.next_slot(now);
        if slot <= now {
            state.take(now);
            Step::Go
        } else {
            Step::WaitUntil(slot)
        }
    }

    fn state(&self) -> MutexGuard<'_, Limiter> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn now(&self) -> f64 {
        self.at(Instant::now())
    }

    fn at(&self, instant: Instant) -> f64 {
        instant.saturating_duration_since(self.origin).as_secs_f64()
    }

    fn instant(&self, at: f64) -> Instant {
        later(self.origin, duration_from_secs(at))
    }

    /// The error for a request that will not wait for the pause in force.
    fn refusal(&self, state: &Limiter, now: f64, patience: Duration) -> Option<Error> {
        let pause = state.pause(now)?;
        let remaining = duration_from_secs(pause.until - now);
        (remaining > patience).then(|| self.paused_error(pause.cause.as_ref(), remaining))
    }

    /// The error of a request that would wait `left` more than it may: the 429 behind the pause
    /// in force, or one standing for the budget.
    fn too_long(&self, now: f64, left: Duration) -> Error {
        match self.state().pause(now).and_then(|pause| pause.cause.clone()) {
            Some(cause) => self.paused_error(Some(&cause), left),
            None => self.standing_error(
                left,
                "the client's rate limit would hold the request past its retry policy's time",
            ),
        }
    }

    /// The 429 behind a pause (or one standing for it), with what is left of the pause.
    fn paused_error(&self, cause: Option<&Error>, remaining: Duration) -> Error {
        match cause {
            Some(Error::Api(response)) => Error::Api(response.clone().with_retry_after(Some(remaining))),
            _ => self.standing_error(remaining, "the client is paused by an earlier 429"),
        }
    }

    /// A 429 `rate_limited` made here, saying `why`, to come back after `remaining`.
    fn standing_error(&self, remaining: Duration, why: &str) -> Error {
        let response = ApiError::new(429, Some(ErrorCode::RateLimited), &self.api_path)
            .with_description(Some(why.to_owned()))
            .with_retry_after(Some(remaining));
        Error::Api(response)
    }
}

#[cfg(feature = "redis")]
mod fleet {
    //! The link to a fleet's budget, and this process's share while it is out of reach.

    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use super::super::limiter::Limiter;
    use super::super::{FleetBudget, RateLimit, Reservation, Setting};

    /// How long a process paces itself before asking an unreachable budget again.
    const PROBE_INTERVAL: f64 = 1.0;
    /// At most one warning about the shared budget per this many seconds.
    const WARNING_INTERVAL: f64 = 30.0;

    #[derive(Debug)]
    pub(super) struct Link {
        budget: Arc<dyn FleetBudget>,
        rate: f64,
        burst: u32,
        /// The processes sharing the budget, when set.
        processes: Option<u32>,
        status: Mutex<Status>,
    }

    #[derive(Debug, Default)]
    struct Status {
        /// Processes that used the budget lately, as the budget last said.
        seen: Option<u32>,
        /// Out of reach until then.
        down_until: Option<f64>,
        last_warning: Option<f64>,
    }

    impl Link {
        pub(super) fn new(limit: &RateLimit, api_root: &url::Url, client_id: &str) -> Option<Link> {
            let (Some(factory), Setting::Fixed { per_second, burst }) = (&limit.fleet, limit.setting) else {
                return None;
            };
            Some(Link {
                budget: (factory.0)(api_root.as_str(), client_id),
                rate: per_second,
                burst,
                processes: limit.processes,
                status: Mutex::default(),
            })
        }

        fn status(&self) -> std::sync::MutexGuard<'_, Status> {
            self.status.lock().unwrap_or_else(|e| e.into_inner())
        }

        /// True unless the budget failed to answer within the last [`PROBE_INTERVAL`].
        pub(super) fn usable(&self, now: f64) -> bool {
            self.status().down_until.is_none_or(|until| now >= until)
        }

        /// The fleet's rate, within what the server advertises.
        pub(super) fn rate(&self, state: &Limiter) -> f64 {
            state.advertised().map_or(self.rate, |advertised| advertised.min(self.rate))
        }

        pub(super) fn burst(&self) -> u32 {
            self.burst
        }

        /// Reserves a slot: the wait for it, or `Err(Some(remaining))` for a pause beyond
        /// `patience`, or `Err(None)` when the budget did not answer.
        pub(super) async fn reserve(
            &self,
            rate: f64,
            burst: u32,
            patience: Duration,
            now: f64,
        ) -> Result<Duration, Option<Duration>> {
            let reservation = self.budget.reserve(rate, burst, patience).await;
            let mut status = self.status();
            let back = status.down_until.take().is_some();
            match reservation {
                Some(Reservation::Go { wait, processes }) => {
                    status.seen = Some(processes.max(1));
                    if back {
                        tracing::info!(
                            "the shared rate limit answers again; the fleet shares one budget again"
                        );
                    }
                    Ok(wait)
                }
                Some(Reservation::Paused { remaining, processes }) => {
                    status.seen = Some(processes.max(1));
                    Err(Some(remaining))
                }
                None => {
                    status.down_until = Some(now + PROBE_INTERVAL);
                    Err(None)
                }
            }
        }

        /// The budget is out of reach: pace this process at its share of the fleet's rate.
        pub(super) fn fall_back(&self, state: &mut Limiter, now: f64) {
            let mut status = self.status();
            let share = self.processes.or(status.seen).unwrap_or(1).max(1);
            let rate = self.rate / f64::from(share);
            state.set_ceiling(rate);
            if status.last_warning.is_none_or(|at| now - at >= WARNING_INTERVAL) {
                status.last_warning = Some(now);
                tracing::warn!(
                    rate,
                    processes = share,
                    "the shared rate limit is out of reach; this process paces itself at its share of the rate until it is back"
                );
            }
        }

        /// Tells every process to pause for `wait`, without holding up this request.
        pub(super) fn publish_pause(&self, wait: Duration) {
            let budget = Arc::clone(&self.budget);
            tokio::spawn(async move { budget.pause(wait).await });
        }
    }
}

#[cfg(test)]
mod tests;
