//! Fault injection: a per-server schedule of failures for the list endpoints and the token
//! endpoint.
//!
//! A [`Faults`] schedule is a list of rules. Every request to a list endpoint
//! (`/v{n}/companies`, `/v{n}/contacts`) draws its fault when it arrives,
//! before authentication: the request-counted rules ([`Faults::at`],
//! [`Faults::every`], [`Faults::sequence`]) are tried in the order they were
//! added and the first that matches wins; when none does, the request counts
//! as a page and the page-counted rules ([`Faults::every_page`]) are tried.
//!
//! Requests to the token endpoint (`POST /oauth2/token`) are numbered on their own and draw
//! from the token rules ([`Faults::token_at`], [`Faults::token_every`],
//! [`Faults::token_sequence`]) the same way. A token fault acts before the grant is
//! processed, as a proxy or load balancer in front of the authorization server would: a
//! faulted request consumes no authorization code and rotates no refresh token, and a slow
//! answer is processed only once its delay is over, if the client is still waiting. The JWKS
//! endpoint (`GET /.well-known/jwks.json`) has rules of its own too ([`Faults::jwks_at`],
//! [`Faults::jwks_every`], [`Faults::jwks_sequence`]), for key-fetch outages.
//!
//! Most faults are HTTP answers made by the server itself. Two need a
//! real network failure, which a wiremock responder cannot produce:
//! [`Fault::DropConnection`] and [`Fault::CutBody`]; and a slow token answer must wait before
//! the grant is processed. For those the reference server puts a small TCP proxy in front of
//! the API and one in front of the authorization server (started by
//! [`ReferenceServerBuilder::faults`](super::ReferenceServerBuilder::faults));
//! the server marks the response and the proxy closes the client's
//! connection, before the first response byte or half-way through the body, or holds the
//! request and sends it again once the delay is over.

use std::collections::HashMap;
use std::time::Duration;

use chrono::DateTime;
use wiremock::ResponseTemplate;

use super::ErrorReply;
use super::jwt::unix_now_ms;
use crate::timestamp::http_date::format_http_date;

/// The response header by which the API server asks the proxy to break a connection.
pub(crate) const MARKER_HEADER: &str = "x-reference-fault";
/// Marker value: close the connection without answering.
pub(crate) const MARKER_DROP: &str = "drop";
/// Marker value: close the connection half-way through the body.
pub(crate) const MARKER_CUT: &str = "cut";
/// Marker value prefix: wait this many milliseconds, then send the request again (`hold=<ms>`).
pub(crate) const MARKER_HOLD: &str = "hold=";
/// The request header by which the proxy sends a held request again; its value is the
/// server's replay secret, so no client can skip a fault.
pub(crate) const REPLAY_HEADER: &str = "x-reference-replay";
/// Marker value prefix, followed by a byte count: send a body that long, generated as it is
/// written.
pub(crate) const MARKER_OVERSIZE: &str = "oversize:";

/// How a 429 says when to come back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RetryAfter {
    /// No `Retry-After` header.
    Absent,
    /// `Retry-After: <seconds>`.
    Seconds(u64),
    /// `Retry-After: <HTTP-date>`, this long from now (rounded up to the
    /// next whole second, the resolution of an HTTP-date).
    Date(Duration),
}

/// One injected failure.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Fault {
    /// 429 `rate_limited`, with `Retry-After` as given.
    RateLimited(RetryAfter),
    /// This status with a JSON error body: 503 is `temporarily_unavailable`,
    /// other 5xx `server_error`, 4xx `invalid_request`.
    Status(u16),
    /// This status with an HTML page as its body, as a proxy or load balancer in front of
    /// the server sends it (e.g. a 502, 503 or 504 from a gateway).
    Html(u16),
    /// This status with an empty body.
    Empty(u16),
    /// The connection is closed once the request has arrived, before any
    /// byte of the response (needs the proxy: start the server with
    /// [`ReferenceServerBuilder::faults`](super::ReferenceServerBuilder::faults)).
    DropConnection,
    /// The response head promises the whole body; the connection is closed
    /// after half of it (needs the proxy, like [`Fault::DropConnection`]).
    CutBody,
    /// A 200 whose JSON body is cut short, with correct HTTP framing.
    TruncatedJson,
    /// A 200 whose body is not JSON at all.
    InvalidJson,
    /// A 200 with exactly these bytes as its `application/json` body.
    Body(Vec<u8>),
    /// This status with exactly these bytes as its body, and no other header than
    /// `content-type: application/json`: e.g. a bare 410 with an empty body, or an error
    /// whose `error_description` is huge.
    Reply(u16, Vec<u8>),
    /// A 200 whose body is this many bytes (the start of a page, then filler records), with no
    /// `Content-Length`: the end of the connection ends it. The proxy generates the bytes as it
    /// writes them, so the body is never held in memory (needs the proxy, like
    /// [`Fault::DropConnection`]).
    OversizedBody(u64),
    /// The normal answer, sent after this delay. At the token endpoint the request waits
    /// before it is processed (needs the proxy, like [`Fault::DropConnection`]).
    Slow(Duration),
    /// A 200 with no items, `hasMore: true` and a fresh cursor to the same
    /// position: the next request continues where this one would have.
    EmptyPage,
    /// 400 `cursor_expired`, when the request carries a cursor (otherwise
    /// the normal answer).
    ExpireCursor,
    /// Every access token issued so far expires before this request is
    /// checked, so it is answered 401 `invalid_token`; tokens issued
    /// afterwards work.
    ExpireTokens,
}

