//! Many signed-in users in one process: a client derived for each user from one shared client
//! (`Client::with_auth`) against a fresh `Client` built for each user, in the same run, over the
//! reference server on loopback.
//!
//! ```text
//! cargo bench --bench users                  # every scenario
//! cargo bench --bench users -- derive        # only the named scenarios
//! ```
//!
//! - `derive`: the median time to make one user's client, from a token set already loaded.
//! - `memory`: resident memory per signed-in user, client and token set together, with 10,000
//!   derived users held (1,000 fresh clients for the baseline), each in a child process of its
//!   own so that nothing else shares its heap.
//! - `connections`: TCP connections the API receives while 100 users list one page each, one
//!   after another, counted by a forwarder in front of the API.
//!
//! Every user's token set is a real one (access, refresh and ID tokens, verified claims) read
//! from JSON for each user, as a token store hands it back, so no two users share a string.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use business_records::auth::{AuthorizationCodeFlow, TokenSet};
use business_records::{Auth, Client};
use business_records_reference_server::ReferenceServer;

/// Users held by the derived side of `memory`.
const DERIVED_USERS: usize = 10_000;
/// Users held by the fresh side of `memory` (each costs a whole HTTP client).
const FRESH_USERS: usize = 1_000;
/// Clients timed on the fresh side of `derive`.
const FRESH_SAMPLES: usize = 300;
/// Users listing one after another in `connections`.
const LISTING_USERS: usize = 100;
const REDIRECT_URI: &str = "http://127.0.0.1:1/callback";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--memory-child") {
        memory_child(&args[at + 1..]);
        return;
    }
    let chosen: Vec<&str> = args.iter().skip(1).filter(|a| !a.starts_with('-')).map(String::as_str).collect();
    let run = |name: &str| chosen.is_empty() || chosen.contains(&name);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime");
    runtime.block_on(async {
        let users: Vec<String> = (0..LISTING_USERS).map(|n| format!("user-{n}")).collect();
        let server = ReferenceServer::builder().companies(200).users(users.clone()).start().await;
        let flow = AuthorizationCodeFlow::new(server.auth_url(), server.public_client_id(), REDIRECT_URI)
            .expect("flow")
            .scopes(["openid", "profile", "api/read"]);
        let json = serde_json::to_string(&sign_in(&flow, &users[0]).await).expect("a token set as JSON");
        println!("scenario          derived          fresh client     ratio (derived/fresh)");
        if run("derive") {
            derive(&server, &flow, &json);
        }
        if run("memory") {
            memory(&server, &json);
        }
        if run("connections") {
            connections(&server, &flow, &users).await;
        }
    });
}

/// The app's shared client: client credentials, the reference server's API.
fn app_client(base_url: &str, server: &ReferenceServer) -> Client {
    Client::builder()
        .base_url(base_url)
        .auth(Auth::client_credentials(server.auth_url(), server.client_id(), server.client_secret()))
        .build()
        .expect("a valid client")
}

/// A fresh client for one user, as an app without `with_auth` builds it.
fn fresh_client(base_url: &str, flow: &AuthorizationCodeFlow, tokens: TokenSet) -> Client {
    Client::builder()
        .base_url(base_url)
        .auth(Auth::user(flow.clone(), tokens))
        .build()
        .expect("a valid client")
}

/// A user's sign-in: the authorization request with `login_hint`, the reference server's
/// redirect back, the code exchange and the ID token's verification.
async fn sign_in(flow: &AuthorizationCodeFlow, user: &str) -> TokenSet {
    let request = flow.authorize_url_with([("login_hint", user)]).expect("request");
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("http");
    let response = http.get(request.url()).send().await.expect("authorization request");
    let callback = response.headers()["location"].to_str().expect("a callback").to_owned();
    flow.exchange(request, &callback).await.expect("sign-in")
}

