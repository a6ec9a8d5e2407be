//! Fault injection: a schedule of failures, each rule for one [`Endpoint`].
//!
//! A [`Faults`] schedule is a list of rules, each for one endpoint. Every request to an
//! endpoint is numbered (from 1, per endpoint) and draws its fault when it arrives, before
//! anything else: the request-counted rules of its endpoint ([`Faults::on`],
//! [`Faults::on_every`], [`Faults::on_sequence`]) are tried in the order they were added and the
//! first that matches wins; when none does, the request counts as a page of that endpoint and
//! its page-counted rules ([`Faults::on_every_page`]) are tried.
//!
//! A fault that replaces the answer (a status, a [`Reply`], a body, a dropped connection) acts
//! before the request is processed, as a proxy or load balancer in front of the server would:
//! a faulted token request consumes no authorization code and rotates no refresh token, a
//! faulted `POST` creates nothing. A slow token answer is processed only once its delay is
//! over, if the client is still waiting; elsewhere a slow answer, and a late one everywhere, is
//! processed at once and sent late. The faults that cut, truncate or delay a body act on the real answer.
//!
//! Most faults are HTTP answers made by the server itself. Some need more than a wiremock
//! responder's whole answer: [`Fault::DropConnection`] and [`Fault::CutBody`], real network
//! failures; [`Fault::OversizedBody`] and [`Reply::repeated`], bodies generated as they are
//! sent; and a slow token answer, which must wait before the grant is processed. For those the
//! reference server puts a small HTTP proxy (hyper's) in front of the API and one in front of
//! the authorization server (started by
//! [`ReferenceServerBuilder::faults`](super::ReferenceServerBuilder::faults)); the server marks
//! the response and the proxy closes the client's connection, before the first response byte or
//! half-way through the body, generates the body, or holds the request and sends it again once
//! the delay is over.

mod counts;
mod reply;
mod state;

use std::time::Duration;

pub use counts::FaultCounts;
pub use reply::Reply;
pub(crate) use state::FaultState;

use super::Endpoint;

/// How a 429 says when to come back.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RetryAfter {
    /// No `Retry-After` header.
    Absent,
    /// `Retry-After: <seconds>`; 0 asks for a retry at once, so a retry test takes
    /// milliseconds.
    Seconds(u64),
    /// `Retry-After: <HTTP-date>`, this long from now (rounded up to the
    /// next whole second, the resolution of an HTTP-date).
    Date(Duration),
    /// `Retry-After` with exactly this text, e.g. `18446744073709551615`, `-1` or `soon`.
    Raw(String),
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
    /// after half of it (needs the proxy, like [`Fault::DropConnection`]). Applies to a
    /// successful answer.
    CutBody,
    /// A successful answer whose JSON body is cut short, with correct HTTP framing.
    TruncatedJson,
    /// A 200 whose body is not JSON at all.
    InvalidJson,
    /// A 200 with exactly these bytes as its `application/json` body (any bytes, UTF-8 or
    /// not); [`Fault::Reply`] chooses the status and headers too.
    Body(Vec<u8>),
    /// Exactly this answer: status, headers and body as the [`Reply`] says.
    Reply(Reply),
    /// A 200 whose body is this many bytes (the start of a page, then filler records), with no
    /// `Content-Length` (it is sent in chunks). The proxy generates the bytes as it writes
    /// them, so the body is never held in memory (needs the proxy, like
    /// [`Fault::DropConnection`]).
    OversizedBody(u64),
    /// The normal answer, sent after this delay. At the token endpoint the request waits
    /// before it is processed (needs the proxy there, like [`Fault::DropConnection`]).
    Slow(Duration),
    /// The normal answer, made at once and sent after this delay, at every endpoint: a refresh
    /// rotates its token when it arrives, though the client may have given up long before the
    /// answer reaches it (an answer lost in a slow network).
    Late(Duration),
    /// A list page with no items, `hasMore: true` and a fresh cursor to the same
    /// position: the next request continues where this one would have. Applies to list
    /// requests.
    EmptyPage,
    /// 400 `cursor_expired`, when a list request carries a cursor (otherwise the normal
    /// answer).
    ExpireCursor,
    /// Every access token issued so far expires before this request is
    /// checked, so an API request is answered 401 `invalid_token`; tokens issued
    /// afterwards work.
    ExpireTokens,
}

