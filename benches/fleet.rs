//! Many processes, one sign-in: token requests of a fleet with and without the Redis cache.
//!
//! ```text
//! cargo bench --bench fleet --features redis
//! ```
//!
//! The parent runs the reference server and a `redis-server` of its own, and starts copies of
//! this binary as the fleet's processes:
//!
//! 1. 50 processes start cold at once, each builds a client-credentials client and lists one
//!    page; the server counts token requests, with the shared cache and without.
//! 2. 8 processes hold one user, whose refresh tokens rotate with reuse detection. 200 times,
//!    every access token is revoked and each process sends a request at the same moment, so each
//!    must renew. A round where a process is told to sign in again is a lost sign-in (the user
//!    is then signed in again for the next round); with the shared user store, without its
//!    refresh lock.

mod child;

use std::io::BufRead;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use business_records::auth::{
    AuthorizationCodeFlow, LoopbackRedirect, RedisTokenCache, RedisUserStore, TokenSet, TokenStore,
    TokenStoreError,
};
use business_records::{Auth, Client};
use business_records_reference_server::{RedisServer, ReferenceServer};
use child::Process;
use futures::future::BoxFuture;

const COLD_PROCESSES: usize = 50;
const USER_PROCESSES: usize = 8;
const ROUNDS: usize = 200;
const USER_SECRET: &str = "the fleet's user secret, 32 bytes or more";
/// What the parent tells a child process, in the environment.
const ROLE: &str = "FLEET_BENCH_ROLE";

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime");
    match std::env::var(ROLE).as_deref() {
        Ok("cold") => runtime.block_on(cold_child()),
        Ok("user") => runtime.block_on(user_child()),
        _ => runtime.block_on(parent()),
    }
}

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_default()
}

async fn parent() {
    let redis = RedisServer::start().expect("redis-server (Debian package redis-server) is needed");
    let server = ReferenceServer::builder().companies(5).refresh_token_rotation(true).start().await;
    let env = |role: &str, prefix: &str, shared: bool| {
        let mut command = Command::new(std::env::current_exe().expect("this binary"));
        command
            .env(ROLE, role)
            .env("FLEET_BASE_URL", server.base_url())
            .env("FLEET_AUTH_URL", server.auth_url())
            .env("FLEET_CLIENT_ID", server.client_id())
            .env("FLEET_CLIENT_SECRET", server.client_secret())
            .env("FLEET_PUBLIC_CLIENT_ID", server.public_client_id())
            .env("FLEET_REDIS_URL", redis.url())
            .env("FLEET_PREFIX", prefix)
            .env("FLEET_SHARED", if shared { "1" } else { "0" });
        command
    };

    for (shared, label) in [(true, "with the shared cache"), (false, "without")] {
        server.reset_counters();
        let started = Instant::now();
        let children: Vec<Child> = (0..COLD_PROCESSES)
            .map(|_| env("cold", &format!("cold-{label}"), shared).spawn().expect("a child process"))
            .collect();
        for mut child in children {
            assert!(child.wait().expect("child").success(), "a cold process failed");
        }
        println!(
            "cold start, {COLD_PROCESSES} processes, {label}: {} token requests ({:.1} s)",
            server.token_requests(),
            started.elapsed().as_secs_f64()
        );
    }

    for (shared, label) in [(true, "with the shared user store"), (false, "without its refresh lock")] {
        let prefix = format!("user-{label}");
        let store = RedisTokenCache::connect(&redis.url())
            .await
            .expect("redis url")
            .key_prefix(prefix.as_str())
            .user_secret(USER_SECRET)
            .user_store("user-42");
        let mut sign_ins = 1;
        store.save(&sign_in(&server).await).await.expect("first save");
        let mut fleet: Vec<Process> =
            (0..USER_PROCESSES).map(|_| Process::spawn(env("user", &prefix, shared))).collect();
        server.reset_counters();
        let mut lost = 0;
        for _ in 0..ROUNDS {
            server.expire_tokens();
            for process in &mut fleet {
                process.ask("go");
            }
            let outcomes: Vec<String> = fleet.iter_mut().map(Process::reply).collect();
            if outcomes.iter().any(|o| o == "lost") {
                lost += 1;
                sign_ins += 1;
                store.save(&sign_in(&server).await).await.expect("save");
                for process in &mut fleet {
                    process.ask("reload");
                }
                for process in &mut fleet {
                    process.reply();
                }
            } else if let Some(other) = outcomes.iter().find(|o| *o != "ok") {
                panic!("a process failed: {other}");
            }
        }
        drop(fleet);
        println!(
            "{USER_PROCESSES} processes x {ROUNDS} renewals of one user, {label}: {lost} sign-ins lost \
             ({sign_ins} sign-ins, {} token requests)",
            server.token_requests()
        );
    }
}

