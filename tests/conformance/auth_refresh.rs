//! The refresh guarantees of a signed-in client against the reference server with rotation
//! and reuse detection: a refresh runs to completion whoever stops waiting for it, its answer
//! is kept and saved before anything that can fail, and an ID token that fails verification
//! costs nothing but itself.

use std::time::Duration;

use business_records::auth::{MemoryTokenStore, TokenSet, VerifyError};
use business_records::{Auth, Client, Error};
use business_records_reference_server::{Endpoint, Fault, Faults, ReferenceServer};

use crate::auth_user::sign_in;
use crate::support::eventually;

crate::cases! {
    ServerControl:
        a_refresh_whose_caller_gave_up_still_lands_in_memory_and_in_the_store,
        a_dropped_listing_does_not_cancel_the_refresh_it_started,
        a_refreshed_id_token_that_fails_verification_is_dropped_and_the_new_tokens_kept;
}

/// A signed-in user's client with a memory store, against a reference server with `companies`,
/// one-second tokens, rotation and the fault proxies.
async fn signed_in_client(companies: usize) -> (ReferenceServer, TokenSet, Client, MemoryTokenStore) {
    let server = ReferenceServer::builder()
        .companies(companies)
        .token_lifetime(Duration::from_secs(1))
        .refresh_token_rotation(true)
        .faults(Faults::new())
        .start()
        .await;
    let (flow, first) = sign_in(&server).await;
    let store = MemoryTokenStore::new();
    let client = Client::builder()
        .base_url(server.base_url())
        .auth(Auth::user(flow, first.clone()).store(store.clone()))
        .build()
        .expect("client");
    (server, first, client, store)
}

/// The refresh token the server considers current for the test user.
fn current_refresh_token(server: &ReferenceServer) -> Vec<String> {
    server.active_refresh_tokens(server.test_user())
}

fn refresh_token_of(tokens: &TokenSet) -> String {
    tokens.refresh_token.as_ref().expect("a refresh token").secret().to_owned()
}

async fn a_refresh_whose_caller_gave_up_still_lands_in_memory_and_in_the_store() {
    let (server, first, client, store) = signed_in_client(5).await;
    // The refresh is held for 400 ms before the server processes it.
    server.set_faults(Faults::new().on(Endpoint::Token, 1, Fault::Slow(Duration::from_millis(400))));
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let call = tokio::time::timeout(Duration::from_millis(100), client.companies().send()).await;
    assert!(call.is_err(), "the caller gave up while the refresh was in flight");

    // The refresh went on without the caller: the rotated set is kept and saved.
    eventually("the save of the rotated set", || store.saves() == 1).await;
    let saved = store.get().expect("saved");
    assert_ne!(saved.refresh_token, first.refresh_token);
    assert_eq!(current_refresh_token(&server), [refresh_token_of(&saved)]);

    // The next call uses the new token: no second refresh, no reuse, nothing revoked.
    client.companies().send().await.expect("the refreshed token works");
    assert_eq!(server.token_requests_for("refresh_token"), 1);
    assert_eq!(server.refresh_token_reuses(), 0);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    client.companies().send().await.expect("and the next refresh uses the rotated token");
    assert_eq!(server.refresh_token_reuses(), 0);
    assert_eq!(current_refresh_token(&server), [refresh_token_of(&store.get().expect("saved"))]);
}

async fn a_dropped_listing_does_not_cancel_the_refresh_it_started() {
    let (server, _, client, store) = signed_in_client(30).await;
    let mut stream = client.companies().limit(10).stream();
    for _ in 0..10 {
        stream.try_next().await.expect("a company").expect("the first page");
    }
    // Page two is already prefetched. Once the token has expired, taking its first item starts
    // the prefetch of page three, which needs a refresh, which is slow; the listing is dropped
    // meanwhile, and its prefetch task aborted.
    server.set_faults(Faults::new().on(Endpoint::Token, 1, Fault::Slow(Duration::from_millis(300))));
    tokio::time::sleep(Duration::from_millis(1000)).await;
    stream.try_next().await.expect("a company").expect("the second page");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(store.saves(), 0, "the refresh is still in flight");
    drop(stream);
    eventually("the save of the rotated set", || store.saves() == 1).await;
    assert_eq!(current_refresh_token(&server), [refresh_token_of(&store.get().expect("saved"))]);
    let all: Vec<_> = client.companies().stream().try_collect().await.expect("a new listing");
    assert_eq!(all.len(), 30);
    assert_eq!(server.token_requests_for("refresh_token"), 1);
    assert_eq!(server.refresh_token_reuses(), 0);
}

async fn a_refreshed_id_token_that_fails_verification_is_dropped_and_the_new_tokens_kept() {
    let server = ReferenceServer::builder()
        .companies(5)
        .token_lifetime(Duration::from_secs(1))
        .refresh_token_rotation(true)
        .start()
        .await;
    let (flow, first) = sign_in(&server).await;
    // A flow that expects another issuer: every ID token the server sends now fails.
    let strict = flow.clone().issuer("https://issuer.example");

    // Refreshing by hand: the refresh succeeds, the new ID token is dropped and reported.
    let renewed = strict.refresh(&first).await.expect("the refresh itself succeeds");
    assert_ne!(renewed.refresh_token, first.refresh_token, "the rotated refresh token is kept");
    assert_ne!(renewed.access_token, first.access_token, "the new access token is kept");
    assert_eq!(renewed.id_token, first.id_token, "the previous id token stays");
    assert_eq!(renewed.id_token_claims().map(|c| &c.sub), first.id_token_claims().map(|c| &c.sub));
    let error = renewed.id_token_error().expect("the failure is reported");
    assert!(
        matches!(error, Error::TokenVerification(e) if matches!(**e, VerifyError::InvalidIssuer)),
        "{error:?}"
    );
    assert_eq!(current_refresh_token(&server), [refresh_token_of(&renewed)]);

    // Through a client: the call succeeds, the store ends up without the bad ID token.
    let store = MemoryTokenStore::new();
    let client = Client::builder()
        .base_url(server.base_url())
        .auth(Auth::user(strict, renewed.clone()).store(store.clone()))
        .build()
        .expect("client");
    tokio::time::sleep(Duration::from_millis(1000)).await;
    client.companies().send().await.expect("the new access token is used");
    eventually("the store dropping the bad id token", || {
        store.get().is_some_and(|saved| saved.id_token_error().is_some())
    })
    .await;
    let saved = store.get().expect("saved");
    assert_eq!(saved.id_token, renewed.id_token);
    assert_eq!(current_refresh_token(&server), [refresh_token_of(&saved)]);
    assert_eq!(server.refresh_token_reuses(), 0);
}
