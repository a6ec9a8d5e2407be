//! The JWKS document: fetched through the wire's one response path ([`HttpSender::exchange`]), read into the
//! signature keys it publishes, and the key a token's header selects (OpenID Connect Core
//! section 10.1).
//!
//! A key verifies RS256 signatures when it is an RSA key whose `use` (if any) is `sig`, whose
//! `key_ops` (if any) include `verify`, and whose `alg` (if any) is `RS256`; every other key is
//! left out, so an encryption key or a key registered for another algorithm never verifies a
//! signature. Keys without `kid` are kept: a token without `kid` is verified with the set's one
//! signing key, and refused when the set holds several.

use std::collections::HashMap;
use std::sync::Arc;

use jsonwebtoken::DecodingKey;
use serde::Deserialize;
use serde_json::Value;

use super::VerifyError;
use super::header::unknown_key;
use crate::error::{DecodeError, Error};
use crate::limits::BodyKind;
use crate::wire::HttpSender;

/// The signature keys of a JWKS document.
#[derive(Clone, Default)]
pub(super) struct Jwks {
    /// Keys with a `kid`, by `kid`.
    by_kid: HashMap<String, Arc<DecodingKey>>,
    /// Every signature key, with or without a `kid`.
    all: Vec<Arc<DecodingKey>>,
}

impl Jwks {
    /// Number of signature keys.
    pub(super) fn len(&self) -> usize {
        self.all.len()
    }

    /// The key for a token whose header names `kid`: that key, or for a token without `kid`
    /// the set's only key. `Ok(None)` when no key has that id (or the set is empty);
    /// [`VerifyError::MissingKeyId`] when a token without `kid` could match several keys.
    pub(super) fn select(&self, kid: Option<&str>) -> Result<Option<Arc<DecodingKey>>, VerifyError> {
        match kid {
            Some(kid) => Ok(self.by_kid.get(kid).cloned()),
            None => match self.all.as_slice() {
                [] => Ok(None),
                [only] => Ok(Some(Arc::clone(only))),
                _ => Err(VerifyError::MissingKeyId),
            },
        }
    }

    /// [`select`](Self::select), with a missing key as an error.
    pub(super) fn require(&self, kid: Option<&str>) -> Result<Arc<DecodingKey>, VerifyError> {
        self.select(kid)?.ok_or_else(|| missing_key(kid))
    }
}

/// No key for a token whose header names `kid` (or has none).
pub(super) fn missing_key(kid: Option<&str>) -> VerifyError {
    match kid {
        Some(kid) => unknown_key(kid),
        None => VerifyError::MissingKeyId,
    }
}

/// Where keys come from.
#[derive(Debug, Clone)]
pub(super) struct JwksEndpoint {
    pub(super) url: url::Url,
    pub(super) sender: HttpSender,
}

/// Fetches and parses the JWKS.
pub(super) async fn fetch_jwks(source: &JwksEndpoint) -> Result<Jwks, Error> {
    let path = source.url.path();
    let body = source.sender.get_document(source.url.clone(), BodyKind::Jwks).await?;
    parse_jwks(&body).map_err(|e| Error::Decode(DecodeError::new(path, e)))
}

/// Parses a JWKS document, keeping the keys that verify RS256 signatures (see the module docs).
pub(super) fn parse_jwks(json: &[u8]) -> Result<Jwks, serde_json::Error> {
    #[derive(Deserialize)]
    struct JwkSet {
        keys: Vec<Value>,
    }
    let set: JwkSet = serde_json::from_slice(json)?;
    let mut jwks = Jwks::default();
    for jwk in &set.keys {
        let field = |name: &str| jwk.get(name).and_then(Value::as_str);
        if field("kty") != Some("RSA") {
            continue;
        }
        let verifies = match jwk.get("key_ops") {
            None => true,
            Some(ops) => ops.as_array().is_some_and(|ops| ops.iter().any(|op| op == "verify")),
        };
        if !verifies || field("use").is_some_and(|u| u != "sig") || field("alg").is_some_and(|a| a != "RS256")
        {
            continue;
        }
        let (Some(n), Some(e)) = (field("n"), field("e")) else {
            continue;
        };
        let Ok(key) = DecodingKey::from_rsa_components(n, e) else {
            continue;
        };
        let key = Arc::new(key);
        if let Some(kid) = field("kid").filter(|kid| !kid.is_empty()) {
            jwks.by_kid.insert(kid.to_owned(), Arc::clone(&key));
        }
        jwks.all.push(key);
    }
    Ok(jwks)
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: &str = "AQAB";

    fn kids(jwks: &Jwks) -> Vec<&str> {
        let mut kids: Vec<&str> = jwks.by_kid.keys().map(String::as_str).collect();
        kids.sort_unstable();
        kids
    }

    #[test]
    fn only_rsa_signature_keys_for_rs256_are_kept() {
        let json = format!(
            r#"{{"keys":[
            {{"kty":"EC","kid":"ec","crv":"P-256","x":"AA","y":"AA"}},
            {{"kty":"RSA","kid":"enc","use":"enc","n":"{N}","e":"AQAB"}},
            {{"kty":"RSA","kid":"wrap","key_ops":["wrapKey"],"n":"{N}","e":"AQAB"}},
            {{"kty":"RSA","kid":"rs512","alg":"RS512","n":"{N}","e":"AQAB"}},
            {{"kty":"RSA","kid":"no-n","e":"AQAB"}},
            {{"kty":"RSA","n":"{N}","e":"AQAB"}},
            {{"kty":"RSA","kid":"ops","key_ops":["verify"],"n":"{N}","e":"AQAB"}},
            {{"kty":"RSA","kid":"ok","alg":"RS256","use":"sig","n":"{N}","e":"AQAB"}}
        ]}}"#
        );
        let jwks = parse_jwks(json.as_bytes()).unwrap();
        assert_eq!(kids(&jwks), ["ok", "ops"]);
        assert_eq!(jwks.len(), 3, "the key without kid is kept");
        assert!(parse_jwks(b"[]").is_err());
    }

    #[test]
    fn a_token_without_kid_takes_the_only_key_and_is_refused_among_several() {
        let one =
            parse_jwks(format!(r#"{{"keys":[{{"kty":"RSA","n":"{N}","e":"AQAB"}}]}}"#).as_bytes()).unwrap();
        assert!(one.require(None).is_ok());
        assert!(matches!(one.require(Some("k")), Err(VerifyError::UnknownKey { kid }) if kid == "k"));

        let with_kid =
            parse_jwks(format!(r#"{{"keys":[{{"kty":"RSA","kid":"k","n":"{N}","e":"AQAB"}}]}}"#).as_bytes())
                .unwrap();
        assert!(with_kid.require(None).is_ok(), "a single key with a kid serves a token without one");
        assert!(with_kid.require(Some("k")).is_ok());

        let two = parse_jwks(
            format!(
                r#"{{"keys":[{{"kty":"RSA","kid":"a","n":"{N}","e":"AQAB"}},{{"kty":"RSA","kid":"b","n":"{N}","e":"AQAB"}}]}}"#
            )
            .as_bytes(),
        )
        .unwrap();
        assert!(matches!(two.require(None), Err(VerifyError::MissingKeyId)));
        assert!(two.require(Some("b")).is_ok());

        let none = Jwks::default();
        assert!(matches!(none.select(None), Ok(None)));
        assert!(matches!(none.require(None), Err(VerifyError::MissingKeyId)));
    }
}
