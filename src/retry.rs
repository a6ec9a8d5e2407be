//! Retries of transient failures: exponential backoff with full jitter, `Retry-After`, and
//! limits on attempts and elapsed time.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};

use crate::Error;
use crate::error::{ErrorCode, RetriesExhausted};

/// When and how often a failed request is sent again.
///
/// Retried by default: 429, 502, 503 and 504 answers, connection failures, timeouts and bodies
/// cut off mid-way ([`Error::is_retryable`]); never any other 4xx. [`retry_if`](Self::retry_if)
/// sets other rules. Requests are GETs, so a retry repeats nothing; a page is
/// retried at the same cursor and a listing never restarts. The wait before attempt n is drawn
/// uniformly from zero to `initial_delay * 2^(n-2)` (capped at `max_delay`), or is the
/// server's `Retry-After` when that is longer.
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
    max_delay: Duration,
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
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// Ceiling of the first backoff; it doubles with each retry. Default: 200 ms.
    pub fn initial_delay(mut self, delay: Duration) -> Self {
        self.initial_delay = delay;
        self
    }

    /// Largest wait between two attempts, `Retry-After` included: a server asking for a longer
    /// wait ends the retries. It is also the longest the client pauses after a 429 while it
    /// paces itself (the client's policy, or a listing's own when that is longer): requests
    /// that would wait longer end at once with the 429, and once `max_delay` is over, requests
    /// are sent again, however long the server asked for (the error's
    /// [`retry_after`](Error::retry_after) says that, at most a day). Default: 10 s.
    pub fn max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }

    /// Total time spent waiting between attempts of one request: backoff, `Retry-After`, and
    /// while the client paces itself, the wait for its budget after a failure. Default: 60 s.
    pub fn max_elapsed(mut self, elapsed: Duration) -> Self {
        self.max_elapsed = elapsed;
        self
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
    pub fn retry_if<F>(mut self, retry: F) -> Self
    where
        F: Fn(&Error) -> bool + Send + Sync + 'static,
    {
        self.classifier = Some(Classifier(Arc::new(retry)));
        self
    }

    /// Attempts in all.
    pub fn attempts(&self) -> u32 {
        self.max_attempts
    }

    /// Runs `attempt` (given the attempt's number, 1 for the first) until it succeeds, fails
    /// for good, or this policy gives up; `on_retry` hears of every retry before its wait.
    pub(crate) async fn run<T, F, Fut>(&self, attempt: F, on_retry: impl FnMut()) -> Result<T, Error>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        let open = |_, _| std::future::ready(Ok(Duration::ZERO));
        self.run_gated(false, open, attempt, on_retry).await
    }

    /// [`run`](Self::run), each attempt first passing `gate` (the client's budget), which is
    /// given how long a pause it may wait for and, after a failure, how long it may wait in
    /// all (what is left of `max_elapsed`), and answers how long it waited, or the error of a
    /// wait beyond that.
    ///
    /// With `paced` (a client that paces itself), a 429 (or `rate_limited`) uses up no attempt:
    /// with a `Retry-After` up to `max_delay` the request goes back to the gate, where the
    /// client's pause holds it; without one it waits a backoff of its own. Time bounds it:
    /// waits after a failure, the gate's included, count toward `max_elapsed`.
    pub(crate) async fn run_gated<T, F, Fut, G, GFut>(
        &self,
        paced: bool,
        mut gate: G,
        mut attempt: F,
        mut on_retry: impl FnMut(),
    ) -> Result<T, Error>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T, Error>>,
        G: FnMut(Duration, Option<Duration>) -> GFut,
        GFut: Future<Output = Result<Duration, Error>>,
    {
        let mut schedule = self.schedule();
        schedule.paced = paced;
        loop {
            match gate(schedule.patience(), schedule.time_left()).await {
                Ok(waited) => schedule.waited_for_budget(waited),
                Err(refused) => return Err(schedule.give_up_unsent(refused)),
            }
            match attempt(schedule.attempt()).await {
                Ok(value) => return Ok(value),
                Err(error) => match schedule.next_delay(&error) {
                    Some(delay) => {
                        tracing::debug!(error = %error, delay_ms = delay.as_millis() as u64, "transient failure; retrying");
                        on_retry();
                        if !delay.is_zero() {
                            tokio::time::sleep(delay).await;
                        }
                    }
                    None => return Err(schedule.give_up(error)),
                },
            }
        }
    }

    /// Whether this policy retries `error` (attempts and time left aside).
    pub fn should_retry(&self, error: &Error) -> bool {
        match &self.classifier {
            Some(Classifier(retry)) => retry(error),
            None => error.is_retryable(),
        }
    }

    /// The ceilings of the waits before successive retries: `initial_delay`, doubling each
    /// time, capped at `max_delay`; one per retry the policy allows.
    pub(crate) fn ceilings(&self) -> Box<dyn Iterator<Item = Duration> + Send + Sync> {
        self.backoff(Some(self.max_attempts.saturating_sub(1) as usize))
    }

    /// `initial_delay`, doubling each time, capped at `max_delay`: `times` of them, or without end.
    fn backoff(&self, times: Option<usize>) -> Box<dyn Iterator<Item = Duration> + Send + Sync> {
        let builder = ExponentialBuilder::default()
            .with_min_delay(self.initial_delay)
            .with_max_delay(self.max_delay)
            .with_factor(2.0);
        match times {
            Some(times) => Box::new(builder.with_max_times(times).build()),
            None => Box::new(builder.without_max_times().build()),
        }
    }

    /// The largest wait between two attempts.
    pub(crate) fn longest_delay(&self) -> Duration {
        self.max_delay
    }

    pub(crate) fn schedule(&self) -> RetrySchedule {
        RetrySchedule {
            policy: self.clone(),
            ceilings: None,
            throttle_ceilings: None,
            waited: Duration::ZERO,
            attempt: 1,
            paced: false,
        }
    }
}

