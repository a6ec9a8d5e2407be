//! ID-token verification of a flow (OpenID Connect Core sections 2 and 3.1.3.7): the verifier's
//! signature, issuer, audience and time checks, then the claims an ID token must have, its
//! audiences and authorized party, and the nonce of the sign-in; and the identity a refreshed ID
//! token must keep (section 12.2).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::super::pkce::constant_time_eq;
use super::super::{Claims, IdToken, TokenSet};
use super::AuthorizationCodeFlow;
use crate::Error;
use crate::error::VerifyError;
use crate::text::quoted;

impl AuthorizationCodeFlow {
    /// Verifies an ID token as OpenID Connect Core sections 2 and 3.1.3.7 require: an RS256
    /// signature with a key from the JWKS (selected by `kid`, or the only signing key when the
    /// token has none); `iss` equal to the issuer; `sub`, `aud`, `exp` and `iat` present; `aud`
    /// containing the client id and no audience besides it that the flow does not
    /// [trust](Self::trusted_audiences); `azp`, required when there are several audiences, equal
    /// to the client id; `exp` in the future and `nbf` and `iat` not, each within the
    /// [`id_token_leeway`](Self::id_token_leeway). The JWKS requests go through the flow's HTTP
    /// client.
    ///
    /// # Errors
    ///
    /// [`Error::TokenVerification`] naming the first failed check.
    pub async fn verify_id_token(&self, id_token: &IdToken) -> Result<Claims, Error> {
        self.verify_id(id_token, None).await
    }

    /// [`verify_id_token`](Self::verify_id_token), and with `nonce` (a sign-in's) the token's
    /// `nonce` equal to it.
    pub(super) async fn verify_id(&self, id_token: &IdToken, nonce: Option<&str>) -> Result<Claims, Error> {
        // The verifier checks the signature, `iss`, `exp`, `nbf`, `iat` when present, and that
        // `aud` names the client; then the checks beyond those, the first that fails.
        let claims = self.config.id_verifier.verify(id_token.secret()).await?;
        let missing = |claim: &str| Err(VerifyError::MissingClaim { claim: claim.to_owned() });
        let client_id = self.client_id();
        let trusted =
            |audience: &&String| *audience == client_id || self.config.trusted_audiences.contains(audience);
        let azp = claims.extra.get("azp");
        let got = claims.extra.get("nonce").and_then(Value::as_str);
        let nonce_matches =
            |expected: &str| got.is_some_and(|got| constant_time_eq(got.as_bytes(), expected.as_bytes()));
        if claims.sub.as_deref().is_none_or(str::is_empty) {
            missing("sub")
        } else if claims.iat.is_none() {
            missing("iat")
        } else if let Some(untrusted) = claims.aud.iter().find(|audience| !trusted(audience)) {
            Err(VerifyError::UntrustedAudience { audience: quoted(untrusted) })
        } else if azp.is_some_and(|azp| azp.as_str() != Some(client_id)) {
            Err(VerifyError::InvalidAuthorizedParty)
        } else if azp.is_none() && claims.aud.iter().any(|audience| *audience != claims.aud[0]) {
            missing("azp")
        } else if !nonce.is_none_or(nonce_matches) {
            Err(VerifyError::InvalidNonce)
        } else {
            Ok(())
        }?;
        Ok(claims)
    }
}

/// OpenID Connect Core section 12.2: a refresh's new ID token, read as sent (its signature is
/// checked later, once the new tokens are kept), must name the `iss`, `sub`, `aud` (as a set)
/// and `azp` of `previous`'s (verified when it was received). When it does not, the response is
/// not this user's, and signing in again is the way on. Without a previous ID token there is
/// nothing to compare; an ID token that cannot be read fails its verification later and is
/// dropped.
pub(super) fn check_same_user(previous: &TokenSet, refreshed: &IdToken) -> Result<(), Error> {
    let claims = |token: &IdToken| {
        jsonwebtoken::dangerous::insecure_decode_claims::<Map<String, Value>>(token.secret()).ok()
    };
    let (Some(original), Some(new)) = (previous.id_token.as_ref().and_then(claims), claims(refreshed)) else {
        return Ok(());
    };
    let Some(reason) = changed_identity(&original, &new) else { return Ok(()) };
    tracing::warn!(reason, "a refresh answered for another user; its tokens are discarded");
    Err(Error::ReauthenticationRequired(reason))
}

/// The claims of a user's identity, and what a refreshed ID token that changes one names.
const IDENTITY: [(&str, &str); 4] = [
    ("iss", "the refreshed id token names another issuer (iss)"),
    ("sub", "the refreshed id token names another user (sub)"),
    ("aud", "the refreshed id token names other audiences (aud)"),
    ("azp", "the refreshed id token names another authorized party (azp)"),
];

/// Why `new` is not `original`'s user: the first claim of [`IDENTITY`] it changes (`aud`
/// compared as a set).
fn changed_identity(original: &Map<String, Value>, new: &Map<String, Value>) -> Option<&'static str> {
    let audiences = |claims: &Map<String, Value>| -> BTreeSet<String> {
        match claims.get("aud") {
            Some(Value::String(one)) => BTreeSet::from([one.clone()]),
            Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
            _ => BTreeSet::new(),
        }
    };
    let changed = |claim: &str| match claim {
        "aud" => audiences(original) != audiences(new),
        _ => original.get(claim) != new.get(claim),
    };
    IDENTITY.into_iter().find(|(claim, _)| changed(claim)).map(|(_, reason)| reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(json: Value) -> Map<String, Value> {
        json.as_object().cloned().expect("an object")
    }

    #[test]
    fn a_refreshed_identity_must_keep_iss_sub_aud_and_azp() {
        let original = claims(
            serde_json::json!({"iss": "i", "sub": "u1", "aud": ["app", "api"], "azp": "app", "exp": 1}),
        );
        let same = claims(
            serde_json::json!({"iss": "i", "sub": "u1", "aud": ["api", "app"], "azp": "app", "exp": 2}),
        );
        assert_eq!(
            changed_identity(&original, &same),
            None,
            "audiences compare as a set, other claims may change"
        );
        for (changed, claim) in [
            (serde_json::json!({"iss": "j", "sub": "u1", "aud": ["app", "api"], "azp": "app"}), "iss"),
            (serde_json::json!({"iss": "i", "sub": "u2", "aud": ["app", "api"], "azp": "app"}), "sub"),
            (serde_json::json!({"iss": "i", "aud": ["app", "api"], "azp": "app"}), "sub"),
            (serde_json::json!({"iss": "i", "sub": "u1", "aud": "app", "azp": "app"}), "aud"),
            (serde_json::json!({"iss": "i", "sub": "u1", "aud": ["app", "api"], "azp": "other"}), "azp"),
            (serde_json::json!({"iss": "i", "sub": "u1", "aud": ["app", "api"]}), "azp"),
        ] {
            let reason = changed_identity(&original, &claims(changed));
            assert!(reason.is_some_and(|r| r.contains(&format!("({claim})"))), "{claim}: {reason:?}");
        }
    }
}
