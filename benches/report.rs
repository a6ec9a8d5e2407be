//! Scenario report: the SDK against a hand-written baseline, measured in the same run against
//! the reference server on loopback. One line per scenario with the median ratio SDK/baseline.
//!
//! ```text
//! cargo bench --bench report                 # every scenario
//! cargo bench --bench report -- decode       # only the named scenarios
//! ```
//!
//! The baseline is the best plain loop: reqwest + serde into the same `Company` type, the token
//! fetched once, one page after the other.

use std::time::{Duration, Instant};

use business_records::{Auth, Client, Company, Page};
use business_records_reference_server::{Endpoint, Fault, Faults, ReferenceServer};

mod support;

/// Samples per scenario; SDK and baseline alternate so drift hits both alike.
const SAMPLES: usize = 31;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--memory-child") {
        memory_child(&args[at + 1..]);
        return;
    }
    // Scenario names on the command line run only those; `--bench` and other flags are cargo's.
    let chosen: Vec<&str> = args.iter().skip(1).filter(|a| !a.starts_with('-')).map(String::as_str).collect();
    let run = |name: &str| chosen.is_empty() || chosen.contains(&name);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime");
    runtime.block_on(async {
        println!("scenario          sdk        baseline   ratio (sdk/baseline)");
        if run("overhead") {
            overhead().await;
        }
        if run("overlap") {
            overlap().await;
        }
        if run("token_contention") {
            token_contention().await;
        }
        if run("decode") {
            decode();
        }
        if run("memory") {
            memory().await;
        }
    });
}

/// Timings of the SDK and the baseline, taken in pairs, one right after the other.
#[derive(Default)]
struct Pairs {
    sdk: Vec<Duration>,
    base: Vec<Duration>,
}

impl Pairs {
    fn push(&mut self, sdk: Duration, base: Duration) {
        self.sdk.push(sdk);
        self.base.push(base);
    }

    /// The median of the per-pair ratios SDK/baseline: a slow moment of the machine slows both
    /// sides of a pair, so it moves the ratio less than it moves either time.
    fn ratio(&self) -> f64 {
        let ratios = self.sdk.iter().zip(&self.base).map(|(s, b)| s.as_secs_f64() / b.as_secs_f64());
        let mut ratios: Vec<f64> = ratios.collect();
        ratios.sort_by(f64::total_cmp);
        ratios[ratios.len() / 2]
    }
}

fn median(samples: &[Duration]) -> Duration {
    let mut samples = samples.to_vec();
    samples.sort();
    samples[samples.len() / 2]
}

