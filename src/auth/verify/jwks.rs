//! The verifier's key cache: the JWKS, fetched through the crate's one HTTP door
//! ([`HttpSender`]), fetched again once it is older than the maximum age, and after a failed
//! fetch tried again with exponential backoff.
//!
//! Rules, each one a test:
//! - A key younger than the maximum age is used without I/O.
//! - An unknown `kid` fetches the JWKS, at most once per refetch interval after a successful
//!   fetch, so tokens with made-up key ids cannot flood the authorization server.
//! - Keys older than the maximum age are fetched again; a key the new document no longer
//!   publishes is no longer trusted. While one task refetches, others keep using the cached
//!   key instead of waiting. When the refetch fails, the cached keys stay in use (nothing
//!   shows they were withdrawn) and the fetch is tried again after the backoff.
//! - After a failed fetch, the next one waits `initial * 2^(n-1)` (capped), drawn between half
//!   and all of it; verifications that need keys meanwhile fail at once with the last error.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::DecodingKey;
use serde::Deserialize;
use serde_json::Value;

use super::{VerifyError, unknown_key};
use crate::RetryPolicy;
use crate::error::{ApiError, DecodeError, Error};
use crate::limits::BodyKind;
use crate::wire::HttpSender;

/// Keys by `kid`.
pub(super) type KeyMap = HashMap<String, Arc<DecodingKey>>;

/// When keys are fetched again.
#[derive(Debug, Clone)]
pub(super) struct FetchPolicy {
    /// Keys older than this are fetched again.
    pub(super) max_age: Duration,
    /// Least time between a successful fetch and one for an unknown `kid`.
    pub(super) refetch_interval: Duration,
    /// Backoff after failed fetches (its initial and maximum delay; it never gives up).
    pub(super) backoff: RetryPolicy,
}

/// Where keys come from.
#[derive(Debug, Clone)]
pub(super) struct JwksSource {
    pub(super) url: url::Url,
    pub(super) sender: HttpSender,
}

/// The cached keys and when they were fetched (`None` for a fixed set, which never ages).
struct KeySet {
    keys: KeyMap,
    fetched_at: Option<Instant>,
}

/// The fetch side: one fetch at a time, and the backoff after failures.
#[derive(Default)]
struct FetchState {
    /// Failed fetches in a row.
    failures: u32,
    /// No fetch before this instant (after a failure).
    retry_at: Option<Instant>,
    /// Why the last fetch failed.
    last_error: Option<Error>,
    /// Ceilings of the coming backoffs, from the policy's schedule.
    ceilings: Option<Box<dyn Iterator<Item = Duration> + Send + Sync>>,
}

/// The keys of a verifier, shared by its clones.
pub(super) struct KeyCache {
    keys: RwLock<KeySet>,
    fetch: tokio::sync::Mutex<FetchState>,
}

impl KeyCache {
    /// A cache holding `keys`, which never age (`fixed`) or count as just fetched.
    pub(super) fn new(keys: KeyMap) -> Self {
        KeyCache {
            keys: RwLock::new(KeySet { keys, fetched_at: None }),
            fetch: tokio::sync::Mutex::new(FetchState::default()),
        }
    }

    /// The cached key `kid`, whatever its age.
    pub(super) fn cached(&self, kid: &str) -> Option<Arc<DecodingKey>> {
        self.keys.read().unwrap_or_else(|e| e.into_inner()).keys.get(kid).cloned()
    }

    /// Number of cached keys, if the cache is not being written.
    pub(super) fn len(&self) -> Option<usize> {
        self.keys.try_read().map(|k| k.keys.len()).ok()
    }

    /// The cached key `kid` if the keys are younger than `max_age`.
    fn fresh(&self, kid: &str, max_age: Duration) -> Option<Arc<DecodingKey>> {
        let set = self.keys.read().unwrap_or_else(|e| e.into_inner());
        let young = set.fetched_at.is_none_or(|at| at.elapsed() < max_age);
        young.then(|| set.keys.get(kid).cloned()).flatten()
    }

    fn fetched_at(&self) -> Option<Instant> {
        self.keys.read().unwrap_or_else(|e| e.into_inner()).fetched_at
    }

