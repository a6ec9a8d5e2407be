use std::time::Duration;

use super::super::jwt::unix_now_ms;
use super::state::retry_after_value;
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
    let parsed = httpdate::parse_http_date(&value).unwrap();
    assert_eq!(parsed, std::time::UNIX_EPOCH + Duration::from_millis(until));
    assert_eq!(retry_after_value(RetryAfter::Seconds(2)).unwrap().0, "2");
    assert_eq!(retry_after_value(RetryAfter::Absent), None);
}
