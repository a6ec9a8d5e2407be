//! Authentication: how the client obtains the bearer tokens it sends (API Part 5).
//!
//! | Flow | Constructor | For |
//! |---|---|---|
//! | Client credentials | [`Auth::client_credentials`] | backends, server to server |
//! | User sign-in (authorization code + PKCE) | [`Auth::user`] | desktop, mobile and web apps |
//! | A token you manage | [`Auth::static_token`] | scripts, tests, tokens from elsewhere |
//!
//! Tokens are cached and refreshed ahead of expiry (at the earlier of five minutes or a tenth of
//! their lifetime before it); concurrent callers share one token request.
//!
//! # Refresh guarantees
//!
//! - **A refresh token is presented at most once, whatever fails.** A refresh runs in a task of
//!   its own with a deadline of its own (twice the request timeout, from one to five minutes):
//!   a caller that gives up gets its timeout, and the refresh waits on for the answer and saves
//!   the new set. It is sent again only after an error answer (429, 5xx,
//!   `temporarily_unavailable`: no token was issued) or a connection never made; never after a
//!   timeout or a connection lost mid-request, which may have rotated it.
//! - **A lost sign-in says so.** When a refresh's answer is lost (none before the deadline, a
//!   connection cut, an unreadable body) or its refresh token is refused, the set keeps no
//!   refresh token, in memory and in the store, and calls fail with
//!   [`needs_reauthentication`](crate::Error::needs_reauthentication), never a bare timeout,
//!   until the user signs in again or another process saves a newer set.
//! - **Saved before used.** The new set is saved through the [`TokenStore`] before any caller
//!   gets its access token. A save that fails is logged and retried in the background; the call
//!   succeeds.
//! - **One refresh at a time** per client, and per user across the processes of a shared
//!   store. Its failure goes to every caller waiting on it, and the next waits for a backoff
//!   (1 s doubling to 60 s, or the server's `Retry-After`), during which a token that still
//!   works is used.
//! - **The same user.** A refresh answer whose ID token names another `iss`, `sub`, `aud` or
//!   `azp` (OpenID Connect Core section 12.2) is refused and none of its tokens kept; a
//!   refreshed ID token that fails verification is dropped ([`TokenSet::id_token_error`]).
//!
//! Token requests are retried under the client's [`RetryPolicy`](crate::RetryPolicy): 429,
//! 502, 503 and 504 whatever the body, `server_error`, `temporarily_unavailable`, connection
//! failures and (except a refresh's, as above) timeouts, honouring `Retry-After`; never
//! `invalid_client`, `invalid_grant`, `invalid_scope` or `unauthorized_client`. The final error keeps the real status and
//! `Retry-After` ([`Error::status`](crate::Error::status),
//! [`Error::retry_after`](crate::Error::retry_after)). No request that carries a secret or a
//! token follows a redirect, whatever [`http_config`](crate::ClientBuilder::http_config) sets.
//!
//! # Signing a user in
//!
//! [`AuthorizationCodeFlow`] makes the URL to open ([`AuthorizationRequest`]) and exchanges the
//! code the user comes back with for a [`TokenSet`]; [`LoopbackRedirect`] receives that
//! callback on `127.0.0.1` for desktop apps (RFC 8252). [`Auth::user`] then gives the tokens
//! to a [`Client`](crate::Client), which renews them with the refresh token and saves rotated
//! ones through a [`TokenStore`] ([`FileTokenStore`], [`MemoryTokenStore`], or your own).
//!
//! ```no_run
//! # async fn run() -> Result<(), business_records::Error> {
//! use business_records::auth::{AuthorizationCodeFlow, FileTokenStore, LoopbackRedirect, TokenStore};
//! use business_records::{Auth, Client};
//!
//! let redirect = LoopbackRedirect::bind().await?;
//! let flow = AuthorizationCodeFlow::new("https://auth.example.com", "my-app", redirect.redirect_uri())?
//!     .scopes(["openid", "profile", "email", "api/read"]);
//! let request = flow.authorize_url();
//! println!("open {} in your browser", request.url());
//! let callback = redirect.wait_for_callback_of(&request).await?;
//! let tokens = flow.exchange(request, &callback).await?;
//!
//! let store = FileTokenStore::new("tokens.json");
//! store.save(&tokens).await.map_err(business_records::Error::TokenStore)?;
//! let client = Client::builder()
//!     .base_url("https://api.example.com")
//!     .auth(Auth::user(flow, tokens).store(store))
//!     .build()?;
//! # Ok(()) }
//! ```
//!
//! # Web apps
//!
//! One [`AuthorizationCodeFlow`] serves every user. At `/login`, [`AuthorizationCodeFlow::authorize_url_with`]
//! (a `login_hint`, a `prompt`) starts the sign-in and [`AuthorizationCodeFlow::seal_pending`]
//! seals it into a cookie (AES-256-GCM under the [`sealing_secret`](AuthorizationCodeFlow::sealing_secret),
//! bound to the flow, 10 minutes at most); at `/callback`, any instance with the secret calls
//! [`AuthorizationCodeFlow::exchange_sealed`] with the cookie and the request's URI as the
//! framework gives it. Each user's client is derived from the app's with
//! [`Client::with_auth`](crate::Client::with_auth), its tokens kept in a [`KeyedTokenStore`]
//! ([`MemoryKeyedStore`], [`DirectoryTokenStore`], `RedisTokenCache`), and
//! [`Client::sign_out`](crate::Client::sign_out) revokes them (RFC 7009) and clears the store.
//!
//! ```no_run
//! # async fn run(app: business_records::Client, cookie: &str, uri: &str) -> Result<(), business_records::Error> {
//! use business_records::auth::{AuthorizationCodeFlow, KeyedTokenStore, MemoryKeyedStore, TokenStore};
//! use business_records::Auth;
//!
//! let flow = AuthorizationCodeFlow::new("https://auth.example.com", "my-web-app", "https://app.example.com/callback")?
//!     .scopes(["openid", "api/read"])
//!     .sealing_secret("32 bytes or more from the app's secret manager");
//! let stores = MemoryKeyedStore::new();
//! // /login
//! let request = flow.authorize_url_with([("login_hint", "alice@example.com")])?;
//! let sealed = flow.seal_pending(&request)?;      // Set-Cookie, then redirect to request.url()
//! // /callback, on any instance
//! let tokens = flow.exchange_sealed(cookie, uri).await?;
//! let store = stores.for_user("session-id");
//! store.save(&tokens).await.map_err(business_records::Error::TokenStore)?;
//! let user = app.with_auth(Auth::user(flow.clone(), tokens).store(store))?;
//! // /logout
//! user.sign_out().await?;
//! # let _ = sealed; Ok(()) }
//! ```
//!
//! # Many processes
//!
//! Caching and single flight end at the process boundary. A user's store shared by several
//! processes locks the user's refresh across them through [`TokenStore::begin_refresh`] and
//! hands back a set another process saved (another refresh token or expiry), so that a rotating
//! refresh token is presented once; no process refreshes without the lock while its holder
//! lives:
//! [`FileTokenStore`] and [`DirectoryTokenStore`] with a lock file beside each user's file, and,
//! with the `redis` feature, `RedisTokenCache`'s user stores, which also share one
//! client-credentials token among every process with the same credentials
//! (`ClientCredentials::shared_cache`). A store of your own can do the same with
//! [`RefreshTurn`] and [`RefreshLock`].
//!
//! # The resource-server side
//!
//! [`TokenVerifier`] validates access tokens for a resource server;
//! [`AuthServerMetadata::discover`] reads the OpenID discovery document and
//! [`TokenIntrospector`] asks the authorization server about a token (RFC 7662).