    /// The key `kid`, fetching the JWKS from `source` when the rules above say so.
    pub(super) async fn key(
        &self,
        kid: &str,
        source: &JwksSource,
        policy: &FetchPolicy,
    ) -> Result<Arc<DecodingKey>, VerifyError> {
        if let Some(key) = self.fresh(kid, policy.max_age) {
            return Ok(key);
        }
        let stale = self.cached(kid);
        let mut fetch = match &stale {
            // Another task is refetching: the cached key serves meanwhile.
            Some(key) => match self.fetch.try_lock() {
                Ok(fetch) => fetch,
                Err(_) => return Ok(Arc::clone(key)),
            },
            None => self.fetch.lock().await,
        };
        // Another task may have fetched while this one waited.
        if let Some(key) = self.fresh(kid, policy.max_age) {
            return Ok(key);
        }
        let now = Instant::now();
        if let (Some(at), Some(last)) = (fetch.retry_at, &fetch.last_error)
            && now < at
        {
            return stale.ok_or_else(|| VerifyError::Jwks(last.clone()));
        }
        let recently_fetched =
            self.fetched_at().is_some_and(|at| now.duration_since(at) < policy.refetch_interval);
        if stale.is_none() && fetch.failures == 0 && recently_fetched {
            return Err(unknown_key(kid));
        }
        match fetch_jwks(source).await {
            Ok(keys) => {
                *fetch = FetchState::default();
                *self.keys.write().unwrap_or_else(|e| e.into_inner()) =
                    KeySet { keys, fetched_at: Some(Instant::now()) };
                drop(fetch);
                self.cached(kid).ok_or_else(|| unknown_key(kid))
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
        let ceiling = self
            .ceilings
            .get_or_insert_with(|| backoff.ceilings())
            .next()
            .unwrap_or_else(|| backoff.longest_delay());
        // Between half and all of the ceiling: some jitter, and never a retry storm.
        let delay = ceiling.mul_f64(0.5 + fastrand::f64() / 2.0);
        self.retry_at = Instant::now().checked_add(delay);
        self.last_error = Some(err.clone());
        delay
    }
}

/// Fetches and parses the JWKS.
async fn fetch_jwks(source: &JwksSource) -> Result<KeyMap, Error> {
    let path = source.url.path();
    let mut request = reqwest::Request::new(reqwest::Method::GET, source.url.clone());
    request
        .headers_mut()
        .insert(reqwest::header::ACCEPT, reqwest::header::HeaderValue::from_static("application/json"));
    let response = source.sender.dispatch(request, 1).await?;
    let status = response.status();
    if !status.is_success() {
        return Err(Error::Auth(ApiError::new(status.as_u16(), None, path)));
    }
    let body = crate::wire::read_body(path, response, BodyKind::Jwks.into()).await?;
    parse_jwks(&body).map_err(|e| Error::Decode(DecodeError::new(path, e)))
}

/// Parses a JWKS document, keeping RSA signature keys that have a `kid`.
pub(super) fn parse_jwks(json: &[u8]) -> Result<KeyMap, serde_json::Error> {
    #[derive(Deserialize)]
    struct JwkSet {
        keys: Vec<Value>,
    }
    let set: JwkSet = serde_json::from_slice(json)?;
    let mut keys = HashMap::new();
    for jwk in &set.keys {
        let field = |name: &str| jwk.get(name).and_then(Value::as_str);
        if field("kty") != Some("RSA") {
            continue;
        }
        if field("use").is_some_and(|u| u != "sig") || field("alg").is_some_and(|a| a != "RS256") {
            continue;
        }
        let (Some(kid), Some(n), Some(e)) = (field("kid"), field("n"), field("e")) else {
            continue;
        };
        if let Ok(key) = DecodingKey::from_rsa_components(n, e) {
            keys.insert(kid.to_owned(), Arc::new(key));
        }
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_between_half_and_all_of_the_ceiling_and_resets() {
        let policy = RetryPolicy::default()
            .initial_delay(Duration::from_millis(100))
            .max_delay(Duration::from_millis(350))
            .max_attempts(u32::MAX);
        let mut state = FetchState::default();
        let err = Error::Auth(ApiError::new(503, None, "/jwks"));
        for ceiling in [100, 200, 350, 350] {
            let delay = state.failed(&err, &policy);
            let ceiling = Duration::from_millis(ceiling);
            assert!(delay >= ceiling / 2 && delay <= ceiling, "{delay:?} for {ceiling:?}");
        }
        assert_eq!(state.failures, 4);
        assert_eq!(state.last_error.as_ref().and_then(Error::status), Some(503));
        assert!(state.retry_at.is_some());
    }
}