impl Fault {
    /// A short name, as [`FaultCounts`] counts it.
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
            Fault::Reply(_) => "reply",
            Fault::OversizedBody(_) => "oversized_body",
            Fault::Slow(_) => "slow",
            Fault::Late(_) => "late",
            Fault::EmptyPage => "empty_page",
            Fault::ExpireCursor => "expire_cursor",
            Fault::ExpireTokens => "expire_tokens",
        }
    }

    /// True for the faults the proxy carries out at `endpoint`.
    fn needs_proxy(&self, endpoint: Endpoint) -> bool {
        match self {
            Fault::DropConnection | Fault::CutBody | Fault::OversizedBody(_) => true,
            Fault::Reply(reply) => reply.is_generated(),
            Fault::Slow(_) => endpoint == Endpoint::Token,
            _ => false,
        }
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
    On { request: u64, fault: Fault },
    Every { n: u64, fault: Fault },
    Sequence { faults: Vec<Option<Fault>> },
    EveryPage { n: u64, fault: Fault },
}

impl Rule {
    pub(super) fn fault_for_request(&self, request: u64) -> Option<&Fault> {
        match self {
            Rule::On { request: at, fault } => (*at == request).then_some(fault),
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
            Rule::On { fault, .. } | Rule::Every { fault, .. } | Rule::EveryPage { fault, .. } => {
                Box::new(std::iter::once(fault))
            }
            Rule::Sequence { faults } => Box::new(faults.iter().flatten()),
        }
    }
}

/// A schedule of failures of a [`ReferenceServer`](super::ReferenceServer), each rule for one
/// [`Endpoint`].
///
/// The requests to each endpoint are numbered from 1 in the order they arrive. The
/// request-counted rules of an endpoint are tried in the order they were added; a request
/// none of them matches is a "page" of that endpoint, and its pages are numbered from 1 for
/// [`on_every_page`](Faults::on_every_page).
///
/// ```
/// use std::time::Duration;
/// use business_records_reference_server::{Endpoint, Fault, Faults, Reply, RetryAfter};
///
/// // Every 5th company request is rate limited (come back at once), every 7th is a 503,
/// // every 3rd page is empty.
/// let faults = Faults::new()
///     .on_every(Endpoint::Companies, 5, Fault::RateLimited(RetryAfter::Seconds(0)))
///     .on_every(Endpoint::Companies, 7, Fault::Status(503))
///     .on_every_page(Endpoint::Companies, 3, Fault::EmptyPage);
/// // Exactly these faults for the first four token requests.
/// let token = Faults::new().on_sequence(
///     Endpoint::Token,
///     [None, Some(Fault::DropConnection), None, Some(Fault::Slow(Duration::from_millis(50)))],
/// );
/// // The JWKS answers a 503 of the test's own making, once.
/// let jwks = Faults::new().on(
///     Endpoint::Jwks,
///     1,
///     Fault::Reply(Reply::json(503, r#"{"error":"down"}"#).header("retry-after", "0")),
/// );
/// # let _ = (faults, token, jwks);
/// ```
#[must_use]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Faults {
    rules: Vec<(Endpoint, Rule)>,
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

    /// `fault` for request number `n` to `endpoint` (the first is 1).
    pub fn on(self, endpoint: Endpoint, n: u64, fault: Fault) -> Self {
        self.rule(endpoint, Rule::On { request: n, fault })
    }

    /// `fault` for every `n`-th request to `endpoint` (`n` of 0 counts as 1).
    pub fn on_every(self, endpoint: Endpoint, n: u64, fault: Fault) -> Self {
        self.rule(endpoint, Rule::Every { n: n.max(1), fault })
    }

    /// Request `i` (from 1) to `endpoint` gets the `i`-th entry; `None` entries and requests
    /// past the end get no fault from this rule.
    pub fn on_sequence<I: IntoIterator<Item = Option<Fault>>>(self, endpoint: Endpoint, faults: I) -> Self {
        self.rule(endpoint, Rule::Sequence { faults: faults.into_iter().collect() })
    }

    /// `fault` for every `n`-th page of `endpoint`: its requests that no request-counted rule
    /// matched (`n` of 0 counts as 1).
    pub fn on_every_page(self, endpoint: Endpoint, n: u64, fault: Fault) -> Self {
        self.rule(endpoint, Rule::EveryPage { n: n.max(1), fault })
    }

    fn rule(mut self, endpoint: Endpoint, rule: Rule) -> Self {
        self.rules.push((endpoint, rule));
        self
    }

    /// True when some rule needs the proxy.
    pub(crate) fn need_proxy(&self) -> bool {
        self.rules.iter().any(|(endpoint, rule)| rule.faults().any(|f| f.needs_proxy(*endpoint)))
    }
}

#[cfg(test)]
mod tests;
