//! URL rules shared by the API and authorization-server addresses: HTTPS except on loopback,
//! no user information, and the version segment added exactly once. Messages show URLs without
//! their user information.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use url::{Host, Url};

use crate::text::{shown_path, shown_url};
use crate::{ApiVersion, Error};

/// Parses an address given by the user: `https`, or `http` on a loopback host only; no user
/// information, query string or fragment.
pub(crate) fn parse_service_url(argument: &'static str, raw: &str) -> Result<Url, Error> {
    check_service_url(argument, parse_absolute(argument, raw)?)
}

/// Parses an absolute URL given by the user as `argument`, spaces around it ignored; the error
/// shows it as [`shown_url`] does.
pub(crate) fn parse_absolute(argument: &'static str, raw: &str) -> Result<Url, Error> {
    Url::parse(raw.trim()).map_err(|e| {
        Error::invalid(argument, format!("expected an absolute URL, got {:?} ({e})", shown_url(raw)))
    })
}

/// Applies the rules of [`parse_service_url`] to an already parsed URL: the one check every
/// address the client sends to passes, whether it comes from a setter, a discovery document or
/// metadata the application built. Messages show the URL as [`shown_url`] does.
pub(crate) fn check_service_url(argument: &'static str, url: Url) -> Result<Url, Error> {
    refuse_user_information(argument, &url)?;
    let expected = match url.scheme() {
        "http" if !is_loopback(&url) => "an https URL (http is allowed only on loopback hosts)",
        "http" | "https" if url.query().or(url.fragment()).is_some() => "a URL without query or fragment",
        "http" | "https" => return Ok(url), // the url crate gives these schemes a host
        _ => "an https URL",
    };
    Err(Error::invalid(argument, format!("expected {expected}, got {}", shown_url(&url))))
}

/// A credential in a URL ends up in logs, proxies and error reports: a URL with user
/// information is refused, and the message leaves it out.
pub(crate) fn refuse_user_information(argument: &'static str, url: &Url) -> Result<(), Error> {
    if url.username().is_empty() && url.password().is_none() {
        return Ok(());
    }
    let expected = "expected a URL without user information (no `user:password@`)";
    Err(Error::invalid(argument, format!("{expected}, got {}", shown_url(url))))
}

/// `base` with `path` appended below its own path: `https://a.example/auth` + `oauth2/token`
/// is `https://a.example/auth/oauth2/token`.
pub(crate) fn join_path(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    let joined = format!("{}/{}", base.path().trim_end_matches('/'), path.trim_start_matches('/'));
    url.set_path(&joined);
    url
}

/// A scope token of RFC 6749 section 3.3: one or more printable ASCII characters other than
/// space, `"` and `\`.
pub(crate) fn check_scope(scope: &str) -> Result<(), Error> {
    let valid = !scope.is_empty() && scope.bytes().all(|b| matches!(b, 0x21 | 0x23..=0x5B | 0x5D..=0x7E));
    if !valid {
        let expected = "expected scope tokens without spaces, quotes or backslashes";
        return Err(Error::invalid("scopes", format!("{expected}, got {scope:?}")));
    }
    Ok(())
}

