//! One rate limit, many listings and processes: issue 24's table, measured with the SDK's
//! pacing against a rate limit in a process of its own.
//!
//! ```text
//! cargo bench --bench pacing --features redis    # every row
//! cargo bench --bench pacing -- adaptive         # the rows whose mode or scenario name
//!                                                # contains `adaptive`
//! ```
//!
//! The reference server runs in a child process (this binary in another role) with one token
//! bucket per client id: 20 requests a second, burst 5, `Retry-After` in whole seconds, and
//! 2,000 companies, so that a listing is 20 pages of 100. The processes of each scenario are
//! more copies of this binary: every process builds its client, says it is ready, and on `go`
//! runs its listings at once; the wall time runs from `go` to the last process's answer. The
//! ideal is the pages of the scenario at 20 a second. Modes:
//!
//! - `configured`: the server's own numbers, `RateLimit::per_second(20).burst(5)`, shared over
//!   Redis (`.shared(&cache)`) in the rows with several processes (those need
//!   `--features redis`);
//! - `configured, busy`: the same while two threads of the bench keep both cores busy;
//! - `adaptive`: no setting, a server that sends no rate-limit fields;
//! - `adaptive, fields`: no setting, a server that sends `RateLimit-Policy` and `RateLimit`;
//! - `unpaced`: `RateLimit::none()`, the behaviour before pacing (the baseline).
//!
//! Every mode keeps the default `RetryPolicy`. Last, `retry-after 0`: a three-page listing of
//! a fresh client whose second page is answered 429 with `Retry-After: 0` (no rate limit
//! otherwise), with the default pacing and with `RateLimit::none()`.

mod child;

use std::io::BufRead;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use business_records::{Auth, Client, RateLimit};
use business_records_reference_server::{Endpoint, Fault, Faults, ReferenceServer, RetryAfter, TokenBucket};
use child::Process;

/// What the parent tells a child process, in the environment.
const ROLE: &str = "PACING_BENCH_ROLE";
const RATE: u32 = 20;
const BURST: u32 = 5;
const COMPANIES: usize = 2_000;
/// Pages of one listing: 2,000 companies, 100 a page.
const PAGES: u32 = 20;
/// Runs of the `retry-after 0` listing for each client.
const RETRY_AFTER_RUNS: usize = 5;

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
    ConfiguredBusy,
    Adaptive,
    AdaptiveFields,
    Unpaced,
}

impl Mode {
    const ALL: [Mode; 5] =
        [Mode::Configured, Mode::ConfiguredBusy, Mode::Adaptive, Mode::AdaptiveFields, Mode::Unpaced];

