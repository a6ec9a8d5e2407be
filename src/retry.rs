//! Retries of transient failures: the one retry loop and the one jittered backoff of the
//! crate. API calls, token requests, key fetches and every other waiter use them.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use crate::Error;
use crate::bounds::later;
use crate::error::RetriesExhausted;
use crate::pacing::Pacer;

/// When and how often a failed request is sent again.
///
/// Retried by default: 429, 502, 503 and 504 answers, connection failures, timeouts and bodies
/// cut off mid-way ([`Error::is_retryable`]); never any other 4xx. [`retry_if`](Self::retry_if)
/// sets other rules. GET, HEAD, PUT and DELETE are retried; POST and PATCH only with an
/// idempotency key ([`Request::idempotency_key`](crate::Request::idempotency_key)), and without
/// one only when the request cannot have reached the server (the connection was never made).
/// A page is retried at the same cursor and a listing never restarts. The wait before attempt
/// n is drawn uniformly from zero to `initial_delay * 2^(n-2)` (capped at `max_delay`), or is
/// the server's `Retry-After` when that is longer.
///
/// While the client paces itself (the default; see [`RateLimit`](crate::RateLimit)), a 429 is
/// the server asking to slow down, not a failure: it uses up no attempt, its `Retry-After`
/// pauses the whole client, and only `max_elapsed` bounds how long a request keeps trying.
///
/// ```
/// use std::time::Duration;
/// use business_records::RetryPolicy;
/// let policy = RetryPolicy::default()
///     .max_attempts(6)
///     .initial_delay(Duration::from_millis(100))
///     .max_elapsed(Duration::from_secs(30));
/// assert_eq!(policy.attempts(), 6);
/// let never = RetryPolicy::none();
/// assert_eq!(never.attempts(), 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct RetryPolicy {
    max_attempts: u32,
    initial_delay: Duration,
    /// The largest wait between two attempts.
    pub(crate) max_delay: Duration,
    max_elapsed: Duration,
    classifier: Option<Classifier>,
}

/// A caller's rule for which failures to retry.
#[derive(Clone)]
struct Classifier(Arc<dyn Fn(&Error) -> bool + Send + Sync>);

impl fmt::Debug for Classifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Classifier(..)")
    }
}

/// Two policies are equal when they share the same rule, not when two rules agree.
impl PartialEq for Classifier {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Classifier {}

impl Default for RetryPolicy {
    /// 4 attempts, 200 ms initial delay, 10 s maximum delay, 60 s in all.
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            initial_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(10),
            max_elapsed: Duration::from_secs(60),
            classifier: None,
        }
    }
}

impl RetryPolicy {
    /// No retries: every failure is returned at once, 429s included.
    pub fn none() -> Self {
        RetryPolicy { max_attempts: 1, ..RetryPolicy::default() }
    }

    /// Attempts in all, the first one included (at least 1). Default: 4.
    pub fn max_attempts(self, attempts: u32) -> Self {
        RetryPolicy { max_attempts: attempts.max(1), ..self }
    }

    /// Ceiling of the first backoff; it doubles with each retry. Default: 200 ms.
    pub fn initial_delay(self, delay: Duration) -> Self {
        RetryPolicy { initial_delay: delay, ..self }
    }

    /// Largest wait between two attempts, `Retry-After` included: a server asking for a longer
    /// wait ends the retries. It is also the longest the client pauses after a 429 while it
    /// paces itself (the client's policy, or a listing's own when that is longer): requests
    /// that would wait longer end at once with the 429, and once `max_delay` is over, requests
    /// are sent again, however long the server asked for (the error's
    /// [`retry_after`](Error::retry_after) says that, at most a day). Default: 10 s.
    pub fn max_delay(self, delay: Duration) -> Self {
        RetryPolicy { max_delay: delay, ..self }
    }

    /// Total time spent waiting between attempts of one request: backoff, `Retry-After`, and
    /// while the client paces itself, the wait for its budget after a failure. Default: 60 s.
    pub fn max_elapsed(self, elapsed: Duration) -> Self {
        RetryPolicy { max_elapsed: elapsed, ..self }
    }

