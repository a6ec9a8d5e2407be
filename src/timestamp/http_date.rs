//! HTTP-dates (RFC 9110 section 5.6.7), as `Sunset`, `Deprecation` and `Retry-After` send them:
//! read by `httpdate` once the variants servers send are written as an IMF-fixdate.

use chrono::{DateTime, Datelike, TimeDelta, Utc};

/// Parses an HTTP-date (`Sunset`, legacy `Deprecation`, `Retry-After`).
///
/// All three forms of RFC 9110 section 5.6.7 are accepted:
/// - IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`;
/// - obsolete RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT` (a two-digit year more than 50 years
///   in the future is read as the most recent past year with the same last two digits);
/// - asctime: `Sun Nov  6 08:49:37 1994`.
///
/// The parser is lenient where servers are known to stray: `UTC` is accepted in place of
/// `GMT`, names of days and months are matched in any case, day names may be short or long
/// in any form, runs of whitespace count as one space, and the RFC 850 form may carry a
/// four-digit year. A second of `60` (a leap second) reads as the next minute. The day name
/// must be the date's, and the date between 1970 and 9999 (the range of `httpdate`).
/// Returns `None` for anything else; never panics.
pub(crate) fn parse_http_date(value: &str) -> Option<DateTime<Utc>> {
    parse_http_date_in(value, Utc::now().year())
}

/// Parses an HTTP-date, reading two-digit years relative to `current_year`.
fn parse_http_date_in(value: &str, current_year: i32) -> Option<DateTime<Utc>> {
    let (imf_fixdate, leap_second) = normalise(value, current_year)?;
    // `httpdate` reads the years 1970 to 9999 only, all within `DateTime`'s range.
    let time = DateTime::<Utc>::from(httpdate::parse_http_date(&imf_fixdate).ok()?);
    time.checked_add_signed(TimeDelta::seconds(i64::from(leap_second)))
}

/// Writes any form [`parse_http_date`] accepts as an IMF-fixdate for `httpdate`, which checks
/// every field; and whether its second was a leap second (`:60`, written `:59`).
fn normalise(value: &str, current_year: i32) -> Option<(String, bool)> {
    // Seven at most: one more than any form has.
    let parts: Vec<&str> = value.split_ascii_whitespace().take(7).collect();
    let (weekday, day, month, year, time) = match parts[..] {
        // IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`
        [weekday, day, month, year, time, zone] if is_utc(zone) => {
            (weekday.strip_suffix(',')?, day, month, year.to_owned(), time)
        }
        // RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT`
        [weekday, date, time, zone] if is_utc(zone) => {
            let [day, month, year] = date.splitn(4, '-').collect::<Vec<_>>()[..] else { return None };
            let year = match year.parse() {
                Ok(two_digits) if year.len() == 2 && year.bytes().all(|b| b.is_ascii_digit()) => {
                    two_digit_year(two_digits, current_year).to_string()
                }
                _ => year.to_owned(),
            };
            (weekday.strip_suffix(',')?, day, month, year, time)
        }
        // asctime: `Sun Nov  6 08:49:37 1994`
        [weekday, month, day, time, year] => (weekday, day, month, year.to_owned(), time),
        _ => return None,
    };
    let long = WEEKDAYS
        .iter()
        .find(|long| long.eq_ignore_ascii_case(weekday) || long[..3].eq_ignore_ascii_case(weekday))?;
    let weekday = &long[..3];
    let month = MONTHS.iter().find(|name| name.eq_ignore_ascii_case(month))?;
    let (time, leap_second) = match time.strip_suffix(":60") {
        Some(minute) => (format!("{minute}:59"), true),
        None => (time.to_owned(), false),
    };
    Some((format!("{weekday}, {day:0>2} {month} {year} {time} GMT"), leap_second))
}

/// Reads a two-digit year as the year with those last digits in the hundred years that end
/// 50 years from now (from `current_year - 49` to `current_year + 50`). This follows RFC 9110:
/// a year that would be more than 50 years in the future is the most recent past year with the
/// same last two digits.
fn two_digit_year(two_digits: i32, current_year: i32) -> i32 {
    let first = current_year - 49;
    first + (two_digits - first).rem_euclid(100)
}

const MONTHS: [&str; 12] =
    ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

const WEEKDAYS: [&str; 7] = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];

