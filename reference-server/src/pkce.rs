//! The server's side of PKCE (RFC 7636, API Part 5.2): the S256 challenge of a verifier.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

/// Shortest verifier RFC 7636 allows.
const MIN_VERIFIER_LEN: usize = 43;
/// Longest verifier RFC 7636 allows.
const MAX_VERIFIER_LEN: usize = 128;

/// The S256 challenge of `verifier`: the unpadded base64url encoding of its SHA-256 digest.
/// `None` for a verifier RFC 7636 section 4.1 does not allow: fewer than 43 or more than 128
/// characters, or any outside the unreserved set `A-Z a-z 0-9 - . _ ~`.
pub(crate) fn s256_challenge(verifier: &str) -> Option<String> {
    let allowed = (MIN_VERIFIER_LEN..=MAX_VERIFIER_LEN).contains(&verifier.len())
        && verifier.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
    allowed.then(|| URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_7636_appendix_b() {
        assert_eq!(
            s256_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk").as_deref(),
            Some("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
        );
    }

    #[test]
    fn verifier_rules() {
        for good in ["a".repeat(43), "Z".repeat(128), format!("{}-._~", "0".repeat(40))] {
            let challenge = s256_challenge(&good).unwrap_or_else(|| panic!("{good}"));
            assert_eq!(challenge.len(), 43);
            assert!(challenge.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        }
        for bad in [
            "a".repeat(42),
            "a".repeat(129),
            format!("{}+", "a".repeat(42)),
            format!("{} ", "a".repeat(42)),
            format!("{}é", "a".repeat(41)),
        ] {
            assert_eq!(s256_challenge(&bad), None, "{bad}");
        }
    }
}
