//! Deprecation and sunset notices sent by the API.
//!
//! A deprecated endpoint answers with up to three response headers (API Part 9):
//!
//! | Header | Standard | Read by |
//! |---|---|---|
//! | `Deprecation` | RFC 9745 (`@<epoch>`), or the legacy `true` / HTTP-date | [`parse_deprecation`] |
//! | `Sunset` | RFC 8594, an HTTP-date in any RFC 9110 form | [`parse_http_date`] |
//! | `Link` | RFC 8288, `rel="successor-version"` and friends | [`parse_links`] |
//!
//! [`DeprecationNotice::from_headers`] reads all three from a response into one value; the
//! client hands each notice to its [`DeprecationReporter`], which calls the user's callback
//! every time and logs through `tracing` as its [`DeprecationPolicy`] says (by default one
//! warning per endpoint). Every parser is total: no header value makes them panic or fail,
//! and a malformed `Deprecation` value still means "deprecated".
//!
//! Only [`DeprecationNotice`], [`Deprecation`] and [`DeprecationPolicy`] are public, at the
//! crate root.

mod headers;
mod link;
mod report;

use std::fmt;

use chrono::{DateTime, SecondsFormat, Utc};
use http::{HeaderMap, Method};
use url::Url;

use crate::text::{quoted, shown_path, shown_url};
use crate::timestamp::parse_http_date;

pub use headers::Deprecation;
use headers::parse_deprecation;
use link::{Link, find_relation, parse_links};
pub use report::DeprecationPolicy;
pub(crate) use report::{DeprecationCallback, DeprecationReporter};

/// What one response said about the deprecation of the endpoint that produced it.
///
/// Carried by every page the client returns ([`Page::deprecation`](crate::Page::deprecation))
/// and passed to the [`on_deprecation`](crate::ClientBuilder::on_deprecation) callback. The
/// client reads it from the response headers of API Part 9:
///
/// | Header | Standard | Read into |
/// |---|---|---|
/// | `Deprecation` | RFC 9745 (`@<epoch>`), or the legacy `true` / an HTTP-date | [`deprecation`](Self::deprecation) |
/// | `Sunset` | RFC 8594, an HTTP-date in any RFC 9110 form | [`sunset`](Self::sunset) |
/// | `Link` | RFC 8288 | [`successor`](Self::successor), [`latest_version`](Self::latest_version), [`documentation`](Self::documentation), [`sunset_policy`](Self::sunset_policy) |
///
/// A response with neither `Deprecation` nor `Sunset` has no notice; `Deprecation: false` (or
/// `?0`) counts as no `Deprecation` header. With several field lines of `Deprecation` or
/// `Sunset`, the first counts. Values that are not valid UTF-8 are read lossily; a malformed
/// `Deprecation` value still means "deprecated", and an unreadable `Sunset` leaves `sunset`
/// empty; both are named in [`diagnostic`](Self::diagnostic). Relative link targets are
/// resolved against the request URL; a target longer than 256 bytes is left out, so that
/// errors and logs that carry a notice stay short.
///
/// ```no_run
/// # async fn run(client: business_records::Client) -> Result<(), business_records::Error> {
/// let page = client.companies().send().await?;
/// if let Some(notice) = &page.deprecation {
///     eprintln!("{notice}"); // e.g. `GET /v1/companies is deprecated, successor ...`
///     if let Some(successor) = &notice.successor {
///         eprintln!("move to {successor}");
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeprecationNotice {
    /// The request's method.
    pub method: Method,
    /// The request path without query, e.g. `/v1/companies`, cut to 256 bytes (`…` marks a
    /// cut).
    pub endpoint: String,
    /// The `Deprecation` header, when present.
    pub deprecation: Option<Deprecation>,
    /// The `Sunset` header, when present and readable: when the endpoint stops working.
    pub sunset: Option<DateTime<Utc>>,
    /// The first link with `rel="successor-version"`: the replacement of this endpoint.
    pub successor: Option<Url>,
    /// The first link with `rel="latest-version"`.
    pub latest_version: Option<Url>,
    /// The first link with `rel="deprecation"` (RFC 9745): documentation of the deprecation.
    pub documentation: Option<Url>,
    /// The first link with `rel="sunset"` (RFC 8594): the sunset policy.
    pub sunset_policy: Option<Url>,
    /// What looked wrong in the headers, e.g. `sunset is earlier than deprecation`; several
    /// findings are joined with `; `.
    pub diagnostic: Option<String>,
}

