//! Token state shared by many processes over Redis (or Valkey): one client-credentials token
//! for the fleet, and users' token sets refreshed once across all processes; and the fleet's
//! request budget (`RateLimit::shared`), which uses the same connection.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::seal::{Sealer, random_bytes};
use super::store::{LOCK_WAIT, StoreFuture, shared_turn, wait_for_lock};
use super::{ClientSecret, KeyedTokenStore, RefreshLock, RefreshTurn, TokenSet, TokenStore, TokenStoreError};
use crate::Error;
use crate::fleet::{Redis, Store};

/// Default time Redis has to answer before a process goes its own way.
const DEFAULT_TIMEOUT: Duration = Duration::from_millis(500);
/// Default lifetime of a lock, after which a dead holder's lock is gone.
const DEFAULT_LOCK_TTL: Duration = Duration::from_secs(30);
const DEFAULT_PREFIX: &str = "business-records";
/// The key that seals a store's entry (and names it), or why there is none.
type Sealing = Result<Arc<Sealer>, TokenStoreError>;
/// Why a stored value cannot be read.
const UNREADABLE: &str = "the stored tokens cannot be opened with this user secret";

/// While `KEYS[1]` holds `ARGV[1]` (a lock holder's random id): renews it for `ARGV[2]`
/// milliseconds, or deletes it without one.
const LEASE: &str = r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return redis.call('DEL', KEYS[1])
";

/// Stores `ARGV[2]` under `KEYS[1]` as `<generation>:<value>`, the generation one above the
/// stored one, unless the stored generation is above `ARGV[1]` (the one the writer last saw;
/// 0 when it saw none). Returns the new generation, or -1 when a newer value is stored.
const SAVE_UNLESS_NEWER: &str = r"
local stored = tonumber(string.match(redis.call('GET', KEYS[1]) or '', '^(%d+):')) or 0
if tonumber(ARGV[1]) > 0 and stored > tonumber(ARGV[1]) then return -1 end
redis.call('SET', KEYS[1], (stored + 1) .. ':' .. ARGV[2])
return stored + 1
";

/// Tokens shared by every process that connects to the same Redis (feature `redis`).
///
/// - [`ClientCredentials::shared_cache`](super::ClientCredentials::shared_cache): every process
///   with the same authorization server, client id and scopes uses one token. A process that
///   finds none takes a short lock (`SET NX PX`), fetches and publishes; the others wait for it
///   and read it. The token is refreshed ahead of expiry once for the fleet, and one the API
///   rejects (`401 invalid_token`) is removed only if Redis still holds that very token.
/// - [`user_store`](Self::user_store): a [`TokenStore`](super::TokenStore) for one user whose
///   refresh is locked across processes, so a rotating refresh token is presented once.
///
/// Values are sealed (AES-256-GCM, key derived with HKDF-SHA256 from the client secret, or from
/// the [`user_secret`](Self::user_secret) for user stores) and bound to their key; key names are
/// hashes and hold no identifier or secret in clear. When Redis is unreachable, slow (see
/// [`connect_with_timeout`](Self::connect_with_timeout)) or loses its data, each process fetches its own tokens as it would
/// without the cache, with a warning at most every 30 seconds, and shares again once Redis
/// answers. A lock is a lease its holder renews while it works and that expires
/// [`lock_ttl`](Self::lock_ttl) after a holder that dies.
///
/// Expiry times are stored as wall-clock times, so the processes' clocks should agree to within
/// a few seconds (NTP does). Clones share the connection, which reconnects by itself.
///
/// ```no_run
/// # async fn run() -> Result<(), business_records::Error> {
/// use business_records::auth::RedisTokenCache;
/// use business_records::{Auth, Client};
///
/// let shared = RedisTokenCache::connect("redis://127.0.0.1:6379").await?;
/// let client = Client::builder()
///     .base_url("https://api.example.com")
///     .auth(Auth::client_credentials("https://auth.example.com", "my-client-id", "my-secret")
///         .scopes(["api/read"])
///         .shared_cache(shared.clone()))
///     .build()?;
///
/// // Users: a secret every process has (from your secret manager), then one store per user.
/// let shared = shared.user_secret("a long random value shared by the fleet");
/// let store = shared.user_store("user-42");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct RedisTokenCache {
    redis: Arc<Redis>,
    prefix: Arc<str>,
    lock_ttl: Duration,
    user_sealer: Sealing,
}