/// True for `localhost`, `127.0.0.0/8` and `::1`.
pub(crate) fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        Some(Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

/// The versioned API root with a trailing slash: `https://api.example.com/v1/`.
///
/// A base URL that already ends in the version segment is not doubled; one that ends in another
/// version segment is an error rather than a silent `/v2/v1/`.
pub(crate) fn api_root(base: &Url, version: ApiVersion) -> Result<Url, Error> {
    let mut segments: Vec<&str> =
        base.path_segments().map(|s| s.filter(|s| !s.is_empty()).collect()).unwrap_or_default();
    // A version segment at the end, in any case (`/v1`, `/V1`), is the one the client adds.
    match segments.last().map(|last| last.parse::<ApiVersion>()) {
        Some(Ok(ending)) if ending == version => drop(segments.pop()),
        Some(Ok(ending)) => {
            let fix = "drop the version from the base URL or set api_version";
            let message = format!("the base URL ends in /{ending} but the client is set to {version}; {fix}");
            return Err(Error::invalid("base_url", message));
        }
        _ => {}
    }
    let segment = version.to_string();
    segments.push(&segment);
    let mut root = base.clone();
    root.set_path(&format!("/{}/", segments.join("/")));
    Ok(root)
}

/// A path below the API's version root (`https://api.example.com/v1/`): a literal such as
/// `"companies/cmp_1"`, or segments such as `["companies", id]`, each of which is
/// percent-encoded as one segment (every character but letters, digits, `-`, `.`, `_` and
/// `~`), so an id `a/b` never makes two, and `a;b` is sent as `a%3Bb` (servers that read `;`
/// as the start of path parameters see one segment too).
///
/// A path never leaves the version root, and a segment is sent as given or not at all. Refused
/// with [`Error::InvalidArgument`] naming `path`, before anything is sent:
/// - `.` and `..` segments, empty segments (`companies//cmp_1`);
/// - a control character in a segment (a tab, a line feed, `%09` in a literal), which URLs
///   would otherwise drop, making `ad\tmin` into `admin`;
/// - in a literal: an absolute path, a scheme or an absolute URL, `?`, `#` or `\`, and `..` in
///   any encoding between `/`, `\` and `;` (`..;`, `..%2f`, `%2e%2e`), which some servers and
///   proxies read as a parent directory.
///
/// A refused path is shown in the error as URLs are (without user information or query values,
/// cut to 256 bytes). Spans name the path with every second segment's value left out
/// (`/v1/companies/{}`), as in the API's `/collection/{id}` paths.
///
/// ```
/// # async fn run(client: business_records::Client, id: &str) -> Result<(), business_records::Error> {
/// use business_records::Company;
/// let one: Company = client.get(["companies", id]).send().await?;
/// let same: Company = client.get(format!("companies/{}", one.id)).send().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ApiPath {
    segments: Result<Vec<String>, String>,
}

/// What a segment's characters are encoded as: all but letters, digits and RFC 3986's other
/// unreserved characters (`-`, `.`, `_`, `~`).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

impl ApiPath {
    /// The URL of this path below the versioned `root`, and its route (the path with every
    /// second segment's value left out, cut as spans show it); an [`Error::InvalidArgument`]
    /// naming `path` when the path is refused.
    pub(crate) fn locate(&self, root: &Url) -> Result<(Url, String), Error> {
        let segments = self.segments.as_deref().map_err(|why| Error::invalid("path", why.clone()))?;
        let encoded: Vec<String> =
            segments.iter().map(|s| utf8_percent_encode(s, SEGMENT).to_string()).collect();
        let mut url = root.clone();
        url.set_path(&format!("{}{}", root.path(), encoded.join("/")));
        let route: Vec<&str> =
            segments.iter().enumerate().map(|(i, segment)| if i % 2 == 0 { segment } else { "{}" }).collect();
        Ok((url, shown_path(&format!("{}/{}", root.path().trim_end_matches('/'), route.join("/")))))
    }

    fn from_segments<S: AsRef<str>>(segments: impl IntoIterator<Item = S>) -> ApiPath {
        let segments = segments
            .into_iter()
            .map(|segment| match segment.as_ref() {
                "" => Err("expected no empty segment".to_owned()),
                dots @ ("." | "..") => {
                    Err(format!("expected no `{dots}` segment: a path stays below the version root"))
                }
                segment if segment.contains(char::is_control) => {
                    Err(format!("expected no control characters in a segment, got {:?}", shown_path(segment)))
                }
                segment => Ok(segment.to_owned()),
            })
            .collect();
        ApiPath { segments }
    }
}

