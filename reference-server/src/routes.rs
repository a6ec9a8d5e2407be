//! Routing by wiremock: a mock per endpoint (method and path matchers), a 405 naming the
//! allowed methods for the other methods of an endpoint's path, and a 404 for any other path.
//! Each server's handler answers what is routed to it and says how it refuses the rest.

use std::collections::BTreeMap;
use std::sync::Arc;

use wiremock::matchers::{any, method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use super::ErrorReply;

/// Priority of an endpoint's mock (wiremock's default; 1 is tried first).
const ENDPOINT: u8 = 5;
/// Priority of the 405 for the other methods of an endpoint's path.
const OTHER_METHOD: u8 = 6;
/// Priority of the 404 for every other request.
const UNKNOWN_PATH: u8 = 7;

/// How a server answers a request it does not serve: a 405 or a 404.
pub(crate) trait Refuse: Send + Sync + 'static {
    /// The answer to `request`, which `reply` refuses.
    fn refuse(&self, request: &Request, reply: ErrorReply) -> ResponseTemplate;
}

/// The endpoints of one server, mounted as they are added; [`finish`](Self::finish) mounts
/// the refusals.
pub(crate) struct Routes<'s, S> {
    server: &'s MockServer,
    handler: Arc<S>,
    /// The methods served at each path.
    methods: BTreeMap<String, Vec<&'static str>>,
}

impl<'s, S: Refuse> Routes<'s, S> {
    pub(crate) fn new(server: &'s MockServer, handler: Arc<S>) -> Self {
        Routes { server, handler, methods: BTreeMap::new() }
    }

    /// Serves `method_name` requests to `path_value` (compared exactly) with `respond`.
    pub(crate) async fn route<F>(
        &mut self,
        method_name: &'static str,
        path_value: impl Into<String>,
        respond: F,
    ) where
        F: Fn(&S, &Request) -> ResponseTemplate + Send + Sync + 'static,
    {
        let path_value = path_value.into();
        let handler = Arc::clone(&self.handler);
        Mock::given(method(method_name))
            .and(path(path_value.as_str()))
            .respond_with(move |request: &Request| respond(&handler, request))
            .with_priority(ENDPOINT)
            .mount(self.server)
            .await;
        self.methods.entry(path_value).or_default().push(method_name);
    }

    /// Mounts a 405 for every path served, naming its methods in `Allow`, and a 404 for the
    /// other paths.
    pub(crate) async fn finish(self) {
        for (path_value, methods) in self.methods {
            let allow = methods.join(", ");
            let handler = Arc::clone(&self.handler);
            Mock::given(path(path_value.as_str()))
                .respond_with(move |request: &Request| {
                    handler.refuse(request, ErrorReply::method_not_allowed(allow.clone()))
                })
                .with_priority(OTHER_METHOD)
                .mount(self.server)
                .await;
        }
        let handler = self.handler;
        Mock::given(any())
            .respond_with(move |request: &Request| handler.refuse(request, ErrorReply::not_found()))
            .with_priority(UNKNOWN_PATH)
            .mount(self.server)
            .await;
    }
}
