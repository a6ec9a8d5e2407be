//! The state of one client's budget, apart from any waiting, as a model a reader can check:
//! five quantities, and one method per event that changes them and returns its decision.
//!
//! | Quantity | What it holds |
//! |---|---|
//! | the limit | the configured ceiling, the server's advertised policy, this process's share |
//! | the [`Curve`] | the rate between two refusals, and when it was last decided |
//! | the [`Bucket`] | requests that may go at once, and the tokens in it |
//! | the [`Pause`] | until when every request waits, and the answer that asked |
//! | the [`Meter`] | what the client sent and what the server accepted |
//!
//! | Event | Decision |
//! |---|---|
//! | [`take`](Limiter::take): a request asks to go | now, or when to ask again |
//! | [`accepted`](Limiter::accepted): an answer the server did not refuse | counted |
//! | [`throttled`](Limiter::throttled): a 429, a quota spent | a pause; once a round, a lower rate or burst |
//! | [`advertise`](Limiter::advertise): the server's `RateLimit-Policy` | a ceiling, paced from now |
//! | [`fleet_paused`](Limiter::fleet_paused): a shared budget's pause | a refusal, unless the client's own |
//!
//! The rules are the tests at the end of this file: properties over random sequences of events
//! (a configured rate is never exceeded, a refusal is never ignored, the rate recovers after
//! a pause, ...) and examples of each rule with its numbers. Times are seconds since the
//! limiter was made, as `f64`.

use std::collections::VecDeque;

use crate::Error;

/// The time the rate of a slow start takes to double, in seconds; a refusal of a request sent
/// within a step of the rate's last change says nothing of that rate.
const STEP: f64 = 0.25;
/// The part of the sustained rate a refusal sets the rate to.
const MARGIN: f64 = 0.95;
/// How fast the rate grows after a refusal: by `PROBE * t³` requests a second after `t`
/// seconds (CUBIC's curve, slowly at first: 1.25 after five seconds, 10 after ten).
const PROBE: f64 = 0.01;
/// The lowest rate, in requests per second.
const MIN_RATE: f64 = 0.5;
/// The highest, so that no arithmetic meets an infinity.
const MAX_RATE: f64 = 1e6;
/// The window over which the rate the server accepts is measured, in seconds.
const METER_WINDOW: f64 = 0.5;
/// Waits shorter than this are none: the clock has nanoseconds, and rounding must not leave a
/// request waiting for a wait too short to sleep.
const RESOLUTION: f64 = 1e-6;

/// The rate from `since` on: `from`, doubling every [`STEP`] in a slow start, else growing
/// along the cubic.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Curve {
    from: f64,
    since: f64,
    slow_start: bool,
}

/// A token bucket: `size` requests may go at once after an idle time (at least one; below one
/// while a refused burst's answers are still being counted), `tokens` in it when `counted`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Bucket {
    size: f64,
    tokens: f64,
    counted: f64,
}

impl Bucket {
    /// Takes a token at `now` from a bucket that fills at `rate`: `None`, or the wait until
    /// the next one, taking none.
    fn take(&mut self, now: f64, rate: f64) -> Option<f64> {
        self.tokens = (now - self.counted).max(0.0).mul_add(rate, self.tokens).min(self.size.max(1.0));
        self.counted = self.counted.max(now);
        if self.tokens < 1.0 - RESOLUTION {
            return Some((1.0 - self.tokens) / rate);
        }
        self.tokens -= 1.0;
        None
    }
}

/// Every request waits until `until`, for `cause` (the answer that asked, kept for requests
/// that will not wait).
#[derive(Debug, Clone)]
pub(super) struct Pause {
    pub(super) until: f64,
    pub(super) cause: Option<Error>,
}

/// What the client sent and the server accepted.
#[derive(Debug, Clone)]
struct Meter {
    /// The client's last send, and the last time a request waited for the rate (not for a
    /// pause): until a step later, the client sends at its rate.
    sent: f64,
    waited: f64,
    /// When the client last resumed sending (a pause's end, or its first send after a gap of
    /// [`METER_WINDOW`]; never before its first send), and the answers the server accepted
    /// since to requests sent since.
    resumed: f64,
    accepted_since: f64,
    /// When the answers the server accepted over the last [`METER_WINDOW`] were read.
    answers: VecDeque<f64>,
}

impl Meter {
    /// Answers accepted over the last [`METER_WINDOW`] before `now`; older ones are forgotten.
    fn recent(&mut self, now: f64) -> f64 {
        while self.answers.front().is_some_and(|&at| at < now - METER_WINDOW) {
            self.answers.pop_front();
        }
        self.answers.len() as f64
    }
}

