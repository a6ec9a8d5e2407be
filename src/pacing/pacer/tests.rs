//! The pacer on paused Tokio time: order of service, pauses, patience and the server's hints.

use std::sync::{Arc, Mutex as StdMutex};

use http::HeaderValue;

use super::*;
use crate::error::ApiError;

fn pacer(limit: RateLimit) -> Arc<Pacer> {
    let api = url::Url::parse("https://api.example.com/v1/").expect("static url");
    Arc::new(Pacer::new(&limit, &api, "my-client", LONGEST).expect("valid limit"))
}

fn rate_limited(retry_after: Duration) -> Error {
    let response = ApiError::new(429, Some(ErrorCode::RateLimited), "/v1/companies");
    Error::Api(response.with_retry_after(Some(retry_after)))
}

/// The rate the client paces at now (requests a second), `None` when nothing limits it.
fn current_rate(pacer: &Pacer) -> Option<f64> {
    pacer.0.as_ref().and_then(|inner| inner.state().rate(inner.at(None)))
}

const PATIENT: Duration = Duration::from_secs(10);
/// The client's longest wait in these cases: longer than every pause they ask for.
const LONGEST: Duration = Duration::from_secs(60);

#[tokio::test(start_paused = true)]
async fn waiting_requests_are_served_in_order_at_the_rate() {
    let pacer = pacer(RateLimit::per_second(10));
    let start = Instant::now();
    let grants = Arc::new(StdMutex::new(Vec::new()));
    let listings: Vec<_> = (0..3)
        .map(|listing| {
            let (pacer, grants) = (Arc::clone(&pacer), Arc::clone(&grants));
            tokio::spawn(async move {
                for _ in 0..4 {
                    pacer.admit(PATIENT, None).await.expect("admitted");
                    grants.lock().expect("grants").push((listing, start.elapsed()));
                    // The request itself: the other listings get to queue meanwhile.
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    for listing in listings {
        listing.await.expect("a listing");
    }
    let grants = grants.lock().expect("grants").clone();
    assert_eq!(grants.len(), 12);
    for (slot, (_, at)) in grants.iter().enumerate() {
        assert_eq!(*at, Duration::from_millis(100) * slot as u32, "{grants:?}");
    }
    // Each listing waits its turn: none is served twice while another waits.
    let order: Vec<usize> = grants.iter().map(|(listing, _)| *listing).collect();
    for round in order.chunks(3) {
        let mut round = round.to_vec();
        round.sort_unstable();
        assert_eq!(round, [0, 1, 2], "{order:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_429_pauses_every_request_of_the_client_and_slows_it_down() {
    let pacer = pacer(RateLimit::adaptive());
    assert!(pacer.is_active());
    for _ in 0..10 {
        assert_eq!(pacer.admit(PATIENT, None).await.expect("admitted"), Duration::ZERO, "nothing limits yet");
    }
    for _ in 0..6 {
        pacer.response(Instant::now(), 200, &HeaderMap::new());
    }
    assert_eq!(current_rate(&pacer), None);
    pacer.throttled(Instant::now(), &rate_limited(Duration::from_secs(2)), PATIENT);
    let slowed = current_rate(&pacer).expect("a rate after a 429");
    assert!((slowed - 3.0).abs() < 1e-9, "the 6 requests the server took, per 2 s of Retry-After: {slowed}");

    // Another listing's request waits out the pause.
    let waited = pacer.admit(PATIENT, None).await.expect("admitted after the pause");
    assert_eq!(waited, Duration::from_secs(2));
}

#[tokio::test(start_paused = true)]
async fn a_retry_after_of_zero_costs_no_more_than_that() {
    let pacer = pacer(RateLimit::adaptive());
    pacer.admit(PATIENT, None).await.expect("the first page");
    pacer.response(Instant::now(), 200, &HeaderMap::new());
    let sent = Instant::now();
    pacer.admit(PATIENT, None).await.expect("the second page");
    pacer.throttled(sent, &rate_limited(Duration::ZERO), PATIENT);
    for _ in 0..2 {
        assert_eq!(pacer.admit(PATIENT, None).await.expect("admitted"), Duration::ZERO);
    }
}

#[tokio::test(start_paused = true)]
async fn a_pause_longer_than_the_request_would_wait_refuses_it_with_its_429() {
    let pacer = pacer(RateLimit::per_second(5));
    pacer.throttled(Instant::now(), &rate_limited(Duration::from_secs(30)), PATIENT);
    let started = Instant::now();
    let refused = pacer.admit(Duration::from_secs(10), None).await.expect_err("a pause of 30 s");
    assert_eq!(started.elapsed(), Duration::ZERO, "refused at once");
    assert_eq!(refused.status(), Some(429));
    assert_eq!(refused.response().map(ApiError::endpoint), Some("/v1/companies"), "the 429 that paused");
    assert_eq!(refused.retry_after(), Some(Duration::from_secs(30)));
    tokio::time::advance(Duration::from_secs(25)).await;
    let waited = pacer.admit(Duration::from_secs(10), None).await.expect("5 s left: waited for");
    assert_eq!(waited, Duration::from_secs(5));
}

#[tokio::test(start_paused = true)]
async fn a_request_sent_again_waits_no_longer_than_its_time_budget() {
    let pacer = pacer(RateLimit::per_second(1));
    pacer.admit(PATIENT, None).await.expect("the first request");
    // The next slot is a second away: a retry with half a second left does not wait for it.
    let refused = pacer.admit(PATIENT, Some(Duration::from_millis(500))).await.expect_err("too long a wait");
    assert_eq!((refused.status(), refused.retry_after()), (Some(429), Some(Duration::from_secs(1))));
    // A first attempt waits its turn, however long.
    assert_eq!(pacer.admit(Duration::ZERO, None).await.expect("admitted"), Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn without_pacing_nothing_waits() {
    let pacer = pacer(RateLimit::none());
    assert!(!pacer.is_active());
    pacer.throttled(Instant::now(), &rate_limited(Duration::from_secs(30)), PATIENT);
    assert_eq!(pacer.admit(Duration::ZERO, None).await.expect("admitted"), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn an_advertised_policy_paces_from_the_first_answer_and_a_spent_quota_waits() {
    let pacer = pacer(RateLimit::adaptive());
    let mut headers = HeaderMap::new();
    headers.insert("ratelimit-policy", HeaderValue::from_static("\"default\";q=5;w=1"));
    headers.insert("ratelimit", HeaderValue::from_static("\"default\";r=4;t=1"));
    pacer.admit(PATIENT, None).await.expect("the first request");
    pacer.response(Instant::now(), 200, &headers);
    assert_eq!(current_rate(&pacer), Some(5.0));
    let started = Instant::now();
    for _ in 0..3 {
        pacer.admit(PATIENT, None).await.expect("admitted");
    }
    assert_eq!(
        started.elapsed(),
        Duration::from_millis(600),
        "200 ms apart, from the request sent before the policy was known"
    );

    // Without a policy, a used-up quota waits for its reset.
    let spent = self::pacer(RateLimit::adaptive());
    let mut headers = HeaderMap::new();
    headers.insert("x-ratelimit-remaining", HeaderValue::from_static("0"));
    headers.insert("x-ratelimit-reset", HeaderValue::from_static("2"));
    spent.response(Instant::now(), 200, &headers);
    assert_eq!(spent.admit(PATIENT, None).await.expect("admitted"), Duration::from_secs(2));
}

#[tokio::test(start_paused = true)]
async fn no_pause_outlasts_the_longest_wait_whatever_the_server_asks() {
    // A Retry-After ages away: the pause ends after the client's longest wait (60 s), or the
    // request's own `max_delay` when that is longer.
    let pacer = pacer(RateLimit::adaptive());
    pacer.throttled(Instant::now(), &rate_limited(Duration::MAX), PATIENT);
    let refused = pacer.admit(PATIENT, None).await.expect_err("60 s is longer than 10");
    assert_eq!(refused.retry_after(), Some(LONGEST));
    assert_eq!(pacer.admit(LONGEST, None).await.expect("admitted"), LONGEST);
    let patient = Duration::from_secs(90);
    pacer.throttled(Instant::now(), &rate_limited(Duration::from_secs(1_000_000_000_000)), patient);
    assert_eq!(pacer.admit(patient, None).await.expect("admitted"), patient);

    // A spent quota whose reset is a day away.
    let spent = self::pacer(RateLimit::adaptive());
    let mut headers = HeaderMap::new();
    headers.insert("x-ratelimit-remaining", HeaderValue::from_static("0"));
    headers.insert("x-ratelimit-reset", HeaderValue::from_static("86000"));
    spent.response(Instant::now(), 200, &headers);
    assert_eq!(spent.admit(LONGEST, None).await.expect("admitted"), LONGEST);
}

/// The state of `pacer`'s budget, to apply a fleet's answers to it as Redis would give them.
fn inner(pacer: &Pacer) -> &Inner {
    pacer.0.as_ref().expect("a paced client")
}

#[tokio::test(start_paused = true)]
async fn a_slot_of_the_fleet_is_taken_at_its_rate_and_its_wait_is_at_most_the_longest() {
    let pacer = pacer(RateLimit::per_second(10).burst(6));
    let inner = inner(&pacer);
    assert_eq!(inner.state().fleet_slot(0.0), Some((10.0, 3.0)), "the rate, and the burst kept in hand");
    assert_eq!(inner.apply(0.0, Answer::Wait { wait: Duration::ZERO, paused: false }), Some(Duration::ZERO));
    let next = Duration::from_millis(250);
    assert_eq!(inner.apply(0.0, Answer::Wait { wait: next, paused: false }), Some(next));
    assert_eq!(inner.apply(0.0, Answer::Wait { wait: Duration::MAX, paused: false }), Some(LONGEST));
    assert_eq!(current_rate(&pacer), Some(10.0), "waiting for the fleet's next slot lowers nothing");
    assert!(inner.state().pause(0.0).is_none());
}

#[tokio::test(start_paused = true)]
async fn a_pause_of_the_fleet_is_a_refusal_unless_it_is_the_clients_own() {
    // Another process's 429: this client pauses as long, and slows down as for its own.
    let pacer = pacer(RateLimit::per_second(10));
    tokio::time::advance(Duration::from_secs(1)).await;
    let paused = Answer::Wait { wait: Duration::from_secs(2), paused: true };
    assert_eq!(inner(&pacer).apply(1.0, paused), Some(Duration::from_secs(2)));
    assert!(inner(&pacer).state().fleet_slot(2.0).is_none(), "no slot is asked for during the pause");
    let refused = pacer.admit(Duration::from_secs(1), None).await.expect_err("a pause of 2 s");
    assert_eq!((refused.status(), refused.retry_after()), (Some(429), Some(Duration::from_secs(2))));
    assert_eq!(current_rate(&pacer), Some(9.5));

    // Its own 429 of a second, published, is still the fleet's pause when its own ends: the
    // same refusal, not a second one.
    let own = self::pacer(RateLimit::per_second(10));
    tokio::time::advance(Duration::from_secs(1)).await;
    own.throttled(Instant::now(), &rate_limited(Duration::from_secs(1)), PATIENT);
    assert_eq!(own.admit(PATIENT, None).await.expect("after the pause"), Duration::from_secs(1));
    let echo = Answer::Wait { wait: Duration::from_millis(10), paused: true };
    assert_eq!(inner(&own).apply(2.0, echo), Some(Duration::from_millis(10)));
    assert_eq!(current_rate(&own), Some(9.5), "lowered once");
}

#[tokio::test(start_paused = true)]
async fn with_redis_out_of_reach_a_process_paces_itself_at_its_share() {
    let pacer = pacer(RateLimit::per_second(10));
    assert_eq!(inner(&pacer).apply(0.0, Answer::Down { processes: 4 }), None);
    let started = Instant::now();
    let mut admitted = Vec::new();
    for _ in 0..3 {
        pacer.admit(PATIENT, None).await.expect("admitted");
        admitted.push(started.elapsed());
    }
    assert_eq!(admitted, [0, 400, 800].map(Duration::from_millis), "a quarter of 10 a second");
    assert_eq!(current_rate(&pacer), Some(10.0), "the fleet's rate is unchanged");
}

/// Any duration: short ones, whole seconds up to `u64::MAX`, and [`Duration::MAX`].
fn any_duration() -> impl proptest::strategy::Strategy<Value = Duration> {
    use proptest::prelude::*;
    prop_oneof![
        (0u64..120, 0u32..1_000_000_000).prop_map(|(seconds, nanos)| Duration::new(seconds, nanos)),
        any::<u64>().prop_map(Duration::from_secs),
        Just(Duration::MAX),
    ]
}

/// An `X-RateLimit-Reset` or a `RateLimit-Policy` number: small ones (delays within a day and
/// past it, quotas and windows of a few requests and seconds), Unix times up to a day or so
/// ahead in seconds and in milliseconds, and any.
fn any_number() -> impl proptest::strategy::Strategy<Value = u64> {
    use proptest::prelude::*;
    let now =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs();
    prop_oneof![0u64..200_000, now..now + 200_000, now * 1000..(now + 200_000) * 1000, any::<u64>()]
}

proptest::proptest! {
    /// Whatever a server answers (a 429's `Retry-After`, a spent quota's reset, a policy) and
    /// whatever the settings, on paused time: nothing panics, and the next request waits no
    /// longer than the longest wait configured (at most a day; or a slot at the lowest rate,
    /// 2 s), or is refused at once with no longer a `retry_after`.
    #[test]
    fn whatever_the_server_says_a_request_waits_no_longer_than_the_longest_wait(
        per_second in proptest::option::of(1u32..1000),
        longest in any_duration(),
        request_wait in any_duration(),
        patience in any_duration(),
        retry_after in any_duration(),
        quota in any_number(),
        window in any_number(),
        reset in any_number(),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build();
        let runtime = runtime.map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
        let limit = per_second.map_or_else(RateLimit::adaptive, RateLimit::per_second);
        let api = url::Url::parse("https://api.example.com/v1/").expect("static url");
        let bound = longest.max(request_wait).min(crate::bounds::MAX_SERVER_WAIT).max(Duration::from_secs(2))
            // Tokio's timer wakes on the millisecond.
            + Duration::from_millis(1);
        let outcome = runtime.block_on(async {
            let pacer = Pacer::new(&limit, &api, "my-client", longest).expect("valid limit");
            pacer.admit(patience, None).await.expect("nothing paused yet");
            // A spent quota first (a policy makes the client ignore it), then a policy.
            let mut headers = HeaderMap::new();
            headers.insert("x-ratelimit-remaining", HeaderValue::from_static("0"));
            headers.insert("x-ratelimit-reset", HeaderValue::from(reset));
            pacer.response(Instant::now(), 200, &headers);
            let policy = HeaderValue::from_str(&format!("d;q={quota};w={window}")).expect("ascii");
            headers.insert("ratelimit-policy", policy);
            pacer.response(Instant::now(), 200, &headers);
            pacer.throttled(Instant::now(), &rate_limited(retry_after), request_wait);
            pacer.admit(patience, None).await
        });
        match outcome {
            Ok(waited) => proptest::prop_assert!(waited <= bound, "waited {waited:?}, bound {bound:?}"),
            Err(refused) => proptest::prop_assert!(refused.retry_after().is_some_and(|left| left <= bound), "{refused:?}"),
        }
    }
}
