//! Local token validation (API Part 5.7) against a changing key set: the `TokenVerifier`
//! stops trusting a withdrawn key after its maximum age, rides out a JWKS outage with backoff
//! instead of refusing for a fixed minute, and ID-token checks allow for clock skew.

use std::time::Duration;

use business_records::auth::{AuthorizationCodeFlow, IdToken, TokenVerifier, VerifyError};
use business_records_reference_server::{
    Endpoint, Fault, Faults, ReferenceServer, ReferenceServerBuilder, TokenSpec,
};

crate::cases! {
    ServerControl:
        the_verifier_fetches_the_jwks_once_and_again_for_unknown_key_ids,
        a_withdrawn_key_is_refused_once_the_cached_keys_are_older_than_the_max_age,
        a_jwks_outage_is_retried_with_backoff_until_the_keys_arrive,
        an_outage_after_the_max_age_keeps_the_cached_keys_in_use,
        id_tokens_from_a_clock_a_few_seconds_ahead_verify_within_the_default_leeway;
}

/// A second RSA key for rotations (test data only).
pub const ROTATED_KEY_PEM: &str = include_str!("fixtures/rotated_signing_key.pem");

fn small() -> ReferenceServerBuilder {
    ReferenceServer::builder().companies(1).contacts_per_company(0)
}

fn verifier(server: &ReferenceServer) -> TokenVerifier {
    TokenVerifier::new(server.jwks_url(), server.auth_url(), server.audience()).expect("a valid verifier")
}

/// The server's tokens, read by the client's verifier: one JWKS fetch for the key, refetches
/// for unknown key ids at most once per interval, and each check of API Part 5.7.
async fn the_verifier_fetches_the_jwks_once_and_again_for_unknown_key_ids() {
    let server = small().start().await;
    let verifier = verifier(&server);
    let token = server.mint_token(TokenSpec::new());
    assert!(matches!(verifier.verify_cached(&token), Err(VerifyError::UnknownKey { .. })));
    assert_eq!(server.jwks_requests(), 0);

    let claims = verifier.verify(&token).await.expect("the published key");
    assert_eq!(claims.iss, server.auth_url());
    assert_eq!(claims.client_id.as_deref(), Some(server.client_id()));
    assert!(claims.has_scope("api/read") && claims.has_scope("api/write"));
    assert!(claims.expires_at() > chrono::Utc::now());
    verifier.clone().verify(&token).await.expect("a clone shares the cached keys");
    assert!(verifier.verify_cached(&token).is_ok());
    assert_eq!(server.jwks_requests(), 1);

    // An unknown key id refetches at once (the key may have been rotated), then at most once
    // per refetch interval (5 s by default).
    let unknown = server.mint_token(TokenSpec::new().unknown_key());
    for _ in 0..3 {
        assert!(matches!(verifier.verify(&unknown).await, Err(VerifyError::UnknownKey { .. })));
    }
    assert_eq!(server.jwks_requests(), 2);
    // Without an interval: the first fetch, then a refetch for each unknown key id.
    let eager = self::verifier(&server).refetch_interval(Duration::ZERO);
    for _ in 0..3 {
        assert!(eager.verify(&unknown).await.is_err());
    }
    assert_eq!(server.jwks_requests(), 5);

    let expired = server.mint_token(TokenSpec::new().lifetime_secs(-1));
    assert!(matches!(verifier.verify(&expired).await, Err(VerifyError::Expired)));
    let forged = server.mint_token(TokenSpec::new().bad_signature());
    let err = verifier.verify(&forged).await.expect_err("a forged signature");
    assert!(matches!(err, VerifyError::InvalidSignature) && !err.to_string().contains(&forged), "{err}");
    let other_issuer = server.mint_token(TokenSpec::new().issuer("http://127.0.0.1:1"));
    assert!(matches!(verifier.verify(&other_issuer).await, Err(VerifyError::InvalidIssuer)));
    let wrong_audience = TokenVerifier::new(server.jwks_url(), server.auth_url(), "other").expect("valid");
    assert!(matches!(wrong_audience.verify(&token).await, Err(VerifyError::InvalidAudience)));

    let unreachable = TokenVerifier::new("http://127.0.0.1:1/jwks", server.auth_url(), "a").expect("valid");
    let err = unreachable.verify(&token).await.expect_err("no key set");
    assert!(matches!(err, VerifyError::Jwks(_)), "{err}");
    assert!(!err.to_string().contains(&token));
    // Within the backoff after the failure (at least half a second) it is reported again.
    assert!(matches!(unreachable.verify(&token).await, Err(VerifyError::Jwks(_))));
}

