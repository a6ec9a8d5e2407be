//! The authorization server: authorize, token, JWKS, discovery and introspection.
//!
//! | Route | Where |
//! |---|---|
//! | `GET /oauth2/authorize` | [`authorize`] |
//! | `POST /oauth2/token` | [`AuthServer::token`], one method per grant ([`grants`] for the user grants) |
//! | `GET /.well-known/jwks.json` | here |
//! | `GET /.well-known/openid-configuration`, `POST /oauth2/introspect` | [`metadata`] |
//! | `POST /oauth2/revoke` | [`revoke`] |
//!
//! [`AuthServer::mount`] gives wiremock a mock per route; other methods of these paths are
//! answered 405, other paths 404. Faults, counts and the journal are the
//! [`pipeline`](super::pipeline)'s.

mod authorize;
mod grants;
mod id_token;
mod metadata;
mod revoke;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::json;
use url::Url;
use wiremock::{MockServer, Request};

pub(crate) use self::grants::Sessions;
use super::form::{Form, parse_basic};
use super::jwt::{SigningKeys, TokenClaims};
use super::reply::Answer;
use super::routes::{Paths, Routes};
use super::secrets::constant_time_eq;
use super::{Endpoint, ErrorReply, Shared};

pub(crate) const AUTHORIZE_PATH: &str = "/oauth2/authorize";
pub(crate) const TOKEN_PATH: &str = "/oauth2/token";
pub(crate) const JWKS_PATH: &str = "/.well-known/jwks.json";
pub(crate) const DISCOVERY_PATH: &str = "/.well-known/openid-configuration";
pub(crate) const OAUTH_METADATA_PATH: &str = "/.well-known/oauth-authorization-server";
pub(crate) const INTROSPECTION_PATH: &str = "/oauth2/introspect";
pub(crate) const REVOCATION_PATH: &str = "/oauth2/revoke";
/// `realm` of the `WWW-Authenticate: Basic` challenge.
const REALM: &str = "business-records";

/// A client registered with the authorization server.
#[derive(Debug, Clone)]
pub(crate) struct RegisteredClient {
    /// `None` for a public client (a native or browser app): it never authenticates.
    pub(crate) secret: Option<String>,
    pub(crate) scopes: Vec<String>,
    /// Redirect URIs, compared exactly (RFC 6749 section 3.1.2.3), except that the port of a
    /// loopback IP literal is ignored (RFC 8252 section 7.3).
    pub(crate) redirect_uris: Vec<String>,
    /// Accepts any `http://127.0.0.1:<port>/<path>` or `http://[::1]:<port>/<path>`.
    pub(crate) any_loopback_redirect: bool,
}

impl RegisteredClient {
    pub(crate) fn confidential(secret: String, scopes: Vec<String>) -> Self {
        RegisteredClient {
            secret: Some(secret),
            scopes,
            redirect_uris: Vec::new(),
            any_loopback_redirect: false,
        }
    }

    pub(crate) fn public(
        scopes: Vec<String>,
        redirect_uris: Vec<String>,
        any_loopback_redirect: bool,
    ) -> Self {
        RegisteredClient { secret: None, scopes, redirect_uris, any_loopback_redirect }
    }

    /// Whether the client may be sent back to `uri`.
    pub(crate) fn allows_redirect(&self, uri: &str) -> bool {
        let Ok(url) = Url::parse(uri) else {
            return false;
        };
        if url.fragment().is_some() {
            return false;
        }
        let loopback_literal = url.scheme() == "http"
            && match url.host() {
                Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
                Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
                _ => false,
            };
        if loopback_literal && self.any_loopback_redirect {
            return true;
        }
        self.redirect_uris.iter().any(|registered| {
            if registered == uri {
                return true;
            }
            let Ok(mut registered) = Url::parse(registered) else {
                return false;
            };
            // RFC 8252 section 7.3: any port on a loopback redirect.
            loopback_literal && registered.set_port(url.port()).is_ok() && registered == url
        })
    }
}

/// Settings of the authorization server that do not change while it runs.
#[derive(Debug, Clone)]
pub(crate) struct AuthSettings {
    pub(crate) issuer: String,
    pub(crate) audience: String,
    pub(crate) token_lifetime_secs: i64,
    pub(crate) id_token_lifetime_secs: i64,
    pub(crate) refresh_token_lifetime_secs: i64,
    pub(crate) code_lifetime_secs: i64,
    pub(crate) rotate_refresh_tokens: bool,
    /// The user `/oauth2/authorize` signs in without asking.
    pub(crate) test_user: String,
    /// Every user `login_hint` can pick, the test user first.
    pub(crate) users: Vec<String>,
    /// Answer every authorization request with `access_denied`.
    pub(crate) deny_authorization: bool,
}

