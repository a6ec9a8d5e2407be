//! The state of one client's budget, apart from any waiting: a token bucket that says when the
//! next request may go, pauses after a 429, and the rate, which follows what the server
//! accepts.
//!
//! - A configured limit starts at its rate and keeps half its burst in hand (a burst of 5 sends
//!   2 at once): requests that reach the server closer together than they left (scheduling, a
//!   token fetch, a new connection) still find a token there. At the same rate as the server,
//!   the server's bucket keeps the other half of its burst for them.
//! - An adaptive budget limits nothing until the server refuses. A refusal before the client
//!   has sustained any rate answers a burst: it says how many requests the server takes at
//!   once, and its `Retry-After` how soon it takes more. The rate starts at that many per
//!   `Retry-After`, with a burst of one fewer, and doubles every [`STEP`] (slow start) until
//!   the next refusal; answers to the burst read after its refusal count too. A
//!   `Retry-After: 0` says nothing of a rate: the client only waits that long.
//! - An adaptive budget refused as it resumes sending (within a [`STEP`] of a pause's end or
//!   of an idle time) sent too many at once, not too fast: its burst shrinks by one, its rate
//!   holds. With a burst of one already, other clients are sending too: the rate goes down.
//! - Any other refusal sets the rate to [`MARGIN`] times the rate the client sustained: the
//!   rate it held a [`STEP`] before it sent the refused request when its requests were
//!   waiting for that rate; for an adaptive budget that sent less, what the server accepted
//!   since the client last resumed sending (at least a [`METER_WINDOW`] ago), less its burst,
//!   if that is lower. So a rate the client never used is not taken for sustained. (A
//!   configured rate backs off from itself alone: the answers a client reads may be its share
//!   of a fleet's.) Before any rate, a refusal backs off from what the server accepted only
//!   when the client sent through the last [`METER_WINDOW`], unpaused; else it answered a
//!   burst (above). From there the rate grows along a cubic, slowly at first (CUBIC's
//!   plateau): by `PROBE * t³` requests a second after `t` seconds, 1.25 after five seconds,
//!   10 after ten.
//! - One refusal per round counts: a 429 to a request sent within a [`STEP`] of the rate's
//!   last change says nothing about that rate. A pause of a fleet that ends about when the
//!   client's own did is the one the client asked for.
//! - The rate stays within the ceiling (the configured rate, or the server's advertised
//!   policy), and at or above [`MIN_RATE`].
//!
//! Times are seconds since the limiter was made, as `f64`.

use std::collections::VecDeque;

use crate::Error;

/// The time the rate of a slow start takes to double, in seconds.
const STEP: f64 = 0.25;
/// The part of the sustained rate a refusal sets the rate to.
const MARGIN: f64 = 0.95;
/// How fast the rate grows after a refusal: by `PROBE * t³` requests a second after `t`
/// seconds.
const PROBE: f64 = 0.01;
/// The lowest rate, in requests per second.
pub(super) const MIN_RATE: f64 = 0.5;
/// The highest, so that no arithmetic meets an infinity.
const MAX_RATE: f64 = 1e6;
/// The window over which the rate the server accepts is measured, in seconds.
const METER_WINDOW: f64 = 0.5;
/// Waits shorter than this are none: the clock has nanoseconds, and rounding must not leave a
/// request waiting for a wait too short to sleep.
const RESOLUTION: f64 = 1e-6;

/// The rate from `since` on: `from`, doubling every [`STEP`] in a slow start, else growing
/// along the cubic.
#[derive(Debug, Clone, Copy)]
struct Curve {
    from: f64,
    since: f64,
    slow_start: bool,
}

/// The budget's state.
#[derive(Debug)]
pub(super) struct Limiter {
    /// The highest rate allowed: configured, or unbounded (`f64::INFINITY`) when adaptive.
    ceiling: f64,
    /// The rate the server's `RateLimit-Policy` advertises, when it does.
    pub(super) advertised: Option<f64>,
    /// The part of the rate this process takes: 1, or while a shared budget is out of reach the
    /// number of processes sharing it.
    pub(super) share: f64,
    /// Requests that may go at once after an idle time: the bucket's size (at least one; below
    /// one while a refused burst's answers are still being counted).
    pub(super) burst: f64,
    /// Tokens in the bucket when last counted, and when.
    tokens: f64,
    counted: f64,
    /// Every request waits until then, for `cause` (the answer that asked, kept for requests
    /// that will not wait).
    paused_until: f64,
    pub(super) cause: Option<Error>,
    /// `None` while an adaptive budget has had no reason to limit.
    curve: Option<Curve>,
    /// When the rate was last set.
    decided: f64,
    /// The client's last send.
    last_sent: f64,
    /// When the client last resumed sending (a pause's end, or its first send after a gap of
    /// [`METER_WINDOW`]; never before its first send), and the answers the server accepted
    /// since to requests sent since.
    resumed: f64,
    accepted_since: f64,
    /// When a request last waited for the rate (not for a pause): until a step later, the
    /// client sends at its rate.
    waited: f64,
    /// When the answers the server accepted were read, over the last [`METER_WINDOW`].
    accepted: VecDeque<f64>,
}

