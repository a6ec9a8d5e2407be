//! Retries, rate limits and faults (API Parts 4.1 and 8): a listing finishes
//! when it can, says exactly what happened when it cannot, and never loses or repeats an item.
//! The reference server injects the faults ([`Faults`]); dropped connections and bodies cut
//! short go through its TCP proxy, so they are real network failures.

use std::time::{Duration, Instant};

use business_records::error::ErrorCode;
use business_records::{Client, Error, RateLimit, RetryPolicy};
use business_records_reference_server::{
    Endpoint, Fault, Faults, JournalEntry, ReferenceServer, ReferenceServerBuilder, RetryAfter,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use crate::support::{self, drain};

crate::cases! {
    ServerControl:
        twenty_thousand_companies_through_rate_limits_outages_and_empty_pages [multi_thread(2)],
        transient_statuses_are_retried_at_the_same_cursor_and_the_listing_never_restarts,
        a_stream_counts_the_requests_it_sent_again,
        a_listing_can_override_the_client_retry_policy,
        retry_after_is_honoured_in_seconds_and_as_an_http_date,
        other_statuses_are_never_retried,
        exhausted_retries_give_the_last_status_and_retry_after,
        dropped_connections_and_bodies_cut_short_are_retried,
        malformed_bodies_are_decode_errors_after_the_items_before_them,
        empty_pages_with_has_more_do_not_end_the_listing,
        an_expired_cursor_mid_listing_says_how_many_items_were_delivered,
        tokens_that_expire_mid_stream_are_replaced_and_the_page_is_sent_again,
        no_request_is_sent_with_a_token_after_its_expiry,
        a_server_slower_than_the_timeout_gives_a_timeout_error_not_a_hang,
        page_delay_paces_page_requests,
        resume_cursor_continues_a_listing_after_an_error_within_the_session,
        retryable_fault_schedules_deliver_every_item_once_in_order [sync],
        any_fault_schedule_ends_complete_or_with_one_typed_error_after_correct_items [sync];
}

/// Short waits and room for long runs of faults.
fn quick_retries() -> RetryPolicy {
    RetryPolicy::default()
        .max_attempts(20)
        .initial_delay(Duration::from_millis(2))
        .max_delay(Duration::from_secs(3))
}

fn faulty(companies: usize, faults: Faults) -> ReferenceServerBuilder {
    ReferenceServer::builder().companies(companies).contacts_per_company(0).faults(faults)
}

fn client(server: &ReferenceServer, retry: RetryPolicy) -> Client {
    support::client_for(server).retry(retry).build().expect("valid client")
}

/// Company ids in the server's default order.
fn expected(server: &ReferenceServer) -> Vec<String> {
    server.dataset().companies_sorted("", None).iter().map(|c| c.id().to_owned()).collect()
}

/// Lists every company of a server with `companies` companies under `faults`, ten per page:
/// the server, the ids received and the error that ended the listing, if any.
async fn list_under(companies: usize, faults: Faults) -> (ReferenceServer, Vec<String>, Option<Error>) {
    let server = faulty(companies, faults).start().await;
    let (ids, error) = drain(&mut client(&server, quick_retries()).companies().limit(10).stream()).await;
    (server, ids, error)
}

fn cursor_of(request: &JournalEntry) -> Option<&str> {
    request.query("cursor")
}

async fn transient_statuses_are_retried_at_the_same_cursor_and_the_listing_never_restarts() {
    let faults = Faults::new().on_sequence(
        Endpoint::Companies,
        [
            Some(Fault::Status(503)),
            None,
            Some(Fault::Status(502)),
            Some(Fault::RateLimited(RetryAfter::Absent)),
            Some(Fault::Status(504)),
            None,
        ],
    );
    let (server, ids, error) = list_under(30, faults).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids, expected(&server));

    let requests = support::api_requests(&server);
    let statuses: Vec<u16> = requests.iter().map(|r| r.status()).collect();
    assert_eq!(statuses, [503, 200, 502, 429, 504, 200, 200]);
    // Each retry repeats the failed request's cursor; only the very first page has none.
    assert_eq!(cursor_of(&requests[0]), None);
    assert_eq!(cursor_of(&requests[1]), None);
    for retry in 3..=5 {
        assert_eq!(cursor_of(&requests[retry]), cursor_of(&requests[2]), "request {}", retry + 1);
    }
    assert_eq!(requests.iter().filter(|r| cursor_of(r).is_none()).count(), 2);
}

