//! The authorization request: the URL the user's browser opens, with the flow's own
//! parameters and, for [`authorize_url_with`](AuthorizationCodeFlow::authorize_url_with), the
//! caller's extra ones.

use oauth2::{CsrfToken, PkceCodeChallenge, Scope};

use super::super::PkceVerifier;
use super::super::pkce::{VERIFIER_BYTES, random_value};
use super::{AuthorizationCodeFlow, AuthorizationRequest};
use crate::Error;

/// Parameters the flow sets itself, which extra parameters may not replace: those of spec
/// Part 4.2, the OpenID `nonce`, and the request objects that would carry replacements
/// (RFC 9101).
const OWNED: &[&str] = &[
    "response_type",
    "client_id",
    "redirect_uri",
    "scope",
    "state",
    "nonce",
    "code_challenge",
    "code_challenge_method",
    "code_verifier",
    "request",
    "request_uri",
];

impl AuthorizationCodeFlow {
    /// [`authorize_url`](Self::authorize_url) with extra parameters of the authorization
    /// request, such as `prompt`, `login_hint`, `ui_locales`, `max_age` or `acr_values`
    /// (OpenID Connect Core section 3.1.2.1). A parameter the flow sets itself is refused.
    ///
    /// ```
    /// use business_records::auth::AuthorizationCodeFlow;
    /// let flow = AuthorizationCodeFlow::new("https://auth.example.com", "my-web-app", "https://app.example.com/callback")?;
    /// let request = flow.authorize_url_with([("prompt", "login"), ("login_hint", "alice@example.com")])?;
    /// assert!(request.url().contains("login_hint=alice%40example.com"));
    /// assert!(flow.authorize_url_with([("state", "mine")]).is_err());
    /// # Ok::<(), business_records::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] naming `params` for an empty name or one the flow owns
    /// (`response_type`, `client_id`, `redirect_uri`, `scope`, `state`, `nonce`,
    /// `code_challenge`, `code_challenge_method`, `code_verifier`, `request`, `request_uri`).
    pub fn authorize_url_with<I, K, V>(&self, params: I) -> Result<AuthorizationRequest, Error>
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        self.can_sign_in()?;
        let params: Vec<(String, String)> = params.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        for (name, _) in &params {
            if name.trim().is_empty() {
                return Err(Error::invalid("params", "expected non-empty parameter names"));
            }
            if OWNED.iter().any(|owned| owned.eq_ignore_ascii_case(name.trim())) {
                return Err(Error::invalid(
                    "params",
                    format!("`{name}` is set by the flow itself; expected other parameters"),
                ));
            }
        }
        Ok(self.authorization_request(&params))
    }

    /// A fresh PKCE verifier (S256), `state` and, with `openid`, `nonce`, and the URL with
    /// every parameter of API Part 4.2 and `extra`.
    pub(super) fn authorization_request(&self, extra: &[(String, String)]) -> AuthorizationRequest {
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256_len(VERIFIER_BYTES);
        let state = random_value();
        let nonce = self.wants_id_token().then(random_value);
        let mut request = (self.config.client)
            .authorize_url(|| CsrfToken::new(state.clone()))
            .add_scopes(self.config.scopes.iter().cloned().map(Scope::new))
            .set_pkce_challenge(challenge);
        if let Some(nonce) = &nonce {
            request = request.add_extra_param("nonce", nonce.clone());
        }
        for (name, value) in extra {
            request = request.add_extra_param(name.clone(), value.clone());
        }
        // Without a redirect URI (a flow that only refreshes) there is nothing to open.
        let url = self.can_sign_in().map_or_else(|_| String::new(), |()| request.url().0.into());
        AuthorizationRequest { url, state, verifier: PkceVerifier::new(verifier.into_secret()), nonce }
    }
}
