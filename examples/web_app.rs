//! A web app whose users sign in, list their companies and sign out: many users at once in one
//! process, each with a client derived from one shared client.
//!
//! ```text
//! cargo run --example web_app -- --port 8000
//! # then open http://127.0.0.1:8000/login?user=alice (and bob, carol in other browsers)
//! ```
//!
//! - `/login?user=NAME`: starts a sign-in (`NAME` goes to the authorization server as
//!   `login_hint`). The pending sign-in (PKCE verifier, `state`, `nonce`) is sealed into a
//!   cookie: no server-side state, and any instance with the same secret finishes it.
//! - `/callback`: opens the cookie, checks the callback and exchanges the code; the user's
//!   tokens go into a keyed store, the session cookie holds a random session id.
//! - `/companies`: an HTML table of the user's companies, through the user's own client.
//! - `/logout`: revokes the user's tokens at the authorization server and clears the store.
//!
//! Runs against the embedded reference server, with the users alice, bob and carol. Against a
//! deployment, set `BUSINESS_RECORDS_BASE_URL`, `BUSINESS_RECORDS_AUTH_URL`,
//! `BUSINESS_RECORDS_CLIENT_ID` and `BUSINESS_RECORDS_CLIENT_SECRET` (the app's own client
//! credentials) and `BUSINESS_RECORDS_APP_CLIENT_ID` (the public client users sign in with, whose
//! redirect URI is `http://127.0.0.1:PORT/callback`). `WEB_APP_SEALING_SECRET` (32 bytes or
//! more) seals pending sign-ins; without it each run draws one. Once listening, the example
//! prints one line: `listening on http://127.0.0.1:PORT`.

mod support;

use std::collections::HashMap;
use std::io::Write as _;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::header::{COOKIE, LOCATION, SET_COOKIE};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use business_records::auth::{AuthorizationCodeFlow, KeyedTokenStore, MemoryKeyedStore};
use business_records::{Auth, Client};
use business_records_reference_server::ReferenceServer;
use clap::Parser;

/// A web app whose users sign in with the authorization code flow.
#[derive(Parser)]
struct Args {
    /// The port to listen on, on 127.0.0.1 (0: a free one).
    #[arg(long, default_value_t = 8000)]
    port: u16,
}

const PENDING_COOKIE: &str = "pending_sign_in";
const SESSION_COOKIE: &str = "session";

/// What every request handler shares.
struct App {
    /// The app's own client: the connection pool and settings every user's client shares.
    api: Client,
    /// One flow for every user (its JWKS cache included).
    flow: AuthorizationCodeFlow,
    /// Every user's tokens, by session id. With several instances, a store they share
    /// (`DirectoryTokenStore` on shared storage, or `RedisTokenCache`).
    stores: MemoryKeyedStore,
    /// The clients of the users signed in through this instance, by session id.
    users: Mutex<HashMap<String, Client>>,
}

#[tokio::main]
async fn main() -> ExitCode {
    support::exit_code(run().await)
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let target = support::Target::from_env_or(
        ReferenceServer::builder().companies(50).users(["alice", "bob", "carol"]),
    )
    .await;
    let app_client_id = std::env::var("BUSINESS_RECORDS_APP_CLIENT_ID")
        .ok()
        .or_else(|| target.server.as_ref().map(|server| server.public_client_id().to_owned()))
        .ok_or("set BUSINESS_RECORDS_APP_CLIENT_ID: the public client users sign in with")?;

    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port)).await?;
    let address = listener.local_addr()?;
    let secret = match std::env::var("WEB_APP_SEALING_SECRET") {
        Ok(secret) => secret,
        Err(_) => {
            eprintln!(
                "WEB_APP_SEALING_SECRET is not set: sign-ins are sealed with a secret of this run only"
            );
            random_hex(32)?
        }
    };
    let flow =
        AuthorizationCodeFlow::new(&target.auth_url, app_client_id, format!("http://{address}/callback"))?
            .scopes(["openid", "profile", "api/read"])
            .sealing_secret(secret);
    let app = Arc::new(App {
        api: target.client_builder().build()?,
        flow,
        stores: MemoryKeyedStore::new(),
        users: Mutex::new(HashMap::new()),
    });
    let router = Router::new()
        .route("/", get(|| async { redirect("/companies") }))
        .route("/login", get(login))
        .route("/callback", get(callback))
        .route("/companies", get(companies))
        .route("/logout", get(logout))
        .with_state(app);
    println!("listening on http://{address}");
    std::io::stdout().flush()?;
    axum::serve(listener, router).await?;
    Ok(())
}

