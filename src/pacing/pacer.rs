//! The budget every request of a client waits for: in order of arrival, through pauses, at the
//! limiter's rate, or with `RateLimit::shared` on the fleet's budget in Redis, and at this
//! process's share of its rate while Redis is out of reach.

#[cfg(feature = "redis")]
use std::sync::Arc;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use http::HeaderMap;
use tokio::time::Instant;
use url::Url;

use super::hints::Hints;
use super::limiter::Limiter;
use super::{RateLimit, Setting};
use crate::Error;
use crate::bounds::{MAX_SERVER_WAIT, duration_from_secs};
use crate::error::{ApiError, ErrorCode};
#[cfg(any(feature = "redis", test))]
use crate::fleet::Answer;
#[cfg(feature = "redis")]
use crate::fleet::SharedBudget;

/// A client's budget, `None` for a client that does not pace itself. Every client derived from
/// one shares its pacer.
#[derive(Debug)]
pub(crate) struct Pacer(Option<Inner>);

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
    /// The fleet's budget of [`RateLimit::shared`].
    #[cfg(feature = "redis")]
    shared: Option<Arc<SharedBudget>>,
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
        api_root: &Url,
        client_id: &str,
        longest_wait: Duration,
    ) -> Result<Pacer, Error> {
        #[cfg(not(feature = "redis"))]
        let _ = client_id;
        let limiter = match (&limit.error, limit.setting) {
            (Some(error), _) => return Err(error.clone()),
            (None, Setting::Off) => return Ok(Pacer(None)),
            (None, Setting::Adaptive) => Limiter::new(f64::INFINITY, 1),
            (None, Setting::Fixed { per_second, burst }) => Limiter::new(per_second, burst),
        };
        Ok(Pacer(Some(Inner {
            origin: Instant::now(),
            longest_wait,
            queue: tokio::sync::Mutex::new(()),
            state: Mutex::new(limiter),
            api_path: api_root.path().to_owned(),
            #[cfg(feature = "redis")]
            shared: (limit.shared.as_ref()).map(|cache| {
                Arc::new(SharedBudget::new(cache, limit.processes, api_root.as_str(), client_id))
            }),
        })))
    }

    /// A pacer that never holds a request: for the authorization server's requests.
    pub(crate) fn off() -> Pacer {
        Pacer(None)
    }

    /// False for [`RateLimit::none`]: requests then go at once and retry on their own.
    pub(crate) fn is_active(&self) -> bool {
        self.0.is_some()
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
        let Some(inner) = &self.0 else { return Ok(Duration::ZERO) };
        let started = Instant::now();
        let _turn = inner.queue.lock().await;
        loop {
            let now = inner.at(None);
            // Paced here without a fleet, during a pause, or with the fleet's Redis out of reach.
            let fleet = inner.ask_fleet(now).await;
            let wait = fleet.unwrap_or_else(|| duration_from_secs(inner.state().take(now) - now));
            if wait.is_zero() {
                return Ok(started.elapsed());
            }
            let paused = inner.state().pause(now).map(|pause| duration_from_secs(pause.until - now));
            if let Some(left) = paused.filter(|left| *left > patience) {
                return Err(inner.refused(now, left));
            }
            if time_left.is_some_and(|budget| started.elapsed().saturating_add(wait) > budget) {
                return Err(inner.refused(now, wait));
            }
            tokio::time::sleep(wait).await;
        }
    }

    /// Reads what a response sent at `sent_at` says: the server's advertised policy, a quota
    /// used up, and (unless it is a 429) a request the server accepted.
    pub(crate) fn response(&self, sent_at: Instant, status: u16, headers: &HeaderMap) {
        let Some(inner) = &self.0 else { return };
        let hints = Hints::read(headers);
        let (now, sent, mut state) = (inner.at(None), inner.at(Some(sent_at)), inner.state());
        if status != 429 {
            state.accepted(now, sent);
        }
        if let Some(rate) = hints.policy_rate {
            state.advertise(rate, now);
        }
        // With a policy the client already paces at its rate (a quota at zero is how a budget
        // used in full looks); without one, a spent quota waits for its reset.
        if hints.remaining == Some(0) && state.advertised.is_none() {
            let reset = hints.reset.map(|reset| reset.min(inner.longest_wait).as_secs_f64());
            state.throttled(now, sent, reset, None);
        }
    }

    /// A request sent at `sent_at` was refused with `error` (a 429): the whole client pauses
    /// for its `Retry-After` (and with a shared budget, the whole fleet), and slows down. The
    /// pause lasts no longer than the client's longest wait, or `request_wait` (the `max_delay`
    /// of the request's own policy) when that is longer, and never more than a day: past it,
    /// requests are sent again.
    pub(crate) fn throttled(&self, sent_at: Instant, error: &Error, request_wait: Duration) {
        let Some(inner) = &self.0 else { return };
        let longest = inner.longest_wait.max(request_wait).min(MAX_SERVER_WAIT);
        let pause = error.retry_after().map(|wait| wait.min(longest));
        let (now, sent) = (inner.at(None), inner.at(Some(sent_at)));
        inner.state().throttled(now, sent, pause.map(|wait| wait.as_secs_f64()), Some(error.clone()));
        tracing::debug!(retry_after_ms = pause.map(|wait| wait.as_millis() as u64), "429: the client pauses");
        #[cfg(feature = "redis")]
        if let (Some(shared), Some(wait)) = (&inner.shared, pause.filter(|wait| !wait.is_zero())) {
            shared.pause(wait);
        }
    }
}