impl Limiter {
    /// A budget of at most `ceiling` requests a second (`f64::INFINITY`: adaptive) and `burst`
    /// at once, of which half are kept in hand.
    pub(super) fn new(ceiling: f64, burst: u32) -> Self {
        let burst = f64::from((burst / 2).max(1));
        Limiter {
            ceiling,
            advertised: None,
            share: 1.0,
            burst,
            tokens: burst,
            counted: 0.0,
            paused_until: f64::NEG_INFINITY,
            cause: None,
            curve: ceiling.is_finite().then_some(Curve { from: ceiling, since: 0.0, slow_start: false }),
            decided: f64::NEG_INFINITY,
            last_sent: f64::NEG_INFINITY,
            resumed: f64::INFINITY,
            accepted_since: 0.0,
            waited: f64::NEG_INFINITY,
            accepted: VecDeque::new(),
        }
    }

    /// The rate at `now` for the whole budget (every process of a shared one), `None` when
    /// nothing limits it.
    pub(super) fn rate(&self, now: f64) -> Option<f64> {
        let Curve { from, since, slow_start } = self.curve?;
        let t = (now - since).max(0.0);
        let rate = if slow_start {
            from.max(MIN_RATE) * (t / STEP).floor().min(64.0).exp2()
        } else {
            PROBE.mul_add(t.powi(3), from)
        };
        let limit = self.advertised.map_or(self.ceiling, |rate| rate.min(self.ceiling));
        Some(rate.clamp(MIN_RATE, limit.clamp(MIN_RATE, MAX_RATE)))
    }

    /// When the pause in force at `now` ends, if one is.
    pub(super) fn pause(&self, now: f64) -> Option<f64> {
        (self.paused_until > now).then_some(self.paused_until)
    }

    /// Takes a token for a request sent at `now` and returns `now`, or returns when the next
    /// token is due (the end of a pause at the soonest) and takes none.
    pub(super) fn take(&mut self, now: f64) -> f64 {
        if let Some(until) = self.pause(now) {
            return until;
        }
        if let Some(rate) = self.rate(now).map(|rate| rate / self.share) {
            self.tokens = (now - self.counted).max(0.0).mul_add(rate, self.tokens).min(self.burst.max(1.0));
            self.counted = self.counted.max(now);
            if self.tokens < 1.0 - RESOLUTION {
                self.waited = now;
                return now + (1.0 - self.tokens) / rate;
            }
            self.tokens -= 1.0;
        }
        if now - self.last_sent > METER_WINDOW {
            (self.resumed, self.accepted_since) = (now, 0.0);
        }
        self.last_sent = now;
        now
    }

    /// An answer the server did not refuse, read at `now`, to a request sent at `sent`. One
    /// to the burst that started a slow start, read after its refusal, counts in its rate.
    pub(super) fn accepted(&mut self, now: f64, sent: f64) {
        if let Some(curve) = self.curve.as_mut().filter(|curve| curve.slow_start && sent < self.decided) {
            curve.from += 1.0 / (curve.since - self.decided);
            self.burst += 1.0;
        }
        if sent >= self.resumed {
            self.accepted_since += 1.0;
        }
        self.accepted.push_back(now);
        self.measured(now);
    }

    /// Requests a second the server accepted over the last [`METER_WINDOW`].
    fn measured(&mut self, now: f64) -> f64 {
        while self.accepted.front().is_some_and(|&at| at < now - METER_WINDOW) {
            self.accepted.pop_front();
        }
        self.accepted.len() as f64 / METER_WINDOW
    }

    /// Pauses every request until `until`, for `cause` (kept for requests that will not wait;
    /// a server's 429 takes the place of a cause made up for the same pause).
    pub(super) fn pause_until(&mut self, until: f64, cause: Option<Error>) {
        if until > self.paused_until || (until == self.paused_until && cause.is_some()) {
            (self.paused_until, self.cause) = (until, cause);
            (self.resumed, self.accepted_since) = (until, 0.0);
        }
    }

