//! Parsing of the `Link` response header (RFC 8288, section 3 and appendix B).
//!
//! The parser reads every field line, splits link values at commas and parameters at
//! semicolons outside quoted strings (and a value's `<..>` target), and keeps going past a
//! value it cannot read: one malformed link never costs the others.

use url::Url;

use crate::text::{MAX_URL, pieces, split_outside_quotes, unquote};

/// One link from a `Link` header: a target and its relation types.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Link {
    /// The link target, resolved against the URL of the request that returned it.
    pub(crate) target: Url,
    /// The relation types from the first `rel` parameter, lowercased, in order. Empty when
    /// the link has no `rel` parameter.
    pub(crate) relations: Vec<String>,
}

/// Optional whitespace.
const OWS: [char; 2] = [' ', '\t'];

/// Parses the field lines of `Link` headers into links.
///
/// Follows RFC 8288: several field lines and several comma-separated values per line;
/// parameter values as tokens or quoted strings (which may hold commas, semicolons and
/// backslash escapes); parameter names in any case; `rel` as a space-separated list of
/// relation types, of which only the first `rel` parameter counts; targets resolved against
/// `base`, the URL of the request. A link value that cannot be read, or whose target does not
/// resolve to a URL of at most [`MAX_URL`] bytes, is skipped; the rest of the header is still
/// read, except after a `<` or a quote that is never closed. Never panics.
pub(crate) fn parse_links(field_lines: impl IntoIterator<Item = impl AsRef<str>>, base: &Url) -> Vec<Link> {
    let mut links = Vec::new();
    for line in field_lines {
        let mut rest = line.as_ref();
        loop {
            rest = rest.trim_start_matches([' ', '\t', ',']);
            if rest.is_empty() {
                break;
            }
            // A value that does not start with `<` is skipped up to the next comma.
            let (target, params) = match rest.strip_prefix('<').map(|value| value.split_once('>')) {
                Some(Some((target, params))) => (Some(target), params),
                Some(None) => break,
                None => (None, rest),
            };
            let (params, next) = split_outside_quotes(params, ',');
            links.extend(target.and_then(|target| read_link(target, params, base)));
            rest = next.unwrap_or_default();
        }
    }
    links
}

/// The target of the first link in `links` with the relation type `relation` (lowercase).
pub(crate) fn find_relation(links: &[Link], relation: &str) -> Option<Url> {
    links.iter().find(|link| link.relations.iter().any(|own| own == relation)).map(|link| link.target.clone())
}

/// A link from its target and what follows it up to the next link value:
/// `*( OWS ";" OWS link-param )`. `None` when that is malformed or the target does not resolve.
fn read_link(target: &str, params: &str, base: &Url) -> Option<Link> {
    let mut params = pieces(params, ';');
    if !params.next().unwrap_or_default().trim_matches(OWS).is_empty() {
        return None;
    }
    let mut relations = None;
    // An empty parameter, as in a trailing `;`, is allowed.
    for param in params.map(|param| param.trim_matches(OWS)).filter(|param| !param.is_empty()) {
        let (name, value) = read_param(param)?;
        if relations.is_none() && name.eq_ignore_ascii_case("rel") {
            relations = Some(value.split_ascii_whitespace().map(str::to_ascii_lowercase).collect());
        }
    }
    let target = base.join(target.trim()).ok().filter(|target| target.as_str().len() <= MAX_URL)?;
    Some(Link { target, relations: relations.unwrap_or_default() })
}

/// Reads `token BWS [ "=" BWS ( token / quoted-string ) ]`: the name and the value (unquoted
/// and unescaped; `""` without one). `None` when it is malformed.
fn read_param(param: &str) -> Option<(&str, String)> {
    let (name, value) = param.split_once('=').unwrap_or((param, ""));
    let (name, value) = (name.trim_end_matches(OWS), value.trim_start_matches(OWS));
    // A name is one or more `tchar` (RFC 9110 section 5.6.2).
    let tchar = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if name.is_empty() || !name.bytes().all(tchar) {
        return None;
    }
    let value = match value.strip_prefix('"') {
        Some(quoted) => unquote(quoted)?,
        // Tolerates characters a token may not hold (such as `/` in an unquoted URL).
        None if value.contains([' ', '\t', '"']) => return None,
        None => value.to_owned(),
    };
    Some((name, value))
}

#[cfg(test)]
mod tests;