impl Fault {
    /// A short name, as in [`ApiRequest::fault`](super::ApiRequest::fault).
    pub fn name(&self) -> &'static str {
        match self {
            Fault::RateLimited(_) => "rate_limited",
            Fault::Status(_) => "status",
            Fault::Html(_) => "html",
            Fault::Empty(_) => "empty",
            Fault::DropConnection => "drop_connection",
            Fault::CutBody => "cut_body",
            Fault::TruncatedJson => "truncated_json",
            Fault::InvalidJson => "invalid_json",
            Fault::Body(_) => "body",
            Fault::Reply(..) => "reply",
            Fault::OversizedBody(_) => "oversized_body",
            Fault::Slow(_) => "slow",
            Fault::EmptyPage => "empty_page",
            Fault::ExpireCursor => "expire_cursor",
            Fault::ExpireTokens => "expire_tokens",
        }
    }

    /// True for the faults the proxy carries out.
    pub(crate) fn needs_proxy(&self) -> bool {
        matches!(self, Fault::DropConnection | Fault::CutBody | Fault::OversizedBody(_))
    }

    /// The name [`FaultCounts`] counts it under.
    fn count_name(&self) -> String {
        match self {
            Fault::Status(status) => format!("status_{status}"),
            Fault::Html(status) => format!("html_{status}"),
            Fault::Empty(status) => format!("empty_{status}"),
            other => other.name().to_owned(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Rule {
    At { request: u64, fault: Fault },
    Every { n: u64, fault: Fault },
    Sequence { faults: Vec<Option<Fault>> },
    EveryPage { n: u64, fault: Fault },
}

impl Rule {
    fn fault_for_request(&self, request: u64) -> Option<&Fault> {
        match self {
            Rule::At { request: at, fault } => (*at == request).then_some(fault),
            Rule::Every { n, fault } => request.is_multiple_of(*n).then_some(fault),
            Rule::Sequence { faults } => {
                let index = usize::try_from(request.checked_sub(1)?).ok()?;
                faults.get(index)?.as_ref()
            }
            Rule::EveryPage { .. } => None,
        }
    }

    fn faults(&self) -> Box<dyn Iterator<Item = &Fault> + '_> {
        match self {
            Rule::At { fault, .. } | Rule::Every { fault, .. } | Rule::EveryPage { fault, .. } => {
                Box::new(std::iter::once(fault))
            }
            Rule::Sequence { faults } => Box::new(faults.iter().flatten()),
        }
    }
}

/// A schedule of failures for the list endpoints and the token endpoint of a
/// [`ReferenceServer`](super::ReferenceServer).
///
/// Requests are numbered from 1 in the order they reach the API. The
/// request-counted rules are tried in the order they were added; a request
/// none of them matches is a "page", and pages are numbered from 1 for
/// [`every_page`](Faults::every_page). Token requests are numbered from 1 on their own, and
/// the `token_` rules apply to them alone.
///
/// ```
/// use std::time::Duration;
/// use business_records::reference_server::{Fault, Faults, RetryAfter};
///
/// // Every 5th request is rate limited, every 7th is a 503, every 3rd page is empty.
/// let faults = Faults::new()
///     .every(5, Fault::RateLimited(RetryAfter::Seconds(1)))
///     .every(7, Fault::Status(503))
///     .every_page(3, Fault::EmptyPage);
/// // Exactly these faults for the first four requests.
/// let script = Faults::new().sequence([None, Some(Fault::DropConnection), None, Some(Fault::Slow(Duration::from_millis(50)))]);
/// // The token endpoint: every 3rd token request is an HTML 503 from a gateway, the 2nd is rate limited.
/// let token = Faults::new()
///     .token_every(3, Fault::Html(503))
///     .token_at(2, Fault::RateLimited(RetryAfter::Seconds(1)));
/// # let _ = (faults, script, token);
/// ```
#[must_use]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Faults {
    rules: Vec<Rule>,
    token_rules: Vec<Rule>,
    jwks_rules: Vec<Rule>,
}

impl Faults {
    /// No faults.
    pub fn new() -> Self {
        Self::default()
    }

    /// No faults; with [`ReferenceServerBuilder::faults`](super::ReferenceServerBuilder::faults),
    /// a server whose faults are set later with
    /// [`ReferenceServer::set_faults`](super::ReferenceServer::set_faults).
    pub fn none() -> Self {
        Self::default()
    }

    /// `fault` for request number `request` (the first request is 1).
    pub fn at(mut self, request: u64, fault: Fault) -> Self {
        self.rules.push(Rule::At { request, fault });
        self
    }

    /// `fault` for every `n`-th request (`n` of 0 counts as 1).
    pub fn every(mut self, n: u64, fault: Fault) -> Self {
        self.rules.push(Rule::Every { n: n.max(1), fault });
        self
    }

    /// Request `i` (from 1) gets the `i`-th entry; `None` entries and
    /// requests past the end get no fault from this rule.
    pub fn sequence<I: IntoIterator<Item = Option<Fault>>>(mut self, faults: I) -> Self {
        self.rules.push(Rule::Sequence { faults: faults.into_iter().collect() });
        self
    }

    /// `fault` for every `n`-th page: requests that no request-counted rule
    /// matched (`n` of 0 counts as 1).
    pub fn every_page(mut self, n: u64, fault: Fault) -> Self {
        self.rules.push(Rule::EveryPage { n: n.max(1), fault });
        self
    }

    /// `fault` for token request number `request` (the first is 1).
    ///
    /// At the token endpoint, [`Fault::RateLimited`], [`Fault::Status`], [`Fault::Html`],
    /// [`Fault::Empty`], [`Fault::Reply`], [`Fault::DropConnection`], [`Fault::OversizedBody`],
    /// [`Fault::Slow`], [`Fault::InvalidJson`], [`Fault::Body`] and [`Fault::ExpireTokens`] apply; the page faults do not (they are not
    /// counted as applied). Every one of them acts before the grant is processed.
    pub fn token_at(mut self, request: u64, fault: Fault) -> Self {
        self.token_rules.push(Rule::At { request, fault });
        self
    }

    /// `fault` for every `n`-th token request (`n` of 0 counts as 1); see
    /// [`token_at`](Self::token_at) for the faults that apply.
    pub fn token_every(mut self, n: u64, fault: Fault) -> Self {
        self.token_rules.push(Rule::Every { n: n.max(1), fault });
        self
    }

    /// Token request `i` (from 1) gets the `i`-th entry; `None` entries and requests past the
    /// end get no fault from this rule. See [`token_at`](Self::token_at) for the faults that
    /// apply.
    pub fn token_sequence<I: IntoIterator<Item = Option<Fault>>>(mut self, faults: I) -> Self {
        self.token_rules.push(Rule::Sequence { faults: faults.into_iter().collect() });
        self
    }

    /// `fault` for JWKS request number `request` (the first is 1). [`Fault::RateLimited`],
    /// [`Fault::Status`], [`Fault::Html`], [`Fault::Empty`], [`Fault::Reply`],
    /// [`Fault::DropConnection`], [`Fault::OversizedBody`], [`Fault::Slow`],
    /// [`Fault::InvalidJson`] and [`Fault::Body`] apply.
    pub fn jwks_at(mut self, request: u64, fault: Fault) -> Self {
        self.jwks_rules.push(Rule::At { request, fault });
        self
    }

    /// `fault` for every `n`-th JWKS request (`n` of 0 counts as 1).
    pub fn jwks_every(mut self, n: u64, fault: Fault) -> Self {
        self.jwks_rules.push(Rule::Every { n: n.max(1), fault });
        self
    }

    /// JWKS request `i` (from 1) gets the `i`-th entry; `None` entries and requests past the
    /// end get no fault from this rule.
    pub fn jwks_sequence<I: IntoIterator<Item = Option<Fault>>>(mut self, faults: I) -> Self {
        self.jwks_rules.push(Rule::Sequence { faults: faults.into_iter().collect() });
        self
    }

    /// True when some rule needs a proxy: [`Fault::DropConnection`], [`Fault::CutBody`], or
    /// a slow token answer.
    pub(crate) fn need_proxy(&self) -> bool {
        self.rules.iter().chain(&self.jwks_rules).flat_map(Rule::faults).any(Fault::needs_proxy)
            || self
                .token_rules
                .iter()
                .flat_map(Rule::faults)
                .any(|f| f.needs_proxy() || matches!(f, Fault::Slow(_)))
    }
}

/// What the fault injection did so far: requests counted and faults applied.
///
/// A fault drawn for a request counts only when it was applied, e.g.
/// [`Fault::ExpireCursor`] counts for requests that carried a cursor.
#[non_exhaustive]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultCounts {
    /// Requests to the list endpoints since the schedule was set.
    pub requests: u64,
    /// Requests that no request-counted rule matched.
    pub pages: u64,
    /// Faults applied to list requests, by [`Fault::name`]; [`Fault::Status`],
    /// [`Fault::Html`] and [`Fault::Empty`] are counted with their status, e.g. `status_503`,
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

/// What the fault injection did at the token endpoint.
pub type TokenFaultCounts = EndpointFaultCounts;

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

/// Where a request went: the endpoints with a schedule of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// The list endpoints.
    Api,
    /// `POST /oauth2/token`.
    Token,
    /// `GET /.well-known/jwks.json`.
    Jwks,
}

