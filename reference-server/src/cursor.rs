//! Opaque, tamper-evident, query-bound, expiring pagination cursors.
//!
//! A cursor is the unpadded base64url encoding of
//!
//! ```text
//! version (1) | offset (8, BE) | issued at, Unix ms (8, BE) | serial (4, BE) | query digest (8) | tag (16)
//! ```
//!
//! where the serial counts the cursors this codec issued, so that two cursors
//! are never equal, not even for the same position in the same millisecond
//! (an empty page points at the position it was asked for, and clients treat
//! a repeated cursor as an error),
//! the query digest is the first 8 bytes of SHA-256 over the query
//! binding (version, endpoint, sort, filters; not the limit, which may change between
//! pages) and the tag is HMAC-SHA256 over everything before it, truncated to
//! 128 bits, under a key chosen at random when the server starts.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

const VERSION: u8 = 2;
const BODY_LEN: usize = 1 + 8 + 8 + 4 + 8;
/// Where the query digest starts.
const DIGEST_AT: usize = 1 + 8 + 8 + 4;
const TAG_LEN: usize = 16;
const CURSOR_LEN: usize = BODY_LEN + TAG_LEN;
/// Longest cursor text looked at; longer ones are rejected unparsed.
const MAX_CURSOR_CHARS: usize = 128;

/// Why a cursor was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CursorError {
    /// Not a cursor of this server: malformed, tampered with, or issued for
    /// another query. The text explains which.
    Invalid(&'static str),
    /// Genuine and for this query, but older than the cursor TTL.
    Expired,
}

/// Issues and checks cursors.
pub(crate) struct CursorCodec {
    key: [u8; 32],
    ttl: Duration,
    serial: AtomicU32,
    /// Cursors of a lower serial are expired.
    expired_below: AtomicU32,
}

impl std::fmt::Debug for CursorCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CursorCodec").field("key", &"[redacted]").field("ttl", &self.ttl).finish()
    }
}

impl CursorCodec {
    pub(crate) fn new(key: [u8; 32], ttl: Duration) -> Self {
        Self { key, ttl, serial: AtomicU32::new(0), expired_below: AtomicU32::new(0) }
    }

    /// Expires every cursor issued so far.
    pub(crate) fn expire_all(&self) {
        self.expired_below.store(self.serial.load(Ordering::SeqCst), Ordering::SeqCst);
    }

    fn mac(&self) -> HmacSha256 {
        // HMAC accepts keys of any length, so this cannot fail.
        match <HmacSha256 as Mac>::new_from_slice(&self.key) {
            Ok(mac) => mac,
            Err(_) => unreachable!("hmac accepts keys of any length"),
        }
    }

    /// A cursor pointing at `offset` within the results of the query
    /// described by `binding`, issued at `now_ms`.
    pub(crate) fn encode(&self, offset: u64, binding: &str, now_ms: u64) -> String {
        let mut bytes = Vec::with_capacity(CURSOR_LEN);
        bytes.push(VERSION);
        bytes.extend_from_slice(&offset.to_be_bytes());
        bytes.extend_from_slice(&now_ms.to_be_bytes());
        bytes.extend_from_slice(&self.serial.fetch_add(1, Ordering::Relaxed).to_be_bytes());
        bytes.extend_from_slice(&digest(binding));
        let mut mac = self.mac();
        mac.update(&bytes);
        let tag = mac.finalize().into_bytes();
        bytes.extend_from_slice(&tag[..TAG_LEN]);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// The offset a cursor points at, if it is genuine, was issued for the
    /// query described by `binding`, and is not older than the TTL at `now_ms`.
    pub(crate) fn decode(&self, cursor: &str, binding: &str, now_ms: u64) -> Result<u64, CursorError> {
        if cursor.is_empty() || cursor.len() > MAX_CURSOR_CHARS {
            return Err(CursorError::Invalid("cursor is malformed"));
        }
        let bytes =
            URL_SAFE_NO_PAD.decode(cursor).map_err(|_| CursorError::Invalid("cursor is malformed"))?;
        if bytes.len() != CURSOR_LEN || bytes[0] != VERSION {
            return Err(CursorError::Invalid("cursor is malformed"));
        }
        let (body, tag) = bytes.split_at(BODY_LEN);
        let mut mac = self.mac();
        mac.update(body);
        mac.verify_truncated_left(tag)
            .map_err(|_| CursorError::Invalid("cursor is not valid for this server"))?;
        if body[DIGEST_AT..] != digest(binding) {
            return Err(CursorError::Invalid(
                "cursor was issued for a different query; restart without a cursor after changing sort or filters",
            ));
        }
        let offset = u64::from_be_bytes(be8(&body[1..9]));
        let issued_ms = u64::from_be_bytes(be8(&body[9..17]));
        let serial = u32::from_be_bytes([body[17], body[18], body[19], body[20]]);
        let ttl_ms = u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX);
        if now_ms.saturating_sub(issued_ms) > ttl_ms || serial < self.expired_below.load(Ordering::SeqCst) {
            return Err(CursorError::Expired);
        }
        Ok(offset)
    }
}

