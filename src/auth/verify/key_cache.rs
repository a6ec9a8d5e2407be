//! The verifier's keys: the signature keys of the JWKS as last fetched, fetched again once they
//! are older than the maximum age or when a token names a key id they lack, and after a failed
//! fetch tried again with exponential backoff.
//!
//! A key verifies RS256 signatures when it is an RSA key whose `use` (if any) is `sig`, whose
//! `key_ops` (if any) include `verify`, and whose `alg` (if any) is `RS256`; every other key is
//! left out, so an encryption key or a key registered for another algorithm never verifies a
//! signature. Keys without `kid` are kept: a token without `kid` is verified with the set's one
//! signing key, and refused when the set holds several (OpenID Connect Core section 10.1).
//!
//! Rules, each one a test:
//! - A key younger than the maximum age is used without I/O.
//! - One fetch at a time (single flight): callers that need keys while a fetch runs wait for
//!   it and take its answer, so a burst of tokens costs one fetch.
//! - A key id the young keys lack (a rotation) fetches the JWKS again at once, unless another
//!   such refetch happened less than the refetch interval ago: a flood of made-up key ids costs
//!   at most one fetch per interval, while a sign-in right after a rotation finds its key. The
//!   first fetch and fetches of keys past their maximum age are not refetches.
//! - Keys older than the maximum age are fetched again; a key the new document no longer
//!   publishes is no longer trusted. While one task refetches, others keep using the cached
//!   key instead of waiting. When the refetch fails, the cached keys stay in use (nothing
//!   shows they were withdrawn) and the fetch is tried again after the backoff.
//! - After a failed fetch, the next one waits for the crate's jittered backoff (a ceiling from
//!   `initial` doubling up to `max`); verifications that need keys meanwhile fail at once with
//!   the last error.

use std::fmt;
use std::future::Future;
use std::sync::{Arc, RwLock, RwLockReadGuard};
use std::time::Duration;

use jsonwebtoken::DecodingKey;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, KeyAlgorithm, KeyOperations, PublicKeyUse};
use serde::Deserialize;
use serde_json::Value;
use tokio::time::Instant;

use super::VerifyError;
use crate::error::Error;
use crate::retry::Failures;
use crate::text::quoted;

/// The RS256 signature keys of a JWKS document, with their `kid`.
#[derive(Clone, Default)]
pub(super) struct Jwks(Vec<(Option<String>, Arc<DecodingKey>)>);

impl Jwks {
    /// Reads a JWKS document, keeping the keys that verify RS256 signatures (see the module docs).
    pub(super) fn parse(json: &[u8]) -> Result<Self, serde_json::Error> {
        #[derive(Deserialize)]
        struct Document {
            keys: Vec<Value>,
        }
        let mut jwks = Jwks::default();
        for jwk in serde_json::from_slice::<Document>(json)?.keys {
            let Ok(Jwk { common, algorithm: AlgorithmParameters::RSA(rsa) }) = serde_json::from_value(jwk)
            else {
                continue;
            };
            let verifies = common.public_key_use.is_none_or(|u| u == PublicKeyUse::Signature)
                && common.key_operations.is_none_or(|ops| ops.contains(&KeyOperations::Verify))
                && common.key_algorithm.is_none_or(|alg| alg == KeyAlgorithm::RS256);
            if let (true, Ok(key)) = (verifies, DecodingKey::from_rsa_components(&rsa.n, &rsa.e)) {
                jwks.0.push((common.key_id.filter(|kid| !kid.is_empty()), Arc::new(key)));
            }
        }
        Ok(jwks)
    }

    /// The key for a token whose header names `kid`: that key, or for a token without `kid`
    /// the set's only key. `Ok(None)` when no key has that id (or the set is empty);
    /// [`VerifyError::MissingKeyId`] when a token without `kid` could match several keys.
    fn select(&self, kid: Option<&str>) -> Result<Option<Arc<DecodingKey>>, VerifyError> {
        let mut matching = self.0.iter().filter(|(id, _)| kid.is_none() || id.as_deref() == kid);
        match (matching.next(), matching.next()) {
            (Some(_), Some(_)) if kid.is_none() => Err(VerifyError::MissingKeyId),
            (found, _) => Ok(found.map(|(_, key)| Arc::clone(key))),
        }
    }

    /// [`select`](Self::select), with a missing key as an error.
    fn require(&self, kid: Option<&str>) -> Result<Arc<DecodingKey>, VerifyError> {
        self.select(kid)?.ok_or_else(|| match kid {
            Some(kid) => VerifyError::UnknownKey { kid: quoted(kid) },
            None => VerifyError::MissingKeyId,
        })
    }
}

