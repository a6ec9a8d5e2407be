//! Fault injection: a per-server schedule of failures for the list endpoints.
//!
//! A [`Faults`] schedule is a list of rules. Every request to a list endpoint
//! (`/v{n}/companies`, `/v{n}/contacts`) draws its fault when it arrives,
//! before authentication: the request-counted rules ([`Faults::at`],
//! [`Faults::every`], [`Faults::sequence`]) are tried in the order they were
//! added and the first that matches wins; when none does, the request counts
//! as a page and the page-counted rules ([`Faults::every_page`]) are tried.
//!
//! Most faults are HTTP answers made by the API server itself. Two need a
//! real network failure, which a wiremock responder cannot produce:
//! [`Fault::DropConnection`] and [`Fault::CutBody`]. For those the reference
//! server puts a small TCP proxy in front of the API (started by
//! [`ReferenceServerBuilder::faults`](super::ReferenceServerBuilder::faults));
//! the API server marks the response and the proxy closes the client's
//! connection, before the first response byte or half-way through the body.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use wiremock::ResponseTemplate;

use super::jwt::unix_now_ms;

/// The response header by which the API server asks the proxy to break a connection.
pub(crate) const MARKER_HEADER: &str = "x-reference-fault";
/// Marker value: close the connection without answering.
pub(crate) const MARKER_DROP: &str = "drop";
/// Marker value: close the connection half-way through the body.
pub(crate) const MARKER_CUT: &str = "cut";
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
    /// This status with an error body: 503 is `temporarily_unavailable`,
    /// other 5xx `server_error`, 4xx `invalid_request`.
    Status(u16),
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
    /// The normal answer, sent after this delay.
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

/// A schedule of failures for the list endpoints of a
/// [`ReferenceServer`](super::ReferenceServer).
///
/// Requests are numbered from 1 in the order they reach the API. The
/// request-counted rules are tried in the order they were added; a request
/// none of them matches is a "page", and pages are numbered from 1 for
/// [`every_page`](Faults::every_page).
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
/// # let _ = (faults, script);
/// ```
#[must_use]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Faults {
    rules: Vec<Rule>,
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

    /// True when some rule needs the proxy ([`Fault::DropConnection`], [`Fault::CutBody`]).
    pub(crate) fn need_proxy(&self) -> bool {
        self.rules.iter().flat_map(Rule::faults).any(Fault::needs_proxy)
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
    /// Faults applied, by [`Fault::name`]; [`Fault::Status`] is counted as
    /// `status_<code>`, e.g. `status_503`.
    pub applied: HashMap<String, u64>,
    /// Requests that arrived before the `Retry-After` of the 429 just before them
    /// had passed.
    pub early_retries: u64,
}

impl FaultCounts {
    /// How often the fault named `name` was applied.
    pub fn get(&self, name: &str) -> u64 {
        self.applied.get(name).copied().unwrap_or(0)
    }
}

/// The schedule in force and its counters.
#[derive(Debug, Default)]
pub(crate) struct FaultState {
    faults: Faults,
    counts: FaultCounts,
    /// Unix ms before which a retry after the last 429 is early.
    retry_not_before_ms: Option<u64>,
}

impl FaultState {
    pub(crate) fn new(faults: Faults) -> Self {
        Self { faults, ..Self::default() }
    }

    pub(crate) fn counts(&self) -> FaultCounts {
        self.counts.clone()
    }

    /// Counts one request and draws its fault.
    pub(crate) fn draw(&mut self) -> Option<Fault> {
        let now = unix_now_ms();
        if let Some(not_before) = self.retry_not_before_ms.take()
            && now < not_before
        {
            self.counts.early_retries += 1;
        }
        self.counts.requests += 1;
        let request = self.counts.requests;
        if let Some(fault) = self.faults.rules.iter().find_map(|r| r.fault_for_request(request)) {
            return Some(fault.clone());
        }
        self.counts.pages += 1;
        let page = self.counts.pages;
        self.faults.rules.iter().find_map(|rule| match rule {
            Rule::EveryPage { n, fault } if page.is_multiple_of(*n) => Some(fault.clone()),
            _ => None,
        })
    }

    /// Records that `fault` was applied.
    pub(crate) fn applied(&mut self, fault: &Fault) {
        let name = match fault {
            Fault::Status(status) => format!("status_{status}"),
            other => other.name().to_owned(),
        };
        *self.counts.applied.entry(name).or_default() += 1;
    }

    /// Remembers when a client may come back after a 429.
    pub(crate) fn rate_limited_until(&mut self, until_ms: u64) {
        self.retry_not_before_ms = Some(until_ms);
    }
}

/// The `Retry-After` value to send and the Unix ms before which a retry is early.
pub(crate) fn retry_after_value(retry_after: RetryAfter) -> Option<(String, u64)> {
    let now = unix_now_ms();
    match retry_after {
        RetryAfter::Absent => None,
        RetryAfter::Seconds(secs) => Some((secs.to_string(), now.saturating_add(secs.saturating_mul(1000)))),
        RetryAfter::Date(ahead) => {
            let ahead_ms = u64::try_from(ahead.as_millis()).unwrap_or(u64::MAX);
            // An HTTP-date has whole seconds: round up so the date is never early.
            let at_secs = now.saturating_add(ahead_ms).div_ceil(1000);
            let at = SystemTime::UNIX_EPOCH + Duration::from_secs(at_secs);
            Some((httpdate::fmt_http_date(at), at_secs.saturating_mul(1000)))
        }
    }
}

/// The error code sent with a [`Fault::Status`] answer.
pub(crate) fn status_code_text(status: u16) -> &'static str {
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
        (0..n).map(|_| state.draw().map(|f| f.name())).collect()
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
    fn early_retries_are_counted() {
        let mut state = FaultState::new(Faults::new());
        state.rate_limited_until(unix_now_ms() + 60_000);
        state.draw();
        state.draw();
        assert_eq!(state.counts().early_retries, 1);
        state.rate_limited_until(unix_now_ms().saturating_sub(1));
        state.draw();
        assert_eq!(state.counts().early_retries, 1);
    }

    #[test]
    fn retry_after_dates_are_whole_seconds_never_early() {
        let before = unix_now_ms();
        let (value, until) = retry_after_value(RetryAfter::Date(Duration::from_millis(1500))).unwrap();
        assert!(until >= before + 1500 && until % 1000 == 0, "{until}");
        let parsed = httpdate::parse_http_date(&value).unwrap();
        assert_eq!(parsed, SystemTime::UNIX_EPOCH + Duration::from_millis(until));
        assert_eq!(retry_after_value(RetryAfter::Seconds(2)).unwrap().0, "2");
        assert_eq!(retry_after_value(RetryAfter::Absent), None);
    }
}