mod authorization_code;
mod client_credentials;
mod discovery;
mod loopback;
mod oauth;
pub(crate) mod pkce;
#[cfg(feature = "redis")]
mod redis;
pub(crate) mod seal;
mod secret;
mod store;
pub(crate) mod token_manager;
pub(crate) mod verify;

use std::sync::Arc;

pub use crate::error::{TokenStoreError, VerifyError};
pub use authorization_code::{AuthorizationCodeFlow, AuthorizationRequest};
pub use client_credentials::ClientCredentials;
pub use discovery::{AuthServerMetadata, Introspection, TokenIntrospector};
pub use loopback::LoopbackRedirect;
#[cfg(feature = "redis")]
pub use redis::{RedisTokenCache, RedisUserStore};
pub use secret::{AccessToken, ClientSecret, IdToken, PkceVerifier, RefreshToken};
pub use store::{
    DirectoryTokenStore, FileTokenStore, KeyedTokenStore, MemoryKeyedStore, MemoryTokenStore, RefreshLock,
    RefreshTurn, TokenSet, TokenStore,
};
pub use verify::{Claims, TokenVerifier};

use self::token_manager::{Grant, TokenManager};
use crate::Error;
use crate::wire::HttpSender;

/// Refuses an empty `value`, given as `argument`: "expected a non-empty {what}".
pub(crate) fn non_empty(argument: &'static str, what: &str, value: &str) -> Result<(), Error> {
    let refused = || Error::invalid(argument, format!("expected a non-empty {what}"));
    if value.is_empty() { Err(refused()) } else { Ok(()) }
}