async fn a_withdrawn_key_is_refused_once_the_cached_keys_are_older_than_the_max_age() {
    let server = small().start().await;
    let max_age = Duration::from_millis(600);
    let verifier = verifier(&server).max_age(max_age);
    let signed_before = server.mint_token(TokenSpec::new());
    verifier.verify(&signed_before).await.expect("the published key");
    assert_eq!(server.jwks_requests(), 1);

    server.rotate_signing_key(ROTATED_KEY_PEM, "rotated-key");
    // Within the max age the cached key is still trusted, without a request.
    verifier.verify(&signed_before).await.expect("the cached key, within its max age");
    assert_eq!(server.jwks_requests(), 1);

    tokio::time::sleep(max_age + Duration::from_millis(100)).await;
    let err = verifier.verify(&signed_before).await.expect_err("the key was withdrawn");
    assert!(matches!(err, VerifyError::UnknownKey { ref kid, .. } if kid == "reference-key-1"), "{err:?}");
    assert_eq!(server.jwks_requests(), 2, "the keys were fetched again once too old");
    // The new key came with that fetch.
    let signed_after = server.mint_token(TokenSpec::new());
    verifier.verify(&signed_after).await.expect("the new key");
    assert_eq!(server.jwks_requests(), 2);
}

async fn a_jwks_outage_is_retried_with_backoff_until_the_keys_arrive() {
    let server = small().faults(Faults::none()).start().await;
    server.set_faults(Faults::new().on_sequence(
        Endpoint::Jwks,
        [Some(Fault::Status(503)), Some(Fault::Html(502)), Some(Fault::DropConnection)],
    ));
    let verifier = verifier(&server).fetch_backoff(Duration::from_millis(400), Duration::from_secs(2));
    let token = server.mint_token(TokenSpec::new());

    let err = verifier.verify(&token).await.expect_err("the JWKS is down");
    let VerifyError::Jwks(cause) = &err else { panic!("expected a JWKS failure, got {err:?}") };
    assert_eq!(cause.status(), Some(503), "the fetch failure is the source: {cause}");
    assert!(std::error::Error::source(&err).is_some_and(|source| source.to_string().contains("503")));
    // Within the backoff (at least half of 400 ms) the failure is reported without a request.
    let err = verifier.verify(&token).await.expect_err("still backing off");
    assert!(matches!(err, VerifyError::Jwks(_)), "{err:?}");
    assert_eq!(server.jwks_requests(), 1);

    // Callers keep coming; the verifier fetches again only when the backoff is over, and
    // succeeds well before the fixed minute an earlier design waited.
    let mut verified = None;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if let Ok(claims) = verifier.verify(&token).await {
            verified = Some(claims);
            break;
        }
    }
    let claims = verified.expect("the keys arrived once the outage was over");
    assert_eq!(claims.iss, server.auth_url());
    assert_eq!(server.jwks_requests(), 4, "three failed fetches and one that worked, however many calls");
    assert_eq!(server.fault_counts(Endpoint::Jwks).total(), 3);
}

async fn an_outage_after_the_max_age_keeps_the_cached_keys_in_use() {
    let server = small().faults(Faults::none()).start().await;
    let max_age = Duration::from_millis(300);
    let verifier =
        verifier(&server).max_age(max_age).fetch_backoff(Duration::from_secs(5), Duration::from_secs(5));
    let token = server.mint_token(TokenSpec::new());
    verifier.verify(&token).await.expect("keys fetched");
    server.set_faults(Faults::new().on_every(Endpoint::Jwks, 1, Fault::Html(503)));
    tokio::time::sleep(max_age + Duration::from_millis(100)).await;
    // The refetch fails; nothing shows the key was withdrawn, so it stays in use.
    verifier.verify(&token).await.expect("the cached key during the outage");
    verifier.verify(&token).await.expect("and without a new request during the backoff");
    assert_eq!((server.jwks_requests(), server.fault_counts(Endpoint::Jwks).get("html_503")), (2, 1));
}

async fn id_tokens_from_a_clock_a_few_seconds_ahead_verify_within_the_default_leeway() {
    let server = small().start().await;
    let flow =
        AuthorizationCodeFlow::new(server.auth_url(), server.public_client_id(), "http://127.0.0.1:8400/cb")
            .expect("a valid flow");
    // An ID token (`aud` = the client id) whose `iat` and `nbf` are 5 seconds ahead.
    let ahead = server.mint_token(TokenSpec::new().audience(server.public_client_id()).clock_skew_secs(5));
    let claims = flow.verify_id_token(&IdToken::new(ahead.clone())).await.expect("within 60 s of leeway");
    assert_eq!(claims.aud, [server.public_client_id()]);

    let strict = flow.clone().id_token_leeway(Duration::ZERO);
    let err = strict.verify_id_token(&IdToken::new(ahead.clone())).await.expect_err("no leeway");
    assert!(
        matches!(err, business_records::Error::TokenVerification(ref e) if matches!(**e, VerifyError::NotYetValid)),
        "{err:?}"
    );

    // A resource server's verifier has no leeway unless given one.
    let resource = TokenVerifier::new(server.jwks_url(), server.auth_url(), server.public_client_id())
        .expect("a valid verifier");
    assert!(matches!(resource.verify(&ahead).await, Err(VerifyError::NotYetValid)));
    resource.clone().leeway(Duration::from_secs(10)).verify(&ahead).await.expect("10 s of leeway");
    // Expired a few seconds ago: within the ID-token leeway, refused without it.
    let behind = server.mint_token(TokenSpec::new().audience(server.public_client_id()).lifetime_secs(-5));
    flow.verify_id_token(&IdToken::new(behind.clone())).await.expect("expired 5 s ago, within 60 s");
    assert!(strict.verify_id_token(&IdToken::new(behind)).await.is_err());
}
