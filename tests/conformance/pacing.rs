//! Pacing (issue 24): one budget for every request of a client, served in order of arrival,
//! first pages included; a 429 pauses the whole client; without a setting the client adapts to
//! the server's 429s and to its advertised `RateLimit-Policy`. A configured limit keeps a
//! margin for arrival jitter and slows down after a 429; an adaptive one backs off from a rate
//! it sustained, so a `Retry-After: 0` costs about that long. The reference server's rate
//! limit is a token bucket per client id, as docs/api.md decides.

use std::time::{Duration, Instant, SystemTime};

use business_records::{Client, Error, RateLimit, RetryPolicy};
use business_records_reference_server::{Endpoint, Fault, Faults, ReferenceServer, RetryAfter, TokenBucket};
use futures::future::join_all;

use crate::support::{self, drain};

crate::cases! {
    ServerControl:
        eight_listings_of_one_client_under_a_shared_limit_deliver_every_item_exactly_once,
        without_a_setting_eight_listings_slow_down_and_none_fails,
        a_429_to_one_listing_delays_the_others,
        while_pacing_a_429_uses_up_no_attempt_and_only_time_ends_it,
        a_listing_reports_how_long_it_waited_for_the_budget,
        an_advertised_limit_paces_an_adaptive_client_from_the_first_answer,
        a_retry_after_of_zero_early_in_a_listing_costs_no_more_than_that,
        a_configured_limit_keeps_half_its_burst_in_hand,
        a_429_under_a_configured_limit_lowers_the_pace_for_a_while;
}

/// A server of `companies` companies whose list endpoints allow 20 requests a second, 5 at
/// once, per client id.
async fn limited(companies: usize, bucket: TokenBucket) -> ReferenceServer {
    ReferenceServer::builder().companies(companies).contacts_per_company(0).rate_limit(bucket).start().await
}

fn expected(server: &ReferenceServer) -> Vec<String> {
    server.dataset().companies_sorted("", None).iter().map(|c| c.id().to_owned()).collect()
}

/// `listings` listings of every company, `limit` a page, on one client at the same time.
async fn list_together(client: &Client, listings: usize, limit: u32) -> Vec<(Vec<String>, Option<Error>)> {
    join_all((0..listings).map(|_| async {
        let mut stream = client.companies().limit(limit).stream();
        drain(&mut stream).await
    }))
    .await
}

/// Every listing ended without an error, with every company once, in order.
pub fn assert_complete(server: &ReferenceServer, results: &[(Vec<String>, Option<Error>)]) {
    let expected = expected(server);
    for (n, (ids, error)) in results.iter().enumerate() {
        assert!(error.is_none(), "listing {n} failed: {error:?}");
        assert!(
            *ids == expected,
            "listing {n}: every company once, in order ({} of {})",
            ids.len(),
            expected.len()
        );
    }
}

async fn eight_listings_of_one_client_under_a_shared_limit_deliver_every_item_exactly_once() {
    let server = limited(40, TokenBucket::per_second(20).burst(5)).await;
    let client = support::client_for(&server).rate_limit(RateLimit::per_second(20)).build().expect("client");
    let started = Instant::now();
    let results = list_together(&client, 8, 10).await;
    let elapsed = started.elapsed();
    assert_complete(&server, &results);

    let counts = server.rate_limit_counts();
    assert_eq!(counts.admitted, 32, "four pages for each of eight listings, each page once");
    assert!(counts.refused <= 1, "the client kept to the server's rate: {counts:?}");
    // 32 requests at 20 a second: 31 intervals of 50 ms.
    assert!(elapsed >= Duration::from_millis(1500), "paced: {elapsed:?}");
    // Served in order of arrival: the eight first pages went first, none waited for another
    // listing to finish.
    let requests = support::api_requests(&server);
    let first_pages = requests[..8].iter().filter(|r| r.query("cursor").is_none()).count();
    assert_eq!(
        first_pages,
        8,
        "{:?}",
        requests.iter().map(|r| r.query("cursor").is_some()).collect::<Vec<_>>()
    );
}