const NO_USER_SECRET: &str = "the redis token cache has no user secret: set one with `user_secret`";
const REDIS_URL: &str = "expected a Redis URL such as redis://127.0.0.1:6379 (rediss:// is not supported)";

impl RedisTokenCache {
    /// Connects to the Redis at `url` (`redis://[user:password@]host[:port][/db]`, or
    /// `redis+unix:///path`).
    ///
    /// An unreachable server is not an error: the connection is retried on use, and meanwhile
    /// each process fetches its own tokens (a warning says so).
    ///
    /// `url` may be a `&str` or a `String` read from the environment:
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use business_records::auth::RedisTokenCache;
    /// let shared = RedisTokenCache::connect(std::env::var("REDIS_URL")?).await?;
    /// # let _ = shared; Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] naming `url` when it is not a Redis URL this build supports
    /// (TLS, `rediss://`, is not enabled).
    pub async fn connect(url: impl AsRef<str>) -> Result<Self, Error> {
        Self::connect_with_timeout(url, DEFAULT_TIMEOUT).await
    }

    /// [`connect`](Self::connect) with `timeout` as the time Redis has to answer a command
    /// before this process uses its own tokens (default: 500 ms).
    ///
    /// # Errors
    ///
    /// As [`connect`](Self::connect); also [`Error::InvalidArgument`] naming `timeout` when it is
    /// zero.
    pub async fn connect_with_timeout(url: impl AsRef<str>, timeout: Duration) -> Result<Self, Error> {
        if timeout.is_zero() {
            return Err(Error::invalid("timeout", "expected a timeout above zero"));
        }
        let redis =
            Arc::new(Redis::open(url.as_ref(), timeout).map_err(|_| Error::invalid("url", REDIS_URL))?);
        let user_sealer = Err(TokenStoreError::new(NO_USER_SECRET));
        let cache = Self { redis, prefix: DEFAULT_PREFIX.into(), lock_ttl: DEFAULT_LOCK_TTL, user_sealer };
        cache.ping().await;
        Ok(cache)
    }

    /// How long a lock outlives a process that dies holding it, and so how long that delays
    /// the others; a live holder renews it every third of that while it refreshes, however long
    /// the refresh takes. Default: 30 seconds. A process waiting for the lock waits as long as
    /// the holder lives (at most six minutes, then its refresh fails).
    pub fn lock_ttl(mut self, ttl: Duration) -> Self {
        self.lock_ttl = ttl.max(Duration::from_millis(1));
        self
    }

    /// The prefix of every key this cache writes, to keep applications that share a Redis
    /// apart. Default: `business-records`.
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Arc::from(prefix.into());
        self
    }

    /// The secret that seals users' token sets and keys their entries: at least 32 bytes (32
    /// random bytes, base64-encoded, is a good choice), the same in every process, as
    /// [`AuthorizationCodeFlow::sealing_secret`](super::AuthorizationCodeFlow::sealing_secret)
    /// asks. Default: none. Without one, or with a shorter one, every user store fails with a
    /// [`TokenStoreError`] naming `user_secret`.
    pub fn user_secret(mut self, secret: impl Into<String>) -> Self {
        let sealer =
            Sealer::from_secret("user_secret", Into::<String>::into(secret).as_bytes(), "user token set");
        self.user_sealer = sealer.map(Arc::new).map_err(|refused| TokenStoreError::new(refused.to_string()));
        self
    }

    /// The token store of the user the application knows as `user_key` (a user id, a session
    /// id); the key is hashed before it reaches Redis.
    pub fn user_store(&self, user_key: impl AsRef<str>) -> RedisUserStore {
        self.store(self.user_sealer.clone(), "user", &[user_key.as_ref()])
    }

    /// The store of the entry `kind` named by `parts`, sealed by `sealer`.
    fn store(&self, sealer: Sealing, kind: &str, parts: &[&str]) -> RedisUserStore {
        let key = sealer.as_ref().map_or_else(|_| String::new(), |s| s.key_name(&self.prefix, kind, parts));
        RedisUserStore { cache: self.clone(), sealer, key, seen: Arc::default() }
    }

    /// True when Redis answers a `PING` within the timeout (a health check; the cache itself
    /// never needs it).
    pub async fn ping(&self) -> bool {
        self.redis.query::<String>("ping", &redis::cmd("PING")).await.is_ok()
    }

    /// The store of the client-credentials token named by `parts` (the token endpoint, the client
    /// id, the scopes), sealed under a key derived from the client `secret`: one token for every
    /// process with the same credentials, renewed under the store's lock.
    pub(crate) fn client_credentials_store(
        &self,
        secret: &ClientSecret,
        parts: &[&str],
    ) -> Arc<dyn TokenStore> {
        let sealer = Sealer::derive(secret.secret().as_bytes(), "client credentials").map(Arc::new);
        let sealer = sealer.ok_or_else(|| TokenStoreError::new("the sealing key cannot be derived"));
        Arc::new(self.store(sealer, "client-credentials", parts))
    }
}

