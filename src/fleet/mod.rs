//! What processes share through Redis (feature `redis`), below the layers that use it: the
//! connection every command goes through, the fleet's request budget, and the hashed key names.
//! The token cache (`auth::redis`) and the pacer both use it.

#[cfg(feature = "redis")]
mod budget;
#[cfg(feature = "redis")]
mod connection;

#[cfg(feature = "redis")]
use std::sync::Arc;

use aws_lc_rs::digest;

#[cfg(feature = "redis")]
pub(crate) use budget::SharedBudget;
#[cfg(feature = "redis")]
pub(crate) use connection::Redis;

/// What a fleet's budget answered for a slot (`SharedBudget::take`): the pacer applies it
/// without Redis in its tests.
#[cfg(any(feature = "redis", test))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Ask again after `wait`, the rest of a pause of the fleet when `paused`; a `wait` of zero:
    /// the slot is taken, the request goes.
    Wait { wait: std::time::Duration, paused: bool },
    /// Redis did not answer: pace this process at its share of the rate, `1 / processes`.
    Down { processes: u32 },
}

/// A Redis and the prefix of its keys, as a `RedisTokenCache` holds them: where a shared budget
/// lives.
#[cfg(feature = "redis")]
#[derive(Debug, Clone)]
pub(crate) struct Store {
    pub(crate) redis: Arc<Redis>,
    pub(crate) prefix: Arc<str>,
}

/// The crate's one hash of identifiers: the hex of SHA-256 over `key_id` and `parts`, each part
/// length-prefixed so that no two lists of parts hash alike. Nothing in it can be read back.
/// Redis key names keep its first 40 digits; a directory store's file names its first 32.
pub(crate) fn key_hash(key_id: &[u8], parts: &[&str]) -> String {
    let mut hash = digest::Context::new(&digest::SHA256);
    hash.update(key_id);
    for part in parts {
        hash.update(&(part.len() as u64).to_be_bytes());
        hash.update(part.as_bytes());
    }
    hash.finish().as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// `{prefix}:{kind}:{hex}`, where `hex` is the [`key_hash`] of `key_id` and `parts`. With an
/// empty `key_id`, every process that knows the parts names the same entry (a rate limit
/// shared by whoever uses the same API and client id).
#[cfg_attr(not(feature = "redis"), allow(dead_code))]
pub(crate) fn key_name(prefix: &str, kind: &str, key_id: &[u8], parts: &[&str]) -> String {
    format!("{prefix}:{kind}:{}", &key_hash(key_id, parts)[..40])
}