async fn without_a_setting_eight_listings_slow_down_and_none_fails() {
    let server = limited(40, TokenBucket::per_second(20).burst(5)).await;
    // The default retry policy: 4 attempts. Before pacing, 2 or 3 of 8 such listings failed
    // with `RetriesExhausted` after four 429s.
    let client = support::client_for(&server).build().expect("client");
    let results = list_together(&client, 8, 10).await;
    assert_complete(&server, &results);
    let counts = server.rate_limit_counts();
    assert_eq!(counts.admitted, 32);
    let refused = counts.refused as f64 / (counts.admitted + counts.refused) as f64;
    assert!(refused < 0.3, "the listings stopped fighting over the budget: {counts:?}");
}

/// The time of `request` since `start`.
fn since(start: SystemTime, at: SystemTime) -> Duration {
    at.duration_since(start).unwrap_or_default()
}

/// Three listings at once, the fourth request a 429 with `Retry-After: 1`: how long after it the
/// next request that was not already under way arrived.
async fn quiet_after_a_429(limit: RateLimit) -> (ReferenceServer, Duration) {
    let server = ReferenceServer::builder()
        .companies(30)
        .contacts_per_company(0)
        .faults(Faults::new().on(Endpoint::Companies, 4, Fault::RateLimited(RetryAfter::Seconds(1))))
        .start()
        .await;
    // Each listing a page every 200 ms at most: without pacing they are still going when the
    // 429's second is over.
    let client = support::client_for(&server)
        .rate_limit(limit)
        .page_delay(Duration::from_millis(200))
        .build()
        .expect("client");
    // The token first (request 1), so that the three listings start together.
    client.companies().limit(1).send().await.expect("a page");
    let results = list_together(&client, 3, 10).await;
    assert_complete(&server, &results);
    let requests = support::api_requests(&server);
    let refused = requests.iter().find(|r| r.status() == 429).expect("the injected 429");
    // Requests sent before the client read the 429 may arrive just after it.
    let in_flight = Duration::from_millis(100);
    let quiet = requests
        .iter()
        .map(|r| since(refused.received_at(), r.received_at()))
        .filter(|after| *after > in_flight)
        .min()
        .expect("requests after the 429");
    (server, quiet)
}

async fn a_429_to_one_listing_delays_the_others() {
    let (_, quiet) = quiet_after_a_429(RateLimit::adaptive()).await;
    // Arrival times: allow a little for a busy machine.
    assert!(quiet >= Duration::from_millis(950), "every listing waited for the pause: {quiet:?}");
    // Without pacing, only the refused request waits: the others go on.
    let (_, quiet) = quiet_after_a_429(RateLimit::none()).await;
    assert!(quiet < Duration::from_millis(900), "the other listings went on: {quiet:?}");
}

async fn while_pacing_a_429_uses_up_no_attempt_and_only_time_ends_it() {
    let slow_down = || Some(Fault::RateLimited(RetryAfter::Seconds(0)));
    let server = ReferenceServer::builder()
        .companies(10)
        .contacts_per_company(0)
        .faults(Faults::new().on_sequence(Endpoint::Companies, [slow_down(), slow_down()]))
        .start()
        .await;
    let one_retry = RetryPolicy::default().max_attempts(2).initial_delay(Duration::from_millis(1));
    let client = support::client_for(&server).retry(one_retry.clone()).build().expect("client");
    let mut companies = client.companies().stream();
    let (ids, error) = drain(&mut companies).await;
    assert!(error.is_none(), "two 429s, one retry allowed, yet: {error:?}");
    assert_eq!((ids.len(), companies.retries()), (10, 2));

    // A server that never stops saying so: the client slows down at each 429 (to one request
    // every two seconds at the slowest), and the policy's time ends the request.
    server.set_faults(Faults::new().on_every(
        Endpoint::Companies,
        1,
        Fault::RateLimited(RetryAfter::Seconds(0)),
    ));
    let client = support::client_for(&server).build().expect("client");
    let started = Instant::now();
    let policy = one_retry.max_elapsed(Duration::from_secs(4));
    let error = client.companies().retry(policy).send().await.expect_err("always rate limited");
    assert!(matches!(error, Error::RetriesExhausted(ref e) if e.attempts() > 2), "{error:?}");
    assert_eq!(error.status(), Some(429));
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_secs(1) && elapsed < Duration::from_secs(5), "{elapsed:?}");
}

