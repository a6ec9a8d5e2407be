//! The client credentials grant (API Parts 4.2 and 5.4).

use std::sync::Arc;

use oauth2::AuthType;
use url::Url;

use super::oauth::{ClientAuth, Refreshed, request_tokens};
use super::token_manager::Grant;
use super::{ClientSecret, TokenStore, check_client};
use crate::Error;
use crate::text::shown_url;
use crate::urls;
use crate::wire::HttpSender;

/// Settings for the client credentials grant; made by
/// [`Auth::client_credentials`](crate::Auth::client_credentials).
///
/// ```
/// use business_records::Auth;
/// let auth = Auth::client_credentials("https://auth.example.com", "my-client-id", "my-secret")
///     .scopes(["api/read", "api/write"])
///     .credentials_in_body();
/// ```
///
/// `Debug` shows the URLs without user information or query values, and the secret as
/// `[redacted]`.
#[derive(Clone)]
#[must_use]
pub struct ClientCredentials {
    auth_url: String,
    token_url: Option<String>,
    /// The client id, which also keys a rate limit shared over Redis.
    pub(super) client_id: String,
    client_secret: ClientSecret,
    scopes: Vec<String>,
    /// How the id and secret reach the token endpoint: HTTP Basic of the form-urlencoded id and
    /// secret (RFC 6749 section 2.3.1) or form fields, or, when `None`, HTTP Basic of the id and
    /// secret as they are (API Part 5.4, RFC 7617).
    auth_type: Option<AuthType>,
    #[cfg(feature = "redis")]
    shared: Option<super::RedisTokenCache>,
}

impl std::fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("auth_url", &shown_url(&self.auth_url))
            .field("token_url", &self.token_url.as_deref().map(shown_url))
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .field("scopes", &self.scopes)
            .field("auth_type", &self.auth_type)
            .finish_non_exhaustive()
    }
}

impl ClientCredentials {
    pub(crate) fn new(auth_url: String, client_id: String, client_secret: ClientSecret) -> Self {
        ClientCredentials {
            auth_url,
            token_url: None,
            client_id,
            client_secret,
            scopes: Vec::new(),
            auth_type: Some(AuthType::BasicAuth),
            #[cfg(feature = "redis")]
            shared: None,
        }
    }

    /// The scopes to request (spec examples: `api/read`, `api/write`). Default: none, which
    /// lets the authorization server grant the client's default scopes.
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Sends `client_id` and `client_secret` in the form body instead of an HTTP Basic header.
    /// Default: HTTP Basic.
    pub fn credentials_in_body(mut self) -> Self {
        self.auth_type = Some(AuthType::RequestBody);
        self
    }

    /// Sends HTTP Basic as API Part 5.4 writes it, the base64 of `client_id:client_secret`
    /// as they are, instead of the default of RFC 6749 section 2.3.1.
    ///
    /// RFC 6749 form-urlencodes the id and the secret before joining and encoding them, so
    /// `a b` is sent as `a+b` and `s/1=` as `s%2F1%3D`. For ids and secrets made of letters,
    /// digits and `-._~` both forms are the same bytes; they differ only when a character would
    /// be encoded. Choose this form when the authorization server decodes Basic credentials
    /// without form-decoding them (RFC 7617 style), and keep the default otherwise. Default: RFC
    /// 6749. A client id holding `:` cannot be sent this way (the colon separates id and secret)
    /// and is refused by [`ClientBuilder::build`](crate::ClientBuilder::build).
    ///
    /// ```
    /// use business_records::Auth;
    /// let auth = Auth::client_credentials("https://auth.example.com", "my-client-id", "s3cr3t/+=")
    ///     .literal_basic_auth();
    /// ```
    pub fn literal_basic_auth(mut self) -> Self {
        self.auth_type = None;
        self
    }

    /// The token endpoint, when it is not `{auth_url}/oauth2/token`.
    pub fn token_url(mut self, url: impl Into<String>) -> Self {
        self.token_url = Some(url.into());
        self
    }