fn report(name: &str, pairs: &Pairs, target: &str) {
    let (sdk, base, ratio) = (median(&pairs.sdk), median(&pairs.base), pairs.ratio());
    println!("{name:<17} {:>8.1} ms {:>8.1} ms {ratio:>6.2}   (target {target})", ms(sdk), ms(base));
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn client_builder(server: &ReferenceServer) -> business_records::ClientBuilder {
    Client::builder().base_url(server.base_url()).auth(Auth::client_credentials(
        server.auth_url(),
        server.client_id(),
        server.client_secret(),
    ))
}

fn client_for(server: &ReferenceServer) -> Client {
    client_builder(server).build().expect("a valid client")
}

/// The hand-written loop: one token, then page after page with reqwest and serde.
struct Baseline {
    http: reqwest::Client,
    url: String,
    token: String,
}

impl Baseline {
    async fn new(server: &ReferenceServer) -> Baseline {
        let http = reqwest::Client::new();
        let token: serde_json::Value = http
            .post(server.token_url())
            .basic_auth(server.client_id(), Some(server.client_secret()))
            .form(&[("grant_type", "client_credentials"), ("scope", "api/read")])
            .send()
            .await
            .expect("token request")
            .json()
            .await
            .expect("token response");
        let token = token["access_token"].as_str().expect("an access token").to_owned();
        Baseline { http, url: format!("{}/v1/companies", server.base_url()), token }
    }

    /// Streams every company, calling `consume` on each page; returns the item count.
    async fn run(&self, mut consume: impl AsyncFnMut(&[Company])) -> usize {
        let mut cursor: Option<String> = None;
        let mut count = 0;
        loop {
            let mut query = vec![("limit", "100".to_owned())];
            if let Some(c) = &cursor {
                query.push(("cursor", c.clone()));
            }
            let body = self
                .http
                .get(&self.url)
                .bearer_auth(&self.token)
                .query(&query)
                .send()
                .await
                .expect("page request")
                .bytes()
                .await
                .expect("page body");
            let page = Page::<Company>::from_json(&body).expect("a page");
            count += page.data.len();
            consume(&page.data).await;
            match (page.has_more, page.next_cursor) {
                (true, Some(next)) => cursor = Some(next.to_string()),
                _ => return count,
            }
        }
    }
}

/// Streams every company with the SDK, calling `consume` on each page.
async fn sdk_run(client: &Client, mut consume: impl AsyncFnMut(&[Company])) -> usize {
    let mut pages = client.companies().pages();
    let mut count = 0;
    while let Some(page) = pages.try_next().await.expect("a page") {
        count += page.data.len();
        consume(&page.data).await;
    }
    count
}

/// One warm-up of each (connection pools, token), then `SAMPLES` pairs of whole listings, each
/// checked to deliver `total` companies, the order within a pair alternating.
async fn time_listings(
    client: &Client,
    baseline: &Baseline,
    total: usize,
    consume: impl AsyncFn(&[Company]) + Copy,
) -> Pairs {
    sdk_run(client, consume).await;
    baseline.run(consume).await;
    let mut pairs = Pairs::default();
    for sample in 0..SAMPLES {
        // Each side goes first in every other pair, so neither gains from its place.
        let (sdk, base) = if sample % 2 == 0 {
            let sdk = time_run(sdk_run(client, consume), total).await;
            (sdk, time_run(baseline.run(consume), total).await)
        } else {
            let base = time_run(baseline.run(consume), total).await;
            (time_run(sdk_run(client, consume), total).await, base)
        };
        pairs.push(sdk, base);
    }
    pairs
}

/// How long one listing takes; checks it delivered `total` companies.
async fn time_run(listing: impl Future<Output = usize>, total: usize) -> Duration {
    let started = Instant::now();
    assert_eq!(listing.await, total);
    started.elapsed()
}

async fn overhead() {
    let server = ReferenceServer::builder().companies(20_000).start().await;
    let baseline = Baseline::new(&server).await;
    for (name, prefetch) in [("overhead", false), ("overhead_prefetch", true)] {
        let client = client_builder(&server).prefetch(prefetch).build().expect("a valid client");
        let pairs = time_listings(&client, &baseline, 20_000, async |_| {}).await;
        report(name, &pairs, if prefetch { "<= 1.00" } else { "<= 1.02, prefetch off" });
    }
}

/// The server takes 5 ms per page and the consumer 5 ms per page: prefetch overlaps the two,
/// a sequential loop cannot.
async fn overlap() {
    const PAGE_TIME: Duration = Duration::from_millis(5);
    let server = ReferenceServer::builder()
        .companies(4_000)
        .faults(Faults::new().on_every(Endpoint::Companies, 1, Fault::Slow(PAGE_TIME)))
        .start()
        .await;
    let baseline = Baseline::new(&server).await;
    let client = client_for(&server);
    let consume = async |_: &[Company]| tokio::time::sleep(PAGE_TIME).await;
    let pairs = time_listings(&client, &baseline, 4_000, consume).await;
    report("overlap", &pairs, "<= 0.60");
}

async fn token_contention() {
    let server = ReferenceServer::builder().companies(100).start().await;
    let client = client_for(&server);
    let started = Instant::now();
    let calls = (0..1_000).map(|_| {
        let client = client.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            client.companies().limit(1).send().await.expect("a page");
            started.elapsed()
        })
    });
    let mut latencies: Vec<Duration> =
        futures::future::join_all(calls).await.into_iter().map(|r| r.expect("task ran")).collect();
    let total = started.elapsed();
    latencies.sort();
    let p = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize];
    println!(
        "token_contention  1000 concurrent calls on a cold client: {} token request(s), p50 {:.1} ms, p99 {:.1} ms, all done in {:.1} ms (target 1 token request)",
        server.token_requests(),
        ms(p(0.50)),
        ms(p(0.99)),
        ms(total)
    );
}

