//! Text on its way into an error message or a log line: what a server sent, and URLs, which
//! are shown without their user information and query values.

use std::borrow::Cow;

use url::Url;

/// The most bytes of server text kept in an error or a log line.
pub(crate) const MAX_SERVER_TEXT: usize = 1024;

/// `text` made safe to show: every control character escaped (`\n`, `\t`, `\u{1b}`), and the
/// result cut at a character boundary to at most [`MAX_SERVER_TEXT`] bytes, with `…` appended
/// when cut, so a server cannot flood a log, forge log lines or send terminal escapes.
///
/// Used for every piece of server text that enters an error or a log: `error_description`,
/// unknown error codes, key ids, raw elements of a page.
pub(crate) fn server_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_SERVER_TEXT) + 4);
    let mut escaped = String::new();
    for c in text.chars() {
        escaped.clear();
        if c.is_control() {
            escaped.extend(c.escape_debug());
        } else {
            escaped.push(c);
        }
        if out.len() + escaped.len() > MAX_SERVER_TEXT {
            out.push('…');
            break;
        }
        out.push_str(&escaped);
    }
    out
}

/// Like [`server_text`], leaving text that needs no change as it is.
pub(crate) fn server_text_owned(text: String) -> String {
    if text.len() <= MAX_SERVER_TEXT && !text.chars().any(char::is_control) {
        return text;
    }
    server_text(&text)
}

/// `url` as a message, a log line or `Debug` shows it: without user information
/// (`user:password@`) and without the values of its query and fragment, which may hold a
/// credential (`?state=…&code=…`); see [`shown_raw_url`].
pub(crate) fn shown_url(url: &Url) -> Cow<'_, str> {
    shown_raw_url(url.as_str())
}

/// A URL as someone typed it, which may not parse, as a message shows it: anything before an
/// `@` in its authority (between `//` and the next `/`, `?` or `#`) is left out, every query
/// value becomes `…` (names are kept: `?state=…&code=…`; a part without `=` becomes `…`), and
/// so does the fragment (`#…`).
pub(crate) fn shown_raw_url(raw: &str) -> Cow<'_, str> {
    let shown = without_user_information(raw);
    if !shown.contains(['?', '#']) {
        return shown;
    }
    let (before, fragment) = shown.split_once('#').map_or((&*shown, ""), |(before, _)| (before, "#…"));
    let Some((head, query)) = before.split_once('?') else {
        return Cow::Owned(format!("{before}{fragment}"));
    };
    let names = query.split('&').map(|part| match part.split_once('=') {
        Some((name, _)) => format!("{name}=…"),
        None if part.is_empty() => String::new(),
        None => "…".to_owned(),
    });
    Cow::Owned(format!("{head}?{}{fragment}", names.collect::<Vec<_>>().join("&")))
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

    #[test]
    fn urls_are_shown_without_user_information() {
        let url = |s: &str| Url::parse(s).unwrap();
        assert_eq!(
            shown_url(&url("https://user:pass@auth.example.com/x?q=1")),
            "https://auth.example.com/x?q=…"
        );
        assert_eq!(
            shown_url(&url("http://127.0.0.1:8400/callback?code=c1&state=s1&flag&&iss=x#frag")),
            "http://127.0.0.1:8400/callback?code=…&state=…&…&&iss=…#…"
        );
        assert_eq!(shown_raw_url("https://a.example/p#access_token=t"), "https://a.example/p#…");
        assert_eq!(shown_url(&url("https://user@auth.example.com/")), "https://auth.example.com/");
        assert_eq!(shown_url(&url("https://auth.example.com/a@b")), "https://auth.example.com/a@b");
        assert_eq!(shown_raw_url("https://user:p@ss@host with space/a@b"), "https://host with space/a@b");
        assert_eq!(shown_raw_url("http://u:p@[::1"), "http://[::1");
        assert_eq!(shown_raw_url("https://host/path@x?u=a@b"), "https://host/path@x?u=…");
        assert_eq!(shown_raw_url("not a url"), "not a url");
        assert_eq!(shown_raw_url("mailto:someone@example.com"), "mailto:someone@example.com");
    }

    #[test]
    fn control_characters_are_escaped_and_long_text_is_cut() {
        assert_eq!(server_text("bad\ncursor\t\u{1b}[31m"), "bad\\ncursor\\t\\u{1b}[31m");
        assert_eq!(server_text("plain, \"quoted\" ünïcode"), "plain, \"quoted\" ünïcode");
        let long = "é".repeat(2_000);
        let cut = server_text(&long);
        assert!(cut.ends_with('…') && cut.len() <= MAX_SERVER_TEXT + '…'.len_utf8(), "{}", cut.len());
        assert_eq!(server_text_owned("fine".to_owned()), "fine");
        assert_eq!(server_text_owned("a\rb".to_owned()), "a\\rb");
    }

    proptest! {
        #[test]
        fn output_is_bounded_and_has_no_control_characters(text in any::<String>()) {
            let out = server_text(&text.repeat(50));
            prop_assert!(out.len() <= MAX_SERVER_TEXT + '…'.len_utf8());
            prop_assert!(!out.chars().any(char::is_control));
        }
    }
}
