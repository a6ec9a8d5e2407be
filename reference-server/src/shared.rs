//! State shared between the responders and the handle: records, counters, the journal,
//! sessions, faults and lifecycles.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use wiremock::Request;

use super::access::AccessClaims;
use super::journal::Journal;
use super::proxy::{MARKER_HOLD, REPLAY_HEADER};
use super::records::Table;
use super::secrets::constant_time_eq;
use super::{Endpoint, Lifecycle, auth, faults, hostile, rate_limit};

/// State shared between the responders and the [`ReferenceServer`](super::ReferenceServer) handle.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// Requests by endpoint (a held request once).
    requests: Mutex<HashMap<Endpoint, usize>>,
    /// `jti` of access tokens revoked one by one (RFC 7009).
    revoked_access_tokens: Mutex<HashSet<String>>,
    /// Token requests by `grant_type`.
    grants: Mutex<HashMap<String, usize>>,
    /// Tokens of an earlier generation are refused as expired.
    pub(crate) token_generation: AtomicU64,
    /// Authorization codes and refresh tokens.
    sessions: Mutex<auth::Sessions>,
    /// The records of every resource, by name.
    store: Mutex<BTreeMap<String, Table>>,
    pub(crate) journal: Journal,
    pub(crate) faults: Mutex<faults::FaultState>,
    lifecycles: Mutex<HashMap<String, Lifecycle>>,
    /// The hostile-provider switches that are on.
    pub(crate) hostile: hostile::HostileModes,
    /// The rate limit of the API, per client id.
    pub(crate) rate_limit: rate_limit::Buckets,
    /// The value by which the fault proxy sends a held request again.
    pub(crate) replay_secret: String,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    /// The state of a new server whose fault proxy replays held requests with `replay_secret`.
    pub(crate) fn new(replay_secret: String) -> Self {
        Shared { replay_secret, ..Shared::default() }
    }

    pub(crate) fn sessions(&self) -> MutexGuard<'_, auth::Sessions> {
        lock(&self.sessions)
    }

    pub(crate) fn store(&self) -> MutexGuard<'_, BTreeMap<String, Table>> {
        lock(&self.store)
    }

    pub(crate) fn faults(&self) -> MutexGuard<'_, faults::FaultState> {
        lock(&self.faults)
    }

    /// Counts a request to `endpoint` (and a token request's `grant_type`).
    pub(crate) fn count(&self, endpoint: Endpoint, request: &Request) {
        *lock(&self.requests).entry(endpoint).or_default() += 1;
        if endpoint == Endpoint::Token
            && let Some((_, grant_type)) =
                url::form_urlencoded::parse(&request.body).find(|(k, _)| k == "grant_type")
        {
            *lock(&self.grants).entry(grant_type.chars().take(40).collect()).or_default() += 1;
        }
    }

    pub(crate) fn requests(&self, endpoint: Endpoint) -> usize {
        lock(&self.requests).get(&endpoint).copied().unwrap_or(0)
    }

    pub(crate) fn grant_count(&self, grant_type: &str) -> usize {
        lock(&self.grants).get(grant_type).copied().unwrap_or(0)
    }

    /// How long the fault proxy held `request`, when it sends it again after a slow-answer
    /// fault: it was counted and drew its fault when it first arrived.
    pub(crate) fn replayed(&self, request: &Request) -> Option<Duration> {
        let value = request.headers.get(REPLAY_HEADER)?.to_str().ok()?;
        let (secret, marker) = value.split_once(' ')?;
        let genuine = constant_time_eq(secret.as_bytes(), self.replay_secret.as_bytes());
        let millis = marker.strip_prefix(MARKER_HOLD)?.parse().ok().filter(|_| genuine)?;
        Some(Duration::from_millis(millis))
    }

    /// Revokes the access token whose `jti` this is.
    pub(crate) fn revoke_access_token(&self, jti: String) {
        lock(&self.revoked_access_tokens).insert(jti);
    }

    /// Whether the access token with these claims was revoked (RFC 7009) or issued before
    /// tokens were last expired.
    pub(crate) fn is_revoked(&self, claims: &AccessClaims) -> bool {
        claims.generation < self.token_generation.load(Ordering::SeqCst)
            || claims.jti.as_ref().is_some_and(|jti| lock(&self.revoked_access_tokens).contains(jti))
    }

    /// The lifecycle of the endpoint at `path`.
    pub(crate) fn lifecycle(&self, path: &str) -> Lifecycle {
        lock(&self.lifecycles).get(path).cloned().unwrap_or_default()
    }

    pub(crate) fn set_lifecycle(&self, path: String, lifecycle: Lifecycle) {
        let mut lifecycles = lock(&self.lifecycles);
        match lifecycle {
            Lifecycle::Stable => lifecycles.remove(&path),
            other => lifecycles.insert(path, other),
        };
    }

    /// Zeroes the request counts and clears the journal.
    pub(crate) fn reset_counters(&self) {
        lock(&self.requests).clear();
        lock(&self.grants).clear();
        self.journal.clear();
        self.rate_limit.reset_counts();
    }
}
