//! RS256 token signing and the matching JWKS.

use std::sync::{Arc, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

/// The RS256 key shipped with the reference server (PKCS#8 PEM).
pub(crate) const DEFAULT_SIGNING_KEY_PEM: &str = include_str!("signing_key.pem");
/// Key id of the default signing key.
pub(crate) const DEFAULT_KID: &str = "reference-key-1";
/// Key id used for tokens "signed with an unknown key".
pub(crate) const UNKNOWN_KID: &str = "unknown-key";

/// Everything that varies between issued tokens.
#[derive(Debug, Clone)]
pub(crate) struct TokenClaims<'a> {
    pub(crate) subject: &'a str,
    pub(crate) client_id: &'a str,
    pub(crate) scopes: &'a [String],
    pub(crate) lifetime_secs: i64,
    pub(crate) audience: &'a str,
    pub(crate) issuer: &'a str,
    pub(crate) kid: &'a str,
    /// The revocation generation the token belongs to (claim `gen`).
    pub(crate) generation: u64,
    /// Seconds the issuing clock is ahead of this one: `iat`, `nbf` and `exp` move with it.
    pub(crate) clock_skew_secs: i64,
}

/// Signs access tokens with one RSA key and publishes its public half.
pub(crate) struct Signer {
    key: EncodingKey,
    kid: String,
    jwk: Value,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer").field("kid", &self.kid).finish_non_exhaustive()
    }
}

impl Signer {
    /// Loads an RSA private key (PKCS#1 or PKCS#8 PEM).
    pub(crate) fn from_pem(pem: &str, kid: &str) -> Result<Self, String> {
        crate::auth::verify::ensure_crypto_provider();
        let key =
            EncodingKey::from_rsa_pem(pem.as_bytes()).map_err(|e| format!("invalid rsa private key: {e}"))?;
        let jwk = Jwk::from_encoding_key(&key, Algorithm::RS256)
            .map_err(|e| format!("cannot derive the public key: {e}"))?;
        let AlgorithmParameters::RSA(rsa) = &jwk.algorithm else {
            return Err("not an rsa key".into());
        };
        let jwk = json!({
            "kty": "RSA",
            "n": rsa.n,
            "e": rsa.e,
            "kid": kid,
            "alg": "RS256",
            "use": "sig",
        });
        Ok(Self { key, kid: kid.to_owned(), jwk })
    }

    /// Key id of the published key.
    pub(crate) fn kid(&self) -> &str {
        &self.kid
    }

    /// The JWKS document (`{"keys":[...]}`) as JSON text.
    pub(crate) fn jwks_json(&self) -> String {
        json!({ "keys": [self.jwk] }).to_string()
    }

    /// A signed access token. Returns the token and its `expires_in`.
    pub(crate) fn issue(&self, claims: &TokenClaims<'_>) -> Result<String, String> {
        let now = unix_now().saturating_add(claims.clock_skew_secs);
        let jti = format!("{:032x}", rand::random::<u128>());
        let body = json!({
            "iss": claims.issuer,
            "sub": claims.subject,
            "client_id": claims.client_id,
            "aud": [claims.audience],
            "iat": now,
            "nbf": now,
            "exp": expiry(claims.lifetime_secs).saturating_add(claims.clock_skew_secs),
            "jti": jti,
            "gen": claims.generation,
            "scope": claims.scopes.join(" "),
        });
        self.sign("at+jwt", claims.kid, &body)
    }

    /// The published key, as a JWK.
    pub(crate) fn jwk(&self) -> &Value {
        &self.jwk
    }

    /// The RS256 signature of `input` (a JWS signing input), base64url.
    pub(crate) fn sign_input(&self, input: &[u8]) -> Result<String, String> {
        jsonwebtoken::crypto::sign(input, &self.key, Algorithm::RS256)
            .map_err(|e| format!("signing failed: {e}"))
    }

    fn sign(&self, typ: &str, kid: &str, body: &Value) -> Result<String, String> {
        let mut header = Header::new(Algorithm::RS256);
        header.typ = Some(typ.to_owned());
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(&header, body, &self.key).map_err(|e| format!("signing failed: {e}"))
    }
}

/// `token` with the first character of its signature changed: still base64url, no longer valid.
pub(crate) fn corrupt_signature(token: &str) -> String {
    match token.rsplit_once('.') {
        Some((head, sig)) => {
            let first = if sig.starts_with('A') { 'B' } else { 'A' };
            format!("{head}.{first}{}", sig.get(1..).unwrap_or(""))
        }
        None => token.to_owned(),
    }
}

/// The key the server signs with, its JWKS, and a verifier that trusts exactly that key.
#[derive(Debug)]
pub(crate) struct KeyRing {
    pub(crate) signer: Signer,
    pub(crate) jwks_json: String,
    pub(crate) verifier: crate::auth::TokenVerifier,
}

/// The server's signing key, which a rotation replaces.
#[derive(Debug)]
pub(crate) struct SigningKeys {
    current: RwLock<Arc<KeyRing>>,
    issuer: String,
    audience: String,
}

impl SigningKeys {
    /// Signs with `pem` under `kid`; the verifier checks `issuer` and `audience`.
    pub(crate) fn new(pem: &str, kid: &str, issuer: String, audience: String) -> Result<Self, String> {
        let ring = Self::ring(pem, kid, &issuer, &audience)?;
        Ok(SigningKeys { current: RwLock::new(Arc::new(ring)), issuer, audience })
    }

