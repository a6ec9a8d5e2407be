//! `POST /oauth2/revoke`: token revocation (RFC 7009).
//!
//! Public clients name themselves with `client_id` in the body; confidential ones authenticate
//! as at the token endpoint. A refresh token ends its grant: every refresh token renewed from
//! the same sign-in is refused afterwards. An access token is refused by the API from then on.
//! A token the server does not know, or that belongs to another client, is answered 200 and
//! nothing happens (section 2.2).

use wiremock::Request;

use super::super::ErrorReply;
use super::super::reply::Answer;
use super::{AuthServer, Form};

impl AuthServer {
    pub(super) fn revoke(&self, request: &Request) -> Result<Answer, ErrorReply> {
        let form = Form::parse(request)?;
        let (client_id, _) = self.identify_client(request, &form)?;
        let token = form.require("token")?;
        // `token_type_hint` may only save a look-up: both kinds are looked for.
        let revoked = self.shared.sessions().revoke_refresh_token(token, client_id)
            || self.revoke_access_token(token, client_id);
        tracing::debug!(revoked, "token revocation");
        Ok(Answer::new(200).header("cache-control", "no-store"))
    }

    /// Revokes `token` when it is an access token this server issued to `client_id`.
    fn revoke_access_token(&self, token: &str, client_id: &str) -> bool {
        let Ok(claims) = self.keys.current().validator.validate(token) else { return false };
        let Some(jti) = claims.jti else { return false };
        if claims.client_id.as_deref() != Some(client_id) {
            return false;
        }
        self.shared.revoke_access_token(jti);
        true
    }
}
