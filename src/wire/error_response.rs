//! Error responses, whatever their body looks like, and `Retry-After`.

use std::time::Duration;

use http::header::{HeaderMap, RETRY_AFTER};

use crate::bounds::MAX_SERVER_WAIT;
use crate::error::{ApiError, Endpoint, ErrorCode};

/// The wire shape of an error body (API Part 7).
#[derive(serde::Deserialize, Default)]
struct ErrorBody {
    error: Option<String>,
    error_description: Option<String>,
}

/// Builds an [`ApiError`](crate::error::ApiError) from an error response, whatever its body looks like.
pub(crate) fn api_error(status: u16, headers: &HeaderMap, body: &[u8], endpoint: &Endpoint) -> ApiError {
    // A body in another shape has neither.
    let ErrorBody { error, error_description } = serde_json::from_slice(body).unwrap_or_default();
    let code = error.map(|code| ErrorCode::parse(&code)).or_else(|| www_authenticate_error(headers));
    ApiError::new(status, code, endpoint.clone())
        .with_description(error_description.as_deref().map(crate::text::server_text))
        .with_retry_after(headers.get(RETRY_AFTER).and_then(|v| v.to_str().ok()).and_then(parse_retry_after))
}

/// The `error="..."` parameter of a `WWW-Authenticate: Bearer` challenge (RFC 6750 3).
fn www_authenticate_error(headers: &HeaderMap) -> Option<ErrorCode> {
    let value = headers.get(http::header::WWW_AUTHENTICATE)?.to_str().ok()?;
    let (_, error) = value.split_once("error=\"")?;
    Some(ErrorCode::parse(error.split_once('"')?.0))
}

/// `Retry-After` as delay-seconds or an HTTP-date (RFC 9110 10.2.3), at most
/// [`MAX_SERVER_WAIT`]: a longer wait, however many digits it has, counts as that long.
fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    let wait = if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        Duration::from_secs(value.parse().unwrap_or(u64::MAX))
    } else {
        let when = crate::timestamp::parse_http_date(value)?;
        (when - chrono::Utc::now()).to_std().unwrap_or(Duration::ZERO)
    };
    Some(wait.min(MAX_SERVER_WAIT))
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    #[test]
    fn retry_after_forms() {
        assert_eq!(parse_retry_after("5"), Some(Duration::from_secs(5)));
        assert_eq!(parse_retry_after(" 0 "), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), Some(Duration::ZERO));
        let later = std::time::SystemTime::now()
            .checked_add(Duration::from_secs(120))
            .unwrap_or_else(std::time::SystemTime::now);
        let parsed = parse_retry_after(&httpdate::fmt_http_date(later)).unwrap_or_default();
        assert!(parsed > Duration::from_secs(100) && parsed <= Duration::from_secs(120), "{parsed:?}");
        assert_eq!(parse_retry_after("soon"), None);
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(parse_retry_after("1.5"), None);
    }

    #[test]
    fn retry_after_is_at_most_a_day() {
        for value in [
            "86401",
            "1000000000000",
            "18446744073709551615",
            "99999999999999999999999",
            "Fri, 31 Dec 9999 23:59:59 GMT",
        ] {
            assert_eq!(parse_retry_after(value), Some(MAX_SERVER_WAIT), "{value}");
        }
        assert_eq!(parse_retry_after("86400"), Some(MAX_SERVER_WAIT));
    }

    proptest::proptest! {
        /// Any value: no panic, and never longer than the bound.
        #[test]
        fn retry_after_never_panics_and_is_bounded(value in "\\PC*|[0-9]{1,40}|[ 0-9A-Za-z,:-]{0,40}") {
            proptest::prop_assert!(parse_retry_after(&value).is_none_or(|wait| wait <= MAX_SERVER_WAIT));
        }
    }

    #[test]
    fn server_text_is_bounded_and_escaped() {
        let description = format!("line one\nline two\u{1b}[31m{}", "x".repeat(100 * 1024));
        let body = serde_json::json!({"error": format!("weird\n{}", "c".repeat(5000)), "error_description": description});
        let e = api_error(400, &HeaderMap::new(), body.to_string().as_bytes(), &"/v1/companies".into());
        let text = e.description().unwrap_or_default();
        assert!(
            text.starts_with("line one\\nline two\\u{1b}[31mxxx") && text.len() <= 1027,
            "{}",
            text.len()
        );
        let code = e.code().map(ErrorCode::as_str).unwrap_or_default();
        assert!(code.starts_with("weird\\n") && code.len() <= 1027);
    }

    #[test]
    fn error_bodies_of_any_shape() {
        let headers = HeaderMap::new();
        let e = api_error(
            400,
            &headers,
            br#"{"error":"invalid_cursor","error_description":"bad"}"#,
            &"/v1/companies".into(),
        );
        assert_eq!((e.code(), e.description()), (Some(&ErrorCode::InvalidCursor), Some("bad")));
        let e = api_error(502, &headers, b"<html>bad gateway</html>", &"/v1/companies".into());
        assert_eq!((e.status(), e.code(), e.description()), (502, None, None));
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::WWW_AUTHENTICATE,
            HeaderValue::from_static(r#"Bearer realm="api", error="insufficient_scope", scope="api/read""#),
        );
        let e = api_error(403, &headers, b"", &"/v1/companies".into());
        assert_eq!(e.code(), Some(&ErrorCode::InsufficientScope));
    }
}