/// The counters of one target.
#[derive(Debug, Default)]
struct Lane {
    requests: u64,
    applied: HashMap<String, u64>,
    early_retries: u64,
    /// Unix ms before which a retry after the last 429 is early.
    retry_not_before_ms: Option<u64>,
}

impl Lane {
    fn counts(&self) -> EndpointFaultCounts {
        EndpointFaultCounts {
            requests: self.requests,
            applied: self.applied.clone(),
            early_retries: self.early_retries,
        }
    }

    /// Counts one request; returns its number.
    fn arrive(&mut self) -> u64 {
        if let Some(not_before) = self.retry_not_before_ms.take()
            && unix_now_ms() < not_before
        {
            self.early_retries += 1;
        }
        self.requests += 1;
        self.requests
    }
}

/// The schedule in force and its counters.
#[derive(Debug, Default)]
pub(crate) struct FaultState {
    faults: Faults,
    api: Lane,
    pages: u64,
    token: Lane,
    jwks: Lane,
}

impl FaultState {
    pub(crate) fn new(faults: Faults) -> Self {
        Self { faults, ..Self::default() }
    }

    pub(crate) fn counts(&self) -> FaultCounts {
        FaultCounts {
            requests: self.api.requests,
            pages: self.pages,
            applied: self.api.applied.clone(),
            early_retries: self.api.early_retries,
            token: self.token.counts(),
            jwks: self.jwks.counts(),
        }
    }

