//! What the fault injection did at one endpoint, as
//! [`ReferenceServer::fault_counts`](crate::ReferenceServer::fault_counts) reports it.

use std::collections::HashMap;

/// What the fault injection did at one endpoint since the schedule was set: requests counted
/// and faults applied.
///
/// A fault drawn for a request counts only when it was applied, e.g.
/// [`Fault::ExpireCursor`](super::Fault::ExpireCursor) counts for list requests that carried a
/// cursor.
#[non_exhaustive]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultCounts {
    /// Requests to the endpoint.
    pub requests: u64,
    /// Requests that no request-counted rule matched.
    pub pages: u64,
    /// Faults applied, by [`Fault::name`](super::Fault::name); [`Fault::Status`](super::Fault::Status),
    /// [`Fault::Html`](super::Fault::Html) and [`Fault::Empty`](super::Fault::Empty) are counted with their status, e.g. `status_503`,
    /// `html_502`, `empty_504`.
    pub applied: HashMap<String, u64>,
    /// Requests that arrived before the `Retry-After` of the 429 just before them had passed.
    pub early_retries: u64,
}

impl FaultCounts {
    /// How often the fault named `name` was applied.
    pub fn get(&self, name: &str) -> u64 {
        self.applied.get(name).copied().unwrap_or(0)
    }

    /// Faults applied, of every kind.
    pub fn total(&self) -> u64 {
        self.applied.values().sum()
    }
}
