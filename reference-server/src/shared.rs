//! State shared between the responders and the handle: counters, logs, sessions, faults and
//! lifecycles.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::access::AccessClaims;
use super::served::{API_LOG_CAPACITY, ServedRequest};
use super::{Lifecycle, auth, faults, hostile, rate_limit};

/// State shared between the responders and the [`ReferenceServer`](super::ReferenceServer) handle.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    pub(crate) token_requests: AtomicUsize,
    pub(crate) jwks_requests: AtomicUsize,
    pub(crate) authorize_requests: AtomicUsize,
    pub(crate) revocation_requests: AtomicUsize,
    /// `jti` of access tokens revoked one by one (RFC 7009).
    revoked_access_tokens: Mutex<HashSet<String>>,
    /// Token requests by `grant_type`.
    grants: Mutex<HashMap<String, usize>>,
    /// Tokens of an earlier generation are refused as revoked.
    pub(crate) token_generation: AtomicU64,
    /// Authorization codes and refresh tokens.
    sessions: Mutex<auth::Sessions>,
    api_log: Mutex<VecDeque<ServedRequest>>,
    pub(crate) faults: Mutex<faults::FaultState>,
    lifecycles: Mutex<HashMap<String, Lifecycle>>,
    /// The hostile-provider switches that are on.
    pub(crate) hostile: hostile::HostileModes,
    /// The rate limit of the list endpoints, per client id.
    pub(crate) rate_limit: rate_limit::Buckets,
}

impl Shared {
    pub(crate) fn sessions(&self) -> std::sync::MutexGuard<'_, auth::Sessions> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn count_grant(&self, grant_type: &str) {
        let mut grants = self.grants.lock().unwrap_or_else(|e| e.into_inner());
        *grants.entry(grant_type.chars().take(40).collect()).or_default() += 1;
    }

    pub(crate) fn grant_count(&self, grant_type: &str) -> usize {
        self.grants.lock().unwrap_or_else(|e| e.into_inner()).get(grant_type).copied().unwrap_or(0)
    }

    pub(crate) fn record(&self, request: ServedRequest) {
        let mut log = self.api_log.lock().unwrap_or_else(|e| e.into_inner());
        if log.len() >= API_LOG_CAPACITY {
            log.pop_front();
        }
        log.push_back(request);
    }

    /// Revokes the access token whose `jti` this is.
    pub(crate) fn revoke_access_token(&self, jti: String) {
        self.revoked_access_tokens.lock().unwrap_or_else(|e| e.into_inner()).insert(jti);
    }

    /// Whether the access token with these claims was revoked: on its own (RFC 7009), or with
    /// every token of an earlier generation.
    pub(crate) fn is_revoked(&self, claims: &AccessClaims) -> bool {
        if claims.generation < self.token_generation.load(Ordering::SeqCst) {
            return true;
        }
        let Some(jti) = &claims.jti else { return false };
        self.revoked_access_tokens.lock().unwrap_or_else(|e| e.into_inner()).contains(jti)
    }

    /// The lifecycle of the endpoint at `path`.
    pub(crate) fn lifecycle(&self, path: &str) -> Lifecycle {
        let lifecycles = self.lifecycles.lock().unwrap_or_else(|e| e.into_inner());
        lifecycles.get(path).cloned().unwrap_or_default()
    }

    pub(crate) fn set_lifecycle(&self, path: String, lifecycle: Lifecycle) {
        let mut lifecycles = self.lifecycles.lock().unwrap_or_else(|e| e.into_inner());
        match lifecycle {
            Lifecycle::Stable => lifecycles.remove(&path),
            other => lifecycles.insert(path, other),
        };
    }

    /// The API server's log, oldest first.
    pub(crate) fn api_requests(&self) -> Vec<ServedRequest> {
        self.api_log.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect()
    }

    /// Zeroes the request counts and clears the API server's log.
    pub(crate) fn reset_counters(&self) {
        self.token_requests.store(0, Ordering::Relaxed);
        self.jwks_requests.store(0, Ordering::Relaxed);
        self.authorize_requests.store(0, Ordering::Relaxed);
        self.revocation_requests.store(0, Ordering::Relaxed);
        self.grants.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.api_log.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.rate_limit.reset_counts();
    }
}
