//! `GET /.well-known/openid-configuration` (OpenID Connect Discovery, RFC 8414) and
//! `POST /oauth2/introspect` (RFC 7662).

use serde_json::{Value, json};
use wiremock::Request;

use super::super::ErrorReply;
use super::super::reply::Answer;
use super::{
    AUTHORIZE_PATH, AuthServer, ClientAuthMethod, Form, INTROSPECTION_PATH, JWKS_PATH, REVOCATION_PATH,
    TOKEN_PATH, token_response,
};

impl AuthServer {
    /// The discovery document.
    pub(super) fn discovery(&self) -> Answer {
        let issuer = &self.settings.issuer;
        let mut scopes: Vec<&str> =
            self.clients.values().flat_map(|c| c.scopes.iter().map(String::as_str)).collect();
        scopes.sort_unstable();
        scopes.dedup();
        let body = json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{issuer}{AUTHORIZE_PATH}"),
            "token_endpoint": format!("{issuer}{TOKEN_PATH}"),
            "jwks_uri": format!("{issuer}{JWKS_PATH}"),
            "introspection_endpoint": format!("{issuer}{INTROSPECTION_PATH}"),
            "revocation_endpoint": format!("{issuer}{REVOCATION_PATH}"),
            "revocation_endpoint_auth_methods_supported": self.auth_methods(&["none"]),
            "scopes_supported": scopes,
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "client_credentials", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": self.auth_methods(&["none"]),
            "introspection_endpoint_auth_methods_supported": self.auth_methods(&[]),
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "authorization_response_iss_parameter_supported": true,
        });
        Answer::new(200).header("cache-control", "public, max-age=300").json(&body)
    }

    /// The client authentication methods accepted, then `more`.
    fn auth_methods(&self, more: &[&'static str]) -> Vec<&'static str> {
        let all = [
            (ClientAuthMethod::Basic, "client_secret_basic"),
            (ClientAuthMethod::Body, "client_secret_post"),
        ];
        let accepted =
            all.into_iter().filter(|(method, _)| self.client_auth.is_none_or(|only| only == *method));
        accepted.map(|(_, name)| name).chain(more.iter().copied()).collect()
    }

    /// Introspection for confidential clients: an access token the API would accept, or an
    /// active refresh token, is `active: true` with its details; anything else is
    /// `{"active": false}`.
    pub(super) fn introspect(&self, request: &Request) -> Result<Answer, ErrorReply> {
        let form = Form::parse(request)?;
        self.authenticate_client(request, &form)?;
        let token = form.require("token")?;
        let body = self
            .introspect_access_token(token)
            .or_else(|| self.introspect_refresh_token(token))
            .unwrap_or_else(|| json!({ "active": false }));
        Ok(token_response(body))
    }

    fn introspect_access_token(&self, token: &str) -> Option<Value> {
        let claims = self.keys.current().validator.validate(token).ok()?;
        if self.shared.is_revoked(&claims) {
            return None;
        }
        Some(json!({
            "active": true,
            "scope": claims.scope,
            "client_id": claims.client_id,
            "token_type": "Bearer",
            "exp": claims.exp,
            "iat": claims.iat,
            "sub": claims.sub,
            "aud": claims.aud,
            "iss": claims.iss,
            "jti": claims.jti,
        }))
    }

    fn introspect_refresh_token(&self, token: &str) -> Option<Value> {
        let sessions = self.shared.sessions();
        let (subject, client_id, scopes, expires_at) = sessions.active_refresh(token)?;
        Some(json!({
            "active": true,
            "scope": scopes.join(" "),
            "client_id": client_id,
            "sub": subject,
            "exp": expires_at,
            "iss": self.settings.issuer,
        }))
    }
}
