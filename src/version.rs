//! API versions (the URL segment) and preview labels (`X-API-Preview`).

use std::fmt;
use std::str::FromStr;

use http::HeaderValue;

use crate::Error;

/// The API version, sent as the first path segment after the base URL (`/v1/...`), which is
/// how it displays.
///
/// ```
/// use business_records::ApiVersion;
/// assert_eq!(ApiVersion::V1.to_string(), "v1");
/// assert_eq!("v2".parse::<ApiVersion>()?, ApiVersion::new(2)?);
/// # Ok::<(), business_records::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ApiVersion(u32);

impl ApiVersion {
    /// `v1`, the current stable version (API Part 9).
    pub const V1: ApiVersion = ApiVersion(1);

    /// Version `v{number}`; the number must be at least 1.
    pub fn new(number: u32) -> Result<Self, Error> {
        if number == 0 {
            return Err(Error::invalid("api_version", "expected a version of 1 or more, got 0"));
        }
        Ok(ApiVersion(number))
    }

    /// The version number (`1` for `v1`).
    pub fn number(self) -> u32 {
        self.0
    }
}

impl Default for ApiVersion {
    fn default() -> Self {
        ApiVersion::V1
    }
}

impl fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}", self.0)
    }
}

impl FromStr for ApiVersion {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        // Digits only: `u32`'s parser would take a `+` too.
        let digits = s.strip_prefix(['v', 'V']).filter(|d| d.bytes().all(|b| b.is_ascii_digit()));
        let refused =
            || Error::invalid("api_version", format!("expected `v` and a number like `v1`, got {s:?}"));
        ApiVersion::new(digits.and_then(|d| d.parse().ok()).ok_or_else(refused)?)
    }
}

/// The `X-API-Preview` header of a preview label: a year and month, `YYYY-MM` (API Part 9.6);
/// the error names `preview`.
pub(crate) fn preview_header(label: impl AsRef<str>) -> Result<HeaderValue, Error> {
    let label = label.as_ref();
    let bytes = label.as_bytes();
    let well_formed =
        bytes.len() == 7 && bytes[4] == b'-' && bytes[..4].iter().chain(&bytes[5..]).all(u8::is_ascii_digit);
    let month_ok = well_formed && matches!(label[5..].parse::<u8>(), Ok(1..=12));
    let expected = "expected a `YYYY-MM` label with month 01 to 12";
    let refused = || Error::invalid("preview", format!("{expected}, got {label:?}"));
    HeaderValue::from_str(label).ok().filter(|_| month_ok).ok_or_else(refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse() {
        assert_eq!("v1".parse::<ApiVersion>().ok(), Some(ApiVersion::V1));
        assert_eq!("v12".parse::<ApiVersion>().ok().map(ApiVersion::number), Some(12));
        for bad in ["", "v", "1", "v0", "v+1", "v1.0", "version1"] {
            assert!(bad.parse::<ApiVersion>().is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn preview_labels() {
        for good in ["2026-01", "2026-12", "1999-09"] {
            assert!(preview_header(good).is_ok(), "{good}");
        }
        for bad in ["2026-00", "2026-13", "2026-1", "26-01", "2026/01", "2026-01-01", "abcd-ef", ""] {
            let err = preview_header(bad).unwrap_err();
            assert!(err.to_string().contains("preview"), "{err}");
        }
    }
}