/// The budget's state.
#[derive(Debug, Clone)]
pub(super) struct Limiter {
    /// The limit: the highest rate configured (`f64::INFINITY` when adaptive), the rate the
    /// server's `RateLimit-Policy` advertises, and the part of the rate this process takes (1,
    /// or while a shared budget is out of reach the number of processes sharing it).
    ceiling: f64,
    pub(super) advertised: Option<f64>,
    pub(super) share: f64,
    /// `None` while an adaptive budget has had no reason to limit; and when the rate was last
    /// decided.
    curve: Option<Curve>,
    decided: f64,
    bucket: Bucket,
    pause: Pause,
    meter: Meter,
}

impl Limiter {
    /// A budget of at most `ceiling` requests a second (`f64::INFINITY`: adaptive) and `burst`
    /// at once, of which half are kept in hand.
    pub(super) fn new(ceiling: f64, burst: u32) -> Self {
        let size = f64::from((burst / 2).max(1));
        Limiter {
            ceiling,
            advertised: None,
            share: 1.0,
            curve: ceiling.is_finite().then_some(Curve { from: ceiling, since: 0.0, slow_start: false }),
            decided: f64::NEG_INFINITY,
            bucket: Bucket { size, tokens: size, counted: 0.0 },
            pause: Pause { until: f64::NEG_INFINITY, cause: None },
            meter: Meter {
                sent: f64::NEG_INFINITY,
                waited: f64::NEG_INFINITY,
                resumed: f64::INFINITY,
                accepted_since: 0.0,
                answers: VecDeque::new(),
            },
        }
    }

    /// The rate at `now` for the whole budget (every process of a shared one), `None` when
    /// nothing limits it: the curve's, within the ceiling and the advertised policy, and at
    /// least [`MIN_RATE`] (or the configured rate, when that is lower).
    pub(super) fn rate(&self, now: f64) -> Option<f64> {
        let Curve { from, since, slow_start } = self.curve?;
        let t = (now - since).max(0.0);
        let rate = if slow_start {
            from.max(MIN_RATE) * (t / STEP).floor().min(64.0).exp2()
        } else {
            PROBE.mul_add(t.powi(3), from)
        };
        let limit = self.advertised.map_or(self.ceiling, |rate| rate.min(self.ceiling)).min(MAX_RATE);
        Some(rate.clamp(MIN_RATE.min(limit), limit))
    }

    /// The pause in force at `now`, if one is.
    pub(super) fn pause(&self, now: f64) -> Option<&Pause> {
        (self.pause.until > now).then_some(&self.pause)
    }

    /// A request asks to go at `now`: it takes a token and `now` is returned, or it takes none
    /// and the time to ask again is (the end of a pause at the soonest).
    pub(super) fn take(&mut self, now: f64) -> f64 {
        if let Some(pause) = self.pause(now) {
            return pause.until;
        }
        let rate = self.rate(now).map(|rate| rate / self.share);
        if let Some(wait) = rate.and_then(|rate| self.bucket.take(now, rate)) {
            self.meter.waited = now;
            return now + wait;
        }
        if now - self.meter.sent > METER_WINDOW {
            (self.meter.resumed, self.meter.accepted_since) = (now, 0.0);
        }
        self.meter.sent = now;
        now
    }

    /// An answer the server did not refuse, read at `now`, to a request sent at `sent`. One
    /// to the burst that started a slow start, read after its refusal, counts in its rate.
    pub(super) fn accepted(&mut self, now: f64, sent: f64) {
        if let Some(curve) = self.curve.as_mut().filter(|curve| curve.slow_start && sent < self.decided) {
            curve.from += 1.0 / (curve.since - self.decided);
            self.bucket.size += 1.0;
        }
        if sent >= self.meter.resumed {
            self.meter.accepted_since += 1.0;
        }
        self.meter.answers.push_back(now);
        self.meter.recent(now);
    }

    /// Pauses every request until `until`, for `cause` (a server's 429 takes the place of a
    /// cause made up for the same pause). The client resumes sending then.
    pub(super) fn pause_until(&mut self, until: f64, cause: Option<Error>) {
        if until > self.pause.until || (until == self.pause.until && cause.is_some()) {
            self.pause = Pause { until, cause };
            (self.meter.resumed, self.meter.accepted_since) = (until, 0.0);
        }
    }

    /// The server advertises `rate` requests a second as its policy, in an answer read at
    /// `now`: a ceiling, and an adaptive budget paces from now on.
    pub(super) fn advertise(&mut self, rate: f64, now: f64) {
        self.advertised = Some(rate.max(MIN_RATE));
        if self.curve.is_none() {
            self.engage(Curve { from: MAX_RATE, since: now, slow_start: false }, now);
        }
    }

