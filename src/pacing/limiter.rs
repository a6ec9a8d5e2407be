//! The state of one client's budget, apart from any waiting: when the next request may go
//! (GCRA), pauses after a 429, and the send rate that adapts to the server's answers.
//!
//! The rate follows aws-sdk-rust's adaptive retry mode (CUBIC, as TCP uses it): a throttling
//! answer sets the rate to `BETA` times the rate the client was sending at, and successes then
//! raise it along `SCALE * (t - K)^3 + last_max`, which comes back to the old rate after `K`
//! seconds, stays near it for a while, and probes above it after. One throttle per round of
//! requests counts: a 429 to a request sent before the last decrease, or within
//! `ROUND` of it, does not decrease again, so that the refusals of one burst are one signal, as
//! TCP counts one loss per window.
//! The rate never exceeds the ceiling (the configured rate, or the server's advertised
//! policy), and an increase never takes it past twice the rate actually sent.
//!
//! Times are seconds since the limiter was made, as `f64`.

use std::collections::VecDeque;

use crate::Error;

/// How much of the sending rate is kept after a throttling answer.
const BETA: f64 = 0.7;
/// How fast the rate grows back (requests per second per cubed second).
const SCALE: f64 = 0.4;
/// The shortest time between two decreases, in seconds.
const ROUND: f64 = 0.5;
/// The lowest rate a decrease can reach, in requests per second.
pub(super) const MIN_RATE: f64 = 0.5;
/// The window over which the sending rate is measured.
const METER_WINDOW: f64 = 1.0;
/// Sends remembered for the meter, at most.
const METER_CAPACITY: usize = 10_000;
/// Slots closer to now than this are now: the clock has nanoseconds, and rounding must not
/// leave a request waiting for a wait too short to sleep.
const RESOLUTION: f64 = 1e-6;

/// A pause of the whole client, and the answer that asked for it.
#[derive(Debug, Clone)]
pub(super) struct Pause {
    pub(super) until: f64,
    pub(super) cause: Option<Error>,
}

/// The budget's state.
#[derive(Debug)]
pub(super) struct Limiter {
    /// The highest rate allowed: configured, or unbounded (`f64::INFINITY`) when adaptive.
    ceiling: f64,
    /// The rate the server's `RateLimit-Policy` advertises, when it does.
    advertised: Option<f64>,
    /// Requests that may go at once after an idle time.
    burst: f64,
    /// The send rate now; `None` while an adaptive budget has had no reason to limit.
    rate: Option<f64>,
    /// GCRA's theoretical arrival time of the next request.
    tat: f64,
    pause: Option<Pause>,
    /// The last decrease: when, and the rate it decreased from.
    decreased: Option<(f64, f64)>,
    /// When recent requests were sent, for the measured rate.
    sends: VecDeque<f64>,
}

impl Limiter {
    /// A budget of at most `ceiling` requests a second (`f64::INFINITY`: adaptive) and `burst`
    /// at once.
    pub(super) fn new(ceiling: f64, burst: u32) -> Self {
        Limiter {
            ceiling,
            advertised: None,
            burst: f64::from(burst.max(1)),
            rate: ceiling.is_finite().then_some(ceiling),
            tat: 0.0,
            pause: None,
            decreased: None,
            sends: VecDeque::new(),
        }
    }

    /// The rate allowed now, `None` when nothing limits it.
    #[cfg(test)]
    pub(super) fn rate(&self) -> Option<f64> {
        self.rate
    }

    /// The highest rate: the configured one or the advertised one, whichever is lower.
    fn limit(&self) -> f64 {
        self.advertised.map_or(self.ceiling, |rate| rate.min(self.ceiling))
    }

    /// Sets the configured ceiling (a fleet's share while its shared budget is out of reach).
    #[cfg(any(test, feature = "redis"))]
    pub(super) fn set_ceiling(&mut self, ceiling: f64) {
        self.ceiling = ceiling.max(MIN_RATE);
        self.rate = Some(self.rate.map_or(self.limit(), |rate| rate.min(self.limit())));
    }

    /// The pause in force at `now`, if any.
    pub(super) fn pause(&self, now: f64) -> Option<&Pause> {
        self.pause.as_ref().filter(|pause| pause.until > now)
    }