async fn a_listing_reports_how_long_it_waited_for_the_budget() {
    let server = ReferenceServer::builder().companies(50).contacts_per_company(0).start().await;
    let paced = support::client_for(&server).rate_limit(RateLimit::per_second(10)).build().expect("client");
    let mut companies = paced.companies().limit(10).stream();
    let (ids, error) = drain(&mut companies).await;
    assert!(error.is_none() && ids.len() == 50, "{error:?}");
    // Five pages at 10 a second: four waits of up to 100 ms, less each request's own time.
    let waited = companies.rate_limit_wait();
    assert!(waited >= Duration::from_millis(200) && waited <= Duration::from_millis(400), "{waited:?}");

    let unpaced = support::client_for(&server).rate_limit(RateLimit::none()).build().expect("client");
    let mut companies = unpaced.companies().limit(10).stream();
    drain(&mut companies).await;
    assert_eq!(companies.rate_limit_wait(), Duration::ZERO);
}

async fn an_advertised_limit_paces_an_adaptive_client_from_the_first_answer() {
    let server = limited(100, TokenBucket::per_second(10).burst(3).fields(true)).await;
    let client = support::client_for(&server).build().expect("client");
    let started = Instant::now();
    let mut companies = client.companies().limit(10).stream();
    let (ids, error) = drain(&mut companies).await;
    assert!(error.is_none() && ids.len() == 100, "{error:?}");
    assert_eq!(server.rate_limit_counts().refused, 0, "paced at the advertised 10 a second before any 429");
    assert!(
        started.elapsed() >= Duration::from_millis(850),
        "ten pages, 100 ms apart: {:?}",
        started.elapsed()
    );

    // What the fields say, and a refusal's Retry-After in whole seconds.
    server.set_rate_limit(Some(TokenBucket::per_second(2).burst(1).fields(true)));
    let http = reqwest::Client::new();
    let token = server.mint_token(Default::default());
    let get = || http.get(format!("{}/v1/companies?limit=1", server.base_url())).bearer_auth(&token).send();
    let first = get().await.expect("a response");
    assert_eq!(first.status(), 200);
    assert_eq!(first.headers()["ratelimit-policy"], "\"default\";q=2;w=1");
    assert_eq!(first.headers()["ratelimit"], "\"default\";r=0;t=1");
    let refused = get().await.expect("a response");
    assert_eq!(refused.status(), 429);
    assert_eq!(refused.headers()["retry-after"], "1");
    let body: serde_json::Value = refused.json().await.expect("a JSON error");
    assert_eq!(body["error"], "rate_limited");
}

/// The times the API requests of `server` arrived, from the first.
fn arrivals(server: &ReferenceServer) -> Vec<Duration> {
    let requests = support::api_requests(server);
    let first = requests.first().map(|r| r.received_at()).unwrap_or(SystemTime::UNIX_EPOCH);
    requests.iter().map(|r| since(first, r.received_at())).collect()
}