    /// Sets the rate from `now` on. When nothing limited before, the bucket starts empty: what
    /// was sent before the limit was known counts against it.
    fn engage(&mut self, curve: Curve, now: f64) {
        if self.curve.is_none() {
            (self.bucket.tokens, self.bucket.counted) = (0.0, now);
        }
        self.curve = Some(curve);
        self.decided = now;
    }

    /// A refusal read at `now` of a request sent at `sent`, asking for `quiet` seconds before
    /// the next request (a 429's `Retry-After`, a spent quota's reset): a pause of every request
    /// for `quiet`, `cause` kept for those that will not wait, and once a round (a request sent
    /// a [`STEP`] after the rate's last change) a lower rate or burst.
    pub(super) fn throttled(&mut self, now: f64, sent: f64, quiet: Option<f64>, cause: Option<Error>) {
        let recent = self.meter.recent(now);
        let Meter { waited, resumed, accepted_since, .. } = self.meter;
        if let Some(quiet) = quiet.filter(|quiet| *quiet > 0.0) {
            self.pause_until(now + quiet, cause);
        }
        if sent < self.decided + STEP {
            return;
        }
        let base = match self.rate(sent - STEP) {
            // A configured rate backs off from itself: the answers a client reads may be its
            // share of a fleet's.
            Some(held) if self.ceiling.is_finite() => held,
            // Refused as it resumed sending: it sent too many at once, not too fast (with a
            // burst of one, other clients of the server are sending too: the rate goes down).
            Some(_) if sent < resumed + STEP && self.bucket.size > 1.0 => {
                (self.bucket.size, self.decided) = ((self.bucket.size - 1.0).max(1.0), now);
                return;
            }
            // The rate it held a step before, or, when its requests were not waiting for that
            // rate, what the server accepted since it resumed if that is lower: so a rate the
            // client never used is not taken for sustained.
            Some(held) if now - waited < STEP || now - resumed < METER_WINDOW => held,
            Some(held) => held.min(((accepted_since - self.bucket.size.max(1.0)) / (now - resumed)).max(0.0)),
            // No rate yet, sent through the last window unpaused: what the server accepted.
            None if resumed <= now - METER_WINDOW => recent / METER_WINDOW,
            // No rate yet: a refused burst. As many requests per `Retry-After` as the server
            // took at once (none: a second), doubling every step; a `Retry-After: 0` says
            // nothing of a rate.
            None => {
                self.decided = now;
                let quiet = quiet.unwrap_or(1.0);
                if quiet > 0.0 {
                    self.bucket.size = recent - 1.0;
                    self.engage(Curve { from: recent / quiet, since: now + quiet, slow_start: true }, now);
                }
                return;
            }
        };
        let since = now + quiet.unwrap_or(0.0);
        self.engage(Curve { from: MARGIN * base, since, slow_start: false }, now);
    }

    /// What to ask a shared budget for at `now`: a slot at the rate and burst, unless a pause
    /// is in force or nothing limits the client.
    #[cfg(any(feature = "redis", test))]
    pub(super) fn fleet_slot(&self, now: f64) -> Option<(f64, f64)> {
        let rate = self.rate(now).filter(|_| self.pause(now).is_none())?;
        Some((rate, self.bucket.size.max(1.0)))
    }