    fn ring(pem: &str, kid: &str, issuer: &str, audience: &str) -> Result<KeyRing, String> {
        let signer = Signer::from_pem(pem, kid)?;
        let jwks_json = signer.jwks_json();
        let verifier =
            crate::auth::TokenVerifier::from_jwks(&jwks_json, issuer, audience).map_err(|e| e.to_string())?;
        Ok(KeyRing { signer, jwks_json, verifier })
    }

    /// The key in use.
    pub(crate) fn current(&self) -> Arc<KeyRing> {
        Arc::clone(&self.current.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Signs with `pem` under `kid` from now on; the old key is withdrawn.
    pub(crate) fn rotate(&self, pem: &str, kid: &str) -> Result<(), String> {
        let ring = Self::ring(pem, kid, &self.issuer, &self.audience)?;
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(ring);
        Ok(())
    }
}

/// `exp` for a token that lives `lifetime_secs`: rounded up to the next whole second, so a
/// token announced with `expires_in: 1` really works for at least one second (whole-second
/// `exp` values would otherwise cut short lifetimes by up to a second). Zero or negative
/// lifetimes make tokens that are already expired.
pub(crate) fn expiry(lifetime_secs: i64) -> i64 {
    if lifetime_secs <= 0 {
        return unix_now().saturating_add(lifetime_secs);
    }
    let now_ms = i64::try_from(unix_now_ms()).unwrap_or(i64::MAX);
    now_ms.saturating_add(lifetime_secs.saturating_mul(1000)).saturating_add(999) / 1000
}

/// Seconds since the Unix epoch.
pub(crate) fn unix_now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// Milliseconds since the Unix epoch.
pub(crate) fn unix_now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{TokenVerifier, VerifyError};

    fn claims<'a>(scopes: &'a [String], lifetime_secs: i64, kid: &'a str) -> TokenClaims<'a> {
        TokenClaims {
            subject: "c",
            client_id: "c",
            scopes,
            lifetime_secs,
            audience: "aud",
            issuer: "http://127.0.0.1:1",
            kid,
            generation: 0,
            clock_skew_secs: 0,
        }
    }

    #[test]
    fn issued_tokens_verify() {
        let signer = Signer::from_pem(DEFAULT_SIGNING_KEY_PEM, DEFAULT_KID).unwrap();
        let jwks: Value = serde_json::from_str(&signer.jwks_json()).unwrap();
        assert_eq!(jwks["keys"][0]["kid"], DEFAULT_KID);
        assert_eq!(jwks["keys"][0]["alg"], "RS256");
        let verifier = TokenVerifier::from_jwks(&signer.jwks_json(), "http://127.0.0.1:1", "aud").unwrap();
        let scopes = vec!["api/read".to_owned(), "api/write".to_owned()];

        let token = signer.issue(&claims(&scopes, 60, DEFAULT_KID)).unwrap();
        let ok = verifier.verify_cached(&token).unwrap();
        assert!(ok.has_scope("api/read") && ok.has_scope("api/write"));
        assert_eq!(ok.aud, vec!["aud"]);
        assert_eq!(ok.client_id.as_deref(), Some("c"));
        assert!(ok.extra.contains_key("jti"));

        let expired = signer.issue(&claims(&scopes, -1, DEFAULT_KID)).unwrap();
        assert!(matches!(verifier.verify_cached(&expired), Err(VerifyError::Expired)));
        let now = signer.issue(&claims(&scopes, 0, DEFAULT_KID)).unwrap();
        assert!(matches!(verifier.verify_cached(&now), Err(VerifyError::Expired)));

        let unknown = signer.issue(&claims(&scopes, 60, UNKNOWN_KID)).unwrap();
        assert!(matches!(verifier.verify_cached(&unknown), Err(VerifyError::UnknownKey { .. })));

        let mut wrong_aud = claims(&scopes, 60, DEFAULT_KID);
        wrong_aud.audience = "other";
        let t = signer.issue(&wrong_aud).unwrap();
        assert!(matches!(verifier.verify_cached(&t), Err(VerifyError::InvalidAudience)));

        let mut wrong_iss = claims(&scopes, 60, DEFAULT_KID);
        wrong_iss.issuer = "http://evil";
        let t = signer.issue(&wrong_iss).unwrap();
        assert!(matches!(verifier.verify_cached(&t), Err(VerifyError::InvalidIssuer)));

        // Flip one signature character: same key id, wrong signature.
        let (head, sig) = token.rsplit_once('.').unwrap();
        let first = if sig.starts_with('A') { 'B' } else { 'A' };
        let forged = format!("{head}.{first}{}", &sig[1..]);
        let err = verifier.verify_cached(&forged).unwrap_err();
        assert!(matches!(err, VerifyError::InvalidSignature));
        assert!(!err.to_string().contains(&forged));

        // Payload swapped under a valid signature.
        let other = signer.issue(&claims(&[], 60, DEFAULT_KID)).unwrap();
        let mut parts: Vec<&str> = token.split('.').collect();
        parts[1] = other.split('.').nth(1).unwrap();
        assert!(matches!(verifier.verify_cached(&parts.join(".")), Err(VerifyError::InvalidSignature)));

        let leeway = verifier.clone().leeway(std::time::Duration::from_secs(120));
        assert!(leeway.verify_cached(&expired).is_ok());
    }

    #[test]
    fn bad_pem_is_reported() {
        assert!(Signer::from_pem("not a key", "k").is_err());
    }
}
