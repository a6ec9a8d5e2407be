//! HTTP-dates as the server writes them (`Sunset`, `Retry-After`).

use chrono::{DateTime, Utc};

/// An instant as an IMF-fixdate (RFC 9110 section 5.6.7), `Sun, 06 Nov 1994 08:49:37 GMT`, to
/// the second, rounded down.
pub(crate) fn format_http_date(date: DateTime<Utc>) -> String {
    date.format("%a, %d %b %Y %H:%M:%S GMT").to_string()
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    /// `httpdate`, another implementation, writes the same text and reads it back.
    #[test]
    fn dates_match_httpdate() {
        for seconds in [0, 784_111_777, 1_798_761_600, 253_402_300_799] {
            let date = DateTime::from_timestamp(seconds, 0).unwrap();
            let time = UNIX_EPOCH + Duration::from_secs(u64::try_from(seconds).unwrap());
            assert_eq!(format_http_date(date), httpdate::fmt_http_date(time));
            assert_eq!(httpdate::parse_http_date(&format_http_date(date)).unwrap(), time);
        }
        let with_millis = DateTime::from_timestamp(784_111_777, 999_000_000).unwrap();
        assert_eq!(format_http_date(with_millis), "Sun, 06 Nov 1994 08:49:37 GMT");
    }
}
