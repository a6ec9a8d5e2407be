//! A seeded random schedule of listings by one signed-in user against the reference server with
//! refresh-token rotation and reuse detection on: token-endpoint faults (gateway pages, 429s,
//! slow answers, answers sent late after the grant rotated), API faults (5xx, 429, dropped connections, empty pages,
//! every access token expiring at once), access tokens of one and two seconds, and callers
//! cancelled at random points (a timeout around `send()`, a stream dropped mid-listing).
//!
//! Whatever happens, the sign-in survives (no `invalid_grant`, no reuse detected), every
//! listing that runs to its end delivers every company exactly once and in order, a dropped
//! one delivered a clean prefix, nothing panics, and at the end the store holds the refresh
//! token the server considers current. `BUSINESS_RECORDS_CHAOS_SEED` replays a seed.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use business_records::auth::MemoryTokenStore;
use business_records::{Auth, Client, CompanySort, Error, RateLimit, RetryPolicy};
use business_records_reference_server::{Endpoint, Fault, Faults, ReferenceServer, RetryAfter};

use crate::auth_user::sign_in;

crate::cases! {
    ServerControl:
        two_hundred_and_forty_listings_under_token_and_api_faults_lose_nothing [multi_thread(2)];
}

/// Listings per token lifetime; two lifetimes make the run.
const LISTINGS: usize = 120;
const WORKERS: usize = 6;
const COMPANIES: usize = 24;
const PAGE: u32 = 8;

