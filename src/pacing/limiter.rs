//! The state of one client's budget, apart from any waiting: when the next request may go
//! (GCRA), pauses after a 429, and the send rate that adapts to the server's answers.
//!
//! The rate follows aws-sdk-rust's adaptive retry mode (CUBIC, as TCP uses it): a throttling
//! answer sets the rate to `BETA` times the rate the client was sending at, and successes then
//! raise it along `SCALE * (t - K)^3 + last_max`, which comes back to the old rate after `K`
//! seconds, stays near it for a while, and probes above it after. Two of TCP's refinements
//! shorten the search: after the first throttle of a client that had no limit, the rate it
//! measured then says little (a burst, or a second of mostly waiting), so the rate doubles every
//! `SLOW_START_STEP` of successes until the next throttle (slow start); and a throttle at or
//! below the rate of the one before sets `last_max` between the two (fast convergence), so the
//! plateau settles under the server's limit instead of on the burst it absorbed. One throttle
//! per round of
//! requests counts: a 429 to a request sent before the last decrease, or within
//! `ROUND` of it, does not decrease again, so that the refusals of one burst are one signal, as
//! TCP counts one loss per window.
//! The rate never exceeds the ceiling (the configured rate, or the server's advertised
//! policy), and an increase never takes it past twice the rate actually sent.
//!
//! Times are seconds since the limiter was made, as `f64`.

use std::collections::VecDeque;

use crate::Error;

