//! A hostile OpenID provider on demand, for relying-party tests (modelled on the OpenID
//! Foundation's `rp-*` certification tests): ID tokens with claims left out or altered, foreign
//! audiences and authorized parties, broken or unusual signatures and headers, JWKS documents a
//! client must read carefully, callbacks that are not what they should be, and refreshes that
//! answer for another user.
//!
//! Each misbehaviour is one switch, a [`Hostile`] value: on from the start with
//! [`ReferenceServerBuilder::hostile`], flipped on a running server with
//! [`ReferenceServer::set_hostile`]. Switches combine (`ExtraAudience` with
//! `OmitClaim("azp")` sends two audiences and no `azp`). Only ID tokens, the JWKS and the
//! authorization endpoint's answers change: access tokens and the API stay as they are, except
//! that [`Hostile::RefreshForAnotherUser`] issues every token of a refresh to another user.

use std::collections::HashSet;
use std::sync::Mutex;

use serde_json::{Value, json};

use super::auth::AuthServer;
use super::{ReferenceServer, ReferenceServerBuilder};

/// The audience and authorized party that hostile ID tokens name instead of the client.
pub(crate) const ANOTHER_CLIENT: &str = "another-client";
/// The issuer that hostile ID tokens and callbacks name instead of the server.
pub(crate) const ANOTHER_ISSUER: &str = "https://attacker.example";
/// The user a hostile refresh answers for.
pub(crate) const ANOTHER_USER: &str = "another-user";

/// One way the reference server's authorization server misbehaves, for relying-party tests.
///
/// ```
/// # async fn run() {
/// use business_records_reference_server::{Hostile, ReferenceServer};
///
/// let server = ReferenceServer::builder().hostile(Hostile::OmitClaim("sub")).start().await;
/// // ... a sign-in now gets an ID token without `sub` ...
/// server.set_hostile(Hostile::OmitClaim("sub"), false);
/// server.set_hostile(Hostile::RefreshForAnotherUser, true);
/// assert_eq!(server.hostile_modes(), [Hostile::RefreshForAnotherUser]);
/// # }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Hostile {
    /// ID tokens leave out this claim (`sub`, `iat`, `iss`, `aud`, `exp`, `nonce`, `azp`, ...).
    OmitClaim(&'static str),
    /// ID tokens name another issuer in `iss`.
    ForeignIssuer,
    /// ID tokens are for another client: `aud` names it alone.
    ForeignAudience,
    /// ID tokens list the client and another audience in `aud` (`azp` stays the client).
    ExtraAudience,
    /// ID tokens name another client in `azp`.
    ForeignAuthorizedParty,
    /// ID tokens expired five minutes ago.
    Expired,
    /// ID tokens are not valid for five more minutes (`nbf`).
    NotYetValid,
    /// ID tokens were issued five minutes from now (`iat`).
    IssuedInTheFuture,
    /// ID tokens carry the `nonce` of another sign-in.
    WrongNonce,
    /// ID tokens are unsigned: `alg: none` and an empty signature.
    AlgNone,
    /// ID tokens are signed with HS256, the published key's modulus (`n`) as the HMAC secret:
    /// a verifier that lets the token choose the algorithm takes them for the server's.
    Hs256WithPublicKey,
    /// ID tokens carry a critical header extension (`crit`) that nobody understands.
    UnknownCriticalHeader,
    /// ID tokens carry a signature that does not match (its first character changed).
    BadSignature,
    /// ID tokens have no `kid` header.
    NoKeyId,
    /// ID tokens name a key id never published, another one each time.
    UnknownKeyId,
    /// The JWKS also publishes a second signing key (the same key under another id), so a
    /// token without `kid` could match either.
    SecondSigningKey,
    /// The JWKS publishes its keys without `kid`.
    KeysWithoutId,
    /// The JWKS publishes the signing key for encryption (`use: enc`).
    SigningKeyForEncryption,
    /// Callbacks come without `iss`, although the discovery document advertises RFC 9207.
    CallbackWithoutIss,
    /// Callbacks name another issuer in `iss`.
    CallbackForeignIssuer,
    /// Callbacks carry another `state` than the authorization request's.
    CallbackWrongState,
    /// Every authorization request is answered with `error=access_denied`, as when the user
    /// declines.
    AccessDenied,
    /// Refresh responses answer for another user: their access and ID tokens name another
    /// `sub`.
    RefreshForAnotherUser,
    /// Refresh responses carry an ID token whose `azp` names another client.
    RefreshForeignAuthorizedParty,
}

