//! Many instances, one sign-in: token state shared over Redis (feature `redis`).
//!
//! ```text
//! cargo run --example fleet --features redis                        # starts its own redis-server
//! REDIS_URL=redis://127.0.0.1:6379 cargo run --example fleet --features redis
//! ```
//!
//! Against the embedded reference server, with refresh-token rotation and reuse detection on:
//!
//! 1. Five instances of a backend, each with its own connection to Redis, sign in with client
//!    credentials: the authorization server issues one token.
//! 2. Three instances serve one signed-in user from the shared user store. Every access token is
//!    revoked, and all three renew at the same moment: one refresh, and nobody presents a
//!    refresh token the server already retired.

mod support;

use std::process::ExitCode;
use std::time::Duration;

use business_records::auth::{AuthorizationCodeFlow, LoopbackRedirect, RedisTokenCache, TokenStore};
use business_records::{Auth, Client, Error};
use business_records_reference_server::{RedisServer, ReferenceServer};
use futures::future::try_join_all;

#[tokio::main]
async fn main() -> ExitCode {
    support::exit_code(run().await)
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    // A Redis of our own unless one is given (kept alive for the whole run).
    let (redis_url, _own_redis) = match std::env::var("REDIS_URL") {
        Ok(url) if !url.is_empty() => (url, None),
        _ => {
            let own = RedisServer::start()?;
            println!("started redis-server at {}", own.url());
            (own.url(), Some(own))
        }
    };
    let server = ReferenceServer::builder().companies(20).refresh_token_rotation(true).start().await;
    println!("reference server: api {} auth {}", server.base_url(), server.auth_url());

    // 1. Client credentials: one token for every instance.
    let mut backends = Vec::new();
    for _ in 0..5 {
        // In a real fleet each process runs this once at start.
        let shared = RedisTokenCache::connect(&redis_url).await?;
        let auth = Auth::client_credentials(server.auth_url(), server.client_id(), server.client_secret())
            .scopes(["api/read"])
            .shared_cache(shared);
        backends.push(Client::builder().base_url(server.base_url()).auth(auth).build()?);
    }
    let pages = try_join_all(backends.iter().map(|c| c.companies().limit(2).send())).await?;
    println!(
        "{} backend instances listed {} companies each; token requests: {}",
        backends.len(),
        pages[0].data.len(),
        server.token_requests()
    );

    // 2. A signed-in user served by several instances. The user secret seals the stored tokens;
    //    every instance must have the same one (from your secret manager).
    let user_secret = "replace with 32 random bytes from your secret manager";
    let (flow, tokens) = sign_in(&server).await?;
    let store = RedisTokenCache::connect(&redis_url).await?.user_secret(user_secret).user_store("user-42");
    store.save(&tokens).await.map_err(Error::TokenStore)?;

    let mut web = Vec::new();
    for _ in 0..3 {
        let store =
            RedisTokenCache::connect(&redis_url).await?.user_secret(user_secret).user_store("user-42");
        let tokens = store.load().await.map_err(Error::TokenStore)?.ok_or("no stored tokens")?;
        let auth = Auth::user(flow.clone(), tokens).store(store);
        web.push(Client::builder().base_url(server.base_url()).auth(auth).build()?);
    }
    let before = server.token_requests();
    server.expire_tokens();
    try_join_all(web.iter().map(|c| c.companies().limit(2).send())).await?;
    println!(
        "{} web instances renewed the user's revoked token at once: {} refresh, sign-in kept",
        web.len(),
        server.token_requests() - before
    );
    Ok(())
}

/// The user signs in; the reference server approves at once, so the example follows the
/// authorization URL itself where a browser would.
async fn sign_in(
    server: &ReferenceServer,
) -> Result<(AuthorizationCodeFlow, business_records::auth::TokenSet), Box<dyn std::error::Error>> {
    let redirect = LoopbackRedirect::bind().await?.timeout(Duration::from_secs(30));
    let flow =
        AuthorizationCodeFlow::new(server.auth_url(), server.public_client_id(), redirect.redirect_uri())?
            .scopes(["openid", "api/read"]);
    let request = flow.authorize_url();
    let browser = reqwest::Client::builder().redirect(reqwest::redirect::Policy::limited(5)).build()?;
    let (callback, opened) =
        tokio::join!(redirect.wait_for_callback_of(&request), browser.get(request.url()).send());
    opened?;
    let tokens = flow.exchange(request, &callback?).await?;
    Ok((flow, tokens))
}
