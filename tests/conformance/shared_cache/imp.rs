use std::process::Command;
use std::time::Duration;

use business_records::auth::{RedisTokenCache, TokenStore};
use business_records::{Auth, Client};
use business_records_reference_server::{RedisServer, ReferenceServer, ReferenceServerBuilder};
use futures::future::join_all;

use crate::secrets::capture_traces;

/// A `redis-server` of the case's own (the runner ignores these cases where there is none).
pub fn redis() -> RedisServer {
    RedisServer::start().unwrap_or_else(|reason| panic!("{reason}"))
}

/// A reference server and a Redis.
pub async fn servers(builder: ReferenceServerBuilder) -> (ReferenceServer, RedisServer) {
    (builder.start().await, redis())
}

pub async fn connect(redis: &RedisServer) -> RedisTokenCache {
    RedisTokenCache::connect(&redis.url()).await.expect("a redis URL")
}

/// A client as one process of the fleet would build it, with its own connection to Redis.
async fn process(server: &ReferenceServer, redis: &RedisServer, scopes: &[&str]) -> Client {
    let cache = connect(redis).await;
    client_with(server, cache, scopes)
}

fn client_with(server: &ReferenceServer, cache: RedisTokenCache, scopes: &[&str]) -> Client {
    Client::builder()
        .base_url(server.base_url())
        .auth(
            Auth::client_credentials(server.auth_url(), server.client_id(), server.client_secret())
                .scopes(scopes.iter().copied())
                .shared_cache(cache),
        )
        .timeout(Duration::from_secs(20))
        .build()
        .expect("client")
}

/// One page from each client at the same time; every one must succeed.
async fn list_all(clients: &[Client]) {
    let pages = join_all(clients.iter().map(|c| c.companies().limit(1).send())).await;
    for page in pages {
        page.expect("a page");
    }
}

