//! Text from the server on its way into an error message or a log line.

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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