/// A 429, or an answer whose code says the same: the server asks the client to slow down.
pub(crate) fn is_throttle(error: &Error) -> bool {
    error.status() == Some(429) || error.code() == Some(&ErrorCode::RateLimited)
}

/// The retry state of one request. The backoff is set up at the first failure, so a request
/// that succeeds at once costs nothing more.
pub(crate) struct RetrySchedule {
    policy: RetryPolicy,
    ceilings: Option<Box<dyn Iterator<Item = Duration> + Send + Sync>>,
    waited: Duration,
    attempt: u32,
    /// The client paces itself: 429s use up no attempt (see [`RetryPolicy::run_gated`]).
    paced: bool,
    /// The backoff of 429s without `Retry-After` in a row, while pacing.
    throttle_ceilings: Option<Box<dyn Iterator<Item = Duration> + Send + Sync>>,
}

impl RetrySchedule {
    /// The number of the attempt about to be made (1 for the first).
    pub(crate) fn attempt(&self) -> u32 {
        self.attempt
    }

    /// How long to wait before sending again after `error`, or `None` to give up.
    pub(crate) fn next_delay(&mut self, error: &Error) -> Option<Duration> {
        if !self.policy.should_retry(error) {
            return None;
        }
        if self.paced && is_throttle(error) {
            return self.after_throttle(error);
        }
        self.throttle_ceilings = None;
        let ceiling = self.ceilings.get_or_insert_with(|| self.policy.ceilings()).next()?;
        let jittered = ceiling.mul_f64(fastrand::f64());
        let delay = match error.retry_after() {
            Some(asked) if asked > self.policy.max_delay => return None,
            Some(asked) => asked.max(jittered),
            None => jittered,
        };
        self.spend(delay)
    }

    /// A 429 while pacing: no attempt used up. Its `Retry-After` is waited for at the gate,
    /// where the client's pause holds every request; without one, a backoff of its own.
    fn after_throttle(&mut self, error: &Error) -> Option<Duration> {
        if self.policy.max_attempts == 1 {
            // A policy that never retries does not retry a 429 either.
            return None;
        }
        let (delay, held) = match error.retry_after() {
            Some(asked) if asked > self.policy.max_delay => return None,
            Some(asked) => (Duration::ZERO, asked),
            None => {
                let ceilings = self.throttle_ceilings.get_or_insert_with(|| self.policy.backoff(None));
                let ceiling = ceilings.next().unwrap_or(self.policy.max_delay);
                (ceiling.mul_f64(fastrand::f64()), Duration::ZERO)
            }
        };
        if self.waited.saturating_add(delay).saturating_add(held) > self.policy.max_elapsed {
            return None;
        }
        self.spend(delay)
    }

    /// Counts `delay` toward `max_elapsed` and moves to the next attempt, unless it does not fit.
    fn spend(&mut self, delay: Duration) -> Option<Duration> {
        if self.waited.saturating_add(delay) > self.policy.max_elapsed {
            return None;
        }
        self.waited = self.waited.saturating_add(delay);
        self.attempt += 1;
        Some(delay)
    }

    /// How long a pause the request may wait for before its next attempt: `max_delay`, and
    /// after a failure no more than what is left of `max_elapsed`.
    fn patience(&self) -> Duration {
        self.time_left().map_or(self.policy.max_delay, |left| left.min(self.policy.max_delay))
    }