async fn a_retry_after_of_zero_early_in_a_listing_costs_no_more_than_that() {
    let server = ReferenceServer::builder()
        .companies(30)
        .contacts_per_company(0)
        .faults(Faults::new().on(Endpoint::Companies, 2, Fault::RateLimited(RetryAfter::Seconds(0))))
        .start()
        .await;
    // The default client: adaptive. One 429 to a client that has sustained no rate is no reason
    // to pace it.
    let client = support::client_for(&server).build().expect("client");
    let mut companies = client.companies().limit(10).stream();
    let (ids, error) = drain(&mut companies).await;
    assert!(error.is_none() && ids.len() == 30, "{error:?}");
    // When the requests reached the server: the refused page again and the page after it came
    // at once (paced at 2 a second, as two answers per second of Retry-After would say, each
    // would wait 500 ms).
    let arrivals = arrivals(&server);
    assert_eq!(arrivals.len(), 4, "three pages, the second twice");
    assert!(arrivals[3] - arrivals[1] < Duration::from_millis(400), "{arrivals:?}");
    let waited = companies.rate_limit_wait();
    assert!(waited < Duration::from_millis(100), "the 429 cost {waited:?} of waiting");
}

async fn a_configured_limit_keeps_half_its_burst_in_hand() {
    let server = ReferenceServer::builder().companies(10).contacts_per_company(0).start().await;
    let client =
        support::client_for(&server).rate_limit(RateLimit::per_second(10).burst(6)).build().expect("client");
    // The token first, so that the requests leave together.
    client.companies().limit(1).send().await.expect("a page");
    server.reset_counters();
    let pages = join_all((0..6).map(|_| client.companies().limit(1).send())).await;
    assert!(pages.iter().all(Result::is_ok), "{pages:?}");
    let arrivals = arrivals(&server);
    // Of the burst of 6, the bucket held 2 after the first request; then 100 ms apart.
    assert!(arrivals[1] < Duration::from_millis(50), "{arrivals:?}");
    assert!(arrivals[2] >= Duration::from_millis(60), "the third waited for the rate: {arrivals:?}");
}

/// The median of `gaps`.
fn median(gaps: impl Iterator<Item = Duration>) -> Duration {
    let mut gaps: Vec<Duration> = gaps.collect();
    gaps.sort_unstable();
    gaps.get(gaps.len() / 2).copied().unwrap_or_default()
}

async fn a_429_under_a_configured_limit_lowers_the_pace_for_a_while() {
    let server = ReferenceServer::builder()
        .companies(280)
        .contacts_per_company(0)
        .faults(Faults::new().on(Endpoint::Companies, 7, Fault::RateLimited(RetryAfter::Seconds(1))))
        .start()
        .await;
    let client = support::client_for(&server).rate_limit(RateLimit::per_second(5)).build().expect("client");
    // The token first, so that every request of the listing leaves when the budget says.
    client.companies().limit(1).send().await.expect("a page");
    let mut companies = client.companies().limit(10).stream();
    let (ids, error) = drain(&mut companies).await;
    assert!(error.is_none() && ids.len() == 280, "{error:?}");
    let arrivals = arrivals(&server);
    assert_eq!(arrivals.len(), 30, "a first page, then 28 pages, the sixth twice");
    let retry = 7;
    assert!(arrivals[retry] - arrivals[retry - 1] >= Duration::from_millis(950), "the pause: {arrivals:?}");
    // The gaps between arrivals at the server: before the 429, the configured 200 ms (and
    // however late this machine wakes); in the second after the pause, 5% slower (210 ms), not
    // more; once the rate has grown back (2.9 s after the pause, by the cubic), 200 ms again.
    let gap = |from: usize, to: usize| median(arrivals[from..=to].windows(2).map(|pair| pair[1] - pair[0]));
    let before = gap(1, retry - 1).as_secs_f64();
    let slower = gap(retry, retry + 5).as_secs_f64() / before;
    let back = arrivals.iter().position(|at| *at >= arrivals[retry] + Duration::from_millis(2950));
    let back = back.filter(|back| arrivals.len() - back > 5).expect("five gaps after the rate is back");
    let recovered = gap(back, arrivals.len() - 1).as_secs_f64() / before;
    assert!((1.025..1.2).contains(&slower), "5% slower: {slower} times {before} s: {arrivals:?}");
    assert!(recovered < 1.025, "back to the configured rate: {recovered} times {before} s: {arrivals:?}");
}
