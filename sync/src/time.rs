//! Timestamps as the mirror stores them: `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`, UTC, so that text
//! order is time order, read from the forms servers send.

use chrono::{DateTime, NaiveDateTime, SecondsFormat, Utc};
use serde_json::Value;

/// Epoch numbers above this are milliseconds (it is the year 5138 in seconds).
const MILLIS_ABOVE: i64 = 100_000_000_000;

/// A timestamp field's value as an instant: RFC 3339 text, `YYYY-MM-DD HH:MM:SS` (UTC), or an
/// epoch number of seconds or milliseconds; `None` for anything else.
pub(crate) fn parse(value: &Value) -> Option<DateTime<Utc>> {
    match value {
        Value::String(text) => DateTime::parse_from_rfc3339(text)
            .map(|t| t.with_timezone(&Utc))
            .or_else(|_| NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f").map(|t| t.and_utc()))
            .ok(),
        Value::Number(number) => {
            let n = number.as_i64()?;
            if n.abs() > MILLIS_ABOVE {
                DateTime::from_timestamp_millis(n)
            } else {
                DateTime::from_timestamp(n, 0)
            }
        }
        _ => None,
    }
}

/// `instant` in the stored form.
pub(crate) fn format(instant: DateTime<Utc>) -> String {
    instant.to_rfc3339_opts(SecondsFormat::Nanos, true)
}

/// A stored timestamp read back; `None` if it is not one.
pub(crate) fn read(stored: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(stored).ok().map(|t| t.with_timezone(&Utc))
}

/// Now, in the stored form.
pub(crate) fn now() -> String {
    format(Utc::now())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_form_reads_as_the_same_instant_and_formats_in_text_order() {
        let forms = [
            json!("2024-03-01T10:00:00Z"),
            json!("2024-03-01T11:00:00+01:00"),
            json!("2024-03-01 10:00:00"),
            json!(1_709_287_200),
            json!(1_709_287_200_000_i64),
        ];
        let instants: Vec<_> = forms.iter().map(|f| parse(f).expect("a timestamp")).collect();
        assert!(instants.windows(2).all(|w| w[0] == w[1]), "{instants:?}");
        assert_eq!(format(instants[0]), "2024-03-01T10:00:00.000000000Z");
        assert_eq!(read(&format(instants[0])), Some(instants[0]));
        assert!(format(instants[0]) < format(instants[0] + chrono::Duration::nanoseconds(1)));
        assert_eq!(parse(&json!("not a date")), None);
        assert_eq!(parse(&json!(null)), None);
    }
}