/// How a confidential client authenticates at the token endpoint (RFC 6749 section 2.3.1),
/// for [`ReferenceServerBuilder::client_authentication`](crate::ReferenceServerBuilder::client_authentication).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientAuthMethod {
    /// HTTP Basic: `Authorization: Basic base64(client_id:client_secret)` (`client_secret_basic`).
    Basic,
    /// `client_id` and `client_secret` in the form body (`client_secret_post`).
    Body,
}

/// The authorization server's responder.
#[derive(Debug)]
pub(crate) struct AuthServer {
    pub(crate) keys: Arc<SigningKeys>,
    pub(crate) clients: HashMap<String, RegisteredClient>,
    pub(crate) settings: AuthSettings,
    pub(crate) shared: Arc<Shared>,
    /// The one way confidential clients must authenticate, if only one is accepted.
    pub(crate) client_auth: Option<ClientAuthMethod>,
}

impl AuthServer {
    /// Serves the authorization server's routes on `server`.
    pub(crate) async fn mount(self, server: &MockServer) {
        let shared = Arc::clone(&self.shared);
        let mut routes = Routes::new(server, Arc::new(self), shared, false);
        let exact = |path: &str| Paths::Exact(path.to_owned());
        let authorize = |auth: &Self, request: &Request, _: Option<&_>| auth.authorize(request);
        routes.route("GET", exact(AUTHORIZE_PATH), Some(Endpoint::Authorize), authorize).await;
        let token = |auth: &Self, request: &Request, _: Option<&_>| {
            Form::parse(request).and_then(|form| auth.token(request, &form)).unwrap_or_else(Answer::from)
        };
        routes.route("POST", exact(TOKEN_PATH), Some(Endpoint::Token), token).await;
        routes.route("GET", exact(JWKS_PATH), Some(Endpoint::Jwks), |auth: &Self, _, _| auth.jwks()).await;
        for path in [DISCOVERY_PATH, OAUTH_METADATA_PATH] {
            routes
                .route("GET", exact(path), Some(Endpoint::Discovery), |auth: &Self, _, _| auth.discovery())
                .await;
        }
        let introspect = |auth: &Self, request: &Request, _: Option<&_>| {
            auth.introspect(request).unwrap_or_else(Answer::from)
        };
        routes.route("POST", exact(INTROSPECTION_PATH), Some(Endpoint::Introspect), introspect).await;
        let revoke =
            |auth: &Self, request: &Request, _: Option<&_>| auth.revoke(request).unwrap_or_else(Answer::from);
        routes.route("POST", exact(REVOCATION_PATH), Some(Endpoint::Revoke), revoke).await;
        routes.finish(|_| ErrorReply::not_found()).await;
    }

    /// `GET /.well-known/jwks.json`.
    fn jwks(&self) -> Answer {
        Answer::new(200)
            .header("cache-control", "public, max-age=300")
            .body(self.published_jwks(), "application/json")
    }

    /// Dispatches a token request on `grant_type`.
    fn token(&self, request: &Request, form: &Form) -> Result<Answer, ErrorReply> {
        let grant_type = form.require("grant_type")?;
        match grant_type {
            "client_credentials" => self.client_credentials(request, form),
            "authorization_code" => self.authorization_code(request, form),
            "refresh_token" => self.refresh_token(request, form),
            _ => Err(ErrorReply::new(400, "unsupported_grant_type", "the grant type is not supported")),
        }
    }

    /// RFC 6749 section 4.4.
    fn client_credentials(&self, request: &Request, form: &Form) -> Result<Answer, ErrorReply> {
        let (client_id, client) = self.authenticate_client(request, form)?;
        let scopes = granted_scopes(form.get("scope"), &client.scopes)?;
        let token = self.access_token(client_id, client_id, &scopes)?;
        Ok(token_response(json!({
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": self.settings.token_lifetime_secs,
            "scope": scopes.join(" "),
        })))
    }

