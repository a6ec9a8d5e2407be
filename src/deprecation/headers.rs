//! Parsing of the `Deprecation` response header (RFC 9745); `Sunset` (RFC 8594) is an
//! HTTP-date, read by [`parse_http_date`].
//!
//! The parser is total: it accepts any string, never panics, and maps what it cannot read to
//! [`Deprecation::Unrecognized`].

use chrono::{DateTime, Utc};

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
    /// A value in none of the known forms, kept as received (surrounding whitespace removed).
    /// The resource is still treated as deprecated.
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
/// - an HTTP-date in any of the forms [`parse_http_date`] accepts.
///
/// Anything else, including a date outside the supported range, becomes
/// [`Deprecation::Unrecognized`] with the raw text: the header's presence alone means the
/// resource is deprecated.
#[must_use]
pub(crate) fn parse_deprecation(value: &str) -> Deprecation {
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

    use crate::timestamp::http_date::tests::{EXAMPLE, READ_RANGE, asctime, imf, ts};

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
            prop_assert_eq!(parse_deprecation(&value), Deprecation::Since(ts(seconds)));
        }

        #[test]
        fn http_dates_read_as_since(seconds in READ_RANGE) {
            let date = ts(seconds);
            prop_assert_eq!(parse_deprecation(&imf(date)), Deprecation::Since(date));
            prop_assert_eq!(parse_deprecation(&asctime(date)), Deprecation::Since(date));
        }
    }
}