/// `/login?user=NAME`: the sealed pending sign-in in a cookie, and off to the authorization server.
async fn login(State(app): State<Arc<App>>, uri: Uri) -> Response {
    let hint = query_value(&uri, "user");
    let request = match &hint {
        Some(user) => app.flow.authorize_url_with([("login_hint", user.as_str())]),
        None => Ok(app.flow.authorize_url()),
    };
    let sealed = request.and_then(|request| Ok((app.flow.seal_pending(&request)?, request)));
    match sealed {
        Ok((sealed, request)) => {
            let mut response = redirect(request.url());
            set_cookie(&mut response, PENDING_COOKIE, &sealed, "/callback", 600);
            response
        }
        Err(error) => page(StatusCode::BAD_REQUEST, "Sign-in failed", &error.to_string()),
    }
}

/// `/callback`: opens the pending sign-in, exchanges the code, keeps the user's client.
async fn callback(State(app): State<Arc<App>>, headers: HeaderMap, uri: Uri) -> Response {
    let Some(pending) = cookie(&headers, PENDING_COOKIE) else {
        return page(StatusCode::BAD_REQUEST, "Sign-in failed", "no sign-in is pending in this browser");
    };
    // The URI as axum gives it, origin-form: `/callback?code=..&state=..&iss=..`.
    let tokens = match app.flow.exchange_sealed(&pending, &uri.to_string()).await {
        Ok(tokens) => tokens,
        Err(error) => return page(StatusCode::BAD_REQUEST, "Sign-in failed", &error.to_string()),
    };
    let session = match random_hex(32) {
        Ok(session) => session,
        Err(error) => return page(StatusCode::INTERNAL_SERVER_ERROR, "Sign-in failed", &error.to_string()),
    };
    let store = app.stores.for_user(&session);
    if let Err(error) = store.save(&tokens).await {
        return page(StatusCode::INTERNAL_SERVER_ERROR, "Sign-in failed", &error.to_string());
    }
    match app.api.with_auth(Auth::user(app.flow.clone(), tokens).store(store)) {
        Ok(user) => {
            app.users.lock().unwrap_or_else(|e| e.into_inner()).insert(session.clone(), user);
            let mut response = redirect("/companies");
            set_cookie(&mut response, SESSION_COOKIE, &session, "/", 86_400);
            set_cookie(&mut response, PENDING_COOKIE, "", "/callback", 0);
            response
        }
        Err(error) => page(StatusCode::INTERNAL_SERVER_ERROR, "Sign-in failed", &error.to_string()),
    }
}

/// The client of this request's user: kept by this instance, or rebuilt from the store (a user
/// who signed in through another instance, or before a restart).
async fn user_client(app: &App, headers: &HeaderMap) -> Option<(String, Client)> {
    let session = cookie(headers, SESSION_COOKIE)?;
    if let Some(user) = app.users.lock().unwrap_or_else(|e| e.into_inner()).get(&session) {
        return Some((session, user.clone()));
    }
    let store = app.stores.for_user(&session);
    let tokens = store.load().await.ok()??;
    let user = app.api.with_auth(Auth::user(app.flow.clone(), tokens).store(store)).ok()?;
    app.users.lock().unwrap_or_else(|e| e.into_inner()).insert(session.clone(), user.clone());
    Some((session, user))
}

