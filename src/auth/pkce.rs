//! PKCE (RFC 7636, API Part 5.2), random `state` and `nonce` values, and constant-time
//! comparison.

use oauth2::CsrfToken;

/// Random bytes behind a generated verifier (`oauth2`'s, from the operating system's CSPRNG
/// through `rand`'s `ThreadRng`): 48 bytes are 64 base64url characters, well inside the 43 to
/// 128 the API allows.
pub(crate) const VERIFIER_BYTES: u32 = 48;
/// Random bytes behind `state` and `nonce`: 256 bits, twice the 128 the design asks for.
const STATE_BYTES: u32 = 32;

/// Shortest verifier RFC 7636 allows.
#[cfg(test)]
pub(crate) const MIN_VERIFIER_LEN: usize = 43;
/// Longest verifier RFC 7636 allows.
#[cfg(test)]
pub(crate) const MAX_VERIFIER_LEN: usize = 128;

/// True when `verifier` has 43 to 128 characters of the unreserved set
/// (`A-Z a-z 0-9 - . _ ~`, RFC 7636 section 4.1).
#[cfg(test)]
pub(crate) fn is_valid_verifier(verifier: &str) -> bool {
    (MIN_VERIFIER_LEN..=MAX_VERIFIER_LEN).contains(&verifier.len())
        && verifier.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// The S256 challenge of `verifier`: base64url (no padding) of its SHA-256 digest. `None` for a
/// verifier RFC 7636 does not allow (checked first: `oauth2` panics on a bad length).
#[cfg(test)]
pub(crate) fn s256_challenge(verifier: &str) -> Option<String> {
    if !is_valid_verifier(verifier) {
        return None;
    }
    let verifier = oauth2::PkceCodeVerifier::new(verifier.to_owned());
    Some(oauth2::PkceCodeChallenge::from_code_verifier_sha256(&verifier).as_str().to_owned())
}

/// A random value for `state` or `nonce`: 256 bits from the CSPRNG, base64url.
pub(crate) fn random_value() -> String {
    CsrfToken::new_random_len(STATE_BYTES).into_secret()
}

/// Compares two byte strings in time that depends on their lengths only, not on where they
/// differ (aws-lc's constant-time comparison).
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    aws_lc_rs::constant_time::verify_slices_are_equal(a, b).is_ok()
}

#[cfg(test)]
mod tests {
    use oauth2::PkceCodeChallenge;

    use super::*;

    #[test]
    fn generated_verifiers_are_long_unreserved_and_distinct() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..200 {
            let (challenge, verifier) = PkceCodeChallenge::new_random_sha256_len(VERIFIER_BYTES);
            let verifier = verifier.secret();
            assert!(is_valid_verifier(verifier), "{} characters", verifier.len());
            assert_eq!(verifier.len(), 64);
            assert!(verifier.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
            assert_eq!(challenge.method().as_str(), "S256");
            assert_eq!(s256_challenge(verifier).as_deref(), Some(challenge.as_str()));
            assert!(seen.insert(verifier.to_owned()), "a verifier repeated");
        }
    }

    #[test]
    fn s256_matches_rfc_7636_appendix_b() {
        assert_eq!(
            s256_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk").as_deref(),
            Some("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
        );
    }

    #[test]
    fn verifier_length_and_charset_rules() {
        assert!(is_valid_verifier(&"a".repeat(43)));
        assert!(is_valid_verifier(&"~._-".repeat(32)));
        assert!(!is_valid_verifier(&"a".repeat(42)));
        assert!(!is_valid_verifier(&"a".repeat(129)));
        assert!(!is_valid_verifier(&format!("{}+", "a".repeat(43))));
        assert!(!is_valid_verifier(&format!("{} ", "a".repeat(43))));
        assert!(!is_valid_verifier(&format!("{}é", "a".repeat(42))));
        // Out-of-range input is refused instead of reaching `oauth2`'s assertion.
        assert_eq!(s256_challenge(""), None);
        assert_eq!(s256_challenge(&"a".repeat(200)), None);
    }

    #[test]
    fn state_values_carry_256_bits() {
        let a = random_value();
        let b = random_value();
        assert_eq!(a.len(), 43);
        assert_ne!(a, b);
    }

    #[test]
    fn constant_time_comparison() {
        assert!(constant_time_eq(b"state-value", b"state-value"));
        assert!(!constant_time_eq(b"state-value", b"state-valuf"));
        assert!(!constant_time_eq(b"state-value", b"Xtate-value"));
        assert!(!constant_time_eq(b"state", b"state-value"));
        assert!(constant_time_eq(b"", b""));
    }
}