async fn a_stream_counts_the_requests_it_sent_again() {
    let faults = Faults::new().on_sequence(
        Endpoint::Companies,
        [
            None,
            Some(Fault::Status(503)),
            Some(Fault::RateLimited(RetryAfter::Absent)),
            None,
            Some(Fault::Status(502)),
        ],
    );
    let server = faulty(40, faults).start().await;
    let mut companies = client(&server, quick_retries()).companies().limit(10).stream();
    let (ids, error) = drain(&mut companies).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids, expected(&server));
    let failed = support::api_requests(&server).iter().filter(|r| r.status() != 200).count();
    assert_eq!(failed, 3);
    assert_eq!(companies.retries(), 3);
    // The schedule is used up: a second listing sends nothing again.
    let mut pages = client(&server, quick_retries()).companies().limit(10).pages();
    let mut count = 0;
    while pages.try_next().await.expect("a page").is_some() {
        count += 1;
    }
    assert_eq!((count, pages.retries()), (4, 0));
}

async fn a_listing_can_override_the_client_retry_policy() {
    let faults = Faults::new().on(Endpoint::Companies, 1, Fault::Status(503));
    let server = faulty(10, faults).start().await;
    let client = client(&server, RetryPolicy::none());
    let page =
        client.companies().retry(quick_retries()).send().await.expect("retried by the listing's policy");
    assert_eq!(page.data.len(), 10);
    server.set_faults(Faults::new().on(Endpoint::Companies, 1, Fault::Status(503)));
    let error = client.companies().send().await.expect_err("the client's policy does not retry");
    assert_eq!(error.status(), Some(503));
    assert!(matches!(error, Error::Api(_)), "one attempt, no RetriesExhausted: {error:?}");
}

async fn retry_after_is_honoured_in_seconds_and_as_an_http_date() {
    let faults = Faults::new().on(Endpoint::Companies, 2, Fault::RateLimited(RetryAfter::Seconds(1))).on(
        Endpoint::Companies,
        4,
        Fault::RateLimited(RetryAfter::Date(Duration::from_millis(500))),
    );
    let (server, ids, error) = list_under(30, faults).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids, expected(&server));
    let counts = server.fault_counts(Endpoint::Companies);
    assert_eq!(counts.get("rate_limited"), 2);
    assert_eq!(counts.early_retries, 0, "no retry came before the server's Retry-After");
    let requests = support::api_requests(&server);
    let gap = requests[2].received_at().duration_since(requests[1].received_at()).unwrap_or_default();
    assert!(gap >= Duration::from_secs(1), "Retry-After: 1 was not waited out: {gap:?}");
}

async fn other_statuses_are_never_retried() {
    let server = faulty(30, Faults::none()).start().await;
    let client = client(&server, quick_retries());
    for status in [400, 401, 403, 404, 409, 500, 501] {
        server.set_faults(Faults::new().on(Endpoint::Companies, 1, Fault::Status(status)));
        server.reset_counters();
        let error = client.companies().send().await.expect_err("an injected error");
        assert_eq!(error.status(), Some(status));
        assert!(!error.is_retryable(), "{status}");
        assert_eq!(support::api_requests(&server).len(), 1, "{status} was sent again");
    }
}

