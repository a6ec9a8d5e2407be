//! What to put into a token minted without a token request.

use std::time::Duration;

/// What to put into a token made by [`ReferenceServer::mint_token`](super::ReferenceServer::mint_token).
///
/// The default is a token for the default client with all its scopes and
/// the server's token lifetime, signed with the published key.
///
/// ```
/// use business_records_reference_server::TokenSpec;
///
/// let expired = TokenSpec::new().scopes(["api/read"]).lifetime_secs(-60);
/// let wrong_audience = TokenSpec::new().audience("another-api");
/// # let _ = (expired, wrong_audience);
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenSpec {
    /// Granted scopes; `None` means all scopes of the default client.
    pub scopes: Option<Vec<String>>,
    /// Seconds until expiry (negative: already expired); `None` means the
    /// server's token lifetime.
    pub lifetime_secs: Option<i64>,
    /// `aud` value instead of the server's audience.
    pub audience: Option<String>,
    /// `iss` value instead of the auth URL.
    pub issuer: Option<String>,
    /// `sub` and `client_id` instead of the default client's id.
    pub client_id: Option<String>,
    /// Use a key id the JWKS does not publish.
    pub unknown_key: bool,
    /// Corrupt the signature (the key id stays valid).
    pub bad_signature: bool,
    /// Seconds the issuer's clock is ahead (negative: behind): `iat`, `nbf` and `exp` are
    /// moved by this much.
    pub clock_skew_secs: i64,
}

impl TokenSpec {
    /// The default spec.
    pub fn new() -> Self {
        Self::default()
    }

    /// Grants exactly these scopes (an empty list grants none).
    #[must_use]
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// Expires `lifetime` from now.
    #[must_use]
    pub fn lifetime(self, lifetime: Duration) -> Self {
        self.lifetime_secs(i64::try_from(lifetime.as_secs()).unwrap_or(i64::MAX))
    }

    /// Expires `secs` seconds from now; zero or negative makes an expired token.
    #[must_use]
    pub fn lifetime_secs(mut self, secs: i64) -> Self {
        self.lifetime_secs = Some(secs);
        self
    }

    /// Uses this `aud` instead of the server's audience.
    #[must_use]
    pub fn audience(mut self, audience: impl Into<String>) -> Self {
        self.audience = Some(audience.into());
        self
    }

    /// Uses this `iss` instead of the auth URL.
    #[must_use]
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// Uses this `sub` and `client_id`.
    #[must_use]
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// Signs under a key id the JWKS does not publish.
    #[must_use]
    pub fn unknown_key(mut self) -> Self {
        self.unknown_key = true;
        self
    }

    /// Corrupts the signature.
    #[must_use]
    pub fn bad_signature(mut self) -> Self {
        self.bad_signature = true;
        self
    }

    /// Issues the token as a server whose clock is `secs` seconds ahead (negative: behind)
    /// would: `iat`, `nbf` and `exp` move by `secs`. With a few seconds ahead, the token is
    /// "not valid yet" to a verifier without leeway.
    #[must_use]
    pub fn clock_skew_secs(mut self, secs: i64) -> Self {
        self.clock_skew_secs = secs;
        self
    }
}