    /// The fleet is paused for `wait` seconds from `now`: a refusal for this client too, unless
    /// it is the pause this client asked for (which ends about when its own did).
    #[cfg(any(feature = "redis", test))]
    pub(super) fn fleet_paused(&mut self, now: f64, wait: f64) {
        if now + wait > self.pause.until + STEP {
            self.throttled(now, now, Some(wait), None);
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use proptest::test_runner::{TestCaseError, TestCaseResult as TestResult};

    use super::*;

    /// Sends as soon as allowed from `from` on, `count` times; the send times.
    fn send(limiter: &mut Limiter, from: f64, count: usize) -> Vec<f64> {
        let mut now = from;
        (0..count)
            .map(|_| {
                loop {
                    let at = limiter.take(now);
                    if at == now {
                        break now;
                    }
                    now = at;
                }
            })
            .collect()
    }

    /// A backlogged client from `from` to `until`: sends as soon as allowed (at most ten
    /// thousand a second), each answer accepted at once.
    fn drive(limiter: &mut Limiter, from: f64, until: f64) {
        let mut now = from;
        while now < until {
            now = send(limiter, now, 1)[0];
            limiter.accepted(now, now);
            now += 1e-4;
        }
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-6)
    }

    #[test]
    fn a_configured_budget_keeps_half_of_its_burst_in_hand() {
        let mut limiter = Limiter::new(20.0, 5);
        let times = send(&mut limiter, 10.0, 8);
        assert!(times[..2].iter().all(|&t| t == 10.0), "two of the five at once: {times:?}");
        for pair in times[1..].windows(2) {
            assert!((pair[1] - pair[0] - 0.05).abs() < 1e-9, "then 50 ms apart: {times:?}");
        }
        let mut smooth = Limiter::new(4.0, 1);
        assert_eq!(send(&mut smooth, 0.0, 3), [0.0, 0.25, 0.5], "a burst of 1 keeps nothing back");
        // Idle for a while: the burst is back, no more.
        let later = send(&mut limiter, 100.0, 3);
        assert_eq!(later, [100.0, 100.0, 100.05]);
    }

    #[test]
    fn a_pause_holds_every_request_and_keeps_its_cause() {
        let mut limiter = Limiter::new(f64::INFINITY, 1);
        assert_eq!(limiter.rate(3.0), None);
        assert_eq!(limiter.take(3.0), 3.0, "adaptive: nothing limits before a signal");
        let cause = Error::invalid("x", "cause");
        limiter.pause_until(4.0, Some(cause));
        limiter.pause_until(3.5, None);
        limiter.pause_until(4.0, None);
        assert_eq!(limiter.take(3.0), 4.0, "a shorter pause does not shorten it");
        assert!(
            limiter.pause(3.9).is_some_and(|pause| pause.cause.is_some()),
            "nor one made up lose its cause"
        );
        assert!(limiter.pause(4.0).is_none());
    }

    #[test]
    fn a_refused_burst_starts_a_slow_start_at_what_the_server_took_per_retry_after() {
        let mut limiter = Limiter::new(f64::INFINITY, 1);
        assert_eq!(send(&mut limiter, 0.0, 8), [0.0; 8]);
        for _ in 0..5 {
            limiter.accepted(0.01, 0.0);
        }
        // Three refusals of one burst, `Retry-After: 1`: one signal.
        for _ in 0..3 {
            limiter.throttled(0.01, 0.0, Some(1.0), None);
        }
        assert!(close(limiter.rate(0.5), 5.0), "five a second: {:?}", limiter.rate(0.5));
        assert!(
            close(limiter.rate(1.2), 5.0) && close(limiter.rate(1.3), 10.0) && close(limiter.rate(1.8), 40.0)
        );
        let until = limiter.pause(0.5).map(|pause| pause.until);
        assert!(close(until, 1.01));
        assert_eq!(send(&mut limiter, 0.5, 1), [until.unwrap_or_default()]);

        // The next refusal, sent at 80 a second: back to 95% of the 40 held a step before, or
        // of what the server accepted over the last half second when that is less.
        drive(&mut limiter, 1.01, 2.1);
        limiter.throttled(2.1, 2.09, Some(1.0), None);
        let rate = limiter.rate(3.1).unwrap_or_default();
        assert!(rate <= 0.95f64.mul_add(40.0, 1e-9) && rate > 20.0, "{rate}");
    }

    #[test]
    fn answers_to_the_refused_burst_read_after_its_refusal_count_in_its_rate() {
        let mut limiter = Limiter::new(f64::INFINITY, 1);
        send(&mut limiter, 0.0, 8);
        for _ in 0..3 {
            limiter.accepted(0.01, 0.0);
        }
        // `Retry-After: 2`: three per two seconds so far, and a burst of two.
        limiter.throttled(0.01, 0.0, Some(2.0), None);
        assert!(close(limiter.rate(1.0), 1.5) && limiter.bucket.size == 2.0, "{limiter:?}");
        // Two more answers to the burst: five per two seconds, as if read before the refusal.
        limiter.accepted(0.02, 0.0);
        limiter.accepted(0.03, 0.0);
        assert!(close(limiter.rate(1.0), 2.5) && limiter.bucket.size == 4.0, "{limiter:?}");
        // An answer to a request sent after the refusal is not of the burst.
        limiter.accepted(2.5, 2.01);
        assert!(close(limiter.rate(1.0), 2.5) && limiter.bucket.size == 4.0, "{limiter:?}");
    }

    #[test]
    fn a_refusal_as_the_client_resumes_lowers_its_burst_not_its_rate() {
        let mut limiter = Limiter::new(f64::INFINITY, 1);
        send(&mut limiter, 0.0, 8);
        for _ in 0..5 {
            limiter.accepted(0.01, 0.0);
        }
        limiter.throttled(0.01, 0.0, Some(1.0), None);
        assert_eq!(limiter.bucket.size, 4.0, "one fewer than the server took at once");
        // The pause ends at 1.01; the first requests after it are refused.
        let slow_start = limiter.rate(2.02);
        limiter.throttled(1.02, 1.01, Some(1.0), None);
        assert_eq!(limiter.bucket.size, 3.0);
        assert_eq!(limiter.rate(2.02), slow_start, "the rate holds");
        // With a burst of one, the rate is what was too much: other clients are sending too. It
        // backs off from the 40 a second it held a step before.
        limiter.bucket.size = 1.0;
        limiter.throttled(2.05, 2.03, Some(1.0), None);
        assert!(close(limiter.rate(3.05), 0.95 * 40.0), "{:?}", limiter.rate(3.05));
    }

    #[test]
    fn a_retry_after_of_zero_before_any_rate_costs_nothing() {
        let mut limiter = Limiter::new(f64::INFINITY, 1);
        send(&mut limiter, 0.0, 2);
        limiter.accepted(0.005, 0.0);
        limiter.throttled(0.01, 0.005, Some(0.0), None);
        assert_eq!(limiter.rate(0.01), None);
        assert_eq!(send(&mut limiter, 0.01, 3), [0.01; 3]);
        // Refused again and again: once the client has sent for half a second, the rate it
        // backs off from is what the server accepted, which is nothing.
        limiter.throttled(0.6, 0.59, Some(0.0), None);
        assert!(close(limiter.rate(0.6), MIN_RATE), "{:?}", limiter.rate(0.6));

        // A client that sent unpaused for longer than a window, refused with `Retry-After: 0`
        // within the last one (no pause: the meter goes on), backs off from what the server
        // accepted over the last half second: four answers, eight a second.
        let mut steady = Limiter::new(f64::INFINITY, 1);
        for n in 0..6 {
            let at = f64::from(n) * 0.125;
            steady.take(at);
            steady.accepted(at, at);
            if n == 3 {
                steady.throttled(at, at, Some(0.0), None);
            }
        }
        steady.take(0.75);
        steady.throttled(0.75, 0.75, Some(1.0), None);
        assert!(close(steady.rate(1.75), 0.95 * 4.0 / 0.5), "{:?}", steady.rate(1.75));
    }

    #[test]
    fn a_client_waiting_for_its_rate_backs_off_from_that_rate() {
        // Backlogged at an advertised 50 a second, half of its answers not back yet: it waited
        // for the rate a moment ago, so the rate it held is its sustained one, not the 25 a
        // second the meter counted.
        let mut limiter = Limiter::new(f64::INFINITY, 1);
        limiter.advertise(50.0, 0.0);
        let mut last = 0.0;
        for n in 0..100 {
            last = send(&mut limiter, last, 1)[0];
            if n % 2 == 0 {
                limiter.accepted(last, last);
            }
        }
        limiter.throttled(last + 0.01, last, Some(1.0), None);
        assert!(close(limiter.rate(last + 1.01), 0.95 * 50.0), "{:?}", limiter.rate(last + 1.01));
    }

    #[test]
    fn a_refusal_lowers_a_configured_rate_a_little_and_it_comes_back_slowly() {
        let mut limiter = Limiter::new(20.0, 5);
        drive(&mut limiter, 0.0, 10.0);
        limiter.throttled(10.0, 9.99, Some(1.0), None);
        assert!(close(limiter.rate(11.0), 19.0), "{:?}", limiter.rate(11.0));
        // A refusal of a request sent before is of the same round.
        limiter.throttled(10.01, 9.995, Some(1.0), None);
        assert!(close(limiter.rate(11.0), 19.0));
        // The cubic: 0.01 a second more after a second, 1.25 after five, never above the ceiling.
        assert!(close(limiter.rate(12.0), 19.01));
        assert!(close(limiter.rate(16.0), 20.0) && close(limiter.rate(60.0), 20.0));
        // A client that sends less than its rate backs off from what it sends.
        let mut idle = Limiter::new(f64::INFINITY, 1);
        idle.advertise(50.0, 0.0);
        for t in 0..20 {
            let at = f64::from(t) * 0.1;
            idle.take(at);
            idle.accepted(at, at);
        }
        idle.throttled(2.0, 1.95, Some(1.0), None);
        // Nineteen answers since it resumed at 0.1 s, less its burst of one, over 1.9 s.
        assert!(close(idle.rate(3.0), 0.95 * 18.0 / 1.9), "{:?}", idle.rate(3.0));
        // A configured rate backs off from itself: its answers may be a fleet's part.
        let mut fleet = Limiter::new(20.0, 1);
        send(&mut fleet, 0.0, 1);
        fleet.throttled(2.0, 1.95, Some(1.0), None);
        assert!(close(fleet.rate(3.0), 19.0), "{:?}", fleet.rate(3.0));
        // The fleet's pause it asked for, read when its own ends, is the same refusal; another
        // process's is a refusal for it too.
        fleet.fleet_paused(3.0, 0.01);
        assert!(close(fleet.rate(3.0), 19.0), "{:?}", fleet.rate(3.0));
        fleet.fleet_paused(4.0, 1.0);
        assert!(fleet.rate(5.0).is_some_and(|rate| (rate - 18.05).abs() < 0.01), "{:?}", fleet.rate(5.0));
    }

    #[test]
    fn the_rate_stays_within_the_ceiling_and_the_advertised_policy() {
        let mut limiter = Limiter::new(20.0, 1);
        limiter.advertise(5.0, 0.0);
        assert_eq!(limiter.rate(0.0), Some(5.0));
        drive(&mut limiter, 0.0, 20.0);
        assert_eq!(limiter.rate(20.0), Some(5.0));
        limiter.throttled(20.0, 19.9, None, None);
        assert!(limiter.rate(21.0).is_some_and(|r| (MIN_RATE..5.0).contains(&r)));

        let mut adaptive = Limiter::new(f64::INFINITY, 1);
        adaptive.advertise(20.0, 0.0);
        assert_eq!(adaptive.rate(0.0), Some(20.0), "an advertised policy paces from the first answer");
        adaptive.share = 8.0;
        assert_eq!(send(&mut adaptive, 1.0, 2), [1.0, 1.4], "a share of the rate: 2.5 a second");
        // Refusals of requests sent before the policy was known say nothing about it.
        let mut fresh = Limiter::new(f64::INFINITY, 1);
        send(&mut fresh, 0.0, 8);
        fresh.advertise(20.0, 0.005);
        fresh.throttled(0.01, 0.0, Some(1.0), None);
        assert_eq!(fresh.rate(5.0), Some(20.0));
        // Nothing sent, nothing accepted: the floor, never zero.
        let mut idle = Limiter::new(f64::INFINITY, 1);
        idle.throttled(50.0, 49.0, None, None);
        assert_eq!(idle.rate(50.0), Some(MIN_RATE));
    }

    /// An event of a client's life.
    #[derive(Debug, Clone)]
    enum Event {
        /// A request asks to go, and is sent as soon as the limiter allows.
        Send,
        /// The oldest request in flight is answered, and accepted.
        Accept,
        /// ... refused, with this `Retry-After` (`None`: a 429 without one).
        Refuse(Option<f64>),
        /// An answer advertises a policy of this many requests a second.
        Advertise(f64),
        /// A shared budget says the fleet is paused for this long.
        FleetPause(f64),
    }

    /// Events, each a moment after the last: at once, within a step or two, or after a pause.
    fn events() -> impl Strategy<Value = Vec<(f64, Event)>> {
        let after = prop_oneof![3 => Just(0.0), 4 => 0.0..0.3, 1 => 0.0..3.0];
        let quiet = prop_oneof![Just(0.0), 0.001..2.0];
        let event = prop_oneof![
            10 => Just(Event::Send),
            8 => Just(Event::Accept),
            3 => proptest::option::of(quiet).prop_map(Event::Refuse),
            1 => (0.01..100.0).prop_map(Event::Advertise),
            1 => (0.0..2.0).prop_map(Event::FleetPause),
        ];
        proptest::collection::vec((after, event), 1..200)
    }

    fn sent_or_accepted() -> impl Strategy<Value = Event> {
        prop_oneof![Just(Event::Send), Just(Event::Accept)]
    }

    /// A configured rate (from one a minute to a hundred a second) and burst, or adaptive.
    fn budget() -> impl Strategy<Value = Limiter> {
        let ceiling = prop_oneof![Just(f64::INFINITY), 1.0 / 60.0..1.0, 1.0..100.0];
        (ceiling, 1u32..10).prop_map(|(ceiling, burst)| Limiter::new(ceiling, burst))
    }

    /// A client under `limiter`, driven by events: the time, and the send times of the
    /// requests in flight.
    struct Client {
        limiter: Limiter,
        now: f64,
        in_flight: VecDeque<f64>,
    }

    /// What an event did: for a request, when it asked and when it went; for an answer, the
    /// limiter before it and the request's send time.
    enum Outcome {
        Sent { asked: f64, at: f64 },
        Answered { before: Box<Limiter>, sent: f64 },
        Other,
    }

    impl Client {
        fn new(limiter: Limiter) -> Client {
            Client { limiter, now: 0.0, in_flight: VecDeque::new() }
        }

        fn apply(&mut self, (after, event): &(f64, Event)) -> Result<Outcome, TestCaseError> {
            self.now += after;
            let (asked, limiter) = (self.now, &mut self.limiter);
            let answered =
                matches!(event, Event::Accept | Event::Refuse(_)).then(|| self.in_flight.pop_front());
            let before = Box::new(limiter.clone());
            match (event, answered) {
                (Event::Send, _) => {
                    // A request asks once, then at most once more after a pause and once for
                    // a token: it never waits for anything else.
                    for _ in 0..3 {
                        let at = limiter.take(self.now);
                        if at == self.now {
                            self.in_flight.push_back(at);
                            return Ok(Outcome::Sent { asked, at });
                        }
                        self.now = at;
                    }
                    Err(TestCaseError::fail(format!("asked at {asked}, still waiting at {}", self.now)))
                }
                (Event::Accept, Some(Some(sent))) => {
                    limiter.accepted(self.now, sent);
                    Ok(Outcome::Answered { before, sent })
                }
                (Event::Refuse(quiet), Some(Some(sent))) => {
                    limiter.throttled(self.now, sent, *quiet, Some(Error::invalid("429", "refused")));
                    Ok(Outcome::Answered { before, sent })
                }
                (Event::Advertise(rate), _) => {
                    limiter.advertise(*rate, self.now);
                    Ok(Outcome::Other)
                }
                (Event::FleetPause(wait), _) => {
                    limiter.fleet_paused(self.now, *wait);
                    Ok(Outcome::Other)
                }
                _ => Ok(Outcome::Other),
            }
        }
    }

    /// The highest rate `limiter` may go at now: its ceiling, or the server's advertised policy
    /// when lower (a server cannot slow it below [`MIN_RATE`]).
    fn limit(limiter: &Limiter) -> f64 {
        let advertised = limiter.advertised.map_or(f64::INFINITY, |rate| rate.max(MIN_RATE));
        limiter.ceiling.min(advertised)
    }

    /// What a refusal read at `now` of a request sent at `sent` with `Retry-After: quiet`
    /// must have done to the limiter `before` it: a pause for `quiet` with the refusal as its
    /// cause (unless a longer pause is in force); and once a round, a rate [`MARGIN`] times the
    /// one held a step before (at least the floor) or a burst one smaller, or, for an adaptive
    /// budget without a rate, a rate unless the refusal said `Retry-After: 0`. A refusal of a
    /// request sent within a step of the last change leaves the rate and the burst as they
    /// were.
    fn refusal_heeded(
        before: &Limiter,
        after: &Limiter,
        now: f64,
        sent: f64,
        quiet: Option<f64>,
    ) -> TestResult {
        if let Some(end) = quiet.filter(|quiet| *quiet > 0.0).map(|quiet| now + quiet) {
            let pause = after.pause(now);
            let kept = |pause: &Pause| pause.until > end || (pause.until == end && pause.cause.is_some());
            prop_assert!(pause.is_some_and(kept), "{pause:?}");
        }
        let (same_rate, size) = (after.curve == before.curve, before.bucket.size);
        if sent < before.decided + STEP {
            prop_assert!(same_rate && after.bucket.size == size, "one a round: {before:?}, {after:?}");
        } else if let Some(held) = before.rate(sent - STEP) {
            let lowered = (MARGIN * held).max(MIN_RATE.min(before.ceiling));
            let lower = after.rate(now + quiet.unwrap_or(0.0)).is_some_and(|rate| rate <= lowered + 1e-9);
            let fewer = same_rate && after.bucket.size == (size - 1.0).max(1.0);
            prop_assert!(lower || fewer, "sent at {sent}: {before:?}, {after:?}");
        } else {
            prop_assert!(after.rate(now).is_some() || quiet == Some(0.0), "{after:?}");
        }
        Ok(())
    }

    proptest::proptest! {
        /// A configured rate is never exceeded, nor a rate the server advertised since the
        /// first answer: between any two requests, no more went than the tokens the bucket
        /// holds (half the burst) and the limit's rate over the time between them. (And the
        /// meter's memory is bounded.)
        #[test]
        fn no_rate_is_exceeded(
            limiter in budget(),
            advertised_first in proptest::option::of(0.01..100.0),
            events in events(),
        ) {
            let (mut client, mut highest) = (Client::new(limiter), 0.0f64);
            if let Some(rate) = advertised_first {
                client.limiter.advertise(rate, 0.0);
            }
            let held = client.limiter.bucket.size;
            let mut sent = Vec::new();
            for event in &events {
                match client.apply(event)? {
                    Outcome::Sent { at, .. } => sent.push(at),
                    // The meter keeps the answers of the last window, no more.
                    Outcome::Answered { .. } => {
                        let oldest = client.limiter.meter.answers.front();
                        prop_assert!(oldest.is_none_or(|at| *at >= client.now - METER_WINDOW), "{oldest:?}");
                    }
                    Outcome::Other => {}
                }
                highest = highest.max(limit(&client.limiter));
                let (floor, ceiling) = (MIN_RATE.min(client.limiter.ceiling), limit(&client.limiter));
                let rate = client.limiter.rate(client.now);
                prop_assert!(rate.is_none_or(|rate| (floor..=ceiling).contains(&rate)), "{rate:?}");
            }
            if highest.is_finite() {
                for (i, from) in sent.iter().enumerate() {
                    for (n, to) in sent[i..].iter().enumerate() {
                        let allowed = highest.mul_add(to - from, held) + 1e-6;
                        prop_assert!((n + 1) as f64 <= allowed, "{} from {from} to {to}: {sent:?}", n + 1);
                    }
                }
            }
        }

        /// A refusal is never ignored: no request goes before its `Retry-After` is over (nor
        /// before a fleet's pause is, unless it is the client's own, ending within a step of
        /// it), and once a round it lowers the rate or the burst ([`refusal_heeded`]).
        #[test]
        fn a_refusal_is_never_ignored(limiter in budget(), events in events()) {
            let (mut client, mut quiet_until) = (Client::new(limiter), f64::NEG_INFINITY);
            for event in &events {
                let outcome = client.apply(event)?;
                let (now, after) = (client.now, &client.limiter);
                match (&event.1, outcome) {
                    (_, Outcome::Sent { at, .. }) => prop_assert!(at >= quiet_until, "{at}, {quiet_until}"),
                    (Event::FleetPause(wait), _) => quiet_until = quiet_until.max(now + wait - STEP),
                    (Event::Refuse(quiet), Outcome::Answered { before, sent }) => {
                        if let Some(quiet) = quiet.filter(|quiet| *quiet > 0.0) {
                            quiet_until = quiet_until.max(now + quiet);
                        }
                        refusal_heeded(&before, after, now, sent, *quiet)?;
                    }
                    _ => {}
                }
            }
        }

        /// The rate recovers after a pause: a request waits for nothing but the pause in force
        /// and one token at the rate when it ends; left alone, the rate never falls, and comes
        /// back to its limit (a configured one in `cbrt(5% of it / PROBE)` seconds, 3.7 s for
        /// 10 a second).
        #[test]
        fn the_rate_recovers_after_a_pause(limiter in budget(), events in events()) {
            let mut client = Client::new(limiter);
            for event in &events {
                let before = client.limiter.clone();
                if let Outcome::Sent { asked, at } = client.apply(event)? {
                    let resumed = before.pause(asked).map_or(asked, |pause| pause.until);
                    let token = before.rate(resumed).map_or(0.0, |rate| 1.0 / rate);
                    prop_assert!(at <= resumed + token + 1e-9, "asked {asked}, resumed {resumed}, sent {at}");
                }
            }
            let (limiter, now) = (&client.limiter, client.now);
            let rates: Vec<f64> = (0..=600).filter_map(|t| limiter.rate(now + f64::from(t))).collect();
            prop_assert!(rates.windows(2).all(|pair| pair[0] <= pair[1]), "{rates:?}");
            prop_assert!(rates.last().is_none_or(|rate| *rate == limit(limiter).min(MAX_RATE)), "{rates:?}");
            let configured = limiter.curve.filter(|curve| limiter.ceiling.is_finite() && !curve.slow_start);
            if let Some(Curve { from, since, .. }) = configured {
                let back = since + ((limiter.ceiling - from).max(0.0) / PROBE).cbrt();
                prop_assert!(limiter.rate(back + 1e-6) == Some(limit(limiter)), "at {back}: {limiter:?}");
            }
        }

        /// A `Retry-After: 0` to a client that has sustained no rate (adaptive, sending for
        /// less than a window) costs no more than that: no pause, no rate, the next request
        /// goes at once.
        #[test]
        fn a_retry_after_of_zero_early_costs_nothing_whatever_was_sent(
            early in proptest::collection::vec((0.0..0.05, sent_or_accepted()), 1..8)
        ) {
            let mut client = Client::new(Limiter::new(f64::INFINITY, 1));
            for event in early.iter().chain([&(0.0, Event::Send)]) {
                client.apply(event)?;
            }
            client.apply(&(0.0, Event::Refuse(Some(0.0))))?;
            let now = client.now;
            prop_assert!(client.limiter.pause(now).is_none() && client.limiter.rate(now).is_none());
            let next = client.apply(&(0.0, Event::Send))?;
            prop_assert!(matches!(next, Outcome::Sent { asked, at } if asked == at), "it waited");
        }
    }
}