/// When keys are fetched again.
#[derive(Debug, Clone)]
pub(super) struct FetchPolicy {
    /// Keys older than this are fetched again.
    pub(super) max_age: Duration,
    /// Least time between two fetches for key ids the young keys lack.
    pub(super) refetch_interval: Duration,
    /// The first and the largest backoff after failed fetches (it never gives up).
    pub(super) backoff: (Duration, Duration),
}

/// The cached keys, when they were fetched (`None` for a fixed set, which never ages, or before
/// the first fetch), and how many fetches brought keys.
#[derive(Default)]
struct KeySet {
    jwks: Jwks,
    fetched_at: Option<Instant>,
    generation: u64,
}

/// The fetch side: one fetch at a time, the last refetch, and the backoff after failures.
#[derive(Default)]
struct FetchState {
    /// When a key id the young keys lacked last made a fetch.
    last_refetch: Option<Instant>,
    /// The fetches that failed since the last success.
    failures: Failures,
}

/// The keys of a verifier, shared by its clones.
pub(super) struct KeyCache {
    keys: RwLock<KeySet>,
    fetch: tokio::sync::Mutex<FetchState>,
}

impl fmt::Debug for KeyCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyCache").field("keys", &self.len()).finish_non_exhaustive()
    }
}

impl KeyCache {
    /// A cache holding `jwks`, which never age.
    pub(super) fn new(jwks: Jwks) -> Self {
        let keys = RwLock::new(KeySet { jwks, ..KeySet::default() });
        KeyCache { keys, fetch: tokio::sync::Mutex::default() }
    }

    fn read(&self) -> RwLockReadGuard<'_, KeySet> {
        self.keys.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The cached key for `kid` (see [`Jwks::select`]), whatever its age.
    pub(super) fn cached(&self, kid: Option<&str>) -> Result<Arc<DecodingKey>, VerifyError> {
        self.read().jwks.require(kid)
    }

    /// Number of cached keys, if the cache is not being written.
    pub(super) fn len(&self) -> Option<usize> {
        self.keys.try_read().map(|k| k.jwks.0.len()).ok()
    }

    /// The key for `kid`, calling `fetch_jwks` when the rules above say so.
    pub(super) async fn key<F, Fut>(
        &self,
        kid: Option<&str>,
        policy: &FetchPolicy,
        fetch_jwks: F,
    ) -> Result<Arc<DecodingKey>, VerifyError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Jwks, Error>>,
    {
        let (stale, seen) = {
            let set = self.read();
            let fresh = set.fetched_at.is_none_or(|at| at.elapsed() < policy.max_age);
            match set.jwks.select(kid) {
                Ok(Some(key)) if fresh => return Ok(key),
                Err(error) if fresh => return Err(error),
                found => (found.ok().flatten(), set.generation),
            }
        };
        let mut fetch = match (&stale, self.fetch.try_lock()) {
            (_, Ok(fetch)) => fetch,
            // Another task is refetching: the cached key serves meanwhile.
            (Some(key), Err(_)) => return Ok(Arc::clone(key)),
            (None, Err(_)) => self.fetch.lock().await,
        };
        let now = Instant::now();
        let young = {
            let set = self.read();
            // Single flight: keys fetched while this caller waited are the newest there are.
            if set.generation != seen {
                return set.jwks.require(kid);
            }
            set.fetched_at.is_some_and(|at| now.duration_since(at) < policy.max_age)
        };
        if let Some(error) = fetch.failures.pending(now) {
            return stale.ok_or_else(|| VerifyError::Jwks(error.clone()));
        }
        if young {
            // The token names a key the young keys lack: a rotation, or a made-up id.
            if fetch.last_refetch.is_some_and(|at| now.duration_since(at) < policy.refetch_interval) {
                return self.cached(kid);
            }
            fetch.last_refetch = Some(now);
        }
        match fetch_jwks().await {
            Ok(jwks) => {
                fetch.failures = Failures::default();
                let mut set = self.keys.write().unwrap_or_else(|e| e.into_inner());
                let generation = set.generation.wrapping_add(1);
                *set = KeySet { jwks, fetched_at: Some(Instant::now()), generation };
                set.jwks.require(kid)
            }
            Err(error) => {
                fetch.failures.record("jwks fetch", &error, policy.backoff, Duration::ZERO);
                // Nothing shows a cached key was withdrawn: it stays in use until a fetch succeeds.
                stale.ok_or(VerifyError::Jwks(error))
            }
        }
    }
}

#[cfg(test)]
mod tests;
