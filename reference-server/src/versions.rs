//! The version lifecycle of the reference API (API Parts 3 and 9): deprecation headers per
//! endpoint, sunset answers, extra version segments and preview labels.

use std::collections::HashMap;

use super::ErrorReply;
use super::http_date::format_http_date;
use super::reply::Answer;
use chrono::{DateTime, Utc};

/// The headers a deprecated endpoint sends (API Part 9.5): `Deprecation`, `Sunset` and
/// `Link`.
///
/// ```
/// use business_records_reference_server::DeprecationHeaders;
/// use chrono::{TimeZone, Utc};
///
/// let headers = DeprecationHeaders::since(Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap())
///     .sunset(Utc.with_ymd_and_hms(2027, 1, 1, 0, 0, 0).unwrap())
///     .successor("/v2/companies")
///     .link("https://docs.example.com/deprecations/v1", "deprecation");
/// assert_eq!(headers.deprecation_value(), Some("@1767225600"));
/// assert_eq!(headers.sunset_value(), Some("Fri, 01 Jan 2027 00:00:00 GMT"));
/// assert_eq!(
///     headers.link_lines(),
///     [r#"</v2/companies>; rel="successor-version", <https://docs.example.com/deprecations/v1>; rel="deprecation""#]
/// );
/// ```
#[must_use]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeprecationHeaders {
    deprecation: Option<String>,
    sunset: Option<String>,
    links: Vec<String>,
}

impl DeprecationHeaders {
    /// No headers yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// `Deprecation: true`, the legacy form the specification shows.
    pub fn deprecated() -> Self {
        Self::raw("true")
    }

    /// `Deprecation: false`: a server that sends the header on endpoints that are not
    /// deprecated.
    pub fn not_deprecated() -> Self {
        Self::raw("false")
    }

    /// `Deprecation: @<epoch seconds>` (RFC 9745): deprecated since `since`.
    pub fn since(since: DateTime<Utc>) -> Self {
        Self::raw(format!("@{}", since.timestamp()))
    }

    /// `Deprecation` with exactly this value: a legacy HTTP-date, or something malformed.
    pub fn raw(value: impl Into<String>) -> Self {
        Self { deprecation: Some(value.into()), ..Self::default() }
    }

    /// `Sunset: <IMF-fixdate>`: when the endpoint stops working.
    pub fn sunset(self, at: DateTime<Utc>) -> Self {
        self.sunset_raw(format_http_date(at))
    }

    /// `Sunset` with exactly this value (another HTTP-date form, or something malformed).
    pub fn sunset_raw(mut self, value: impl Into<String>) -> Self {
        self.sunset = Some(value.into());
        self
    }

    /// Adds `<target>; rel="rel"` to the first `Link` field line, comma-separated from the links
    /// already there. A relative target is resolved by clients against the request URL.
    pub fn link(mut self, target: impl AsRef<str>, rel: impl AsRef<str>) -> Self {
        let link = format!("<{}>; rel=\"{}\"", target.as_ref(), rel.as_ref());
        match self.links.first_mut() {
            Some(line) => {
                line.push_str(", ");
                line.push_str(&link);
            }
            None => self.links.push(link),
        }
        self
    }

    /// `<target>; rel="successor-version"`: the replacement of the endpoint.
    pub fn successor(self, target: impl AsRef<str>) -> Self {
        self.link(target, "successor-version")
    }

    /// Adds a `Link` field line of its own, sent exactly as given.
    pub fn link_line(mut self, line: impl Into<String>) -> Self {
        self.links.push(line.into());
        self
    }

    /// The `Deprecation` value, if any.
    pub fn deprecation_value(&self) -> Option<&str> {
        self.deprecation.as_deref()
    }

    /// The `Sunset` value, if any.
    pub fn sunset_value(&self) -> Option<&str> {
        self.sunset.as_deref()
    }

    /// The `Link` field lines, in order.
    pub fn link_lines(&self) -> &[String] {
        &self.links
    }