impl DeprecationNotice {
    /// Reads the notice from a response's headers (see the type's docs for the rules); `url`
    /// is the request URL, against which relative link targets are resolved. `None` when the
    /// response carries neither `Deprecation` nor `Sunset`.
    #[must_use]
    pub(crate) fn from_headers(method: &Method, url: &Url, headers: &HeaderMap) -> Option<Self> {
        let first = |name| headers.get(name).map(|value| String::from_utf8_lossy(value.as_bytes()));
        let deprecation = first("deprecation").and_then(|raw| parse_deprecation(&raw));
        let sunset_raw = first("sunset");
        if deprecation.is_none() && sunset_raw.is_none() {
            return None;
        }
        let sunset = sunset_raw.as_deref().and_then(parse_http_date);
        let links = links(headers, url);

        let mut findings = Vec::new();
        if let Some(Deprecation::Unrecognized(raw)) = &deprecation {
            findings.push(format!("deprecation header \"{}\" is in no known form", quoted(raw)));
        }
        if let Some(raw) = sunset_raw.filter(|_| sunset.is_none()) {
            findings.push(format!("sunset header \"{}\" is not an http-date", quoted(&raw)));
        }
        if let (Some(since), Some(sunset)) = (deprecation.as_ref().and_then(Deprecation::since), sunset)
            && sunset < since
        {
            findings.push("sunset is earlier than deprecation".to_owned());
        }

        Some(Self {
            method: method.clone(),
            endpoint: shown_path(url.path()),
            successor: find_relation(&links, "successor-version"),
            latest_version: find_relation(&links, "latest-version"),
            documentation: find_relation(&links, "deprecation"),
            sunset_policy: find_relation(&links, "sunset"),
            deprecation,
            sunset,
            diagnostic: (!findings.is_empty()).then(|| findings.join("; ")),
        })
    }

    /// Whether the sunset date is known and at or before `now`: the endpoint may stop
    /// working at any time.
    ///
    /// ```no_run
    /// # async fn run(client: business_records::Client) -> Result<(), business_records::Error> {
    /// let page = client.companies().send().await?;
    /// if page.deprecation.as_ref().is_some_and(|n| n.is_sunset_past(chrono::Utc::now())) {
    ///     eprintln!("/v1/companies may stop working at any time");
    /// }
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn is_sunset_past(&self, now: DateTime<Utc>) -> bool {
        self.sunset.is_some_and(|sunset| sunset <= now)
    }

    /// When the endpoint was deprecated, if the `Deprecation` header gave a date.
    #[must_use]
    pub fn deprecated_since(&self) -> Option<DateTime<Utc>> {
        self.deprecation.as_ref().and_then(Deprecation::since)
    }
}

/// One line for people, e.g. `GET /v1/companies is deprecated since 2026-01-01T00:00:00Z,
/// sunset at 2027-01-01T00:00:00Z, successor https://api.example.com/v2/companies`.
impl fmt::Display for DeprecationNotice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.method, self.endpoint)?;
        match &self.deprecation {
            Some(Deprecation::Since(since)) => write!(f, " is deprecated since {}", rfc3339(*since))?,
            Some(_) => f.write_str(" is deprecated")?,
            None => f.write_str(" is scheduled for sunset")?,
        }
        if let Some(sunset) = self.sunset {
            write!(f, ", sunset at {}", rfc3339(sunset))?;
        }
        if let Some(successor) = &self.successor {
            write!(f, ", successor {}", shown_url(successor))?;
        } else if let Some(latest) = &self.latest_version {
            write!(f, ", latest version {}", shown_url(latest))?;
        }
        if let Some(documentation) = &self.documentation {
            write!(f, ", see {}", shown_url(documentation))?;
        }
        Ok(())
    }
}

