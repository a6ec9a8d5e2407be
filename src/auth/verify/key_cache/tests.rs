//! The fetch rules on paused Tokio time, with a JWKS that answers after a delay and counts its
//! fetches.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::error::{ApiError, Origin};

const INTERVAL: Duration = Duration::from_secs(5);
const MAX_AGE: Duration = Duration::from_secs(3600);
/// How long the fake JWKS takes to answer.
const LATENCY: Duration = Duration::from_millis(100);

fn policy() -> FetchPolicy {
    FetchPolicy {
        max_age: MAX_AGE,
        refetch_interval: INTERVAL,
        backoff: (Duration::from_secs(1), Duration::from_secs(1)),
    }
}

/// A JWKS endpoint: publishes keys under `kids`, answers after [`LATENCY`], or fails.
#[derive(Default)]
struct Endpoint {
    kids: Mutex<Vec<&'static str>>,
    failing: Mutex<bool>,
    fetches: AtomicUsize,
}

impl Endpoint {
    fn publishing(kids: &[&'static str]) -> Self {
        let endpoint = Endpoint::default();
        endpoint.publish(kids);
        endpoint
    }

    fn publish(&self, kids: &[&'static str]) {
        *self.kids.lock().unwrap() = kids.to_vec();
    }

    fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }

    async fn fetch(&self) -> Result<Jwks, Error> {
        self.fetches.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(LATENCY).await;
        if *self.failing.lock().unwrap() {
            return Err(Error::Api(
                ApiError::new(503, None, "/jwks").with_origin(Origin::AuthorizationServer),
            ));
        }
        let keys: Vec<String> = self
            .kids
            .lock()
            .unwrap()
            .iter()
            .map(|kid| format!(r#"{{"kty":"RSA","kid":"{kid}","n":"AQAB","e":"AQAB"}}"#))
            .collect();
        Ok(Jwks::parse(format!(r#"{{"keys":[{}]}}"#, keys.join(",")).as_bytes()).unwrap())
    }
}

async fn key(cache: &KeyCache, endpoint: &Endpoint, kid: &str) -> Result<Arc<DecodingKey>, VerifyError> {
    cache.key(Some(kid), &policy(), || endpoint.fetch()).await
}

/// One verification for each of `kids`, all at once.
async fn burst(
    cache: &KeyCache,
    endpoint: &Endpoint,
    kids: &[String],
) -> Vec<Result<Arc<DecodingKey>, VerifyError>> {
    futures::future::join_all(kids.iter().map(|kid| key(cache, endpoint, kid))).await
}

fn cold() -> KeyCache {
    KeyCache::new(Jwks::default())
}

#[tokio::test(start_paused = true)]
async fn a_burst_of_tokens_after_a_rotation_costs_one_fetch_and_all_verify() {
    let endpoint = Endpoint::publishing(&["k1"]);
    let cache = cold();
    key(&cache, &endpoint, "k1").await.expect("the first key");
    assert_eq!(endpoint.fetches(), 1);

    // Right after that first fetch the server rotates: the new key is found at once.
    endpoint.publish(&["k2"]);
    let results = burst(&cache, &endpoint, &vec!["k2".to_owned(); 50]).await;
    assert!(results.iter().all(Result::is_ok), "every token of the burst verifies");
    assert_eq!(endpoint.fetches(), 2, "fifty tokens with a new key id, one fetch");
    // The withdrawn key is gone with the fetch that brought its successor.
    assert!(matches!(key(&cache, &endpoint, "k1").await, Err(VerifyError::UnknownKey { .. })));
}

#[tokio::test(start_paused = true)]
async fn made_up_key_ids_cost_at_most_one_fetch_per_refetch_interval() {
    let endpoint = Endpoint::publishing(&["k1"]);
    let cache = cold();
    key(&cache, &endpoint, "k1").await.expect("the first key");

    let made_up: Vec<String> = (0..200).map(|i| format!("made-up-{i}")).collect();
    let results = burst(&cache, &endpoint, &made_up).await;
    assert!(results.iter().all(|r| matches!(r, Err(VerifyError::UnknownKey { .. }))));
    assert_eq!(endpoint.fetches(), 2, "a flood of unknown ids, one refetch");
    for kid in &made_up {
        assert!(key(&cache, &endpoint, kid).await.is_err());
    }
    assert_eq!(endpoint.fetches(), 2, "none more within the interval");
    key(&cache, &endpoint, "k1").await.expect("known keys keep verifying meanwhile");
    for i in 0..20_000 {
        assert!(key(&cache, &endpoint, &format!("unknown-{i}")).await.is_err());
    }
    assert_eq!(
        cache.len(),
        Some(1),
        "unknown key ids make no entry: the cache holds what the JWKS published"
    );

    tokio::time::advance(INTERVAL).await;
    assert!(burst(&cache, &endpoint, &made_up).await.iter().all(Result::is_err));
    assert_eq!(endpoint.fetches(), 3, "one more once the interval has passed");
}

#[tokio::test(start_paused = true)]
async fn a_second_rotation_within_the_interval_waits_for_the_interval() {
    let endpoint = Endpoint::publishing(&["k1"]);
    let cache = cold();
    key(&cache, &endpoint, "k1").await.expect("the first key");
    endpoint.publish(&["k2"]);
    key(&cache, &endpoint, "k2").await.expect("the first rotation is picked up at once");
    endpoint.publish(&["k3"]);
    assert!(key(&cache, &endpoint, "k3").await.is_err(), "a refetch just happened");
    assert_eq!(endpoint.fetches(), 2);
    tokio::time::advance(INTERVAL).await;
    key(&cache, &endpoint, "k3").await.expect("found once the interval has passed");
    assert_eq!(endpoint.fetches(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_cold_burst_costs_one_fetch_and_young_keys_none() {
    let endpoint = Endpoint::publishing(&["k1", "k2"]);
    let cache = cold();
    let kids: Vec<String> = (0..30).map(|i| if i % 2 == 0 { "k1" } else { "k2" }.to_owned()).collect();
    assert!(burst(&cache, &endpoint, &kids).await.iter().all(Result::is_ok));
    assert_eq!(endpoint.fetches(), 1);
    tokio::time::advance(MAX_AGE - Duration::from_secs(1)).await;
    assert!(burst(&cache, &endpoint, &kids).await.iter().all(Result::is_ok));
    assert_eq!(endpoint.fetches(), 1, "young keys need no request");
    tokio::time::advance(Duration::from_secs(1)).await;
    key(&cache, &endpoint, "k1").await.expect("old keys are fetched again");
    assert_eq!(endpoint.fetches(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_token_without_kid_takes_the_only_key_and_is_refused_among_several() {
    let endpoint = Endpoint::publishing(&["k1"]);
    let cache = cold();
    cache.key(None, &policy(), || endpoint.fetch()).await.expect("the only key");
    endpoint.publish(&["k1", "k2"]);
    tokio::time::advance(MAX_AGE).await;
    let err = cache.key(None, &policy(), || endpoint.fetch()).await.expect_err("two keys could apply");
    assert!(matches!(err, VerifyError::MissingKeyId), "{err:?}");
    assert_eq!(endpoint.fetches(), 2);
    let err = cache.key(None, &policy(), || endpoint.fetch()).await.expect_err("still two");
    assert!(matches!(err, VerifyError::MissingKeyId), "{err:?}");
    assert_eq!(endpoint.fetches(), 2, "an ambiguous token never makes a fetch");
}

#[tokio::test(start_paused = true)]
async fn a_failed_fetch_backs_off_and_stale_keys_serve_meanwhile() {
    let endpoint = Endpoint::publishing(&["k1"]);
    let cache = cold();
    key(&cache, &endpoint, "k1").await.expect("the first key");
    *endpoint.failing.lock().unwrap() = true;
    tokio::time::advance(MAX_AGE).await;
    key(&cache, &endpoint, "k1").await.expect("the old key while the JWKS is down");
    assert_eq!(endpoint.fetches(), 2);
    let err = key(&cache, &endpoint, "k2").await.expect_err("no key, and backing off");
    assert!(matches!(&err, VerifyError::Jwks(cause) if cause.status() == Some(503)), "{err:?}");
    assert_eq!(endpoint.fetches(), 2, "no request during the backoff");
    *endpoint.failing.lock().unwrap() = false;
    tokio::time::advance(Duration::from_secs(1)).await;
    key(&cache, &endpoint, "k1").await.expect("fetched again after the backoff");
    assert_eq!(endpoint.fetches(), 3);
}

const N: &str = "AQAB";

fn kids(jwks: &Jwks) -> Vec<Option<&str>> {
    jwks.0.iter().map(|(kid, _)| kid.as_deref()).collect()
}

#[test]
fn only_rsa_signature_keys_for_rs256_are_kept() {
    let json = format!(
        r#"{{"keys":[
        {{"kty":"EC","kid":"ec","crv":"P-256","x":"AA","y":"AA"}},
        {{"kty":"RSA","kid":"enc","use":"enc","n":"{N}","e":"AQAB"}},
        {{"kty":"RSA","kid":"wrap","key_ops":["wrapKey"],"n":"{N}","e":"AQAB"}},
        {{"kty":"RSA","kid":"rs512","alg":"RS512","n":"{N}","e":"AQAB"}},
        {{"kty":"RSA","kid":"no-n","e":"AQAB"}},
        {{"kty":"RSA","n":"{N}","e":"AQAB"}},
        {{"kty":"RSA","kid":"ops","key_ops":["verify"],"n":"{N}","e":"AQAB"}},
        {{"kty":"RSA","kid":"ok","alg":"RS256","use":"sig","n":"{N}","e":"AQAB"}}
    ]}}"#
    );
    let jwks = Jwks::parse(json.as_bytes()).unwrap();
    assert_eq!(kids(&jwks), [None, Some("ops"), Some("ok")], "the key without kid is kept");
    assert!(Jwks::parse(b"[]").is_err());
}

#[test]
fn a_token_without_kid_takes_the_only_key_and_is_refused_among_several_keys() {
    let one =
        Jwks::parse(format!(r#"{{"keys":[{{"kty":"RSA","n":"{N}","e":"AQAB"}}]}}"#).as_bytes()).unwrap();
    assert!(one.require(None).is_ok());
    assert!(matches!(one.require(Some("k")), Err(VerifyError::UnknownKey { kid }) if kid == "k"));

    let with_kid =
        Jwks::parse(format!(r#"{{"keys":[{{"kty":"RSA","kid":"k","n":"{N}","e":"AQAB"}}]}}"#).as_bytes())
            .unwrap();
    assert!(with_kid.require(None).is_ok(), "a single key with a kid serves a token without one");
    assert!(with_kid.require(Some("k")).is_ok());

    let two = Jwks::parse(
        format!(
            r#"{{"keys":[{{"kty":"RSA","kid":"a","n":"{N}","e":"AQAB"}},{{"kty":"RSA","kid":"b","n":"{N}","e":"AQAB"}}]}}"#
        )
        .as_bytes(),
    )
    .unwrap();
    assert!(matches!(two.require(None), Err(VerifyError::MissingKeyId)));
    assert!(two.require(Some("b")).is_ok());

    let none = Jwks::default();
    assert!(matches!(none.select(None), Ok(None)));
    assert!(matches!(none.require(None), Err(VerifyError::MissingKeyId)));
}
