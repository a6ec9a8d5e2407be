//! Sealed values: AES-256-GCM under a key derived with HKDF-SHA256 from a secret every process
//! already has, bound to what the value is for (additional data). What reaches Redis is sealed
//! this way, and key names there are hashes of the identifiers; so are the pending sign-ins a
//! web app keeps in a cookie.

use std::fmt;

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use aws_lc_rs::hkdf;

use crate::Error;

/// Format version of a sealed value (its first byte).
const VERSION: u8 = 1;
/// HKDF salt: fixed, so that every process derives the same key from the same secret. (Keys
/// for different uses differ by their `purpose`.)
const SALT: &[u8] = b"business-records redis token cache v1";
/// Length of the key id that separates entries sealed under different secrets.
const KEY_ID_LEN: usize = 16;
/// The shortest secret an application may give for sealing or keying
/// ([`AuthorizationCodeFlow::sealing_secret`](super::AuthorizationCodeFlow::sealing_secret),
/// `RedisTokenCache::user_secret`): as many bytes as the 256-bit key derived from it.
pub(crate) const MIN_SECRET_BYTES: usize = 32;

/// A sealing key and the id that goes into key names (the first [`KEY_ID_LEN`] bytes: an
/// HKDF output's prefix is the same whatever length is asked of it).
pub(crate) struct Sealer {
    key: LessSafeKey,
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    key_id: [u8; 32],
}

impl fmt::Debug for Sealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Sealer([redacted])")
    }
}

impl Sealer {
    /// Derives the key for `purpose` from `secret`. `None` only if the crypto library refuses
    /// the lengths, which it does not for these constants.
    pub(crate) fn derive(secret: &[u8], purpose: &str) -> Option<Self> {
        let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, SALT).extract(secret);
        let key: UnboundKey = prk.expand(&[b"aead ", purpose.as_bytes()], &AES_256_GCM).ok()?.into();
        let mut key_id = [0u8; 32];
        prk.expand(&[b"key id ", purpose.as_bytes()], hkdf::HKDF_SHA256).ok()?.fill(&mut key_id).ok()?;
        Some(Sealer { key: LessSafeKey::new(key), key_id })
    }

    /// [`derive`](Self::derive) from a secret the application gave as `argument`, refused
    /// (naming it) when shorter than [`MIN_SECRET_BYTES`].
    pub(crate) fn from_secret(argument: &'static str, secret: &[u8], purpose: &str) -> Result<Self, Error> {
        if secret.len() < MIN_SECRET_BYTES {
            let message = format!(
                "expected at least {MIN_SECRET_BYTES} bytes (a random key, such as 32 random bytes in base64), got {}",
                secret.len()
            );
            return Err(Error::invalid(argument, message));
        }
        Self::derive(secret, purpose)
            .ok_or_else(|| Error::invalid(argument, "the sealing key cannot be derived"))
    }

    /// `{prefix}:{kind}:{hex}`, where `hex` hashes the key id and `parts`: nothing in it can be
    /// read back, and processes with different secrets never share an entry.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn key_name(&self, prefix: &str, kind: &str, parts: &[&str]) -> String {
        crate::fleet::key_name(prefix, kind, &self.key_id[..KEY_ID_LEN], parts)
    }

    /// `VERSION || nonce || ciphertext || tag`, bound to `aad` (the Redis key).
    pub(crate) fn seal(&self, aad: &str, plaintext: &[u8]) -> Option<Vec<u8>> {
        let nonce: [u8; NONCE_LEN] = random_bytes()?;
        let mut body = plaintext.to_vec();
        let aad = Aad::from(aad.as_bytes());
        self.key.seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), aad, &mut body).ok()?;
        Some([&[VERSION][..], &nonce, &body].concat())
    }

    /// The plaintext, or `None` when `sealed` was not sealed under this key for `aad` (another
    /// secret, another key, or tampered with).
    pub(crate) fn open(&self, aad: &str, sealed: &[u8]) -> Option<Vec<u8>> {
        let (nonce, body) = sealed.strip_prefix(&[VERSION])?.split_at_checked(NONCE_LEN)?;
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut body = body.to_vec();
        let plaintext = self.key.open_in_place(nonce, Aad::from(aad.as_bytes()), &mut body).ok()?;
        Some(plaintext.to_vec())
    }
}

/// `N` bytes from the operating system's CSPRNG.
pub(crate) fn random_bytes<const N: usize>() -> Option<[u8; N]> {
    let mut bytes = [0u8; N];
    getrandom::getrandom(&mut bytes).ok()?;
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_values_open_only_with_the_same_secret_and_key() {
        let sealer = Sealer::derive(b"client secret", "client credentials").expect("derive");
        let sealed = sealer.seal("k1", b"token value").expect("seal");
        assert!(!sealed.windows(5).any(|w| w == b"token"), "the token is not readable at rest");
        assert_eq!(sealer.open("k1", &sealed).as_deref(), Some(&b"token value"[..]));
        assert_eq!(sealer.open("k2", &sealed), None, "bound to its key");
        let other = Sealer::derive(b"another secret", "client credentials").expect("derive");
        assert_eq!(other.open("k1", &sealed), None);
        let mut tampered = sealed.clone();
        let last = tampered.len() - 1;
        tampered[last] ^= 1;
        assert_eq!(sealer.open("k1", &tampered), None);
    }

    #[test]
    fn a_secret_shorter_than_32_bytes_is_refused_naming_its_argument() {
        for short in [&b""[..], b"x", &[7u8; 31]] {
            match Sealer::from_secret("user_secret", short, "user") {
                Err(Error::InvalidArgument(e)) => {
                    assert_eq!(e.argument(), "user_secret");
                    assert!(e.message().starts_with("expected at least 32 bytes"), "{e}");
                    assert!(e.message().ends_with(&format!("got {}", short.len())), "{e}");
                }
                other => panic!("expected a refusal, got {other:?}"),
            }
        }
        assert!(Sealer::from_secret("user_secret", &[7u8; 32], "user").is_ok());
    }

    #[test]
    fn key_ids_are_what_a_16_byte_hkdf_output_was() {
        // Redis key names made before the key id was cut from a longer output stay the same.
        struct Len(usize);
        impl hkdf::KeyType for Len {
            fn len(&self) -> usize {
                self.0
            }
        }
        let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, SALT).extract(b"secret");
        let mut short = [0u8; KEY_ID_LEN];
        prk.expand(&[b"key id ", b"user"], Len(KEY_ID_LEN)).unwrap().fill(&mut short).unwrap();
        assert_eq!(Sealer::derive(b"secret", "user").expect("derive").key_id[..KEY_ID_LEN], short);
    }

    #[test]
    fn key_names_hash_identifiers_and_differ_by_secret() {
        let a = Sealer::derive(b"secret-a", "user").expect("derive");
        let b = Sealer::derive(b"secret-b", "user").expect("derive");
        let name = a.key_name("app", "user", &["user-42"]);
        assert!(name.starts_with("app:user:"));
        assert!(!name.contains("user-42") && !name.contains("secret"));
        assert_eq!(name, a.key_name("app", "user", &["user-42"]));
        assert_ne!(name, b.key_name("app", "user", &["user-42"]));
        assert_ne!(a.key_name("app", "cc", &["ab", "c"]), a.key_name("app", "cc", &["a", "bc"]));
    }
}
