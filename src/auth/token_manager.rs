//! The token cache: one valid token shared by every clone of a client, refreshed ahead of
//! expiry by a single request however many callers need it at once.

use std::sync::RwLock;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::Mutex;
use tokio::time::Instant;

use super::AccessToken;
use crate::Error;
use crate::transport::HttpSender;

/// Refresh no later than this long before expiry...
const MAX_REFRESH_BUFFER: Duration = Duration::from_secs(300);
/// ...and no later than this fraction of the lifetime before it.
const REFRESH_BUFFER_DIVISOR: u32 = 10;

/// Where tokens come from: a grant against the authorization server, or the caller.
pub(crate) trait TokenSource: Send + Sync + std::fmt::Debug {
    /// Obtains a new token. Called with the refresh lock held, so one at a time.
    fn fetch<'a>(&'a self, sender: &'a HttpSender) -> BoxFuture<'a, Result<IssuedToken, Error>>;

    /// The API refused `token` (401 `invalid_token`) and it was dropped from the cache; a source
    /// that shares tokens with other processes forgets it there too. Default: nothing.
    fn rejected(&self, token: &AccessToken) {
        let _ = token;
    }
}

/// How long before expiry a token of `lifetime` is refreshed: the smaller of five minutes and
/// a tenth of the lifetime.
pub(crate) fn refresh_buffer(lifetime: Duration) -> Duration {
    MAX_REFRESH_BUFFER.min(lifetime / REFRESH_BUFFER_DIVISOR)
}

/// A token as the authorization server issued it.
pub(crate) struct IssuedToken {
    pub(crate) access_token: AccessToken,
    /// `expires_in`: relative to when the request was sent.
    pub(crate) expires_in: Option<Duration>,
    #[allow(dead_code)]
    pub(crate) scopes: Vec<String>,
}

#[derive(Clone)]
struct CachedToken {
    token: AccessToken,
    /// After this instant the token is refreshed before use.
    refresh_at: Option<Instant>,
    /// After this instant the token is never sent.
    expires_at: Option<Instant>,
    /// False for a token the caller fixed: it is never replaced.
    renewable: bool,
}

impl CachedToken {
    fn stamp(issued: IssuedToken, sent_at: Instant) -> Self {
        let expires_at = issued.expires_in.map(|lifetime| sent_at + lifetime);
        let refresh_at =
            issued.expires_in.map(|lifetime| sent_at + lifetime.saturating_sub(refresh_buffer(lifetime)));
        CachedToken { token: issued.access_token, refresh_at, expires_at, renewable: true }
    }

    fn is_fresh(&self, now: Instant) -> bool {
        self.refresh_at.is_none_or(|at| now < at)
    }

    fn is_unexpired(&self, now: Instant) -> bool {
        self.expires_at.is_none_or(|at| now < at)
    }
}

/// Caches the current token and refreshes it with single flight.
#[derive(Debug)]
pub(crate) struct TokenManager {
    source: Box<dyn TokenSource>,
    cache: RwLock<Option<CachedToken>>,
    refresh: Mutex<()>,
}

impl std::fmt::Debug for CachedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedToken").field("expires_at", &self.expires_at).finish_non_exhaustive()
    }
}

impl TokenManager {
    pub(crate) fn new(source: Box<dyn TokenSource>) -> Self {
        TokenManager { source, cache: RwLock::new(None), refresh: Mutex::new(()) }
    }

    /// A manager that starts with a token obtained elsewhere (a sign-in, a token store), valid
    /// until `expires_at`; an expired one is replaced on first use.
    pub(crate) fn with_token(
        source: Box<dyn TokenSource>,
        token: AccessToken,
        expires_at: Option<chrono::DateTime<chrono::Utc>>,
    ) -> Self {
        let now = Instant::now();
        let expires_in = expires_at.map(|at| (at - chrono::Utc::now()).to_std().unwrap_or(Duration::ZERO));
        let cached = match expires_in {
            Some(remaining) if remaining.is_zero() => None,
            // The lifetime is unknown here: the remaining time stands in for it.
            _ => Some(CachedToken::stamp(
                IssuedToken { access_token: token, expires_in, scopes: Vec::new() },
                now,
            )),
        };
        TokenManager { source, cache: RwLock::new(cached), refresh: Mutex::new(()) }
    }