/// Pings until Redis answers, a hundred times at most.
async fn answers(cache: &RedisTokenCache) -> bool {
    for _ in 0..100 {
        if cache.ping().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// `redis-cli` against `redis`, for looking at what is stored.
pub fn redis_cli(redis: &RedisServer, args: &[&str]) -> Vec<u8> {
    let port = redis.url().rsplit(':').next().unwrap_or_default().to_owned();
    let output = Command::new("redis-cli").args(["-p", &port]).args(args).output().expect("redis-cli");
    output.stdout
}

pub async fn a_fleet_makes_one_token_request_per_credentials_and_scopes() {
    let (server, redis) = servers(ReferenceServer::builder().companies(3)).await;
    let fleet = join_all((0..8).map(|_| process(&server, &redis, &["api/read"]))).await;
    list_all(&fleet).await;
    assert_eq!(server.token_requests(), 1, "eight clients, one token request");

    // The same scopes in another order are the same token; other scopes are another.
    let same = process(&server, &redis, &["api/read", "api/read"]).await;
    list_all(&[same]).await;
    assert_eq!(server.token_requests(), 1);
    let other = join_all((0..3).map(|_| process(&server, &redis, &["api/read", "api/write"]))).await;
    list_all(&other).await;
    assert_eq!(server.token_requests(), 2, "another scope set, one more token for all of its clients");
}

pub async fn the_fleet_renews_an_expiring_token_once() {
    let (server, redis) =
        servers(ReferenceServer::builder().companies(3).token_lifetime(Duration::from_secs(1))).await;
    let fleet = join_all((0..5).map(|_| process(&server, &redis, &["api/read"]))).await;
    list_all(&fleet).await;
    assert_eq!(server.token_requests(), 1);
    // Past the token's lifetime: every client needs a new one, the fleet asks once.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    list_all(&fleet).await;
    assert_eq!(server.token_requests(), 2, "one renewal for five clients");
}

pub async fn a_rejected_token_is_removed_only_while_redis_still_holds_it() {
    let (server, redis) = servers(ReferenceServer::builder().companies(3)).await;
    let first = process(&server, &redis, &["api/read"]).await;
    let second = process(&server, &redis, &["api/read"]).await;
    list_all(&[first.clone(), second.clone()]).await;
    assert_eq!(server.token_requests(), 1);

    server.expire_tokens();
    // The first client's 401 removes the shared token and publishes a new one...
    list_all(std::slice::from_ref(&first)).await;
    assert_eq!(server.token_requests(), 2);
    // ...and the second's 401, for the same old token, finds the new one instead of deleting it.
    list_all(std::slice::from_ref(&second)).await;
    assert_eq!(server.token_requests(), 2, "one revoked token does not loop the fleet");
}

pub async fn what_redis_holds_is_sealed_and_named_by_hashes() {
    let (server, redis) = servers(ReferenceServer::builder().companies(3)).await;
    let client = process(&server, &redis, &["api/read"]).await;
    list_all(std::slice::from_ref(&client)).await;

    let keys = String::from_utf8(redis_cli(&redis, &["--scan"])).expect("utf-8 key names");
    let keys: Vec<&str> = keys.lines().filter(|k| !k.is_empty()).collect();
    assert_eq!(keys.len(), 1, "one entry, its lock released: {keys:?}");
    let key = keys[0];
    assert!(key.starts_with("business-records:client-credentials:"), "{key}");
    for identifier in [server.client_id(), server.client_secret(), "api/read", "127.0.0.1"] {
        assert!(!key.contains(identifier), "the key name holds {identifier}");
    }
    let value = redis_cli(&redis, &["--no-raw", "GET", key]);
    assert!(value.len() > 100, "a sealed token is stored");
    let text = String::from_utf8_lossy(&value);
    for clear in ["eyJ", "access_token", server.client_secret()] {
        assert!(!text.contains(clear), "the stored value shows {clear}");
    }
    assert!(!format!("{client:?}").contains("eyJ"));
}

pub async fn without_redis_each_process_goes_its_own_way_and_shares_again_when_it_is_back() {
    let (server, mut redis) = servers(ReferenceServer::builder().companies(3)).await;
    let cache = connect(&redis).await;
    let before = client_with(&server, cache.clone(), &["api/read"]);
    list_all(std::slice::from_ref(&before)).await;
    assert_eq!(server.token_requests(), 1);

    redis.stop();
    // Redis is gone: new processes fetch their own tokens and their requests still succeed.
    let during: Vec<Client> = (0..2).map(|_| client_with(&server, cache.clone(), &["api/read"])).collect();
    for client in &during {
        list_all(std::slice::from_ref(client)).await;
    }
    assert_eq!(server.token_requests(), 3, "one token per process while redis is down");
    list_all(std::slice::from_ref(&before)).await;

    redis.restart().expect("redis-server restarts");
    assert!(answers(&cache).await, "the cache reconnects to the restarted redis");
    // Back (and empty, unless a process's retried save has already shared its token): the next
    // processes share one token again.
    let after: Vec<Client> = (0..4).map(|_| client_with(&server, cache.clone(), &["api/read"])).collect();
    list_all(&after).await;
    assert!(server.token_requests() <= 4, "four new processes, one token request at most");
}

pub async fn a_redis_that_hangs_costs_a_timeout_not_a_failure() {
    let (server, redis) = servers(ReferenceServer::builder().companies(3)).await;
    let cache = RedisTokenCache::connect_with_timeout(&redis.url(), Duration::from_millis(200))
        .await
        .expect("a redis URL");
    list_all(&[client_with(&server, cache.clone(), &["api/read"])]).await;
    assert_eq!(server.token_requests(), 1);

    redis.pause();
    // Nothing answers: each new process waits out the timeout, then fetches its own token.
    for _ in 0..2 {
        list_all(&[client_with(&server, cache.clone(), &["api/read"])]).await;
    }
    assert_eq!(server.token_requests(), 3);

    redis.resume();
    assert!(answers(&cache).await, "redis answers again");
    // The shared token is still there (nothing was lost): new processes use it.
    list_all(&[
        client_with(&server, cache.clone(), &["api/read"]),
        client_with(&server, cache, &["api/read"]),
    ])
    .await;
    assert_eq!(server.token_requests(), 3, "back on the shared token");
}

pub async fn no_token_reaches_the_logs_and_an_outage_warns_once() {
    let (server, mut redis) =
        servers(ReferenceServer::builder().companies(3).refresh_token_rotation(true)).await;
    // This test's runtime has one thread: the connection's tasks log through the capture.
    let (captured, _guard) = capture_traces();

    let cache = connect(&redis).await.user_secret("the user secret, 32 bytes or more");
    list_all(&[client_with(&server, cache.clone(), &["api/read"])]).await;
    let (flow, tokens) = crate::auth_user::sign_in(&server).await;
    let store = cache.user_store("user-42");
    store.save(&tokens).await.expect("save");
    let user = Client::builder()
        .base_url(server.base_url())
        .auth(Auth::user(flow, tokens.clone()).store(store.clone()))
        .build()
        .expect("client");
    server.expire_tokens();
    user.companies().limit(1).send().await.expect("renewed through the shared store");
    let renewed = store.load().await.expect("load").expect("the renewed set");
    tracing::debug!(cache = ?cache, store = ?store, "shared state");

    redis.stop();
    for _ in 0..3 {
        list_all(&[client_with(&server, cache.clone(), &["api/read"])]).await;
    }

    let text = captured.text();
    let warnings = text.matches("redis token cache unavailable").count();
    assert_eq!(warnings, 1, "three fallbacks within 30 s, one warning:\n{text}");
    let mut secrets = vec![server.client_secret().to_owned(), "the user secret".to_owned()];
    for set in [&tokens, &renewed] {
        secrets.push(set.access_token.secret().to_owned());
        secrets.extend(set.refresh_token.iter().map(|t| t.secret().to_owned()));
    }
    for secret in &secrets {
        assert!(!text.contains(secret.as_str()), "a secret reached the logs:\n{text}");
    }
    assert!(!text.contains("eyJ"), "a JWT reached the logs:\n{text}");
}