    /// When the next request may go: after any pause, and on the GCRA schedule.
    pub(super) fn next_slot(&self, now: f64) -> f64 {
        let paused = self.pause(now).map_or(now, |pause| pause.until);
        let scheduled = match self.rate {
            Some(rate) => self.tat - (self.burst - 1.0) / rate,
            None => now,
        };
        let slot = paused.max(scheduled);
        if slot - now < RESOLUTION { now } else { slot }
    }

    /// Takes the slot of a request sent at `now` (at or after [`next_slot`](Self::next_slot)).
    pub(super) fn take(&mut self, now: f64) {
        if let Some(rate) = self.rate {
            self.tat = self.tat.max(now) + 1.0 / rate;
        }
        self.record_send(now);
    }

    /// Counts a request sent at `now` for the measured rate (the shared budget's sends too).
    pub(super) fn record_send(&mut self, now: f64) {
        if self.sends.len() == METER_CAPACITY {
            self.sends.pop_front();
        }
        self.sends.push_back(now);
    }

    /// Requests a second sent over the last [`METER_WINDOW`].
    fn measured(&mut self, now: f64) -> f64 {
        while self.sends.front().is_some_and(|&at| at < now - METER_WINDOW) {
            self.sends.pop_front();
        }
        self.sends.len() as f64 / METER_WINDOW
    }

    /// Pauses every request until `until`, for `cause` (kept for requests that will not wait).
    pub(super) fn pause_until(&mut self, until: f64, cause: Option<Error>) {
        if self.pause.as_ref().is_none_or(|pause| pause.until < until) {
            self.pause = Some(Pause { until, cause });
        }
    }

    /// The server advertises `rate` requests a second as its policy.
    pub(super) fn advertise(&mut self, rate: f64) {
        self.advertised = Some(rate.max(MIN_RATE));
        let limit = self.limit();
        self.engage(self.rate.map_or(limit, |current| current.min(limit)));
    }

    /// Limits to `rate` from now on. When nothing limited before, the last request sent takes
    /// its slot, so the next one waits its interval after it: what was sent before the limit
    /// was known counts against it.
    fn engage(&mut self, rate: f64) {
        if self.rate.is_none()
            && let Some(&last) = self.sends.back()
        {
            self.tat = self.tat.max(last + 1.0 / rate);
        }
        self.rate = Some(rate);
    }

    /// The rate the server advertised last, if it did.
    pub(super) fn advertised(&self) -> Option<f64> {
        self.advertised
    }

    /// A throttling answer at `now` to a request sent at `sent_at`: the rate drops to `BETA`
    /// times what was being sent, once per round of requests.
    pub(super) fn throttled(&mut self, now: f64, sent_at: f64) {
        if self.decreased.is_some_and(|(at, _)| sent_at < at || now - at < ROUND) {
            return;
        }
        let measured = self.measured(now).max(MIN_RATE);
        let sending = self.rate.map_or(measured, |rate| rate.min(measured));
        self.decreased = Some((now, sending));
        self.engage((sending * BETA).clamp(MIN_RATE, self.limit().max(MIN_RATE)));
    }