/// The switches that are on, shared by the responders and the handle.
#[derive(Debug, Default)]
pub(crate) struct HostileModes(Mutex<HashSet<Hostile>>);

impl HostileModes {
    pub(crate) fn is_on(&self, mode: Hostile) -> bool {
        self.lock().contains(&mode)
    }

    /// Whether ID tokens leave out `claim`.
    pub(crate) fn omits(&self, claim: &str) -> bool {
        self.lock().iter().any(|mode| matches!(mode, Hostile::OmitClaim(omitted) if *omitted == claim))
    }

    pub(crate) fn set(&self, mode: Hostile, on: bool) {
        let mut modes = self.lock();
        if on {
            modes.insert(mode);
        } else {
            modes.remove(&mode);
        }
    }

    /// The switches that are on, sorted.
    pub(crate) fn all(&self) -> Vec<Hostile> {
        let mut modes: Vec<Hostile> = self.lock().iter().copied().collect();
        modes.sort_unstable();
        modes
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<Hostile>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl ReferenceServerBuilder {
    /// Turns on one misbehaviour of a hostile OpenID provider from the start (see [`Hostile`]);
    /// call it again for more. Default: none, an honest provider.
    pub fn hostile(mut self, mode: Hostile) -> Self {
        self.hostile.push(mode);
        self
    }
}

impl ReferenceServer {
    /// Turns a misbehaviour on or off, effective from the next request.
    pub fn set_hostile(&self, mode: Hostile, on: bool) {
        self.shared.hostile.set(mode, on);
    }

    /// The misbehaviours that are on, sorted.
    pub fn hostile_modes(&self) -> Vec<Hostile> {
        self.shared.hostile.all()
    }
}

impl AuthServer {
    pub(crate) fn hostile(&self, mode: Hostile) -> bool {
        self.shared.hostile.is_on(mode)
    }

    /// The JWKS document as served.
    pub(crate) fn published_jwks(&self) -> String {
        let keys = self.keys.current();
        let modes = [Hostile::SecondSigningKey, Hostile::KeysWithoutId, Hostile::SigningKeyForEncryption];
        if !modes.iter().any(|mode| self.hostile(*mode)) {
            return keys.jwks_json.clone();
        }
        let mut jwk = keys.signer.jwk().clone();
        if self.hostile(Hostile::SigningKeyForEncryption) {
            jwk["use"] = json!("enc");
        }
        let mut published = vec![jwk.clone()];
        if self.hostile(Hostile::SecondSigningKey) {
            jwk["kid"] = json!(format!("{}-second", keys.signer.kid()));
            published.push(jwk);
        }
        if self.hostile(Hostile::KeysWithoutId) {
            for key in &mut published {
                if let Value::Object(key) = key {
                    key.remove("kid");
                }
            }
        }
        json!({ "keys": published }).to_string()
    }

    /// The `state` and `iss` a callback carries, given the request's `state`.
    pub(crate) fn callback_state_and_iss(&self, state: Option<&str>) -> (Option<String>, Option<String>) {
        let state = match self.hostile(Hostile::CallbackWrongState) {
            true => Some(format!("forged-{:016x}", rand::random::<u64>())),
            false => state.map(str::to_owned),
        };
        let iss = if self.hostile(Hostile::CallbackWithoutIss) {
            None
        } else if self.hostile(Hostile::CallbackForeignIssuer) {
            Some(ANOTHER_ISSUER.to_owned())
        } else {
            Some(self.settings.issuer.clone())
        };
        (state, iss)
    }

    /// The user a refresh of `subject`'s sign-in answers for.
    pub(crate) fn refresh_subject<'a>(&self, subject: &'a str) -> &'a str {
        if self.hostile(Hostile::RefreshForAnotherUser) { ANOTHER_USER } else { subject }
    }
}

#[cfg(test)]
mod tests;
