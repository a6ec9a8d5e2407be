//! The API server's log of the requests it answered.

use std::time::SystemTime;

use super::Fault;

/// How many [`ServedRequest`]s are kept; older ones are dropped.
pub(crate) const API_LOG_CAPACITY: usize = 10_000;

/// One request the API server received, and how it was answered: an entry of
/// [`ReferenceServer::api_requests`](super::ReferenceServer::api_requests).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedRequest {
    /// HTTP method, e.g. `GET`.
    pub method: String,
    /// URL path, e.g. `/v1/companies`.
    pub path: String,
    /// Decoded query parameters in the order they were sent.
    pub query: Vec<(String, String)>,
    /// Whether an `Authorization` header was present.
    pub authorization: bool,
    /// The `X-API-Preview` header, if one was sent.
    pub preview: Option<String>,
    /// The status code of the response (200 for a dropped connection or a
    /// body cut short, which the client never sees whole).
    pub status: u16,
    /// The fault injected into the answer, if any.
    pub fault: Option<Fault>,
    /// When the request arrived.
    pub received_at: SystemTime,
}

impl ServedRequest {
    /// The first value of query parameter `name`.
    pub fn query_param(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}