    /// The server advertises `rate` requests a second as its policy, in an answer read at `now`.
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
            (self.tokens, self.counted) = (0.0, now);
        }
        self.curve = Some(curve);
        self.decided = now;
    }

    /// A refusal read at `now` of a request sent at `sent`, asking for `quiet` seconds before
    /// the next request (a 429's `Retry-After`, a spent quota's reset): a pause of every request
    /// for `quiet`, the refusal `cause` kept for those that will not wait, and, once a round, a
    /// lower rate.
    pub(super) fn throttled(&mut self, now: f64, sent: f64, quiet: Option<f64>, cause: Option<Error>) {
        let (measured, resumed, accepted_since) = (self.measured(now), self.resumed, self.accepted_since);
        if let Some(quiet) = quiet.filter(|quiet| *quiet > 0.0) {
            self.pause_until(now + quiet, cause);
        }
        // A request sent within a step of the rate's last change did not try that rate.
        if sent < self.decided + STEP {
            return;
        }
        let since = now + quiet.unwrap_or(0.0);
        // A configured rate backs off from itself: the answers a client reads may be its part of
        // a fleet's.
        let base = match self.rate(sent - STEP) {
            Some(held) if self.ceiling.is_finite() => held,
            // Refused as it resumed sending: its burst was too big, not its rate (with a burst
            // of one, the rate: other clients of the server's are sending too).
            Some(_) if sent < resumed + STEP && self.burst > 1.0 => {
                (self.burst, self.decided) = ((self.burst - 1.0).max(1.0), now);
                return;
            }
            // Sent at its rate, or resumed less than a window ago: the rate held. Else no more
            // than what the server accepted since it resumed, less the burst its bucket held then.
            Some(held) if now - self.waited < STEP || now - resumed < METER_WINDOW => held,
            Some(held) => held.min(((accepted_since - self.burst.max(1.0)) / (now - resumed)).max(0.0)),
            // Sent through the last window, unpaused: what the server accepted over it.
            None if resumed <= now - METER_WINDOW => measured,
            None => {
                self.decided = now;
                // As many requests per `Retry-After` as the server took at once; none: a second.
                let quiet = quiet.unwrap_or(1.0);
                if quiet > 0.0 {
                    let from = self.accepted.len() as f64 / quiet;
                    self.burst = self.accepted.len() as f64 - 1.0;
                    self.engage(Curve { from, since: now + quiet, slow_start: true }, now);
                }
                return;
            }
        };
        self.engage(Curve { from: MARGIN * base, since, slow_start: false }, now);
    }

    /// The fleet is paused for `wait` seconds from `now`: a refusal for this client too, unless
    /// it is the pause this client asked for (which ends about when its own did).
    #[cfg(any(feature = "redis", test))]
    pub(super) fn fleet_paused(&mut self, now: f64, wait: f64) {
        if now + wait > self.paused_until + STEP {
            self.throttled(now, now, Some(wait), None);
        }
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
        assert_eq!(limiter.take(3.0), 4.0, "a shorter pause does not shorten it");
        assert!(limiter.pause(3.9).is_some() && limiter.cause.is_some());
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
        assert!(close(limiter.pause(0.5), 1.01));
        assert_eq!(send(&mut limiter, 0.5, 1), [limiter.pause(0.5).unwrap_or_default()]);

        // The next refusal, sent at 80 a second: back to 95% of the 40 held a step before, or
        // of what the server accepted over the last half second when that is less.
        drive(&mut limiter, 1.01, 2.1);
        limiter.throttled(2.1, 2.09, Some(1.0), None);
        let rate = limiter.rate(3.1).unwrap_or_default();
        assert!(rate <= 0.95f64.mul_add(40.0, 1e-9) && rate > 20.0, "{rate}");
    }

    #[test]
    fn a_refusal_as_the_client_resumes_lowers_its_burst_not_its_rate() {
        let mut limiter = Limiter::new(f64::INFINITY, 1);
        send(&mut limiter, 0.0, 8);
        for _ in 0..5 {
            limiter.accepted(0.01, 0.0);
        }
        limiter.throttled(0.01, 0.0, Some(1.0), None);
        assert_eq!(limiter.burst, 4.0, "one fewer than the server took at once");
        // The pause ends at 1.01; the first requests after it are refused.
        let slow_start = limiter.rate(2.02);
        limiter.throttled(1.02, 1.01, Some(1.0), None);
        assert_eq!(limiter.burst, 3.0);
        assert_eq!(limiter.rate(2.02), slow_start, "the rate holds");
        // With a burst of one, the rate is what was too much: other clients are sending too. It
        // backs off from the 40 a second it held a step before.
        limiter.burst = 1.0;
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
}