async fn exhausted_retries_give_the_last_status_and_retry_after() {
    let faults = Faults::new().on_every(Endpoint::Companies, 1, Fault::RateLimited(RetryAfter::Seconds(0)));
    let server = faulty(30, faults).start().await;
    let policy = RetryPolicy::default().max_attempts(3).initial_delay(Duration::from_millis(1));
    // Without pacing, each 429 is an attempt (with pacing only time ends them: see the
    // `pacing` cases).
    let unpaced = support::client_for(&server).retry(policy).rate_limit(RateLimit::none()).build();
    let error = unpaced.expect("valid client").companies().send().await.expect_err("always rate limited");
    assert!(matches!(error, Error::RetriesExhausted(ref e) if e.attempts() == 3), "{error:?}");
    assert_eq!(error.status(), Some(429));
    assert_eq!(error.code(), Some(&ErrorCode::RateLimited));
    assert_eq!(error.retry_after(), Some(Duration::ZERO));
    assert!(error.to_string().contains("3 attempts"), "{error}");
    assert_eq!(support::api_requests(&server).len(), 3);

    // A server asking for a longer wait than the policy allows is not waited for. (While the
    // client paces itself, its pause lasts `max_delay` at most: see `hostile::numbers`.)
    server.set_faults(Faults::new().on_every(
        Endpoint::Companies,
        1,
        Fault::RateLimited(RetryAfter::Seconds(3600)),
    ));
    server.reset_counters();
    let paced = client(&server, RetryPolicy::default());
    let started = Instant::now();
    let error = paced.companies().send().await.expect_err("rate limited");
    assert_eq!((error.status(), error.retry_after()), (Some(429), Some(Duration::from_secs(3600))));
    assert!(started.elapsed() < Duration::from_secs(1), "not waited for");
    assert_eq!(support::api_requests(&server).len(), 1);
}

async fn dropped_connections_and_bodies_cut_short_are_retried() {
    let faults = Faults::new().on_sequence(
        Endpoint::Companies,
        [
            Some(Fault::DropConnection),
            None,
            Some(Fault::CutBody),
            Some(Fault::DropConnection),
            None,
            Some(Fault::CutBody),
        ],
    );
    let (server, ids, error) = list_under(40, faults).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids, expected(&server));
    let counts = server.fault_counts(Endpoint::Companies);
    assert_eq!((counts.get("drop_connection"), counts.get("cut_body")), (2, 2));

    // Without retries, each is a typed, retryable transport error.
    for fault in [Fault::DropConnection, Fault::CutBody] {
        server.set_faults(Faults::new().on(Endpoint::Companies, 1, fault.clone()));
        let error = client(&server, RetryPolicy::none()).companies().send().await.expect_err("a fault");
        assert!(matches!(error, Error::Http(_)), "{fault:?}: {error:?}");
        assert!(error.is_retryable(), "{fault:?}: {error:?}");
    }
}

async fn malformed_bodies_are_decode_errors_after_the_items_before_them() {
    let server = faulty(30, Faults::none()).start().await;
    let client = client(&server, quick_retries());
    for fault in
        [Fault::TruncatedJson, Fault::InvalidJson, Fault::Body(Vec::new()), Fault::Body(b"{}".to_vec())]
    {
        server.set_faults(Faults::new().on(Endpoint::Companies, 2, fault.clone()));
        server.reset_counters();
        let (ids, error) = drain(&mut client.companies().limit(10).stream()).await;
        assert_eq!(ids, expected(&server)[..10], "{fault:?}");
        assert!(
            matches!(error, Some(Error::Decode(ref e)) if e.endpoint() == "/v1/companies"),
            "{fault:?}: {error:?}"
        );
        assert_eq!(support::api_requests(&server).len(), 2, "{fault:?} is not retried");
    }
}

async fn empty_pages_with_has_more_do_not_end_the_listing() {
    let faults = Faults::new().on_every_page(Endpoint::Companies, 2, Fault::EmptyPage).on(
        Endpoint::Companies,
        1,
        Fault::EmptyPage,
    );
    let (server, ids, error) = list_under(50, faults).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids, expected(&server));
    assert!(server.fault_counts(Endpoint::Companies).get("empty_page") >= 5);
}

async fn an_expired_cursor_mid_listing_says_how_many_items_were_delivered() {
    let faults = Faults::new().on(Endpoint::Companies, 3, Fault::ExpireCursor);
    let (server, ids, error) = list_under(50, faults).await;
    assert_eq!(ids, expected(&server)[..20]);
    let error = error.expect("the cursor expired");
    assert!(
        matches!(error, Error::CursorRejected(ref e) if *e.code() == ErrorCode::CursorExpired && e.items_delivered() == 20),
        "{error:?}"
    );
    assert!(error.to_string().contains("restart the listing from the first page"), "{error}");
    assert_eq!(support::api_requests(&server).len(), 3, "an expired cursor is not retried");
}