    /// Which failures are retried: `retry` answers for each error, in place of
    /// [`Error::is_retryable`] (the default). Backoff, `Retry-After` and the limits above still
    /// apply, and only failures are classified: a success is never retried.
    ///
    /// Start from the default rule to widen or narrow it:
    ///
    /// ```
    /// use business_records::{Error, RetryPolicy};
    ///
    /// // Also retry 500 answers, which this API sends for a brief overload.
    /// let wider = RetryPolicy::default().retry_if(|e: &Error| e.is_retryable() || e.status() == Some(500));
    /// // Never retry a 429: the caller paces itself.
    /// let narrower = RetryPolicy::default().retry_if(|e: &Error| e.is_retryable() && e.status() != Some(429));
    /// # let _ = (wider, narrower);
    /// ```
    pub fn retry_if<F>(self, retry: F) -> Self
    where
        F: Fn(&Error) -> bool + Send + Sync + 'static,
    {
        RetryPolicy { classifier: Some(Classifier(Arc::new(retry))), ..self }
    }

    /// Attempts in all.
    pub fn attempts(&self) -> u32 {
        self.max_attempts
    }

    /// Whether this policy retries `error` (attempts and time left aside).
    pub fn should_retry(&self, error: &Error) -> bool {
        self.classifier.as_ref().map_or_else(|| error.is_retryable(), |Classifier(retry)| retry(error))
    }

    /// Runs `send` (given the attempt's number, 1 for the first) until it succeeds, fails for
    /// good, or this policy gives up. Each attempt first waits for `pacer`'s budget, for at most
    /// `max_delay` and, after a failure, no longer than what is left of `max_elapsed`. A call
    /// that is not `idempotent` is sent again only after a failure that reached no server.
    pub(crate) async fn run<T, Fut>(
        &self,
        pacer: &Pacer,
        idempotent: bool,
        stats: Option<&CallStats>,
        mut send: impl FnMut(u32) -> Fut,
    ) -> Result<T, Error>
    where
        Fut: Future<Output = Result<T, Error>>,
    {
        let mut schedule = Schedule::new(self, pacer.is_active());
        loop {
            match pacer.admit(schedule.patience(), schedule.time_left()).await {
                Ok(waited) => schedule.waited_for_budget(waited, stats),
                Err(refused) => return Err(schedule.give_up(refused, schedule.attempt - 1)),
            }
            let error = match send(schedule.attempt).await {
                Ok(value) => return Ok(value),
                Err(error) => error,
            };
            let delay = if idempotent || error.is_unsent() { schedule.next_delay(&error) } else { None };
            let Some(delay) = delay else { return Err(schedule.give_up(error, schedule.attempt)) };
            tracing::debug!(error = %error, delay_ms = delay.as_millis() as u64, "transient failure; retrying");
            if let Some(stats) = stats {
                stats.retries.fetch_add(1, Ordering::Relaxed);
            }
            tokio::time::sleep(delay).await;
        }
    }
}

/// The crate's one jittered backoff: waits drawn uniformly from zero to a ceiling that starts
/// at `initial` and doubles up to `max` ("full jitter"), without end.
pub(crate) fn backoff(initial: Duration, max: Duration) -> impl Iterator<Item = Duration> + Send + Sync {
    std::iter::successors(Some(1), |failures: &u32| Some(failures.saturating_add(1)))
        .map(move |failures| full_jitter(initial, max, failures))
}

/// Requests that failed in a row: the last error, the instant before which no new request is
/// made, and the crate's one backoff between them. A success starts over from the default.
#[derive(Default)]
pub(crate) struct Failures {
    /// The last error, and no new request before the instant.
    last: Option<(Error, Instant)>,
    /// How many failed in a row.
    failures: u32,
}

impl Failures {
    /// The last error, while its pause has not ended at `now`.
    pub(crate) fn pending(&self, now: Instant) -> Option<&Error> {
        self.last.as_ref().filter(|(_, retry_at)| now < *retry_at).map(|(error, _)| error)
    }