fn be8(slice: &[u8]) -> [u8; 8] {
    let mut out = [0u8; 8];
    out.copy_from_slice(&slice[..8]);
    out
}

fn digest(binding: &str) -> [u8; 8] {
    let hash = Sha256::digest(binding.as_bytes());
    be8(&hash[..8])
}

#[cfg(test)]
mod tests {
    use super::*;

    const BINDING: &str = r#"["companies","-createdAt","active"]"#;

    fn codec() -> CursorCodec {
        CursorCodec::new([7; 32], Duration::from_secs(600))
    }

    #[test]
    fn round_trip() {
        let c = codec();
        let cursor = c.encode(300, BINDING, 1_000);
        assert!(cursor.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert_eq!(c.decode(&cursor, BINDING, 1_000), Ok(300));
        assert_eq!(c.decode(&cursor, BINDING, 601_000), Ok(300));
    }

    #[test]
    fn cursors_for_the_same_position_differ() {
        let c = codec();
        assert_ne!(c.encode(5, BINDING, 1_000), c.encode(5, BINDING, 1_000));
    }

    #[test]
    fn expiry() {
        let c = codec();
        let cursor = c.encode(5, BINDING, 1_000);
        assert_eq!(c.decode(&cursor, BINDING, 601_001), Err(CursorError::Expired));
        let short = CursorCodec::new([7; 32], Duration::from_millis(1));
        let cursor = short.encode(5, BINDING, 1_000);
        assert_eq!(short.decode(&cursor, BINDING, 1_002), Err(CursorError::Expired));
        // On demand: every cursor issued so far, none issued afterwards.
        let old = c.encode(6, BINDING, 1_000);
        c.expire_all();
        let new = c.encode(7, BINDING, 1_000);
        assert_eq!(c.decode(&old, BINDING, 1_000), Err(CursorError::Expired));
        assert_eq!(c.decode(&new, BINDING, 1_000), Ok(7));
    }

    #[test]
    fn bound_to_the_query() {
        let c = codec();
        let cursor = c.encode(5, BINDING, 1_000);
        for other in [
            r#"["companies","createdAt","active"]"#,
            r#"["companies","-createdAt",null]"#,
            r#"["contacts","-createdAt","active"]"#,
        ] {
            assert!(
                matches!(c.decode(&cursor, other, 1_000), Err(CursorError::Invalid(m)) if m.contains("different query"))
            );
        }
    }

    #[test]
    fn tampering_and_garbage_are_rejected() {
        let c = codec();
        let cursor = c.encode(5, BINDING, 1_000);
        let mut bytes = URL_SAFE_NO_PAD.decode(&cursor).unwrap();
        for i in 0..bytes.len() {
            bytes[i] ^= 1;
            let forged = URL_SAFE_NO_PAD.encode(&bytes);
            assert!(matches!(c.decode(&forged, BINDING, 1_000), Err(CursorError::Invalid(_))), "byte {i}");
            bytes[i] ^= 1;
        }
        let other_key = CursorCodec::new([8; 32], Duration::from_secs(600));
        assert!(matches!(other_key.decode(&cursor, BINDING, 1_000), Err(CursorError::Invalid(_))));
        for garbage in
            ["", "abc", "!!!!", &"A".repeat(500), &cursor[..cursor.len() - 1], &format!("{cursor}A")]
        {
            assert!(matches!(c.decode(garbage, BINDING, 1_000), Err(CursorError::Invalid(_))), "{garbage}");
        }
        assert!(!format!("{c:?}").contains("7, 7"));
    }
}
