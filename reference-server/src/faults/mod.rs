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
//! Most faults are HTTP answers made by the server itself. Three need more than a wiremock
//! responder's whole answer: [`Fault::DropConnection`] and [`Fault::CutBody`], real network
//! failures, and [`Fault::OversizedBody`], a body larger than memory; and a slow token answer
//! must wait before the grant is processed. For those the reference server puts a small HTTP
//! proxy (hyper's) in front of the API and one in front of the authorization server (started by
//! [`ReferenceServerBuilder::faults`](super::ReferenceServerBuilder::faults));
//! the server marks the response and the proxy closes the client's
//! connection, before the first response byte or half-way through the body, generates the
//! body, or holds the request and sends it again once the delay is over.

mod counts;
mod state;

use std::time::Duration;

pub use counts::{EndpointFaultCounts, FaultCounts};
pub(crate) use state::{FaultState, Target, mark, replacement_body};

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
    /// `Content-Length` (it is sent in chunks). The proxy generates the bytes as it writes
    /// them, so the body is never held in memory (needs the proxy, like
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
    /// A short name, as in [`ServedRequest::fault`](super::ServedRequest::fault).
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
    pub(super) fn count_name(&self) -> String {
        match self {
            Fault::Status(status) => format!("status_{status}"),
            Fault::Html(status) => format!("html_{status}"),
            Fault::Empty(status) => format!("empty_{status}"),
            other => other.name().to_owned(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Rule {
    At { request: u64, fault: Fault },
    Every { n: u64, fault: Fault },
    Sequence { faults: Vec<Option<Fault>> },
    EveryPage { n: u64, fault: Fault },
}

impl Rule {
    pub(super) fn fault_for_request(&self, request: u64) -> Option<&Fault> {
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
/// use business_records_reference_server::{Fault, Faults, RetryAfter};
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

#[cfg(test)]
mod tests;