/// A client's id (more than spaces) and, for a confidential client, its secret: neither empty.
pub(crate) fn check_client(client_id: &str, client_secret: Option<&ClientSecret>) -> Result<(), Error> {
    non_empty("client_id", "client id", client_id.trim())?;
    client_secret.map_or(Ok(()), |secret| non_empty("client_secret", "client secret", secret.secret()))
}

/// How the client authenticates; passed to [`ClientBuilder::auth`](crate::ClientBuilder::auth).
///
/// ```
/// use business_records::{Auth, Client};
/// let client = Client::builder()
///     .base_url("https://api.example.com")
///     .auth(Auth::client_credentials("https://auth.example.com", "my-client-id", "my-secret")
///         .scopes(["api/read"]))
///     .build()?;
/// # Ok::<(), business_records::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Auth(AuthKind);

#[derive(Debug, Clone)]
enum AuthKind {
    ClientCredentials(ClientCredentials),
    User(Box<UserAuth>),
    Static(TokenSet),
}

impl Auth {
    /// The client credentials grant (API Part 5.4) against the authorization server at
    /// `auth_url`; the token endpoint is `{auth_url}/oauth2/token`.
    ///
    /// The credentials go in an HTTP Basic header unless
    /// [`credentials_in_body`](ClientCredentials::credentials_in_body) is set.
    pub fn client_credentials(
        auth_url: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> ClientCredentials {
        ClientCredentials::new(auth_url.into(), client_id.into(), ClientSecret::new(client_secret))
    }

    /// A signed-in user (API Part 5.3): `tokens` from
    /// [`AuthorizationCodeFlow::exchange`] (or a [`TokenStore`]), renewed through `flow` with
    /// the refresh-token grant. See [`UserAuth`].
    ///
    /// ```no_run
    /// # async fn run(flow: business_records::auth::AuthorizationCodeFlow,
    /// #              tokens: business_records::auth::TokenSet) -> Result<(), business_records::Error> {
    /// use business_records::auth::MemoryTokenStore;
    /// use business_records::{Auth, Client};
    /// let client = Client::builder()
    ///     .base_url("https://api.example.com")
    ///     .auth(Auth::user(flow, tokens).store(MemoryTokenStore::new()))
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn user(flow: AuthorizationCodeFlow, tokens: TokenSet) -> UserAuth {
        UserAuth { flow, tokens, store: None }
    }

    /// A bearer token the caller obtains and renews; the client sends it as it is and never
    /// refreshes it.
    ///
    /// ```
    /// use business_records::{Auth, Client};
    /// let client = Client::builder()
    ///     .base_url("https://api.example.com")
    ///     .auth(Auth::static_token("eyJhbGciOi..."))
    ///     .build()?;
    /// # Ok::<(), business_records::Error>(())
    /// ```
    pub fn static_token(token: impl Into<String>) -> Auth {
        Auth(AuthKind::Static(TokenSet::new(token)))
    }

    /// The token manager of a client that authenticates this way, its requests through `sender`
    /// (the client's), the settings checked; the client builder calls this from `build()`.
    pub(crate) fn into_token_manager(self, sender: &HttpSender) -> Result<TokenManager, Error> {
        let (grant, store, tokens) = match self.0 {
            AuthKind::ClientCredentials(flow) => {
                let (grant, store) = flow.into_grant(sender)?;
                return Ok(token_manager::Manager::new(grant, store, TokenSet::new(""), sender.timeout()));
            }
            AuthKind::User(user) => {
                user.flow.check()?;
                (Grant::refresh(user.flow, sender), user.store, user.tokens)
            }
            AuthKind::Static(tokens) => (Grant::Fixed, None, tokens),
        };
        // A user's or a static token must be one the client can send: not empty, and only of
        // characters allowed in a header.
        non_empty("auth", "access token", tokens.access_token.secret().trim())?;
        if !tokens.access_token.fits_header() {
            return Err(Error::invalid("auth", "expected an access token of characters allowed in a header"));
        }
        Ok(token_manager::Manager::new(grant, store, tokens, sender.timeout()))
    }

    /// The client id the authorization server knows the client by (which keys a rate limit
    /// shared over Redis); empty for a static token.
    pub(crate) fn client_id(&self) -> &str {
        match &self.0 {
            AuthKind::ClientCredentials(flow) => &flow.client_id,
            AuthKind::User(user) => user.flow.client_id(),
            AuthKind::Static(_) => "",
        }
    }
}

impl From<ClientCredentials> for Auth {
    fn from(flow: ClientCredentials) -> Self {
        Auth(AuthKind::ClientCredentials(flow))
    }
}

impl From<UserAuth> for Auth {
    fn from(user: UserAuth) -> Self {
        Auth(AuthKind::User(Box::new(user)))
    }
}

/// Authentication as a signed-in user; made by [`Auth::user`](crate::Auth::user).
///
/// The client sends the user's access token and renews it with the refresh-token grant ahead
/// of expiry (and after a 401 `invalid_token`), one refresh at a time however many tasks need
/// it, each refresh token presented once; the new set is saved through the
/// [`store`](Self::store) before any request uses it. See the refresh guarantees in the
/// [`auth`](self) module.
///
/// Give each signed-in user one client and clone it: clones share the tokens. A web app with
/// many users derives each user's client from one shared client with
/// [`Client::with_auth`](crate::Client::with_auth), which shares the connection pool and every
/// setting for a few microseconds and a few KiB per user; a desktop app builds its one client
/// as below. Two clients made from the same `UserAuth` would each renew with the same refresh
/// token, and a server that rotates refresh tokens treats the second use as theft and revokes
/// the sign-in, unless they share a store that locks refreshes ([`FileTokenStore`] and
/// [`DirectoryTokenStore`] over the same file, or a `RedisUserStore`): each client then takes
/// the set the other saved. [`Client::sign_out`](crate::Client::sign_out) ends the sign-in.
///
/// ```no_run
/// # async fn run(flow: business_records::auth::AuthorizationCodeFlow,
/// #              tokens: business_records::auth::TokenSet) -> Result<(), business_records::Error> {
/// use business_records::auth::FileTokenStore;
/// use business_records::{Auth, Client};
///
/// let client = Client::builder()
///     .base_url("https://api.example.com")
///     .auth(Auth::user(flow, tokens).store(FileTokenStore::new("tokens.json")))
///     .build()?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
#[must_use]
pub struct UserAuth {
    flow: AuthorizationCodeFlow,
    tokens: TokenSet,
    store: Option<Arc<dyn TokenStore>>,
}

impl std::fmt::Debug for UserAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserAuth")
            .field("flow", &self.flow)
            .field("tokens", &self.tokens)
            .finish_non_exhaustive()
    }
}

impl UserAuth {
    /// Saves every renewed token set here, before its access token is used. Default: none
    /// (renewed tokens live in memory only).
    pub fn store(mut self, store: impl TokenStore) -> Self {
        self.store = Some(Arc::new(store));
        self
    }
}
