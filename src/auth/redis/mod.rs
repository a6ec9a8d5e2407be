//! Token state shared by many processes over Redis (or Valkey): one client-credentials token
//! for the fleet, and users' token sets refreshed once across all processes; and the fleet's
//! request budget (`RateLimit::shared`), which uses the same connection.

pub(crate) mod budget;
mod connection;
mod lock;
mod shared_source;
mod user_store;

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use user_store::RedisUserStore;

use self::connection::Redis;
use self::shared_source::SharedTokenSource;
use super::token_manager::TokenSource;
use super::{ClientSecret, TokenStoreError};
use crate::Error;
use crate::auth::seal::Sealer;

/// Default time Redis has to answer before a process goes its own way.
const DEFAULT_TIMEOUT: Duration = Duration::from_millis(500);
/// Default lifetime of a lock, after which a dead holder's lock is gone.
const DEFAULT_LOCK_TTL: Duration = Duration::from_secs(30);
const DEFAULT_PREFIX: &str = "business-records";

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
/// answers. Locks expire after [`lock_ttl`](Self::lock_ttl), so a holder that dies releases them.
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
#[derive(Clone)]
pub struct RedisTokenCache {
    redis: Arc<Redis>,
    prefix: Arc<str>,
    lock_ttl: Duration,
    user_sealer: Result<Arc<Sealer>, TokenStoreError>,
}

impl fmt::Debug for RedisTokenCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisTokenCache")
            .field("prefix", &self.prefix)
            .field("lock_ttl", &self.lock_ttl)
            .field("user_secret", &self.user_sealer.is_ok())
            .finish_non_exhaustive()
    }
}

const NO_USER_SECRET: &str = "the redis token cache has no user secret: set one with `user_secret`";

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
        let redis = Redis::open(url.as_ref(), timeout).map_err(|_| {
            Error::invalid(
                "url",
                "expected a Redis URL such as redis://127.0.0.1:6379 (rediss:// is not supported)",
            )
        })?;
        let cache = RedisTokenCache {
            redis: Arc::new(redis),
            prefix: Arc::from(DEFAULT_PREFIX),
            lock_ttl: DEFAULT_LOCK_TTL,
            user_sealer: Err(TokenStoreError::new(NO_USER_SECRET)),
        };
        cache.ping().await;
        Ok(cache)
    }

    /// How long a lock lives at most, and so how long a process that dies holding it delays the
    /// others; a refresh must finish within it. Default: 30 seconds. Processes waiting for a
    /// client-credentials token give up after 10 seconds at most and fetch their own.
    #[must_use]
    pub fn lock_ttl(mut self, ttl: Duration) -> Self {
        self.lock_ttl = ttl.max(Duration::from_millis(1));
        self
    }

    /// The prefix of every key this cache writes, to keep applications that share a Redis
    /// apart. Default: `business-records`.
    #[must_use]
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Arc::from(prefix.into());
        self
    }

    /// The secret that seals users' token sets and keys their entries: at least 32 bytes (32
    /// random bytes, base64-encoded, is a good choice), the same in every process, as
    /// [`AuthorizationCodeFlow::sealing_secret`](super::AuthorizationCodeFlow::sealing_secret)
    /// asks. Default: none. Without one, or with a shorter one, every user store fails with a
    /// [`TokenStoreError`] naming `user_secret`.
    #[must_use]
    pub fn user_secret(mut self, secret: impl Into<String>) -> Self {
        let secret = ClientSecret::new(secret);
        self.user_sealer = Sealer::from_secret("user_secret", secret.secret().as_bytes(), "user token set")
            .map(Arc::new)
            .map_err(|refused| TokenStoreError::new(refused.to_string()));
        self
    }

    /// The token store of the user the application knows as `user_key` (a user id, a session
    /// id); the key is hashed before it reaches Redis.
    pub fn user_store(&self, user_key: impl AsRef<str>) -> RedisUserStore {
        let key = match &self.user_sealer {
            Ok(sealer) => sealer.key_name(&self.prefix, "user", &[user_key.as_ref()]),
            Err(_) => String::new(),
        };
        RedisUserStore {
            redis: Arc::clone(&self.redis),
            sealer: self.user_sealer.clone(),
            key,
            lock_ttl: self.lock_ttl,
            seen: Arc::default(),
        }
    }

    /// True when Redis answers a `PING` within the timeout (a health check; the cache itself
    /// never needs it).
    pub async fn ping(&self) -> bool {
        self.redis.query::<String>("ping", &redis::cmd("PING")).await.is_some()
    }

    /// The client-credentials source behind this cache, for the client builder.
    pub(crate) fn client_credentials_source<S: TokenSource + 'static>(
        &self,
        identity: &[String; 3],
        secret: &ClientSecret,
        inner: S,
    ) -> Box<dyn TokenSource> {
        let Some(sealer) = Sealer::derive(secret.secret().as_bytes(), "client credentials") else {
            return Box::new(inner);
        };
        let [token_url, client_id, scopes] = identity;
        // The same scopes in any order are the same token.
        let mut scopes: Vec<&str> = scopes.split(' ').filter(|s| !s.is_empty()).collect();
        scopes.sort_unstable();
        scopes.dedup();
        let scopes = scopes.join(" ");
        let parts = [token_url.as_str(), client_id.as_str(), scopes.as_str()];
        let key = sealer.key_name(&self.prefix, "client-credentials", &parts);
        Box::new(SharedTokenSource {
            inner,
            redis: Arc::clone(&self.redis),
            sealer,
            lock_key: format!("{key}:lock"),
            key,
            lock_ttl: self.lock_ttl,
            served: Mutex::new(None),
            rejected: Mutex::new(None),
        })
    }
}

/// Every user's store from one object: [`user_store`](RedisTokenCache::user_store) (needs a
/// [`user_secret`](RedisTokenCache::user_secret)).
impl super::KeyedTokenStore for RedisTokenCache {
    fn for_user(&self, user_key: &str) -> Arc<dyn super::TokenStore> {
        Arc::new(self.user_store(user_key))
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
        assert!(!format!("{:?}", cache.user_secret("x")).contains("user_secret: true"));
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