/// How much of the sending rate is kept after a throttling answer. aws-sdk-rust keeps 0.7; with
/// a server that pauses every request for whole seconds after each 429, keeping more and
/// settling sooner loses less (`benches/pacing.rs`).
const BETA: f64 = 0.8;
/// While in slow start, the rate doubles after this long without a throttle, in seconds.
const SLOW_START_STEP: f64 = 0.25;
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
    /// The last decrease: when, and the rate the cubic comes back to (`last_max`).
    decreased: Option<(f64, f64)>,
    /// In slow start since this time (the last doubling, or the first throttle).
    slow_start: Option<f64>,
    /// When an adaptive budget began to limit: a throttle of a request sent before then says
    /// nothing about the rate set since.
    engaged_at: Option<f64>,
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
            slow_start: None,
            engaged_at: None,
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
        match &mut self.pause {
            // The same pause again: a server's 429 takes the place of a cause made up before it.
            Some(pause) if pause.until == until => {
                if cause.is_some() {
                    pause.cause = cause;
                }
            }
            Some(pause) if pause.until > until => {}
            _ => self.pause = Some(Pause { until, cause }),
        }
    }

    /// The server advertises `rate` requests a second as its policy, in an answer read at `now`.
    pub(super) fn advertise(&mut self, rate: f64, now: f64) {
        self.advertised = Some(rate.max(MIN_RATE));
        let limit = self.limit();
        self.engage(self.rate.map_or(limit, |current| current.min(limit)), now);
    }

    /// Limits to `rate` from now on. When nothing limited before, the last request sent takes
    /// its slot, so the next one waits its interval after it: what was sent before the limit
    /// was known counts against it.
    fn engage(&mut self, rate: f64, now: f64) {
        if self.rate.is_none() {
            self.engaged_at = Some(now);
            if let Some(&last) = self.sends.back() {
                self.tat = self.tat.max(last + 1.0 / rate);
            }
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
        let stale = self.engaged_at.is_some_and(|at| sent_at < at);
        if stale || self.decreased.is_some_and(|(at, _)| sent_at < at || now - at < ROUND) {
            return;
        }
        let measured = self.measured(now).max(MIN_RATE);
        let sending = self.rate.map_or(measured, |rate| rate.min(measured));
        let last_max = match self.decreased {
            Some((_, before)) if sending <= before * 1.05 => sending * (1.0 + BETA) / 2.0,
            _ => sending,
        };
        self.slow_start = self.rate.is_none().then_some(now);
        self.decreased = Some((now, last_max));
        self.engage((sending * BETA).clamp(MIN_RATE, self.limit().max(MIN_RATE)), now);
    }

    /// A successful answer at `now`: the rate grows back along the cubic (or doubles, in slow
    /// start), up to the limit.
    pub(super) fn succeeded(&mut self, now: f64) {
        let (Some(rate), Some((at, last_max))) = (self.rate, self.decreased) else { return };
        if let Some(since) = self.slow_start {
            let paused = self.pause.as_ref().map_or(since, |pause| pause.until.max(since));
            if now - paused >= SLOW_START_STEP {
                self.slow_start = Some(now);
                self.rate = Some((rate * 2.0).min(self.limit()));
            }
            return;
        }
        let recovery = (last_max * (1.0 - BETA) / SCALE).cbrt();
        let target = SCALE.mul_add((now - at - recovery).powi(3), last_max);
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

    /// A backlogged client: sends as soon as allowed until `until`, each answer a success;
    /// the rate after each.
    fn drive(limiter: &mut Limiter, from: f64, until: f64) -> Vec<(f64, f64)> {
        let mut now = from;
        let mut rates = Vec::new();
        loop {
            now = limiter.next_slot(now);
            if now >= until {
                return rates;
            }
            limiter.take(now);
            limiter.succeeded(now);
            rates.push((now, limiter.rate.unwrap_or_default()));
        }
    }

    fn rate_at(rates: &[(f64, f64)], t: f64) -> f64 {
        rates.iter().rev().find(|(when, _)| *when <= t).map(|(_, rate)| *rate).unwrap_or_default()
    }

    #[test]
    fn a_throttle_cuts_the_rate_once_per_round_then_slow_start_then_the_cubic() {
        let mut limiter = Limiter::new(f64::INFINITY, 1);
        assert_eq!(send(&mut limiter, 0.0, 10), [0.0; 10]);
        limiter.throttled(0.01, 0.0);
        assert_eq!(limiter.rate(), Some(8.0), "BETA of the 10 sent in the last second");
        // Refusals of the same round do not cut again.
        limiter.throttled(0.02, 0.0);
        assert_eq!(limiter.rate(), Some(8.0));

        // The first throttle of a client without a limit: slow start, doubling every 0.25 s.
        let rates = drive(&mut limiter, 0.01, 1.0);
        assert_eq!(rate_at(&rates, 0.2), 8.0, "{rates:?}");
        assert_eq!(rate_at(&rates, 0.4), 16.0, "{rates:?}");
        assert_eq!(rate_at(&rates, 0.99), 64.0, "{rates:?}");

        // The next throttle ends it: down to BETA of what was sent, then the cubic, which
        // comes back to that rate after K = cbrt(last_max * (1 - BETA) / SCALE) seconds and
        // probes above it after.
        limiter.throttled(1.0, 0.99);
        let (_, last_max) = limiter.decreased.expect("a decrease");
        assert!(BETA.mul_add(-last_max, limiter.rate().unwrap_or_default()).abs() < 1e-9);
        let recovery = (last_max * (1.0 - BETA) / SCALE).cbrt();
        let rates = drive(&mut limiter, 1.0, 1.0 + recovery + 3.0);
        let back = rate_at(&rates, 1.0 + recovery);
        assert!(rate_at(&rates, 1.5) < last_max && rate_at(&rates, 1.5) > BETA * last_max, "{rates:?}");
        assert!((back - last_max).abs() < 0.5, "back near {last_max} after {recovery} s: {rates:?}");
        assert!(rate_at(&rates, 1.0 + recovery + 2.9) > last_max + 2.0, "probes above: {rates:?}");

        // A throttle at about the same rate again: the plateau settles between the two.
        let now = 1.0 + recovery + 0.1;
        let mut again = Limiter::new(f64::INFINITY, 1);
        again.rate = Some(last_max);
        again.decreased = Some((0.0, last_max));
        drive(&mut again, now - 1.0, now);
        again.throttled(now, now - 0.01);
        let (_, settled) = again.decreased.expect("a decrease");
        assert!(settled < last_max && settled > BETA * last_max, "{settled} against {last_max}");
    }

    #[test]
    fn the_rate_stays_within_the_ceiling_and_the_advertised_policy() {
        let mut limiter = Limiter::new(20.0, 1);
        limiter.advertise(5.0, 0.0);
        assert_eq!(limiter.rate(), Some(5.0));
        for t in 0..100 {
            limiter.take(f64::from(t) * 0.2);
            limiter.succeeded(f64::from(t) * 0.2);
        }
        assert_eq!(limiter.rate(), Some(5.0));
        limiter.throttled(20.0, 19.9);
        assert!(limiter.rate().is_some_and(|r| (MIN_RATE..5.0).contains(&r)));

        let mut adaptive = Limiter::new(f64::INFINITY, 1);
        adaptive.advertise(20.0, 0.0);
        assert_eq!(adaptive.rate(), Some(20.0), "an advertised policy paces from the first answer");
        adaptive.set_ceiling(2.5);
        assert_eq!(adaptive.rate(), Some(2.5));
        // Refusals of requests sent before the policy was known say nothing about it.
        let mut fresh = Limiter::new(f64::INFINITY, 1);
        send(&mut fresh, 0.0, 8);
        fresh.advertise(20.0, 0.005);
        fresh.throttled(0.01, 0.0);
        assert_eq!(fresh.rate(), Some(20.0));
        // A decrease from an idle client stays at the floor, never at zero.
        let mut idle = Limiter::new(f64::INFINITY, 1);
        idle.throttled(50.0, 49.0);
        assert_eq!(idle.rate(), Some(MIN_RATE));
    }
}
