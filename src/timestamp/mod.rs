//! Every date the crate reads: record timestamps (this module) and HTTP-dates in headers
//! ([`http_date`]).
//!
//! The spec does not fix the format of `createdAt` and `updatedAt`, so [`parse_timestamp`]
//! reads RFC 3339 and the variants servers commonly send:
//!
//! | Form | Example | Read as |
//! |---|---|---|
//! | RFC 3339 | `2024-01-02T03:04:05Z`, `2024-01-02T03:04:05.123+02:00` | that instant |
//! | space instead of `T`, lowercase `t`/`z` | `2024-01-02 03:04:05Z` | that instant |
//! | no offset | `2024-01-02T03:04:05`, `2024-01-02 03:04:05.5` | UTC |
//! | offset without a colon | `2024-01-02T03:04:05+0200` | that instant |
//! | a date alone | `2024-01-02` | midnight UTC |
//! | a JSON number | `1704164645`, `1704164645.25`, `1704164645000` | epoch seconds, or milliseconds when at least 10^11 (from March 1973 in milliseconds) |
//!
//! A string of digits (`"1704164645"`) is not read as an epoch: it is as likely a basic ISO
//! date (`"20240102"`), so it is left unread. Fractional seconds keep up to nanoseconds.
//! Anything else, and any string longer than 64 bytes, is `None`.

pub(crate) mod http_date;

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};

pub(crate) use http_date::parse_http_date;

/// Longest string tried as a timestamp.
const MAX_TIMESTAMP_LEN: usize = 64;

/// From this magnitude on, an epoch number counts milliseconds (10^11 seconds is the year 5138;
/// 10^11 milliseconds is March 1973).
const MILLIS_FROM: f64 = 1e11;

/// Reads a timestamp string in RFC 3339 or one of the common variants (see the module docs).
pub(crate) fn parse_timestamp(text: &str) -> Option<DateTime<Utc>> {
    if text.len() > MAX_TIMESTAMP_LEN {
        return None;
    }
    parse_utc_seconds(text).or_else(|| parse_variants(text))
}

/// RFC 3339 with `T`, `t` or a space between date and time, then the variants, in order.
#[cold]
fn parse_variants(text: &str) -> Option<DateTime<Utc>> {
    let trimmed = text.trim();
    let offset = |format| DateTime::parse_from_str(trimmed, format).map(|date| date.to_utc());
    let naive = |format| NaiveDateTime::parse_from_str(trimmed, format).map(|date| date.and_utc());
    DateTime::parse_from_rfc3339(text)
        .map(|date| date.to_utc())
        .or_else(|_| offset("%Y-%m-%dT%H:%M:%S%.f%z"))
        .or_else(|_| offset("%Y-%m-%d %H:%M:%S%.f%z"))
        .or_else(|_| naive("%Y-%m-%dT%H:%M:%S%.f"))
        .or_else(|_| naive("%Y-%m-%d %H:%M:%S%.f"))
        .or_else(|_| NaiveDate::parse_from_str(trimmed, "%Y-%m-%d").map(|d| NaiveDateTime::from(d).and_utc()))
        .ok()
}

/// `YYYY-MM-DDTHH:MM:SSZ`, the form the reference server sends, read without chrono's parser:
/// a listing reads two per record.
fn parse_utc_seconds(text: &str) -> Option<DateTime<Utc>> {
    let b = text.as_bytes();
    let digits = |at: usize, len: usize| {
        let field = b.get(at..at + len)?;
        field.iter().try_fold(0, |n, &d| d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0')))
    };
    if b.len() != 20
        || [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':'), (19, b'Z')]
            .iter()
            .any(|&(at, c)| b[at] != c)
    {
        return None;
    }
    let date = NaiveDate::from_ymd_opt(i32::try_from(digits(0, 4)?).ok()?, digits(5, 2)?, digits(8, 2)?)?;
    Some(date.and_hms_opt(digits(11, 2)?, digits(14, 2)?, digits(17, 2)?)?.and_utc())
}

/// Reads an epoch number: seconds, or milliseconds from 10^11 on. `None` outside the range
/// `DateTime` can hold, and for NaN.
pub(crate) fn from_epoch(number: f64) -> Option<DateTime<Utc>> {
    let seconds = if number.abs() >= MILLIS_FROM { number / 1000.0 } else { number };
    let whole = seconds.floor();
    // Outside this range (NaN and the infinities included) the conversion to i64 would saturate;
    // `DateTime` holds far less.
    if !(-1e15..=1e15).contains(&whole) {
        return None;
    }
    let nanos = ((seconds - whole) * 1e9).round().clamp(0.0, 999_999_999.0) as u32;
    DateTime::from_timestamp(whole as i64, nanos)
}

