//! The schedule in force and its counters, and the answers that stand in for real ones.

use std::collections::HashMap;

use chrono::DateTime;

use super::super::http_date::format_http_date;
use super::super::jwt::unix_now_ms;
use super::super::proxy::{MARKER_DROP, MARKER_HEADER};
use super::super::reply::{Answer, ErrorReply};
use super::reply::Reply;
use super::{Endpoint, Fault, FaultCounts, Faults, RetryAfter, Rule};

/// The counters of one endpoint.
#[derive(Debug, Default)]
struct Lane {
    counts: FaultCounts,
    /// Unix ms before which a retry after the last 429 is early.
    retry_not_before_ms: Option<u64>,
}

/// The schedule in force and its counters.
#[derive(Debug, Default)]
pub(crate) struct FaultState {
    faults: Faults,
    lanes: HashMap<Endpoint, Lane>,
}

impl FaultState {
    pub(crate) fn new(faults: Faults) -> Self {
        Self { faults, lanes: HashMap::new() }
    }

    pub(crate) fn counts(&self, endpoint: Endpoint) -> FaultCounts {
        self.lanes.get(&endpoint).map(|lane| lane.counts.clone()).unwrap_or_default()
    }

    /// Counts one request to `endpoint` and draws its fault.
    pub(crate) fn draw(&mut self, endpoint: Endpoint) -> Option<Fault> {
        let lane = self.lanes.entry(endpoint).or_default();
        if let Some(not_before) = lane.retry_not_before_ms.take()
            && unix_now_ms() < not_before
        {
            lane.counts.early_retries += 1;
        }
        lane.counts.requests += 1;
        let request = lane.counts.requests;
        let rules = || self.faults.rules.iter().filter(move |(e, _)| *e == endpoint).map(|(_, rule)| rule);
        if let Some(fault) = rules().find_map(|rule| rule.fault_for_request(request)) {
            return Some(fault.clone());
        }
        lane.counts.pages += 1;
        let page = lane.counts.pages;
        rules().find_map(|rule| match rule {
            Rule::EveryPage { n, fault } if page.is_multiple_of(*n) => Some(fault.clone()),
            _ => None,
        })
    }

    /// Records that `fault` was applied to a request to `endpoint`.
    pub(crate) fn applied(&mut self, endpoint: Endpoint, fault: &Fault) {
        *self.lanes.entry(endpoint).or_default().counts.applied.entry(fault.count_name()).or_default() += 1;
    }

    /// The answer that stands in for the real one, which is then never made: an error status,
    /// a body of the test's choosing, or a connection the proxy drops. `None` for the faults
    /// that change, delay or precede the real answer.
    pub(crate) fn stand_in(&mut self, endpoint: Endpoint, fault: &Fault) -> Option<Answer> {
        let answer = match fault {
            Fault::RateLimited(retry_after) => {
                let mut reply = ErrorReply::new(429, "rate_limited", "too many requests; retry later");
                if let Some((value, until_ms)) = retry_after_value(retry_after) {
                    reply = reply.with_header("retry-after", value);
                    self.lanes.entry(endpoint).or_default().retry_not_before_ms = until_ms;
                }
                reply.into_answer()
            }
            Fault::Status(status) => {
                ErrorReply::new(*status, status_code_text(*status), "injected failure").into_answer()
            }
            Fault::Html(status) => {
                let page = format!(
                    "<html><head><title>{status}</title></head><body><h1>{status}</h1><hr>gateway</body></html>"
                );
                Answer::new(*status).body(page, "text/html")
            }
            Fault::Empty(status) => Answer::new(*status),
            Fault::DropConnection => Answer::new(200).header(MARKER_HEADER, MARKER_DROP),
            Fault::OversizedBody(bytes) => Reply::oversized(*bytes),
            Fault::Reply(reply) => reply.answer(),
            Fault::Body(bytes) => Answer::new(200).body(bytes.clone(), "application/json"),
            Fault::InvalidJson => {
                Answer::new(200).body("<html><body>bad gateway</body></html>", "application/json")
            }
            _ => return None,
        };
        Some(answer)
    }
}

/// The `Retry-After` value to send, and the Unix ms before which a retry is early when the
/// value says.
pub(super) fn retry_after_value(retry_after: &RetryAfter) -> Option<(String, Option<u64>)> {
    let now = unix_now_ms();
    let in_secs = |secs: u64| now.saturating_add(secs.saturating_mul(1000));
    match retry_after {
        RetryAfter::Absent => None,
        RetryAfter::Seconds(secs) => Some((secs.to_string(), Some(in_secs(*secs)))),
        RetryAfter::Raw(text) => Some((text.clone(), text.parse().ok().map(in_secs))),
        RetryAfter::Date(ahead) => {
            let ahead_ms = u64::try_from(ahead.as_millis()).unwrap_or(u64::MAX);
            // An HTTP-date has whole seconds: round up so the date is never early.
            let at_secs = now.saturating_add(ahead_ms).div_ceil(1000);
            let at = i64::try_from(at_secs).ok().and_then(|secs| DateTime::from_timestamp(secs, 0))?;
            Some((format_http_date(at), Some(at_secs.saturating_mul(1000))))
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