    fn name(self) -> &'static str {
        match self {
            Mode::Configured => "configured",
            Mode::ConfiguredBusy => "configured, busy",
            Mode::Adaptive => "adaptive",
            Mode::AdaptiveFields => "adaptive, fields",
            Mode::Unpaced => "unpaced",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Mode::Configured => {
                "`RateLimit::per_second(20).burst(5)` (the server's numbers), shared over Redis when there are several processes"
            }
            Mode::ConfiguredBusy => "the same, with both cores kept busy by two spinning threads",
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

    fn configured(self) -> bool {
        matches!(self, Mode::Configured | Mode::ConfiguredBusy)
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime");
    match std::env::var(ROLE).as_deref() {
        Ok("server") => runtime.block_on(server()),
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

/// The reference server in its child process, and what it said about itself.
struct Server {
    process: Process,
    /// `base_url`, `auth_url`, `client_id` and `client_secret`.
    settings: Vec<String>,
}

impl Server {
    fn start() -> Server {
        let mut command = Command::new(std::env::current_exe().expect("this binary"));
        command.env(ROLE, "server");
        let mut process = Process::spawn(command);
        let settings = process.call("settings").split_whitespace().map(str::to_owned).collect();
        Server { process, settings }
    }

    /// Sends `command` and checks the server did it.
    fn tell(&mut self, command: &str) {
        assert_eq!(self.process.call(command), "ok", "the server refused {command:?}");
    }

    /// Requests the rate limit let through and refused since it was set.
    fn counts(&mut self) -> (u64, u64) {
        let reply = self.process.call("counts");
        let numbers: Vec<u64> = reply.split_whitespace().filter_map(|n| n.parse().ok()).collect();
        match numbers[..] {
            [admitted, refused] => (admitted, refused),
            _ => panic!("the server answered {reply:?}"),
        }
    }
}

async fn parent() {
    let filter = std::env::args().skip(1).find(|arg| !arg.starts_with('-')).unwrap_or_default();
    let mut server = Server::start();
    let (_redis, redis_url) = redis_server();
    println!(
        "reference server in a process of its own: {RATE} requests/s, burst {BURST}, Retry-After in \
         whole seconds; {COMPANIES} companies a listing ({PAGES} pages of 100)"
    );
    let chosen =
        |mode: Mode, scenario: &Scenario| format!("{}: {}", mode.name(), scenario.name).contains(&filter);
    for mode in Mode::ALL.into_iter().filter(|&mode| SCENARIOS.iter().any(|s| chosen(mode, s))) {
        println!("\n{}\n", mode.title());
        println!("| Scenario | 429s among requests | Listings failed | Items delivered | Wall / ideal |");
        println!("|---|---|---|---|---|");
        for (number, scenario) in SCENARIOS.iter().enumerate().filter(|(_, s)| chosen(mode, s)) {
            let shared = mode.configured() && scenario.processes > 1;
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
            server.tell(if mode == Mode::AdaptiveFields { "limit fields" } else { "limit" });
            let prefix = format!("pacing-bench-{}-{number}-{}", mode.name(), std::process::id());
            let busy = Busy::start(if mode == Mode::ConfiguredBusy { 2 } else { 0 });
            let outcome = run(&server, scenario, mode, redis_url.as_deref(), &prefix);
            drop(busy);
            let (admitted, refused) = server.counts();
            let listings = (scenario.processes * scenario.listings) as u64;
            let ideal = f64::from(PAGES) * listings as f64 / f64::from(RATE);
            println!(
                "| {} | {:.1}% ({} of {}) | {} of {} | {} of {} | {:.1} s / {:.0} s = {:.2} |",
                scenario.name,
                100.0 * refused as f64 / (admitted + refused).max(1) as f64,
                refused,
                admitted + refused,
                outcome.failed,
                listings,
                outcome.items,
                listings * COMPANIES as u64,
                outcome.wall.as_secs_f64(),
                ideal,
                outcome.wall.as_secs_f64() / ideal,
            );
        }
    }
    if "retry-after 0".contains(&filter) {
        retry_after_zero(&mut server).await;
    }
}

/// A three-page listing whose second page is answered 429 with `Retry-After: 0`.
async fn retry_after_zero(server: &mut Server) {
    println!(
        "\nretry-after 0: a fresh client lists three pages; the second is answered 429 with `Retry-After: 0`\n"
    );
    println!("| Client | Wall of each run |");
    println!("|---|---|");
    server.tell("nolimit");
    for (name, limit) in [("default (adaptive)", None), ("`RateLimit::none()`", Some(RateLimit::none()))] {
        let mut walls = Vec::new();
        for _ in 0..RETRY_AFTER_RUNS {
            server.tell("fault 2");
            let mut builder =
                Client::builder().base_url(&server.settings[0]).auth(auth(&server.settings[1..]));
            if let Some(limit) = limit.clone() {
                builder = builder.rate_limit(limit);
            }
            let client = builder.build().expect("a client");
            let started = Instant::now();
            let mut companies = client.companies().limit(100).max_items(300).stream();
            let mut items = 0;
            while let Some(_company) = companies.try_next().await.expect("three pages") {
                items += 1;
            }
            assert_eq!(items, 300);
            walls.push(format!("{} ms", started.elapsed().as_millis()));
        }
        println!("| {name} | {} |", walls.join(", "));
    }
}

/// Threads that keep `cores` cores busy until dropped.
struct Busy {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Busy {
    fn start(cores: usize) -> Busy {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..cores)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    let mut spin = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        spin = std::hint::black_box(spin.wrapping_mul(31).wrapping_add(7));
                    }
                })
            })
            .collect();
        Busy { stop, threads }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
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
fn run(server: &Server, scenario: &Scenario, mode: Mode, redis: Option<&str>, prefix: &str) -> Outcome {
    let delay = scenario.page_delay.map_or(0, |d| d.as_millis());
    let mut processes: Vec<Process> = (0..scenario.processes)
        .map(|_| {
            let mut command = Command::new(std::env::current_exe().expect("this binary"));
            command
                .env(ROLE, "process")
                .env("PACING_SERVER", server.settings.join(" "))
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

/// The reference server's role: serves until its input ends, and answers one line for each
/// line it reads: `settings`, `limit` (the token bucket, buckets full and counts at zero),
/// `limit fields` (the same, sending the rate-limit fields), `nolimit`, `fault <n>` (the n-th
/// companies request from now answered 429 with `Retry-After: 0`) and `counts`.
async fn server() {
    let server = ReferenceServer::builder()
        .companies(COMPANIES)
        .contacts_per_company(0)
        .faults(Faults::new())
        .start()
        .await;
    println!("ready");
    // The server runs on the runtime's workers; this thread only reads commands.
    for line in std::io::stdin().lock().lines().map_while(Result::ok) {
        let bucket = TokenBucket::per_second(RATE).burst(BURST);
        match line.split_whitespace().collect::<Vec<_>>()[..] {
            ["settings"] => {
                let (client_id, secret) = (server.client_id(), server.client_secret());
                println!("{} {} {client_id} {secret}", server.base_url(), server.auth_url());
                continue;
            }
            ["counts"] => {
                let counts = server.rate_limit_counts();
                println!("{} {}", counts.admitted, counts.refused);
                continue;
            }
            ["limit"] => server.set_rate_limit(Some(bucket)),
            ["limit", "fields"] => server.set_rate_limit(Some(bucket.fields(true))),
            ["nolimit"] => server.set_rate_limit(None),
            ["fault", n] => server.set_faults(Faults::new().on(
                Endpoint::Companies,
                n.parse().unwrap_or(1),
                Fault::RateLimited(RetryAfter::Seconds(0)),
            )),
            _ => {
                println!("unknown command {line:?}");
                continue;
            }
        }
        println!("ok");
    }
}

/// The client credentials of the server's settings: `auth_url`, `client_id`, `client_secret`.
fn auth(settings: &[String]) -> Auth {
    let [auth_url, client_id, client_secret] = settings else {
        panic!("the server's settings: {settings:?}")
    };
    Auth::client_credentials(auth_url, client_id, client_secret.as_str()).scopes(["api/read"]).into()
}

/// A process of a scenario: one client, its listings at once on `go`, then `done <items>
/// <failed listings>`.
async fn process() {
    let mode = Mode::from_name(&var("PACING_MODE"));
    let settings: Vec<String> = var("PACING_SERVER").split_whitespace().map(str::to_owned).collect();
    let mut builder = Client::builder().base_url(&settings[0]).auth(auth(&settings[1..]));
    match mode {
        Mode::Configured | Mode::ConfiguredBusy => builder = builder.rate_limit(configured().await),
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

/// The server's numbers: one budget in Redis when the parent gave a Redis.
async fn configured() -> RateLimit {
    let limit = RateLimit::per_second(RATE).burst(BURST);
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