    fn lane(&mut self, target: Target) -> &mut Lane {
        match target {
            Target::Api => &mut self.api,
            Target::Token => &mut self.token,
            Target::Jwks => &mut self.jwks,
        }
    }

    /// Counts one request to `target` and draws its fault.
    pub(crate) fn draw(&mut self, target: Target) -> Option<Fault> {
        let request = self.lane(target).arrive();
        let rules = match target {
            Target::Api => &self.faults.rules,
            Target::Token => &self.faults.token_rules,
            Target::Jwks => &self.faults.jwks_rules,
        };
        if let Some(fault) = rules.iter().find_map(|r| r.fault_for_request(request)) {
            return Some(fault.clone());
        }
        if target != Target::Api {
            return None;
        }
        self.pages += 1;
        let page = self.pages;
        self.faults.rules.iter().find_map(|rule| match rule {
            Rule::EveryPage { n, fault } if page.is_multiple_of(*n) => Some(fault.clone()),
            _ => None,
        })
    }

    /// Records that `fault` was applied to a request to `target`.
    pub(crate) fn applied(&mut self, target: Target, fault: &Fault) {
        *self.lane(target).applied.entry(fault.count_name()).or_default() += 1;
    }

    /// Remembers when a client of `target` may come back after a 429.
    fn rate_limited_until(&mut self, target: Target, until_ms: u64) {
        self.lane(target).retry_not_before_ms = Some(until_ms);
    }

