//! The ranges every number a server sends is held to when it is read, and the checked time
//! arithmetic done with it: nothing a server says can panic the client, fail a whole answer
//! for one field out of range, or hold the client longer than its longest configured wait.
//!
//! | What | Range | Past it |
//! |---|---|---|
//! | `Retry-After` (seconds or HTTP-date) | 0 to [`MAX_SERVER_WAIT`] | the maximum; unreadable: absent |
//! | `RateLimit` `t`, `RateLimit-Reset`, `X-RateLimit-Reset` | 0 to [`MAX_SERVER_WAIT`] | absent |
//! | a pause of the client after a 429 or a spent quota | the retry policy's `max_delay` (a listing's own when longer), at most [`MAX_SERVER_WAIT`] | the pause ends then |
//! | `expires_in` (token responses) | 0 to [`MAX_TOKEN_LIFETIME`], whole seconds | the maximum; a fraction rounded down; negative or not a number: absent |
//! | epoch times (`exp`, `iat`, `nbf` of JWTs and introspection) | 1970 to [`MAX_EPOCH_SECONDS`] | the maximum; a fraction rounded down; negative or not a number: absent |
//! | HTTP-dates (`Sunset`, `Deprecation`, `Retry-After`) | 1970 to 9999 | unreadable |
//! | `totalCount` | 0 to [`MAX_COUNT`] | absent |
//!
//! Times inside the pacer are seconds as `f64`; they become [`Duration`]s through
//! [`duration_from_secs`] and instants through [`later`], never through a conversion that
//! panics.

use std::time::Duration;

use serde::de::{Deserialize, Deserializer, Error as _};
use serde_json::{Map, Value};
use tokio::time::Instant;

/// The longest wait a server may ask for: a `Retry-After` beyond it counts as this long, and a
/// rate-limit reset beyond it is ignored (it is more likely a misread time than a real wait).
pub(crate) const MAX_SERVER_WAIT: Duration = Duration::from_secs(24 * 60 * 60);

/// The longest token lifetime believed: a larger `expires_in` (or a stored expiry further
/// away) counts as one year.
pub(crate) const MAX_TOKEN_LIFETIME: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// The latest epoch time read from a server: 9999-12-31T23:59:59Z, the last second an
/// HTTP-date can write.
pub(crate) const MAX_EPOCH_SECONDS: u64 = 253_402_300_799;

/// The largest count read from a server: 2^53, the largest integer every JSON parser holds
/// exactly.
pub(crate) const MAX_COUNT: u64 = 1 << 53;

/// How far ahead an instant goes when the clock cannot count as far as asked (Tokio's own
/// "far future").
const FAR_FUTURE: Duration = Duration::from_secs(30 * 365 * 24 * 60 * 60);

/// A lifetime from the network, at most [`MAX_TOKEN_LIFETIME`].
pub(crate) fn clamp_lifetime(lifetime: Duration) -> Duration {
    lifetime.min(MAX_TOKEN_LIFETIME)
}

/// `seconds` as a [`Duration`]: zero for NaN and negative values, [`Duration::MAX`] past it.
pub(crate) fn duration_from_secs(seconds: f64) -> Duration {
    // `f64::max` drops a NaN.
    Duration::try_from_secs_f64(seconds.max(0.0)).unwrap_or(Duration::MAX)
}

/// `at + wait`, or as far as the clock counts when that is past it.
pub(crate) fn later(at: Instant, wait: Duration) -> Instant {
    at.checked_add(wait).or_else(|| at.checked_add(FAR_FUTURE)).unwrap_or(at)
}

/// A whole number of seconds in a JSON value: a number (a fraction rounded down, past
/// `u64::MAX` saturated) or a string holding one. `None` for a negative number and anything
/// else.
pub(crate) fn json_seconds(value: &Value) -> Option<u64> {
    let (whole, number) = match value {
        Value::Number(number) => (number.as_u64(), number.as_f64()),
        Value::String(text) => (text.trim().parse().ok(), text.trim().parse().ok()),
        _ => return None,
    };
    // `as` saturates, and NaN fails the test.
    whole.or_else(|| number.filter(|number: &f64| *number >= 0.0).map(|number| number as u64))
}

/// Holds the named fields of a JSON object to `0..=max` before a parser that is strict about
/// them reads the object: a number past `max` becomes `max`, a fraction or a numeric string a
/// whole number, and a negative number or anything else is removed. `body` comes back as it
/// was when it is not an object or nothing needed changing.
pub(crate) fn bound_json_fields(body: Vec<u8>, fields: &[(&str, u64)]) -> Vec<u8> {
    let Ok(mut object) = serde_json::from_slice::<Map<String, Value>>(&body) else { return body };
    let mut changed = false;
    for &(name, max) in fields {
        let Some(value) = object.remove(name) else { continue };
        let bounded = json_seconds(&value).map(|seconds| Value::from(seconds.min(max)));
        changed |= bounded.as_ref() != Some(&value);
        if let Some(bounded) = bounded {
            object.insert(name.to_owned(), bounded);
        }
    }
    if !changed {
        return body;
    }
    serde_json::to_vec(&object).unwrap_or(body)
}

/// A NumericDate (RFC 7519): epoch seconds as [`json_seconds`] reads them, at most
/// [`MAX_EPOCH_SECONDS`].
fn epoch(value: &Value) -> Option<i64> {
    i64::try_from(json_seconds(value)?.min(MAX_EPOCH_SECONDS)).ok()
}

