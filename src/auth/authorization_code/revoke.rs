//! Sign-out: the revocation endpoint, and token revocation (RFC 7009) there as a public client
//! (`client_id` in the body, no secret).

use url::Url;

use super::super::TokenSet;
use super::super::oauth::{ClientAuth, post_form};
use super::AuthorizationCodeFlow;
use crate::error::ErrorCode;
use crate::limits::BodyLimit;
use crate::{Error, urls};

impl AuthorizationCodeFlow {
    /// The revocation endpoint (RFC 7009) that [`revoke`](Self::revoke) and
    /// [`Client::sign_out`](crate::Client::sign_out) use. Default: `{auth_url}/oauth2/revoke`
    /// for [`new`](Self::new), the discovery document's `revocation_endpoint` for
    /// [`from_metadata`](Self::from_metadata).
    ///
    /// An invalid URL (not https, off loopback) is reported as [`Error::InvalidArgument`]
    /// naming `revocation_url`.
    pub fn revocation_url(self, url: impl AsRef<str>) -> Self {
        let url = urls::parse_service_url("revocation_url", url.as_ref());
        self.set(url, |c, url| c.revocation_url = Some(url))
    }

    /// Where sign-out revokes tokens, if anywhere.
    pub fn revocation_endpoint(&self) -> Option<&Url> {
        self.config.revocation_url.as_ref()
    }

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
        let none = "sign-out needs the authorization server's revocation endpoint (RFC 7009): the \
                    discovery document names none; set one with `revocation_url`";
        let url =
            self.config.revocation_url.as_ref().ok_or_else(|| Error::invalid("revocation_url", none))?;
        if let Some(refresh_token) = &tokens.refresh_token {
            self.revoke_one(url, refresh_token.secret(), "refresh_token").await?;
        }
        self.revoke_one(url, tokens.access_token.secret(), "access_token").await
    }

    async fn revoke_one(&self, url: &Url, token: &str, hint: &str) -> Result<(), Error> {
        // The token is unusable all the same (RFC 7009 section 2.2, and servers that answer so for
        // a token they no longer know or for self-contained access tokens).
        let gone = |code: &ErrorCode| match code.as_str() {
            "invalid_token" | "invalid_grant" => true,
            "unsupported_token_type" => hint == "access_token",
            _ => false,
        };
        let (client, form) =
            (ClientAuth::Public(self.client_id().to_owned()), [("token", token), ("token_type_hint", hint)]);
        match post_form(&self.config.sender, url, &client, &form, BodyLimit::TOKEN).await {
            Err(Error::Api(refused)) if refused.code().is_some_and(gone) => {
                tracing::debug!(hint, code = ?refused.code(), "token revocation: nothing left to revoke");
                Ok(())
            }
            outcome => outcome.map(drop),
        }
    }
}
