//! The authorization server: `POST /oauth2/token` and `GET /.well-known/jwks.json`.
//!
//! Grants are dispatched by `grant_type` in [`AuthServer::token`]; each grant
//! is one method returning `Result<ResponseTemplate, ErrorReply>`. The
//! `authorization_code` and `refresh_token` grants are answered with
//! `unsupported_grant_type` until they are implemented here.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use serde_json::json;
use wiremock::{Request, Respond, ResponseTemplate};

use super::jwt::{Signer, TokenClaims};
use super::{ErrorReply, Shared};

pub(crate) const TOKEN_PATH: &str = "/oauth2/token";
pub(crate) const JWKS_PATH: &str = "/.well-known/jwks.json";
/// `realm` of the `WWW-Authenticate: Basic` challenge.
const REALM: &str = "business-records";

/// A client registered with the authorization server.
#[derive(Debug, Clone)]
pub(crate) struct RegisteredClient {
    pub(crate) secret: String,
    pub(crate) scopes: Vec<String>,
}

/// The authorization server's responder.
#[derive(Debug)]
pub(crate) struct AuthServer {
    pub(crate) signer: Arc<Signer>,
    pub(crate) clients: HashMap<String, RegisteredClient>,
    pub(crate) issuer: String,
    pub(crate) audience: String,
    pub(crate) token_lifetime_secs: i64,
    pub(crate) jwks_json: String,
    pub(crate) shared: Arc<Shared>,
}

impl Respond for AuthServer {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let method = request.method.as_str();
        match request.url.path() {
            TOKEN_PATH if method == "POST" => {
                self.shared.token_requests.fetch_add(1, Ordering::Relaxed);
                self.token(request).unwrap_or_else(ErrorReply::into_response)
            }
            JWKS_PATH if method == "GET" => {
                self.shared.jwks_requests.fetch_add(1, Ordering::Relaxed);
                ResponseTemplate::new(200)
                    .insert_header("cache-control", "public, max-age=300")
                    .set_body_raw(self.jwks_json.clone().into_bytes(), "application/json")
            }
            TOKEN_PATH => ErrorReply::method_not_allowed("POST").into_response(),
            JWKS_PATH => ErrorReply::method_not_allowed("GET").into_response(),
            _ => ErrorReply::not_found().into_response(),
        }
    }
}

/// How the client authenticated at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClientAuthMethod {
    Basic,
    Body,
}

impl AuthServer {
    /// `POST /oauth2/token`: parse the form, then dispatch on `grant_type`.
    fn token(&self, request: &Request) -> Result<ResponseTemplate, ErrorReply> {
        let form = Form::parse(request)?;
        let grant_type = form.require("grant_type")?;
        match grant_type {
            "client_credentials" => self.client_credentials(request, &form),
            // "authorization_code" and "refresh_token" are dispatched here once implemented.
            _ => Err(ErrorReply::new(400, "unsupported_grant_type", "the grant type is not supported")),
        }
    }

    /// RFC 6749 section 4.4.
    fn client_credentials(&self, request: &Request, form: &Form) -> Result<ResponseTemplate, ErrorReply> {
        let (client_id, client) = self.authenticate_client(request, form)?;
        let scopes = granted_scopes(form.get("scope"), &client.scopes)?;
        let token = self
            .signer
            .issue(&TokenClaims {
                subject: client_id,
                client_id,
                scopes: &scopes,
                lifetime_secs: self.token_lifetime_secs,
                audience: &self.audience,
                issuer: &self.issuer,
                kid: self.signer.kid(),
                generation: self.shared.token_generation.load(Ordering::SeqCst),
            })
            .map_err(|_| ErrorReply::new(500, "server_error", "token signing failed"))?;
        let body = json!({
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": self.token_lifetime_secs,
            "scope": scopes.join(" "),
        });
        Ok(ResponseTemplate::new(200)
            .insert_header("cache-control", "no-store")
            .insert_header("pragma", "no-cache")
            .set_body_json(body))
    }

    /// Client authentication by HTTP Basic or by `client_id` and
    /// `client_secret` in the body (RFC 6749 section 2.3.1), never both.
    fn authenticate_client<'a>(
        &'a self,
        request: &Request,
        form: &'a Form,
    ) -> Result<(&'a str, &'a RegisteredClient), ErrorReply> {
        let header = request.headers.get("authorization");
        let body_id = form.get("client_id");
        let body_secret = form.get("client_secret");
        let (id, secret, method) = match header {
            Some(value) => {
                if body_secret.is_some() {
                    return Err(ErrorReply::invalid_request(
                        "client authenticated with more than one method",
                    ));
                }
                let (id, secret) =
                    value.to_str().ok().and_then(parse_basic).ok_or_else(|| {
                        invalid_client(ClientAuthMethod::Basic, "malformed basic credentials")
                    })?;
                if body_id.is_some_and(|b| b != id) {
                    return Err(ErrorReply::invalid_request(
                        "client_id does not match the authenticated client",
                    ));
                }
                (id, secret, ClientAuthMethod::Basic)
            }
            None => match (body_id, body_secret) {
                (Some(id), Some(secret)) => (id.to_owned(), secret.to_owned(), ClientAuthMethod::Body),
                (None, None) => {
                    return Err(invalid_client(ClientAuthMethod::Basic, "client authentication required"));
                }
                (Some(_), None) => {
                    return Err(ErrorReply::invalid_request("missing parameter client_secret"));
                }
                (None, Some(_)) => {
                    return Err(ErrorReply::invalid_request("missing parameter client_id"));
                }
            },
        };
        match self.clients.get_key_value(id.as_str()) {
            Some((id, client)) if constant_time_eq(client.secret.as_bytes(), secret.as_bytes()) => {
                Ok((id.as_str(), client))
            }
            _ => Err(invalid_client(method, "client authentication failed")),
        }
    }
}

