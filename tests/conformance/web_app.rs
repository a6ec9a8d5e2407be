//! `examples/web_app.rs` end to end, over real HTTP: three users signed in at once through
//! browsers with cookie jars, one signing out while the others go on, and one real sign-in
//! through headless Chromium driven over WebDriver (plain HTTP and JSON).
//!
//! The example runs as its own process (`target/<profile>/examples/web_app`, which `cargo test`
//! builds) against a reference server of the case's, so that the case can ask the server what
//! became of each user's grant. Chromium and chromedriver come from Debian (`chromium`,
//! `chromium-driver`); without them the case is reported ignored, or failed with `CI=true`.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use business_records_reference_server::ReferenceServer;
use serde_json::{Value, json};

crate::cases! {
    ServerControl:
        three_users_sign_in_through_the_web_app_at_once_and_one_signs_out [multi_thread(2)];
    (ServerControl, Chromium):
        a_real_browser_signs_in_through_the_web_app [multi_thread(2)];
}

const USERS: [&str; 3] = ["alice", "bob", "carol"];

/// The example, running against `server`; killed on drop.
struct WebApp {
    child: Child,
    url: String,
}

impl Drop for WebApp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `target/<profile>/examples/<name>`, beside the directory of this test binary.
fn example_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile = exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>/deps");
    let binary = profile.join("examples").join(name);
    assert!(
        binary.exists(),
        "{} is missing: `cargo test` builds the examples, a filtered run may not; build it with \
         `cargo build --example {name}` (same profile) and run the case again",
        binary.display()
    );
    binary
}

impl WebApp {
    /// Starts the example on a free port, pointed at `server` as at a deployment, and waits
    /// for its `listening on` line.
    fn start(server: &ReferenceServer) -> WebApp {
        let mut child = Command::new(example_binary("web_app"))
            .args(["--port", "0"])
            .env("BUSINESS_RECORDS_BASE_URL", server.base_url())
            .env("BUSINESS_RECORDS_AUTH_URL", server.auth_url())
            .env("BUSINESS_RECORDS_CLIENT_ID", server.client_id())
            .env("BUSINESS_RECORDS_CLIENT_SECRET", server.client_secret())
            .env("BUSINESS_RECORDS_APP_CLIENT_ID", server.public_client_id())
            .env("WEB_APP_SEALING_SECRET", "the web app conformance secret, 32 bytes or more")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the web_app example starts");
        let stdout = child.stdout.take().expect("its stdout");
        let (sender, first_line) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let _ = sender.send(lines.next().and_then(Result::ok).unwrap_or_default());
            for _ in lines {} // keep reading: the example never writes into a closed pipe
        });
        let line = first_line.recv_timeout(Duration::from_secs(30)).unwrap_or_default();
        let url =
            line.strip_prefix("listening on ").unwrap_or_else(|| panic!("unexpected first line {line:?}"));
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        WebApp { url: url.to_owned(), child }
    }
}

/// What a browser does that matters here: follows nothing by itself, keeps the app's cookies.
struct Browser {
    http: reqwest::Client,
    app: String,
    cookies: BTreeMap<String, String>,
}

/// One answer: status, `Location`, body.
struct Answer {
    status: u16,
    location: Option<String>,
    body: String,
}

impl Browser {
    fn new(app: &WebApp) -> Browser {
        let http =
            reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
        Browser { http, app: app.url.clone(), cookies: BTreeMap::new() }
    }

    async fn get(&mut self, url: &str) -> Answer {
        let url = if url.starts_with('/') { format!("{}{url}", self.app) } else { url.to_owned() };
        let mut request = self.http.get(&url);
        if url.starts_with(&self.app) && !self.cookies.is_empty() {
            let header: Vec<String> = self.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect();
            request = request.header("cookie", header.join("; "));
        }
        let response = request.send().await.unwrap_or_else(|e| panic!("GET {url}: {e}"));
        for value in response.headers().get_all("set-cookie") {
            let value = value.to_str().expect("ascii");
            assert!(value.contains("HttpOnly") && value.contains("SameSite=Lax"), "{value}");
            let (name, rest) = value.split_once('=').expect("name=value");
            match rest.split(';').next().unwrap_or_default() {
                "" => self.cookies.remove(name),
                cookie => self.cookies.insert(name.to_owned(), cookie.to_owned()),
            };
        }
        let status = response.status().as_u16();
        let location = response.headers().get("location").map(|l| l.to_str().expect("ascii").to_owned());
        Answer { status, location, body: response.text().await.expect("a body") }
    }

    /// `/login?user=..` to `/companies`, as a browser follows the redirects; returns the page.
    async fn sign_in(&mut self, user: &str) -> String {
        let login = self.get(&format!("/login?user={user}")).await;
        assert_eq!(login.status, 303, "{}", login.body);
        assert!(self.cookies.contains_key("pending_sign_in"), "the pending sign-in travels in a cookie");
        let authorize = login.location.expect("to the authorization server");
        assert!(authorize.contains(&format!("login_hint={user}")), "{authorize}");
        let back = self.get(&authorize).await;
        assert_eq!(back.status, 302);
        let callback = self.get(&back.location.expect("back to the app")).await;
        assert_eq!(
            (callback.status, callback.location.as_deref()),
            (303, Some("/companies")),
            "{}",
            callback.body
        );
        assert!(!self.cookies.contains_key("pending_sign_in"), "cleared once used");
        assert!(self.cookies.contains_key("session"));
        let page = self.get("/companies").await;
        assert_eq!(page.status, 200, "{}", page.body);
        page.body
    }
}