fn decode() {
    let body = support::page_body();
    // Decoding alone: unknown fields are kept in each record's `extra`.
    let sdk_decode: fn(&[u8]) = |body| {
        std::hint::black_box(Page::<Company>::from_json(body).expect("a page"));
    };
    let base_decode: fn(&[u8]) = |body| {
        std::hint::black_box(serde_json::from_slice::<support::PlainPage>(body).expect("a page"));
    };
    compare_decoders(&body, "decode", sdk_decode, base_decode, "target >= 0.90");
    // Decoding and then reading one unknown field of every record, which builds each `extra`.
    let sdk_read: fn(&[u8]) = |body| {
        let page = Page::<Company>::from_json(body).expect("a page");
        std::hint::black_box(page.data.iter().filter(|c| c.extra.get("industry").is_some()).count());
    };
    let base_read: fn(&[u8]) = |body| {
        let page = serde_json::from_slice::<support::PlainPage>(body).expect("a page");
        std::hint::black_box(page.data.iter().filter(|c| !c.industry.is_empty()).count());
    };
    compare_decoders(&body, "decode_read_extra", sdk_read, base_read, "no target");
}

/// Times `sdk` and `base` on `body` in alternating pairs and prints the throughput ratio.
fn compare_decoders(body: &[u8], name: &str, sdk: fn(&[u8]), base: fn(&[u8]), target: &str) {
    let rounds = 300;
    let time = |decode: fn(&[u8])| {
        let started = Instant::now();
        for _ in 0..rounds {
            decode(std::hint::black_box(body));
        }
        started.elapsed()
    };
    // One warm-up of each (heap, caches), then alternate.
    time(sdk);
    time(base);
    let mut pairs = Pairs::default();
    for _ in 0..SAMPLES {
        pairs.push(time(sdk), time(base));
    }
    let (sdk, base) = (median(&pairs.sdk), median(&pairs.base));
    let mib = (body.len() * rounds) as f64 / (1024.0 * 1024.0);
    println!(
        "{name:<17} {:>6.1} MiB/s {:>6.1} MiB/s {:>6.2}   (throughput ratio sdk/baseline, {target})",
        mib / sdk.as_secs_f64(),
        mib / base.as_secs_f64(),
        1.0 / pairs.ratio()
    );
}

async fn memory() {
    let server = ReferenceServer::builder().companies(200_000).contacts_per_company(0).start().await;
    let exe = std::env::current_exe().expect("the bench binary");
    let child = |items: u64| {
        let output = std::process::Command::new(&exe)
            .args([
                "--memory-child",
                &server.base_url(),
                &server.auth_url(),
                server.client_id(),
                server.client_secret(),
            ])
            .arg(items.to_string())
            .output()
            .expect("the child ran");
        let text = String::from_utf8_lossy(&output.stdout);
        text.trim().parse::<u64>().unwrap_or_else(|_| panic!("child output: {text:?}"))
    };
    let small = tokio::task::block_in_place(|| child(2_000));
    let large = tokio::task::block_in_place(|| child(200_000));
    println!(
        "memory            {:>6.1} MiB  {:>6.1} MiB  {:>6.2}   (peak RSS streaming 200,000 vs 2,000 items, target <= 1.5)",
        large as f64 / 1024.0,
        small as f64 / 1024.0,
        large as f64 / small as f64
    );
}

/// Streams `items` companies and prints the process's peak resident set in KiB.
fn memory_child(args: &[String]) {
    let [base, auth, id, secret, items, ..] = args else {
        panic!("usage: --memory-child BASE AUTH ID SECRET ITEMS")
    };
    let items: u64 = items.parse().expect("an item count");
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime");
    runtime.block_on(async {
        let client = Client::builder()
            .base_url(base.as_str())
            .auth(Auth::client_credentials(auth.as_str(), id.as_str(), secret.as_str()))
            .build()
            .expect("a valid client");
        let mut stream = client.companies().max_items(items).stream();
        let mut count = 0;
        while let Some(company) = stream.try_next().await.expect("an item") {
            std::hint::black_box(company);
            count += 1;
        }
        assert_eq!(count, items);
    });
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let peak = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0);
    println!("{peak}");
}
