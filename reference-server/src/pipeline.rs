//! The way of every request, whichever server and endpoint:
//!
//! 1. Counted for its endpoint.
//! 2. The path's [`Lifecycle`]: a sunset path answers 410 `version_sunset`.
//! 3. Its fault, drawn from the schedule ([`FaultState::draw`](super::faults::FaultState)). A
//!    fault that stands in for the answer (a status, a reply, a dropped connection) answers
//!    here, before the endpoint does anything; a slow token answer is held by the proxy and
//!    comes back later, to be answered then; an expiry of the tokens acts here.
//! 4. The endpoint's answer; the list endpoints carry out empty pages and expired cursors.
//! 5. Faults on the answer: a delay, a body cut or truncated.
//! 6. A deprecated path's headers on whatever was answered; the [`Journal`](super::journal)
//!    entry.

use std::sync::atomic::Ordering;
use std::time::SystemTime;

use wiremock::{Request, ResponseTemplate};

use super::journal::JournalEntry;
use super::proxy::{MARKER_CUT, MARKER_HEADER, MARKER_HOLD};
use super::reply::Answer;
use super::versions::sunset_reply;
use super::{Endpoint, Fault, Lifecycle, Shared};

/// Answers `request`, routed to `endpoint` (`None`: refused, or not an endpoint), with
/// `respond` and the faults of the schedule, and writes it into the journal.
pub(crate) fn serve(
    shared: &Shared,
    api: bool,
    endpoint: Option<Endpoint>,
    request: &Request,
    respond: impl FnOnce(Option<&Fault>) -> Answer,
) -> ResponseTemplate {
    let received_at = SystemTime::now();
    let held = shared.replayed(request);
    if let (Some(endpoint), None) = (endpoint, held) {
        shared.count(endpoint, request);
    }
    let lifecycle = shared.lifecycle(request.url.path());
    let (mut answer, fault) = match (&lifecycle, endpoint, held) {
        (Lifecycle::Sunset(headers), ..) => (headers.apply(sunset_reply()), None),
        (_, Some(_), Some(delay)) => (respond(None), Some(Fault::Slow(delay))),
        (_, Some(endpoint), None) => faulted(shared, endpoint, respond),
        (_, None, _) => (respond(None), None),
    };
    if let Lifecycle::Deprecated(headers) = &lifecycle {
        answer = headers.apply(answer);
    }
    let answer = answer.checked();
    if !answer.header_value(MARKER_HEADER).is_some_and(|marker| marker.starts_with(MARKER_HOLD)) {
        shared.journal.record(JournalEntry::new(request, endpoint, api, &answer, fault, received_at));
    }
    answer.into_template()
}

/// The answer of a request to `endpoint`, and the fault carried out (and counted), if any.
fn faulted(
    shared: &Shared,
    endpoint: Endpoint,
    respond: impl FnOnce(Option<&Fault>) -> Answer,
) -> (Answer, Option<Fault>) {
    let (fault, stand_in) = {
        let mut faults = shared.faults();
        let fault = faults.draw(endpoint);
        let stand_in = fault.as_ref().and_then(|fault| faults.stand_in(endpoint, fault));
        (fault, stand_in)
    };
    let (answer, applied) = match (fault, stand_in) {
        (None, _) => (respond(None), None),
        (Some(fault), Some(stand_in)) => (stand_in, Some(fault)),
        (Some(Fault::Slow(delay)), None) if endpoint == Endpoint::Token => {
            // Processed only when the proxy sends it again, if the client still waits.
            let hold = Answer::new(200).header(MARKER_HEADER, format!("{MARKER_HOLD}{}", delay.as_millis()));
            (hold, Some(Fault::Slow(delay)))
        }
        (Some(Fault::ExpireTokens), None) => {
            shared.token_generation.fetch_add(1, Ordering::SeqCst);
            (respond(None), Some(Fault::ExpireTokens))
        }
        (Some(fault), None) => on_the_answer(respond(Some(&fault)), fault),
    };
    if let Some(applied) = &applied {
        shared.faults().applied(endpoint, applied);
    }
    (answer, applied)
}

/// The faults that act on the real answer: a delay (slow or late), and a successful body cut short; and
/// those the endpoint carried out (an empty page, an expired cursor).
fn on_the_answer(mut answer: Answer, fault: Fault) -> (Answer, Option<Fault>) {
    let success = (200..300).contains(&answer.status);
    let applied = match fault {
        Fault::Slow(delay) | Fault::Late(delay) => {
            answer = answer.delay(delay);
            true
        }
        Fault::TruncatedJson if success => {
            answer.body.truncate(answer.body.len() / 2);
            true
        }
        Fault::CutBody if success => {
            answer = answer.header(MARKER_HEADER, MARKER_CUT);
            true
        }
        _ => answer.fault_applied,
    };
    (answer, applied.then_some(fault))
}