    /// A successful answer at `now`: the rate grows back along the cubic, up to the limit.
    pub(super) fn succeeded(&mut self, now: f64) {
        let (Some(rate), Some((at, last_max))) = (self.rate, self.decreased) else { return };
        let recovery = (last_max * (1.0 - BETA) / SCALE).cbrt();
        let target = SCALE * (now - at - recovery).powi(3) + last_max;
        let measured = self.measured(now);
        // Never faster than twice what is sent, so an idle client does not grow without bound.
        let grown = target.min((2.0 * measured).max(rate));
        self.rate = Some(grown.clamp(MIN_RATE, self.limit().max(MIN_RATE)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sends as soon as allowed from `from` on, `count` times; the send times.
    fn send(limiter: &mut Limiter, from: f64, count: usize) -> Vec<f64> {
        let mut now = from;
        (0..count)
            .map(|_| {
                now = limiter.next_slot(now);
                limiter.take(now);
                now
            })
            .collect()
    }

    #[test]
    fn a_configured_budget_spaces_requests_after_its_burst() {
        let mut limiter = Limiter::new(20.0, 5);
        let times = send(&mut limiter, 10.0, 8);
        assert!(times[..5].iter().all(|&t| t == 10.0), "the burst goes at once: {times:?}");
        for pair in times[4..].windows(2) {
            assert!((pair[1] - pair[0] - 0.05).abs() < 1e-9, "{times:?}");
        }
        let mut smooth = Limiter::new(4.0, 1);
        assert_eq!(send(&mut smooth, 0.0, 3), [0.0, 0.25, 0.5]);
        // Idle for a while: the burst is back, no more.
        let later = send(&mut limiter, 100.0, 6);
        assert_eq!(&later[..5], &[100.0; 5]);
        assert!((later[5] - 100.05).abs() < 1e-9);
    }

    #[test]
    fn a_pause_holds_every_request_and_keeps_its_cause() {
        let mut limiter = Limiter::new(f64::INFINITY, 1);
        assert_eq!(limiter.rate(), None);
        assert_eq!(limiter.next_slot(3.0), 3.0, "adaptive: nothing limits before a signal");
        let cause = Error::invalid("x", "cause");
        limiter.pause_until(4.0, Some(cause));
        limiter.pause_until(3.5, None);
        assert_eq!(limiter.next_slot(3.0), 4.0, "a shorter pause does not shorten it");
        assert!(limiter.pause(3.9).is_some_and(|p| p.cause.is_some()));
        assert!(limiter.pause(4.0).is_none());
    }

    #[test]
    fn a_throttle_cuts_the_rate_once_per_round_and_successes_bring_it_back() {
        let mut limiter = Limiter::new(f64::INFINITY, 1);
        let times = send(&mut limiter, 0.0, 10);
        assert_eq!(times, [0.0; 10]);
        limiter.throttled(0.01, 0.0);
        assert_eq!(limiter.rate(), Some(7.0), "BETA of the 10 sent in the last second");
        // Refusals of the same round do not cut again.
        limiter.throttled(0.02, 0.0);
        assert_eq!(limiter.rate(), Some(7.0));

        // Growing back: K = cbrt(10 * 0.3 / 0.4) ~ 1.96 s after the decrease, near 10 again.
        let mut now = 0.01;
        let mut rates = Vec::new();
        while now < 6.0 {
            now = limiter.next_slot(now);
            limiter.take(now);
            limiter.succeeded(now);
            rates.push((now, limiter.rate().unwrap_or_default()));
        }
        let at = |t: f64| rates.iter().find(|(when, _)| *when >= t).map(|(_, r)| *r).unwrap_or_default();
        assert!(at(1.0) > 7.0 && at(1.0) < 10.0, "{rates:?}");
        assert!((at(2.0) - 10.0).abs() < 0.5, "{rates:?}");
        assert!(at(5.5) > 15.0, "probes above the old rate: {rates:?}");
        // A new round: a request sent after the decrease is a new signal.
        limiter.throttled(now, now - 0.01);
        assert!(limiter.rate().is_some_and(|r| r < at(5.5)));
    }

    #[test]
    fn the_rate_stays_within_the_ceiling_and_the_advertised_policy() {
        let mut limiter = Limiter::new(20.0, 1);
        limiter.advertise(5.0);
        assert_eq!(limiter.rate(), Some(5.0));
        for t in 0..100 {
            limiter.take(f64::from(t) * 0.2);
            limiter.succeeded(f64::from(t) * 0.2);
        }
        assert_eq!(limiter.rate(), Some(5.0));
        limiter.throttled(20.0, 19.9);
        assert!(limiter.rate().is_some_and(|r| (MIN_RATE..5.0).contains(&r)));

        let mut adaptive = Limiter::new(f64::INFINITY, 1);
        adaptive.advertise(20.0);
        assert_eq!(adaptive.rate(), Some(20.0), "an advertised policy paces from the first answer");
        adaptive.set_ceiling(2.5);
        assert_eq!(adaptive.rate(), Some(2.5));
        // A decrease from an idle client stays at the floor, never at zero.
        let mut idle = Limiter::new(f64::INFINITY, 1);
        idle.throttled(50.0, 49.0);
        assert_eq!(idle.rate(), Some(MIN_RATE));
    }
}