/// `/companies`: the first page of the user's companies, as an HTML table.
async fn companies(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let Some((session, user)) = user_client(&app, &headers).await else {
        return redirect("/login");
    };
    let page_result = user.companies().limit(20).send().await;
    let page_data = match page_result {
        Ok(page) => page,
        Err(error) if error.needs_reauthentication() => {
            app.users.lock().unwrap_or_else(|e| e.into_inner()).remove(&session);
            return redirect("/login");
        }
        Err(error) => return page(StatusCode::BAD_GATEWAY, "Companies", &error.to_string()),
    };
    let who = user.token_set().await.and_then(|tokens| tokens.id_token_claims().and_then(|c| c.sub.clone()));
    let mut rows = String::new();
    for company in &page_data.data {
        let status = company.status.as_ref().map_or("-", |s| s.as_str());
        rows.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            escape(&company.id),
            escape(&company.name),
            escape(status)
        ));
    }
    let body = format!(
        "<p>Signed in as <span id=\"user\">{}</span>. <a href=\"/logout\">Sign out</a></p>\n\
         <table id=\"companies\">\n<tr><th>id</th><th>name</th><th>status</th></tr>\n{rows}</table>\n\
         <p>{} of {} companies</p>",
        escape(who.as_deref().unwrap_or("unknown")),
        page_data.data.len(),
        page_data.total_count.map_or_else(|| "?".to_owned(), |n| n.to_string()),
    );
    Html(html("Companies", &body)).into_response()
}

/// `/logout`: revokes the user's tokens, clears the store, forgets the session.
async fn logout(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let Some((session, user)) = user_client(&app, &headers).await else {
        return redirect("/login");
    };
    app.users.lock().unwrap_or_else(|e| e.into_inner()).remove(&session);
    // The tokens are forgotten and the store cleared even when revocation fails.
    let message = match user.sign_out().await {
        Ok(()) => "You are signed out.".to_owned(),
        Err(error) => format!("You are signed out here; the authorization server said: {error}"),
    };
    let mut response = page(StatusCode::OK, "Signed out", &message);
    set_cookie(&mut response, SESSION_COOKIE, "", "/", 0);
    response
}

fn query_value(uri: &Uri, name: &str) -> Option<String> {
    let query = uri.query()?;
    business_records::url::form_urlencoded::parse(query.as_bytes())
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
        .filter(|value| !value.is_empty())
}

fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (key, value) = pair.trim().split_once('=')?;
            (key == name && !value.is_empty()).then(|| value.to_owned())
        })
}

/// `HttpOnly` and `SameSite=Lax`: the callback, a top-level navigation from the authorization
/// server, still carries it. (Add `Secure` when the app is served over https.)
fn set_cookie(response: &mut Response, name: &str, value: &str, path: &str, max_age: u32) {
    let cookie = format!("{name}={value}; Path={path}; Max-Age={max_age}; HttpOnly; SameSite=Lax");
    if let Ok(cookie) = HeaderValue::from_str(&cookie) {
        response.headers_mut().append(SET_COOKIE, cookie);
    }
}

fn redirect(to: &str) -> Response {
    match HeaderValue::from_str(to) {
        Ok(location) => (StatusCode::SEE_OTHER, [(LOCATION, location)]).into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

fn page(status: StatusCode, title: &str, message: &str) -> Response {
    (status, Html(html(title, &format!("<p>{}</p>", escape(message))))).into_response()
}

fn html(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title></head>\
         <body><h1>{title}</h1>\n{body}\n</body></html>"
    )
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// `bytes` random bytes from the operating system, in hex.
fn random_hex(bytes: usize) -> Result<String, getrandom::Error> {
    let mut buffer = vec![0u8; bytes];
    getrandom::getrandom(&mut buffer)?;
    Ok(buffer.iter().map(|b| format!("{b:02x}")).collect())
}
