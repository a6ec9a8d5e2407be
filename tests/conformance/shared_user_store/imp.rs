use std::time::Duration;

use business_records::auth::{AuthorizationCodeFlow, RedisTokenCache, RedisUserStore, TokenSet, TokenStore};
use business_records::{Client, Error};
use business_records_reference_server::{RedisServer, ReferenceServer};
use futures::future::join_all;

use crate::auth_user::sign_in;
use crate::shared_cache::{connect, redis, servers};
use crate::support::{WithoutRefreshLock, stored_user_client};

const USER_SECRET: &str = "a secret every process of the fleet has";

async fn store(redis: &RedisServer) -> RedisUserStore {
    connect(redis).await.user_secret(USER_SECRET).user_store("user-42")
}

/// A process of the fleet: its own connection, the user's set loaded from the store.
async fn process(server: &ReferenceServer, redis: &RedisServer, flow: &AuthorizationCodeFlow) -> Client {
    let store = store(redis).await;
    stored_user_client(server, flow, store).await
}

/// Every access token revoked, then one request from each client at once: each must renew.
async fn round(server: &ReferenceServer, fleet: &[Client]) -> Vec<Result<(), Error>> {
    server.expire_tokens();
    join_all(fleet.iter().map(|c| async { c.companies().limit(1).send().await.map(drop) })).await
}

pub async fn a_rotating_refresh_token_is_presented_once_across_processes() {
    let (server, redis) = servers(ReferenceServer::builder().companies(3).refresh_token_rotation(true)).await;
    let (flow, tokens) = sign_in(&server).await;
    store(&redis).await.save(&tokens).await.expect("first save");
    let fleet = join_all((0..6).map(|_| process(&server, &redis, &flow))).await;

    for attempt in 1..=3 {
        let before = server.token_requests();
        for outcome in round(&server, &fleet).await {
            outcome.expect("no process loses the sign-in");
        }
        assert_eq!(server.token_requests() - before, 1, "round {attempt}: one refresh for six processes");
    }
    // The stored set is the newest: a process started now uses it without a refresh.
    let before = server.token_requests();
    let late = process(&server, &redis, &flow).await;
    late.companies().limit(1).send().await.expect("a page with the stored tokens");
    assert_eq!(server.token_requests(), before);
}

pub async fn a_user_signed_out_by_one_process_is_signed_out_in_every_one() {
    use business_records::auth::KeyedTokenStore;
    let (server, redis) = servers(ReferenceServer::builder().companies(3)).await;
    let (flow, tokens) = sign_in(&server).await;
    let users = connect(&redis).await.user_secret(USER_SECRET);
    users.for_user("user-7").save(&tokens).await.expect("first save");
    let first = stored_user_client(&server, &flow, users.for_user("user-7")).await;
    let other = connect(&redis).await.user_secret(USER_SECRET);
    let second = stored_user_client(&server, &flow, other.for_user("user-7")).await;
    second.companies().limit(1).send().await.expect("signed in");

    first.sign_out().await.expect("sign-out");
    assert!(other.for_user("user-7").load().await.expect("redis answers").is_none(), "deleted for all");
    // The other process's tokens were revoked at the server: it must sign in again.
    let err = second.companies().limit(1).send().await.expect_err("revoked everywhere");
    assert!(err.needs_reauthentication(), "{err:?}");
}

pub async fn without_the_fleet_lock_concurrent_refreshes_revoke_the_sign_in() {
    let (server, redis) = servers(ReferenceServer::builder().companies(3).refresh_token_rotation(true)).await;
    let (flow, tokens) = sign_in(&server).await;
    store(&redis).await.save(&tokens).await.expect("first save");
    let fleet = join_all((0..6).map(|_| async {
        stored_user_client(&server, &flow, WithoutRefreshLock(store(&redis).await)).await
    }))
    .await;
    let outcomes = round(&server, &fleet).await;
    assert!(
        outcomes.iter().any(|o| o.as_ref().is_err_and(Error::needs_reauthentication)),
        "a retired refresh token presented again revokes the sign-in: {outcomes:?}"
    );
}

pub async fn a_refresh_lock_whose_holder_died_expires() {
    let redis = redis();
    let short = |cache: RedisTokenCache| cache.lock_ttl(Duration::from_millis(300)).user_secret(USER_SECRET);
    let tokens = TokenSet::new("access").with_refresh_token("refresh");
    // The holder dies without releasing: its runtime, and the task renewing its lease, end.
    let (url, held_tokens) = (redis.url(), tokens.clone());
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().expect("a runtime");
        let held = runtime.block_on(async {
            let cache = RedisTokenCache::connect(url).await.expect("connect");
            short(cache).user_store("user-7").begin_refresh(&held_tokens).await.expect("lock")
        });
        assert!(held.is_locked());
        let _never_released = std::mem::ManuallyDrop::new(held);
        runtime.shutdown_background();
    })
    .join()
    .expect("the holder's thread");
    let alive = short(connect(&redis).await).user_store("user-7");
    let started = std::time::Instant::now();
    let next = alive.begin_refresh(&tokens).await.expect("lock");
    assert!(next.is_locked(), "the lock expired and the next process took it");
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
}

/// A live holder renews its lease: a refresh that takes five times the lock's lifetime keeps
/// the lock, and the next process waits for its release instead of refreshing around it.
pub async fn a_live_holders_lock_outlasts_its_lifetime() {
    let redis = redis();
    let short = |cache: RedisTokenCache| cache.lock_ttl(Duration::from_millis(300)).user_secret(USER_SECRET);
    let holder = short(connect(&redis).await).user_store("user-8");
    let waiter = short(connect(&redis).await).user_store("user-8");
    let tokens = TokenSet::new("access").with_refresh_token("refresh");
    let held = holder.begin_refresh(&tokens).await.expect("lock");
    assert!(held.is_locked());
    let waiting = tokio::spawn(async move {
        waiter.begin_refresh(&TokenSet::new("access").with_refresh_token("refresh")).await
    });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!waiting.is_finished(), "the lease was renewed: still held after five lifetimes");
    drop(held);
    let next = waiting.await.expect("task").expect("the lock, once released");
    assert!(next.is_locked());
}

pub async fn a_user_store_without_a_user_secret_says_so() {
    let redis = redis();
    let store = connect(&redis).await.user_store("user-42");
    let err = store.load().await.expect_err("no user secret");
    assert!(err.to_string().contains("user_secret"), "{err}");
}

pub async fn a_late_save_never_replaces_a_newer_set() {
    let redis = redis();
    let first = store(&redis).await;
    let second = store(&redis).await;
    first.save(&TokenSet::new("access-1").with_refresh_token("refresh-1")).await.expect("save");
    assert!(second.load().await.expect("load").is_some());
    // Both saw the first set; the second process renews and saves...
    second.save(&TokenSet::new("access-2").with_refresh_token("refresh-2")).await.expect("save");
    // ...then the first saves a set based on the first one (a save retried after an outage).
    first.save(&TokenSet::new("access-1b").with_refresh_token("refresh-1b")).await.expect("save");
    let stored = store(&redis).await.load().await.expect("load").expect("a set");
    assert_eq!(stored.access_token.secret(), "access-2", "the newer set stays");
    // A store that never read one (a new sign-in) replaces whatever is there.
    store(&redis).await.save(&TokenSet::new("access-3")).await.expect("save");
    let stored = store(&redis).await.load().await.expect("load").expect("a set");
    assert_eq!(stored.access_token.secret(), "access-3");
}
