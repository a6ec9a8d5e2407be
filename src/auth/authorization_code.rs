//! User sign-in: the authorization-code flow with PKCE (API Parts 4.2, 5.2 and 5.3;
//! RFC 6749 section 4.1, RFC 7636, RFC 9207 and OpenID Connect Core section 3.1).

mod id_token;
mod pending;
mod request;
mod revoke;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use url::Url;

use self::id_token::check_same_user;
pub use self::request::AuthorizationRequest;
pub(super) use self::request::CallbackParams;
use self::request::parse_redirect_uri;
use super::discovery::{AuthServerMetadata, required};
use super::oauth::{ClientAuth, Refreshed, request_tokens};
use super::pkce::constant_time_eq;
use super::seal::Sealer;
use super::{TokenSet, TokenVerifier, check_client, non_empty};
use crate::error::{AuthorizationError, CallbackError, Endpoint, ErrorCode, Origin};
use crate::text::shown_url;
use crate::wire::HttpSender;
use crate::{Error, urls};

/// Clock-skew allowance of ID-token checks unless set otherwise.
const DEFAULT_ID_TOKEN_LEEWAY: Duration = Duration::from_secs(60);
/// How long a sealed pending sign-in can be opened unless set otherwise: 10 minutes.
const DEFAULT_PENDING_MAX_AGE: Duration = Duration::from_secs(600);

/// The authorization-code flow with PKCE, for desktop, mobile and web apps whose users sign
/// in (API Part 5.3). The client is public: no client secret is involved.
///
/// ```no_run
/// # async fn run() -> Result<(), business_records::Error> {
/// use business_records::auth::{AuthorizationCodeFlow, LoopbackRedirect};
///
/// let redirect = LoopbackRedirect::bind().await?;
/// let flow = AuthorizationCodeFlow::new("https://auth.example.com", "my-app", redirect.redirect_uri())?
///     .scopes(["openid", "profile", "email", "api/read"]);
/// let request = flow.authorize_url();
/// println!("open {}", request.url());
/// let callback = redirect.wait_for_callback_of(&request).await?;
/// let tokens = flow.exchange(request, &callback).await?;
/// println!("signed in as {:?}", tokens.id_token_claims().and_then(|c| c.sub.as_deref()));
/// # Ok(()) }
/// ```
///
/// Cheap to clone.
#[derive(Clone)]
#[must_use]
pub struct AuthorizationCodeFlow {
    config: Arc<FlowConfig>,
}

#[derive(Clone)]
struct FlowConfig {
    /// Sent in the form of every request: the client is public.
    client_id: String,
    authorize_url: Url,
    token_url: Url,
    /// None for a flow that only refreshes ([`for_refresh`](AuthorizationCodeFlow::for_refresh)).
    redirect_uri: Option<String>,
    issuer: String,
    scopes: Vec<String>,
    /// Audiences besides the client id an ID token may list.
    trusted_audiences: Vec<String>,
    /// A callback without `iss` is refused (RFC 9207).
    require_iss: bool,
    /// Sends every request of the flow: the crate's shared default, or a client's.
    sender: HttpSender,
    /// The first invalid setting, reported before any request.
    invalid: Option<Error>,
    /// Checks ID tokens' signatures, `iss`, `aud` (the client id) and times.
    id_verifier: TokenVerifier,
    /// Seals pending sign-ins; `None` until [`AuthorizationCodeFlow::sealing_secret`].
    sealer: Option<Arc<Sealer>>,
    pending_max_age: Duration,
    /// Where sign-out revokes tokens (RFC 7009); `None` when the server offers none.
    revocation_url: Option<Url>,
}

impl fmt::Debug for AuthorizationCodeFlow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.config;
        f.debug_struct("AuthorizationCodeFlow")
            .field("issuer", &c.issuer)
            .field("client_id", &self.client_id())
            .field("redirect_uri", &shown_url(self.redirect_uri()))
            .field("scopes", &c.scopes)
            .field("authorize_url", &c.authorize_url.as_str())
            .field("token_url", &c.token_url.as_str())
            .finish_non_exhaustive()
    }
}