/// A literal path, `/` between segments; its other characters are percent-encoded where a
/// path needs it, and a `%` is taken as the start of an encoding (an encoded `/` stays in its
/// segment).
impl From<&str> for ApiPath {
    fn from(literal: &str) -> Self {
        let decoded: Vec<_> = literal.split('/').map(|s| percent_decode_str(s).decode_utf8_lossy()).collect();
        let refused = if literal.contains(['?', '#', '\\']) {
            Some("expected no query, fragment or backslash")
        } else if literal.starts_with('/')
            || literal.split('/').next().is_some_and(|first| first.contains(':'))
        {
            Some("expected a path below the version root, not an absolute path or URL")
        } else if decoded.iter().any(|segment| segment.split(['/', '\\', ';']).any(|piece| piece == "..")) {
            Some("expected no `..` in any encoding (`..;`, `..%2f`, `%2e%2e`) between `/`, `\\` or `;`")
        } else {
            None
        };
        match refused {
            Some(why) => ApiPath { segments: Err(format!("{why}, got {:?}", shown_url(literal))) },
            None => ApiPath::from_segments(decoded),
        }
    }
}

impl From<String> for ApiPath {
    fn from(literal: String) -> Self {
        ApiPath::from(literal.as_str())
    }
}

impl From<&String> for ApiPath {
    fn from(literal: &String) -> Self {
        ApiPath::from(literal.as_str())
    }
}

/// Segments, each encoded as one.
impl<S: AsRef<str>, const N: usize> From<[S; N]> for ApiPath {
    fn from(segments: [S; N]) -> Self {
        ApiPath::from_segments(segments)
    }
}

/// Segments, each encoded as one.
impl<S: AsRef<str>> From<&[S]> for ApiPath {
    fn from(segments: &[S]) -> Self {
        ApiPath::from_segments(segments)
    }
}

