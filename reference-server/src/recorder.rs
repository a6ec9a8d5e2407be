//! Chosen headers of every request the servers receive, API and authorization server alike.
//!
//! A wiremock matcher sees each request before any responder does; this one writes down the
//! request and then declines, so the request goes on to the responder that serves it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use wiremock::{Match, Mock, MockServer, Request};

/// How many [`RecordedRequest`]s are kept; older ones are dropped.
const CAPACITY: usize = 10_000;

/// One request either server received, with the headers asked for in
/// [`ReferenceServerBuilder::record_headers`](super::ReferenceServerBuilder::record_headers).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRequest {
    /// HTTP method, e.g. `POST`.
    pub method: String,
    /// URL path, e.g. `/oauth2/token`.
    pub path: String,
    /// The recorded headers that were present, names in lowercase, in the order asked for.
    pub headers: Vec<(String, String)>,
}

impl RecordedRequest {
    /// The value of header `name` (any case), if it was recorded and sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// The shared log and the names to record.
#[derive(Debug, Clone, Default)]
pub(crate) struct Recorder {
    names: Vec<String>,
    log: Arc<Mutex<VecDeque<RecordedRequest>>>,
}

impl Recorder {
    pub(crate) fn new(names: Vec<String>) -> Self {
        Recorder { names: names.into_iter().map(|n| n.to_ascii_lowercase()).collect(), log: Arc::default() }
    }

    /// Puts the recording matcher in front of every mock of `server`; nothing without names.
    pub(crate) async fn mount(&self, server: &MockServer) {
        if self.names.is_empty() {
            return;
        }
        Mock::given(self.clone())
            .respond_with(wiremock::ResponseTemplate::new(500))
            .with_priority(1)
            .mount(server)
            .await;
    }

    pub(crate) fn requests(&self) -> Vec<RecordedRequest> {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect()
    }

    pub(crate) fn clear(&self) {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

impl Match for Recorder {
    fn matches(&self, request: &Request) -> bool {
        let headers = self
            .names
            .iter()
            .filter_map(|name| {
                let value = request.headers.get(name.as_str())?;
                Some((name.clone(), String::from_utf8_lossy(value.as_bytes()).into_owned()))
            })
            .collect();
        let recorded = RecordedRequest {
            method: request.method.to_string(),
            path: request.url.path().to_owned(),
            headers,
        };
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        if log.len() == CAPACITY {
            log.pop_front();
        }
        log.push_back(recorded);
        false
    }
}