/// Every user's store from one object: [`user_store`](RedisTokenCache::user_store) (needs a
/// [`user_secret`](RedisTokenCache::user_secret)).
impl KeyedTokenStore for RedisTokenCache {
    fn for_user(&self, user_key: &str) -> Arc<dyn TokenStore> {
        Arc::new(self.user_store(user_key))
    }
}

/// A [`TokenStore`] in Redis for one user, shared by every process; made by
/// [`RedisTokenCache::user_store`].
///
/// Before a refresh, the client takes this store's lock (`SET NX PX`, renewed while the
/// refresh runs, released by compare-and-delete, or by expiry if the holder dies) and reads the
/// stored set: if another process refreshed meanwhile (another refresh token or expiry), the
/// client takes that set instead of presenting a refresh token the server already retired. No
/// process refreshes without the lock while its holder lives. So a rotating refresh token is
/// presented once across the fleet.
///
/// Each save carries a generation one above the stored one, and never replaces a set saved
/// after the one this store last read (a save retried after an outage loses to a newer set); a
/// store that has read nothing yet (right after a sign-in) replaces whatever is there.
///
/// The set is sealed with AES-256-GCM under a key derived from the cache's
/// [`user_secret`](RedisTokenCache::user_secret); the Redis key is a hash of the user
/// key. When Redis is unavailable, `load` and `save` fail (the client keeps a renewed set in
/// memory and saves it again in the background), and a refresh goes on without the lock (no
/// process can take it), so that requests keep working.
#[derive(Debug, Clone)]
pub struct RedisUserStore {
    cache: RedisTokenCache,
    sealer: Sealing,
    key: String,
    /// The highest generation this store has read or written.
    seen: Arc<AtomicU64>,
}

impl RedisUserStore {
    fn sealer(&self) -> Result<&Sealer, TokenStoreError> {
        self.sealer.as_deref().map_err(Clone::clone)
    }

    /// The stored generation and set; `Ok(None)` without one, `Err` when Redis failed.
    async fn read(&self) -> Result<Option<(u64, TokenSet)>, TokenStoreError> {
        let sealer = self.sealer()?;
        let get = redis::cmd("GET").arg(&self.key).clone();
        let Some(value) = self.cache.redis.query::<Option<Vec<u8>>>("read", &get).await? else {
            return Ok(None);
        };
        // `<generation>:<sealed set>`
        let stored = value.iter().take(21).position(|&b| b == b':').and_then(|colon| {
            let generation = std::str::from_utf8(&value[..colon]).ok()?.parse().ok()?;
            let json = sealer.open(&self.key, &value[colon + 1..])?;
            Some((generation, serde_json::from_slice(&json).ok()?))
        });
        let stored = stored.ok_or_else(|| TokenStoreError::new(UNREADABLE))?;
        self.seen.fetch_max(stored.0, Ordering::SeqCst);
        Ok(Some(stored))
    }