async fn tokens_that_expire_mid_stream_are_replaced_and_the_page_is_sent_again() {
    let faults = Faults::new().on(Endpoint::Companies, 3, Fault::ExpireTokens).on(
        Endpoint::Companies,
        6,
        Fault::ExpireTokens,
    );
    let (server, ids, error) = list_under(50, faults).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids, expected(&server));
    assert_eq!(server.token_requests(), 3, "one token, then one per expiry");
    let statuses: Vec<u16> = support::api_requests(&server).iter().map(|r| r.status()).collect();
    assert_eq!(statuses, [200, 200, 401, 200, 200, 401, 200]);
}

async fn no_request_is_sent_with_a_token_after_its_expiry() {
    let server = ReferenceServer::builder()
        .companies(48)
        .contacts_per_company(0)
        .token_lifetime(Duration::from_secs(2))
        .start()
        .await;
    // 12 pages, 400 ms apart: the listing outlives two tokens.
    let client = support::client_for(&server)
        .page_delay(Duration::from_millis(400))
        .retry(RetryPolicy::none())
        .build()
        .expect("valid client");
    let (ids, error) = drain(&mut client.companies().limit(4).stream()).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids, expected(&server));
    assert!(server.token_requests() >= 3, "tokens were renewed: {}", server.token_requests());
    // The server checks `exp` to the second with no leeway: an expired token would be a 401.
    let requests = support::api_requests(&server);
    assert_eq!(requests.len(), 12);
    assert!(requests.iter().all(|r| r.status() == 200), "{requests:?}");
}

