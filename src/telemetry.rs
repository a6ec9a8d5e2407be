//! The `tracing` spans of the client, named after OpenTelemetry's semantic conventions.
//!
//! - `http_request`: one per HTTP request, a client span (`otel.kind = "client"`) with
//!   `http.request.method`, `url.full`, `url.path`, `http.route` (for API requests: the path
//!   with the values of its segments left out, `/v1/companies/{}`), `server.address`, `server.port`,
//!   `http.response.status_code`, `error.type`, `http.request.resend_count` (from the second
//!   attempt on) and `attempt`.
//! - `listing`: one per page or item stream, with `url.path` and, when the stream ends or is
//!   dropped, `pages`, `items`, `retries` and `rate_limit_wait_ms` (time its requests waited for
//!   the client's budget).
//!
//! A listing's span is a child of the span current where the stream was made, and every request
//! of the listing, prefetched ones included, is a child of the listing's span: a trace shows the
//! listing inside the caller's own work.
//!
//! What spans show follows the crate's one redaction rule and one length rule: `url.full` keeps
//! the query string, since the API's queries hold only a listing's parameters (limit, sort,
//! filters and the opaque cursor), which say which page a request fetched, and tokens travel in
//! the `Authorization` header and client secrets in request bodies, never in a URL. As a
//! safeguard, user information and fragments are left out, and the value of every query
//! parameter named like a credential, in any case and spelling (`access_token`, `accessToken`,
//! `client-secret`, `code`, `api_key`, `X-Amz-Security-Token`, `X-Goog-Signature`, `sig`, ...)
//! is `REDACTED`, as the conventions ask. `url.full`, `url.path` and `http.route` are cut to
//! 256 bytes (`…` marks a cut).

use std::time::Duration;

use tracing::Span;
use tracing::field::Empty;
use url::Url;

use crate::error::Error;
use crate::text::{shown_path, traced_url};

/// The span of one HTTP request; `attempt` counts from 1, and every later one is a resend.
pub(crate) fn request_span(method: &http::Method, url: &Url, route: Option<&str>, attempt: u32) -> Span {
    tracing::debug_span!(
        "http_request",
        "otel.name" = method.as_str(),
        "otel.kind" = "client",
        "http.request.method" = method.as_str(),
        "url.full" = traced_url(url),
        "url.path" = shown_path(url.path()),
        "http.route" = route,
        "server.address" = url.host_str(),
        "server.port" = url.port_or_known_default(),
        "http.response.status_code" = Empty,
        "error.type" = Empty,
        "http.request.resend_count" = (attempt > 1).then(|| attempt - 1),
        attempt,
    )
}

/// Records a response's status on its request span; an error status also sets `error.type`.
pub(crate) fn record_status(span: &Span, status: http::StatusCode) {
    span.record("http.response.status_code", status.as_u16());
    if status.is_client_error() || status.is_server_error() || status.is_redirection() {
        span.record("error.type", status.as_str());
    }
}

/// Records why a request got no response.
pub(crate) fn record_error(span: &Span, error: &Error) {
    let kind = match error {
        Error::Http(e) if e.is_timeout() => "timeout",
        Error::Http(e) if e.is_connect() => "connect",
        Error::Http(e) if e.is_connection_lost() => "connection_lost",
        Error::Http(e) if e.is_redirect() => "redirect",
        _ => "_OTHER",
    };
    span.record("error.type", kind);
}

/// The span of one listing, a child of the current span.
pub(crate) fn listing_span(path: &str) -> Span {
    tracing::debug_span!(
        "listing",
        "url.path" = shown_path(path),
        pages = Empty,
        items = Empty,
        retries = Empty,
        rate_limit_wait_ms = Empty
    )
}

/// Records what a listing did, at its end.
pub(crate) fn record_listing(span: &Span, pages: u64, items: u64, retries: u64, waited: Duration) {
    span.record("pages", pages);
    span.record("items", items);
    span.record("retries", retries);
    span.record("rate_limit_wait_ms", u64::try_from(waited.as_millis()).unwrap_or(u64::MAX));
}