    /// The answer that stands in for the real one when `fault` needs none: an error status,
    /// or a connection the proxy drops. `None` for the faults that change, delay or precede
    /// the real answer. Returns the status recorded for the request and the response.
    pub(crate) fn stand_in(&mut self, target: Target, fault: &Fault) -> Option<(u16, ResponseTemplate)> {
        let reply = match fault {
            Fault::RateLimited(retry_after) => {
                let mut reply = ErrorReply::new(429, "rate_limited", "too many requests; retry later");
                if let Some((value, until_ms)) = retry_after_value(*retry_after) {
                    reply = reply.with_header("retry-after", value);
                    self.rate_limited_until(target, until_ms);
                }
                reply
            }
            Fault::Status(status) => ErrorReply::new(*status, status_code_text(*status), "injected failure"),
            Fault::Html(status) => {
                let page = format!(
                    "<html><head><title>{status}</title></head><body><h1>{status}</h1><hr>gateway</body></html>"
                );
                return Some((*status, ResponseTemplate::new(*status).set_body_raw(page, "text/html")));
            }
            Fault::Empty(status) => return Some((*status, ResponseTemplate::new(*status))),
            Fault::DropConnection => return Some((200, mark(ResponseTemplate::new(200), MARKER_DROP))),
            Fault::OversizedBody(bytes) => {
                return Some((200, mark(ResponseTemplate::new(200), format!("{MARKER_OVERSIZE}{bytes}"))));
            }
            Fault::Reply(status, body) => {
                return Some((
                    *status,
                    ResponseTemplate::new(*status).set_body_raw(body.clone(), "application/json"),
                ));
            }
            _ => return None,
        };
        Some((reply.status, reply.into_response()))
    }
}

/// The body of a 200 that replaces the real one: [`Fault::InvalidJson`] and [`Fault::Body`].
pub(crate) fn replacement_body(fault: &Fault) -> Option<Vec<u8>> {
    match fault {
        Fault::InvalidJson => Some(b"<html><body>bad gateway</body></html>".to_vec()),
        Fault::Body(bytes) => Some(bytes.clone()),
        _ => None,
    }
}

/// The `Retry-After` value to send and the Unix ms before which a retry is early.
fn retry_after_value(retry_after: RetryAfter) -> Option<(String, u64)> {
    let now = unix_now_ms();
    match retry_after {
        RetryAfter::Absent => None,
        RetryAfter::Seconds(secs) => Some((secs.to_string(), now.saturating_add(secs.saturating_mul(1000)))),
        RetryAfter::Date(ahead) => {
            let ahead_ms = u64::try_from(ahead.as_millis()).unwrap_or(u64::MAX);
            // An HTTP-date has whole seconds: round up so the date is never early.
            let at_secs = now.saturating_add(ahead_ms).div_ceil(1000);
            let at = i64::try_from(at_secs).ok().and_then(|secs| DateTime::from_timestamp(secs, 0))?;
            Some((format_http_date(at), at_secs.saturating_mul(1000)))
        }
    }
}

/// The error code sent with a [`Fault::Status`] answer.
fn status_code_text(status: u16) -> &'static str {
    match status {
        429 => "rate_limited",
        503 => "temporarily_unavailable",
        400..=499 => "invalid_request",
        _ => "server_error",
    }
}

