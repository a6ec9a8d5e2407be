//! One rate limit, many listings and processes: issue 24's table, measured with the SDK's
//! pacing.
//!
//! ```text
//! cargo bench --bench pacing                     # every row; the multi-process rows of the
//!                                                # configured mode need --features redis
//! cargo bench --bench pacing --features redis
//! cargo bench --bench pacing -- adaptive         # the rows whose mode or scenario name
//!                                                # contains `adaptive`
//! ```
//!
//! The parent runs the reference server with one token bucket per client id (20 requests a
//! second, burst 5, `Retry-After` in whole seconds) and 2,000 companies, so that a listing is
//! 20 pages of 100, and starts copies of this binary as the processes of each scenario. Every
//! process builds its client, says it is ready, and on `go` runs its listings at once; the wall
//! time runs from `go` to the last process's answer. The ideal is the pages of the scenario at
//! 20 a second. Modes:
//!
//! - `configured`: `rate_limit(RateLimit::per_second(20))`, shared over Redis
//!   (`.shared(&cache)`) in the rows with several processes;
//! - `adaptive`: no setting, a server that sends no rate-limit fields;
//! - `adaptive, fields`: no setting, a server that sends `RateLimit-Policy` and `RateLimit`;
//! - `unpaced`: `RateLimit::none()`, the behaviour before pacing (the baseline).
//!
//! Every mode keeps the default `RetryPolicy`.

mod child;

use std::io::BufRead;
use std::process::Command;
use std::time::{Duration, Instant};

use business_records::{Auth, Client, RateLimit};
use business_records_reference_server::{ReferenceServer, TokenBucket};
use child::Process;

/// What the parent tells a child process, in the environment.
const ROLE: &str = "PACING_BENCH_ROLE";
const RATE: u32 = 20;
const BURST: u32 = 5;
const COMPANIES: usize = 2_000;
/// Pages of one listing: 2,000 companies, 100 a page.
const PAGES: u32 = 20;

/// A row of the issue's table.
struct Scenario {
    name: &'static str,
    processes: usize,
    listings: usize,
    page_delay: Option<Duration>,
}

const SCENARIOS: [Scenario; 6] = [
    Scenario { name: "1 process, 1 listing", processes: 1, listings: 1, page_delay: None },
    Scenario { name: "1 process, 8 listings on one client", processes: 1, listings: 8, page_delay: None },
    Scenario { name: "8 processes, 1 listing each", processes: 8, listings: 1, page_delay: None },
    Scenario { name: "8 processes, 4 listings each", processes: 8, listings: 4, page_delay: None },
    Scenario {
        name: "8 listings, `page_delay` 400 ms",
        processes: 1,
        listings: 8,
        page_delay: Some(Duration::from_millis(400)),
    },
    Scenario {
        name: "32 listings (8 processes), `page_delay` 1.6 s",
        processes: 8,
        listings: 4,
        page_delay: Some(Duration::from_millis(1600)),
    },
];

/// How the processes' clients pace themselves.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Configured,
    Adaptive,
    AdaptiveFields,
    Unpaced,
}

impl Mode {
    const ALL: [Mode; 4] = [Mode::Configured, Mode::Adaptive, Mode::AdaptiveFields, Mode::Unpaced];

    fn name(self) -> &'static str {
        match self {
            Mode::Configured => "configured",
            Mode::Adaptive => "adaptive",
            Mode::AdaptiveFields => "adaptive, fields",
            Mode::Unpaced => "unpaced",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Mode::Configured => {
                "`rate_limit(RateLimit::per_second(20))`, shared over Redis when there are several processes"
            }
            Mode::Adaptive => "no setting (adaptive); the server sends no rate-limit fields",
            Mode::AdaptiveFields => {
                "no setting (adaptive); the server sends `RateLimit-Policy` and `RateLimit`"
            }
            Mode::Unpaced => "`RateLimit::none()`: the behaviour before pacing",
        }
    }

    fn from_name(name: &str) -> Mode {
        Mode::ALL.into_iter().find(|mode| mode.name() == name).unwrap_or(Mode::Adaptive)
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime");
    match std::env::var(ROLE).as_deref() {
        Ok("process") => runtime.block_on(process()),
        _ => runtime.block_on(parent()),
    }
}

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_default()
}