fn is_utc(zone: &str) -> bool {
    zone.eq_ignore_ascii_case("GMT") || zone.eq_ignore_ascii_case("UTC")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::time::{Duration, UNIX_EPOCH};

    /// The instant `seconds` after the epoch.
    pub(crate) fn ts(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(seconds, 0).unwrap_or_default()
    }

    /// 1994-11-06T08:49:37Z, the RFC 9110 example.
    pub(crate) const EXAMPLE: i64 = 784_111_777;

    #[test]
    fn rfc850_two_digit_years_follow_the_fifty_year_rule() {
        assert_eq!(two_digit_year(94, 2026), 1994);
        assert_eq!(two_digit_year(26, 2026), 2026);
        assert_eq!(two_digit_year(76, 2026), 2076);
        assert_eq!(two_digit_year(77, 2026), 1977);
        assert_eq!(two_digit_year(0, 2099), 2100);
        assert_eq!(two_digit_year(49, 2099), 2149);
        assert_eq!(two_digit_year(50, 2099), 2050);
        assert_eq!(two_digit_year(99, 2000), 1999);
        let parsed = parse_http_date_in("Wednesday, 01-Jan-70 00:00:00 GMT", 2026);
        assert_eq!(parsed, Some(ts(3_155_760_000)));
        let parsed = parse_http_date_in("Saturday, 01-Jan-77 00:00:00 GMT", 2026);
        assert_eq!(parsed, Some(ts(220_924_800)));
        let four_digits = parse_http_date_in("Sunday, 06-Nov-1994 08:49:37 GMT", 2026);
        assert_eq!(four_digits, Some(ts(EXAMPLE)));
    }

    #[test]
    fn sunset_three_forms() {
        let expected = Some(ts(EXAMPLE));
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), expected);
        assert_eq!(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), expected);
        assert_eq!(parse_http_date("Sun Nov  6 08:49:37 1994"), expected);
        assert_eq!(parse_http_date("Sun Nov 06 08:49:37 1994"), expected);
    }

    #[test]
    fn sunset_utc_suffix_and_case() {
        let expected = Some(ts(EXAMPLE));
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 08:49:37 UTC"), expected);
        assert_eq!(parse_http_date("Sunday, 06-Nov-94 08:49:37 UTC"), expected);
        assert_eq!(parse_http_date("sun, 06 NOV 1994 08:49:37 gmt"), expected);
        assert_eq!(parse_http_date("  Sun,  06 Nov 1994  08:49:37 GMT "), expected);
    }

    #[test]
    fn sunset_future_and_far_dates() {
        assert_eq!(parse_http_date("Fri, 01 Jan 2027 00:00:00 GMT"), Some(ts(1_798_761_600)));
        assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(ts(0)));
        assert_eq!(parse_http_date("Fri, 31 Dec 9999 23:59:59 GMT"), Some(ts(253_402_300_799)));
        // Outside `httpdate`'s range, 1970 to 9999.
        assert_eq!(parse_http_date("Wed, 31 Dec 1969 23:59:59 GMT"), None);
        assert_eq!(parse_http_date("Sat, 01 Jan 10000 00:00:00 GMT"), None);
    }

    #[test]
    fn sunset_leap_second_rolls_over() {
        assert_eq!(
            parse_http_date("Sat, 31 Dec 2016 23:59:60 GMT"),
            parse_http_date("Sun, 01 Jan 2017 00:00:00 GMT")
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
            "Mon, 06 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov +994 08:49:37 GMT",
            "Sunday, 06-Nov-+4 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT GMT",
        ] {
            assert_eq!(parse_http_date(raw), None, "{raw:?}");
        }
    }

    /// Seconds from 1970-01-01 to 9999-12-31, the range read.
    pub(crate) const READ_RANGE: std::ops::RangeInclusive<i64> = 0..=253_402_300_799;

    pub(crate) fn imf(date: DateTime<Utc>) -> String {
        date.format("%a, %d %b %Y %H:%M:%S GMT").to_string()
    }

    fn rfc850(date: DateTime<Utc>) -> String {
        date.format("%A, %d-%b-%y %H:%M:%S GMT").to_string()
    }

    pub(crate) fn asctime(date: DateTime<Utc>) -> String {
        date.format("%a %b %e %H:%M:%S %Y").to_string()
    }

    proptest! {
        #[test]
        fn a_two_digit_year_is_the_one_with_its_digits_in_the_window(
            two_digits in 0..100i32,
            current_year in 1970..9999i32,
        ) {
            let year = two_digit_year(two_digits, current_year);
            prop_assert_eq!(year.rem_euclid(100), two_digits);
            prop_assert!(year > current_year - 50 && year <= current_year + 50, "{year}");
        }

        #[test]
        fn never_panics(value in any::<String>()) {
            let _ = parse_http_date(&value);
        }

        #[test]
        fn never_panics_on_date_like_text(value in "[@\\-0-9A-Za-z ,:;=\t\"?]{0,40}") {
            let _ = parse_http_date(&value);
        }

        /// `httpdate`, an independent implementation, writes what this parser reads.
        #[test]
        fn imf_fixdate_from_httpdate_round_trips(seconds in 0u64..=253_402_300_799) {
            let time = UNIX_EPOCH + Duration::from_secs(seconds);
            let text = httpdate::fmt_http_date(time);
            let expected = i64::try_from(seconds).ok().and_then(|s| DateTime::from_timestamp(s, 0));
            prop_assert_eq!(parse_http_date(&text), expected);
            let utc = format!("{} UTC", text.trim_end_matches(" GMT"));
            prop_assert_eq!(parse_http_date(&utc), expected);
        }

        #[test]
        fn every_form_round_trips(seconds in READ_RANGE) {
            let date = ts(seconds);
            prop_assert_eq!(parse_http_date(&imf(date)), Some(date));
            prop_assert_eq!(parse_http_date(&asctime(date)), Some(date));
        }

        #[test]
        fn rfc850_round_trips_within_its_window(offset_days in -17_500i64..17_500) {
            let now = Utc::now();
            let date = ts(now.timestamp() + offset_days * 86_400);
            prop_assert_eq!(parse_http_date(&rfc850(date)), Some(date));
            let utc = rfc850(date).replace(" GMT", " UTC");
            prop_assert_eq!(parse_http_date(&utc), Some(date));
        }
    }
}
