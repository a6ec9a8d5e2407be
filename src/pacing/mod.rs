//! Pacing: one request budget for a client and every client derived from it, and over Redis
//! one for a fleet of processes.
//!
//! - [`RateLimit`] is the setting ([`ClientBuilder::rate_limit`](crate::ClientBuilder::rate_limit)).
//! - [`limiter`]: the budget's state, apart from any waiting: the limit, the rate's curve, a
//!   token bucket, the pause and a meter of what the server accepts, changed by one method per
//!   event; its rules are property tests over random sequences of events.
//! - [`hints`]: the `RateLimit` / `RateLimit-Policy` and `X-RateLimit-*` fields of a response.
//! - [`pacer`]: the budget every request of a client waits for, in order of arrival; with
//!   `shared`, the fleet's budget in Redis (`fleet`, with the connection the token cache uses
//!   too).

mod hints;
mod limiter;
mod pacer;

pub(crate) use pacer::Pacer;

use crate::Error;

/// How fast a client sends requests: set with
/// [`ClientBuilder::rate_limit`](crate::ClientBuilder::rate_limit).
///
/// Every request of the client waits for the budget: single pages, every page of every
/// listing (the first ones too), and the requests of the clients derived from it with
/// [`Client::with_auth`](crate::Client::with_auth). Waiting requests are served in the order
/// they arrived, so concurrent listings share the rate fairly. A 429 with `Retry-After`
/// pauses the whole client until then, not only the request that got it.
///
/// - **Adaptive** (the default, without any setting): nothing waits until the server answers
///   429. A first 429 to a burst says how many requests the server takes at once and, with its
///   `Retry-After`, how soon it takes more: the client starts at that many per `Retry-After`
///   and doubles its rate every quarter of a second until the next 429 (a `Retry-After: 0`
///   costs no more than that). A 429 just as the client resumes after a pause lowers how many
///   it sends at once; any other sets the rate 5% below the one the client sustained (the
///   rate it held a quarter of a second before, or, when its requests were not waiting for
///   that rate, what the server accepted since it last resumed if that is lower), from where
///   it grows slowly, then faster. 429s to requests sent within a quarter of a second of the
///   rate's last change count as one. When the server sends the IETF
///   `RateLimit-Policy` field, the client paces at that rate from the first answer, and when
///   `RateLimit` (or `X-RateLimit-Remaining`) says no quota is left, it waits for the reset
///   before the server refuses.
/// - **A known rate**: [`per_second`](Self::per_second) or [`per_minute`](Self::per_minute),
///   with [`burst`](Self::burst) requests at once after an idle time, of which the client keeps
///   half in hand for arrival jitter. The rate is a ceiling: a 429 sets the rate 5% below the
///   one held, and the client comes back to it slowly, so it settles on what the server
///   accepts. `shared(&cache)`
///   (feature `redis`) makes it one budget for every process that uses the same Redis, API and
///   client id.
/// - [`none`](Self::none): no pacing at all; each request retries its own 429s under its
///   [`RetryPolicy`](crate::RetryPolicy), counting them as attempts (the behaviour before
///   pacing existed).
///
/// While pacing, waiting for the budget, and sending again after a 429 whose `Retry-After` fits
/// within the policy's [`max_delay`](crate::RetryPolicy::max_delay), use up no attempts: only
/// the policy's time budget ([`max_elapsed`](crate::RetryPolicy::max_elapsed)) bounds them. A
/// pause longer than `max_delay` ends a request at once with the 429 that asked for it.
///
/// Nothing a server says pauses the client longer than its longest configured wait: the
/// client's pause after a 429, or after `RateLimit` says the quota is spent, lasts the
/// `Retry-After` (or the reset), at most the client's `max_delay` (or the listing's, when the
/// 429 answered a listing with a longer one), and never more than a day. After it, requests are
/// sent again. The rate never falls below 0.5 requests a second (or the configured rate, when
/// that is lower).
///
/// ```
/// use business_records::{Auth, Client, RateLimit};
///
/// let client = Client::builder()
///     .base_url("https://api.example.com")
///     .auth(Auth::client_credentials("https://auth.example.com", "my-client-id", "my-secret"))
///     .rate_limit(RateLimit::per_second(20).burst(5))
///     .build()?;
/// # Ok::<(), business_records::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct RateLimit {
    pub(crate) setting: Setting,
    pub(crate) processes: Option<u32>,
    /// The Redis of [`shared`](Self::shared).
    #[cfg(feature = "redis")]
    pub(crate) shared: Option<crate::fleet::Store>,
    pub(crate) error: Option<Error>,
}