/// What the processes of a scenario did.
#[derive(Default)]
struct Outcome {
    items: u64,
    failed: u64,
    wall: Duration,
}

async fn parent() {
    let filter = std::env::args().skip(1).find(|arg| !arg.starts_with('-')).unwrap_or_default();
    let server = ReferenceServer::builder().companies(COMPANIES).contacts_per_company(0).start().await;
    let (_redis, redis_url) = redis_server();
    println!(
        "reference server: {RATE} requests/s, burst {BURST}, Retry-After in whole seconds; \
         {COMPANIES} companies a listing ({PAGES} pages of 100)"
    );
    let chosen =
        |mode: Mode, scenario: &Scenario| format!("{}: {}", mode.name(), scenario.name).contains(&filter);
    for mode in Mode::ALL.into_iter().filter(|&mode| SCENARIOS.iter().any(|s| chosen(mode, s))) {
        println!("\n{}\n", mode.title());
        println!("| Scenario | 429s among requests | Listings failed | Items delivered | Wall / ideal |");
        println!("|---|---|---|---|---|");
        for (number, scenario) in SCENARIOS.iter().enumerate().filter(|(_, s)| chosen(mode, s)) {
            let shared = mode == Mode::Configured && scenario.processes > 1;
            let redis_url = match (&redis_url, shared) {
                (Some(url), true) => Some(url.clone()),
                (None, true) => {
                    println!(
                        "| {} | skipped: needs `--features redis` and redis-server | | | |",
                        scenario.name
                    );
                    continue;
                }
                _ => None,
            };
            let bucket = TokenBucket::per_second(RATE).burst(BURST).fields(mode == Mode::AdaptiveFields);
            server.set_rate_limit(Some(bucket));
            let prefix = format!("pacing-bench-{}-{number}-{}", mode.name(), std::process::id());
            let outcome = run(&server, scenario, mode, redis_url.as_deref(), &prefix);
            let counts = server.rate_limit_counts();
            let requests = counts.admitted + counts.refused;
            let listings = (scenario.processes * scenario.listings) as u64;
            let ideal = Duration::from_secs_f64(f64::from(PAGES) * listings as f64 / f64::from(RATE));
            println!(
                "| {} | {:.1}% ({} of {}) | {} of {} | {} of {} | {:.1} s / {:.0} s = {:.2} |",
                scenario.name,
                100.0 * counts.refused as f64 / requests.max(1) as f64,
                counts.refused,
                requests,
                outcome.failed,
                listings,
                outcome.items,
                listings * COMPANIES as u64,
                outcome.wall.as_secs_f64(),
                ideal.as_secs_f64(),
                outcome.wall.as_secs_f64() / ideal.as_secs_f64(),
            );
        }
    }
}

/// A `redis-server` of the bench's own (kept running while the first value lives) and its URL.
#[cfg(feature = "redis")]
fn redis_server() -> (Option<business_records_reference_server::RedisServer>, Option<String>) {
    match business_records_reference_server::RedisServer::start() {
        Ok(redis) => {
            let url = redis.url();
            (Some(redis), Some(url))
        }
        Err(reason) => {
            println!("no Redis ({reason}): the shared rows are skipped");
            (None, None)
        }
    }
}

#[cfg(not(feature = "redis"))]
fn redis_server() -> ((), Option<String>) {
    println!("built without --features redis: the configured mode's multi-process rows are skipped");
    ((), None)
}

