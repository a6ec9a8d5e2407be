//! The verifier's key cache: the JWKS as last fetched, fetched again once it is older than the
//! maximum age or when a token names a key id it lacks, and after a failed fetch tried again
//! with exponential backoff.
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
//! - After a failed fetch, the next one waits `initial * 2^(n-1)` (capped), drawn between half
//!   and all of it; verifications that need keys meanwhile fail at once with the last error.

use std::future::Future;
use std::sync::{Arc, RwLock, RwLockReadGuard};
use std::time::Duration;

use jsonwebtoken::DecodingKey;
use tokio::time::Instant;

use super::VerifyError;
use super::jwks::{Jwks, missing_key};
use crate::RetryPolicy;
use crate::error::Error;

/// When keys are fetched again.
#[derive(Debug, Clone)]
pub(super) struct FetchPolicy {
    /// Keys older than this are fetched again.
    pub(super) max_age: Duration,
    /// Least time between two fetches for key ids the young keys lack.
    pub(super) refetch_interval: Duration,
    /// Backoff after failed fetches (its initial and maximum delay; it never gives up).
    pub(super) backoff: RetryPolicy,
}

/// The cached keys, when they were fetched (`None` for a fixed set, which never ages, or before
/// the first fetch), and how many fetches brought keys.
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
    /// Failed fetches in a row.
    failures: u32,
    /// No fetch before this instant (after a failure).
    retry_at: Option<Instant>,
    /// Why the last fetch failed.
    last_error: Option<Error>,
    /// The coming backoffs, from the policy's schedule.
    backoff: Option<Box<dyn Iterator<Item = Duration> + Send + Sync>>,
}

/// The keys of a verifier, shared by its clones.
pub(super) struct KeyCache {
    keys: RwLock<KeySet>,
    fetch: tokio::sync::Mutex<FetchState>,
}

impl KeyCache {
    /// A cache holding `jwks`, which never age.
    pub(super) fn new(jwks: Jwks) -> Self {
        KeyCache {
            keys: RwLock::new(KeySet { jwks, fetched_at: None, generation: 0 }),
            fetch: tokio::sync::Mutex::new(FetchState::default()),
        }
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
        self.keys.try_read().map(|k| k.jwks.len()).ok()
    }

    /// The key for `kid` if the keys are younger than `max_age`; `None` when they are older or
    /// hold no such key.
    fn fresh(&self, kid: Option<&str>, max_age: Duration) -> Option<Result<Arc<DecodingKey>, VerifyError>> {
        let set = self.read();
        if set.fetched_at.is_some_and(|at| at.elapsed() >= max_age) {
            return None;
        }
        set.jwks.select(kid).transpose()
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
        if let Some(found) = self.fresh(kid, policy.max_age) {
            return found;
        }
        let (stale, seen) = {
            let set = self.read();
            (set.jwks.select(kid).ok().flatten(), set.generation)
        };
        let mut fetch = match &stale {
            // Another task is refetching: the cached key serves meanwhile.
            Some(key) => match self.fetch.try_lock() {
                Ok(fetch) => fetch,
                Err(_) => return Ok(Arc::clone(key)),
            },
            None => self.fetch.lock().await,
        };
        if let Some(found) = self.fresh(kid, policy.max_age) {
            return found;
        }
        // Single flight: keys fetched while this caller waited are the newest there are.
        if self.read().generation != seen {
            return self.cached(kid);
        }
        let now = Instant::now();
        if let (Some(at), Some(last)) = (fetch.retry_at, &fetch.last_error)
            && now < at
        {
            return stale.ok_or_else(|| VerifyError::Jwks(last.clone()));
        }
        let young = self.read().fetched_at.is_some_and(|at| now.duration_since(at) < policy.max_age);
        if young {
            // The token names a key the young keys lack: a rotation, or a made-up id.
            if fetch.last_refetch.is_some_and(|at| now.duration_since(at) < policy.refetch_interval) {
                return Err(missing_key(kid));
            }
            fetch.last_refetch = Some(now);
        }
        match fetch_jwks().await {
            Ok(jwks) => {
                *fetch = FetchState { last_refetch: fetch.last_refetch, ..FetchState::default() };
                {
                    let mut set = self.keys.write().unwrap_or_else(|e| e.into_inner());
                    set.jwks = jwks;
                    set.fetched_at = Some(Instant::now());
                    set.generation = set.generation.wrapping_add(1);
                }
                drop(fetch);
                self.cached(kid)
            }
            Err(err) => {
                let delay = fetch.failed(&err, &policy.backoff);
                tracing::warn!(
                    error = %err,
                    failures = fetch.failures,
                    retry_in_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                    "jwks fetch failed"
                );
                match stale {
                    // Nothing shows the key was withdrawn: it stays in use until a fetch succeeds.
                    Some(key) => Ok(key),
                    None => Err(VerifyError::Jwks(err)),
                }
            }
        }
    }
}

impl FetchState {
    /// Records a failed fetch; returns the wait before the next one.
    fn failed(&mut self, err: &Error, backoff: &RetryPolicy) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let delay = self
            .backoff
            .get_or_insert_with(|| Box::new(backoff.backoff()))
            .next()
            .unwrap_or_else(|| backoff.longest_delay());
        self.retry_at = Instant::now().checked_add(delay);
        self.last_error = Some(err.clone());
        delay
    }
}

#[cfg(test)]
mod tests;
