//! A rate limit shared by every caller of a client id, as docs/api.md decides it: a token
//! bucket per client id; over it, 429 `rate_limited` with `Retry-After` in whole seconds
//! (rounded up); the IETF `RateLimit` / `RateLimit-Policy` fields on every answer as an option.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::ErrorReply;

/// The API's rate limit: a token bucket of `per_second` tokens a second and `burst` at most,
/// one for each client id, shared by every caller of that id. Set with
/// [`ReferenceServerBuilder::rate_limit`](super::ReferenceServerBuilder::rate_limit) or
/// [`ReferenceServer::set_rate_limit`](super::ReferenceServer::set_rate_limit).
///
/// ```
/// use business_records_reference_server::{ReferenceServer, TokenBucket};
/// let builder = ReferenceServer::builder().rate_limit(TokenBucket::per_second(20).burst(5).fields(true));
/// # let _ = builder;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct TokenBucket {
    per_second: u32,
    burst: u32,
    fields: bool,
}

impl TokenBucket {
    /// `requests` tokens a second (at least 1), and as many at most until
    /// [`burst`](Self::burst) says otherwise.
    pub fn per_second(requests: u32) -> Self {
        let per_second = requests.max(1);
        TokenBucket { per_second, burst: per_second, fields: false }
    }

    /// The most tokens the bucket holds, so the most requests at once after an idle time (at
    /// least 1). Default: one second's worth.
    pub fn burst(mut self, requests: u32) -> Self {
        self.burst = requests.max(1);
        self
    }

    /// Sends `RateLimit-Policy: "default";q=<per second>;w=1` and
    /// `RateLimit: "default";r=<tokens left>;t=<seconds until the bucket is full>` on every
    /// answer of the API past authentication, 429s included. Default: off (the API
    /// shows no rate-limit headers).
    pub fn fields(mut self, on: bool) -> Self {
        self.fields = on;
        self
    }
}

/// What the rate limit did since it was set or the counters were reset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RateLimitCounts {
    /// Requests that took a token.
    pub admitted: u64,
    /// Requests answered 429 `rate_limited`.
    pub refused: u64,
}

/// Header fields to add to an answer.
pub(crate) type Fields = Vec<(&'static str, String)>;

/// The buckets of every client id, and the counts.
#[derive(Debug, Default)]
pub(crate) struct Buckets {
    setting: Mutex<Option<TokenBucket>>,
    /// Tokens left and when they were counted, per client id.
    levels: Mutex<HashMap<String, (f64, Instant)>>,
    admitted: AtomicU64,
    refused: AtomicU64,
}

impl Buckets {
    /// Replaces the setting; buckets start full.
    pub(crate) fn set(&self, setting: Option<TokenBucket>) {
        *self.setting.lock().unwrap_or_else(|e| e.into_inner()) = setting;
        self.levels.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// Takes a token of `client_id`'s bucket: the fields to add to the answer, or the 429.
    pub(crate) fn admit(&self, client_id: &str) -> Result<Fields, ErrorReply> {
        let Some(setting) = *self.setting.lock().unwrap_or_else(|e| e.into_inner()) else {
            return Ok(Vec::new());
        };
        let (rate, burst) = (f64::from(setting.per_second), f64::from(setting.burst));
        let now = Instant::now();
        let mut levels = self.levels.lock().unwrap_or_else(|e| e.into_inner());
        let (tokens, counted) = levels.entry(client_id.to_owned()).or_insert((burst, now));
        *tokens = now.duration_since(*counted).as_secs_f64().mul_add(rate, *tokens).min(burst);
        *counted = now;
        let admitted = *tokens >= 1.0;
        if admitted {
            *tokens -= 1.0;
        }
        let fields = if setting.fields {
            let full_in = ((burst - *tokens) / rate).ceil();
            vec![
                ("ratelimit-policy", format!("\"default\";q={};w=1", setting.per_second)),
                ("ratelimit", format!("\"default\";r={};t={full_in}", tokens.floor())),
            ]
        } else {
            Vec::new()
        };
        if admitted {
            self.admitted.fetch_add(1, Ordering::Relaxed);
            return Ok(fields);
        }
        self.refused.fetch_add(1, Ordering::Relaxed);
        // Whole seconds, rounded up: never before a token is back.
        let retry_after = ((1.0 - *tokens) / rate).ceil().max(1.0);
        let reply = ErrorReply::new(429, "rate_limited", "too many requests for this client")
            .with_header("retry-after", format!("{retry_after}"));
        Err(fields.into_iter().fold(reply, |reply, (name, value)| reply.with_header(name, value)))
    }

    pub(crate) fn counts(&self) -> RateLimitCounts {
        RateLimitCounts {
            admitted: self.admitted.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn reset_counts(&self) {
        self.admitted.store(0, Ordering::Relaxed);
        self.refused.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_client_id_has_its_bucket_and_a_refusal_says_when_to_come_back() {
        let buckets = Buckets::default();
        assert!(buckets.admit("a").expect("off by default").is_empty());
        buckets.set(Some(TokenBucket::per_second(2).burst(3).fields(true)));
        for left in [2, 1, 0] {
            let fields = buckets.admit("a").expect("a token");
            assert_eq!(fields[0], ("ratelimit-policy", "\"default\";q=2;w=1".to_owned()));
            assert!(fields[1].1.starts_with(&format!("\"default\";r={left};t=")), "{fields:?}");
        }
        let refused = buckets.admit("a").expect_err("the bucket is empty");
        assert_eq!((refused.status, refused.code), (429, "rate_limited"));
        let reply = format!("{refused:?}");
        assert!(reply.contains(r#"("retry-after", "1")"#), "half a second, rounded up: {reply}");
        assert!(reply.contains(r#""default\";r=0;t=2"#), "{reply}");
        assert!(buckets.admit("b").is_ok(), "another client id has a bucket of its own");
        assert_eq!(buckets.counts(), RateLimitCounts { admitted: 4, refused: 1 });
        buckets.reset_counts();
        assert_eq!(buckets.counts(), RateLimitCounts::default());
    }
}
