//! Observability: request spans inside the caller's trace, with OpenTelemetry's HTTP client
//! fields, one span per listing, and middleware layers that reach every request the SDK sends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use business_records::reqwest_middleware::{Middleware, Next, Result as MiddlewareResult};
use business_records::{Auth, RetryPolicy};
use business_records_reference_server::{Endpoint, Fault, Faults, JournalEntry, ReferenceServer};
use http::{Extensions, HeaderValue};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Instrument, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

use crate::support;

crate::cases! {
    ServerControl:
        every_page_of_a_prefetched_listing_is_traced_inside_the_callers_span,
        any_call_names_its_route_without_the_values_of_its_segments,
        a_middleware_header_reaches_api_token_and_jwks_requests;
}

/// A span as the capturing subscriber saw it: name, fields and the names of its ancestors'
/// spans, nearest first.
#[derive(Debug, Clone, Default)]
struct Captured {
    name: &'static str,
    fields: HashMap<String, String>,
    ancestors: Vec<String>,
}

impl Captured {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

/// Keeps every span, its fields (also those recorded later) and its ancestry.
#[derive(Clone, Default)]
struct Capture {
    spans: Arc<Mutex<Vec<(Id, Captured)>>>,
}

struct Fields<'a>(&'a mut HashMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> tracing_subscriber::Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut captured = Captured { name: attrs.metadata().name(), ..Captured::default() };
        attrs.record(&mut Fields(&mut captured.fields));
        if let Some(span) = ctx.span(id) {
            captured.ancestors = span.scope().skip(1).map(|s| s.name().to_owned()).collect();
        }
        self.spans.lock().unwrap().push((id.clone(), captured));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        let mut spans = self.spans.lock().unwrap();
        if let Some((_, captured)) = spans.iter_mut().rev().find(|(i, _)| i == id) {
            values.record(&mut Fields(&mut captured.fields));
        }
    }
}

impl Capture {
    fn named(&self, name: &str) -> Vec<Captured> {
        let spans = self.spans.lock().unwrap();
        spans.iter().filter(|(_, s)| s.name == name).map(|(_, s)| s.clone()).collect()
    }
}

/// Runs `work` with a capturing subscriber on this thread (the test runtime is single-threaded,
/// so spawned tasks run here too) inside a span named `caller`.
async fn traced<F: Future>(work: F) -> (F::Output, Capture) {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let _guard = tracing::subscriber::set_default(subscriber);
    let output = work.instrument(tracing::info_span!("caller")).await;
    (output, capture)
}

