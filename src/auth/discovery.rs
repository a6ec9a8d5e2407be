//! OpenID discovery (`{auth_url}/.well-known/openid-configuration`) and token introspection
//! (RFC 7662, `POST {auth_url}/oauth2/introspect`).

use std::fmt;

use chrono::{DateTime, Utc};
use oauth2::TokenIntrospectionResponse;
use oauth2::basic::BasicTokenIntrospectionResponse;
use serde::Deserialize;
use serde_json::Value;
use url::Url;

use super::oauth::{ClientAuth, INTROSPECTION_NUMBERS, post_form, read_answer};
use super::{ClientSecret, check_client};
use crate::limits::BodyLimit;
use crate::text::shown_url;
use crate::wire::{HttpSender, decode};
use crate::{Error, urls};

/// An authorization server's metadata, from its OpenID discovery document.
///
/// Every endpoint passes the client's one URL check, whether the document was fetched by
/// [`discover`](Self::discover) or deserialised or changed by the application (a cached copy, a
/// configuration file): `https` (plain http only on loopback hosts), no user information, no
/// query or fragment. [`AuthorizationCodeFlow::from_metadata`](super::AuthorizationCodeFlow::from_metadata)
/// and [`TokenIntrospector::from_metadata`] refuse a document with an endpoint that fails it
/// before anything is sent, so neither a refresh token nor a client secret travels in clear
/// text. A fetched document's `issuer` must also equal the address it was fetched from, so a
/// tampered document cannot redirect tokens. Members the struct does not name are kept in
/// [`extra`](Self::extra). `Debug` shows the endpoints as error messages do, without user
/// information or query values, and only the names of the other members.
///
/// ```no_run
/// # async fn run() -> Result<(), business_records::Error> {
/// use business_records::auth::{AuthServerMetadata, AuthorizationCodeFlow};
///
/// let metadata = AuthServerMetadata::discover("https://auth.example.com").await?;
/// assert!(metadata.supports_pkce_s256());
/// let flow = AuthorizationCodeFlow::from_metadata(&metadata, "my-app", "http://127.0.0.1:8400/callback")?;
/// # let _ = flow; Ok(()) }
/// ```
#[derive(Clone, Default, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct AuthServerMetadata {
    /// The issuer identifier: the `iss` of its tokens and callbacks (empty when the document
    /// names none, which [`discover`](Self::discover) refuses).
    pub issuer: String,
    /// Where users are sent to sign in.
    pub authorization_endpoint: Option<Url>,
    /// Where tokens are issued.
    pub token_endpoint: Option<Url>,
    /// The public signing keys.
    pub jwks_uri: Option<Url>,
    /// Token introspection (RFC 7662).
    pub introspection_endpoint: Option<Url>,
    /// Token revocation (RFC 7009).
    pub revocation_endpoint: Option<Url>,
    /// The OpenID Connect userinfo endpoint.
    pub userinfo_endpoint: Option<Url>,
    /// Scopes the server knows.
    pub scopes_supported: Vec<String>,
    /// `response_type` values the server accepts.
    pub response_types_supported: Vec<String>,
    /// Grant types the server accepts.
    pub grant_types_supported: Vec<String>,
    /// PKCE methods the server accepts.
    pub code_challenge_methods_supported: Vec<String>,
    /// Client authentication methods at the token endpoint.
    pub token_endpoint_auth_methods_supported: Vec<String>,
    /// Signing algorithms of ID tokens.
    pub id_token_signing_alg_values_supported: Vec<String>,
    /// Whether callbacks carry `iss` (RFC 9207).
    pub authorization_response_iss_parameter_supported: bool,
    /// Every other member of the document.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, Value>,
}

impl AuthServerMetadata {
    /// Fetches `{auth_url}/.well-known/openid-configuration`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a plain-http `auth_url` off loopback; [`Error::Http`] or
    /// [`Error::Api`] when the document cannot be fetched; [`Error::Decode`] when it is not a
    /// discovery document, its `issuer` is not `auth_url`, or an endpoint is not https.
    pub async fn discover(auth_url: impl AsRef<str>) -> Result<Self, Error> {
        Self::fetch(&HttpSender::shared_default()?, auth_url.as_ref()).await
    }