/// Checks the companies page of `user`: who is signed in, and the first 20 companies.
fn check_companies_page(page: &str, user: &str, server: &ReferenceServer) {
    assert!(page.contains(&format!("<span id=\"user\">{user}</span>")), "{page}");
    let dataset = server.dataset();
    let mut ids: Vec<&str> = dataset.companies().iter().map(|c| c.id()).collect();
    ids.sort_unstable();
    for id in &ids[..20] {
        assert!(page.contains(&format!("<tr><td>{id}</td>")), "{id} missing from {page}");
    }
    assert_eq!(page.matches("<tr><td>").count(), 20, "{page}");
}

async fn server_with_users() -> ReferenceServer {
    ReferenceServer::builder().companies(30).users(USERS).start().await
}

async fn three_users_sign_in_through_the_web_app_at_once_and_one_signs_out() {
    let server = server_with_users().await;
    let app = WebApp::start(&server);
    let mut browsers: Vec<Browser> = USERS.iter().map(|_| Browser::new(&app)).collect();
    let pages = futures::future::join_all(
        browsers.iter_mut().zip(USERS).map(|(browser, user)| browser.sign_in(user)),
    )
    .await;
    for (page, user) in pages.iter().zip(USERS) {
        check_companies_page(page, user, &server);
        assert_eq!(server.active_refresh_tokens(user).len(), 1, "{user}");
    }

    let alice_refresh = server.active_refresh_tokens("alice").remove(0);
    let signed_out = browsers[0].get("/logout").await;
    assert_eq!(signed_out.status, 200);
    assert!(signed_out.body.contains("You are signed out."), "{}", signed_out.body);
    let after = browsers[0].get("/companies").await;
    assert_eq!((after.status, after.location.as_deref()), (303, Some("/login")), "back to the sign-in");
    for (browser, user) in browsers.iter_mut().zip(USERS).skip(1) {
        let page = browser.get("/companies").await;
        assert_eq!(page.status, 200, "{user}: {}", page.body);
        check_companies_page(&page.body, user, &server);
    }

    // The server refuses the signed-out refresh token; the others' grants stand.
    assert!(server.active_refresh_tokens("alice").is_empty());
    let refused = reqwest::Client::new()
        .post(server.token_url())
        .form(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", alice_refresh.as_str()),
            ("client_id", server.public_client_id()),
        ])
        .send()
        .await
        .expect("token request");
    assert_eq!(refused.status(), 400);
    let body: Value = refused.json().await.expect("json");
    assert_eq!(body["error"], "invalid_grant");
    for user in &USERS[1..] {
        assert_eq!(server.active_refresh_tokens(user).len(), 1, "{user}");
    }
}

/// A chromedriver on a free loopback port; killed on drop.
struct Chromedriver {
    child: Child,
    url: String,
    profile: PathBuf,
}

impl Drop for Chromedriver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

impl Chromedriver {
    async fn start() -> Chromedriver {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let profile = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("chromium-profile-{}", std::process::id()));
        let driver = Chromedriver { child, url: format!("http://127.0.0.1:{port}"), profile };
        for _ in 0..100 {
            let ready = reqwest::get(format!("{}/status", driver.url)).await;
            if let Ok(status) = ready {
                let status: Value = status.json().await.unwrap_or_default();
                if status["value"]["ready"] == true {
                    return driver;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("chromedriver did not become ready");
    }

    /// One WebDriver command; its `value`.
    async fn command(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut request = reqwest::Client::new().request(method, format!("{}{path}", self.url));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let answer: Value = request.send().await.expect("webdriver").json().await.expect("json");
        assert!(answer["value"].get("error").is_none(), "{path}: {answer}");
        answer["value"].clone()
    }
}

async fn a_real_browser_signs_in_through_the_web_app() {
    let server = server_with_users().await;
    let app = WebApp::start(&server);
    let driver = Chromedriver::start().await;
    let args = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
    ];
    let mut args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    args.push(format!("--user-data-dir={}", driver.profile.display()));
    let capabilities = json!({"capabilities": {"alwaysMatch": {
        "browserName": "chrome",
        "goog:chromeOptions": {"args": args},
    }}});
    let session = driver.command(reqwest::Method::POST, "/session", Some(capabilities)).await;
    let id = session["sessionId"].as_str().expect("a session id").to_owned();
    let login = format!("{}/login?user=bob", app.url);
    driver.command(reqwest::Method::POST, &format!("/session/{id}/url"), Some(json!({"url": login}))).await;
    let landed = driver.command(reqwest::Method::GET, &format!("/session/{id}/url"), None).await;
    let source = driver.command(reqwest::Method::GET, &format!("/session/{id}/source"), None).await;
    driver.command(reqwest::Method::DELETE, &format!("/session/{id}"), None).await;
    assert_eq!(landed, json!(format!("{}/companies", app.url)), "the browser followed every redirect");
    check_companies_page(source.as_str().expect("the page source"), "bob", &server);
    assert_eq!(server.active_refresh_tokens("bob").len(), 1);
}
