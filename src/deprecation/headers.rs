//! Parsing of the `Deprecation` (RFC 9745) and `Sunset` (RFC 8594) response headers.
//!
//! Both parsers are total: they accept any string, never panic, and map what they cannot
//! read to a value that says so ([`Deprecation::Unrecognized`], or `None` for a sunset).

use chrono::{DateTime, Utc};

use crate::timestamp::parse_http_date;

/// The value of a `Deprecation` response header.
///
/// Whatever the form, a response that carries the header is deprecated, except with the value
/// `false` (or `?0`), which [`DeprecationNotice::from_headers`](super::DeprecationNotice::from_headers)
/// reads as no header at all: the variants only tell what is known about when it happened.
///
/// ```
/// use business_records::deprecation::{parse_deprecation, Deprecation};
///
/// assert_eq!(parse_deprecation("true"), Deprecation::Deprecated);
/// assert_eq!(parse_deprecation("@1767225600").since().map(|d| d.timestamp()), Some(1767225600));
/// assert!(matches!(parse_deprecation("soon"), Deprecation::Unrecognized(raw) if raw == "soon"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Deprecation {
    /// Deprecated since this instant: an RFC 9745 structured-field date (`@1767225600`) or,
    /// from servers that follow the older drafts, an HTTP-date.
    Since(DateTime<Utc>),
    /// Deprecated, date not given: the legacy value `true`.
    Deprecated,
    /// A value in none of the known forms, kept as received (surrounding whitespace removed).
    /// The resource is still treated as deprecated.
    Unrecognized(String),
}

impl Deprecation {
    /// The instant the resource was deprecated, when the header gave one.
    ///
    /// ```
    /// use business_records::deprecation::Deprecation;
    ///
    /// assert_eq!(Deprecation::Deprecated.since(), None);
    /// ```
    #[must_use]
    pub fn since(&self) -> Option<DateTime<Utc>> {
        match self {
            Self::Since(date) => Some(*date),
            Self::Deprecated | Self::Unrecognized(_) => None,
        }
    }
}

/// Parses a `Deprecation` header value.
///
/// Accepted forms, tried in this order:
/// - an RFC 9745 structured-field date, `@` and an integer number of seconds since the Unix
///   epoch (negative allowed, at most 15 digits); parameters after `;` are ignored;
/// - the legacy values `true` (any case) and `?1`;
/// - an HTTP-date in any of the forms [`parse_sunset`] accepts.
///
/// Anything else, including a date outside the supported range, becomes
/// [`Deprecation::Unrecognized`] with the raw text: the header's presence alone means the
/// resource is deprecated.
///
/// ```
/// use business_records::deprecation::{parse_deprecation, Deprecation};
///
/// let parsed = parse_deprecation("@1767225600;foo=bar");
/// assert_eq!(parsed.since().map(|d| d.to_rfc3339()).as_deref(), Some("2026-01-01T00:00:00+00:00"));
/// assert_eq!(parse_deprecation(" TRUE "), Deprecation::Deprecated);
/// ```
#[must_use]
pub fn parse_deprecation(value: &str) -> Deprecation {
    let value = trim_ows(value);
    if let Some(rest) = value.strip_prefix('@') {
        if let Some(date) = parse_sf_date(rest) {
            return Deprecation::Since(date);
        }
    } else if value.eq_ignore_ascii_case("true") || value == "?1" {
        return Deprecation::Deprecated;
    } else if let Some(date) = parse_http_date(value) {
        return Deprecation::Since(date);
    }
    Deprecation::Unrecognized(value.to_owned())
}

/// True for a `Deprecation` value that says "not deprecated": `false` (any case) or the
/// structured-field boolean `?0`.
pub(crate) fn says_not_deprecated(value: &str) -> bool {
    let value = trim_ows(value);
    value.eq_ignore_ascii_case("false") || value == "?0"
}

/// Parses a `Sunset` header value (RFC 8594): an HTTP-date.
///
/// All three forms of RFC 9110 section 5.6.7 are accepted:
/// - IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`;
/// - obsolete RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT` (a two-digit year more than 50 years
///   in the future is read as the most recent past year with the same last two digits);
/// - asctime: `Sun Nov  6 08:49:37 1994`.
///
/// The parser is lenient where servers are known to stray: `UTC` is accepted in place of
/// `GMT`, names of days and months are matched in any case, day names may be short or long
/// in any form, runs of whitespace count as one space, and the day name is checked for form
/// but not against the date. A second of `60` (a leap second) reads as the next minute.
/// Returns `None` for anything else.
///
/// ```
/// use business_records::deprecation::parse_sunset;
///
/// let imf = parse_sunset("Sun, 06 Nov 1994 08:49:37 GMT");
/// assert_eq!(imf.map(|d| d.timestamp()), Some(784111777));
/// assert_eq!(parse_sunset("Sunday, 06-Nov-94 08:49:37 GMT"), imf);
/// assert_eq!(parse_sunset("Sun Nov  6 08:49:37 1994"), imf);
/// assert_eq!(parse_sunset("Sun, 06 Nov 1994 08:49:37 UTC"), imf);
/// assert_eq!(parse_sunset("next tuesday"), None);
/// ```
#[must_use]
pub fn parse_sunset(value: &str) -> Option<DateTime<Utc>> {
    parse_http_date(value)
}

