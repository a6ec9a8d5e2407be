//! Authentication: how the client obtains the bearer tokens it sends (spec Part 5).
//!
//! | Flow | Constructor | For |
//! |---|---|---|
//! | Client credentials | [`Auth::client_credentials`] | backends, server to server |
//! | A token you manage | [`Auth::static_token`] | scripts, tests, tokens from elsewhere |
//!
//! Tokens are cached and refreshed ahead of expiry (at the earlier of five minutes or a tenth of
//! their lifetime before it); concurrent callers share one token request.
//!
//! [`TokenVerifier`] is the other side: it validates access tokens for a resource server.

mod client_credentials;
mod secret;
pub(crate) mod token_manager;
pub mod verify;

pub use client_credentials::ClientCredentials;
pub use secret::{AccessToken, ClientSecret};
pub use verify::{Claims, TokenVerifier, VerifyError};

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
pub struct Auth {
    pub(crate) kind: AuthKind,
}

#[derive(Debug, Clone)]
pub(crate) enum AuthKind {
    ClientCredentials(ClientCredentials),
    Static(AccessToken),
}

impl Auth {
    /// The client credentials grant (spec Part 5.4) against the authorization server at
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
        Auth { kind: AuthKind::Static(AccessToken::new(token)) }
    }
}

impl From<ClientCredentials> for Auth {
    fn from(flow: ClientCredentials) -> Self {
        Auth { kind: AuthKind::ClientCredentials(flow) }
    }
}