    /// The document at `{auth_url}/.well-known/openid-configuration`, through `sender`.
    pub(crate) async fn fetch(sender: &HttpSender, auth_url: &str) -> Result<Self, Error> {
        let base = urls::parse_service_url("auth_url", auth_url)?;
        let url = urls::join_path(&base, ".well-known/openid-configuration");
        let endpoint = url.path().to_owned();
        let body = sender.get_document(url, BodyLimit::DISCOVERY).await?;
        let metadata: AuthServerMetadata = decode(&endpoint, &body)?;
        let invalid = |message: String| Error::decode(&endpoint, message);
        if metadata.issuer.trim_end_matches('/') != auth_url.trim().trim_end_matches('/') {
            return Err(invalid("the document's issuer is not the authorization server it came from".into()));
        }
        match metadata.check_endpoints() {
            Err(Error::InvalidArgument(refused)) => {
                Err(invalid(format!("{}: {}", refused.argument(), refused.message())))
            }
            checked => checked.map(|()| metadata),
        }
    }

    /// The API's own endpoints below `auth_url` (API Part 4.2), with `auth_url` as the issuer.
    pub(crate) fn of_api(auth_url: &str) -> Result<Self, Error> {
        let base = urls::parse_service_url("auth_url", auth_url)?;
        let endpoint = |path| Some(urls::join_path(&base, path));
        Ok(AuthServerMetadata {
            issuer: auth_url.trim().trim_end_matches('/').to_owned(),
            authorization_endpoint: endpoint("oauth2/authorize"),
            token_endpoint: endpoint("oauth2/token"),
            jwks_uri: endpoint(".well-known/jwks.json"),
            introspection_endpoint: endpoint("oauth2/introspect"),
            revocation_endpoint: endpoint("oauth2/revoke"),
            ..AuthServerMetadata::default()
        })
    }

    /// Every endpoint the document names through the one URL check
    /// ([`urls::check_service_url`]); the first refused is [`Error::InvalidArgument`] naming
    /// its member (`revocation_endpoint`, ...).
    pub(crate) fn check_endpoints(&self) -> Result<(), Error> {
        let mut named = self.endpoints().into_iter().filter_map(|(name, url)| Some((name, url.clone()?)));
        named.try_for_each(|(name, url)| urls::check_service_url(name, url).map(drop))
    }