/// The RFC 9745 range of an sf-integer is 15 digits.
const SF_INTEGER_MAX_DIGITS: usize = 15;

/// Parses the part of a structured-field date after `@`: an sf-integer, then nothing or
/// parameters (which are ignored).
fn parse_sf_date(rest: &str) -> Option<DateTime<Utc>> {
    let (negative, unsigned) = match rest.strip_prefix('-') {
        Some(unsigned) => (true, unsigned),
        None => (false, rest),
    };
    let digits_len = unsigned.bytes().take_while(u8::is_ascii_digit).count();
    if digits_len == 0 || digits_len > SF_INTEGER_MAX_DIGITS {
        return None;
    }
    let (digits, tail) = unsigned.split_at(digits_len);
    let tail = trim_ows(tail);
    if !(tail.is_empty() || tail.starts_with(';')) {
        return None;
    }
    let magnitude: i64 = digits.parse().ok()?;
    let seconds = if negative { -magnitude } else { magnitude };
    DateTime::from_timestamp(seconds, 0)
}

/// Removes optional whitespace (spaces and tabs) around a field value.
fn trim_ows(value: &str) -> &str {
    value.trim_matches([' ', '\t'])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::time::{Duration, UNIX_EPOCH};

    use crate::timestamp::http_date::tests::{EXAMPLE, ts};

    #[test]
    fn deprecation_legacy_true() {
        assert_eq!(parse_deprecation("true"), Deprecation::Deprecated);
        assert_eq!(parse_deprecation("True"), Deprecation::Deprecated);
        assert_eq!(parse_deprecation("\ttrue "), Deprecation::Deprecated);
        assert_eq!(parse_deprecation("?1"), Deprecation::Deprecated);
    }

    #[test]
    fn deprecation_structured_date() {
        assert_eq!(parse_deprecation("@1767225600"), Deprecation::Since(ts(1_767_225_600)));
        assert_eq!(parse_deprecation("@0"), Deprecation::Since(ts(0)));
        assert_eq!(parse_deprecation("@-86400"), Deprecation::Since(ts(-86_400)));
        assert_eq!(parse_deprecation(" @1767225600 "), Deprecation::Since(ts(1_767_225_600)));
    }

    #[test]
    fn deprecation_parameters_are_ignored() {
        let expected = Deprecation::Since(ts(1_767_225_600));
        assert_eq!(parse_deprecation("@1767225600;foo=bar"), expected);
        assert_eq!(parse_deprecation("@1767225600;a;b=?0;c=\"x\""), expected);
    }

    #[test]
    fn deprecation_http_date_legacy() {
        let expected = Deprecation::Since(ts(EXAMPLE));
        assert_eq!(parse_deprecation("Sun, 06 Nov 1994 08:49:37 GMT"), expected);
        assert_eq!(parse_deprecation("Sun Nov  6 08:49:37 1994"), expected);
    }

    #[test]
    fn deprecation_malformed_is_kept_raw() {
        for raw in [
            "",
            "false",
            "@",
            "@-",
            "@12.5",
            "@1e9",
            "@ 12",
            "@12 x",
            "@1234567890123456",
            "@999999999999999",
            "yes please",
            "Sun, 32 Nov 1994 08:49:37 GMT",
        ] {
            assert_eq!(parse_deprecation(raw), Deprecation::Unrecognized(raw.to_owned()), "{raw:?}");
        }
        assert_eq!(parse_deprecation("  soon\t"), Deprecation::Unrecognized("soon".to_owned()));
    }

    #[test]
    fn sunset_three_forms() {
        let expected = Some(ts(EXAMPLE));
        assert_eq!(parse_sunset("Sun, 06 Nov 1994 08:49:37 GMT"), expected);
        assert_eq!(parse_sunset("Sunday, 06-Nov-94 08:49:37 GMT"), expected);
        assert_eq!(parse_sunset("Sun Nov  6 08:49:37 1994"), expected);
        assert_eq!(parse_sunset("Sun Nov 06 08:49:37 1994"), expected);
    }

    #[test]
    fn sunset_utc_suffix_and_case() {
        let expected = Some(ts(EXAMPLE));
        assert_eq!(parse_sunset("Sun, 06 Nov 1994 08:49:37 UTC"), expected);
        assert_eq!(parse_sunset("Sunday, 06-Nov-94 08:49:37 UTC"), expected);
        assert_eq!(parse_sunset("sun, 06 NOV 1994 08:49:37 gmt"), expected);
        assert_eq!(parse_sunset("  Sun,  06 Nov 1994  08:49:37 GMT "), expected);
    }

    #[test]
    fn sunset_future_and_far_dates() {
        assert_eq!(parse_sunset("Fri, 01 Jan 2027 00:00:00 GMT"), Some(ts(1_798_761_600)));
        assert_eq!(parse_sunset("Thu, 01 Jan 1970 00:00:00 GMT"), Some(ts(0)));
        assert_eq!(parse_sunset("Fri, 31 Dec 9999 23:59:59 GMT"), Some(ts(253_402_300_799)));
        assert_eq!(parse_sunset("Wed, 31 Dec 1969 23:59:59 GMT"), Some(ts(-1)));
    }

    #[test]
    fn sunset_leap_second_rolls_over() {
        assert_eq!(
            parse_sunset("Sat, 31 Dec 2016 23:59:60 GMT"),
            parse_sunset("Sun, 01 Jan 2017 00:00:00 GMT")
        );
    }

    #[test]
    fn sunset_rejects_malformed() {
        for raw in [
            "",
            "true",
            "@1767225600",
            "2026-01-01T00:00:00Z",
            "Sun, 06 Nov 1994 08:49:37",
            "Sun, 06 Nov 1994 08:49:37 PST",
            "Sun, 06 Nov 1994 08:49:37 +0000",
            "Sun 06 Nov 1994 08:49:37 GMT",
            "Xyz, 06 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nox 1994 08:49:37 GMT",
            "Sun, 31 Feb 1994 08:49:37 GMT",
            "Sun, 06 Nov 94 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:60:00 GMT",
            "Sun, 06 Nov 1994 08:49:61 GMT",
            "Sun, 06 Nov 1994 8:49:37 GMT",
            "Sun, 06 Nov 1994 08:49 GMT",
            "Sun, 06 Nov 1994 08:49:37:00 GMT",
            "Sunday, 06-Nov-94-1 08:49:37 GMT",
            "Sunday, 06-Nov-994 08:49:37 GMT",
            "Sun Nov  6 08:49:37 94",
            "Sun, 06 Nov 1994 08:49:37 GMT extra",
        ] {
            assert_eq!(parse_sunset(raw), None, "{raw:?}");
        }
    }

    /// Seconds from 0001-01-01 to 9999-12-31, the range every form can express.
    const FOUR_DIGIT_YEARS: std::ops::RangeInclusive<i64> = -62_135_596_800..=253_402_300_799;

    fn imf(date: DateTime<Utc>) -> String {
        date.format("%a, %d %b %Y %H:%M:%S GMT").to_string()
    }

    fn rfc850(date: DateTime<Utc>) -> String {
        date.format("%A, %d-%b-%y %H:%M:%S GMT").to_string()
    }

    fn asctime(date: DateTime<Utc>) -> String {
        date.format("%a %b %e %H:%M:%S %Y").to_string()
    }

    proptest! {
        #[test]
        fn parsers_never_panic(value in any::<String>()) {
            let _ = parse_deprecation(&value);
            let _ = parse_sunset(&value);
        }

        #[test]
        fn parsers_never_panic_on_date_like_text(
            value in "[@\\-0-9A-Za-z ,:;=\t\"?]{0,40}"
        ) {
            let _ = parse_deprecation(&value);
            let _ = parse_sunset(&value);
        }

        #[test]
        fn structured_date_round_trips(
            seconds in -8_000_000_000_000i64..=8_000_000_000_000,
            params in proptest::option::of(";[a-z][a-z0-9]{0,5}(=[a-z0-9]{1,5})?"),
        ) {
            let value = format!("@{seconds}{}", params.unwrap_or_default());
            prop_assert_eq!(parse_deprecation(&value), Deprecation::Since(ts(seconds)));
        }

        #[test]
        fn imf_fixdate_from_httpdate_round_trips(seconds in 0u64..=253_402_300_799) {
            let time = UNIX_EPOCH + Duration::from_secs(seconds);
            let text = httpdate::fmt_http_date(time);
            let expected = i64::try_from(seconds).ok().and_then(|s| DateTime::from_timestamp(s, 0));
            prop_assert_eq!(parse_sunset(&text), expected);
            prop_assert_eq!(parse_deprecation(&text), Deprecation::Since(ts(i64::try_from(seconds).unwrap_or_default())));
            let utc = format!("{} UTC", text.trim_end_matches(" GMT"));
            prop_assert_eq!(parse_sunset(&utc), expected);
        }

        #[test]
        fn every_form_round_trips(seconds in FOUR_DIGIT_YEARS) {
            let date = ts(seconds);
            prop_assert_eq!(parse_sunset(&imf(date)), Some(date));
            prop_assert_eq!(parse_sunset(&asctime(date)), Some(date));
            prop_assert_eq!(parse_deprecation(&asctime(date)), Deprecation::Since(date));
        }

        #[test]
        fn rfc850_round_trips_within_its_window(offset_days in -17_500i64..17_500) {
            let now = Utc::now();
            let date = ts(now.timestamp() + offset_days * 86_400);
            prop_assert_eq!(parse_sunset(&rfc850(date)), Some(date));
            let utc = rfc850(date).replace(" GMT", " UTC");
            prop_assert_eq!(parse_sunset(&utc), Some(date));
        }
    }
}
