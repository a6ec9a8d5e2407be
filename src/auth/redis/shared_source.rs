//! Client-credentials tokens shared by every process with the same authorization server,
//! client id and scopes: one process fetches, the others read.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::connection::Redis;
use super::lock::{self, Attempt};
use crate::Error;
use crate::auth::AccessToken;
use crate::auth::refresh_turn::pause_before_next_look;
use crate::auth::seal::Sealer;
use crate::auth::token_manager::{IssuedToken, TokenSource, refresh_buffer};
use crate::bounds::later;
use crate::wire::HttpSender;

/// The longest a process waits for another to publish a token before it fetches its own.
const MAX_WAIT: Duration = Duration::from_secs(10);

/// The shared entry, sealed before it is stored.
#[derive(Serialize, Deserialize)]
struct Entry {
    access_token: AccessToken,
    /// Unix milliseconds; `None` when the server gave no lifetime.
    expires_at: Option<i64>,
    /// Unix milliseconds after which the fleet fetches a new token.
    refresh_at: Option<i64>,
    scopes: Vec<String>,
}

impl Entry {
    fn is_fresh(&self, now: i64) -> bool {
        self.refresh_at.is_none_or(|at| now < at)
    }

    fn is_unexpired(&self, now: i64) -> bool {
        self.expires_at.is_none_or(|at| now < at)
    }

    fn remaining(&self, now: i64) -> Option<Duration> {
        self.expires_at.map(|at| Duration::from_millis(u64::try_from(at - now).unwrap_or(0)))
    }
}

/// A token source that looks in Redis before it asks the authorization server.
pub(crate) struct SharedTokenSource<S> {
    pub(crate) inner: S,
    pub(crate) redis: Arc<Redis>,
    pub(crate) sealer: Sealer,
    pub(crate) key: String,
    pub(crate) lock_key: String,
    pub(crate) lock_ttl: Duration,
    /// The token last handed out from (or published to) Redis, with the exact sealed value.
    pub(crate) served: Mutex<Option<(AccessToken, Vec<u8>)>>,
    /// The sealed value of a token the API rejected, to remove from Redis before the next look.
    pub(crate) rejected: Mutex<Option<Vec<u8>>>,
}

impl<S: fmt::Debug> fmt::Debug for SharedTokenSource<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedTokenSource")
            .field("inner", &self.inner)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

fn now_millis() -> i64 {
    Utc::now().timestamp_millis()
}

impl<S: TokenSource> TokenSource for SharedTokenSource<S> {
    fn fetch<'a>(&'a self, sender: &'a HttpSender) -> BoxFuture<'a, Result<IssuedToken, Error>> {
        Box::pin(async move {
            let rejected = self.rejected.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(sealed) = rejected {
                // Only if it still holds that token: another process may have replaced it.
                self.redis.compare_and_delete(&self.key, &sealed).await;
            }
            match self.shared(sender).await {
                Some(result) => result,
                // Redis is unavailable, or the lock holder takes too long: fetch for this process.
                None => self.inner.fetch(sender).await,
            }
        })
    }

    fn after_fetch<'a>(&'a self, sender: &'a HttpSender) -> BoxFuture<'a, ()> {
        self.inner.after_fetch(sender)
    }

    fn rejected(&self, token: &AccessToken) {
        let served = self.served.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((served_token, sealed)) = served.as_ref()
            && served_token == token
        {
            *self.rejected.lock().unwrap_or_else(|e| e.into_inner()) = Some(sealed.clone());
        }
    }
}

impl<S: TokenSource> SharedTokenSource<S> {
    /// The shared path; `None` sends the caller to its own.
    async fn shared(&self, sender: &HttpSender) -> Option<Result<IssuedToken, Error>> {
        // A dead holder's lock expires after `lock_ttl`: wait a little longer than that, but no
        // longer than `MAX_WAIT`, after which fetching alone costs less than waiting.
        let deadline =
            later(Instant::now(), self.lock_ttl.saturating_add(Duration::from_secs(1)).min(MAX_WAIT));
        loop {
            let (entry, sealed) = self.read().await?.unzip();
            if let (Some(entry), Some(sealed)) = (&entry, &sealed)
                && entry.is_fresh(now_millis())
            {
                return Some(Ok(self.serve(entry, sealed)));
            }
            match lock::try_lock(&self.redis, &self.lock_key, self.lock_ttl).await? {
                Attempt::Held(guard) => {
                    let result = self.fetch_and_publish(sender).await;
                    guard.release().await;
                    return result;
                }
                Attempt::Busy => {
                    // Another process is fetching; a token that still works is good meanwhile.
                    if let (Some(entry), Some(sealed)) = (&entry, &sealed)
                        && entry.is_unexpired(now_millis())
                    {
                        return Some(Ok(self.serve(entry, sealed)));
                    }
                    if Instant::now() >= deadline {
                        self.redis
                            .warn("lock", "the process fetching the shared token did not publish it in time");
                        return None;
                    }
                    pause_before_next_look().await;
                }
            }
        }
    }

    /// Under the lock: look once more (the previous holder may just have published), else fetch
    /// and publish.
    async fn fetch_and_publish(&self, sender: &HttpSender) -> Option<Result<IssuedToken, Error>> {
        if let Some((entry, sealed)) = self.read().await?
            && entry.is_fresh(now_millis())
        {
            return Some(Ok(self.serve(&entry, &sealed)));
        }
        let sent_at = now_millis();
        let issued = match self.inner.fetch(sender).await {
            Ok(issued) => issued,
            Err(err) => return Some(Err(err)),
        };
        let lifetime_ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        let entry = Entry {
            access_token: issued.access_token.clone(),
            expires_at: issued.expires_in.map(|lifetime| sent_at.saturating_add(lifetime_ms(lifetime))),
            refresh_at: issued.expires_in.map(|lifetime| {
                sent_at.saturating_add(lifetime_ms(lifetime.saturating_sub(refresh_buffer(lifetime))))
            }),
            scopes: issued.scopes.clone(),
        };
        self.publish(&entry).await;
        Some(Ok(issued))
    }

    /// Stores `entry` until it expires. A failure leaves the token to this process alone.
    async fn publish(&self, entry: &Entry) {
        let ttl = match entry.remaining(now_millis()) {
            Some(remaining) if remaining.is_zero() => return,
            other => other,
        };
        let Some(sealed) = serde_json::to_vec(entry).ok().and_then(|json| self.sealer.seal(&self.key, &json))
        else {
            return;
        };
        if self.redis.set(&self.key, &sealed, ttl).await.is_some() {
            tracing::debug!("access token published to the shared cache");
            *self.served.lock().unwrap_or_else(|e| e.into_inner()) =
                Some((entry.access_token.clone(), sealed));
        }
    }

    /// The shared entry and its sealed form: `Some(None)` when there is none or it cannot be
    /// opened (sealed under another secret, or damaged: it is replaced at the next fetch).
    async fn read(&self) -> Option<Option<(Entry, Vec<u8>)>> {
        let sealed = self.redis.get(&self.key).await?;
        Some(sealed.and_then(|sealed| {
            let json = self.sealer.open(&self.key, &sealed)?;
            let entry = serde_json::from_slice::<Entry>(&json).ok()?;
            Some((entry, sealed))
        }))
    }

    fn serve(&self, entry: &Entry, sealed: &[u8]) -> IssuedToken {
        *self.served.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((entry.access_token.clone(), sealed.to_vec()));
        IssuedToken {
            access_token: entry.access_token.clone(),
            expires_in: entry.remaining(now_millis()),
            scopes: entry.scopes.clone(),
        }
    }
}