/// Its links as errors show URLs: no user information, no query values.
impl fmt::Debug for DeprecationNotice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let link = |url: &Option<Url>| url.as_ref().map(shown_url);
        f.debug_struct("DeprecationNotice")
            .field("method", &self.method)
            .field("endpoint", &self.endpoint)
            .field("deprecation", &self.deprecation)
            .field("sunset", &self.sunset)
            .field("successor", &link(&self.successor))
            .field("latest_version", &link(&self.latest_version))
            .field("documentation", &link(&self.documentation))
            .field("sunset_policy", &link(&self.sunset_policy))
            .field("diagnostic", &self.diagnostic)
            .finish()
    }
}

/// The links of every `Link` field line of a response to a request for `url`, lines that are
/// not UTF-8 read lossily.
fn links(headers: &HeaderMap, url: &Url) -> Vec<Link> {
    parse_links(headers.get_all("link").iter().map(|v| String::from_utf8_lossy(v.as_bytes())), url)
}

/// The first `rel="successor-version"` link of a response to a request for `url`.
pub(crate) fn successor_link(headers: &HeaderMap, url: &Url) -> Option<Url> {
    find_relation(&links(headers, url), "successor-version")
}

/// An instant as RFC 3339 in UTC, to the second: `2026-01-01T00:00:00Z`.
pub(crate) fn rfc3339(date: DateTime<Utc>) -> String {
    date.to_rfc3339_opts(SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use proptest::prelude::*;

    fn request_url() -> Url {
        Url::parse("https://api.example.com/v1/companies?limit=5").expect("valid test url")
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    fn notice(pairs: &[(&'static str, &'static str)]) -> Option<DeprecationNotice> {
        DeprecationNotice::from_headers(&Method::GET, &request_url(), &headers(pairs))
    }

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(seconds, 0).unwrap_or_default()
    }

    #[test]
    fn long_links_values_and_paths_are_not_kept_whole() {
        let fits = format!("/v2/{}", "a".repeat(100));
        let lines = [
            format!("</v2/{}>; rel=successor-version, <{fits}>; rel=deprecation", "a".repeat(100_000)),
            format!("<https://h.example/{}?q=1>; rel=latest-version", "b".repeat(300)),
        ];
        let mut map = HeaderMap::new();
        map.insert("deprecation", HeaderValue::from_str(&"x".repeat(100_000)).expect("a value"));
        for line in &lines {
            map.append("link", HeaderValue::from_str(line).expect("a value"));
        }
        let url = Url::parse(&format!("https://api.example.com/v1/{}", "p".repeat(400_000))).expect("a URL");
        let n = DeprecationNotice::from_headers(&Method::GET, &url, &map).expect("a notice");
        assert_eq!((n.successor.as_ref(), n.latest_version.as_ref()), (None, None), "too long to keep");
        assert_eq!(n.documentation.as_ref().map(Url::path), Some(fits.as_str()), "the short link stays");
        assert!(n.endpoint.starts_with("/v1/ppp") && n.endpoint.len() <= 256 + 3);
        let Some(Deprecation::Unrecognized(raw)) = &n.deprecation else { panic!("{:?}", n.deprecation) };
        assert!(raw.starts_with("xxx") && raw.len() <= 1024 + 3, "{}", raw.len());
        assert!(format!("{n:?}").len() < 3 * 1024 && n.to_string().len() < 1024, "{n:?}");
    }

    #[test]
    fn links_show_no_user_information_or_query_values() {
        let n = notice(&[
            ("sunset", "Wed, 01 Jul 2026 00:00:00 GMT"),
            ("link", "<https://user:pw@api.example.com/v2/companies?key=s3cret>; rel=successor-version"),
            ("link", "<https://docs.example.com/sunset?token=t0k3n#frag>; rel=sunset"),
        ])
        .expect("a notice");
        for shown in [format!("{n:?}"), n.to_string()] {
            assert!(
                !shown.contains("pw") && !shown.contains("s3cret") && !shown.contains("t0k3n"),
                "{shown}"
            );
        }
        assert!(format!("{n:?}").contains("https://api.example.com/v2/companies?key=…"), "{n:?}");
    }

    #[test]
    fn no_headers_no_notice() {
        assert_eq!(notice(&[]), None);
        assert_eq!(notice(&[("link", "</v2/companies>; rel=successor-version")]), None);
    }

    #[test]
    fn full_notice() {
        let n = notice(&[
            ("deprecation", "@1767225600"),
            ("sunset", "Fri, 01 Jan 2027 00:00:00 GMT"),
            (
                "link",
                r#"</v2/companies>; rel="successor-version", <https://docs.example.com/deprecations/v1>; rel="deprecation"; type="text/html""#,
            ),
            (
                "link",
                r#"</v3/companies>; rel=latest-version, <https://docs.example.com/policy>; rel=sunset"#,
            ),
        ])
        .expect("notice");
        assert_eq!(n.endpoint, "/v1/companies");
        assert_eq!(n.deprecation, Some(Deprecation::Since(at(1_767_225_600))));
        assert_eq!(n.deprecated_since(), Some(at(1_767_225_600)));
        assert_eq!(n.sunset, Some(at(1_798_761_600)));
        let as_str = |u: &Option<Url>| u.as_ref().map(|u| u.as_str().to_owned());
        assert_eq!(as_str(&n.successor).as_deref(), Some("https://api.example.com/v2/companies"));
        assert_eq!(as_str(&n.latest_version).as_deref(), Some("https://api.example.com/v3/companies"));
        assert_eq!(as_str(&n.documentation).as_deref(), Some("https://docs.example.com/deprecations/v1"));
        assert_eq!(as_str(&n.sunset_policy).as_deref(), Some("https://docs.example.com/policy"));
        assert_eq!(n.diagnostic, None);
        assert_eq!(
            n.to_string(),
            "GET /v1/companies is deprecated since 2026-01-01T00:00:00Z, sunset at \
             2027-01-01T00:00:00Z, successor https://api.example.com/v2/companies, see \
             https://docs.example.com/deprecations/v1"
        );
    }

    #[test]
    fn successor_from_a_shared_rel_list() {
        let n = notice(&[
            ("deprecation", "true"),
            ("link", r#"</v2/companies>; rel="successor-version latest-version""#),
        ])
        .expect("notice");
        assert_eq!(n.successor, n.latest_version);
        assert!(n.successor.is_some());
        assert_eq!(n.deprecation, Some(Deprecation::Deprecated));
        assert_eq!(n.deprecated_since(), None);
        assert_eq!(
            n.to_string(),
            "GET /v1/companies is deprecated, successor https://api.example.com/v2/companies"
        );
    }

    #[test]
    fn uppercase_rel_name_and_value() {
        let n = notice(&[("deprecation", "true"), ("link", "</v2/companies>; REL=Successor-Version")])
            .expect("notice");
        assert_eq!(n.successor.as_ref().map(Url::as_str), Some("https://api.example.com/v2/companies"));
    }

    #[test]
    fn deprecation_false_is_not_deprecated() {
        assert_eq!(notice(&[("deprecation", "false")]), None);
        assert_eq!(notice(&[("deprecation", " FALSE ")]), None);
        assert_eq!(notice(&[("deprecation", "?0")]), None);
        let n =
            notice(&[("deprecation", "false"), ("sunset", "Fri, 01 Jan 2027 00:00:00 GMT")]).expect("notice");
        assert_eq!((n.deprecation, n.diagnostic), (None, None));
    }

    #[test]
    fn sunset_alone_is_a_notice() {
        let n = notice(&[("sunset", "Sunday, 06-Nov-94 08:49:37 UTC")]).expect("notice");
        assert_eq!(n.deprecation, None);
        assert_eq!(n.sunset, Some(at(784_111_777)));
        assert!(n.is_sunset_past(at(784_111_777)));
        assert!(!n.is_sunset_past(at(784_111_776)));
        assert_eq!(
            n.to_string(),
            "GET /v1/companies is scheduled for sunset, sunset at 1994-11-06T08:49:37Z"
        );
    }

    #[test]
    fn sunset_before_deprecation_is_diagnosed() {
        let n = notice(&[("deprecation", "@1798761600"), ("sunset", "Thu, 01 Jan 2026 00:00:00 GMT")])
            .expect("notice");
        assert_eq!(n.diagnostic.as_deref(), Some("sunset is earlier than deprecation"));
        let same_day = notice(&[("deprecation", "@1767225600"), ("sunset", "Thu, 01 Jan 2026 00:00:00 GMT")])
            .expect("notice");
        assert_eq!(same_day.diagnostic, None);
    }

    #[test]
    fn malformed_headers_are_diagnosed_and_still_deprecated() {
        let n = notice(&[("deprecation", "soon"), ("sunset", "tomorrow")]).expect("notice");
        assert_eq!(n.deprecation, Some(Deprecation::Unrecognized("soon".to_owned())));
        assert_eq!(n.sunset, None);
        assert!(!n.is_sunset_past(Utc::now()));
        assert_eq!(
            n.diagnostic.as_deref(),
            Some(
                "deprecation header \"soon\" is in no known form; sunset header \"tomorrow\" \
                 is not an http-date"
            )
        );
        assert_eq!(n.to_string(), "GET /v1/companies is deprecated");
    }

    #[test]
    fn long_malformed_values_are_shortened_in_the_diagnostic() {
        let long = "x".repeat(500);
        let mut map = HeaderMap::new();
        map.insert("sunset", HeaderValue::from_str(&long).expect("ascii"));
        let n = DeprecationNotice::from_headers(&Method::GET, &request_url(), &map).expect("notice");
        let diagnostic = n.diagnostic.unwrap_or_default();
        assert!(diagnostic.len() < 120, "{diagnostic}");
    }

    #[test]
    fn first_field_line_counts() {
        let n = notice(&[
            ("deprecation", "@0"),
            ("deprecation", "true"),
            ("sunset", "Thu, 01 Jan 1970 00:00:01 GMT"),
            ("sunset", "garbage"),
        ])
        .expect("notice");
        assert_eq!(n.deprecated_since(), Some(at(0)));
        assert_eq!(n.sunset, Some(at(1)));
        assert_eq!(n.diagnostic, None);
    }

    #[test]
    fn non_utf8_values_are_read_lossily() {
        let mut map = HeaderMap::new();
        let bytes = HeaderValue::from_bytes(b"caf\xe9").expect("opaque bytes are allowed");
        map.insert("deprecation", bytes.clone());
        map.insert("link", bytes);
        map.append("link", HeaderValue::from_bytes(b"</v2/caf\xe9>; rel=successor-version").expect("bytes"));
        let n = DeprecationNotice::from_headers(&Method::GET, &request_url(), &map).expect("notice");
        assert!(matches!(n.deprecation, Some(Deprecation::Unrecognized(_))));
        assert_eq!(n.successor.as_ref().map(Url::as_str), Some("https://api.example.com/v2/caf%EF%BF%BD"));
    }

    proptest! {
        #[test]
        fn arbitrary_header_bytes_never_panic(
            deprecation in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40)),
            sunset in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40)),
            links in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..60), 0..3),
            path in "(/[a-zA-Z0-9%._~-]{1,8}){0,3}",
        ) {
            let mut map = HeaderMap::new();
            let value = |bytes: &[u8]| HeaderValue::from_bytes(bytes).ok();
            if let Some(v) = deprecation.as_deref().and_then(value) { map.insert("deprecation", v); }
            if let Some(v) = sunset.as_deref().and_then(value) { map.insert("sunset", v); }
            for link in &links {
                if let Some(v) = value(link) { map.append("link", v); }
            }
            let url = request_url().join(&path).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let n = DeprecationNotice::from_headers(&Method::GET, &url, &map);
            prop_assert_eq!(n.is_some(), map.contains_key("deprecation") || map.contains_key("sunset"));
            if let Some(n) = n {
                let _ = n.to_string();
                let _ = n.is_sunset_past(Utc::now());
            }
        }
    }
}