impl AuthorizationCodeFlow {
    /// The flow against the authorization server at `auth_url` with the API's endpoints:
    /// `{auth_url}/oauth2/authorize`, `{auth_url}/oauth2/token` and
    /// `{auth_url}/.well-known/jwks.json`; `auth_url` is also the issuer the callback's `iss`
    /// and the ID token's `iss` must name.
    ///
    /// `redirect_uri` is where the user returns: a loopback URL from [`LoopbackRedirect`]
    /// (RFC 8252), an `https` URL, or an app's private-use scheme, a reverse domain name
    /// (`com.example.app:/callback`, RFC 8252 section 7.1).
    ///
    /// A callback without `iss` is accepted unless
    /// [`require_iss_parameter`](Self::require_iss_parameter) says otherwise; a flow made with
    /// [`from_metadata`](Self::from_metadata) requires it when the server advertises it.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a plain-http `auth_url` off loopback or one with user
    /// information, an empty client id, or a `redirect_uri` that is not an absolute URL, carries
    /// a fragment, is plain http off loopback, or has a private-use scheme without a period.
    ///
    /// [`LoopbackRedirect`]: super::LoopbackRedirect
    pub fn new(
        auth_url: impl AsRef<str>,
        client_id: impl Into<String>,
        redirect_uri: impl AsRef<str>,
    ) -> Result<Self, Error> {
        let redirect_uri = parse_redirect_uri(redirect_uri.as_ref())?;
        let metadata = AuthServerMetadata::of_api(auth_url.as_ref())?;
        Self::with_metadata(&metadata, client_id.into(), Some(redirect_uri))
    }