    /// Takes the refresh lock (`SET NX PX`): a lease renewed every third of the lock's lifetime
    /// while it is held, released by compare-and-delete of this holder's random id, or by
    /// expiry should the holder die; while another process holds it, waits up to [`LOCK_WAIT`]
    /// and then fails. `None` when Redis failed.
    async fn lock(&self) -> Result<Option<RefreshLock>, TokenStoreError> {
        let (redis, ttl) = (Arc::clone(&self.cache.redis), self.cache.lock_ttl);
        let Some(id) = random_bytes::<16>() else { return Ok(None) };
        let (key, millis) =
            (format!("{}:lock", self.key), u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
        let set = redis::cmd("SET").arg(&key).arg(&id).arg("NX").arg("PX").arg(millis).clone();
        let try_lock = || async {
            match redis.query::<Option<String>>("lock", &set).await {
                Ok(None) => ControlFlow::Continue(()), // held by another process
                taken_or_failed => ControlFlow::Break(taken_or_failed.is_ok()),
            }
        };
        if !wait_for_lock("the refresh lock of the stored tokens", LOCK_WAIT, try_lock).await? {
            return Ok(None);
        }
        let lease =
            |millis: Option<u64>| redis::cmd("EVAL").arg(LEASE).arg(1).arg(&key).arg(&id).arg(millis).clone();
        let (renew, release) = (lease(Some(millis)), lease(None));
        let renewal = tokio::spawn({
            let redis = Arc::clone(&redis);
            async move {
                loop {
                    tokio::time::sleep(ttl / 3).await;
                    let _ = redis.query::<i64>("renew", &renew).await;
                }
            }
        });
        Ok(Some(RefreshLock::new(async move {
            renewal.abort();
            let _ = redis.query::<i64>("unlock", &release).await;
        })))
    }
}

impl TokenStore for RedisUserStore {
    fn load(&self) -> StoreFuture<'_, Option<TokenSet>> {
        Box::pin(async move { Ok(self.read().await?.map(|(_, tokens)| tokens)) })
    }

