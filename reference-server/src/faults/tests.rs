use std::time::Duration;

use super::super::jwt::unix_now_ms;
use super::state::retry_after_value;
use super::*;

const COMPANIES: Endpoint = Endpoint::Companies;

fn draws(faults: Faults, endpoint: Endpoint, n: usize) -> Vec<Option<&'static str>> {
    let mut state = FaultState::new(faults);
    (0..n).map(|_| state.draw(endpoint).map(|f| f.name())).collect()
}

#[test]
fn request_rules_in_order_then_page_rules() {
    let faults = Faults::new()
        .on_every(COMPANIES, 5, Fault::RateLimited(RetryAfter::Seconds(1)))
        .on_every(COMPANIES, 7, Fault::Status(503))
        .on_every_page(COMPANIES, 3, Fault::EmptyPage);
    let got = draws(faults, COMPANIES, 15);
    let rl = Some("rate_limited");
    let st = Some("status");
    let ep = Some("empty_page");
    // Requests 1..=15: pages are 1,2,3,4,6,8,9,11,12,13 (3rd, 6th and 9th pages: 3, 8, 12).
    assert_eq!(got, [None, None, ep, None, rl, None, st, ep, None, rl, None, ep, None, st, rl]);
}

#[test]
fn on_and_sequence() {
    let faults = Faults::new().on(COMPANIES, 2, Fault::InvalidJson).on_sequence(
        COMPANIES,
        [Some(Fault::CutBody), Some(Fault::DropConnection), None, Some(Fault::EmptyPage)],
    );
    assert_eq!(
        draws(faults.clone(), COMPANIES, 6),
        [Some("cut_body"), Some("invalid_json"), None, Some("empty_page"), None, None]
    );
    assert!(faults.need_proxy());
    assert!(!Faults::new().on_every(COMPANIES, 1, Fault::Slow(Duration::ZERO)).need_proxy());
}

#[test]
fn each_endpoint_has_its_own_numbering_and_rules() {
    let faults = Faults::new()
        .on_every(Endpoint::Contacts, 2, Fault::Status(503))
        .on_every(Endpoint::Token, 3, Fault::Html(502))
        .on_sequence(Endpoint::Token, [Some(Fault::DropConnection)])
        .on(Endpoint::Resource("notes"), 1, Fault::Empty(504));
    let mut state = FaultState::new(faults.clone());
    let mut drawn = |endpoint, n| (0..n).map(|_| state.draw(endpoint).map(|f| f.name())).collect::<Vec<_>>();
    assert_eq!(drawn(Endpoint::Companies, 2), [None, None], "the companies have no rule");
    assert_eq!(drawn(Endpoint::Contacts, 4), [None, Some("status"), None, Some("status")]);
    assert_eq!(
        drawn(Endpoint::Token, 6),
        [Some("drop_connection"), None, Some("html"), None, None, Some("html")]
    );
    assert_eq!(drawn(Endpoint::Resource("deals"), 1), [None], "another resource");
    assert_eq!(drawn(Endpoint::Resource("notes"), 2), [Some("empty"), None]);
    state.applied(Endpoint::Token, &Fault::Html(502));
    let (contacts, token) = (state.counts(Endpoint::Contacts), state.counts(Endpoint::Token));
    assert_eq!((contacts.requests, contacts.pages, token.requests), (4, 2, 6));
    assert_eq!((token.get("html_502"), token.total(), contacts.get("html_502")), (1, 1, 0));
    assert_eq!(state.counts(Endpoint::Jwks), FaultCounts::default());
    assert!(faults.need_proxy());
    assert!(Faults::new().on(Endpoint::Token, 1, Fault::Slow(Duration::ZERO)).need_proxy());
    assert!(Faults::new().on(Endpoint::Jwks, 1, Fault::DropConnection).need_proxy());
    assert!(!Faults::new().on(Endpoint::Jwks, 1, Fault::Slow(Duration::ZERO)).need_proxy());
    let generated = Fault::Reply(Reply::new(200).repeated("x", 3, ""));
    assert!(Faults::new().on(Endpoint::Discovery, 1, generated).need_proxy());
    assert!(!Faults::new().on(Endpoint::Discovery, 1, Fault::Reply(Reply::new(200))).need_proxy());
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
        (Fault::Reply(Reply::new(410)), 410),
        (Fault::OversizedBody(1024), 200),
        (Fault::Body(vec![0xff]), 200),
        (Fault::InvalidJson, 200),
    ] {
        assert_eq!(state.stand_in(Endpoint::Token, &fault).map(|a| a.status), Some(status), "{fault:?}");
    }
    for fault in [Fault::Slow(Duration::ZERO), Fault::CutBody, Fault::EmptyPage, Fault::ExpireTokens] {
        assert!(state.stand_in(COMPANIES, &fault).is_none(), "{fault:?}");
    }
    // The 429 set when the next token request may come: right away is early.
    state.draw(Endpoint::Token);
    assert_eq!(state.counts(Endpoint::Token).early_retries, 1);
}