async fn a_server_slower_than_the_timeout_gives_a_timeout_error_not_a_hang() {
    let faults = Faults::new().on_every(Endpoint::Companies, 1, Fault::Slow(Duration::from_secs(5)));
    let server = faulty(10, faults).start().await;
    let build = |retry| {
        support::client_for(&server)
            .timeout(Duration::from_millis(300))
            .retry(retry)
            .build()
            .expect("valid client")
    };
    let started = Instant::now();
    let error = tokio::time::timeout(Duration::from_secs(4), build(RetryPolicy::none()).companies().send())
        .await
        .expect("no hang")
        .expect_err("too slow");
    assert!(error.is_timeout(), "{error:?}");
    assert!(matches!(error, Error::Http(ref e) if e.is_timeout()), "{error:?}");

    let policy = RetryPolicy::none().max_attempts(2).initial_delay(Duration::from_millis(1));
    let error = tokio::time::timeout(
        Duration::from_secs(4),
        build(policy).companies().stream().try_collect::<Vec<_>>(),
    )
    .await
    .expect("no hang")
    .expect_err("too slow, twice");
    assert!(matches!(error, Error::RetriesExhausted(ref e) if e.attempts() == 2), "{error:?}");
    assert!(error.is_timeout() && error.is_retryable(), "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "the slow answers were not waited for");
}

async fn page_delay_paces_page_requests() {
    let server = faulty(50, Faults::none()).start().await;
    let delay = Duration::from_millis(120);
    let client = support::client_for(&server).page_delay(delay).build().expect("valid client");
    // The token first: pacing counts from when a page request starts, and the first one would
    // otherwise wait for the token endpoint before it reaches the API.
    client.companies().limit(1).send().await.expect("a page");
    let all = client.companies().limit(10).stream().try_collect::<Vec<_>>().await.expect("listing");
    assert_eq!(all.len(), 50);
    let requests = support::api_requests(&server);
    assert_eq!(requests.len(), 6);
    for pair in requests[1..].windows(2) {
        let gap = pair[1].received_at().duration_since(pair[0].received_at()).unwrap_or_default();
        // Arrival times, not send times: allow for a difference in transit on a busy machine
        // (without pacing, the gaps are a few milliseconds).
        assert!(gap + Duration::from_millis(40) >= delay, "{gap:?}");
    }
}

async fn resume_cursor_continues_a_listing_after_an_error_within_the_session() {
    let faults = Faults::new().on(Endpoint::Companies, 3, Fault::Status(503));
    let server = faulty(50, faults).start().await;
    let client = client(&server, RetryPolicy::none());

    let mut stream = client.companies().sort("name").limit(10).stream();
    let (mut ids, error) = drain(&mut stream).await;
    assert_eq!(error.as_ref().and_then(Error::status), Some(503), "{error:?}");
    assert_eq!((ids.len(), stream.items_delivered()), (20, 20));
    let resume = stream.resume_cursor().expect("a cursor to resume from").clone();
    let (rest, error) = drain(&mut client.companies().sort("name").limit(10).cursor(&resume).stream()).await;
    assert!(error.is_none(), "{error:?}");
    ids.extend(rest);
    let expected: Vec<String> =
        server.dataset().companies_sorted("name", None).iter().map(|c| c.id().to_owned()).collect();
    assert_eq!(ids, expected, "every item once, in order, across the two streams");

    // The same with a stream of pages, failing on its first page after a resume.
    server.set_faults(Faults::new().on(Endpoint::Companies, 2, Fault::Status(502)).on(
        Endpoint::Companies,
        4,
        Fault::Status(500),
    ));
    let mut pages = client.companies().sort("name").limit(10).pages();
    let mut seen = Vec::new();
    let mut errors = 0;
    loop {
        match pages.try_next().await {
            Ok(Some(page)) => seen.extend(page.data.into_iter().map(|c| c.id)),
            Ok(None) => break,
            Err(error) => {
                errors += 1;
                assert!(error.status().is_some_and(|s| s >= 500), "{error:?}");
                let cursor = pages.resume_cursor().cloned();
                let next = client.companies().sort("name").limit(10);
                pages = match cursor {
                    Some(cursor) => next.cursor(cursor).pages(),
                    None => next.pages(),
                };
            }
        }
    }
    assert_eq!(errors, 2);
    assert_eq!(seen, expected);
}

/// Faults a GET listing recovers from with retries.
fn retryable_fault() -> impl Strategy<Value = Fault> {
    prop_oneof![
        Just(Fault::RateLimited(RetryAfter::Seconds(0))),
        Just(Fault::RateLimited(RetryAfter::Absent)),
        prop::sample::select(vec![502u16, 503, 504]).prop_map(Fault::Status),
        Just(Fault::DropConnection),
        Just(Fault::CutBody),
        (0u64..20).prop_map(|ms| Fault::Slow(Duration::from_millis(ms))),
        Just(Fault::EmptyPage),
        Just(Fault::ExpireTokens),
    ]
}

/// Faults that end a listing with an error.
fn fatal_fault() -> impl Strategy<Value = Fault> {
    prop_oneof![
        prop::sample::select(vec![400u16, 404, 500]).prop_map(Fault::Status),
        Just(Fault::TruncatedJson),
        Just(Fault::InvalidJson),
        prop::collection::vec(any::<u8>(), 0..48).prop_map(Fault::Body),
        Just(Fault::ExpireCursor),
    ]
}

/// A token expiry right after another is answered 401 to the resent request: the client
/// refreshes once per attempt, so that is an error, not a retry.
fn recoverable(schedule: &[Option<Fault>]) -> bool {
    let fatal = |f: &Option<Fault>| {
        matches!(
            f,
            Some(
                Fault::Status(400 | 404 | 500)
                    | Fault::TruncatedJson
                    | Fault::InvalidJson
                    | Fault::Body(_)
                    | Fault::ExpireCursor
            )
        )
    };
    let twice_expired =
        schedule.windows(2).any(|w| w[0] == Some(Fault::ExpireTokens) && w[1] == Some(Fault::ExpireTokens));
    !schedule.iter().any(fatal) && !twice_expired
}

/// Streams the whole dataset under `schedule`, then checks the property.
async fn listing_under(server: &ReferenceServer, schedule: Vec<Option<Fault>>) -> Result<(), TestCaseError> {
    server.set_faults(Faults::new().on_sequence(Endpoint::Companies, schedule.clone()));
    // Without pacing: each 429 is an attempt of the request's own retries, which the schedules
    // are about. The adaptive default would slow the listing down for a second or two after
    // each 429 on a fresh client (pacing.rs checks how pacing meets 429s).
    let client = support::client_for(server)
        .retry(quick_retries())
        .rate_limit(RateLimit::none())
        .timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let (ids, error) = drain(&mut client.companies().limit(5).stream()).await;
    let expected = expected(server);
    prop_assert!(
        ids.len() <= expected.len() && ids[..] == expected[..ids.len()],
        "only correct items, in order"
    );
    match error {
        None => prop_assert_eq!(ids.len(), expected.len(), "complete when it ends without an error"),
        Some(error) => {
            prop_assert!(!recoverable(&schedule), "retryable faults only, yet: {:?}", error);
            let typed = matches!(error, Error::Decode(_) | Error::CursorRejected(_))
                || matches!(error.status(), Some(400 | 401 | 404 | 500));
            prop_assert!(typed, "unexpected error {:?}", error);
        }
    }
    Ok(())
}

fn run_property(strategy: impl Strategy<Value = Vec<Option<Fault>>>) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let server = runtime.block_on(faulty(24, Faults::none()).start());
    let mut runner = TestRunner::new(Config { cases: 16, failure_persistence: None, ..Config::default() });
    let result = runner.run(&strategy, |schedule| runtime.block_on(listing_under(&server, schedule)));
    if let Err(failure) = result {
        panic!("{failure}");
    }
}

