//! Sign a user in from a desktop app, then list companies as that user.
//!
//! ```text
//! cargo run --example desktop_login
//! ```
//!
//! The authorization-code flow with PKCE and a loopback redirect (RFC 8252): the app listens on
//! `127.0.0.1`, sends the user's browser to the authorization server, receives the redirect
//! back, exchanges the code, keeps the tokens in a file only the user can read, and lets the
//! client renew them.
//!
//! Runs against the embedded reference server, which signs its test user in without a login
//! page, so the example "opens the browser" by following the authorization URL itself. Against a
//! deployment, set `BUSINESS_RECORDS_BASE_URL`, `BUSINESS_RECORDS_AUTH_URL` and
//! `BUSINESS_RECORDS_APP_CLIENT_ID`: the example prints the URL to open and waits.

mod support;

use std::process::ExitCode;
use std::time::Duration;

use business_records::auth::{AuthorizationCodeFlow, FileTokenStore, LoopbackRedirect, TokenStore};
use business_records::{Auth, Client, Error};
use business_records_reference_server::ReferenceServer;

/// What the app asks the user for.
const SCOPES: [&str; 4] = ["openid", "profile", "email", "api/read"];

#[tokio::main]
async fn main() -> ExitCode {
    support::exit_code(run().await)
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    // Keep the embedded server alive for the whole run.
    let (server, base_url, auth_url, client_id) = match deployment() {
        Some((base, auth, id)) => (None, base, auth, id),
        None => {
            let server = ReferenceServer::builder().companies(50).start().await;
            let settings = (server.base_url(), server.auth_url(), server.public_client_id().to_owned());
            println!("reference server: api {} auth {}", settings.0, settings.1);
            (Some(server), settings.0, settings.1, settings.2)
        }
    };

    // 1. Listen for the redirect on 127.0.0.1, on a port the OS picks.
    let redirect = LoopbackRedirect::bind().await?.timeout(Duration::from_secs(300));
    let flow = AuthorizationCodeFlow::new(&auth_url, &client_id, redirect.redirect_uri())?.scopes(SCOPES);

    // 2. Send the user to the authorization server. The request keeps the PKCE verifier and
    //    the state that the callback is checked against.
    let request = flow.authorize_url();
    let callback = if server.is_some() {
        let (callback, opened) =
            tokio::join!(redirect.wait_for_callback_of(&request), open_browser(request.url()));
        opened?;
        callback?
    } else {
        println!("open this URL in your browser to sign in:\n\n  {}\n", request.url());
        redirect.wait_for_callback_of(&request).await?
    };

    // 3. Check the callback (state, issuer, error) and exchange the code; no client secret.
    let tokens = flow.exchange(request, &callback).await?;
    let user = tokens.id_token_claims().and_then(|claims| claims.sub.clone()).unwrap_or_default();
    println!("signed in as {user}; access token expires at {:?}", tokens.expires_at);

    // 4. Keep the tokens (JSON, mode 0600, replaced atomically). Renewed tokens are saved there
    //    by the client before it uses them.
    //    The folder is the app's own (created owner-only): a shared one such as /tmp is refused.
    let folder = std::env::temp_dir().join(format!("business-records-desktop-login-{}", std::process::id()));
    let path = folder.join("tokens.json");
    let store = FileTokenStore::new(&path);
    store.save(&tokens).await.map_err(Error::TokenStore)?;

    // 5. Call the API as the user.
    let client =
        Client::builder().base_url(&base_url).auth(Auth::user(flow, tokens).store(store.clone())).build()?;
    let page = client.companies().limit(5).send().await?;
    println!("{:<10} {:<32} status", "id", "name");
    for company in &page.data {
        let status = company.status.as_ref().map_or("-", |s| s.as_str());
        println!("{:<10} {:<32} {status}", company.id, company.name);
    }

    // 6. A later run starts from the stored tokens instead of signing in again. This run's
    //    loopback port is gone by then: a flow made for refreshing needs no redirect URI.
    drop(client);
    if let Some(saved) = store.load().await.map_err(Error::TokenStore)? {
        let flow = AuthorizationCodeFlow::for_refresh(&auth_url, &client_id)?.scopes(SCOPES);
        let client = Client::builder()
            .base_url(&base_url)
            .auth(Auth::user(flow, saved).store(store.clone()))
            .build()?;
        let page = client.companies().limit(5).send().await?;
        println!("a later run, from {}: {} companies", path.display(), page.data.len());
    }
    store.remove().await.map_err(Error::TokenStore)?;
    std::fs::remove_dir(&folder)?;
    Ok(())
}

/// Stands in for the browser against the reference server, which approves at once: follows
/// the redirect back to the loopback listener.
async fn open_browser(url: &str) -> Result<(), reqwest::Error> {
    let browser = reqwest::Client::builder().redirect(reqwest::redirect::Policy::limited(5)).build()?;
    let page = browser.get(url).send().await?.text().await?;
    println!(
        "browser shows: {}",
        page.split("<p>").nth(1).and_then(|p| p.split("</p>").next()).unwrap_or("")
    );
    Ok(())
}

fn deployment() -> Option<(String, String, String)> {
    let var = |name: &str| std::env::var(format!("BUSINESS_RECORDS_{name}")).ok();
    Some((var("BASE_URL")?, var("AUTH_URL")?, var("APP_CLIENT_ID")?))
}
