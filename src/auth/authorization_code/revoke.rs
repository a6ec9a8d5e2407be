//! Sign-out: token revocation (RFC 7009) at the authorization server, as a public client
//! (`client_id` in the body, no secret).

use http::header::{ACCEPT, CONTENT_TYPE, HeaderValue};

use super::super::TokenSet;
use super::AuthorizationCodeFlow;
use crate::Error;
use crate::auth::oauth::OAuthHttp;

/// Where the design puts the revocation endpoint, below `{auth_url}`.
pub(crate) const REVOCATION_PATH: &str = "oauth2/revoke";

impl AuthorizationCodeFlow {
    /// Revokes the user's tokens (RFC 7009): the refresh token first, which ends the grant,
    /// then the access token, each with its `token_type_hint`, at the
    /// [`revocation_endpoint`](Self::revocation_endpoint). A [`Client`](crate::Client) signs its
    /// user out with [`Client::sign_out`](crate::Client::sign_out), which also forgets the
    /// tokens and clears the store.
    ///
    /// A token the server no longer knows counts as revoked (RFC 7009 section 2.2, and the
    /// `invalid_token` or `invalid_grant` some servers answer instead), and so does an access
    /// token the server will not revoke on its own (`unsupported_token_type`, as servers with
    /// self-contained JWT access tokens answer; it expires by itself).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] naming `revocation_url` when the server offers no revocation
    /// endpoint (a discovery document without `revocation_endpoint`); [`Error::Api`] when the
    /// server refuses (a 404 from a server without revocation, `invalid_client`, ...);
    /// [`Error::Http`] when it cannot be reached.
    pub async fn revoke(&self, tokens: &TokenSet) -> Result<(), Error> {
        self.check()?;
        let url = self.config.web.revocation_url.as_ref().ok_or_else(|| {
            Error::invalid(
                "revocation_url",
                "sign-out needs the authorization server's revocation endpoint (RFC 7009): the \
                 discovery document names none; set one with `revocation_url`",
            )
        })?;
        if let Some(refresh_token) = &tokens.refresh_token {
            self.revoke_one(url, refresh_token.secret(), "refresh_token").await?;
        }
        self.revoke_one(url, tokens.access_token.secret(), "access_token").await
    }

    async fn revoke_one(&self, url: &url::Url, token: &str, hint: &str) -> Result<(), Error> {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("token", token)
            .append_pair("token_type_hint", hint)
            .append_pair("client_id", &self.config.client_id)
            .finish();
        let mut request = http::Request::new(body.into_bytes());
        *request.method_mut() = http::Method::POST;
        *request.uri_mut() =
            url.as_str().parse().map_err(|_| Error::invalid("revocation_url", "expected an absolute URL"))?;
        let headers = request.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/x-www-form-urlencoded"));
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        match OAuthHttp::token(&self.config.sender).send(request).await {
            Ok(_) => Ok(()),
            Err(Error::Api(refused)) if already_gone(refused.code().map(|c| c.as_str()), hint) => {
                tracing::debug!(hint, code = ?refused.code(), "token revocation: nothing left to revoke");
                Ok(())
            }
            Err(error) => Err(error),
        }
    }
}

/// Whether a refusal with `code` still leaves the token unusable.
fn already_gone(code: Option<&str>, hint: &str) -> bool {
    match code {
        Some("invalid_token" | "invalid_grant") => true,
        Some("unsupported_token_type") => hint == "access_token",
        _ => false,
    }
}