fn seed() -> u64 {
    std::env::var("BUSINESS_RECORDS_CHAOS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED_0014)
}

/// Five in twelve token requests meet a fault: an error answer, a slow answer, or an answer
/// sent late after the grant. (A connection dropped mid-refresh ends the sign-in by rule, as the
/// refresh may have rotated: `hostile::refresh` checks that.)
fn token_faults(rng: &mut fastrand::Rng, n: usize) -> Vec<Option<Fault>> {
    (0..n)
        .map(|_| match rng.u32(0..12) {
            0 => Some(Fault::Html(503)),
            1 => Some(Fault::Empty(502)),
            2 => Some(Fault::RateLimited(RetryAfter::Seconds(0))),
            3 => Some(Fault::Late(Duration::from_millis(rng.u64(50..300)))),
            4 => Some(Fault::Slow(Duration::from_millis(rng.u64(50..300)))),
            _ => None,
        })
        .collect()
}

/// About one API request in six meets a fault; every access token expires at once now and
/// then, never twice within twenty requests (a request resent after a refresh must not meet
/// the same fault again, or it would rightly ask for a new sign-in).
fn api_faults(rng: &mut fastrand::Rng, n: usize) -> Vec<Option<Fault>> {
    let mut last_expiry = 0;
    (0..n)
        .map(|i| match rng.u32(0..24) {
            0 => Some(Fault::Status(503)),
            1 => Some(Fault::Html(502)),
            2 => Some(Fault::RateLimited(RetryAfter::Seconds(0))),
            3 => Some(Fault::DropConnection),
            4 => Some(Fault::EmptyPage),
            5 | 6 if i >= last_expiry + 20 => {
                last_expiry = i;
                Some(Fault::ExpireTokens)
            }
            _ => None,
        })
        .collect()
}

/// What became of the listings.
#[derive(Debug, Default)]
struct Tally {
    completed: AtomicUsize,
    timed_out: AtomicUsize,
    dropped: AtomicUsize,
}

/// One listing in one of three ways, checked against the dataset's order.
async fn listing(client: &Client, expected: &[String], rng: &mut fastrand::Rng, tally: &Tally) {
    let list = || client.companies().sort(CompanySort::CreatedAt.asc()).limit(PAGE);
    match rng.u32(0..3) {
        0 => {
            let all = list().stream().try_collect::<Vec<_>>().await;
            let ids: Vec<String> =
                all.unwrap_or_else(|e| panic!("a listing failed: {e:?}")).into_iter().map(|c| c.id).collect();
            assert_eq!(ids, expected, "every company exactly once, in order");
            tally.completed.fetch_add(1, Ordering::Relaxed);
        }
        1 => {
            // A quarter of these give up at once (a zero timeout fires on the first poll that
            // does not finish), so every run has callers cancelled this way; the rest at random.
            let limit = Duration::from_millis(rng.u64(0..40).saturating_sub(10));
            match tokio::time::timeout(limit, list().send()).await {
                Ok(page) => {
                    let page = page.unwrap_or_else(|e| panic!("a page failed: {e:?}"));
                    let ids: Vec<String> = page.data.into_iter().map(|c| c.id).collect();
                    assert!(expected.starts_with(&ids), "the first page is the first companies");
                    tally.completed.fetch_add(1, Ordering::Relaxed);
                }
                Err(_) => {
                    tally.timed_out.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        _ => {
            let take = rng.usize(1..expected.len());
            let mut stream = list().stream();
            let mut ids = Vec::new();
            while ids.len() < take {
                match stream.try_next().await {
                    Ok(Some(company)) => ids.push(company.id),
                    Ok(None) => break,
                    Err(e) => panic!("a listing failed: {e:?}"),
                }
            }
            // Dropped mid-listing, with its prefetch possibly waiting for a token.
            drop(stream);
            assert_eq!(ids, expected[..ids.len()], "a clean prefix");
            tally.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

async fn run(lifetime: Duration, seed: u64) {
    let started = Instant::now();
    let mut rng = fastrand::Rng::with_seed(seed);
    let server = ReferenceServer::builder()
        .companies(COMPANIES)
        .seed(seed)
        .token_lifetime(lifetime)
        .refresh_token_rotation(true)
        .faults(Faults::new())
        .start()
        .await;
    let (flow, tokens) = sign_in(&server).await;
    server.set_faults(
        Faults::new()
            .on_sequence(Endpoint::Token, token_faults(&mut rng, 2_000))
            .on_sequence(Endpoint::Companies, api_faults(&mut rng, 20_000)),
    );
    let store = MemoryTokenStore::new();
    let client = Client::builder()
        .base_url(server.base_url())
        .auth(Auth::user(flow, tokens).store(store.clone()))
        .retry(
            RetryPolicy::default()
                .max_attempts(10)
                .initial_delay(Duration::from_millis(5))
                .max_delay(Duration::from_millis(200)),
        )
        .timeout(Duration::from_secs(5))
        // Without pacing: after each 429 the adaptive default would slow all six workers down
        // for a while (pacing.rs and the pacer's own tests check that), and the run would be
        // about the pacer, not the tokens.
        .rate_limit(RateLimit::none())
        .build()
        .expect("client");
    let expected: Arc<Vec<String>> = Arc::new(
        server.dataset().companies_sorted("createdAt", None).iter().map(|c| c.id().to_owned()).collect(),
    );
    let next = Arc::new(AtomicUsize::new(0));
    let tally = Arc::new(Tally::default());
    let workers = (0..WORKERS).map(|worker| {
        let (client, expected, next, tally) = (client.clone(), expected.clone(), next.clone(), tally.clone());
        let mut rng = fastrand::Rng::with_seed(seed ^ (worker as u64 + 1).wrapping_mul(0x9E37_79B9));
        tokio::spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < LISTINGS {
                listing(&client, &expected, &mut rng, &tally).await;
                // Now and then a pause, so tokens expire between listings too.
                if rng.u32(0..3) == 0 {
                    tokio::time::sleep(Duration::from_millis(rng.u64(0..400))).await;
                }
            }
        })
    });
    for worker in futures::future::join_all(workers).await {
        if let Err(e) = worker {
            std::panic::resume_unwind(e.into_panic());
        }
    }

    // A refresh a cancelled caller started may still be under way: wait for it to settle.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let stored = store.get().and_then(|t| t.refresh_token).map(|t| t.secret().to_owned());
        let current = server.active_refresh_tokens(server.test_user());
        if stored.is_some() && current == [stored.clone().unwrap_or_default()] {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the store holds {stored:?}, the server considers {current:?} current"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (counts, token) = (server.fault_counts(Endpoint::Companies), server.fault_counts(Endpoint::Token));
    let refreshes = server.token_requests_for("refresh_token");
    println!(
        "token chaos, {lifetime:?} tokens, seed {seed:#x}, {:?}: {tally:?}, {refreshes} refresh \
         requests, {} token faults, {} API faults",
        started.elapsed(),
        token.total(),
        counts.applied.values().sum::<u64>()
    );
    assert_eq!(server.refresh_token_reuses(), 0, "no rotated refresh token was ever presented again");
    assert!(token.total() > 0 && !counts.applied.is_empty(), "the schedule injected faults");
    assert!(refreshes >= 3, "tokens expired and were refreshed during the run");
    let (completed, timed_out, dropped) = (
        tally.completed.load(Ordering::Relaxed),
        tally.timed_out.load(Ordering::Relaxed),
        tally.dropped.load(Ordering::Relaxed),
    );
    assert_eq!(completed + timed_out + dropped, LISTINGS);
    assert!(timed_out > 0 && dropped > 0, "callers were cancelled both ways");
    // The sign-in is intact: one more call works.
    let err: Option<Error> = client.companies().limit(1).send().await.err();
    assert!(err.is_none(), "{err:?}");
}

async fn two_hundred_and_forty_listings_under_token_and_api_faults_lose_nothing() {
    let seed = seed();
    run(Duration::from_secs(1), seed).await;
    run(Duration::from_secs(2), seed.wrapping_add(1)).await;
}