    fn endpoints(&self) -> [(&'static str, &Option<Url>); 6] {
        [
            ("authorization_endpoint", &self.authorization_endpoint),
            ("token_endpoint", &self.token_endpoint),
            ("jwks_uri", &self.jwks_uri),
            ("introspection_endpoint", &self.introspection_endpoint),
            ("revocation_endpoint", &self.revocation_endpoint),
            ("userinfo_endpoint", &self.userinfo_endpoint),
        ]
    }

    /// Whether the server accepts PKCE with `S256`.
    pub fn supports_pkce_s256(&self) -> bool {
        self.code_challenge_methods_supported.iter().any(|m| m == "S256")
    }

    /// Whether the server accepts `grant_type` (an absent list means `authorization_code`
    /// and `implicit`, RFC 8414 section 2).
    pub fn supports_grant(&self, grant_type: &str) -> bool {
        let listed = &self.grant_types_supported;
        listed.iter().any(|g| g == grant_type)
            || (listed.is_empty() && matches!(grant_type, "authorization_code" | "implicit"))
    }
}

impl fmt::Debug for AuthServerMetadata {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("AuthServerMetadata");
        debug.field("issuer", &shown_url(&self.issuer));
        for (name, url) in self.endpoints() {
            debug.field(name, &url.as_ref().map(shown_url));
        }
        debug
            .field("scopes_supported", &self.scopes_supported)
            .field("response_types_supported", &self.response_types_supported)
            .field("grant_types_supported", &self.grant_types_supported)
            .field("code_challenge_methods_supported", &self.code_challenge_methods_supported)
            .field("token_endpoint_auth_methods_supported", &self.token_endpoint_auth_methods_supported)
            .field("id_token_signing_alg_values_supported", &self.id_token_signing_alg_values_supported)
            .field(
                "authorization_response_iss_parameter_supported",
                &self.authorization_response_iss_parameter_supported,
            )
            .field("extra", &self.extra.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// The endpoint `url` of the member `name` that the caller needs; [`Error::Decode`] when the
/// discovery document names none.
pub(crate) fn required(url: &Option<Url>, name: &str) -> Result<Url, Error> {
    url.clone().ok_or_else(|| {
        let message = format!("it names no usable {name} (an https URL, or http on a loopback host)");
        Error::decode("the discovery document", message)
    })
}

/// Asks the authorization server whether a token is active (RFC 7662): the alternative to local
/// validation that API Part 5.7 mentions. The caller authenticates as a confidential client,
/// with HTTP Basic by default.
///
/// ```no_run
/// # async fn run(token: &str) -> Result<(), business_records::Error> {
/// use business_records::auth::TokenIntrospector;
///
/// let introspector = TokenIntrospector::new("https://auth.example.com", "my-api", "api-secret")?;
/// let info = introspector.introspect(token).await?;
/// if info.active && info.scopes.iter().any(|s| s == "api/read") {
///     // serve the request
/// }
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct TokenIntrospector {
    endpoint: Url,
    /// The client id and secret (its `Debug` redacted), HTTP Basic or in the form.
    client: ClientAuth,
    /// The client id and secret, to send them in the form instead.
    credentials: (String, ClientSecret),
    sender: HttpSender,
}

impl TokenIntrospector {
    /// Introspection at `{auth_url}/oauth2/introspect`, authenticating as `client_id`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a plain-http `auth_url` off loopback or an empty client
    /// id or secret.
    pub fn new(
        auth_url: impl AsRef<str>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Result<Self, Error> {
        Self::from_metadata(&AuthServerMetadata::of_api(auth_url.as_ref())?, client_id, client_secret)
    }

    /// Introspection at the endpoint a discovery document names.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new); [`Error::InvalidArgument`] naming the member when an endpoint of
    /// the document fails the URL check (see [`AuthServerMetadata`]), and [`Error::Decode`] when
    /// it names no introspection endpoint.
    pub fn from_metadata(
        metadata: &AuthServerMetadata,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Result<Self, Error> {
        metadata.check_endpoints()?;
        let endpoint = required(&metadata.introspection_endpoint, "introspection_endpoint")?;
        let (client_id, client_secret) = (client_id.into(), ClientSecret::new(client_secret));
        check_client(&client_id, Some(&client_secret))?;
        let client = ClientAuth::basic(&client_id, &client_secret, false)?;
        let (credentials, sender) = ((client_id, client_secret), HttpSender::shared_default()?);
        Ok(TokenIntrospector { endpoint, client, credentials, sender })
    }

    /// Sends `client_id` and `client_secret` in the form body instead of an HTTP Basic header.
    /// Default: HTTP Basic.
    #[must_use]
    pub fn credentials_in_body(mut self) -> Self {
        self.client = ClientAuth::InBody(self.credentials.0.clone(), self.credentials.1.clone());
        self
    }

    /// The same introspector with its requests sent through `sender` (a client's).
    pub(crate) fn with_sender(mut self, sender: HttpSender) -> Self {
        self.sender = sender;
        self
    }

    /// Asks about `token` (an access or refresh token).
    ///
    /// # Errors
    ///
    /// [`Error::Api`] when the server refuses the request (`invalid_client`, ...);
    /// [`Error::Http`] or [`Error::Decode`] when there is no usable answer;
    /// An unknown or expired token is not an error: it is `active: false`.
    pub async fn introspect(&self, token: &str) -> Result<Introspection, Error> {
        let (endpoint, limit) = (&self.endpoint, BodyLimit::INTROSPECTION);
        let body = post_form(&self.sender, endpoint, &self.client, &[("token", token)], limit).await?;
        let response: BasicTokenIntrospectionResponse = read_answer(endpoint, body, INTROSPECTION_NUMBERS)?;
        let scopes = response.scopes().map(|scopes| scopes.iter().map(|scope| scope.to_string()).collect());
        Ok(Introspection {
            active: response.active(),
            scopes: scopes.unwrap_or_default(),
            client_id: response.client_id().map(|c| c.to_string()),
            username: response.username().map(str::to_owned),
            token_type: response.token_type().map(|t| t.as_ref().to_owned()),
            expires_at: response.exp(),
            issued_at: response.iat(),
            subject: response.sub().map(str::to_owned),
            audiences: response.aud().cloned().unwrap_or_default(),
            issuer: response.iss().map(str::to_owned),
            token_id: response.jti().map(str::to_owned),
        })
    }
}

/// What the authorization server said about a token (RFC 7662 section 2.2).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Introspection {
    /// Whether the token is currently active; every other field is absent when it is not.
    pub active: bool,
    /// Granted scopes.
    pub scopes: Vec<String>,
    /// The client the token was issued to.
    pub client_id: Option<String>,
    /// A human-readable name of the resource owner.
    pub username: Option<String>,
    /// The token's type (`Bearer`).
    pub token_type: Option<String>,
    /// Expiry.
    pub expires_at: Option<DateTime<Utc>>,
    /// Issue time.
    pub issued_at: Option<DateTime<Utc>>,
    /// Subject: the user, or the client for client-credentials tokens.
    pub subject: Option<String>,
    /// Audiences.
    pub audiences: Vec<String>,
    /// Issuer.
    pub issuer: Option<String>,
    /// The token's identifier (`jti`).
    pub token_id: Option<String>,
}
