//! Routing by wiremock: a mock per endpoint (method and path matchers), a 405 naming the
//! allowed methods for the other methods of an endpoint's path, and a 404 for any other path.
//! Every request, routed or refused, takes the [`pipeline`](super::pipeline).

use std::collections::BTreeMap;
use std::sync::Arc;

use wiremock::matchers::{any, method};
use wiremock::{Match, Mock, MockServer, Request};

use super::pipeline;
use super::reply::{Answer, ErrorReply};
use super::{Endpoint, Fault, Shared};

/// Priority of an endpoint's mock (wiremock's default; 1 is tried first).
const ENDPOINT: u8 = 5;
/// Priority of the 405 for the other methods of an endpoint's path.
const OTHER_METHOD: u8 = 6;
/// Priority of the 404 for every other request.
const UNKNOWN_PATH: u8 = 7;

/// The paths a route serves.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Paths {
    /// This path exactly.
    Exact(String),
    /// This path, a `/`, and one more non-empty segment: `/v1/companies/{id}`.
    Item(String),
}

impl Match for Paths {
    fn matches(&self, request: &Request) -> bool {
        let path = request.url.path();
        match self {
            Paths::Exact(exact) => path == exact,
            Paths::Item(prefix) => path
                .strip_prefix(prefix.as_str())
                .and_then(|rest| rest.strip_prefix('/'))
                .is_some_and(|segment| !segment.is_empty() && !segment.contains('/')),
        }
    }
}

/// The endpoints of one server, mounted as they are added; [`finish`](Self::finish) mounts
/// the refusals.
pub(crate) struct Routes<'s, S> {
    server: &'s MockServer,
    handler: Arc<S>,
    shared: Arc<Shared>,
    /// Whether the server is the API (rather than the authorization server).
    api: bool,
    /// The methods served at each path.
    methods: BTreeMap<Paths, Vec<&'static str>>,
}

impl<'s, S: Send + Sync + 'static> Routes<'s, S> {
    pub(crate) fn new(server: &'s MockServer, handler: Arc<S>, shared: Arc<Shared>, api: bool) -> Self {
        Routes { server, handler, shared, api, methods: BTreeMap::new() }
    }

    /// Serves `method_name` requests to `paths` with `respond`, which gets the request's fault
    /// when it has one the pipeline leaves to the endpoint (see [`pipeline::serve`]).
    pub(crate) async fn route<F>(
        &mut self,
        method_name: &'static str,
        paths: Paths,
        endpoint: Option<Endpoint>,
        respond: F,
    ) where
        F: Fn(&S, &Request, Option<&Fault>) -> Answer + Send + Sync + 'static,
    {
        let (handler, shared, api) = (Arc::clone(&self.handler), Arc::clone(&self.shared), self.api);
        Mock::given(method(method_name))
            .and(paths.clone())
            .respond_with(move |request: &Request| {
                pipeline::serve(&shared, api, endpoint, request, |fault| respond(&handler, request, fault))
            })
            .with_priority(ENDPOINT)
            .mount(self.server)
            .await;
        self.methods.entry(paths).or_default().push(method_name);
    }

    /// Mounts a 405 for every path served, naming its methods in `Allow`, and for the other
    /// paths the 404 `not_found` makes of the request.
    pub(crate) async fn finish(self, not_found: impl Fn(&Request) -> ErrorReply + Send + Sync + 'static) {
        type Refusal = Box<dyn Fn(&Request) -> ErrorReply + Send + Sync>;
        let refusals = self.methods.into_iter().map(|(paths, methods)| {
            let reply = ErrorReply::method_not_allowed(methods.join(", "));
            (Mock::given(paths), OTHER_METHOD, Box::new(move |_: &Request| reply.clone()) as Refusal)
        });
        for (mock, priority, reply) in
            refusals.chain([(Mock::given(any()), UNKNOWN_PATH, Box::new(not_found) as Refusal)])
        {
            let (shared, api) = (Arc::clone(&self.shared), self.api);
            mock.respond_with(move |request: &Request| {
                pipeline::serve(&shared, api, None, request, |_| reply(request).into_answer())
            })
            .with_priority(priority)
            .mount(self.server)
            .await;
        }
    }
}
