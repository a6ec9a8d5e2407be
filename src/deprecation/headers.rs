//! Parsing of the `Deprecation` response header (RFC 9745); `Sunset` (RFC 8594) is an
//! HTTP-date, read by [`parse_http_date`].
//!
//! The parser is total: it accepts any string, never panics, and maps what it cannot read to
//! [`Deprecation::Unrecognized`].

use chrono::{DateTime, Utc};

use crate::text::server_text;
use crate::timestamp::parse_http_date;

/// The value of a `Deprecation` response header.
///
/// Whatever the form, a response that carries the header is deprecated, except with the value
/// `false` (or `?0`), which the client reads as no header at all: the variants only tell what
/// is known about when it happened.
///
/// ```
/// use business_records::{Deprecation, DeprecationNotice};
///
/// fn describe(notice: &DeprecationNotice) -> String {
///     match &notice.deprecation {
///         Some(Deprecation::Since(date)) => format!("deprecated since {date}"),
///         Some(Deprecation::Unrecognized(raw)) => format!("deprecated (header `{raw}`)"),
///         Some(_) => "deprecated".to_owned(),
///         None => "sunset scheduled".to_owned(),
///     }
/// }
/// # let _ = describe;
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Deprecation {
    /// Deprecated since this instant: an RFC 9745 structured-field date (`@1767225600`) or,
    /// from servers that follow the older drafts, an HTTP-date.
    Since(DateTime<Utc>),
    /// Deprecated, date not given: the legacy value `true`.
    Deprecated,
    /// A value in none of the known forms, kept as received (surrounding whitespace removed,
    /// control characters escaped, cut to 1 KiB). The resource is still treated as deprecated.
    Unrecognized(String),
}

impl Deprecation {
    /// The instant the resource was deprecated, when the header gave one.
    ///
    /// ```
    /// use business_records::Deprecation;
    ///
    /// assert_eq!(Deprecation::Deprecated.since(), None);
    /// ```
    #[must_use]
    pub fn since(&self) -> Option<DateTime<Utc>> {
        if let Self::Since(date) = self { Some(*date) } else { None }
    }
}

/// Parses a `Deprecation` header value: `None` for a value that says "not deprecated",
/// `false` (any case) or the structured-field boolean `?0`.
///
/// Accepted forms, tried in this order:
/// - an RFC 9745 structured-field date, `@` and an integer number of seconds since the Unix
///   epoch (negative allowed, at most 15 digits); parameters after `;` are ignored;
/// - the legacy values `true` (any case) and `?1`;
/// - an HTTP-date in any of the forms [`parse_http_date`] accepts.
///
/// Anything else, including a date outside the supported range, becomes
/// [`Deprecation::Unrecognized`] with the raw text (made safe to show: control characters
/// escaped, cut to 1 KiB): the header's presence alone means the resource is deprecated.
#[must_use]
pub(crate) fn parse_deprecation(value: &str) -> Option<Deprecation> {
    let value = value.trim_matches([' ', '\t']);
    let read = match value.strip_prefix('@') {
        Some(rest) => parse_sf_date(rest).map(Deprecation::Since),
        None if value.eq_ignore_ascii_case("false") || value == "?0" => return None,
        None if value.eq_ignore_ascii_case("true") || value == "?1" => Some(Deprecation::Deprecated),
        None => parse_http_date(value).map(Deprecation::Since),
    };
    Some(read.unwrap_or_else(|| Deprecation::Unrecognized(server_text(value))))
}

/// Parses the part of a structured-field date after `@`: an sf-integer (at most 15 digits),
/// then nothing or parameters, which are ignored.
fn parse_sf_date(rest: &str) -> Option<DateTime<Utc>> {
    let number = rest.split(';').next().unwrap_or_default().trim_end_matches([' ', '\t']);
    let digits = number.strip_prefix('-').unwrap_or(number);
    if digits.len() > 15 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    DateTime::from_timestamp(number.parse().ok()?, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    use crate::timestamp::http_date::tests::{EXAMPLE, READ_RANGE, asctime, imf, ts};

    #[test]
    fn deprecation_legacy_true_and_false() {
        for raw in ["true", "True", "\ttrue ", "?1"] {
            assert_eq!(parse_deprecation(raw), Some(Deprecation::Deprecated), "{raw:?}");
        }
        for raw in ["false", " FALSE ", "?0"] {
            assert_eq!(parse_deprecation(raw), None, "{raw:?}");
        }
    }

    #[test]
    fn deprecation_structured_date() {
        assert_eq!(parse_deprecation("@1767225600"), Some(Deprecation::Since(ts(1_767_225_600))));
        assert_eq!(parse_deprecation("@0"), Some(Deprecation::Since(ts(0))));
        assert_eq!(parse_deprecation("@-86400"), Some(Deprecation::Since(ts(-86_400))));
        assert_eq!(parse_deprecation(" @1767225600 "), Some(Deprecation::Since(ts(1_767_225_600))));
    }

    #[test]
    fn deprecation_parameters_are_ignored() {
        let expected = Some(Deprecation::Since(ts(1_767_225_600)));
        assert_eq!(parse_deprecation("@1767225600;foo=bar"), expected);
        assert_eq!(parse_deprecation("@1767225600;a;b=?0;c=\"x\""), expected);
    }

    #[test]
    fn deprecation_http_date_legacy() {
        let expected = Some(Deprecation::Since(ts(EXAMPLE)));
        assert_eq!(parse_deprecation("Sun, 06 Nov 1994 08:49:37 GMT"), expected);
        assert_eq!(parse_deprecation("Sun Nov  6 08:49:37 1994"), expected);
    }

    #[test]
    fn deprecation_malformed_is_kept_raw() {
        for raw in [
            "",
            "@",
            "@-",
            "@12.5",
            "@1e9",
            "@ 12",
            "@12 x",
            "@+12",
            "@--12",
            "@1234567890123456",
            "@999999999999999",
            "yes please",
            "Sun, 32 Nov 1994 08:49:37 GMT",
        ] {
            assert_eq!(parse_deprecation(raw), Some(Deprecation::Unrecognized(raw.to_owned())), "{raw:?}");
        }
        assert_eq!(parse_deprecation("  soon\t"), Some(Deprecation::Unrecognized("soon".to_owned())));
    }

    proptest! {
        #[test]
        fn parser_never_panics(value in any::<String>()) {
            let _ = parse_deprecation(&value);
        }

        #[test]
        fn parser_never_panics_on_date_like_text(
            value in "[@\\-0-9A-Za-z ,:;=\t\"?]{0,40}"
        ) {
            let _ = parse_deprecation(&value);
        }

        #[test]
        fn structured_date_round_trips(
            seconds in -8_000_000_000_000i64..=8_000_000_000_000,
            params in proptest::option::of(";[a-z][a-z0-9]{0,5}(=[a-z0-9]{1,5})?"),
        ) {
            let value = format!("@{seconds}{}", params.unwrap_or_default());
            prop_assert_eq!(parse_deprecation(&value), Some(Deprecation::Since(ts(seconds))));
        }

        #[test]
        fn http_dates_read_as_since(seconds in READ_RANGE) {
            let date = ts(seconds);
            prop_assert_eq!(parse_deprecation(&imf(date)), Some(Deprecation::Since(date)));
            prop_assert_eq!(parse_deprecation(&asctime(date)), Some(Deprecation::Since(date)));
        }
    }
}