fn retryable_fault_schedules_deliver_every_item_once_in_order() {
    let schedule = prop::collection::vec(prop::option::weighted(0.6, retryable_fault()), 0..16).prop_map(
        |mut schedule| {
            for i in 1..schedule.len() {
                if schedule[i] == Some(Fault::ExpireTokens) && schedule[i - 1] == Some(Fault::ExpireTokens) {
                    schedule[i] = None;
                }
            }
            schedule
        },
    );
    run_property(schedule);
}

fn any_fault_schedule_ends_complete_or_with_one_typed_error_after_correct_items() {
    let fault = prop_oneof![3 => retryable_fault(), 1 => fatal_fault()];
    run_property(prop::collection::vec(prop::option::weighted(0.5, fault), 0..16));
}

/// The scenario of issue 5's "done when": 20,000 companies; every 5th request is a 429, every
/// 7th a 503, every 3rd page empty. Two of the 429s say `Retry-After: 1`, and are waited out;
/// the other 86 or so say `Retry-After: 0` (a second each would make this case last a minute
/// and a half; the retry loop's own tests hold the rules for longer waits, on paused time).
async fn twenty_thousand_companies_through_rate_limits_outages_and_empty_pages() {
    let faults = Faults::new()
        .on(Endpoint::Companies, 5, Fault::RateLimited(RetryAfter::Seconds(1)))
        .on(Endpoint::Companies, 200, Fault::RateLimited(RetryAfter::Seconds(1)))
        .on_every(Endpoint::Companies, 5, Fault::RateLimited(RetryAfter::Seconds(0)))
        .on_every(Endpoint::Companies, 7, Fault::Status(503))
        .on_every_page(Endpoint::Companies, 3, Fault::EmptyPage);
    let server = faulty(20_000, faults).start().await;
    // The default policy allows these waits (4 attempts; Retry-After up to 10 s); shorter
    // backoff ceilings keep the 503 retries quick. The 429s come every fifth request whatever
    // the pace, so this is the retries alone: without pacing, which would slow the listing
    // down at each of them.
    let policy = RetryPolicy::default().initial_delay(Duration::from_millis(20));
    let client = support::client_for(&server).retry(policy).rate_limit(RateLimit::none()).build();
    let client = client.expect("valid client");
    let started = Instant::now();
    let (ids, error) = drain(&mut client.companies().stream()).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids.len(), 20_000);
    assert!(ids == expected(&server), "every company once, in order");

    let counts = server.fault_counts(Endpoint::Companies);
    println!("20,000 companies in {:?}: {counts:?}", started.elapsed());
    assert_eq!(counts.get("rate_limited"), counts.requests / 5);
    assert_eq!(counts.get("status_503"), counts.requests / 7 - counts.requests / 35);
    assert_eq!(counts.get("empty_page"), counts.pages / 3);
    assert_eq!(counts.early_retries, 0, "every Retry-After was waited out");
}