/// Deserializes a required NumericDate (see [`epoch`]).
pub(crate) fn numeric_date<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    epoch(&Value::deserialize(deserializer)?).ok_or_else(|| D::Error::custom("expected a NumericDate"))
}

/// Deserializes an optional NumericDate (see [`epoch`]); one that cannot be read is absent.
pub(crate) fn optional_numeric_date<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<i64>, D::Error> {
    Ok(Option::<Value>::deserialize(deserializer)?.as_ref().and_then(epoch))
}

/// Deserializes a count: an integer from 0 to [`MAX_COUNT`]; anything else is absent.
pub(crate) fn count<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    let value = Option::<Value>::deserialize(deserializer)?;
    Ok(value.as_ref().and_then(Value::as_u64).filter(|count| *count <= MAX_COUNT))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

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
        // Thirty years of 365 days, as Tokio's "far future".
        let thirty_years = Duration::from_secs(946_080_000);
        assert_eq!(later(now, Duration::MAX), now + thirty_years);
    }

    #[test]
    fn a_lifetime_is_believed_up_to_one_year_to_the_second() {
        let year = Duration::from_secs(31_536_000);
        let second = Duration::from_secs(1);
        for (lifetime, believed) in
            [(year - second, year - second), (year, year), (year + second, year), (Duration::MAX, year)]
        {
            assert_eq!(clamp_lifetime(lifetime), believed, "{lifetime:?}");
        }
    }

    #[test]
    fn json_seconds_reads_whole_seconds_of_any_number() {
        let cases = [
            (json!(3600), Some(3600)),
            (json!(u64::MAX), Some(u64::MAX)),
            (json!(3600.9), Some(3600)),
            (json!(1e30), Some(u64::MAX)),
            (json!("3600"), Some(3600)),
            (json!(" 12.5 "), Some(12)),
            (json!(-1), None),
            (json!(-0.5), None),
            (json!("soon"), None),
            (json!(null), None),
            (json!([1]), None),
        ];
        for (value, expected) in cases {
            assert_eq!(json_seconds(&value), expected, "{value}");
        }
    }

    #[test]
    fn fields_out_of_range_are_bounded_and_the_rest_kept_as_sent() {
        let fields = [("expires_in", 100), ("exp", 1000)];
        let bounded = |body: serde_json::Value| {
            let out = bound_json_fields(body.to_string().into_bytes(), &fields);
            serde_json::from_slice::<serde_json::Value>(&out).unwrap_or_default()
        };
        let kept = br#"{"access_token": "t", "expires_in": 60}"#.to_vec();
        assert_eq!(bound_json_fields(kept.clone(), &fields), kept, "nothing to change: the same bytes");
        assert_eq!(bound_json_fields(b"not json".to_vec(), &fields), b"not json");
        assert_eq!(
            bounded(json!({"access_token": "t", "expires_in": 1e30, "exp": "12.7"})),
            json!({"access_token": "t", "expires_in": 100, "exp": 12})
        );
        assert_eq!(bounded(json!({"expires_in": -1, "exp": {}})), json!({}));
    }

    #[test]
    fn numeric_dates_and_counts_read_what_they_can() {
        #[derive(serde::Deserialize)]
        struct Times {
            #[serde(deserialize_with = "numeric_date")]
            exp: i64,
            #[serde(default, deserialize_with = "optional_numeric_date")]
            iat: Option<i64>,
            #[serde(default, deserialize_with = "count")]
            total: Option<u64>,
        }
        let read = |json: serde_json::Value| {
            serde_json::from_value::<Times>(json).ok().map(|t| (t.exp, t.iat, t.total))
        };
        let last = i64::try_from(MAX_EPOCH_SECONDS).unwrap_or_default();
        assert_eq!(read(json!({"exp": 1.7e9, "iat": -5, "total": 3})), Some((1_700_000_000, None, Some(3))));
        assert_eq!(read(json!({"exp": u64::MAX, "iat": 1e300, "total": -3})), Some((last, Some(last), None)));
        assert_eq!(read(json!({"exp": "soon"})), None, "`exp` is required");
    }

    proptest! {
        /// Any JSON object: no panic, and every named field is gone or an integer within its
        /// range.
        #[test]
        fn any_object_comes_out_within_bounds(body in "\\{(\"(expires_in|exp|x)\": ?(-?(0|[1-9][0-9]{0,24})(\\.[0-9]{1,5})?(e[0-9]{1,2})?|\"[0-9a-z. ]{0,8}\"|null|true|\\[\\]), ?){0,4}\"y\": 1\\}") {
            let out = bound_json_fields(body.clone().into_bytes(), &[("expires_in", 100), ("exp", MAX_EPOCH_SECONDS)]);
            let object: Map<String, Value> = serde_json::from_slice(&out).map_err(|e| TestCaseError::fail(format!("{body}: {e}")))?;
            prop_assert!(object.get("expires_in").is_none_or(|v| v.as_u64().is_some_and(|s| s <= 100)), "{object:?}");
            prop_assert!(object.get("exp").is_none_or(|v| v.as_u64().is_some_and(|s| s <= MAX_EPOCH_SECONDS)), "{object:?}");
        }
    }
}