/// Reads an integer epoch exactly: seconds, or milliseconds from 10^11 on.
pub(crate) fn from_epoch_int(number: i128) -> Option<DateTime<Utc>> {
    let number = i64::try_from(number).ok()?;
    if number.unsigned_abs() >= MILLIS_FROM as u64 {
        DateTime::from_timestamp_millis(number)
    } else {
        DateTime::from_timestamp(number, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn at(text: &str) -> Option<String> {
        parse_timestamp(text).map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true))
    }

    #[test]
    fn rfc3339_and_its_variants() {
        let cases = [
            ("2024-01-02T03:04:05Z", "2024-01-02T03:04:05Z"),
            ("2024-01-02t03:04:05z", "2024-01-02T03:04:05Z"),
            ("2024-01-02T03:04:05+02:00", "2024-01-02T01:04:05Z"),
            ("2024-01-02T03:04:05.123456789Z", "2024-01-02T03:04:05.123456789Z"),
            ("2024-01-02 03:04:05Z", "2024-01-02T03:04:05Z"),
            ("2024-01-02 03:04:05", "2024-01-02T03:04:05Z"),
            ("2024-01-02T03:04:05", "2024-01-02T03:04:05Z"),
            ("2024-01-02 03:04:05.5", "2024-01-02T03:04:05.500Z"),
            ("2024-01-02T03:04:05+0200", "2024-01-02T01:04:05Z"),
            ("2024-01-02 03:04:05 +02:00", "2024-01-02T01:04:05Z"),
            (" 2024-01-02T03:04:05 ", "2024-01-02T03:04:05Z"),
            ("2024-01-02", "2024-01-02T00:00:00Z"),
        ];
        for (text, expected) in cases {
            assert_eq!(at(text).as_deref(), Some(expected), "{text:?}");
        }
    }

    #[test]
    fn what_is_not_a_timestamp() {
        for text in [
            "",
            "yesterday",
            "1704164645",
            "20240102",
            "2024-13-02T03:04:05Z",
            "2024-01-02T25:04:05Z",
            "Tue, 02 Jan 2024 03:04:05 GMT",
            "2024-01-02T03:04:05Z and then some more text that makes it too long to read",
        ] {
            assert_eq!(parse_timestamp(text), None, "{text:?}");
        }
    }

    #[test]
    fn epoch_numbers() {
        let iso =
            |d: Option<DateTime<Utc>>| d.map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true));
        assert_eq!(iso(from_epoch_int(1_704_164_645)).as_deref(), Some("2024-01-02T03:04:05Z"));
        assert_eq!(iso(from_epoch_int(1_704_164_645_250)).as_deref(), Some("2024-01-02T03:04:05.250Z"));
        assert_eq!(iso(from_epoch(1_704_164_645.25)).as_deref(), Some("2024-01-02T03:04:05.250Z"));
        assert_eq!(iso(from_epoch(1_704_164_645_250.0)).as_deref(), Some("2024-01-02T03:04:05.250Z"));
        assert_eq!(iso(from_epoch_int(0)).as_deref(), Some("1970-01-01T00:00:00Z"));
        assert_eq!(iso(from_epoch_int(-86_400)).as_deref(), Some("1969-12-31T00:00:00Z"));
        assert_eq!(from_epoch(f64::NAN), None);
        assert_eq!(from_epoch(f64::INFINITY), None);
        assert_eq!(from_epoch(1e300), None);
        assert_eq!(from_epoch_int(i128::from(u64::MAX) * 4), None);
    }

    proptest! {
        #[test]
        fn no_string_panics(text in any::<String>()) {
            let _ = parse_timestamp(&text);
        }

        #[test]
        fn no_timestamp_like_string_panics(text in "[0-9:.TtZz +-]{0,40}") {
            let _ = parse_timestamp(&text);
        }

        #[test]
        fn no_number_panics(float in any::<f64>(), int in any::<i128>()) {
            let _ = from_epoch(float);
            let _ = from_epoch_int(int);
        }

        /// The digit-by-digit form reads what chrono reads, and refuses what it refuses: dates
        /// and times out of range included (`2023-02-29`, `24:00:00`, a leap second).
        #[test]
        fn whole_seconds_in_utc_read_as_chrono_reads_them(
            text in "[0-9]{4}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-6][0-9]:[0-6][0-9]Z",
        ) {
            let chrono = DateTime::parse_from_rfc3339(&text).ok().map(|d| d.with_timezone(&Utc));
            prop_assert_eq!(parse_timestamp(&text), chrono);
            prop_assert_eq!(parse_utc_seconds(&text).is_some(), chrono.is_some_and(|d| d.timestamp_subsec_nanos() == 0));
        }

        #[test]
        fn rfc3339_round_trips(seconds in -62_135_596_800i64..=253_402_300_799, nanos in 0u32..1_000_000_000) {
            let date = DateTime::from_timestamp(seconds, nanos).unwrap_or_default();
            let text = date.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true);
            prop_assert_eq!(parse_timestamp(&text), Some(date));
            prop_assert_eq!(parse_timestamp(&text.replace('T', " ").replace('Z', "")), Some(date));
        }
    }
}
