//! What the fault injection did, as [`ReferenceServer::fault_counts`](crate::ReferenceServer::fault_counts) reports it.

use std::collections::HashMap;

/// What the fault injection did so far: requests counted and faults applied.
///
/// A fault drawn for a request counts only when it was applied, e.g.
/// [`Fault::ExpireCursor`](super::Fault::ExpireCursor) counts for requests that carried a cursor.
#[non_exhaustive]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultCounts {
    /// Requests to the list endpoints since the schedule was set.
    pub requests: u64,
    /// Requests that no request-counted rule matched.
    pub pages: u64,
    /// Faults applied to list requests, by [`Fault::name`](super::Fault::name); [`Fault::Status`](super::Fault::Status),
    /// [`Fault::Html`](super::Fault::Html) and [`Fault::Empty`](super::Fault::Empty) are counted with their status, e.g. `status_503`,
    /// `html_502`, `empty_504`.
    pub applied: HashMap<String, u64>,
    /// List requests that arrived before the `Retry-After` of the 429 just before them had
    /// passed.
    pub early_retries: u64,
    /// The same for the token endpoint.
    pub token: EndpointFaultCounts,
    /// The same for the JWKS endpoint.
    pub jwks: EndpointFaultCounts,
}

impl FaultCounts {
    /// How often the fault named `name` was applied to a list request.
    pub fn get(&self, name: &str) -> u64 {
        self.applied.get(name).copied().unwrap_or(0)
    }
}

/// What the fault injection did at the token or the JWKS endpoint: part of [`FaultCounts`].
#[non_exhaustive]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointFaultCounts {
    /// Requests to the endpoint since the schedule was set.
    pub requests: u64,
    /// Faults applied, named as in [`FaultCounts::applied`].
    pub applied: HashMap<String, u64>,
    /// Requests that arrived before the `Retry-After` of the 429 just before them had
    /// passed.
    pub early_retries: u64,
}

impl EndpointFaultCounts {
    /// How often the fault named `name` was applied.
    pub fn get(&self, name: &str) -> u64 {
        self.applied.get(name).copied().unwrap_or(0)
    }

    /// Faults applied, of every kind.
    pub fn total(&self) -> u64 {
        self.applied.values().sum()
    }
}
