//! Parsing of the `Link` response header (RFC 8288, section 3 and appendix B).
//!
//! The parser reads every field line, splits link values at commas outside quoted strings
//! and URI references, and keeps going past a value it cannot read: one malformed link never
//! costs the others.

use url::Url;

/// One link from a `Link` header: a target, its relation types and its parameters.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Link {
    /// The link target, resolved against the URL of the request that returned it.
    pub(crate) target: Url,
    /// The relation types from the first `rel` parameter, lowercased, in order. Empty when
    /// the link has no `rel` parameter.
    pub(crate) relations: Vec<String>,
    /// Every parameter in order, `rel` included, duplicates kept: names lowercased, quoted
    /// values unquoted and unescaped, and a parameter without a value given as `""`.
    /// Extended values such as `title*` are kept as received (not percent-decoded). The client
    /// reads `rel` alone; the tests read the rest, to check the parser.
    pub(crate) params: Vec<(String, String)>,
}

impl Link {
    /// Whether `relation` is one of this link's relation types (compared case-insensitively).
    #[must_use]
    pub(crate) fn has_relation(&self, relation: &str) -> bool {
        self.relations.iter().any(|own| own.eq_ignore_ascii_case(relation))
    }

    /// The value of the first parameter named `name` (compared case-insensitively).
    #[cfg(test)]
    #[must_use]
    pub(crate) fn param(&self, name: &str) -> Option<&str> {
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
pub(crate) fn parse_links<'a>(field_lines: impl IntoIterator<Item = &'a str>, base: &Url) -> Vec<Link> {
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
mod tests;