impl Inner {
    /// Takes a slot of the fleet's budget unless a pause is in force: the wait before asking
    /// again, zero when it is taken, `None` to pace here (no fleet, a pause, or Redis out of
    /// reach).
    async fn ask_fleet(&self, now: f64) -> Option<Duration> {
        #[cfg(feature = "redis")]
        if let Some(shared) = &self.shared {
            let (rate, burst) = self.state().fleet_slot(now)?;
            let answer = shared.take(rate, burst).await;
            return self.apply(self.at(None), answer);
        }
        let _ = now;
        None
    }

    /// Applies what the fleet's budget answered at `now`: the wait before asking again, at
    /// most the client's longest wait (zero: the slot is taken), where a pause of the fleet
    /// this client did not ask for is a refusal for it too; or, with Redis out of reach,
    /// `None`: this process paces here at its share of the rate.
    #[cfg(any(feature = "redis", test))]
    fn apply(&self, now: f64, answer: Answer) -> Option<Duration> {
        let mut state = self.state();
        match answer {
            Answer::Wait { wait, paused } => {
                let wait = wait.min(self.longest_wait);
                if paused {
                    state.fleet_paused(now, wait.as_secs_f64());
                }
                Some(wait)
            }
            Answer::Down { processes } => {
                state.share = f64::from(processes);
                None
            }
        }
    }

    fn state(&self) -> MutexGuard<'_, Limiter> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Seconds since the limiter's clock began at `instant` (now when `None`).
    fn at(&self, instant: Option<Instant>) -> f64 {
        instant.unwrap_or_else(Instant::now).saturating_duration_since(self.origin).as_secs_f64()
    }

    /// The 429 for a request that will not wait `left` more: the one behind the pause in force,
    /// or one made here that stands for the pause or the budget.
    fn refused(&self, now: f64, left: Duration) -> Error {
        let state = self.state();
        let why = match state.pause(now).map(|pause| &pause.cause) {
            Some(Some(Error::Api(cause))) => return Error::Api(cause.clone().with_retry_after(Some(left))),
            Some(_) => "the client is paused by an earlier 429",
            None => "the client's rate limit would hold the request past its retry policy's time",
        };
        let response = ApiError::new(429, Some(ErrorCode::RateLimited), &self.api_path);
        Error::Api(response.with_description(Some(why.to_owned())).with_retry_after(Some(left)))
    }
}

#[cfg(test)]
mod tests;
