//! Token-endpoint request bodies and client credentials: form decoding and HTTP Basic.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use wiremock::Request;

use super::ErrorReply;

/// The `(client_id, client_secret)` pairs an `Authorization: Basic` header may stand for,
/// most likely first; empty when the header is not Basic or not decodable.
///
/// Two encodings are in use. RFC 6749 section 2.3.1 form-urlencodes the id and the secret
/// before joining them with `:` and base64-encoding the result (so `:`, `+`, `%` and spaces
/// survive); API Part 5.4 and most HTTP clients (RFC 7617) base64-encode
/// `client_id:client_secret` as it is. The RFC 6749 reading comes first. A literal id may
/// itself hold a `:`, so every split at a colon is a candidate; the caller accepts the one that
/// names a registered client with that secret.
pub(crate) fn parse_basic(value: &str) -> Vec<(String, String)> {
    let Some(decoded) = basic_payload(value) else {
        return Vec::new();
    };
    let mut candidates = Vec::new();
    let form_encoded =
        decoded.split_once(':').and_then(|(id, secret)| Some((form_urldecode(id)?, form_urldecode(secret)?)));
    if let Some(pair) = form_encoded {
        candidates.push(pair);
    }
    for (at, _) in decoded.match_indices(':') {
        let pair = (decoded[..at].to_owned(), decoded[at + 1..].to_owned());
        if !candidates.contains(&pair) {
            candidates.push(pair);
        }
    }
    candidates.retain(|(id, _)| !id.is_empty());
    candidates
}

/// The decoded credentials of an `Authorization: Basic` header.
fn basic_payload(value: &str) -> Option<String> {
    let (scheme, credentials) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let credentials = credentials.trim();
    let decoded = STANDARD.decode(credentials).or_else(|_| STANDARD_NO_PAD.decode(credentials)).ok()?;
    String::from_utf8(decoded).ok()
}

/// Decodes `application/x-www-form-urlencoded` text (`+` is a space);
/// `None` for a broken escape or invalid UTF-8.
fn form_urldecode(s: &str) -> Option<String> {
    percent_decode(&s.replace('+', " "))
}

/// Decodes `%XX` escapes (RFC 3986; `+` stays itself); `None` for a broken escape or invalid
/// UTF-8.
pub(crate) fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).filter(|hex| hex.iter().all(u8::is_ascii_hexdigit))?;
            out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A token request's form body. Empty values count as absent and repeated
/// parameters are refused (RFC 6749 section 3.2).
#[derive(Debug, Default)]
pub(crate) struct Form(HashMap<String, String>);

impl Form {
    pub(crate) fn parse(request: &Request) -> Result<Self, ErrorReply> {
        let content_type = request.headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("");
        let media_type = content_type.split(';').next().unwrap_or("").trim();
        if !media_type.eq_ignore_ascii_case("application/x-www-form-urlencoded") {
            return Err(ErrorReply::invalid_request(
                "the request body must be application/x-www-form-urlencoded",
            ));
        }
        Self::from_body(&request.body)
    }

    fn from_body(body: &[u8]) -> Result<Self, ErrorReply> {
        let mut map = HashMap::new();
        for (name, value) in url::form_urlencoded::parse(body) {
            if value.is_empty() {
                continue;
            }
            match map.entry(name.into_owned()) {
                Entry::Occupied(e) => {
                    return Err(ErrorReply::invalid_request(format!(
                        "parameter {} is repeated",
                        printable(e.key())
                    )));
                }
                Entry::Vacant(e) => {
                    e.insert(value.into_owned());
                }
            }
        }
        Ok(Self(map))
    }

    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    pub(crate) fn require(&self, name: &str) -> Result<&str, ErrorReply> {
        self.get(name).ok_or_else(|| ErrorReply::invalid_request(format!("missing parameter {name}")))
    }
}

/// A parameter name safe to quote in an error: short, printable ASCII.
pub(crate) fn printable(s: &str) -> String {
    s.chars().take(40).map(|c| if c.is_ascii_graphic() && c != '"' && c != '\\' { c } else { '?' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(raw: &str) -> String {
        format!("Basic {}", STANDARD.encode(raw))
    }

    fn pair(id: &str, secret: &str) -> (String, String) {
        (id.to_owned(), secret.to_owned())
    }

    #[test]
    fn basic_header_parsing() {
        assert_eq!(
            parse_basic(&basic("reference-client:reference-secret")),
            [pair("reference-client", "reference-secret")]
        );
        // RFC 6749 section 2.3.1: both parts form-urlencoded; the literal reading comes second.
        assert_eq!(
            parse_basic(&basic("my%3Aid:s%2Bcr%C3%A9t+x%25")),
            [pair("my:id", "s+crét x%"), pair("my%3Aid", "s%2Bcr%C3%A9t+x%25")]
        );
        // Spec Part 5.4, literally: an id with a colon can end at any of them.
        assert_eq!(parse_basic(&basic("id:a:b")), [pair("id", "a:b"), pair("id:a", "b")]);
        assert_eq!(parse_basic(&basic("id:%zz")), [pair("id", "%zz")], "not form-encoded");
        assert_eq!(parse_basic(&format!("bAsIc  {}", STANDARD_NO_PAD.encode("i:s"))), [pair("i", "s")]);
        assert_eq!(parse_basic(&basic("id:")), [pair("id", "")]);
        for bad in [
            basic("no-colon"),
            basic(":secret"),
            "Bearer abc".to_owned(),
            "Basic".to_owned(),
            "Basic !!!".to_owned(),
            format!("Basic {}", STANDARD.encode([0xff, b':', b'x'])),
        ] {
            assert_eq!(parse_basic(&bad), [], "{bad}");
        }
    }

    #[test]
    fn form_rules() {
        let form = Form::from_body(b"grant_type=client_credentials&scope=&client_id=a%20b").unwrap();
        assert_eq!(form.get("grant_type"), Some("client_credentials"));
        assert_eq!(form.get("scope"), None);
        assert_eq!(form.get("client_id"), Some("a b"));
        assert_eq!(form.require("code").unwrap_err().code, "invalid_request");
        let err = Form::from_body(b"scope=a&scope=b").unwrap_err();
        assert_eq!((err.status, err.code), (400, "invalid_request"));
    }
}