/// What a [`RateLimit`] asks for.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) enum Setting {
    #[default]
    Adaptive,
    Off,
    Fixed {
        per_second: f64,
        burst: u32,
    },
}

impl RateLimit {
    /// The default: no fixed rate; the client slows down when the server answers 429 or
    /// advertises its limit, and speeds up again with each success.
    pub fn adaptive() -> Self {
        RateLimit::with(Setting::Adaptive)
    }

    /// No pacing: requests go as soon as they are made, and each retries its own 429s under its
    /// [`RetryPolicy`](crate::RetryPolicy), which counts them as attempts.
    pub fn none() -> Self {
        RateLimit::with(Setting::Off)
    }

    /// At most `requests` a second, one at a time (see [`burst`](Self::burst)). At least 1.
    pub fn per_second(requests: u32) -> Self {
        RateLimit::fixed("per_second", requests, 1.0)
    }

    /// At most `requests` a minute, evenly spaced. At least 1.
    pub fn per_minute(requests: u32) -> Self {
        RateLimit::fixed("per_minute", requests, 60.0)
    }

    /// How many requests may go at once after an idle time (the bucket's size). At least 1.
    /// Default: 1, evenly spaced requests, which never exceeds a server that allows the same
    /// rate with any burst. Use the server's burst when you know it: the client sends half of
    /// it at once (rounded down, at least 1) and leaves the rest to the server's bucket, so
    /// that requests that reach the server closer together than they left (scheduling, a token
    /// fetch, a new connection) still find it a token.
    pub fn burst(mut self, requests: u32) -> Self {
        match &mut self.setting {
            Setting::Fixed { burst, .. } if requests > 0 => *burst = requests,
            Setting::Fixed { .. } => return self.fail("expected a burst of at least 1 request"),
            _ => {
                return self.fail("a burst needs a rate: start from `RateLimit::per_second` or `per_minute`");
            }
        }
        self
    }

    #[cfg_attr(feature = "redis", doc = "How many processes share the budget of [`shared`](Self::shared),")]
    #[cfg_attr(not(feature = "redis"), doc = "How many processes share the budget of `shared`,")]
    /// for when its Redis is
    /// out of reach: each process then paces itself at its share of the rate. Default: the
    /// number of processes that used the budget in the last 10 seconds, as Redis last said,
    /// or 1 (the whole rate, still slowed down by 429s) when it never answered.
    pub fn processes(mut self, processes: u32) -> Self {
        if processes == 0 {
            return self.fail("expected at least 1 process");
        }
        self.processes = Some(processes);
        self
    }

    /// The requests a second this limit allows, when it sets a rate.
    pub fn rate(&self) -> Option<f64> {
        if let Setting::Fixed { per_second, .. } = self.setting { Some(per_second) } else { None }
    }

    fn with(setting: Setting) -> Self {
        RateLimit { setting, ..RateLimit::default() }
    }

    fn fixed(argument: &str, requests: u32, seconds: f64) -> Self {
        let limit = RateLimit::with(Setting::Fixed { per_second: f64::from(requests) / seconds, burst: 1 });
        if requests == 0 {
            return limit.fail(format!("expected at least 1 request, got 0 (`{argument}`)"));
        }
        limit
    }

    /// Keeps the first invalid argument given, to return it when the client is built.
    pub(crate) fn fail(mut self, message: impl Into<String>) -> Self {
        self.error.get_or_insert(Error::invalid("rate_limit", message));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argument(limit: &RateLimit) -> Option<(&'static str, String)> {
        match &limit.error {
            Some(Error::InvalidArgument(e)) => Some((e.argument(), e.message().to_owned())),
            _ => None,
        }
    }

    #[test]
    fn settings_keep_the_first_bad_argument() {
        assert_eq!(RateLimit::per_second(20).burst(5).setting, Setting::Fixed { per_second: 20.0, burst: 5 });
        assert_eq!(RateLimit::per_minute(30).rate(), Some(0.5));
        assert_eq!(RateLimit::default().setting, Setting::Adaptive);
        assert_eq!(RateLimit::none().rate(), None);
        let zero = RateLimit::per_second(0).burst(0);
        assert!(
            argument(&zero).is_some_and(|(a, m)| a == "rate_limit" && m.contains("per_second")),
            "{zero:?}"
        );
        assert!(argument(&RateLimit::per_second(3).burst(0)).is_some_and(|(_, m)| m.contains("burst")));
        assert!(argument(&RateLimit::adaptive().burst(3)).is_some_and(|(_, m)| m.contains("needs a rate")));
        assert!(argument(&RateLimit::per_second(3).processes(0)).is_some_and(|(_, m)| m.contains("process")));
        assert!(argument(&RateLimit::per_second(3).burst(2).processes(4)).is_none());
    }
}