fn token_set(json: &str) -> TokenSet {
    serde_json::from_str(json).expect("a token set")
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn derive(server: &ReferenceServer, flow: &AuthorizationCodeFlow, json: &str) {
    let app = app_client(&server.base_url(), server);
    let mut derived = Vec::with_capacity(DERIVED_USERS);
    let mut held = Vec::with_capacity(DERIVED_USERS);
    for _ in 0..DERIVED_USERS {
        let tokens = token_set(json);
        let started = Instant::now();
        let user = app.with_auth(Auth::user(flow.clone(), tokens)).expect("derived");
        derived.push(started.elapsed());
        held.push(user);
    }
    drop(held);
    let mut fresh = Vec::with_capacity(FRESH_SAMPLES);
    let mut held = Vec::with_capacity(FRESH_SAMPLES);
    for _ in 0..FRESH_SAMPLES {
        let tokens = token_set(json);
        let started = Instant::now();
        let user = fresh_client(&server.base_url(), flow, tokens);
        fresh.push(started.elapsed());
        held.push(user);
    }
    let (derived, fresh) = (median(derived), median(fresh));
    println!(
        "derive            {:>9.2} us     {:>9.2} us     {:>7.4}   (median per user; target <= 10 us derived)",
        derived.as_secs_f64() * 1e6,
        fresh.as_secs_f64() * 1e6,
        derived.as_secs_f64() / fresh.as_secs_f64()
    );
}

fn memory(server: &ReferenceServer, json: &str) {
    let path = std::env::temp_dir().join(format!("business-records-bench-users-{}.json", std::process::id()));
    std::fs::write(&path, json).expect("the token set written");
    let exe = std::env::current_exe().expect("the bench binary");
    let child = |mode: &str, users: usize| {
        let output = std::process::Command::new(&exe)
            .args(["--memory-child", mode, &users.to_string()])
            .args([&server.base_url(), &server.auth_url(), server.client_id(), server.client_secret()])
            .arg(&path)
            .output()
            .expect("the child ran");
        let text = String::from_utf8_lossy(&output.stdout);
        text.trim().parse::<f64>().unwrap_or_else(|_| panic!("child output: {text:?}"))
    };
    let derived = tokio::task::block_in_place(|| child("derived", DERIVED_USERS));
    let fresh = tokio::task::block_in_place(|| child("fresh", FRESH_USERS));
    let _ = std::fs::remove_file(&path);
    println!(
        "memory            {:>9.2} KiB    {:>9.2} KiB    {:>7.4}   (resident per user with its token set, {DERIVED_USERS} derived / {FRESH_USERS} fresh held; target <= 8 KiB derived)",
        derived / 1024.0,
        fresh / 1024.0,
        derived / fresh
    );
}

/// Holds `users` clients with their token sets and prints the resident memory they added, in
/// bytes per user.
fn memory_child(args: &[String]) {
    let [mode, users, base, auth, id, secret, path, ..] = args else {
        panic!("usage: --memory-child derived|fresh USERS BASE AUTH ID SECRET TOKENS")
    };
    let users: usize = users.parse().expect("a user count");
    let json = std::fs::read_to_string(path).expect("the token set");
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime");
    runtime.block_on(async {
        let flow = AuthorizationCodeFlow::new(auth.as_str(), "reference-app", REDIRECT_URI).expect("flow");
        let app = Client::builder()
            .base_url(base.as_str())
            .auth(Auth::client_credentials(auth.as_str(), id.as_str(), secret.as_str()))
            .build()
            .expect("a valid client");
        // One of each first, so that what is made once per process is not counted per user.
        let warm = [
            app.with_auth(Auth::user(flow.clone(), token_set(&json))),
            Ok(fresh_client(base, &flow, token_set(&json))),
        ];
        let before = resident_bytes();
        let mut held = Vec::with_capacity(users);
        for _ in 0..users {
            let tokens = token_set(&json);
            held.push(match mode.as_str() {
                "derived" => app.with_auth(Auth::user(flow.clone(), tokens)).expect("derived"),
                _ => fresh_client(base, &flow, tokens),
            });
        }
        let after = resident_bytes();
        std::hint::black_box((&held, &warm));
        println!("{}", after.saturating_sub(before) as f64 / users as f64);
    });
}

/// `VmRSS` of this process, in bytes (Linux).
fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

async fn connections(server: &ReferenceServer, flow: &AuthorizationCodeFlow, users: &[String]) {
    let mut signed_in = Vec::with_capacity(users.len());
    for user in users {
        signed_in.push(sign_in(flow, user).await);
    }
    let upstream: SocketAddr =
        server.base_url().trim_start_matches("http://").parse().expect("the API's address");
    let (proxy, accepted) = counting_forwarder(upstream).await;
    let base_url = format!("http://{proxy}");

    let app = app_client(&base_url, server);
    for tokens in &signed_in {
        let user = app.with_auth(Auth::user(flow.clone(), tokens.clone())).expect("derived");
        assert_eq!(user.companies().limit(10).send().await.expect("a page").data.len(), 10);
    }
    let derived = accepted.swap(0, Ordering::SeqCst);
    for tokens in &signed_in {
        let user = fresh_client(&base_url, flow, tokens.clone());
        assert_eq!(user.companies().limit(10).send().await.expect("a page").data.len(), 10);
    }
    let fresh = accepted.load(Ordering::SeqCst);
    println!(
        "connections       {derived:>9} conn    {fresh:>9} conn    {:>7.4}   ({LISTING_USERS} users list one page one after another; target <= 2 derived)",
        derived as f64 / fresh as f64
    );
}

/// A TCP forwarder to `upstream` that counts the connections it accepts.
async fn counting_forwarder(upstream: SocketAddr) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&accepted);
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                if let Ok(mut server) = tokio::net::TcpStream::connect(upstream).await {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                }
            });
        }
    });
    (address, accepted)
}
