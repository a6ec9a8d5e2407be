//! ID-token verification of a flow: signature, issuer, audience, times, and the nonce of the
//! sign-in.

use super::super::pkce::constant_time_eq;
use super::super::{Claims, IdToken, TokenVerifier};
use super::AuthorizationCodeFlow;
use crate::Error;
use crate::error::VerifyError;

impl AuthorizationCodeFlow {
    /// Verifies an ID token: RS256 signature with a key from the JWKS (selected by `kid`),
    /// `iss` equal to the issuer, `aud` containing the client id, `exp` in the future and
    /// `nbf` and `iat` not, each within the [`id_token_leeway`](Self::id_token_leeway). The
    /// JWKS requests go through the flow's HTTP client.
    ///
    /// # Errors
    ///
    /// [`Error::TokenVerification`] naming the first failed check.
    pub async fn verify_id_token(&self, id_token: &IdToken) -> Result<Claims, Error> {
        let verifier = self.id_verifier()?;
        Ok(verifier.verify(id_token.secret()).await?)
    }

    pub(super) async fn verify_id_token_nonce(
        &self,
        id_token: &IdToken,
        nonce: Option<&str>,
    ) -> Result<Claims, Error> {
        let claims = self.verify_id_token(id_token).await?;
        if let Some(expected) = nonce {
            let got = claims.extra.get("nonce").and_then(serde_json::Value::as_str);
            if !got.is_some_and(|got| constant_time_eq(got.as_bytes(), expected.as_bytes())) {
                return Err(VerifyError::InvalidNonce.into());
            }
        }
        Ok(claims)
    }

    fn id_verifier(&self) -> Result<&TokenVerifier, Error> {
        let c = &self.config;
        if let Some(verifier) = c.id_verifier.get() {
            return Ok(verifier);
        }
        let verifier = TokenVerifier::new(c.jwks_url.as_str(), c.issuer.clone(), c.client_id.clone())?
            .with_sender(c.sender.clone())
            .leeway(c.id_token_leeway);
        Ok(c.id_verifier.get_or_init(|| verifier))
    }
}