    /// After a failure, how long the request may still wait in all (`max_elapsed` less the
    /// waits so far); `None` before its first attempt, whose wait for the budget is not a
    /// retry's.
    fn time_left(&self) -> Option<Duration> {
        (self.attempt > 1).then(|| self.policy.max_elapsed.saturating_sub(self.waited))
    }

    /// Counts a wait for the client's budget; after a failure, toward `max_elapsed`.
    fn waited_for_budget(&mut self, waited: Duration) {
        if self.attempt > 1 {
            self.waited = self.waited.saturating_add(waited);
        }
    }

    /// Wraps the last error once retries are over, if any retry was made.
    pub(crate) fn give_up(&self, error: Error) -> Error {
        self.exhausted(self.attempt, error)
    }

    /// Wraps `error` (a pause the request would not wait for) when the attempt about to be
    /// made was not the first: the attempts made are one fewer.
    fn give_up_unsent(&self, error: Error) -> Error {
        self.exhausted(self.attempt - 1, error)
    }

    fn exhausted(&self, attempts: u32, error: Error) -> Error {
        if attempts > 1 && self.policy.should_retry(&error) {
            Error::RetriesExhausted(RetriesExhausted::new(attempts, error))
        } else {
            error
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ApiError;

    fn status(code: u16, retry_after: Option<Duration>) -> Error {
        Error::Api(ApiError::new(code, None, "/v1/companies").with_retry_after(retry_after))
    }

    #[test]
    fn retries_only_transient_statuses() {
        for code in [429, 502, 503, 504] {
            assert!(RetryPolicy::default().schedule().next_delay(&status(code, None)).is_some(), "{code}");
        }
        for code in [400, 401, 403, 404, 409, 410, 500, 501] {
            assert!(RetryPolicy::default().schedule().next_delay(&status(code, None)).is_none(), "{code}");
        }
    }

    #[test]
    fn a_classifier_replaces_the_default_rule() {
        let wider = RetryPolicy::default().retry_if(|e| e.is_retryable() || e.status() == Some(500));
        assert!(wider.schedule().next_delay(&status(500, None)).is_some());
        assert!(wider.schedule().next_delay(&status(503, None)).is_some());
        assert!(wider.schedule().next_delay(&status(404, None)).is_none());
        let narrower = RetryPolicy::default().retry_if(|e| e.is_retryable() && e.status() != Some(429));
        assert!(narrower.schedule().next_delay(&status(429, None)).is_none());
        assert!(narrower.schedule().next_delay(&status(502, None)).is_some());

        let mut schedule = wider.clone().max_attempts(2).schedule();
        assert!(schedule.next_delay(&status(500, None)).is_some());
        assert!(schedule.next_delay(&status(500, None)).is_none());
        let last = schedule.give_up(status(500, None));
        assert!(matches!(&last, Error::RetriesExhausted(e) if e.attempts() == 2), "{last:?}");
        assert_eq!(wider, wider.clone());
        assert_ne!(wider, RetryPolicy::default());
    }

    #[test]
    fn full_jitter_stays_under_the_doubling_ceiling_and_attempts_are_bounded() {
        let policy = RetryPolicy::default().max_attempts(5).initial_delay(Duration::from_millis(100));
        let mut schedule = policy.schedule();
        let mut ceiling = Duration::from_millis(100);
        for _ in 0..4 {
            let delay = schedule.next_delay(&status(503, None)).expect("a retry");
            assert!(delay <= ceiling, "{delay:?} > {ceiling:?}");
            ceiling *= 2;
        }
        assert_eq!(schedule.attempt(), 5);
        assert!(schedule.next_delay(&status(503, None)).is_none());
    }

    #[test]
    fn retry_after_is_honoured_within_limits() {
        let mut schedule = RetryPolicy::default().schedule();
        let delay = schedule.next_delay(&status(429, Some(Duration::from_secs(2))));
        assert_eq!(delay, Some(Duration::from_secs(2)));
        let mut schedule = RetryPolicy::default().max_delay(Duration::from_secs(1)).schedule();
        assert!(schedule.next_delay(&status(429, Some(Duration::from_secs(2)))).is_none());
        let mut schedule = RetryPolicy::default().max_elapsed(Duration::from_secs(3)).schedule();
        assert!(schedule.next_delay(&status(429, Some(Duration::from_secs(2)))).is_some());
        assert!(schedule.next_delay(&status(429, Some(Duration::from_secs(2)))).is_none());
    }

    fn paced(policy: RetryPolicy) -> RetrySchedule {
        let mut schedule = policy.schedule();
        schedule.paced = true;
        schedule
    }

    #[test]
    fn while_pacing_a_429_uses_up_no_attempt_and_time_bounds_it() {
        let policy = RetryPolicy::default().max_attempts(2).max_elapsed(Duration::from_secs(30));
        let mut schedule = paced(policy.clone());
        let slow_down = status(429, Some(Duration::from_secs(1)));
        for n in 0..25 {
            // The gate holds the request for the client's pause: no wait of its own here.
            assert_eq!(schedule.next_delay(&slow_down), Some(Duration::ZERO), "429 number {n}");
            schedule.waited_for_budget(Duration::from_secs(1));
        }
        assert_eq!(schedule.attempt(), 26);
        assert_eq!(schedule.patience(), Duration::from_secs(5), "what is left of max_elapsed");
        assert_eq!(schedule.time_left(), Some(Duration::from_secs(5)));
        // Every attempt of the policy is still there for a real failure.
        assert!(schedule.next_delay(&status(503, None)).is_some());
        assert!(schedule.next_delay(&status(503, None)).is_none(), "max_attempts(2): one retry");
        // Time runs out: 25 s waited, a pause of 6 s does not fit in 30.
        assert!(schedule.next_delay(&status(429, Some(Duration::from_secs(6)))).is_none());
        let last = schedule.give_up(status(429, None));
        assert!(matches!(&last, Error::RetriesExhausted(e) if e.attempts() == 27), "{last:?}");

        // Longer than max_delay: not waited for, paced or not.
        assert!(paced(policy.clone()).next_delay(&status(429, Some(Duration::from_secs(11)))).is_none());
        // Without Retry-After: a backoff of its own, growing, still no attempt used up.
        let mut schedule = paced(policy.initial_delay(Duration::from_millis(100)));
        for ceiling in [100, 200, 400, 800] {
            let delay = schedule.next_delay(&status(429, None)).expect("a retry");
            assert!(delay <= Duration::from_millis(ceiling), "{delay:?} > {ceiling} ms");
        }
        assert!(schedule.next_delay(&status(502, None)).is_some());
    }

    #[test]
    fn a_request_the_gate_refuses_reports_the_attempts_made() {
        let mut schedule = paced(RetryPolicy::default());
        assert_eq!(schedule.patience(), Duration::from_secs(10), "before any failure: max_delay");
        assert_eq!(schedule.time_left(), None, "the first wait for the budget is not a retry's");
        schedule.waited_for_budget(Duration::from_secs(100));
        let refused = status(429, Some(Duration::from_secs(20)));
        assert!(matches!(schedule.give_up_unsent(refused.clone()), Error::Api(_)), "nothing was sent");
        assert!(schedule.next_delay(&status(503, None)).is_some());
        assert!(matches!(schedule.give_up_unsent(refused.clone()), Error::Api(_)), "one attempt made");
        assert!(schedule.next_delay(&status(503, None)).is_some());
        let error = schedule.give_up_unsent(refused);
        assert!(matches!(&error, Error::RetriesExhausted(e) if e.attempts() == 2), "{error:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn the_loop_waits_out_each_retry_after_on_tokios_clock() {
        let answers = std::sync::Mutex::new(vec![
            Ok(()),
            Err(status(503, Some(Duration::from_secs(8)))),
            Err(status(429, Some(Duration::from_secs(1)))),
        ]);
        let start = tokio::time::Instant::now();
        let mut sent = Vec::new();
        let result = RetryPolicy::default()
            .run(
                |attempt| {
                    sent.push((attempt, start.elapsed()));
                    let answer = answers.lock().unwrap_or_else(|e| e.into_inner()).pop();
                    std::future::ready(answer.unwrap_or(Ok(())))
                },
                || {},
            )
            .await;
        assert!(result.is_ok(), "{result:?}");
        // Each attempt goes once its Retry-After has passed (longer than the backoff, at most
        // 400 ms by then), to the millisecond on the paused clock.
        let secs = |s: u64| Duration::from_secs(s);
        assert_eq!(sent, [(1, secs(0)), (2, secs(1)), (3, secs(9))]);

        // A Retry-After longer than max_delay is not waited for: the error comes at once.
        let start = tokio::time::Instant::now();
        let error = RetryPolicy::default()
            .run(|_| std::future::ready(Err::<(), _>(status(503, Some(secs(11))))), || {})
            .await
            .expect_err("not retried");
        assert_eq!((error.status(), start.elapsed()), (Some(503), Duration::ZERO));
    }
}
