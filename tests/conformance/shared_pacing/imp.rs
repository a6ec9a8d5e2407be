use std::time::{Duration, Instant};

use business_records::{Client, Error, RateLimit, RetryPolicy};
use business_records_reference_server::{
    Endpoint, Fault, Faults, RedisServer, ReferenceServer, ReferenceServerBuilder, RetryAfter, TokenBucket,
};
use futures::future::join_all;

use crate::pacing::assert_complete;
use crate::secrets::capture_traces;
use crate::shared_cache::{connect, redis, redis_cli};
use crate::support::{self, drain};

fn companies(count: usize) -> ReferenceServerBuilder {
    ReferenceServer::builder().companies(count).contacts_per_company(0)
}

/// A process of the fleet: its own connection to Redis, its own client and budget.
async fn process(server: &ReferenceServer, redis: &RedisServer, limit: RateLimit) -> Client {
    let cache = connect(redis).await;
    support::client_for(server).rate_limit(limit.shared(&cache)).build().expect("client")
}

/// `per_process` listings of every company, ten a page, on each client, all at once.
async fn list_everywhere(clients: &[Client], per_process: usize) -> Vec<(Vec<String>, Option<Error>)> {
    let listings = clients.iter().flat_map(|client| {
        (0..per_process).map(move |_| async move {
            let mut stream = client.companies().limit(10).stream();
            drain(&mut stream).await
        })
    });
    join_all(listings).await
}

pub async fn processes_sharing_a_budget_in_redis_keep_to_the_servers_rate_together() {
    let server = companies(40).rate_limit(TokenBucket::per_second(20).burst(5)).start().await;
    let redis = redis();
    let fleet = join_all((0..4).map(|_| process(&server, &redis, RateLimit::per_second(20)))).await;
    let started = Instant::now();
    let results = list_everywhere(&fleet, 2).await;
    let elapsed = started.elapsed();
    assert_complete(&server, &results);
    let counts = server.rate_limit_counts();
    assert_eq!(counts.admitted, 32, "eight listings of four pages, each page once");
    // Four processes at 20 a second each would send 80: they kept to 20 together.
    assert!(counts.refused <= 1, "{counts:?}");
    assert!(elapsed >= Duration::from_millis(1500), "31 intervals of 50 ms: {elapsed:?}");

    // One budget, named by a hash of the API and the client id.
    let keys = String::from_utf8_lossy(&redis_cli(&redis, &["--scan"])).into_owned();
    assert!(keys.lines().any(|k| k.starts_with("business-records:rate-limit:")), "{keys}");
    assert!(!keys.contains(server.client_id()) && !keys.contains("127.0.0.1"), "{keys}");
}

pub async fn a_429_seen_by_one_process_pauses_every_process() {
    let faults = Faults::new().on(Endpoint::Companies, 4, Fault::RateLimited(RetryAfter::Seconds(1)));
    let server = companies(30).faults(faults).start().await;
    let redis = redis();
    let mut fleet = Vec::new();
    for _ in 0..3 {
        let cache = connect(&redis).await;
        let client = support::client_for(&server)
            .page_delay(Duration::from_millis(200))
            .rate_limit(RateLimit::per_second(50).shared(&cache))
            .build()
            .expect("client");
        fleet.push(client);
    }
    // Each process's token first (requests 1 to 3), so that the listings start together.
    for client in &fleet {
        client.companies().limit(1).send().await.expect("a page");
    }
    let results = list_everywhere(&fleet, 1).await;
    assert_complete(&server, &results);

    let requests = support::api_requests(&server);
    let refused = requests.iter().find(|r| r.status() == 429).expect("the injected 429");
    let quiet = requests
        .iter()
        .filter_map(|r| r.received_at().duration_since(refused.received_at()).ok())
        .filter(|after| *after > Duration::from_millis(100))
        .min()
        .expect("requests after the 429");
    assert!(quiet >= Duration::from_millis(950), "every process waited for the pause: {quiet:?}");
}

pub async fn a_pause_of_the_fleet_refuses_the_impatient_request_of_another_process() {
    let faults = Faults::new().on(Endpoint::Companies, 1, Fault::RateLimited(RetryAfter::Seconds(30)));
    let server = companies(10).faults(faults).start().await;
    let redis = redis();
    let first = process(&server, &redis, RateLimit::per_second(20)).await;
    let second = process(&server, &redis, RateLimit::per_second(20)).await;
    // Longer than the first client's `max_delay` (10 s): its request ends with the 429, and the
    // fleet pauses for 10 s, the longest the client waits.
    let refused = first.companies().send().await.expect_err("a 429 of 30 s");
    assert_eq!(refused.status(), Some(429));
    // The other process's request would wait no more than a second: it is refused at once.
    let published = || String::from_utf8_lossy(&redis_cli(&redis, &["--scan"])).contains(":pause");
    support::eventually("the pause is published", published).await;
    let started = Instant::now();
    let impatient = RetryPolicy::default().max_delay(Duration::from_secs(1));
    let error = second.companies().retry(impatient).send().await.expect_err("the fleet is paused");
    assert!(started.elapsed() < Duration::from_millis(500), "{:?}", started.elapsed());
    assert_eq!(error.status(), Some(429));
    let left = error.retry_after().unwrap_or_default();
    assert!(left > Duration::from_secs(8) && left <= Duration::from_secs(10), "{left:?}");
    assert_eq!(support::api_requests(&server).len(), 1, "the second request was never sent");
}

pub async fn redis_stopped_mid_run_costs_no_listing() {
    let server = companies(60).rate_limit(TokenBucket::per_second(20).burst(5)).start().await;
    let mut redis = redis();
    // This test's runtime has one thread: every client logs through the capture.
    let (captured, _guard) = capture_traces();
    let fleet = join_all((0..4).map(|_| process(&server, &redis, RateLimit::per_second(20)))).await;
    let stop = async {
        tokio::time::sleep(Duration::from_millis(400)).await;
        redis.stop();
    };
    let (results, ()) = tokio::join!(list_everywhere(&fleet, 1), stop);
    assert_complete(&server, &results);
    assert_eq!(server.rate_limit_counts().admitted, 24, "six pages for each of four listings");

    let text = captured.text();
    let warnings = text.matches("the shared rate limit is out of reach").count();
    assert!((1..=4).contains(&warnings), "one warning per process at most: {warnings}\n{text}");
    assert!(text.contains("processes=4"), "each paced itself at a quarter of the rate: {text}");
}