    /// Records and logs `error` of `what`, holding the next request back for the next pause of
    /// the backoff from `initial` doubling up to `max`, or `floor` when longer, never over `max`.
    pub(crate) fn record(
        &mut self,
        what: &str,
        error: &Error,
        backoff: (Duration, Duration),
        floor: Duration,
    ) {
        let (initial, max) = backoff;
        self.failures = self.failures.saturating_add(1);
        let delay = full_jitter(initial, max, self.failures).max(floor).min(max);
        let retry_in_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        tracing::warn!(error = %error, retry_in_ms, "{what} failed");
        self.last = Some((error.clone(), later(Instant::now(), delay)));
    }
}

/// The wait after `failures` failures in a row (from 1), drawn uniformly from zero to a ceiling:
/// `initial`, doubled for each failure after the first, at most `max`.
fn full_jitter(initial: Duration, max: Duration, failures: u32) -> Duration {
    let ceiling = initial.saturating_mul(1 << failures.saturating_sub(1).min(31)).min(max);
    ceiling.mul_f64(fastrand::f64())
}

/// What the calls of one listing cost beyond their requests: retries and waits for the budget.
#[derive(Debug, Default)]
pub(crate) struct CallStats {
    retries: AtomicU64,
    waited_micros: AtomicU64,
}

impl CallStats {
    /// Requests sent again after a transient failure.
    pub(crate) fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }

    /// Time spent waiting for the client's budget (pauses after a 429 included).
    pub(crate) fn waited(&self) -> Duration {
        Duration::from_micros(self.waited_micros.load(Ordering::Relaxed))
    }
}

/// The retry state of one call.
struct Schedule<'p> {
    policy: &'p RetryPolicy,
    /// The client paces itself: 429s use up no attempt.
    paced: bool,
    attempt: u32,
    /// Waits after the first failure, counted toward `max_elapsed`.
    waited: Duration,
    /// Failures retried that used up an attempt.
    retried: u32,
    /// 429s without `Retry-After` in a row while pacing, which have a backoff of their own.
    throttled: u32,
}

impl<'p> Schedule<'p> {
    fn new(policy: &'p RetryPolicy, paced: bool) -> Self {
        Schedule { policy, paced, attempt: 1, waited: Duration::ZERO, retried: 0, throttled: 0 }
    }

    /// How long a pause the next attempt may wait for: `max_delay`, and after a failure no
    /// more than what is left of `max_elapsed`.
    fn patience(&self) -> Duration {
        self.time_left().map_or(self.policy.max_delay, |left| left.min(self.policy.max_delay))
    }

    /// After a failure, how long the call may still wait in all; `None` before its first
    /// attempt, whose wait for the budget is not a retry's.
    fn time_left(&self) -> Option<Duration> {
        (self.attempt > 1).then(|| self.policy.max_elapsed.saturating_sub(self.waited))
    }

    fn waited_for_budget(&mut self, waited: Duration, stats: Option<&CallStats>) {
        if let Some(stats) = stats {
            let micros = u64::try_from(waited.as_micros()).unwrap_or(u64::MAX);
            stats.waited_micros.fetch_add(micros, Ordering::Relaxed);
        }
        if self.attempt > 1 {
            self.waited = self.waited.saturating_add(waited);
        }
    }

    /// How long to wait before sending again after `error`, or `None` to give up. While
    /// pacing, a 429 uses up no attempt: its `Retry-After` is waited for at the budget, where
    /// the client's pause holds every request; without one, a backoff of its own.
    fn next_delay(&mut self, error: &Error) -> Option<Duration> {
        let policy = self.policy;
        if !policy.should_retry(error) || error.retry_after().is_some_and(|asked| asked > policy.max_delay) {
            return None;
        }
        let (delay, held) = if self.paced && error.is_throttle() && policy.max_attempts > 1 {
            match error.retry_after() {
                Some(asked) => (Duration::ZERO, asked),
                None => {
                    self.throttled = self.throttled.saturating_add(1);
                    (full_jitter(policy.initial_delay, policy.max_delay, self.throttled), Duration::ZERO)
                }
            }
        } else if self.retried + 1 < policy.max_attempts {
            self.throttled = 0;
            self.retried += 1;
            let delay = full_jitter(policy.initial_delay, policy.max_delay, self.retried);
            (delay.max(error.retry_after().unwrap_or_default()), Duration::ZERO)
        } else {
            return None;
        };
        if self.waited.saturating_add(delay).saturating_add(held) > policy.max_elapsed {
            return None;
        }
        self.waited = self.waited.saturating_add(delay);
        self.attempt += 1;
        Some(delay)
    }