    /// A signed access token for the API.
    fn access_token(&self, subject: &str, client_id: &str, scopes: &[String]) -> Result<String, ErrorReply> {
        let keys = self.keys.current();
        keys.signer
            .issue(&TokenClaims {
                subject,
                client_id,
                scopes,
                lifetime_secs: self.settings.token_lifetime_secs,
                audience: &self.settings.audience,
                issuer: &self.settings.issuer,
                kid: keys.signer.kid(),
                generation: self.shared.token_generation.load(Ordering::SeqCst),
                clock_skew_secs: 0,
            })
            .map_err(|_| ErrorReply::new(500, "server_error", "token signing failed"))
    }

    /// The client of a user grant: a public client names itself with `client_id` in the body
    /// and sends no secret; a confidential one authenticates as for client credentials.
    fn identify_client<'a>(
        &'a self,
        request: &Request,
        form: &'a Form,
    ) -> Result<(&'a str, &'a RegisteredClient), ErrorReply> {
        let public = form
            .get("client_id")
            .and_then(|id| self.clients.get_key_value(id))
            .filter(|(_, client)| client.secret.is_none());
        match public {
            Some((id, client)) => {
                if request.headers.contains_key("authorization") || form.get("client_secret").is_some() {
                    return Err(invalid_client(
                        ClientAuthMethod::Body,
                        "a public client does not authenticate with a secret",
                    ));
                }
                Ok((id.as_str(), client))
            }
            None => self.authenticate_client(request, form),
        }
    }

    /// Client authentication by HTTP Basic or by `client_id` and `client_secret` in the body
    /// (RFC 6749 section 2.3.1), never both. Basic credentials are accepted in both encodings
    /// in use (see [`parse_basic`]).
    fn authenticate_client<'a>(
        &'a self,
        request: &Request,
        form: &'a Form,
    ) -> Result<(&'a str, &'a RegisteredClient), ErrorReply> {
        let header = request.headers.get("authorization");
        let body_id = form.get("client_id");
        let body_secret = form.get("client_secret");
        let used = if header.is_some() { ClientAuthMethod::Basic } else { ClientAuthMethod::Body };
        let tried = header.is_some() || body_secret.is_some();
        if let Some(required) = self.client_auth.filter(|required| tried && *required != used) {
            let only = match required {
                ClientAuthMethod::Basic => "this server accepts client authentication by HTTP Basic only",
                ClientAuthMethod::Body => {
                    "this server accepts client authentication in the request body only"
                }
            };
            return Err(invalid_client(used, only));
        }
        let Some(value) = header else {
            let (id, secret) = match (body_id, body_secret) {
                (Some(id), Some(secret)) => (id, secret),
                (None, None) => {
                    return Err(invalid_client(ClientAuthMethod::Basic, "client authentication required"));
                }
                (Some(_), None) => {
                    return Err(ErrorReply::invalid_request("missing parameter client_secret"));
                }
                (None, Some(_)) => return Err(ErrorReply::invalid_request("missing parameter client_id")),
            };
            return self
                .registered(id, secret)
                .ok_or_else(|| invalid_client(ClientAuthMethod::Body, "client authentication failed"));
        };
        if body_secret.is_some() {
            return Err(ErrorReply::invalid_request("client authenticated with more than one method"));
        }
        let candidates = value.to_str().map(parse_basic).unwrap_or_default();
        if candidates.is_empty() {
            return Err(invalid_client(ClientAuthMethod::Basic, "malformed basic credentials"));
        }
        let (id, client) = candidates
            .iter()
            .find_map(|(id, secret)| self.registered(id, secret))
            .ok_or_else(|| invalid_client(ClientAuthMethod::Basic, "client authentication failed"))?;
        if body_id.is_some_and(|b| b != id) {
            return Err(ErrorReply::invalid_request("client_id does not match the authenticated client"));
        }
        Ok((id, client))
    }

    /// The confidential client `id`, when `secret` is its secret.
    fn registered(&self, id: &str, secret: &str) -> Option<(&str, &RegisteredClient)> {
        let (id, client) = self.clients.get_key_value(id)?;
        let matches =
            client.secret.as_deref().is_some_and(|s| constant_time_eq(s.as_bytes(), secret.as_bytes()));
        matches.then_some((id.as_str(), client))
    }
}

/// A successful token response: JSON, never cached.
fn token_response(body: serde_json::Value) -> Answer {
    Answer::new(200).header("cache-control", "no-store").header("pragma", "no-cache").json(&body)
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

#[cfg(test)]
pub(super) mod tests;