    /// A token fixed by the caller: never refreshed, never expires on our side.
    pub(crate) fn fixed(token: AccessToken) -> Self {
        let cached = CachedToken { token, refresh_at: None, expires_at: None, renewable: false };
        TokenManager {
            source: Box::new(NoRefresh),
            cache: RwLock::new(Some(cached)),
            refresh: Mutex::new(()),
        }
    }

    fn cached(&self) -> Option<CachedToken> {
        self.cache.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn store(&self, token: Option<CachedToken>) {
        *self.cache.write().unwrap_or_else(|e| e.into_inner()) = token;
    }

    /// A token that is good to send now, refreshing first when it is due.
    pub(crate) async fn token(&self, sender: &HttpSender) -> Result<AccessToken, Error> {
        if let Some(cached) = self.cached().filter(|c| c.is_fresh(Instant::now())) {
            return Ok(cached.token);
        }
        let _flight = self.refresh.lock().await;
        // Whoever held the lock before us may have refreshed already.
        let current = self.cached();
        if let Some(cached) = current.as_ref().filter(|c| c.is_fresh(Instant::now())) {
            return Ok(cached.token.clone());
        }
        let sent_at = Instant::now();
        match self.source.fetch(sender).await {
            Ok(issued) => {
                let cached = CachedToken::stamp(issued, sent_at);
                tracing::debug!(expires_in = ?cached.expires_at.map(|at| at - sent_at), "access token obtained");
                let token = cached.token.clone();
                self.store(Some(cached));
                Ok(token)
            }
            Err(err) => match current.filter(|c| c.is_unexpired(Instant::now())) {
                // A failed refresh keeps a token that still works.
                Some(still_valid) if !err.needs_reauthentication() => {
                    tracing::warn!(error = %err, "token refresh failed; using the current token until it expires");
                    Ok(still_valid.token)
                }
                _ => Err(err),
            },
        }
    }

    /// Forgets `rejected` after the API refused it, unless a newer token already replaced it.
    /// Returns true when the next call to [`token`](Self::token) will fetch a new one.
    pub(crate) fn invalidate(&self, rejected: &AccessToken) -> bool {
        let mut cache = self.cache.write().unwrap_or_else(|e| e.into_inner());
        match cache.as_ref() {
            Some(cached) if cached.token == *rejected && cached.renewable => {
                *cache = None;
                self.source.rejected(rejected);
                true
            }
            Some(cached) => cached.token != *rejected,
            None => true,
        }
    }
}

/// The source behind a static token.
#[derive(Debug)]
struct NoRefresh;

impl TokenSource for NoRefresh {
    fn fetch<'a>(&'a self, _: &'a HttpSender) -> BoxFuture<'a, Result<IssuedToken, Error>> {
        Box::pin(async {
            Err(Error::invalid("auth", "the static token was rejected and cannot be refreshed"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refresh_buffer_is_the_smaller_of_five_minutes_and_a_tenth() {
        let now = Instant::now();
        let stamp = |secs| {
            CachedToken::stamp(
                IssuedToken {
                    access_token: AccessToken::new("t"),
                    expires_in: Some(Duration::from_secs(secs)),
                    scopes: vec![],
                },
                now,
            )
        };
        let hour = stamp(3600);
        assert_eq!(hour.refresh_at, Some(now + Duration::from_secs(3300)));
        assert_eq!(hour.expires_at, Some(now + Duration::from_secs(3600)));
        let short = stamp(10);
        assert_eq!(short.refresh_at, Some(now + Duration::from_secs(9)));
    }
}
