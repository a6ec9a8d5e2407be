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
//! `url.full` keeps the query string. The API's queries hold only the listing's parameters
//! (limit, sort, filters and the opaque cursor), which say which page a request fetched; tokens
//! travel in the `Authorization` header and client secrets in request bodies, never in a URL.
//! As a safeguard, user information is dropped and the values of query parameters named like
//! credentials (`access_token`, `client_secret`, `code`, `signature`, ...) are replaced by
//! `REDACTED`, as the conventions ask.

use std::borrow::Cow;
use std::time::Duration;

use tracing::Span;
use tracing::field::Empty;
use url::Url;

use crate::error::Error;

/// Query parameters whose values are never written to a span.
const SECRET_PARAMETERS: &[&str] = &[
    "access_token",
    "api_key",
    "apikey",
    "client_secret",
    "code",
    "code_verifier",
    "id_token",
    "key",
    "password",
    "refresh_token",
    "sig",
    "signature",
    "token",
    "x-amz-signature",
    "x-goog-signature",
];

/// The span of one HTTP request; `attempt` counts from 1, and every later one is a resend.
pub(crate) fn request_span(method: &http::Method, url: &Url, route: Option<&str>, attempt: u32) -> Span {
    let span = tracing::debug_span!(
        "http_request",
        "otel.name" = method.as_str(),
        "otel.kind" = "client",
        "http.request.method" = method.as_str(),
        "url.full" = %full_url(url),
        "url.path" = url.path(),
        "http.route" = route,
        "server.address" = url.host_str(),
        "server.port" = url.port_or_known_default(),
        "http.response.status_code" = Empty,
        "error.type" = Empty,
        "http.request.resend_count" = Empty,
        attempt,
    );
    if attempt > 1 {
        span.record("http.request.resend_count", attempt - 1);
    }
    span
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
        "url.path" = path,
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

/// A URL as `url.full` shows it: no user information, credential-like query values redacted.
fn full_url(url: &Url) -> Cow<'_, str> {
    let secret = |name: &str| SECRET_PARAMETERS.iter().any(|s| s.eq_ignore_ascii_case(name));
    let redact = url.query_pairs().any(|(name, _)| secret(&name));
    if url.username().is_empty() && url.password().is_none() && url.fragment().is_none() && !redact {
        return Cow::Borrowed(url.as_str());
    }
    let mut shown = url.clone();
    // Only URLs that have a host can hold user information, and for them these succeed.
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.set_fragment(None);
    if redact {
        let pairs: Vec<(String, String)> = url
            .query_pairs()
            .map(|(name, value)| {
                let value = if secret(&name) { "REDACTED".to_owned() } else { value.into_owned() };
                (name.into_owned(), value)
            })
            .collect();
        shown.query_pairs_mut().clear().extend_pairs(pairs);
    }
    Cow::Owned(shown.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full(url: &str) -> String {
        full_url(&Url::parse(url).expect("a valid URL")).into_owned()
    }

    #[test]
    fn url_full_keeps_listing_parameters_and_hides_credentials() {
        let listing = "https://api.example.com/v1/companies?limit=100&sort=-createdAt&cursor=abc";
        assert_eq!(full(listing), listing);
        assert_eq!(
            full("https://user:pw@auth.example.com/x?cursor=c&access_token=t1&Code=c2#frag"),
            "https://auth.example.com/x?cursor=c&access_token=REDACTED&Code=REDACTED"
        );
    }
}