/// Segments, each encoded as one.
impl<S: AsRef<str>> From<Vec<S>> for ApiPath {
    fn from(segments: Vec<S>) -> Self {
        ApiPath::from_segments(segments)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(base: &str) -> Result<String, Error> {
        let url = parse_service_url("base_url", base)?;
        api_root(&url, ApiVersion::V1).map(String::from)
    }

    #[test]
    fn version_segment_is_added_once() {
        assert_eq!(root("https://api.example.com").ok().as_deref(), Some("https://api.example.com/v1/"));
        assert_eq!(root("https://api.example.com/").ok().as_deref(), Some("https://api.example.com/v1/"));
        assert_eq!(root("https://api.example.com/v1").ok().as_deref(), Some("https://api.example.com/v1/"));
        assert_eq!(root("https://api.example.com/v1/").ok().as_deref(), Some("https://api.example.com/v1/"));
        assert_eq!(
            root("https://example.com/records/api").ok().as_deref(),
            Some("https://example.com/records/api/v1/")
        );
        assert_eq!(root("https://api.example.com/V1").ok().as_deref(), Some("https://api.example.com/v1/"));
        let other = root("https://api.example.com/V2").expect_err("another version");
        assert!(other.to_string().contains("ends in /v2 but the client is set to v1"), "{other}");
    }

    #[test]
    fn https_is_required_except_on_loopback() {
        assert!(parse_service_url("base_url", "http://api.example.com").is_err());
        let ftp = parse_service_url("base_url", "ftp://u:p@api.example.com").expect_err("not http");
        assert!(ftp.to_string().contains("expected a URL without user information"), "{ftp}");
        let ftp = parse_service_url("base_url", "ftp://api.example.com?k=v").expect_err("not http");
        assert!(ftp.to_string().ends_with("expected an https URL, got ftp://api.example.com/?k=…"), "{ftp}");
        assert!(parse_service_url("base_url", "not a url").is_err());
        assert!(parse_service_url("base_url", "https://api.example.com?x=1").is_err());
        // With and without a port: loopback decides, never the port.
        for ok in [
            "http://127.0.0.1:8080",
            "http://localhost:1",
            "http://[::1]:9",
            "https://a.example",
            "http://127.0.0.1",
            "http://LOCALHOST/x",
            "http://127.1.2.3",
            "http://[::1]",
            "https://a.example:8443",
        ] {
            assert!(parse_service_url("base_url", ok).is_ok(), "{ok}");
        }
        for refused in [
            "http://api.example.com:8080",
            "http://10.0.0.1:80",
            "http://localhost.evil.example:1",
            "http://127.0.0.1.evil.example",
            "http://[::2]:9",
            "http://0.0.0.0:8080",
        ] {
            let err = parse_service_url("base_url", refused).expect_err(refused);
            assert!(err.to_string().contains("http is allowed only on loopback hosts"), "{err}");
        }
    }

    #[test]
    fn user_information_is_refused_and_never_shown() {
        for (raw, shown) in [
            ("https://user:s3cret@auth.example.com", "https://auth.example.com/"),
            ("https://s3cret@auth.example.com/x", "https://auth.example.com/x"),
            ("http://user:s3cret@127.0.0.1:8080", "http://127.0.0.1:8080/"),
            ("http://user:s3cret@api.example.com", "http://api.example.com/"),
        ] {
            let err = parse_service_url("auth_url", raw).expect_err(raw);
            let message = err.to_string();
            assert!(matches!(&err, Error::InvalidArgument(e) if e.argument() == "auth_url"), "{err:?}");
            assert!(message.contains("user information") && message.contains(shown), "{message}");
            assert!(!message.contains("s3cret") && !format!("{err:?}").contains("s3cret"), "{message}");
        }
        // One that does not parse is shown without it too.
        let err = parse_service_url("base_url", "https://user:s3cret@bad host").expect_err("unparsable");
        assert!(!err.to_string().contains("s3cret"), "{err}");
    }

    #[test]
    fn refused_urls_are_shown_without_query_values() {
        for raw in [
            "https://api.example.com/?key=s3cret",
            "http://api.example.com/x?key=s3cret",
            "https://api.example.com/#s3cret",
            "https://bad host/?key=s3cret",
        ] {
            let err = parse_service_url("base_url", raw).expect_err(raw);
            assert!(!err.to_string().contains("s3cret"), "{err}");
            assert!(matches!(&err, Error::InvalidArgument(e) if e.argument() == "base_url"), "{err:?}");
        }
        let err = parse_service_url("base_url", "https://api.example.com/?key=s3cret").expect_err("query");
        assert!(err.to_string().ends_with("got https://api.example.com/?key=…"), "{err}");
    }

    /// The URL a path is sent to below `https://api.example.com/v1/`, or why it is refused.
    fn located(path: impl Into<ApiPath>) -> Result<String, String> {
        let root = Url::parse("https://api.example.com/v1/").expect("a root");
        path.into().locate(&root).map(|(url, _)| url.path().to_owned()).map_err(|e| match e {
            Error::InvalidArgument(e) if e.argument() == "path" => e.message().to_owned(),
            other => panic!("expected an InvalidArgument naming `path`, got {other:?}"),
        })
    }

    #[test]
    fn a_literal_keeps_its_encoded_slash_inside_its_segment() {
        assert_eq!(located("companies/a%2Fb"), Ok("/v1/companies/a%2Fb".to_owned()));
        assert_eq!(located("companies/a%2fb/contacts"), Ok("/v1/companies/a%2Fb/contacts".to_owned()));
        assert_eq!(located(["companies", "a/b"]), located("companies/a%2Fb"));
        assert_eq!(located("companies/caf%C3%A9"), Ok("/v1/companies/caf%C3%A9".to_owned()));
    }

    #[test]
    fn semicolons_are_encoded_and_control_characters_refused() {
        assert_eq!(located(["companies", "..;", "contacts"]), Ok("/v1/companies/..%3B/contacts".to_owned()));
        assert_eq!(located("companies/a;b=c"), Ok("/v1/companies/a%3Bb%3Dc".to_owned()));
        assert_eq!(located(["notes", "a\\b"]), Ok("/v1/notes/a%5Cb".to_owned()));
        for refused in [
            located(["users", "ad\tmin"]),
            located(["notes", "n_1\n"]),
            located(["notes", "\u{7f}"]),
            located(["notes", "\u{85}"]),
            located("users/ad%09min"),
            located("users/ad\rmin"),
        ] {
            let message = refused.expect_err("a control character");
            assert!(message.starts_with("expected no control characters in a segment"), "{message}");
        }
    }

    #[test]
    fn a_literal_with_dots_in_any_encoding_is_refused() {
        for literal in [
            "companies/..;/admin",
            "companies/..;",
            "companies/..%2fadmin",
            "companies/..%2Fadmin",
            "companies/%2e%2e",
            "companies/%2E%2E;x/admin",
            "companies/a%2f..%2fadmin",
            "companies/..%5cadmin",
            "companies/..%3badmin",
        ] {
            let message = located(literal).expect_err(literal);
            assert!(message.contains("`..`"), "{literal}: {message}");
        }
        // Dots that are no parent directory, and the same ids given as segments, are sent.
        assert_eq!(located("companies/..x/a.."), Ok("/v1/companies/..x/a..".to_owned()));
        assert_eq!(located(["companies", "a/../b"]), Ok("/v1/companies/a%2F..%2Fb".to_owned()));
    }

    #[test]
    fn an_absolute_path_a_scheme_or_a_url_is_refused_as_such() {
        for literal in
            ["/companies", "urn:companies", "https://api.example.com/v1/companies", "cmp:1/contacts"]
        {
            let message = located(literal).expect_err(literal);
            assert!(message.starts_with("expected a path below the version root"), "{literal}: {message}");
        }
        assert_eq!(located("companies/cmp:1"), Ok("/v1/companies/cmp%3A1".to_owned()), "a colon further on");
    }

    #[test]
    fn a_route_leaves_out_every_second_segment() {
        let root = Url::parse("https://api.example.com/v1/").expect("a root");
        let route = |path: ApiPath| path.locate(&root).map(|(_, route)| route).expect("sent");
        assert_eq!(route(["companies"].into()), "/v1/companies");
        assert_eq!(route(["companies", "cmp_1"].into()), "/v1/companies/{}");
        assert_eq!(route("companies/cmp_1/contacts/c_2/notes".into()), "/v1/companies/{}/contacts/{}/notes");
    }

    #[test]
    fn a_refused_path_shows_no_credential_and_stays_short() {
        for literal in [
            "https://user:PASSWORD@evil.example/x",
            "companies?api_key=SECRETKEY",
            "companies#SECRETKEY",
            "//user:PASSWORD@evil.example/x",
        ] {
            let message = located(literal).expect_err(literal);
            assert!(!message.contains("PASSWORD") && !message.contains("SECRETKEY"), "{message}");
        }
        let long = format!("/{}", "a".repeat(400 * 1024));
        assert!(located(long.as_str()).expect_err("absolute").len() < 512);
        let long = format!("{}/\t", "a".repeat(400 * 1024));
        assert!(located(long.as_str()).expect_err("a tab").len() < 512);
        let root = Url::parse("https://api.example.com/v1/").expect("a root");
        let (_, route) = ApiPath::from("a".repeat(400 * 1024)).locate(&root).expect("a long path is sent");
        assert!(route.len() <= 256 + 3, "{}", route.len());
    }

    #[test]
    fn a_scope_is_printable_ascii_without_space_quote_or_backslash() {
        for scope in ["api/read", "openid", "!", "#[]~", "a:b"] {
            assert!(check_scope(scope).is_ok(), "{scope}");
        }
        for scope in ["", "a b", "a\"b", "a\\b", "caf\u{e9}", "a\tb", "\u{7f}"] {
            let err = check_scope(scope).expect_err(scope);
            assert!(matches!(&err, Error::InvalidArgument(e) if e.argument() == "scopes"), "{err:?}");
        }
    }
}
