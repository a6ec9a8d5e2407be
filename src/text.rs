//! Everything the client shows of what a server or a user gave it, in an error message, a log
//! line, a span or `Debug`: one redaction rule and one length rule.
//!
//! - **Redaction**: a URL is shown without its user information (`user:password@`) and its
//!   fragment (`#…`); error messages and `Debug` show its query names without their values
//!   (`?state=…&code=…`), spans keep the values except those of parameters named like
//!   credentials ([`is_credential`]), which become `REDACTED`.
//! - **Length**: text from a server or a user (an `error_description`, an unknown error code, a
//!   header value) is cut to [`MAX_SERVER_TEXT`] bytes, and a URL or a path to [`MAX_URL`]
//!   bytes, both counted as `Debug` writes them, control characters escaped; a link a server
//!   sends that is longer than [`MAX_URL`] is not kept. An error, `Debug` included, stays under
//!   8 KiB.

use std::borrow::Cow;

use url::Url;

/// The most bytes of server or user text kept in an error, a log line or `Debug`.
pub(crate) const MAX_SERVER_TEXT: usize = 1024;
/// The most bytes of a URL, a path or a route shown, and of a link kept from a server.
pub(crate) const MAX_URL: usize = 256;
/// The most characters of a piece of server text quoted inside a longer message: a key id, an
/// algorithm, an audience, a malformed header value.
const MAX_QUOTED: usize = 64;

/// `text` made safe to show: every control character escaped (`\n`, `\t`, `\u{1b}`), and the
/// result cut at a character boundary so that neither it nor its `Debug` form is longer than
/// [`MAX_SERVER_TEXT`] bytes, with `…` appended when cut: a server cannot flood a log, forge
/// log lines or send terminal escapes.
///
/// Used for every piece of server text that enters an error or a log: `error_description`,
/// unknown error codes, key ids, raw elements of a page.
pub(crate) fn server_text(text: &str) -> String {
    excerpt(text, MAX_SERVER_TEXT)
}

/// At most [`MAX_QUOTED`] characters of `text`, made safe to show as [`server_text`] does: a
/// piece of server text quoted inside an error or a diagnostic.
pub(crate) fn quoted(text: &str) -> String {
    server_text(text.char_indices().nth(MAX_QUOTED).map_or(text, |(end, _)| &text[..end]))
}

/// `text`, control characters escaped, cut at a character boundary so that neither it nor its
/// `Debug` form is longer than `max` bytes; `…` marks a cut.
fn excerpt(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max) + 3);
    let mut debug_len = 0;
    for c in text.chars() {
        let start = out.len();
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
        debug_len += out[start..].escape_debug().map(char::len_utf8).sum::<usize>();
        if debug_len > max {
            out.truncate(start);
            out.push('…');
            break;
        }
    }
    out
}

/// Whether a query parameter or a header named `name` carries a credential, whatever its case
/// and spelling (`accessToken`, `access_token`, `access-token`, `ACCESS_TOKEN`, `access%5Ftoken`):
/// its letters and digits hold `token`, `secret`, `passw`, `credential`, `signature`, `session`,
/// `cookie`, `assertion`, `verifier`, `authorization` or `accesskey`, or end in `key`
/// (`api_key`, `X-Api-Key`, `subscription-key`) other than `Idempotency-Key`, or are `auth`,
/// `code`, `sig`, `pwd` or `jwt`. This covers OAuth's parameters, API keys and the signed URLs
/// of the common clouds (`X-Amz-Security-Token`, `X-Amz-Credential`, `X-Goog-Signature`,
/// Azure's `sig`).
pub(crate) fn is_credential(name: &str) -> bool {
    const HELD: [&str; 11] = [
        "token",
        "secret",
        "passw",
        "credential",
        "signature",
        "session",
        "cookie",
        "assertion",
        "verifier",
        "authorization",
        "accesskey",
    ];
    let name: String =
        name.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect();
    HELD.iter().any(|word| name.contains(word))
        || (name.ends_with("key") && name != "idempotencykey")
        || ["auth", "code", "sig", "pwd", "jwt"].contains(&name.as_str())
}