    /// Shares the token with every process that uses `cache` with the same authorization
    /// server, client id and scopes: one token request for all of them, refreshed once ahead of
    /// expiry. Default: none (each client fetches its own). See
    /// [`RedisTokenCache`](super::RedisTokenCache).
    #[cfg(feature = "redis")]
    pub fn shared_cache(mut self, cache: super::RedisTokenCache) -> Self {
        self.shared = Some(cache);
        self
    }

    /// The grant with every setting checked, its requests through `http`, and the store that
    /// shares its token with other processes (the shared cache, when set).
    pub(crate) fn into_grant(self, http: &HttpSender) -> Result<(Grant, Option<Arc<dyn TokenStore>>), Error> {
        let token_url = match &self.token_url {
            Some(raw) => urls::parse_service_url("token_url", raw)?,
            None => urls::join_path(&urls::parse_service_url("auth_url", &self.auth_url)?, "oauth2/token"),
        };
        check_client(&self.client_id, Some(&self.client_secret))?;
        self.scopes.iter().try_for_each(|scope| urls::check_scope(scope))?;
        let client = match self.auth_type {
            Some(AuthType::RequestBody) => {
                ClientAuth::InBody(self.client_id.clone(), self.client_secret.clone())
            }
            literal => ClientAuth::basic(&self.client_id, &self.client_secret, literal.is_none())?,
        };
        #[cfg(feature = "redis")]
        let store = self.shared.map(|cache| {
            // One token for every process with this token endpoint, client id and scopes, in any order.
            let scopes: std::collections::BTreeSet<&str> = self.scopes.iter().map(String::as_str).collect();
            let scopes = scopes.into_iter().collect::<Vec<_>>().join(" ");
            let key = [token_url.as_str(), &self.client_id, &scopes];
            cache.client_credentials_store(&self.client_secret, &key)
        });
        #[cfg(not(feature = "redis"))]
        let store = None;
        let grant = ClientCredentialsGrant { token_url, client, scopes: self.scopes, sender: http.clone() };
        Ok((Grant::ClientCredentials(Box::new(grant)), store))
    }
}

pub(crate) struct ClientCredentialsGrant {
    token_url: Url,
    client: ClientAuth,
    scopes: Vec<String>,
    sender: HttpSender,
}

impl ClientCredentialsGrant {
    /// One token request (retried under the sender's policy).
    pub(crate) async fn request(&self) -> Result<Refreshed, Error> {
        let scope = self.scopes.join(" ");
        let mut form = vec![("grant_type", "client_credentials")];
        form.extend((!scope.is_empty()).then_some(("scope", scope.as_str())));
        request_tokens(&self.sender, &self.token_url, &self.client, &form, &self.scopes).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_no_user_information_query_value_or_secret() {
        let settings = ClientCredentials::new(
            "https://id:PASSWORD@auth.example.com".into(),
            "id".into(),
            ClientSecret::new("SECRET"),
        )
        .token_url("https://auth.example.com/token?tenant=QUERYVALUE");
        let debug = format!("{settings:?}");
        for hidden in ["PASSWORD", "QUERYVALUE", "SECRET"] {
            assert!(!debug.contains(hidden), "{debug}");
        }
        assert!(debug.contains("https://auth.example.com/token?tenant=…"), "{debug}");
    }

    #[test]
    fn bad_settings_are_named() {
        let cases = [
            (
                ClientCredentials::new("http://auth.example.com".into(), "id".into(), ClientSecret::new("s")),
                "auth_url",
            ),
            (
                ClientCredentials::new("https://auth.example.com".into(), " ".into(), ClientSecret::new("s")),
                "client_id",
            ),
            (
                ClientCredentials::new("https://auth.example.com".into(), "id".into(), ClientSecret::new("")),
                "client_secret",
            ),
            (
                ClientCredentials::new(
                    "https://auth.example.com".into(),
                    "id".into(),
                    ClientSecret::new("s"),
                )
                .scopes(["api/read api/write"]),
                "scopes",
            ),
        ];
        let sender = HttpSender::shared_default().expect("the default sender");
        for (flow, argument) in cases {
            match flow.into_grant(&sender).err() {
                Some(Error::InvalidArgument(got)) => assert_eq!(got.argument(), argument),
                other => panic!("expected an error for {argument}, got {other:?}"),
            }
        }
    }
}