    /// Adds the headers to a response.
    pub(crate) fn apply(&self, mut answer: Answer) -> Answer {
        if let Some(value) = &self.deprecation {
            answer = answer.header("deprecation", value.as_str());
        }
        if let Some(value) = &self.sunset {
            answer = answer.header("sunset", value.as_str());
        }
        for line in &self.links {
            answer = answer.append_header("link", line.as_str());
        }
        answer
    }
}

/// Where an endpoint is in the version lifecycle (API Part 3).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Lifecycle {
    /// Served without deprecation headers (the default).
    #[default]
    Stable,
    /// Served as usual, every response (errors included) carrying these headers.
    Deprecated(DeprecationHeaders),
    /// Every request is answered 410 `version_sunset`, with these headers.
    Sunset(DeprecationHeaders),
}

/// Version settings of one server: lifecycles per path, served versions, preview labels.
#[derive(Debug, Clone)]
pub(crate) struct Versions {
    /// Version numbers served besides 1.
    pub(crate) extra: Vec<u32>,
    /// Known preview labels and the item field each one adds.
    pub(crate) previews: HashMap<String, String>,
}

impl Versions {
    /// The version numbers served: 1, then the extra ones.
    pub(crate) fn numbers(&self) -> Vec<u32> {
        std::iter::once(1).chain(self.extra.iter().copied().filter(|n| *n != 1)).collect()
    }

    /// Validates `X-API-Preview` and returns the field its label adds, if the label is known.
    pub(crate) fn preview_field(&self, header: Option<&str>) -> Result<Option<&str>, ErrorReply> {
        let Some(label) = header else { return Ok(None) };
        if !is_preview_label(label) {
            return Err(ErrorReply::invalid_request(
                "header X-API-Preview must be a YYYY-MM label with a month from 01 to 12",
            ));
        }
        Ok(self.previews.get(label).map(String::as_str))
    }
}

/// `YYYY-MM`, month 01 to 12.
fn is_preview_label(label: &str) -> bool {
    let bytes = label.as_bytes();
    bytes.len() == 7
        && bytes[4] == b'-'
        && bytes[..4].iter().chain(&bytes[5..]).all(u8::is_ascii_digit)
        && matches!((bytes[5], bytes[6]), (b'0', b'1'..=b'9') | (b'1', b'0'..=b'2'))
}

/// The answer of a sunset endpoint, before its headers: 410 `version_sunset`.
pub(crate) fn sunset_reply() -> Answer {
    let description =
        "this api version has reached its sunset and no longer serves requests; use its successor";
    ErrorReply::new(410, "version_sunset", description).into_answer()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preview_labels() {
        for good in ["2026-01", "2026-09", "2026-10", "2026-12", "0000-01"] {
            assert!(is_preview_label(good), "{good}");
        }
        for bad in ["2026-00", "2026-13", "2026-1", "26-01", "2026/01", "2026-01 ", "", "２０２６-01"] {
            assert!(!is_preview_label(bad), "{bad}");
        }
        let versions = Versions {
            extra: vec![2],
            previews: HashMap::from([("2026-03".to_owned(), "previewFeature".to_owned())]),
        };
        assert_eq!(versions.preview_field(Some("2026-03")).ok().flatten(), Some("previewFeature"));
        assert_eq!(versions.preview_field(Some("2026-04")).ok().flatten(), None);
        assert_eq!(versions.preview_field(Some("2026-13")).map_err(|e| e.status).err(), Some(400));
        assert_eq!(versions.numbers(), [1, 2]);
    }

    #[test]
    fn links_share_a_line_unless_asked_otherwise() {
        let headers = DeprecationHeaders::deprecated()
            .successor("/v2/companies")
            .link("/v3/companies", "latest-version")
            .link_line("<https://docs.example.com/policy>; rel=sunset");
        assert_eq!(headers.deprecation_value(), Some("true"));
        assert_eq!(headers.link_lines().len(), 2);
        assert!(headers.link_lines()[0].contains(r#"</v3/companies>; rel="latest-version""#));
    }
}