async fn every_page_of_a_prefetched_listing_is_traced_inside_the_callers_span() {
    // The second request of the API (the second page) fails once with a 503.
    let server = ReferenceServer::builder()
        .companies(250)
        .faults(Faults::new().on(Endpoint::Companies, 2, Fault::Status(503)))
        .start()
        .await;
    let client = support::client_for(&server)
        .prefetch(true)
        .retry(RetryPolicy::default().initial_delay(Duration::from_millis(1)))
        .build()
        .expect("client");
    let (ids, capture) = traced(async {
        let mut stream = client.companies().limit(100).stream();
        support::drain(&mut stream).await
    })
    .await;
    assert_eq!(ids.0.len(), 250, "{:?}", ids.1);

    let listings = capture.named("listing");
    assert_eq!(listings.len(), 1, "one span per listing");
    let listing = &listings[0];
    assert_eq!(listing.ancestors, ["caller"]);
    assert_eq!(listing.field("url.path"), Some("/v1/companies"));
    assert_eq!((listing.field("pages"), listing.field("items")), (Some("3"), Some("250")));
    assert_eq!(listing.field("retries"), Some("1"));
    assert_eq!(listing.field("rate_limit_wait_ms"), Some("0"), "nothing held the listing up");

    let requests = capture.named("http_request");
    let pages: Vec<&Captured> =
        requests.iter().filter(|r| r.field("url.path") == Some("/v1/companies")).collect();
    let tokens: Vec<&Captured> =
        requests.iter().filter(|r| r.field("url.path") == Some("/oauth2/token")).collect();
    assert_eq!((pages.len(), tokens.len()), (4, 1), "three pages, one of them sent twice, one token");
    for span in requests.iter() {
        assert_eq!(span.ancestors, ["listing", "caller"], "{span:?}");
        assert_eq!(span.field("otel.kind"), Some("client"));
        assert_eq!(span.field("server.address"), Some("127.0.0.1"));
        assert!(span.field("server.port").is_some_and(|port| port.parse::<u16>().is_ok()), "{span:?}");
    }
    let api_port = url::Url::parse(&server.base_url()).unwrap().port().unwrap().to_string();
    for (n, span) in pages.iter().enumerate() {
        assert_eq!(span.field("http.request.method"), Some("GET"));
        assert_eq!(span.field("server.port"), Some(api_port.as_str()));
        let full = span.field("url.full").expect("url.full");
        assert!(full.starts_with(&format!("{}/v1/companies?limit=100", server.base_url())), "{full}");
        assert_eq!(full.contains("cursor="), n > 0, "{full}");
        assert!(!full.contains("eyJ") && !full.contains("token"), "no token in {full}");
    }
    let statuses: Vec<(Option<&str>, Option<&str>, Option<&str>)> = pages
        .iter()
        .map(|s| {
            (
                s.field("http.response.status_code"),
                s.field("error.type"),
                s.field("http.request.resend_count"),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [
            (Some("200"), None, None),
            (Some("503"), Some("503"), None),
            (Some("200"), None, Some("1")),
            (Some("200"), None, None),
        ]
    );
    assert_eq!(tokens[0].field("http.request.method"), Some("POST"));
    assert_eq!(tokens[0].field("http.response.status_code"), Some("200"));
}

async fn any_call_names_its_route_without_the_values_of_its_segments() {
    let server = ReferenceServer::builder()
        .company(serde_json::json!({"id": "cmp_7", "name": "Acme"}))
        .collection("notes", [serde_json::json!({"id": "n_1", "text": "hello"})])
        .start()
        .await;
    let client = business_records::Client::builder().settings(server.settings()).build().expect("client");
    let ((), capture) = traced(async {
        let _: serde_json::Value = client.get(["companies", "cmp_7"]).send().await.expect("read one");
        let _: serde_json::Value = client.get("notes/n_1").send().await.expect("a literal path");
        client
            .request(business_records::Method::DELETE, ["notes", "n_1"])
            .send_empty()
            .await
            .expect("delete");
        client.companies().send().await.expect("a page");
    })
    .await;
    let spans = capture.named("http_request");
    let routes: Vec<[Option<&str>; 3]> = spans
        .iter()
        .filter(|span| span.field("url.path") != Some("/oauth2/token"))
        .map(|span| [span.field("http.request.method"), span.field("http.route"), span.field("url.path")])
        .collect();
    assert_eq!(
        routes,
        [
            [Some("GET"), Some("/v1/companies/{}"), Some("/v1/companies/cmp_7")],
            [Some("GET"), Some("/v1/notes/{}"), Some("/v1/notes/n_1")],
            [Some("DELETE"), Some("/v1/notes/{}"), Some("/v1/notes/n_1")],
            [Some("GET"), Some("/v1/companies"), Some("/v1/companies")],
        ]
    );
}

/// Adds `x-trace-origin` to every request.
struct Origin;

#[async_trait::async_trait]
impl Middleware for Origin {
    async fn handle(
        &self,
        mut request: reqwest::Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> MiddlewareResult<reqwest::Response> {
        request.headers_mut().insert("x-trace-origin", HeaderValue::from_static("conformance"));
        next.run(request, extensions).await
    }
}

/// Requests the SDK sent: those with its `User-Agent` (the browser's authorization request and
/// anything sent outside the SDK's one door have none).
fn sent_by_sdk(requests: &[JournalEntry]) -> Vec<&JournalEntry> {
    requests
        .iter()
        .filter(|r| r.header("user-agent").is_some_and(|ua| ua.starts_with("business-records/")))
        .collect()
}

async fn a_middleware_header_reaches_api_token_and_jwks_requests() {
    let server = ReferenceServer::builder().companies(5).start().await;

    // A backend: client credentials.
    let backend = support::client_for(&server).middleware(Origin).build().expect("client");
    backend.companies().send().await.expect("a page");

    // A signed-in user: code exchange, ID token verified (JWKS), then a refresh after the API
    // rejects the access token.
    let (flow, request, callback) =
        crate::auth_user::authorize(&server, &["openid", "api/read"]).await.expect("authorization");
    let flow = flow.http(&backend);
    let tokens = flow.exchange(request, &callback).await.expect("exchange");
    let user = support::client_for(&server)
        .auth(Auth::user(flow, tokens))
        .middleware(Origin)
        .build()
        .expect("client");
    user.companies().send().await.expect("a page");
    server.expire_tokens();
    user.companies().send().await.expect("a page after a refresh");

    let recorded = server.journal();
    let by_path = |path: &str| recorded.iter().filter(|r| r.path().ends_with(path)).count();
    assert_eq!(by_path("/v1/companies"), 4, "{recorded:?}");
    assert_eq!(by_path("/oauth2/token"), 3, "client credentials, code exchange, refresh: {recorded:?}");
    assert!(by_path("/.well-known/jwks.json") >= 1, "the ID token was verified: {recorded:?}");
    // Every request the SDK sends goes through its one door and carries the header: API, token
    // and JWKS requests alike.
    let ours = ["/v1/companies", "/oauth2/token", "/.well-known/jwks.json"];
    let through_the_door: Vec<_> =
        recorded.iter().filter(|r| ours.iter().any(|path| r.path().ends_with(path))).collect();
    assert!(through_the_door.len() >= 8, "{recorded:?}");
    for r in through_the_door {
        assert!(r.header("user-agent").is_some_and(|ua| ua.starts_with("business-records/")), "{r:?}");
        assert_eq!(r.header("x-trace-origin"), Some("conformance"), "{r:?}");
    }
    // And the SDK sent nothing else.
    assert_eq!(sent_by_sdk(&recorded).len(), 4 + 3 + by_path("/.well-known/jwks.json"), "{recorded:?}");
}
