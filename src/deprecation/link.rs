//! Parsing of the `Link` response header (RFC 8288, section 3 and appendix B).
//!
//! The parser reads every field line, splits link values at commas outside quoted strings
//! and URI references, and keeps going past a value it cannot read: one malformed link never
//! costs the others.

use url::Url;

/// One link from a `Link` header: a target, its relation types and its parameters.
///
/// ```
/// use business_records::deprecation::parse_links;
/// use url::Url;
///
/// let base = Url::parse("https://api.example.com/v1/companies?limit=5")?;
/// let links = parse_links([r#"</v2/companies>; rel="successor-version"; title="v2""#], &base);
/// assert_eq!(links[0].target.as_str(), "https://api.example.com/v2/companies");
/// assert!(links[0].has_relation("Successor-Version"));
/// assert_eq!(links[0].param("title"), Some("v2"));
/// # Ok::<(), url::ParseError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Link {
    /// The link target, resolved against the URL of the request that returned it.
    pub target: Url,
    /// The relation types from the first `rel` parameter, lowercased, in order. Empty when
    /// the link has no `rel` parameter.
    pub relations: Vec<String>,
    /// Every parameter in order, `rel` included, duplicates kept: names lowercased, quoted
    /// values unquoted and unescaped, and a parameter without a value given as `""`.
    /// Extended values such as `title*` are kept as received (not percent-decoded).
    pub params: Vec<(String, String)>,
}

impl Link {
    /// Whether `relation` is one of this link's relation types (compared case-insensitively).
    #[must_use]
    pub fn has_relation(&self, relation: &str) -> bool {
        self.relations.iter().any(|own| own.eq_ignore_ascii_case(relation))
    }

    /// The value of the first parameter named `name` (compared case-insensitively).
    #[must_use]
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params.iter().find(|(own, _)| own.eq_ignore_ascii_case(name)).map(|(_, value)| value.as_str())
    }
}

/// Parses the field lines of `Link` headers into links.
///
/// Follows RFC 8288: several field lines and several comma-separated values per line;
/// parameter values as tokens or quoted strings (which may hold commas, semicolons and
/// backslash escapes); parameter names in any case; `rel` as a space-separated list of
/// relation types, of which only the first `rel` parameter counts; targets resolved against
/// `base`, the URL of the request. A link value that cannot be read, or whose target does not
/// resolve to a URL, is skipped; the rest of the header is still read. Never panics.
///
/// ```
/// use business_records::deprecation::parse_links;
/// use url::Url;
///
/// let base = Url::parse("https://api.example.com/v1/companies")?;
/// let links = parse_links(
///     [
///         r#"</v2/companies>; rel="successor-version latest-version", <https://docs.example.com/sunset>; rel=deprecation"#,
///         r#"<https://docs.example.com/a,b>; REL=Help; title="a, b; c""#,
///     ],
///     &base,
/// );
/// assert_eq!(links.len(), 3);
/// assert_eq!(links[0].relations, ["successor-version", "latest-version"]);
/// assert_eq!(links[2].param("title"), Some("a, b; c"));
/// # Ok::<(), url::ParseError>(())
/// ```
pub fn parse_links<'a>(field_lines: impl IntoIterator<Item = &'a str>, base: &Url) -> Vec<Link> {
    let mut links = Vec::new();
    for line in field_lines {
        parse_field_line(line, base, &mut links);
    }
    links
}

/// The first link in `links` with the relation type `relation`.
pub(crate) fn find_relation<'l>(links: &'l [Link], relation: &str) -> Option<&'l Link> {
    links.iter().find(|link| link.has_relation(relation))
}

/// Why a link value was not read.
enum Failure {
    /// This value is malformed: skip to the next comma and go on.
    SkipValue,
    /// The rest of the line cannot be split reliably (an unterminated `<` or quoted string).
    StopLine,
}