#[test]
fn a_reply_is_sent_as_made() {
    let reply =
        Reply::new(429).header("Retry-After", "18446744073709551615").header("x-a", "1").header("x-a", "2");
    let answer = reply.body(vec![0xff, 0]).answer();
    assert_eq!((answer.status, answer.body.as_slice()), (429, &[0xff, 0][..]));
    assert_eq!(answer.header_value("retry-after"), Some("18446744073709551615"));
    assert_eq!(answer.header_value("content-type"), None, "no header but those given");
    let json = Reply::json(503, "{}").answer();
    assert_eq!(json.header_value("content-type"), Some("application/json"));
    // What HTTP cannot carry is answered 500, saying which.
    for bad in
        [Reply::new(1000), Reply::new(200).header("bad name", "x"), Reply::new(200).header("x", "a\nb")]
    {
        let answer = bad.answer().checked();
        assert_eq!(answer.status, 500, "{bad:?}");
        assert!(String::from_utf8_lossy(&answer.body).contains("the fault reply cannot be sent"));
    }
}

#[test]
fn early_retries_are_counted() {
    let mut state = FaultState::new(Faults::new());
    let raw = Fault::RateLimited(RetryAfter::Raw("60".into()));
    assert_eq!(state.stand_in(COMPANIES, &raw).unwrap().header_value("retry-after"), Some("60"));
    state.draw(COMPANIES);
    state.draw(COMPANIES);
    assert_eq!(state.counts(COMPANIES).early_retries, 1);
    let unreadable = Fault::RateLimited(RetryAfter::Raw("soon".into()));
    assert_eq!(state.stand_in(COMPANIES, &unreadable).unwrap().header_value("retry-after"), Some("soon"));
    state.draw(COMPANIES);
    let now = Fault::RateLimited(RetryAfter::Seconds(0));
    state.stand_in(COMPANIES, &now);
    state.draw(COMPANIES);
    assert_eq!(state.counts(COMPANIES).early_retries, 1, "no time to wait, no retry early");
}

#[test]
fn retry_after_values() {
    let before = unix_now_ms();
    let (value, until) = retry_after_value(&RetryAfter::Date(Duration::from_millis(1500))).unwrap();
    let until = until.unwrap();
    assert!(until >= before + 1500 && until % 1000 == 0, "{until}");
    let parsed = httpdate::parse_http_date(&value).unwrap();
    assert_eq!(parsed, std::time::UNIX_EPOCH + Duration::from_millis(until));
    assert_eq!(retry_after_value(&RetryAfter::Seconds(2)).unwrap().0, "2");
    assert_eq!(retry_after_value(&RetryAfter::Seconds(0)).unwrap().0, "0");
    let huge = retry_after_value(&RetryAfter::Raw("18446744073709551615".into())).unwrap();
    assert_eq!((huge.0.as_str(), huge.1), ("18446744073709551615", Some(u64::MAX)));
    assert_eq!(retry_after_value(&RetryAfter::Absent), None);
}
