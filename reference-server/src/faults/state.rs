//! The schedule in force and its counters, and the answers that stand in for real ones.

use std::collections::HashMap;

use chrono::DateTime;
use wiremock::ResponseTemplate;

use super::super::ErrorReply;
use super::super::http_date::format_http_date;
use super::super::jwt::unix_now_ms;
use super::{
    EndpointFaultCounts, Fault, FaultCounts, Faults, MARKER_DROP, MARKER_HEADER, MARKER_OVERSIZE, RetryAfter,
    Rule,
};

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
pub(super) struct Lane {
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
    pub(super) fn rate_limited_until(&mut self, target: Target, until_ms: u64) {
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
pub(super) fn retry_after_value(retry_after: RetryAfter) -> Option<(String, u64)> {
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
