//! RS256 token signing, the matching JWKS, and the validator of the tokens signed.

use std::sync::{Arc, Once, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use super::access::AccessValidator;

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
        ensure_crypto_provider();
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

/// Installs jsonwebtoken's aws-lc backend as the process default, once. With one backend
/// feature jsonwebtoken finds it by itself; a larger build may unify both features, and then
/// it could not choose and would panic at the first signature.
fn ensure_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Another provider already installed stays: both sign and verify RS256 alike.
        let _ = jsonwebtoken::crypto::CryptoProvider::install_default(
            &jsonwebtoken::crypto::aws_lc::DEFAULT_PROVIDER,
        );
    });
}

/// The key the server signs with, its JWKS, and a validator that trusts exactly that key.
#[derive(Debug)]
pub(crate) struct KeyRing {
    pub(crate) signer: Signer,
    pub(crate) jwks_json: String,
    pub(crate) validator: AccessValidator,
}

/// The server's signing key, which a rotation replaces.
#[derive(Debug)]
pub(crate) struct SigningKeys {
    current: RwLock<Arc<KeyRing>>,
    issuer: String,
    audience: String,
}

impl SigningKeys {
    /// Signs with `pem` under `kid`; the validator checks `issuer` and `audience`.
    pub(crate) fn new(pem: &str, kid: &str, issuer: String, audience: String) -> Result<Self, String> {
        let ring = Self::ring(pem, kid, &issuer, &audience)?;
        Ok(SigningKeys { current: RwLock::new(Arc::new(ring)), issuer, audience })
    }

    fn ring(pem: &str, kid: &str, issuer: &str, audience: &str) -> Result<KeyRing, String> {
        let signer = Signer::from_pem(pem, kid)?;
        let jwks_json = signer.jwks_json();
        let component = |name: &str| signer.jwk[name].as_str().unwrap_or_default().to_owned();
        let validator = AccessValidator::new(kid, &component("n"), &component("e"), issuer, audience)?;
        Ok(KeyRing { signer, jwks_json, validator })
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
    use crate::access::Rejection;

    const ISSUER: &str = "http://127.0.0.1:1";

    fn claims<'a>(scopes: &'a [String], lifetime_secs: i64, kid: &'a str) -> TokenClaims<'a> {
        TokenClaims {
            subject: "c",
            client_id: "c",
            scopes,
            lifetime_secs,
            audience: "aud",
            issuer: ISSUER,
            kid,
            generation: 0,
            clock_skew_secs: 0,
        }
    }

    #[test]
    fn issued_tokens_validate() {
        let keys =
            SigningKeys::new(DEFAULT_SIGNING_KEY_PEM, DEFAULT_KID, ISSUER.into(), "aud".into()).unwrap();
        let ring = keys.current();
        let (signer, validator) = (&ring.signer, &ring.validator);
        let jwks: Value = serde_json::from_str(&ring.jwks_json).unwrap();
        assert_eq!(jwks["keys"][0]["kid"], DEFAULT_KID);
        assert_eq!(jwks["keys"][0]["alg"], "RS256");
        let scopes = vec!["api/read".to_owned(), "api/write".to_owned()];

        let token = signer.issue(&claims(&scopes, 60, DEFAULT_KID)).unwrap();
        let ok = validator.validate(&token).unwrap();
        assert!(ok.has_scope("api/read") && ok.has_scope("api/write") && !ok.has_scope("api"));
        assert_eq!(
            (ok.iss.as_str(), ok.aud.as_slice(), ok.sub.as_deref()),
            (ISSUER, &["aud".to_owned()][..], Some("c"))
        );
        assert_eq!((ok.client_id.as_deref(), ok.generation), (Some("c"), 0));
        assert_eq!(ok.jti.as_ref().map(String::len), Some(32));

        let rejected =
            |claims: &TokenClaims<'_>| validator.validate(&signer.issue(claims).unwrap()).unwrap_err();
        assert_eq!(rejected(&claims(&scopes, -1, DEFAULT_KID)), Rejection::Expired);
        assert_eq!(rejected(&claims(&scopes, 0, DEFAULT_KID)), Rejection::Expired);
        assert_eq!(rejected(&claims(&scopes, 60, UNKNOWN_KID)), Rejection::UnknownKey);
        let mut wrong_aud = claims(&scopes, 60, DEFAULT_KID);
        wrong_aud.audience = "other";
        assert_eq!(rejected(&wrong_aud), Rejection::Audience);
        let mut wrong_iss = claims(&scopes, 60, DEFAULT_KID);
        wrong_iss.issuer = "http://evil";
        assert_eq!(rejected(&wrong_iss), Rejection::Issuer);
        let mut ahead = claims(&scopes, 60, DEFAULT_KID);
        ahead.clock_skew_secs = 30;
        assert_eq!(rejected(&ahead), Rejection::NotYetValid);

        // One signature character changed: same key id, wrong signature.
        let forged = corrupt_signature(&token);
        assert_ne!(forged, token);
        assert_eq!(validator.validate(&forged).unwrap_err(), Rejection::Signature);
        assert!(!Rejection::Signature.to_string().contains(&forged));
        // Another payload under a valid signature.
        let other = signer.issue(&claims(&[], 60, DEFAULT_KID)).unwrap();
        let mut parts: Vec<&str> = token.split('.').collect();
        parts[1] = other.split('.').nth(1).unwrap();
        assert_eq!(validator.validate(&parts.join(".")).unwrap_err(), Rejection::Signature);
        assert_eq!(validator.validate("not-a-jwt").unwrap_err(), Rejection::Malformed);

        // The token does not choose the algorithm: HS256 keyed with the public modulus, and
        // `alg: none`, are refused.
        let body: Value = serde_json::from_slice(
            &base64::Engine::decode(
                &base64::engine::general_purpose::URL_SAFE_NO_PAD,
                token.split('.').nth(1).unwrap(),
            )
            .unwrap(),
        )
        .unwrap();
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(DEFAULT_KID.to_owned());
        let secret = EncodingKey::from_secret(signer.jwk()["n"].as_str().unwrap().as_bytes());
        let hs256 = jsonwebtoken::encode(&header, &body, &secret).unwrap();
        assert_eq!(validator.validate(&hs256).unwrap_err(), Rejection::Algorithm);
        let (_, rest) = token.split_once('.').unwrap();
        let (payload, _) = rest.split_once('.').unwrap();
        let unsigned = format!("eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.{payload}.");
        assert_eq!(validator.validate(&unsigned).unwrap_err(), Rejection::Malformed);
    }

    #[test]
    fn tokens_of_a_withdrawn_key_are_refused() {
        let keys =
            SigningKeys::new(DEFAULT_SIGNING_KEY_PEM, DEFAULT_KID, ISSUER.into(), "aud".into()).unwrap();
        let before = keys.current().signer.issue(&claims(&[], 60, DEFAULT_KID)).unwrap();
        keys.rotate(DEFAULT_SIGNING_KEY_PEM, "second").unwrap();
        let ring = keys.current();
        assert_eq!(ring.validator.validate(&before).unwrap_err(), Rejection::UnknownKey);
        let after = ring.signer.issue(&claims(&[], 60, "second")).unwrap();
        assert!(ring.validator.validate(&after).is_ok());
    }

    #[test]
    fn bad_pem_is_reported() {
        assert!(Signer::from_pem("not a key", "k").is_err());
    }
}