/// 401 `invalid_client`, with a Basic challenge when the client tried Basic
/// (RFC 6749 section 5.2) or sent no credentials at all.
fn invalid_client(method: ClientAuthMethod, description: &str) -> ErrorReply {
    let reply = ErrorReply::new(401, "invalid_client", description);
    match method {
        ClientAuthMethod::Basic => reply.with_header("www-authenticate", format!("Basic realm=\"{REALM}\"")),
        ClientAuthMethod::Body => reply,
    }
}

/// The scopes to grant: the requested ones (space-separated, duplicates
/// dropped) if all are allowed, or every allowed scope if none were requested.
fn granted_scopes(requested: Option<&str>, allowed: &[String]) -> Result<Vec<String>, ErrorReply> {
    let mut granted: Vec<String> = Vec::new();
    for scope in requested.unwrap_or("").split(' ').filter(|s| !s.is_empty()) {
        if !allowed.iter().any(|a| a == scope) {
            return Err(ErrorReply::new(
                400,
                "invalid_scope",
                "the requested scope is not allowed for this client",
            ));
        }
        if !granted.iter().any(|g| g == scope) {
            granted.push(scope.to_owned());
        }
    }
    if granted.is_empty() {
        granted = allowed.to_vec();
    }
    Ok(granted)
}

/// Parses `Authorization: Basic base64(urlencode(id) ":" urlencode(secret))`.
pub(crate) fn parse_basic(value: &str) -> Option<(String, String)> {
    let (scheme, credentials) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let credentials = credentials.trim();
    let decoded = STANDARD.decode(credentials).or_else(|_| STANDARD_NO_PAD.decode(credentials)).ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (id, secret) = decoded.split_once(':')?;
    let id = form_urldecode(id)?;
    if id.is_empty() {
        return None;
    }
    Some((id, form_urldecode(secret)?))
}

/// Decodes `application/x-www-form-urlencoded` text (`+` is a space);
/// `None` for a broken escape or invalid UTF-8.
fn form_urldecode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes.get(i + 1..i + 3)?;
                let hex = std::str::from_utf8(hex).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
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
fn printable(s: &str) -> String {
    s.chars().take(40).map(|c| if c.is_ascii_graphic() && c != '"' && c != '\\' { c } else { '?' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(raw: &str) -> String {
        format!("Basic {}", STANDARD.encode(raw))
    }

    #[test]
    fn basic_header_parsing() {
        assert_eq!(
            parse_basic(&basic("reference-client:reference-secret")),
            Some(("reference-client".into(), "reference-secret".into()))
        );
        // Both parts are form-urlencoded (RFC 6749 section 2.3.1).
        assert_eq!(
            parse_basic(&basic("my%3Aid:s%2Bcr%C3%A9t+x%25")),
            Some(("my:id".into(), "s+crét x%".into()))
        );
        // The secret may contain colons; the id ends at the first one.
        assert_eq!(parse_basic(&basic("id:a:b")), Some(("id".into(), "a:b".into())));
        assert_eq!(
            parse_basic(&format!("bAsIc  {}", STANDARD_NO_PAD.encode("i:s"))),
            Some(("i".into(), "s".into()))
        );
        assert_eq!(parse_basic(&basic("id:")), Some(("id".into(), String::new())));
        for bad in [
            basic("no-colon"),
            basic(":secret"),
            basic("id:%zz"),
            basic("id:%4"),
            "Bearer abc".to_owned(),
            "Basic".to_owned(),
            "Basic !!!".to_owned(),
            format!("Basic {}", STANDARD.encode([0xff, b':', b'x'])),
        ] {
            assert_eq!(parse_basic(&bad), None, "{bad}");
        }
    }

    #[test]
    fn scope_rules() {
        let allowed = vec!["api/read".to_owned(), "api/write".to_owned()];
        assert_eq!(granted_scopes(None, &allowed).unwrap(), allowed);
        assert_eq!(granted_scopes(Some("  "), &allowed).unwrap(), allowed);
        assert_eq!(granted_scopes(Some("api/read api/read"), &allowed).unwrap(), vec!["api/read"]);
        let err = granted_scopes(Some("api/read admin"), &allowed).unwrap_err();
        assert_eq!((err.status, err.code), (400, "invalid_scope"));
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

    #[test]
    fn secrets_compare_exactly() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}
