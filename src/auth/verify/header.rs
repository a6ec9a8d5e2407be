//! The checks made before any key is chosen: the token's shape and header, and the mapping of
//! the JWT library's errors to [`VerifyError`].

use jsonwebtoken::errors::ErrorKind;
use serde::Deserialize;
use serde_json::Value;

use super::VerifyError;

/// Longest token accepted; anything larger is rejected before any parsing.
const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// Longest key id or audience quoted back in an error.
const MAX_KID_IN_ERROR: usize = 64;

pub(super) fn map_jwt_error(err: jsonwebtoken::errors::Error) -> VerifyError {
    match err.into_kind() {
        ErrorKind::InvalidSignature => VerifyError::InvalidSignature,
        ErrorKind::ExpiredSignature => VerifyError::Expired,
        ErrorKind::ImmatureSignature => VerifyError::NotYetValid,
        ErrorKind::InvalidIssuer => VerifyError::InvalidIssuer,
        ErrorKind::InvalidAudience => VerifyError::InvalidAudience,
        ErrorKind::MissingRequiredClaim(claim) => VerifyError::MissingClaim { claim },
        ErrorKind::InvalidAlgorithm | ErrorKind::UnsupportedAlgorithm => {
            VerifyError::UnsupportedAlgorithm { alg: "unknown".into() }
        }
        _ => VerifyError::Malformed,
    }
}

fn shorten(s: &str) -> String {
    crate::text::server_text(&s.chars().take(MAX_KID_IN_ERROR).collect::<String>())
}

pub(super) fn unknown_key(kid: &str) -> VerifyError {
    VerifyError::UnknownKey { kid: shorten(kid) }
}

/// An ID token lists `audience`, which the client does not trust.
pub(crate) fn untrusted_audience(audience: &str) -> VerifyError {
    VerifyError::UntrustedAudience { audience: shorten(audience) }
}

/// Checks the token's shape and header; returns its `kid`, `None` when it has none (then the
/// key set's only signing key applies, OpenID Connect Core section 10.1).
pub(super) fn parse_header(token: &str) -> Result<Option<String>, VerifyError> {
    #[derive(Deserialize)]
    struct RawHeader {
        alg: Option<String>,
        kid: Option<String>,
        crit: Option<Value>,
    }

    let [header, _, signature] = segments(token).ok_or(VerifyError::Malformed)?;
    let bytes = b64url_decode(header).ok_or(VerifyError::Malformed)?;
    let raw: RawHeader = serde_json::from_slice(&bytes).map_err(|_| VerifyError::Malformed)?;
    match raw.alg.as_deref() {
        Some("RS256") => {}
        Some(other) => {
            return Err(VerifyError::UnsupportedAlgorithm { alg: shorten(other) });
        }
        None => return Err(VerifyError::Malformed),
    }
    // No critical header extensions are understood (RFC 7515 section 4.1.11).
    if raw.crit.is_some() || signature.is_empty() {
        return Err(VerifyError::Malformed);
    }
    Ok(raw.kid.filter(|kid| !kid.is_empty()))
}

/// The three segments of a compact JWS no larger than [`MAX_TOKEN_BYTES`]: header, payload
/// (both non-empty) and signature (empty for `alg: none`, which the header check refuses).
fn segments(token: &str) -> Option<[&str; 3]> {
    if token.len() > MAX_TOKEN_BYTES {
        return None;
    }
    let mut parts = token.split('.');
    let segments @ [header, payload, _] = [parts.next()?, parts.next()?, parts.next()?];
    (parts.next().is_none() && !header.is_empty() && !payload.is_empty()).then_some(segments)
}

/// The claims of `token` as sent, without any check of its signature or its claims; `None` when
/// it is not a compact JWS whose payload is a JSON object. Only for comparing a token with one
/// verified before, never for trusting it.
pub(crate) fn unverified_claims(token: &str) -> Option<serde_json::Map<String, Value>> {
    let [_, payload, _] = segments(token)?;
    serde_json::from_slice(&b64url_decode(payload)?).ok()
}

/// Decodes unpadded base64url (RFC 7515 section 2); `None` for any other input.
pub(super) fn b64url_decode(input: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(input).ok()
}