/// A URL, parsed or as someone typed it (which may not parse), as an error message or `Debug`
/// shows it: anything before an `@` in its authority (between `//` and the next `/`, `?` or `#`)
/// left out, every query value `…` (names are kept: `?state=…&code=…`; a part without `=`
/// becomes `…`), and so is the fragment (`#…`); cut to [`MAX_URL`] bytes.
pub(crate) fn shown_url(url: impl AsRef<str>) -> String {
    shown(url.as_ref(), false)
}

/// `url` as a span shows it (`url.full`): as [`shown_url`], but with the query values kept,
/// except those of parameters named like credentials ([`is_credential`]), which are `REDACTED`.
pub(crate) fn traced_url(url: &Url) -> String {
    shown(url.as_str(), true)
}

/// A path (or a route) as errors, spans and logs show it: cut to [`MAX_URL`] bytes.
pub(crate) fn shown_path(path: &str) -> String {
    excerpt(path, MAX_URL)
}

/// `raw` without user information, fragment or the query values [`traced_url`] (`values`) or
/// [`shown_url`] leave out, cut to [`MAX_URL`] bytes.
fn shown(raw: &str, values: bool) -> String {
    let raw = without_user_information(raw);
    let (before, fragment) = raw.split_once('#').map_or((&*raw, ""), |(before, _)| (before, "#…"));
    let (head, query) = before.split_once('?').map_or((before, None), |(head, query)| (head, Some(query)));
    let parts = query.map(|query| query.split('&').map(|part| shown_part(part, values)).collect::<Vec<_>>());
    let query = parts.map(|parts| format!("?{}", parts.join("&"))).unwrap_or_default();
    excerpt(&format!("{head}{query}{fragment}"), MAX_URL)
}

/// One `name=value` part of a query as [`shown`] writes it.
fn shown_part(part: &str, values: bool) -> Cow<'_, str> {
    let name = part.split_once('=').map_or(part, |(name, _)| name);
    let hidden = if values { "REDACTED" } else { "…" };
    match part.split_once('=') {
        _ if part.is_empty() => Cow::Borrowed(""),
        _ if values && !is_credential(name) => Cow::Borrowed(part),
        Some(_) => Cow::Owned(format!("{name}={hidden}")),
        None => Cow::Borrowed(hidden),
    }
}

/// `raw` without anything before an `@` in its authority.
fn without_user_information(raw: &str) -> Cow<'_, str> {
    let Some(start) = raw.find("//").map(|at| at + 2) else {
        return Cow::Borrowed(raw);
    };
    let authority_len = raw[start..].find(['/', '?', '#']).unwrap_or(raw.len() - start);
    match raw[start..start + authority_len].rfind('@') {
        Some(at) => Cow::Owned(format!("{}{}", &raw[..start], &raw[start + at + 1..])),
        None => Cow::Borrowed(raw),
    }
}

/// The content of a quoted string whose opening quote is gone, backslash escapes undone; `None`
/// when it is not closed at the end of `quoted`.
pub(crate) fn unquote(quoted: &str) -> Option<String> {
    let mut value = String::new();
    let mut chars = quoted.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return chars.as_str().is_empty().then_some(value),
            '\\' => value.push(chars.next()?),
            other => value.push(other),
        }
    }
    None
}

/// `text` split at the first ASCII `separator` outside a quoted string: the part before it and,
/// when there is one, the rest after it. A quote never closed runs to the end.
pub(crate) fn split_outside_quotes(text: &str, separator: char) -> (&str, Option<&str>) {
    let (mut quoted, mut escaped) = (false, false);
    for (index, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            _ if c == separator && !quoted => return (&text[..index], Some(&text[index + 1..])),
            _ => {}
        }
    }
    (text, None)
}