/// Marks a response for the proxy to break its connection.
pub(crate) fn mark(response: ResponseTemplate, marker: impl Into<String>) -> ResponseTemplate {
    response.insert_header(MARKER_HEADER, marker.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draws(faults: Faults, n: usize) -> Vec<Option<&'static str>> {
        let mut state = FaultState::new(faults);
        (0..n).map(|_| state.draw(Target::Api).map(|f| f.name())).collect()
    }

    #[test]
    fn request_rules_in_order_then_page_rules() {
        let faults = Faults::new()
            .every(5, Fault::RateLimited(RetryAfter::Seconds(1)))
            .every(7, Fault::Status(503))
            .every_page(3, Fault::EmptyPage);
        let got = draws(faults, 15);
        let rl = Some("rate_limited");
        let st = Some("status");
        let ep = Some("empty_page");
        // Requests 1..=15: pages are 1,2,3,4,6,8,9,11,12,13 (3rd, 6th and 9th pages: 3, 8, 12).
        assert_eq!(got, [None, None, ep, None, rl, None, st, ep, None, rl, None, ep, None, st, rl]);
    }

    #[test]
    fn at_and_sequence() {
        let faults = Faults::new().at(2, Fault::InvalidJson).sequence([
            Some(Fault::CutBody),
            Some(Fault::DropConnection),
            None,
            Some(Fault::EmptyPage),
        ]);
        assert_eq!(
            draws(faults.clone(), 6),
            [Some("cut_body"), Some("invalid_json"), None, Some("empty_page"), None, None]
        );
        assert!(faults.need_proxy());
        assert!(!Faults::new().every(1, Fault::Slow(Duration::ZERO)).need_proxy());
    }

    #[test]
    fn token_requests_have_their_own_numbering_and_rules() {
        let faults = Faults::new()
            .every(2, Fault::Status(503))
            .token_every(3, Fault::Html(502))
            .token_sequence([Some(Fault::DropConnection)]);
        let mut state = FaultState::new(faults.clone());
        let api: Vec<_> = (0..4).map(|_| state.draw(Target::Api).map(|f| f.name())).collect();
        let token: Vec<_> = (0..6).map(|_| state.draw(Target::Token).map(|f| f.name())).collect();
        assert_eq!(api, [None, Some("status"), None, Some("status")]);
        assert_eq!(token, [Some("drop_connection"), None, Some("html"), None, None, Some("html")]);
        state.applied(Target::Token, &Fault::Html(502));
        let counts = state.counts();
        assert_eq!((counts.requests, counts.pages, counts.token.requests), (4, 2, 6));
        assert_eq!((counts.token.get("html_502"), counts.token.total(), counts.get("html_502")), (1, 1, 0));
        assert!(faults.need_proxy());
        assert!(Faults::new().token_at(1, Fault::Slow(Duration::ZERO)).need_proxy());
        assert!(Faults::new().jwks_at(1, Fault::DropConnection).need_proxy());
        assert!(!Faults::new().jwks_at(1, Fault::Slow(Duration::ZERO)).need_proxy());
        let mut jwks = FaultState::new(Faults::new().jwks_every(2, Fault::Status(503)));
        let drawn: Vec<_> = (0..4).map(|_| jwks.draw(Target::Jwks).map(|f| f.name())).collect();
        assert_eq!(drawn, [None, Some("status"), None, Some("status")]);
        assert_eq!((jwks.counts().jwks.requests, jwks.counts().requests, jwks.counts().pages), (4, 0, 0));
        assert!(!Faults::new().at(1, Fault::Slow(Duration::ZERO)).need_proxy());
    }

    #[test]
    fn stand_in_answers() {
        let mut state = FaultState::new(Faults::new());
        for (fault, status) in [
            (Fault::RateLimited(RetryAfter::Seconds(1)), 429),
            (Fault::Status(503), 503),
            (Fault::Html(502), 502),
            (Fault::Empty(504), 504),
            (Fault::DropConnection, 200),
            (Fault::Reply(410, Vec::new()), 410),
            (Fault::OversizedBody(1024), 200),
        ] {
            assert_eq!(state.stand_in(Target::Token, &fault).map(|(s, _)| s), Some(status), "{fault:?}");
        }
        assert!(state.stand_in(Target::Token, &Fault::Slow(Duration::ZERO)).is_none());
        assert!(state.stand_in(Target::Api, &Fault::CutBody).is_none());
        // The 429 set when the next token request may come: right away is early.
        state.draw(Target::Token);
        assert_eq!(state.counts().token.early_retries, 1);
    }

    #[test]
    fn early_retries_are_counted() {
        let mut state = FaultState::new(Faults::new());
        state.rate_limited_until(Target::Api, unix_now_ms() + 60_000);
        state.draw(Target::Api);
        state.draw(Target::Api);
        assert_eq!(state.counts().early_retries, 1);
        state.rate_limited_until(Target::Api, unix_now_ms().saturating_sub(1));
        state.draw(Target::Api);
        assert_eq!(state.counts().early_retries, 1);
        assert_eq!(state.counts().token, EndpointFaultCounts::default());
    }

    #[test]
    fn retry_after_dates_are_whole_seconds_never_early() {
        let before = unix_now_ms();
        let (value, until) = retry_after_value(RetryAfter::Date(Duration::from_millis(1500))).unwrap();
        assert!(until >= before + 1500 && until % 1000 == 0, "{until}");
        let parsed = crate::timestamp::parse_http_date(&value).map(|date| date.timestamp_millis());
        assert_eq!(parsed, i64::try_from(until).ok());
        assert_eq!(retry_after_value(RetryAfter::Seconds(2)).unwrap().0, "2");
        assert_eq!(retry_after_value(RetryAfter::Absent), None);
    }
}
