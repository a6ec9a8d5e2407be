//! Validation of the access tokens the API receives: tokens of this server's own, checked with
//! the key it signs with (no JWKS fetch), as API Part 5.7 says a resource server checks them.

use std::fmt;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;

/// The claims of an access token the API accepts.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct AccessClaims {
    pub(crate) iss: String,
    #[serde(default)]
    pub(crate) sub: Option<String>,
    pub(crate) aud: Vec<String>,
    pub(crate) exp: i64,
    #[serde(default)]
    pub(crate) iat: Option<i64>,
    /// Space-separated granted scopes.
    #[serde(default)]
    pub(crate) scope: Option<String>,
    #[serde(default)]
    pub(crate) client_id: Option<String>,
    #[serde(default)]
    pub(crate) jti: Option<String>,
    /// The revocation generation the token belongs to (claim `gen`).
    #[serde(default, rename = "gen")]
    pub(crate) generation: u64,
}

impl AccessClaims {
    /// Whether `scope` is among the granted scopes.
    pub(crate) fn has_scope(&self, scope: &str) -> bool {
        self.scope.as_deref().unwrap_or("").split(' ').any(|granted| granted == scope)
    }
}

/// Why a token was refused; the text goes into `error_description` (it never quotes the token).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rejection {
    /// Not a JWT, or claims of the wrong shape.
    Malformed,
    /// Signed under a key id this server does not sign with.
    UnknownKey,
    /// Not RS256.
    Algorithm,
    Signature,
    Expired,
    NotYetValid,
    Issuer,
    Audience,
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Rejection::Malformed => "the token is not a well-formed access token",
            Rejection::UnknownKey => "the token is signed with a key this server does not use",
            Rejection::Algorithm => "the token is not signed with RS256",
            Rejection::Signature => "the token signature is invalid",
            Rejection::Expired => "the token has expired",
            Rejection::NotYetValid => "the token is not valid yet",
            Rejection::Issuer => "the token was issued by another authorization server",
            Rejection::Audience => "the token is not meant for this api",
        })
    }
}

/// Checks access tokens against one signing key, one issuer and one audience, with no leeway.
pub(crate) struct AccessValidator {
    kid: String,
    key: DecodingKey,
    validation: Validation,
}

impl fmt::Debug for AccessValidator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AccessValidator").field("kid", &self.kid).finish_non_exhaustive()
    }
}

impl AccessValidator {
    /// Trusts the RSA public key of modulus `n` and exponent `e` (base64url, as in a JWK),
    /// published under `kid`.
    pub(crate) fn new(kid: &str, n: &str, e: &str, issuer: &str, audience: &str) -> Result<Self, String> {
        let key =
            DecodingKey::from_rsa_components(n, e).map_err(|e| format!("invalid rsa public key: {e}"))?;
        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.set_issuer(&[issuer]);
        validation.set_audience(&[audience]);
        validation.leeway = 0;
        validation.validate_nbf = true;
        Ok(AccessValidator { kid: kid.to_owned(), key, validation })
    }

    /// The claims of `token` when it is signed with this key (a token without `kid` too) and
    /// names the issuer and the audience; `exp` must be in the future and `iat` not.
    pub(crate) fn validate(&self, token: &str) -> Result<AccessClaims, Rejection> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| Rejection::Malformed)?;
        if header.kid.as_deref().is_some_and(|kid| kid != self.kid) {
            return Err(Rejection::UnknownKey);
        }
        let data = jsonwebtoken::decode::<AccessClaims>(token, &self.key, &self.validation)
            .map_err(|e| rejection(e.kind()))?;
        let claims = data.claims;
        let now = chrono::Utc::now().timestamp();
        // jsonwebtoken accepts `exp == now`; a token is expired from its `exp` on.
        if claims.exp <= now {
            return Err(Rejection::Expired);
        }
        if claims.iat.is_some_and(|iat| iat > now) {
            return Err(Rejection::NotYetValid);
        }
        Ok(claims)
    }
}

fn rejection(kind: &ErrorKind) -> Rejection {
    match kind {
        ErrorKind::InvalidSignature => Rejection::Signature,
        ErrorKind::ExpiredSignature => Rejection::Expired,
        ErrorKind::ImmatureSignature => Rejection::NotYetValid,
        ErrorKind::InvalidIssuer => Rejection::Issuer,
        ErrorKind::InvalidAudience => Rejection::Audience,
        ErrorKind::InvalidAlgorithm | ErrorKind::MissingAlgorithm | ErrorKind::UnsupportedAlgorithm => {
            Rejection::Algorithm
        }
        _ => Rejection::Malformed,
    }
}
