//! The ID token of a user grant (OpenID Connect Core section 2), as an honest provider issues it
//! or altered as the [`Hostile`] switches say. The server signs it itself: the header and claims
//! are written here, the signing input signed with the server's key (or, hostile, with none or
//! with HS256).

use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey};
use serde_json::{Value, json};

use super::super::ErrorReply;
use super::super::hostile::{ANOTHER_CLIENT, ANOTHER_ISSUER, Hostile};
use super::super::jwt::{Signer, corrupt_signature, unix_now};
use super::AuthServer;

/// How far hostile times are moved: well past any clock-skew leeway.
const SKEW_SECS: i64 = 300;

/// What goes into an ID token.
#[derive(Debug, Clone)]
pub(crate) struct IdTokenClaims<'a> {
    pub(crate) issuer: &'a str,
    pub(crate) subject: &'a str,
    /// The client id.
    pub(crate) audience: &'a str,
    pub(crate) nonce: Option<&'a str>,
    pub(crate) lifetime_secs: i64,
    /// For a refresh response rather than a sign-in.
    pub(crate) refreshed: bool,
}

impl AuthServer {
    /// The ID token for `claims`, signed with the current key.
    pub(super) fn id_token(&self, claims: &IdTokenClaims<'_>) -> Result<String, ErrorReply> {
        let keys = self.keys.current();
        let mut body = honest_claims(claims);
        self.alter_claims(&mut body, claims.refreshed);
        let header = self.header(&keys.signer);
        self.sign(&keys.signer, &header, &body)
            .map_err(|_| ErrorReply::new(500, "server_error", "token signing failed"))
    }

    fn alter_claims(&self, body: &mut Value, refreshed: bool) {
        let now = unix_now();
        let on = |mode| self.hostile(mode);
        if on(Hostile::ForeignIssuer) {
            body["iss"] = json!(ANOTHER_ISSUER);
        }
        if on(Hostile::ForeignAudience) {
            body["aud"] = json!(ANOTHER_CLIENT);
        } else if on(Hostile::ExtraAudience) {
            body["aud"] = json!([body["aud"], ANOTHER_CLIENT]);
        }
        if on(Hostile::ForeignAuthorizedParty) || (refreshed && on(Hostile::RefreshForeignAuthorizedParty)) {
            body["azp"] = json!(ANOTHER_CLIENT);
        }
        if on(Hostile::Expired) {
            body["exp"] = json!(now - SKEW_SECS);
        }
        if on(Hostile::NotYetValid) {
            body["nbf"] = json!(now + SKEW_SECS);
        }
        if on(Hostile::IssuedInTheFuture) {
            body["iat"] = json!(now + SKEW_SECS);
        }
        if on(Hostile::WrongNonce) {
            body["nonce"] = json!(format!("another-sign-in-{:016x}", rand::random::<u64>()));
        }
        if let Value::Object(body) = body {
            body.retain(|claim, _| !self.shared.hostile.omits(claim));
        }
    }

    fn header(&self, signer: &Signer) -> Value {
        let on = |mode| self.hostile(mode);
        let alg = match (on(Hostile::AlgNone), on(Hostile::Hs256WithPublicKey)) {
            (true, _) => "none",
            (false, true) => "HS256",
            (false, false) => "RS256",
        };
        let mut header = json!({ "alg": alg, "typ": "JWT", "kid": signer.kid() });
        if on(Hostile::UnknownKeyId) {
            header["kid"] = json!(format!("made-up-{:016x}", rand::random::<u64>()));
        }
        if on(Hostile::NoKeyId)
            && let Value::Object(header) = &mut header
        {
            header.remove("kid");
        }
        if on(Hostile::UnknownCriticalHeader) {
            header["crit"] = json!(["urn:example:unknown"]);
            header["urn:example:unknown"] = json!(true);
        }
        header
    }

    /// The compact JWS of `header` and `body`, signed as the header's `alg` says.
    fn sign(&self, signer: &Signer, header: &Value, body: &Value) -> Result<String, String> {
        let encode =
            |value: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string());
        let input = format!("{}.{}", encode(header), encode(body));
        let signature = match header["alg"].as_str() {
            Some("none") => String::new(),
            Some("HS256") => {
                let secret = signer.jwk()["n"].as_str().unwrap_or_default().as_bytes().to_vec();
                jsonwebtoken::crypto::sign(
                    input.as_bytes(),
                    &EncodingKey::from_secret(&secret),
                    Algorithm::HS256,
                )
                .map_err(|e| format!("signing failed: {e}"))?
            }
            _ => signer.sign_input(input.as_bytes())?,
        };
        let token = format!("{input}.{signature}");
        Ok(if self.hostile(Hostile::BadSignature) { corrupt_signature(&token) } else { token })
    }
}

/// The claims an honest provider puts into the ID token.
fn honest_claims(claims: &IdTokenClaims<'_>) -> Value {
    let now = unix_now();
    let mut body = json!({
        "iss": claims.issuer,
        "sub": claims.subject,
        "aud": claims.audience,
        "azp": claims.audience,
        "iat": now,
        "auth_time": now,
        "exp": now.saturating_add(claims.lifetime_secs),
    });
    if let Some(nonce) = claims.nonce {
        body["nonce"] = json!(nonce);
    }
    body
}
