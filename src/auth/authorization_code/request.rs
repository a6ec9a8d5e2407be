//! One sign-in round trip: the request the user's browser opens, with the flow's own
//! parameters and, for [`authorize_url_with`](AuthorizationCodeFlow::authorize_url_with), the
//! caller's extra ones; and the parameters of the callback that comes back.

use std::fmt;

use oauth2::PkceCodeChallenge;
use serde::{Deserialize, Serialize};
use url::Url;

use super::super::pkce::{VERIFIER_BYTES, random_value};
use super::super::{PkceVerifier, non_empty};
use super::AuthorizationCodeFlow;
use crate::error::CallbackError;
use crate::{Error, urls};

/// One sign-in in progress: the URL to open, and the PKCE verifier, `state` and `nonce` that
/// [`AuthorizationCodeFlow::exchange`] checks the callback against. Made by
/// [`AuthorizationCodeFlow::authorize_url`].
///
/// `Debug` shows only the authorization endpoint; the verifier never prints.
#[derive(Clone, Serialize, Deserialize)]
pub struct AuthorizationRequest {
    pub(super) url: String,
    pub(super) state: String,
    pub(super) verifier: PkceVerifier,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) nonce: Option<String>,
}

impl AuthorizationRequest {
    /// The URL to open in the user's browser.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The `state` sent in the URL (at least 128 random bits).
    pub fn state(&self) -> &str {
        &self.state
    }

    /// The `nonce` sent in the URL, when `openid` was requested.
    pub fn nonce(&self) -> Option<&str> {
        self.nonce.as_deref()
    }

    /// The PKCE code verifier, sent only with the code in the token request.
    pub fn pkce_verifier(&self) -> &PkceVerifier {
        &self.verifier
    }
}

impl fmt::Debug for AuthorizationRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let endpoint = self.url.split('?').next().unwrap_or_default();
        f.debug_struct("AuthorizationRequest").field("endpoint", &endpoint).finish_non_exhaustive()
    }
}

/// Parameters the flow sets itself, which extra parameters may not replace: those of spec
/// Part 4.2, the OpenID `nonce`, and the request objects that would carry replacements
/// (RFC 9101).
const OWNED: &str = "response_type client_id redirect_uri scope state nonce code_challenge \
                     code_challenge_method code_verifier request request_uri";

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
    pub fn authorize_url_with(
        &self,
        params: impl IntoIterator<Item = (impl Into<String>, impl Into<String>)>,
    ) -> Result<AuthorizationRequest, Error> {
        self.sign_in_redirect()?;
        let params: Vec<(String, String)> = params.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        for (name, _) in &params {
            non_empty("params", "parameter name", name.trim())?;
            if OWNED.split_whitespace().any(|owned| owned.eq_ignore_ascii_case(name.trim())) {
                let message = format!("`{name}` is set by the flow itself; expected other parameters");
                return Err(Error::invalid("params", message));
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
        let mut url = self.config.authorize_url.clone();
        url.query_pairs_mut()
            .extend_pairs([("response_type", "code"), ("client_id", self.client_id()), ("state", &state)])
            .extend_pairs([("code_challenge", challenge.as_str()), ("code_challenge_method", "S256")])
            .extend_pairs([("redirect_uri", self.redirect_uri()), ("scope", &self.config.scopes.join(" "))])
            .extend_pairs(nonce.iter().map(|nonce| ("nonce", nonce)))
            .extend_pairs(extra);
        // Without a redirect URI (a flow that only refreshes) there is nothing to open.
        let url = self.sign_in_redirect().map_or_else(|_| String::new(), |_| url.into());
        AuthorizationRequest { url, state, verifier: PkceVerifier::new(verifier.into_secret()), nonce }
    }
}

/// The parameters of a callback this flow reads.
#[derive(Debug, Default)]
pub(in crate::auth) struct CallbackParams {
    pub(in crate::auth) code: Option<String>,
    pub(in crate::auth) state: Option<String>,
    pub(in crate::auth) iss: Option<String>,
    pub(in crate::auth) error: Option<String>,
    pub(in crate::auth) error_description: Option<String>,
}

impl CallbackParams {
    /// Reads the callback in any form a web framework or a listener hands over: an absolute
    /// URL (`https://app.example.com/cb?..`, `com.example.app:/cb?..`), an origin-form path with
    /// its query (`/callback?code=..`), or the query alone, with or without its `?`. Values are
    /// decoded leniently: characters a browser leaves unencoded (`:` and `/` in `iss`, `?` in a
    /// value) are taken as they are, and a fragment is ignored.
    pub(in crate::auth) fn parse(callback: &str) -> Result<Self, CallbackError> {
        let callback = callback.trim();
        let query = match callback.split_once('?') {
            // What comes before the first `?` is a URL or a path, unless it holds a `name=`.
            Some((before, query)) if !before.contains('=') => query,
            None if callback.starts_with('/') || Url::parse(callback).is_ok() => "",
            _ if callback.contains('=') && !callback.contains(char::is_whitespace) => callback,
            _ => return Err(CallbackError::Malformed),
        };
        let query = query.split_once('#').map_or(query, |(query, _)| query);
        let mut params = CallbackParams::default();
        for (name, value) in url::form_urlencoded::parse(query.as_bytes()) {
            let (slot, name) = match name.as_ref() {
                "code" => (&mut params.code, "code"),
                "state" => (&mut params.state, "state"),
                "iss" => (&mut params.iss, "iss"),
                "error" => (&mut params.error, "error"),
                "error_description" => (&mut params.error_description, "error_description"),
                _ => continue,
            };
            if slot.replace(value.into_owned()).is_some() {
                return Err(CallbackError::RepeatedParameter(name));
            }
        }
        Ok(params)
    }
}

/// A redirect URI: absolute, no fragment, plain http only on loopback, and a private-use scheme
/// only as a reverse domain name, which has a period (RFC 8252 sections 7.1 and 8.3).
pub(super) fn parse_redirect_uri(raw: &str) -> Result<String, Error> {
    let refuse = |message: String| Err(Error::invalid("redirect_uri", message));
    let url = urls::parse_absolute("redirect_uri", raw)?;
    urls::refuse_user_information("redirect_uri", &url)?;
    match url.scheme() {
        _ if url.fragment().is_some() => refuse("expected a URL without a fragment".into()),
        "http" if !urls::is_loopback(&url) => {
            refuse("expected https, a loopback http URL or an app's own scheme".into())
        }
        scheme if !scheme.contains('.') && !matches!(scheme, "https" | "http") => refuse(format!(
            "expected a private-use scheme that is a reverse domain name with a period, such as \
             com.example.app (RFC 8252 section 7.1), got {scheme:?}"
        )),
        // As given, not as `url` prints it: the authorization server compares the strings.
        _ => Ok(raw.trim().to_owned()),
    }
}