fn parse_field_line(line: &str, base: &Url, links: &mut Vec<Link>) {
    let mut cursor = Cursor { text: line, pos: 0 };
    loop {
        cursor.skip_while(|b| matches!(b, b' ' | b'\t' | b','));
        if cursor.at_end() {
            return;
        }
        match parse_link_value(&mut cursor) {
            Ok((target, params)) => {
                if let Some(link) = build_link(target, params, base) {
                    links.push(link);
                }
            }
            Err(Failure::SkipValue) => cursor.skip_past_next_comma(),
            Err(Failure::StopLine) => return,
        }
    }
}

type Params = Vec<(String, String)>;

/// Reads `"<" URI-Reference ">" *( OWS ";" OWS link-param )`, up to the next top-level comma
/// or the end of the line.
fn parse_link_value<'s>(cursor: &mut Cursor<'s>) -> Result<(&'s str, Params), Failure> {
    if !cursor.eat(b'<') {
        return Err(Failure::SkipValue);
    }
    let target = cursor.take_until(b'>').ok_or(Failure::StopLine)?;
    let mut params = Vec::new();
    loop {
        cursor.skip_ows();
        match cursor.peek() {
            None | Some(b',') => return Ok((target, params)),
            Some(b';') => {
                cursor.advance();
                cursor.skip_ows();
                if let Some(param) = parse_link_param(cursor)? {
                    params.push(param);
                }
            }
            Some(_) => return Err(Failure::SkipValue),
        }
    }
}

/// Reads `token BWS [ "=" BWS ( token / quoted-string ) ]`. An empty parameter (as in a
/// trailing `;`) is allowed and yields nothing.
fn parse_link_param(cursor: &mut Cursor<'_>) -> Result<Option<(String, String)>, Failure> {
    let name = cursor.take_while(is_tchar);
    if name.is_empty() {
        return match cursor.peek() {
            None | Some(b',' | b';') => Ok(None),
            Some(_) => Err(Failure::SkipValue),
        };
    }
    cursor.skip_ows();
    let value = if cursor.eat(b'=') {
        cursor.skip_ows();
        if cursor.peek() == Some(b'"') {
            cursor.quoted_string().ok_or(Failure::StopLine)?
        } else {
            // Tolerates characters a token may not hold (such as `/` in an unquoted URL):
            // the value ends at whitespace, `;`, `,` or a quote.
            cursor.take_while(|b| !matches!(b, b' ' | b'\t' | b';' | b',' | b'"')).to_owned()
        }
    } else {
        String::new()
    };
    Ok(Some((name.to_ascii_lowercase(), value)))
}

fn build_link(target: &str, params: Params, base: &Url) -> Option<Link> {
    let target = base.join(target.trim()).ok()?;
    let relations = params
        .iter()
        .find(|(name, _)| name == "rel")
        .map(|(_, value)| value.split_ascii_whitespace().map(str::to_ascii_lowercase).collect())
        .unwrap_or_default();
    Some(Link { target, relations, params })
}

/// `tchar` of RFC 9110 section 5.6.2.
fn is_tchar(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// A position in a field line.
///
/// Every position it stops at is either the end, or just before or after an ASCII byte, so
/// slicing there always falls on a character boundary.
struct Cursor<'s> {
    text: &'s str,
    pos: usize,
}