    /// The flow of a sign-in saved earlier, to refresh its tokens only: no redirect URI (a
    /// desktop app's loopback port of the first run is gone), so
    /// [`authorize_url`](Self::authorize_url) has no URL to open and
    /// [`authorize_url_with`](Self::authorize_url_with) and [`exchange`](Self::exchange)
    /// refuse with [`Error::InvalidArgument`] naming `redirect_uri`. The endpoints are those of
    /// [`new`](Self::new).
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), business_records::Error> {
    /// use business_records::auth::{AuthorizationCodeFlow, FileTokenStore, TokenStore};
    /// use business_records::{Auth, Client};
    ///
    /// let store = FileTokenStore::new("tokens.json");
    /// if let Some(tokens) = store.load().await.map_err(business_records::Error::TokenStore)? {
    ///     let flow = AuthorizationCodeFlow::for_refresh("https://auth.example.com", "my-app")?
    ///         .scopes(["openid", "api/read"]);
    ///     let client = Client::builder()
    ///         .base_url("https://api.example.com")
    ///         .auth(Auth::user(flow, tokens).store(store))
    ///         .build()?;
    ///     # let _ = client;
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new) for `auth_url` and `client_id`.
    pub fn for_refresh(auth_url: impl AsRef<str>, client_id: impl Into<String>) -> Result<Self, Error> {
        Self::with_metadata(&AuthServerMetadata::of_api(auth_url.as_ref())?, client_id.into(), None)
    }

    /// The flow with the endpoints and issuer of a discovery document (see
    /// [`AuthServerMetadata::discover`]). When the document advertises
    /// `authorization_response_iss_parameter_supported` (RFC 9207), a callback without `iss` is
    /// refused.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new); [`Error::InvalidArgument`] naming the member when an endpoint of
    /// the document fails the URL check (plain http off loopback, user information, a query; see
    /// [`AuthServerMetadata`]), the revocation endpoint included, and [`Error::Decode`] when it
    /// names no authorization, token or JWKS endpoint.
    pub fn from_metadata(
        metadata: &AuthServerMetadata,
        client_id: impl Into<String>,
        redirect_uri: impl AsRef<str>,
    ) -> Result<Self, Error> {
        metadata.check_endpoints()?;
        let redirect_uri = parse_redirect_uri(redirect_uri.as_ref())?;
        Self::with_metadata(metadata, client_id.into(), Some(redirect_uri))
    }

    /// The flow with the endpoints and issuer of `metadata`, its endpoints checked.
    fn with_metadata(
        metadata: &AuthServerMetadata,
        client_id: String,
        redirect_uri: Option<String>,
    ) -> Result<Self, Error> {
        let authorize_url = required(&metadata.authorization_endpoint, "authorization_endpoint")?;
        let token_url = required(&metadata.token_endpoint, "token_endpoint")?;
        let jwks = required(&metadata.jwks_uri, "jwks_uri")?;
        check_client(&client_id, None)?;
        let id_verifier = TokenVerifier::new(jwks.as_str(), metadata.issuer.as_str(), client_id.as_str())?
            .leeway(DEFAULT_ID_TOKEN_LEEWAY);
        Ok(AuthorizationCodeFlow {
            config: Arc::new(FlowConfig {
                client_id,
                authorize_url,
                token_url,
                redirect_uri,
                issuer: metadata.issuer.clone(),
                scopes: vec!["openid".to_owned()],
                trusted_audiences: Vec::new(),
                require_iss: metadata.authorization_response_iss_parameter_supported,
                sender: HttpSender::shared_default()?,
                invalid: None,
                id_verifier,
                sealer: None,
                pending_max_age: DEFAULT_PENDING_MAX_AGE,
                revocation_url: metadata.revocation_endpoint.clone(),
            }),
        })
    }

    /// The flow with `change` made to its settings with `value`, or, for an invalid setting,
    /// the error kept and reported before any request.
    fn set<T>(mut self, value: Result<T, Error>, change: impl FnOnce(&mut FlowConfig, T)) -> Self {
        let config = Arc::make_mut(&mut self.config);
        match value {
            Ok(value) => change(config, value),
            Err(error) => {
                config.invalid.get_or_insert(error);
            }
        }
        self
    }

    /// The scopes to request (space-free tokens such as `openid`, `profile`, `email`,
    /// `api/read`). Default: `openid`. With `openid`, an ID token is required and verified.
    ///
    /// An invalid scope is reported by [`exchange`](Self::exchange) and by
    /// [`ClientBuilder::build`](crate::ClientBuilder::build).
    pub fn scopes(self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let scopes: Vec<String> = scopes.into_iter().map(Into::into).collect();
        let checked = scopes.iter().try_for_each(|scope| urls::check_scope(scope));
        self.set(checked.map(|()| scopes), |c, scopes| c.scopes = scopes)
    }

    /// The issuer the callback's `iss` and the ID token's `iss` must equal, when it is not
    /// `auth_url` as given (for example with a trailing slash).
    pub fn issuer(self, issuer: impl Into<String>) -> Self {
        self.set(Ok(issuer.into()), |c, issuer| {
            c.id_verifier = c.id_verifier.clone().with_issuer(&issuer);
            c.issuer = issuer;
        })
    }

    /// Clock-skew allowance of the ID-token checks of `exp`, `nbf` and `iat`, so a clock a
    /// little apart from the authorization server's does not fail a sign-in or a refresh.
    /// Default: 60 seconds; at most a day (a longer one counts as a day).
    pub fn id_token_leeway(self, leeway: Duration) -> Self {
        self.set(Ok(leeway), |c, leeway| c.id_verifier = c.id_verifier.clone().leeway(leeway))
    }

    /// Audiences besides the client id that an ID token may list in `aud`. An ID token listing
    /// any other audience is refused, and one listing several must name the client in `azp`
    /// (OpenID Connect Core section 3.1.3.7). Default: none, so an ID token's audience is the
    /// client id alone.
    ///
    /// An empty audience is reported by [`exchange`](Self::exchange) and by
    /// [`ClientBuilder::build`](crate::ClientBuilder::build).
    ///
    /// ```
    /// use business_records::auth::AuthorizationCodeFlow;
    /// let flow = AuthorizationCodeFlow::new("https://auth.example.com", "my-app", "http://127.0.0.1:8400/callback")?
    ///     .trusted_audiences(["my-app-backend"]);
    /// # let _ = flow; Ok::<(), business_records::Error>(())
    /// ```
    pub fn trusted_audiences(self, audiences: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let audiences: Vec<String> = audiences.into_iter().map(Into::into).collect();
        let checked = audiences
            .iter()
            .try_for_each(|audience| non_empty("trusted_audiences", "audience", audience.trim()));
        self.set(checked.map(|()| audiences), |c, audiences| c.trusted_audiences = audiences)
    }

    /// Minimum pause between two JWKS fetches made because an ID token named a key id the
    /// cached keys lack: the first ID token signed with a rotated key makes the flow fetch the
    /// keys at once, and further unknown key ids make it fetch again at most once per
    /// `interval` (see [`TokenVerifier::refetch_interval`]). Default: 5 seconds.
    pub fn jwks_refetch_interval(self, interval: Duration) -> Self {
        self.set(Ok(interval), |c, interval| c.id_verifier = c.id_verifier.clone().refetch_interval(interval))
    }

    /// Whether a callback must carry `iss` (RFC 9207): with `true`, one without it is refused
    /// with [`CallbackError::MissingIssuer`] before any token request, so a response from
    /// another authorization server cannot pass for this one's (a mix-up attack). Default:
    /// `false` for [`new`](Self::new), and for [`from_metadata`](Self::from_metadata) the
    /// document's `authorization_response_iss_parameter_supported`. An `iss` that is present
    /// must name the issuer either way.
    ///
    /// ```
    /// use business_records::auth::AuthorizationCodeFlow;
    /// // This server sends `iss` with every callback.
    /// let flow = AuthorizationCodeFlow::new("https://auth.example.com", "my-app", "http://127.0.0.1:8400/callback")?
    ///     .require_iss_parameter(true);
    /// # let _ = flow; Ok::<(), business_records::Error>(())
    /// ```
    pub fn require_iss_parameter(self, required: bool) -> Self {
        self.set(Ok(required), |c, required| c.require_iss = required)
    }

    /// The same flow with every request sent through `sender` (a client's), the ID tokens'
    /// keys still shared with this flow's clones.
    pub(crate) fn with_sender(self, sender: HttpSender) -> Self {
        self.set(Ok(sender), |c, sender| {
            c.id_verifier = c.id_verifier.clone().with_sender(sender.clone());
            c.sender = sender;
        })
    }

    /// The client id.
    pub fn client_id(&self) -> &str {
        &self.config.client_id
    }

    /// The redirect URI sent in the authorization and token requests; empty for a flow made
    /// with [`for_refresh`](Self::for_refresh).
    pub fn redirect_uri(&self) -> &str {
        self.config.redirect_uri.as_deref().unwrap_or_default()
    }

    /// The redirect URI of a sign-in; a flow without one refuses to sign in.
    fn sign_in_redirect(&self) -> Result<&str, Error> {
        let refresh_only = "a flow made with `for_refresh` only refreshes; use `new` to sign in";
        self.config.redirect_uri.as_deref().ok_or_else(|| Error::invalid("redirect_uri", refresh_only))
    }

    /// The issuer tokens and callbacks must name.
    pub fn issuer_url(&self) -> &str {
        &self.config.issuer
    }

    pub(crate) fn check(&self) -> Result<(), Error> {
        self.config.invalid.clone().map_or(Ok(()), Err)
    }

    fn wants_id_token(&self) -> bool {
        self.config.scopes.iter().any(|s| s == "openid")
    }

    /// Sends the token request `form` as this public client: the set its answer holds,
    /// `scopes` when it names none.
    async fn request_tokens(&self, form: &[(&str, &str)], scopes: &[String]) -> Result<Refreshed, Error> {
        let client = ClientAuth::Public(self.config.client_id.clone());
        request_tokens(&self.config.sender, &self.config.token_url, &client, form, scopes).await
    }

    /// Starts a sign-in: a fresh PKCE verifier (S256), `state` and, with `openid`, `nonce`,
    /// and the URL to open in the user's browser with every parameter of API Part 4.2.
    ///
    /// Keep the returned request until the callback arrives and pass it to
    /// [`exchange`](Self::exchange); a web app seals it into a cookie with
    /// [`seal_pending`](Self::seal_pending). [`authorize_url_with`](Self::authorize_url_with)
    /// adds parameters such as `login_hint`.
    pub fn authorize_url(&self) -> AuthorizationRequest {
        self.authorization_request(&[])
    }

    /// Finishes a sign-in: checks the callback, then exchanges its code for tokens (with the
    /// PKCE verifier, without any client secret) and verifies the ID token.
    ///
    /// `callback` is the URL the user was sent back to (as
    /// [`LoopbackRedirect::wait_for_callback_of`](super::LoopbackRedirect::wait_for_callback_of)
    /// returns it), or just its query string.
    ///
    /// # Errors
    ///
    /// Before any token request: [`Error::Callback`] for a foreign `iss`, or a missing one when
    /// [required](Self::require_iss_parameter) (RFC 9207), a missing or mismatched `state`
    /// (compared in constant time) or a missing code;
    /// [`Error::Authorization`] when the server sent `error=` (`access_denied` when the user
    /// declined). Then [`Error::Api`] when the token endpoint refuses the code, and
    /// [`Error::TokenVerification`] when the ID token fails verification.
    pub async fn exchange(&self, request: AuthorizationRequest, callback: &str) -> Result<TokenSet, Error> {
        self.check()?;
        let redirect_uri = self.sign_in_redirect()?;
        let params = CallbackParams::parse(callback)?;
        let code = self.check_callback(&params, &request)?;
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("code_verifier", request.verifier.secret()),
            ("redirect_uri", redirect_uri),
        ];
        let mut tokens = self.request_tokens(&form, &self.config.scopes).await?.tokens;
        if let Some(id_token) = &tokens.id_token {
            tokens.id_claims = Some(self.verify_id(id_token, request.nonce.as_deref()).await?);
        } else if self.wants_id_token() {
            let endpoint = Endpoint::of(&self.config.token_url, Origin::AuthorizationServer);
            let missing = "the token response has no id_token although openid was requested";
            return Err(Error::decode(endpoint, missing));
        }
        tracing::debug!(scopes = ?tokens.scopes, "signed in with the authorization code flow");
        Ok(tokens)
    }

    /// The checks of [`exchange`](Self::exchange) that need no request; returns the code.
    fn check_callback<'p>(
        &self,
        params: &'p CallbackParams,
        request: &AuthorizationRequest,
    ) -> Result<&'p str, Error> {
        // RFC 9207: a response naming another issuer is refused whatever else it holds.
        match &params.iss {
            Some(iss) if *iss != self.config.issuer => return Err(CallbackError::IssuerMismatch.into()),
            None if self.config.require_iss => return Err(CallbackError::MissingIssuer.into()),
            _ => {}
        }
        let state = params.state.as_deref().ok_or(CallbackError::MissingState)?;
        if !constant_time_eq(state.as_bytes(), request.state.as_bytes()) {
            return Err(CallbackError::StateMismatch.into());
        }
        if let Some(code) = &params.error {
            let description = params.error_description.as_deref().map(crate::text::server_text);
            let endpoint = &self.config.authorize_url;
            let refused = AuthorizationError::new(ErrorCode::parse(code), description, endpoint);
            return Err(Error::Authorization(refused));
        }
        Ok(params.code.as_deref().ok_or(CallbackError::MissingCode)?)
    }

    /// Renews `tokens` with their refresh token (API Part 4.2, `grant_type=refresh_token`)
    /// and returns the new set. A response without a refresh token keeps the old one, and one
    /// without an ID token keeps the old ID token.
    ///
    /// A new ID token must name the user of the previous one: its `iss`, `sub`, `aud` and
    /// `azp`, as sent, are compared with the previous ID token's before any token of the
    /// response is used (OpenID Connect Core section 12.2). When they differ, the response is
    /// not this user's: none of its tokens are returned, and the error asks for a new sign-in.
    ///
    /// Then the new ID token is verified, after the new access and refresh tokens are in the
    /// returned set. One that fails verification is dropped (the set keeps the previous ID token
    /// and its claims), logged as a `tracing` warning, and reported by
    /// [`TokenSet::id_token_error`]: the refresh itself succeeds, because the server has
    /// already retired the refresh token it was given.
    ///
    /// A [`Client`](crate::Client) built with [`Auth::user`](crate::Auth::user) does this by
    /// itself; call it when you manage tokens yourself, and save the returned set before
    /// anything else. Let it run to its end: the request timeout bounds it, while a future
    /// dropped after the request was sent (a `timeout` around the call) loses the new set, and
    /// with it a refresh token the server may have rotated. Run it in a task of its own
    /// (`tokio::spawn`) when the caller may give up.
    ///
    /// # Errors
    ///
    /// [`Error::ReauthenticationRequired`] when `tokens` hold no refresh token, or when the new
    /// ID token names another issuer, user, audience or authorized party; [`Error::Api`] with
    /// `invalid_grant` (see [`Error::needs_reauthentication`]) when the server refuses the
    /// refresh token.
    pub async fn refresh(&self, tokens: &TokenSet) -> Result<TokenSet, Error> {
        let Refreshed { mut tokens, new_id_token, .. } = self.refresh_unverified(tokens).await?;
        if let Some((id_token, previous)) = new_id_token {
            let outcome = self.verify_id_token(&id_token).await;
            tokens.settle_id_token(outcome, &previous);
        }
        Ok(tokens)
    }

    /// The refresh-token grant, without verifying a new ID token's signature: the caller keeps
    /// the new set first, then verifies. A new ID token for another user is an error here,
    /// before anything of the response is used.
    pub(crate) async fn refresh_unverified(&self, tokens: &TokenSet) -> Result<Refreshed, Error> {
        self.check()?;
        let spent = "no refresh token: none was issued, or a refresh that lost its answer spent it";
        let refresh_token = tokens.refresh_token.as_ref().ok_or(Error::ReauthenticationRequired(spent))?;
        let form = [("grant_type", "refresh_token"), ("refresh_token", refresh_token.secret())];
        let Refreshed { tokens: mut next, expires_in, .. } =
            self.request_tokens(&form, &tokens.scopes).await?;
        if let Some(id_token) = &next.id_token {
            check_same_user(tokens, id_token)?;
        }
        next.refresh_token = next.refresh_token.or_else(|| tokens.refresh_token.clone());
        let new_id_token = next.id_token.clone().map(|id_token| (id_token, tokens.clone()));
        if new_id_token.is_none() {
            next.id_token = tokens.id_token.clone();
            next.id_claims = tokens.id_claims.clone();
        }
        Ok(Refreshed { tokens: next, expires_in, new_id_token })
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod web_tests;