    fn save<'a>(&'a self, tokens: &'a TokenSet) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let json = serde_json::to_vec(tokens)
                .map_err(|e| TokenStoreError::with_source("the tokens could not be encoded", e))?;
            let sealed = self.sealer()?.seal(&self.key, &json);
            let sealed = sealed.ok_or_else(|| TokenStoreError::new("the tokens could not be sealed"))?;
            // Never over a set saved after the one this store last saw (a save retried late);
            // unavailable: the client keeps the new set in memory and saves it again later.
            let (mut save, seen) = (redis::cmd("EVAL"), self.seen.load(Ordering::SeqCst));
            save.arg(SAVE_UNLESS_NEWER).arg(1).arg(&self.key).arg(seen).arg(sealed);
            let generation: i64 = self.cache.redis.query("save", &save).await?;
            if generation < 0 {
                tracing::debug!("a newer token set is stored; this one is not saved over it");
            }
            self.seen.fetch_max(u64::try_from(generation).unwrap_or(0), Ordering::SeqCst);
            Ok(())
        })
    }

    /// Deletes the user's set from Redis (sign-out).
    fn clear(&self) -> StoreFuture<'_, ()> {
        let delete = redis::cmd("DEL").arg(&self.key).clone();
        Box::pin(async move { self.cache.redis.query::<i64>("delete", &delete).await.map(drop) })
    }

    fn begin_refresh<'a>(&'a self, current: &'a TokenSet) -> StoreFuture<'a, RefreshTurn> {
        Box::pin(async move {
            self.sealer()?;
            let seen = self.seen.load(Ordering::SeqCst);
            // Saved by another process since this one last looked.
            let newer = |(generation, tokens): (u64, TokenSet)| {
                (generation > seen && tokens.replaces(current)).then_some(tokens)
            };
            shared_turn(self.lock(), || async { Ok(self.read().await?.and_then(newer)) }).await
        })
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
impl crate::RateLimit {
    /// One budget for every process that uses `cache`'s Redis with the same API (its versioned
    /// URL) and client id (feature `redis`): requests take their slots from one schedule in
    /// Redis, atomically and on Redis's clock, and a 429's `Retry-After` seen by one process
    /// pauses all of them and lowers the rate of each. Needs a rate
    /// ([`per_second`](Self::per_second) or [`per_minute`](Self::per_minute)); the key is a
    /// hash, as the cache's other keys are.
    ///
    /// When Redis does not answer within the cache's timeout, or is gone, each process paces
    /// itself at its share of the rate (the rate divided by [`processes`](Self::processes), or
    /// by the number of processes Redis last counted), with a warning at most every 30 seconds,
    /// asks Redis again every second, and shares again once it answers. Within a process,
    /// requests still wait in order of arrival.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), business_records::Error> {
    /// use business_records::auth::RedisTokenCache;
    /// use business_records::{Auth, Client, RateLimit};
    ///
    /// let shared = RedisTokenCache::connect("redis://127.0.0.1:6379").await?;
    /// let client = Client::builder()
    ///     .base_url("https://api.example.com")
    ///     .auth(Auth::client_credentials("https://auth.example.com", "my-client-id", "my-secret")
    ///         .shared_cache(shared.clone()))
    ///     .rate_limit(RateLimit::per_second(20).burst(5).shared(&shared).processes(8))
    ///     .build()?;
    /// # let _ = client; Ok(()) }
    /// ```
    pub fn shared(mut self, cache: &RedisTokenCache) -> Self {
        if self.rate().is_none() {
            return self
                .fail("a shared budget needs a rate: start from `RateLimit::per_second` or `per_minute`");
        }
        self.shared = Some(Store { redis: Arc::clone(&cache.redis), prefix: Arc::clone(&cache.prefix) });
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bad_settings_are_named_and_never_echo_the_url() {
        for (url, timeout, argument) in [
            ("http://user:hunter2@127.0.0.1:6379", DEFAULT_TIMEOUT, "url"),
            ("not a url", DEFAULT_TIMEOUT, "url"),
            ("redis://127.0.0.1:6379", Duration::ZERO, "timeout"),
        ] {
            match RedisTokenCache::connect_with_timeout(url, timeout).await {
                Err(Error::InvalidArgument(got)) => {
                    assert_eq!(got.argument(), argument);
                    assert!(!got.message().contains("hunter2"), "{}", got.message());
                }
                other => panic!("expected an error naming {argument}, got {other:?}"),
            }
        }
    }

    #[tokio::test]
    async fn a_user_secret_under_32_bytes_fails_every_user_store_naming_it() {
        use crate::auth::TokenStore as _;
        let cache = RedisTokenCache::connect_with_timeout("redis://127.0.0.1:1", Duration::from_millis(100))
            .await
            .expect("connect does not fail on an unreachable server");
        for short in ["", "x", "thirty-one bytes, one too few.."] {
            let err = cache.clone().user_secret(short).user_store("user-42").load().await.expect_err("short");
            let message = err.to_string();
            assert!(
                message.starts_with("invalid argument `user_secret`: expected at least 32 bytes"),
                "{err}"
            );
            assert!(message.ends_with(&format!("got {}", short.len())), "{err}");
        }
        assert!(format!("{:?}", cache.clone().user_secret("x")).contains("user_sealer: Err("));
        let valid = format!("{:?}", cache.user_secret("a user secret of 32 bytes or more"));
        assert!(valid.contains("user_sealer: Ok(Sealer([redacted]))"), "{valid}");
    }

    #[tokio::test]
    async fn an_unreachable_redis_is_not_an_error_and_debug_shows_no_secret() {
        // Port 1 on loopback: nothing listens there.
        let cache =
            RedisTokenCache::connect_with_timeout("redis://:hunter2@127.0.0.1:1", Duration::from_millis(100))
                .await
                .expect("connect does not fail on an unreachable server")
                .user_secret("user secret value of 32 bytes or more");
        assert!(!cache.ping().await);
        let debug = format!("{cache:?} {:?}", cache.user_store("user-42"));
        for secret in ["hunter2", "user secret value", "user-42"] {
            assert!(!debug.contains(secret), "{debug}");
        }
    }
}