    /// `error` as the call's outcome after `attempts` attempts: wrapped when it was retried.
    fn give_up(&self, error: Error, attempts: u32) -> Error {
        if attempts > 1 && self.policy.should_retry(&error) {
            Error::RetriesExhausted(Arc::new(RetriesExhausted { attempts, last: error }))
        } else {
            error
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ApiError, Origin};

    fn status(code: u16, retry_after: Option<Duration>) -> Error {
        Error::Api(ApiError::new(code, None, "/v1/companies").with_retry_after(retry_after))
    }

    fn schedule(policy: &RetryPolicy, paced: bool) -> Schedule<'_> {
        Schedule::new(policy, paced)
    }

    #[tokio::test(start_paused = true)]
    async fn failures_back_off_on_the_given_schedule() {
        let mut failures = Failures::default();
        let err = Error::Api(ApiError::new(503, None, "/jwks").with_origin(Origin::AuthorizationServer));
        for ceiling in [100, 200, 350, 350] {
            failures.record(
                "jwks fetch",
                &err,
                (Duration::from_millis(100), Duration::from_millis(350)),
                Duration::ZERO,
            );
            let (last_error, retry_at) = failures.last.as_ref().expect("a failure is kept");
            let (delay, ceiling) = (*retry_at - Instant::now(), Duration::from_millis(ceiling));
            assert!(delay <= ceiling, "{delay:?} for {ceiling:?}");
            assert_eq!(last_error.status(), Some(503));
        }
        let (_, retry_at) = failures.last.expect("a failure is kept");
        assert!(retry_at <= Instant::now() + Duration::from_millis(350));
    }

    #[tokio::test(start_paused = true)]
    async fn a_failure_holds_requests_back_for_its_floor_and_no_longer_than_the_cap() {
        let mut failures = Failures::default();
        assert!(failures.pending(Instant::now()).is_none(), "nothing failed yet");
        let err = status(503, Some(Duration::from_secs(5)));
        let backoff = (Duration::from_millis(100), Duration::from_secs(60));
        // The server's Retry-After as the floor: never sooner than it asked.
        failures.record("token request", &err, backoff, Duration::from_secs(5));
        let now = Instant::now();
        assert_eq!(failures.pending(now + Duration::from_millis(4999)).and_then(Error::status), Some(503));
        assert!(failures.pending(now + Duration::from_secs(5)).is_none(), "held back exactly that long");
        // A floor past the cap waits the cap.
        failures.record("token request", &err, backoff, Duration::from_secs(600));
        assert!(failures.pending(now + Duration::from_millis(59_999)).is_some());
        assert!(failures.pending(now + Duration::from_secs(60)).is_none());
    }

    #[test]
    fn the_backoff_is_full_jitter_under_doubling_ceilings() {
        let ceilings = [100, 200, 400, 800, 1000, 1000].map(Duration::from_millis);
        let mut sums = [Duration::ZERO; 6];
        let runs = 2_000;
        for _ in 0..runs {
            let waits = backoff(Duration::from_millis(100), Duration::from_secs(1));
            for ((wait, ceiling), sum) in waits.zip(ceilings).zip(&mut sums) {
                assert!(wait <= ceiling, "{wait:?} > {ceiling:?}");
                *sum += wait;
            }
        }
        // Uniform from zero to the ceiling: the mean is half of it (a fixed or zero wait fails).
        for (sum, ceiling) in sums.into_iter().zip(ceilings) {
            let mean = sum / runs;
            assert!(mean > ceiling * 4 / 10 && mean < ceiling * 6 / 10, "mean {mean:?} for {ceiling:?}");
        }
    }

    #[test]
    fn retries_only_transient_statuses() {
        let policy = RetryPolicy::default();
        for code in [429, 502, 503, 504] {
            assert!(schedule(&policy, false).next_delay(&status(code, None)).is_some(), "{code}");
        }
        for code in [400, 401, 403, 404, 409, 410, 500, 501] {
            assert!(schedule(&policy, false).next_delay(&status(code, None)).is_none(), "{code}");
        }
    }

