//! Random values the server hands out (authorization codes, refresh tokens, the fault proxy's
//! replay secret) and the comparison of secrets it is sent.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// 256 bits from the thread's CSPRNG (`rand`'s `ThreadRng`, seeded by the operating system),
/// unpadded base64url: 43 characters.
pub(crate) fn random_value() -> String {
    URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>())
}

/// Whether `a` and `b` are equal, in time that depends on their lengths only, not on where
/// they differ.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |differ, (x, y)| differ | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_values_are_long_url_safe_and_distinct() {
        let values: std::collections::HashSet<String> = (0..100).map(|_| random_value()).collect();
        assert_eq!(values.len(), 100);
        for value in &values {
            assert_eq!(value.len(), 43);
            assert!(value.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "{value}");
        }
    }

    #[test]
    fn comparison() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(constant_time_eq(b"", b""));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secrets"));
        assert!(!constant_time_eq(b"", b"x"));
    }
}
