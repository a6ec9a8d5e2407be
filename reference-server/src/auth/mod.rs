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
//! answered 405, other paths 404.

mod authorize;
mod form;
mod grants;
mod id_token;
mod metadata;
mod revoke;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::json;
use url::Url;
use wiremock::{MockServer, Request, ResponseTemplate};

pub(crate) use self::form::Form;
use self::form::parse_basic;
pub(crate) use self::grants::Sessions;
use super::faults::{Fault, FaultState, MARKER_HEADER, MARKER_HOLD, REPLAY_HEADER, Target, replacement_body};
use super::jwt::{SigningKeys, TokenClaims};
use super::routes::{Refuse, Routes};
use super::secrets::constant_time_eq;
use super::{ErrorReply, Shared};

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

/// The authorization server's responder.
#[derive(Debug)]
pub(crate) struct AuthServer {
    pub(crate) keys: Arc<SigningKeys>,
    pub(crate) clients: HashMap<String, RegisteredClient>,
    pub(crate) settings: AuthSettings,
    pub(crate) shared: Arc<Shared>,
    /// The value of [`REPLAY_HEADER`] on requests the fault proxy held and sends again.
    pub(crate) replay_secret: String,
}

impl AuthServer {
    /// Serves the authorization server's routes on `server`.
    pub(crate) async fn mount(self, server: &MockServer) {
        let mut routes = Routes::new(server, Arc::new(self));
        routes
            .route("GET", AUTHORIZE_PATH, |auth: &Self, request| {
                auth.shared.authorize_requests.fetch_add(1, Ordering::Relaxed);
                auth.authorize(request)
            })
            .await;
        routes.route("POST", TOKEN_PATH, Self::token_endpoint).await;
        routes.route("GET", JWKS_PATH, |auth: &Self, _| auth.jwks()).await;
        for path in [DISCOVERY_PATH, OAUTH_METADATA_PATH] {
            routes.route("GET", path, |auth: &Self, _| auth.discovery()).await;
        }
        routes
            .route("POST", INTROSPECTION_PATH, |auth: &Self, request| {
                auth.introspect(request).unwrap_or_else(ErrorReply::into_response)
            })
            .await;
        routes
            .route("POST", REVOCATION_PATH, |auth: &Self, request| {
                auth.revoke(request).unwrap_or_else(ErrorReply::into_response)
            })
            .await;
        routes.finish().await;
    }
}

impl Refuse for AuthServer {
    fn refuse(&self, _: &Request, reply: ErrorReply) -> ResponseTemplate {
        reply.into_response()
    }
}

/// How the client authenticated at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClientAuthMethod {
    Basic,
    Body,
}

impl AuthServer {
    /// `POST /oauth2/token`: count the request, draw its fault, and carry the fault out
    /// before the grant is processed; then [`token`](Self::token). A request the proxy held for
    /// a slow answer comes back marked as a replay: it was counted and drew its fault already.
    fn token_endpoint(&self, request: &Request) -> ResponseTemplate {
        let form = Form::parse(request);
        let replayed = request
            .headers
            .get(REPLAY_HEADER)
            .is_some_and(|v| constant_time_eq(v.as_bytes(), self.replay_secret.as_bytes()));
        if !replayed {
            self.shared.token_requests.fetch_add(1, Ordering::Relaxed);
            if let Some(grant_type) = form.as_ref().ok().and_then(|f| f.get("grant_type")) {
                self.shared.count_grant(grant_type);
            }
            if let Some(response) = self.token_fault() {
                return response;
            }
        }
        form.and_then(|form| self.token(request, &form)).unwrap_or_else(ErrorReply::into_response)
    }

    /// Draws the token request's fault; the answer that replaces the real one, if any.
    fn token_fault(&self) -> Option<ResponseTemplate> {
        let mut faults = self.shared.faults.lock().unwrap_or_else(|e| e.into_inner());
        let fault = faults.draw(Target::Token)?;
        let response = match &fault {
            Fault::Slow(delay) => {
                let marker = format!("{MARKER_HOLD}{}", delay.as_millis());
                Some(ResponseTemplate::new(200).insert_header(MARKER_HEADER, marker.as_str()))
            }
            Fault::ExpireTokens => {
                self.shared.token_generation.fetch_add(1, Ordering::SeqCst);
                None
            }
            other => match replaced(&mut faults, Target::Token, other) {
                Some(response) => Some(response),
                // A page fault: nothing to do at the token endpoint.
                None => return None,
            },
        };
        faults.applied(Target::Token, &fault);
        response
    }

    /// `GET /.well-known/jwks.json`, with its faults.
    fn jwks(&self) -> ResponseTemplate {
        self.shared.jwks_requests.fetch_add(1, Ordering::Relaxed);
        let mut faults = self.shared.faults.lock().unwrap_or_else(|e| e.into_inner());
        let response = ResponseTemplate::new(200)
            .insert_header("cache-control", "public, max-age=300")
            .set_body_raw(self.published_jwks().into_bytes(), "application/json");
        let Some(fault) = faults.draw(Target::Jwks) else {
            return response;
        };
        let response = match &fault {
            Fault::Slow(delay) => response.set_delay(*delay),
            other => match replaced(&mut faults, Target::Jwks, other) {
                Some(replacement) => replacement,
                None => return response,
            },
        };
        faults.applied(Target::Jwks, &fault);
        response
    }

    /// Dispatches a token request on `grant_type`.
    fn token(&self, request: &Request, form: &Form) -> Result<ResponseTemplate, ErrorReply> {
        let grant_type = form.require("grant_type")?;
        match grant_type {
            "client_credentials" => self.client_credentials(request, form),
            "authorization_code" => self.authorization_code(request, form),
            "refresh_token" => self.refresh_token(request, form),
            _ => Err(ErrorReply::new(400, "unsupported_grant_type", "the grant type is not supported")),
        }
    }

    /// RFC 6749 section 4.4.
    fn client_credentials(&self, request: &Request, form: &Form) -> Result<ResponseTemplate, ErrorReply> {
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

/// The answer that replaces the real one for `fault` at `target`: an error status, a dropped
/// connection, or a 200 with another body.
fn replaced(faults: &mut FaultState, target: Target, fault: &Fault) -> Option<ResponseTemplate> {
    if let Some((_, response)) = faults.stand_in(target, fault) {
        return Some(response);
    }
    let body = replacement_body(fault)?;
    Some(ResponseTemplate::new(200).set_body_raw(body, "application/json"))
}

/// A successful token response: JSON, never cached.
fn token_response(body: serde_json::Value) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("cache-control", "no-store")
        .insert_header("pragma", "no-cache")
        .set_body_json(body)
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