impl<'s> Cursor<'s> {
    fn rest(&self) -> &'s str {
        self.text.get(self.pos..).unwrap_or_default()
    }

    fn at_end(&self) -> bool {
        self.pos >= self.text.len()
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    /// Moves past the current byte; only called after `peek` saw an ASCII byte.
    fn advance(&mut self) {
        self.pos += 1;
    }

    fn eat(&mut self, byte: u8) -> bool {
        let matched = self.peek() == Some(byte);
        if matched {
            self.advance();
        }
        matched
    }

    fn skip_ows(&mut self) {
        self.skip_while(|b| matches!(b, b' ' | b'\t'));
    }

    /// Skips bytes matching `accept`, which must answer the same for every non-ASCII byte.
    fn skip_while(&mut self, accept: impl Fn(u8) -> bool) {
        self.take_while(accept);
    }

    /// Takes bytes matching `accept`, which must answer the same for every non-ASCII byte.
    fn take_while(&mut self, accept: impl Fn(u8) -> bool) -> &'s str {
        let rest = self.rest();
        let len = rest.bytes().take_while(|&b| accept(b)).count();
        self.pos += len;
        rest.get(..len).unwrap_or_default()
    }

    /// Takes the text before the next ASCII `delimiter` and moves past the delimiter.
    fn take_until(&mut self, delimiter: u8) -> Option<&'s str> {
        let rest = self.rest();
        let len = rest.bytes().position(|b| b == delimiter)?;
        self.pos += len + 1;
        rest.get(..len)
    }

    /// Reads a quoted string starting at its opening quote, undoing backslash escapes.
    /// `None` when the closing quote is missing.
    fn quoted_string(&mut self) -> Option<String> {
        let rest = self.rest();
        let mut value = String::new();
        let mut chars = rest.char_indices().skip(1);
        while let Some((index, c)) = chars.next() {
            match c {
                '"' => {
                    self.pos += index + 1;
                    return Some(value);
                }
                '\\' => value.push(chars.next()?.1),
                other => value.push(other),
            }
        }
        None
    }

    /// Moves past the next comma that is outside a quoted string, or to the end.
    fn skip_past_next_comma(&mut self) {
        let mut in_quotes = false;
        let mut escaped = false;
        let rest = self.rest();
        for (index, byte) in rest.bytes().enumerate() {
            if in_quotes {
                match byte {
                    _ if escaped => escaped = false,
                    b'\\' => escaped = true,
                    b'"' => in_quotes = false,
                    _ => {}
                }
            } else if byte == b'"' {
                in_quotes = true;
            } else if byte == b',' {
                self.pos += index + 1;
                return;
            }
        }
        self.pos = self.text.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn base() -> Url {
        Url::parse("https://api.example.com/v1/companies?limit=5").expect("valid base url")
    }

    fn parse(lines: &[&str]) -> Vec<Link> {
        parse_links(lines.iter().copied(), &base())
    }

    const THREE: [&str; 3] = ["https://a.example/1", "https://a.example/2", "https://a.example/3"];

    fn targets(links: &[Link]) -> Vec<&str> {
        links.iter().map(|link| link.target.as_str()).collect()
    }

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn single_link() {
        let links = parse(&[r#"<https://api.example.com/v2/companies>; rel="successor-version""#]);
        assert_eq!(links.len(), 1);
        assert_eq!(links[0].target.as_str(), "https://api.example.com/v2/companies");
        assert_eq!(links[0].relations, ["successor-version"]);
        assert_eq!(links[0].params, pairs(&[("rel", "successor-version")]));
    }

    #[test]
    fn several_links_in_one_line() {
        let links = parse(&[
            r#"<https://a.example/1>; rel=next, <https://a.example/2>; rel="prev",<https://a.example/3>;rel=last"#,
        ]);
        assert_eq!(targets(&links), THREE);
        assert_eq!(links[2].relations, ["last"]);
    }

    #[test]
    fn links_across_two_field_lines() {
        let links = parse(&[
            r#"<https://a.example/1>; rel=successor-version"#,
            r#"<https://a.example/2>; rel=deprecation, <https://a.example/3>; rel=sunset"#,
        ]);
        assert_eq!(targets(&links), THREE);
        assert!(links[1].has_relation("deprecation"));
    }

    #[test]
    fn quoted_commas_semicolons_and_escapes() {
        let links = parse(&[
            r#"<https://a.example/1>; title="one, two; three"; rel="next", <https://a.example/2>; title="say \"hi\", \\ ok""#,
        ]);
        assert_eq!(links.len(), 2);
        assert_eq!(links[0].param("title"), Some("one, two; three"));
        assert_eq!(links[0].relations, ["next"]);
        assert_eq!(links[1].param("title"), Some(r#"say "hi", \ ok"#));
    }

    #[test]
    fn commas_inside_the_target() {
        let links = parse(&[r#"<https://a.example/a,b;c>; rel=x, <https://a.example/d>; rel=y"#]);
        assert_eq!(targets(&links), ["https://a.example/a,b;c", "https://a.example/d"]);
    }

    #[test]
    fn space_separated_relations() {
        let links = parse(&[r#"</v2/companies>; rel="successor-version latest-version""#]);
        assert_eq!(links[0].relations, ["successor-version", "latest-version"]);
        assert!(links[0].has_relation("latest-version"));
        assert!(links[0].has_relation("successor-version"));
    }

    #[test]
    fn parameter_names_and_relations_ignore_case() {
        let links = parse(&[r#"</v2/companies>; REL=Successor-Version; Title="V2""#]);
        assert_eq!(links[0].relations, ["successor-version"]);
        assert_eq!(links[0].params, pairs(&[("rel", "Successor-Version"), ("title", "V2")]));
        assert!(links[0].has_relation("SUCCESSOR-VERSION"));
    }

    #[test]
    fn only_the_first_rel_counts() {
        let links = parse(&[r#"</a>; rel=first; rel=second"#]);
        assert_eq!(links[0].relations, ["first"]);
        assert_eq!(links[0].params.len(), 2);
    }

    #[test]
    fn relative_targets_resolve_against_the_request_url() {
        let links = parse(&[
            r#"</v2/companies>; rel="successor-version", <v3>; rel=x, <?page=2>; rel=next, <>; rel=self, <//cdn.example/x>; rel=y"#,
        ]);
        assert_eq!(
            targets(&links),
            [
                "https://api.example.com/v2/companies",
                "https://api.example.com/v1/v3",
                "https://api.example.com/v1/companies?page=2",
                "https://api.example.com/v1/companies?limit=5",
                "https://cdn.example/x",
            ]
        );
    }

    #[test]
    fn extended_parameters_are_kept_raw() {
        let links = parse(&[r#"</a>; rel=help; title*=UTF-8'de'n%c3%a4chstes%20Kapitel; hreflang=de"#]);
        assert_eq!(links[0].param("title*"), Some("UTF-8'de'n%c3%a4chstes%20Kapitel"));
        assert_eq!(links[0].param("hreflang"), Some("de"));
    }

    #[test]
    fn parameters_without_values_and_odd_spacing() {
        let links = parse(&["  < /a >  ;  rel = \"x\" ; crossorigin ;; , </b>;rel=y;"]);
        assert_eq!(targets(&links), ["https://api.example.com/a", "https://api.example.com/b"]);
        assert_eq!(links[0].params, pairs(&[("rel", "x"), ("crossorigin", "")]));
        assert_eq!(links[0].relations, ["x"]);
    }

    #[test]
    fn links_without_rel_have_no_relations() {
        let links = parse(&["</a>; title=x"]);
        assert!(links[0].relations.is_empty());
    }

    #[test]
    fn malformed_values_are_skipped() {
        let links = parse(&[
            r#"garbage, <https://a.example/1>; rel=ok, <https://a.example/2> junk; rel=bad, <https://a.example/3>; =x, <https://a.example/4>; rel="a,b" trailing, <https://a.example/5>; rel=ok2"#,
            "<http://[::1/>; rel=bad-url, </6>; rel=ok3",
            r#"<https://a.example/7>; title="unterminated, <https://a.example/8>"#,
            "<https://a.example/9; rel=unterminated-target",
            "",
            " , ,, ",
        ]);
        assert_eq!(
            targets(&links),
            ["https://a.example/1", "https://a.example/5", "https://api.example.com/6"]
        );
    }

    #[test]
    fn non_ascii_text_does_not_break_parsing() {
        let links = parse(&[
            r#"</caf%C3%A9>; title="café, ☕"; rel=x, <https://a.example/ü>; rel=y, ü<x>, </z>; rel=z"#,
        ]);
        assert_eq!(links.len(), 3);
        assert_eq!(links[0].param("title"), Some("café, ☕"));
        assert_eq!(links[1].target.as_str(), "https://a.example/%C3%BC");
    }

    #[test]
    fn find_relation_picks_the_first_match() {
        let links = parse(&[
            "</a>; rel=other, </b>; rel=\"latest-version successor-version\", </c>; rel=successor-version",
        ]);
        let found = find_relation(&links, "successor-version").map(|l| l.target.path());
        assert_eq!(found, Some("/b"));
        assert!(find_relation(&links, "deprecation").is_none());
    }

    /// A generated link: target, `rel` name as written, relation types, other parameters.
    #[derive(Debug, Clone)]
    struct Generated {
        target: String,
        rel_name: String,
        rels: Vec<String>,
        params: Vec<(String, String, bool)>,
    }

    fn quote(value: &str) -> String {
        let mut quoted = String::from("\"");
        for c in value.chars() {
            if c == '"' || c == '\\' {
                quoted.push('\\');
            }
            quoted.push(c);
        }
        quoted.push('"');
        quoted
    }

    fn serialize(link: &Generated) -> String {
        let mut text = format!("<{}>", link.target);
        text.push_str(&format!("; {}={}", link.rel_name, quote(&link.rels.join(" "))));
        for (name, value, quoted) in &link.params {
            if *quoted {
                text.push_str(&format!(";{name}={}", quote(value)));
            } else {
                text.push_str(&format!(" ; {name}={value}"));
            }
        }
        text
    }

    fn generated() -> impl Strategy<Value = Generated> {
        let target = prop_oneof![
            "/[a-z0-9]{1,8}(/[a-z0-9]{1,8}){0,2}",
            "https://[a-z]{1,8}\\.example/[a-z0-9,;]{0,8}",
            "[a-z]{1,8}\\?[a-z]=[0-9]{1,3}",
        ];
        let rel_name = "[rR][eE][lL]";
        let rels = proptest::collection::vec("[a-zA-Z][a-zA-Z0-9.-]{0,12}", 1..4);
        let param =
            ("[a-zA-Z][a-zA-Z0-9*-]{0,8}", "[ -~]{0,16}", "[a-zA-Z0-9.!#$%&'*+^_`|~-]{1,8}", any::<bool>())
                .prop_filter("rel is generated separately", |(name, ..)| !name.eq_ignore_ascii_case("rel"))
                .prop_map(
                    |(name, free, token, quoted)| {
                        if quoted { (name, free, true) } else { (name, token, false) }
                    },
                );
        let params = proptest::collection::vec(param, 0..4);
        (target, rel_name, rels, params).prop_map(|(target, rel_name, rels, params)| Generated {
            target,
            rel_name,
            rels,
            params,
        })
    }

    proptest! {
        #[test]
        fn never_panics(lines in proptest::collection::vec(any::<String>(), 0..4)) {
            let _ = parse_links(lines.iter().map(String::as_str), &base());
        }

        #[test]
        fn never_panics_on_link_like_text(
            lines in proptest::collection::vec("[<>;,=\"\\\\ a-zA-Z0-9:/?#*'%é]{0,60}", 0..4)
        ) {
            let _ = parse_links(lines.iter().map(String::as_str), &base());
        }

        #[test]
        fn generated_links_round_trip(
            links in proptest::collection::vec(generated(), 1..6),
            split in any::<proptest::sample::Index>(),
        ) {
            let values: Vec<String> = links.iter().map(serialize).collect();
            let at = split.index(values.len() + 1);
            let lines = [values[..at].join(", "), values[at..].join(",")];
            let parsed = parse_links(lines.iter().map(String::as_str), &base());
            prop_assert_eq!(parsed.len(), links.len());
            for (link, generated) in parsed.iter().zip(&links) {
                let target = base().join(&generated.target).map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(&link.target, &target);
                let rels: Vec<String> = generated.rels.iter().map(|r| r.to_ascii_lowercase()).collect();
                prop_assert_eq!(&link.relations, &rels);
                let mut params = vec![("rel".to_owned(), generated.rels.join(" "))];
                params.extend(generated.params.iter().map(|(n, v, _)| (n.to_ascii_lowercase(), v.clone())));
                prop_assert_eq!(&link.params, &params);
            }
        }
    }
}