    #[test]
    fn a_classifier_replaces_the_default_rule() {
        let wider = RetryPolicy::default().retry_if(|e| e.is_retryable() || e.status() == Some(500));
        assert!(schedule(&wider, false).next_delay(&status(500, None)).is_some());
        assert!(schedule(&wider, false).next_delay(&status(404, None)).is_none());
        let narrower = RetryPolicy::default().retry_if(|e| e.is_retryable() && e.status() != Some(429));
        assert!(schedule(&narrower, false).next_delay(&status(429, None)).is_none());
        assert!(schedule(&narrower, false).next_delay(&status(502, None)).is_some());

        let twice = wider.clone().max_attempts(2);
        let mut schedule = schedule(&twice, false);
        assert!(schedule.next_delay(&status(500, None)).is_some());
        assert!(schedule.next_delay(&status(500, None)).is_none());
        let last = schedule.give_up(status(500, None), schedule.attempt);
        assert!(matches!(&last, Error::RetriesExhausted(e) if e.attempts() == 2), "{last:?}");
        assert_eq!(wider, wider.clone());
        assert_ne!(wider, RetryPolicy::default());
    }

    #[test]
    fn retry_after_is_honoured_within_limits() {
        let policy = RetryPolicy::default();
        let delay = schedule(&policy, false).next_delay(&status(429, Some(Duration::from_secs(2))));
        assert_eq!(delay, Some(Duration::from_secs(2)));
        let short = RetryPolicy::default().max_delay(Duration::from_secs(1));
        assert!(schedule(&short, false).next_delay(&status(429, Some(Duration::from_secs(2)))).is_none());
        let brief = RetryPolicy::default().max_elapsed(Duration::from_secs(3));
        let mut schedule = schedule(&brief, false);
        assert!(schedule.next_delay(&status(429, Some(Duration::from_secs(2)))).is_some());
        assert!(schedule.next_delay(&status(429, Some(Duration::from_secs(2)))).is_none());
    }

    #[test]
    fn while_pacing_a_429_uses_up_no_attempt_and_time_bounds_it() {
        let policy = RetryPolicy::default().max_attempts(2).max_elapsed(Duration::from_secs(30));
        let mut paced = schedule(&policy, true);
        let slow_down = status(429, Some(Duration::from_secs(1)));
        for n in 0..25 {
            // The budget holds the request for the client's pause: no wait of its own here.
            assert_eq!(paced.next_delay(&slow_down), Some(Duration::ZERO), "429 number {n}");
            paced.waited_for_budget(Duration::from_secs(1), None);
        }
        assert_eq!(paced.attempt, 26);
        assert_eq!(paced.patience(), Duration::from_secs(5), "what is left of max_elapsed");
        // Every attempt of the policy is still there for a real failure.
        assert!(paced.next_delay(&status(503, None)).is_some());
        assert!(paced.next_delay(&status(503, None)).is_none(), "max_attempts(2): one retry");
        // Longer than max_delay: not waited for, paced or not.
        assert!(schedule(&policy, true).next_delay(&status(429, Some(Duration::from_secs(11)))).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn the_loop_waits_out_each_retry_after_and_never_resends_a_post_without_a_key() {
        let answers = std::sync::Mutex::new(vec![
            Ok(()),
            Err(status(503, Some(Duration::from_secs(8)))),
            Err(status(429, Some(Duration::from_secs(1)))),
        ]);
        let start = tokio::time::Instant::now();
        let mut sent = Vec::new();
        let result = RetryPolicy::default()
            .run(&Pacer::off(), true, None, |attempt| {
                sent.push((attempt, start.elapsed()));
                let answer = answers.lock().unwrap_or_else(|e| e.into_inner()).pop();
                std::future::ready(answer.unwrap_or(Ok(())))
            })
            .await;
        assert!(result.is_ok(), "{result:?}");
        let secs = Duration::from_secs;
        assert_eq!(sent, [(1, secs(0)), (2, secs(1)), (3, secs(9))]);

        let mut attempts = 0;
        let error = RetryPolicy::default()
            .run(&Pacer::off(), false, None, |_| {
                attempts += 1;
                std::future::ready(Err::<(), _>(status(503, None)))
            })
            .await
            .expect_err("not retried");
        assert_eq!((attempts, error.status()), (1, Some(503)));
    }
}