/// Runs one scenario: its processes start, get ready, and list on `go`.
fn run(
    server: &ReferenceServer,
    scenario: &Scenario,
    mode: Mode,
    redis: Option<&str>,
    prefix: &str,
) -> Outcome {
    let delay = scenario.page_delay.map_or(0, |d| d.as_millis());
    let mut processes: Vec<Process> = (0..scenario.processes)
        .map(|_| {
            let mut command = Command::new(std::env::current_exe().expect("this binary"));
            command
                .env(ROLE, "process")
                .env("PACING_BASE_URL", server.base_url())
                .env("PACING_AUTH_URL", server.auth_url())
                .env("PACING_CLIENT_ID", server.client_id())
                .env("PACING_CLIENT_SECRET", server.client_secret())
                .env("PACING_MODE", mode.name())
                .env("PACING_LISTINGS", scenario.listings.to_string())
                .env("PACING_PAGE_DELAY_MS", delay.to_string())
                .env("PACING_REDIS_URL", redis.unwrap_or_default())
                .env("PACING_PREFIX", prefix);
            Process::spawn(command)
        })
        .collect();
    let started = Instant::now();
    for process in &mut processes {
        process.ask("go");
    }
    let mut outcome = Outcome::default();
    for process in &mut processes {
        let reply = process.reply();
        let numbers: Vec<u64> = reply.split_whitespace().skip(1).filter_map(|n| n.parse().ok()).collect();
        match (reply.split_whitespace().next(), numbers.as_slice()) {
            (Some("done"), [items, failed]) => {
                outcome.items += items;
                outcome.failed += failed;
            }
            _ => {
                println!("a process answered {reply:?}");
                outcome.failed += scenario.listings as u64;
            }
        }
    }
    outcome.wall = started.elapsed();
    outcome
}

/// A process of a scenario: one client, its listings at once on `go`, then `done <items>
/// <failed listings>`.
async fn process() {
    let mode = Mode::from_name(&var("PACING_MODE"));
    let auth = Auth::client_credentials(
        var("PACING_AUTH_URL"),
        var("PACING_CLIENT_ID"),
        var("PACING_CLIENT_SECRET"),
    )
    .scopes(["api/read"]);
    let mut builder = Client::builder().base_url(var("PACING_BASE_URL")).auth(auth);
    match mode {
        Mode::Configured => builder = builder.rate_limit(configured().await),
        Mode::Unpaced => builder = builder.rate_limit(RateLimit::none()),
        Mode::Adaptive | Mode::AdaptiveFields => {}
    }
    let delay: u64 = var("PACING_PAGE_DELAY_MS").parse().unwrap_or(0);
    if delay > 0 {
        builder = builder.page_delay(Duration::from_millis(delay));
    }
    let client = builder.build().expect("a client");
    let listings: usize = var("PACING_LISTINGS").parse().unwrap_or(1);
    println!("ready");
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).expect("go");

    let tasks: Vec<_> = (0..listings)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move {
                let mut companies = client.companies().stream();
                let mut items = 0u64;
                loop {
                    match companies.try_next().await {
                        Ok(Some(_)) => items += 1,
                        Ok(None) => return (items, false),
                        Err(error) => {
                            eprintln!("a listing failed after {items} companies: {error}");
                            return (items, true);
                        }
                    }
                }
            })
        })
        .collect();
    let (mut items, mut failed) = (0, 0);
    for task in tasks {
        match tokio::time::timeout(Duration::from_secs(600), task).await {
            Ok(Ok((delivered, lost))) => {
                items += delivered;
                failed += u64::from(lost);
            }
            _ => failed += 1,
        }
    }
    println!("done {items} {failed}");
}

/// The configured rate: one budget in Redis when the parent gave a Redis.
async fn configured() -> RateLimit {
    let limit = RateLimit::per_second(RATE);
    #[cfg(feature = "redis")]
    if !var("PACING_REDIS_URL").is_empty() {
        let cache = business_records::auth::RedisTokenCache::connect(var("PACING_REDIS_URL"))
            .await
            .expect("a redis URL")
            .key_prefix(var("PACING_PREFIX"));
        return limit.shared(&cache);
    }
    limit
}
