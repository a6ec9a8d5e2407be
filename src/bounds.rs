//! The ranges every number a server sends is held to when it is read, and the checked time
//! arithmetic done with it: nothing a server says can panic the client, fail a whole answer
//! for one field out of range, or hold the client longer than its longest configured wait.
//!
//! | What | Range | Past it |
//! |---|---|---|
//! | `Retry-After` (seconds or HTTP-date) | 0 to [`MAX_SERVER_WAIT`] | the maximum; unreadable: absent |
//! | `RateLimit` `t`, `RateLimit-Reset`, `X-RateLimit-Reset` | 0 to [`MAX_SERVER_WAIT`] | absent |
//! | a pause of the client after a 429 or a spent quota | the retry policy's `max_delay` (a listing's own when longer), at most [`MAX_SERVER_WAIT`] | the pause ends then |
//! | HTTP-dates (`Sunset`, `Deprecation`, `Retry-After`) | 1970 to 9999 | unreadable |
//!
//! Times inside the pacer are seconds as `f64`; they become [`Duration`]s through
//! [`duration_from_secs`] and instants through [`later`], never through a conversion that
//! panics.

use std::time::Duration;

use tokio::time::Instant;

/// The longest wait a server may ask for: a `Retry-After` beyond it counts as this long, and a
/// rate-limit reset beyond it is ignored (it is more likely a misread time than a real wait).
pub(crate) const MAX_SERVER_WAIT: Duration = Duration::from_secs(24 * 60 * 60);

/// How far ahead an instant goes when the clock cannot count as far as asked (Tokio's own
/// "far future").
const FAR_FUTURE: Duration = Duration::from_secs(30 * 365 * 24 * 60 * 60);

/// `seconds` as a [`Duration`]: zero for NaN and negative values, [`Duration::MAX`] past it.
pub(crate) fn duration_from_secs(seconds: f64) -> Duration {
    // `f64::max` drops a NaN.
    Duration::try_from_secs_f64(seconds.max(0.0)).unwrap_or(Duration::MAX)
}

/// `at + wait`, or as far as the clock counts when that is past it.
pub(crate) fn later(at: Instant, wait: Duration) -> Instant {
    at.checked_add(wait).or_else(|| at.checked_add(FAR_FUTURE)).unwrap_or(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_and_instants_never_panic() {
        assert_eq!(duration_from_secs(1.5), Duration::from_millis(1500));
        for (seconds, expected) in [
            (f64::NAN, Duration::ZERO),
            (-1.0, Duration::ZERO),
            (f64::INFINITY, Duration::MAX),
            (1e300, Duration::MAX),
        ] {
            assert_eq!(duration_from_secs(seconds), expected, "{seconds}");
        }
        let now = Instant::now();
        assert_eq!(later(now, Duration::from_secs(1)), now + Duration::from_secs(1));
        assert!(later(now, Duration::MAX) >= now + FAR_FUTURE);
    }
}
