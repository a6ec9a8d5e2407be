//! Errors of signing in and of tokens: callbacks, stores, verification, renewal.

use std::sync::Arc;
use std::time::Duration;

use super::{Cause, Error};
use crate::text::server_text;

/// Why the redirect back from the authorization server was refused.
///
/// Every check runs before the code is exchanged, so a refused callback never reaches the
/// token endpoint.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallbackError {
    /// The callback is not a URL (or query string) that can be read.
    #[error("the callback url cannot be parsed")]
    Malformed,
    /// A parameter appears more than once.
    #[error("the callback repeats the `{0}` parameter")]
    RepeatedParameter(&'static str),
    /// The callback has no `state` parameter.
    #[error("the callback has no `state` parameter")]
    MissingState,
    /// The `state` does not belong to this sign-in (a forged or stale callback).
    #[error("the `state` parameter does not match this sign-in")]
    StateMismatch,
    /// The `iss` parameter names another authorization server (RFC 9207: a mix-up attack).
    #[error("the `iss` parameter does not name the expected authorization server")]
    IssuerMismatch,
    /// The callback has no `iss` parameter although the flow requires it: the authorization
    /// server advertises RFC 9207, so a callback without it may come from another server.
    #[error("the callback has no `iss` parameter although the authorization server sends one")]
    MissingIssuer,
    /// The callback has neither a `code` nor an `error`.
    #[error("the callback has no `code` parameter")]
    MissingCode,
    /// A sealed pending sign-in was altered, sealed under another secret, or is not one at all
    /// (see [`AuthorizationCodeFlow::open_pending`](crate::auth::AuthorizationCodeFlow::open_pending)).
    #[error("the sealed pending sign-in cannot be opened: it was altered or sealed under another secret")]
    SealedSignInTampered,
    /// A sealed pending sign-in is older than the flow's maximum age: the user must start again.
    #[error("the sealed pending sign-in is older than {0:?}")]
    SealedSignInExpired(Duration),
    /// A sealed pending sign-in was made by another flow (another client id or redirect URI).
    #[error("the sealed pending sign-in belongs to another flow")]
    SealedSignInForeign,
    /// No callback arrived before the loopback listener's timeout.
    #[error("no authorization callback arrived within {0:?}")]
    Timeout(Duration),
    /// The loopback listener could not bind or accept connections; the I/O error, when there
    /// is one, is the [`source`](std::error::Error::source).
    #[error("the loopback listener could not {action}")]
    #[non_exhaustive]
    Listener {
        /// What the listener was doing: `bind`, `accept a connection`, ...
        action: &'static str,
        /// The I/O error.
        #[source]
        source: Option<std::io::Error>,
    },
}

/// Why a [`TokenStore`](crate::auth::TokenStore) failed; surfaces as
/// [`Error::TokenStore`](crate::Error::TokenStore).
///
/// Messages never contain a token.
///
/// ```
/// use business_records::auth::TokenStoreError;
/// let err = TokenStoreError::new("the keychain is locked");
/// assert_eq!(err.to_string(), "the keychain is locked");
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[error(transparent)]
pub struct TokenStoreError(Arc<StoreInner>);

#[derive(Debug, thiserror::Error)]
#[error("{message}")]
struct StoreInner {
    message: String,
    source: Option<Cause>,
}

impl TokenStoreError {
    /// An error with a message (lowercase, no trailing punctuation, no secrets), shortened to
    /// 1 KiB.
    pub fn new(message: impl Into<String>) -> Self {
        TokenStoreError(Arc::new(StoreInner { message: server_text(&message.into()), source: None }))
    }

    /// An error with a message and the error that caused it (kept as the
    /// [`source`](std::error::Error::source), not repeated in the message).
    pub fn with_source(message: impl Into<String>, source: impl Into<Cause>) -> Self {
        let message = server_text(&message.into());
        TokenStoreError(Arc::new(StoreInner { message, source: Some(source.into()) }))
    }
}

/// Why a token was rejected by a [`TokenVerifier`](crate::auth::TokenVerifier).
///
/// Messages never contain the token itself. A verifier given unusable settings fails when it
/// is made, with [`Error::InvalidArgument`](crate::Error::InvalidArgument).
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The token is not a well-formed JWS compact serialization, or its
    /// header or claims are not valid JSON of the expected shape.
    #[error("malformed token")]
    Malformed,
    /// The token header carries no `kid`, and the key set does not hold exactly one signing
    /// key, so none can be selected (OpenID Connect Core section 10.1).
    #[error("token header has no key id and the key set has no single signing key")]
    MissingKeyId,
    /// No key with the token's `kid` is published in the JWKS.
    #[error("no signing key with id `{kid}`")]
    #[non_exhaustive]
    UnknownKey {
        /// The key id from the token header (shortened if very long).
        kid: String,
    },
    /// The token is signed with an algorithm other than RS256.
    #[error("unsupported signing algorithm `{alg}`")]
    #[non_exhaustive]
    UnsupportedAlgorithm {
        /// The `alg` value from the token header (shortened if very long).
        alg: String,
    },
    /// The signature does not match the selected key.
    #[error("invalid token signature")]
    InvalidSignature,
    /// The token's `exp` is not in the future (allowing for the leeway).
    #[error("token has expired")]
    Expired,
    /// The token's `nbf` or `iat` is in the future (allowing for the leeway).
    #[error("token is not valid yet")]
    NotYetValid,
    /// The token's `iss` is not the configured issuer.
    #[error("token issuer does not match")]
    InvalidIssuer,
    /// The token's `aud` does not include the configured audience.
    #[error("token audience does not match")]
    InvalidAudience,
    /// An ID token's `aud` lists an audience besides the client that the client does not trust
    /// (OpenID Connect Core section 3.1.3.7).
    #[error("token lists an untrusted audience `{audience}`")]
    #[non_exhaustive]
    UntrustedAudience {
        /// The untrusted audience (shortened if very long).
        audience: String,
    },
    /// An ID token's `azp` (authorized party) names another client, or is not a string
    /// (OpenID Connect Core section 3.1.3.7).
    #[error("token was issued to another authorized party")]
    InvalidAuthorizedParty,
    /// An ID token's `nonce` is not the one sent with the sign-in (a replayed token).
    #[error("token nonce does not match the sign-in")]
    InvalidNonce,
    /// A required claim is absent: `exp`, `iss` or `aud`; in an ID token also `sub`, `iat`, and
    /// `azp` when it lists several audiences.
    #[error("token has no `{claim}` claim")]
    #[non_exhaustive]
    MissingClaim {
        /// Name of the missing claim.
        claim: String,
    },
    /// The signing keys could not be obtained: the JWKS request failed, was refused, or its
    /// answer is not a JWKS. The failure ([`Error::Http`], [`Error::Api`],
    /// [`Error::Decode`], ...) is the [`source`](std::error::Error::source).
    #[error("jwks unavailable")]
    Jwks(#[source] Error),
}