/// The user signs in: the authorization request, the reference server's automatic approval,
/// the loopback redirect and the code exchange.
async fn sign_in(server: &ReferenceServer) -> TokenSet {
    let redirect = LoopbackRedirect::bind().await.expect("loopback");
    let flow = user_flow(&server.auth_url(), server.public_client_id(), redirect.redirect_uri());
    let request = flow.authorize_url();
    let browser =
        reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("http");
    let browse = async {
        let response = browser.get(request.url()).send().await.expect("authorize");
        let location = response.headers()["location"].to_str().expect("location").to_owned();
        browser.get(location).send().await.expect("redirect");
    };
    let (callback, ()) = tokio::join!(redirect.wait_for_callback_of(&request), browse);
    flow.exchange(request, &callback.expect("callback")).await.expect("code exchange")
}

fn user_flow(auth_url: &str, client_id: &str, redirect_uri: &str) -> AuthorizationCodeFlow {
    AuthorizationCodeFlow::new(auth_url, client_id, redirect_uri)
        .expect("flow")
        .scopes(["openid", "api/read"])
}

async fn cache() -> RedisTokenCache {
    RedisTokenCache::connect(&var("FLEET_REDIS_URL"))
        .await
        .expect("redis url")
        .key_prefix(var("FLEET_PREFIX"))
        .user_secret(USER_SECRET)
}

/// A process of the cold start: one client, one page.
async fn cold_child() {
    let mut auth =
        Auth::client_credentials(var("FLEET_AUTH_URL"), var("FLEET_CLIENT_ID"), var("FLEET_CLIENT_SECRET"))
            .scopes(["api/read"]);
    if var("FLEET_SHARED") == "1" {
        auth = auth.shared_cache(cache().await);
    }
    let client = Client::builder().base_url(var("FLEET_BASE_URL")).auth(auth).build().expect("client");
    client.companies().limit(1).send().await.expect("a page");
}

/// The shared store minus its refresh lock.
struct NoFleetLock(RedisUserStore);

impl TokenStore for NoFleetLock {
    fn load(&self) -> BoxFuture<'_, Result<Option<TokenSet>, TokenStoreError>> {
        self.0.load()
    }

    fn save<'a>(&'a self, tokens: &'a TokenSet) -> BoxFuture<'a, Result<(), TokenStoreError>> {
        self.0.save(tokens)
    }
}

/// A process holding the user: `go` sends one request, `reload` takes the stored set again.
async fn user_child() {
    let store = cache().await.user_store("user-42");
    let flow =
        user_flow(&var("FLEET_AUTH_URL"), &var("FLEET_PUBLIC_CLIENT_ID"), "http://127.0.0.1:1/callback");
    let client = |tokens: TokenSet| {
        let auth = if var("FLEET_SHARED") == "1" {
            Auth::user(flow.clone(), tokens).store(store.clone())
        } else {
            Auth::user(flow.clone(), tokens).store(NoFleetLock(store.clone()))
        };
        Client::builder().base_url(var("FLEET_BASE_URL")).auth(auth).timeout(Duration::from_secs(20)).build()
    };
    let load = || async { store.load().await.ok().flatten().expect("a stored set") };
    let mut current = client(load().await).expect("client");
    println!("ready");
    let mut lines = std::io::stdin().lock().lines();
    while let Some(Ok(line)) = lines.next() {
        let reply = match line.as_str() {
            "go" => match current.companies().limit(1).send().await {
                Ok(_) => "ok".to_owned(),
                Err(err) if err.needs_reauthentication() => "lost".to_owned(),
                Err(err) => format!("error: {err}"),
            },
            "reload" => {
                current = client(load().await).expect("client");
                "reloaded".to_owned()
            }
            _ => "unknown".to_owned(),
        };
        println!("{reply}");
    }
}