/// The parts of `text` between the ASCII `separator`s outside quoted strings.
pub(crate) fn pieces(text: &str, separator: char) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let (piece, after) = split_outside_quotes(rest?, separator);
        rest = after;
        Some(piece)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The longest a `Debug` of text cut to `max` can be: the cut, `…` and the two quotes.
    fn debug_bound(max: usize) -> usize {
        max + '…'.len_utf8() + 2
    }

    #[test]
    fn urls_are_shown_without_user_information() {
        let url = |s: &str| Url::parse(s).unwrap();
        assert_eq!(
            shown_url(url("https://user:pass@auth.example.com/x?q=1")),
            "https://auth.example.com/x?q=…"
        );
        assert_eq!(
            shown_url(url("http://127.0.0.1:8400/callback?code=c1&state=s1&flag&&iss=x#frag")),
            "http://127.0.0.1:8400/callback?code=…&state=…&…&&iss=…#…"
        );
        assert_eq!(shown_url("https://a.example/p#access_token=t"), "https://a.example/p#…");
        assert_eq!(shown_url(url("https://user@auth.example.com/")), "https://auth.example.com/");
        assert_eq!(shown_url(url("https://auth.example.com/a@b")), "https://auth.example.com/a@b");
        assert_eq!(shown_url("https://user:p@ss@host with space/a@b"), "https://host with space/a@b");
        assert_eq!(shown_url("http://u:p@[::1"), "http://[::1");
        assert_eq!(shown_url("https://host/path@x?u=a@b"), "https://host/path@x?u=…");
        assert_eq!(shown_url("not a url"), "not a url");
        assert_eq!(shown_url("mailto:someone@example.com"), "mailto:someone@example.com");
        assert_eq!(shown_url("https://a.example/\nx"), "https://a.example/\\nx");
    }

    #[test]
    fn spans_keep_listing_parameters_and_hide_credentials() {
        let traced = |s: &str| traced_url(&Url::parse(s).unwrap());
        let listing = "https://api.example.com/v1/companies?limit=100&sort=-createdAt&cursor=abc";
        assert_eq!(traced(listing), listing);
        assert_eq!(
            traced("https://user:pw@auth.example.com/x?cursor=c&access_token=t1&Code=c2#frag"),
            "https://auth.example.com/x?cursor=c&access_token=REDACTED&Code=REDACTED#…"
        );
        assert_eq!(
            traced(
                "https://a.example/?accessToken=1&clientSecret=2&refreshToken=3&access-token=4&private_token=5"
            ),
            "https://a.example/?accessToken=REDACTED&clientSecret=REDACTED&refreshToken=REDACTED&access-token=REDACTED&private_token=REDACTED"
        );
        assert_eq!(
            traced("https://b.s3.amazonaws.com/k?X-Amz-Security-Token=1&X-Amz-Signature=2&x-id=GetObject"),
            "https://b.s3.amazonaws.com/k?X-Amz-Security-Token=REDACTED&X-Amz-Signature=REDACTED&x-id=GetObject"
        );
    }

    #[test]
    fn credential_names_in_any_case_and_spelling() {
        for name in [
            "accessToken",
            "clientSecret",
            "refreshToken",
            "access-token",
            "private_token",
            "X-Amz-Security-Token",
            "X-Amz-Credential",
            "X-Goog-Signature",
            "AWSAccessKeyId",
            "sig",
            "Code",
            "CLIENT_SECRET",
            "api_key",
            "apiKey",
            "X-Api-Key",
            "Ocp-Apim-Subscription-Key",
            "key",
            "password",
            "code_verifier",
            "client_assertion",
            "id_token_hint",
            "access%5Ftoken",
            "Cookie",
            "Proxy-Authorization",
        ] {
            assert!(is_credential(name), "{name}");
        }
        for name in [
            "cursor",
            "limit",
            "sort",
            "status",
            "companyId",
            "Idempotency-Key",
            "X-API-Preview",
            "expand",
            "keys",
        ] {
            assert!(!is_credential(name), "{name}");
        }
    }

    #[test]
    fn control_characters_are_escaped_and_long_text_is_cut() {
        assert_eq!(server_text("bad\ncursor\t\u{1b}[31m"), "bad\\ncursor\\t\\u{1b}[31m");
        assert_eq!(server_text("plain, \"quoted\" ünïcode"), "plain, \"quoted\" ünïcode");
        let long = "é".repeat(2_000);
        let cut = server_text(&long);
        assert!(cut.ends_with('…') && cut.len() <= MAX_SERVER_TEXT + '…'.len_utf8(), "{}", cut.len());
        // Counted as `Debug` writes it: 1 KiB of quotes is half as many.
        let quotes = server_text(&"\"".repeat(2_000));
        assert_eq!(quotes.len(), MAX_SERVER_TEXT / 2 + '…'.len_utf8());
        assert_eq!(shown_path(&"/v1/companies".repeat(1000)).len(), MAX_URL + '…'.len_utf8());
        let long_url = format!("https://a.example/{}?key=s3cret", "p".repeat(100_000));
        assert_eq!(shown_url(&long_url).len(), MAX_URL + '…'.len_utf8());
        assert_eq!(quoted(&"ü".repeat(100)), "ü".repeat(MAX_QUOTED), "characters, not bytes");
        assert_eq!(quoted("kid\n1\u{1b}"), "kid\\n1\\u{1b}");
    }

    /// The words of credential names, spelled every way [`spelled`] knows.
    const CREDENTIALS: &[&[&str]] = &[
        &["access", "token"],
        &["client", "secret"],
        &["refresh", "token"],
        &["private", "token"],
        &["id", "token"],
        &["x", "amz", "security", "token"],
        &["x", "amz", "credential"],
        &["x", "goog", "signature"],
        &["api", "key"],
        &["x", "api", "key"],
        &["session", "id"],
        &["client", "assertion"],
        &["code", "verifier"],
        &["password"],
        &["code"],
        &["sig"],
    ];

    /// `words` in one of eight spellings: snake, kebab, camel, Pascal, upper snake, dotted,
    /// any case per letter (`upper`), percent-encoded separators.
    fn spelled(words: &[&str], style: u8, upper: &[bool]) -> String {
        let capital = |w: &str| w[..1].to_ascii_uppercase() + &w[1..];
        match style {
            0 => words.join("_"),
            1 => words.join("-"),
            2 => words[..1]
                .iter()
                .copied()
                .map(str::to_owned)
                .chain(words[1..].iter().map(|w| capital(w)))
                .collect(),
            3 => words.iter().map(|w| capital(w)).collect(),
            4 => words.join("_").to_ascii_uppercase(),
            5 => words.join("."),
            6 => words
                .join("-")
                .chars()
                .zip(upper.iter().cycle())
                .map(|(c, &up)| if up { c.to_ascii_uppercase() } else { c })
                .collect(),
            _ => words.join("%5F"),
        }
    }

    proptest! {
        #[test]
        fn output_is_bounded_and_has_no_control_characters(text in any::<String>(), times in 1..200usize) {
            let long = text.repeat(times);
            for (out, max) in [(server_text(&long), MAX_SERVER_TEXT), (shown_path(&long), MAX_URL)] {
                prop_assert!(out.len() <= max + '…'.len_utf8());
                let debug = format!("{out:?}");
                prop_assert!(debug.len() <= debug_bound(max));
                prop_assert!(!out.chars().any(char::is_control));
            }
        }

        #[test]
        fn any_url_is_shown_within_the_bound(raw in any::<String>(), times in 1..200usize) {
            let raw = format!("https://u:p@h.example/{}", raw.repeat(times));
            for shown in [shown_url(&raw), Url::parse(&raw).map(|url| traced_url(&url)).unwrap_or_default()] {
                let debug = format!("{shown:?}");
                prop_assert!(debug.len() <= debug_bound(MAX_URL), "{}", shown.len());
                prop_assert!(!shown.contains("u:p@"));
            }
        }

        /// A credential-like name in any spelling never shows its value: neither in messages
        /// nor in spans, which keep the other parameters.
        #[test]
        fn credential_values_are_never_shown(
            words in prop::sample::select(CREDENTIALS),
            style in 0..8u8,
            upper in prop::collection::vec(any::<bool>(), 1..16),
            value in "[A-Za-z0-9._~-]{0,12}",
        ) {
            let name = spelled(words, style, &upper);
            prop_assert!(is_credential(&name), "{name}");
            let raw = format!("https://api.example.com/v1/x?cursor=c1&{name}=V4LUE{value}&limit=5");
            let url = Url::parse(&raw).expect("a URL");
            let traced = traced_url(&url);
            prop_assert!(traced.contains("cursor=c1&") && traced.ends_with("=REDACTED&limit=5"), "{traced}");
            for shown in [traced, shown_url(&raw), shown_url(&url)] {
                prop_assert!(!shown.contains("V4LUE"), "{shown}");
            }
        }
    }
}
