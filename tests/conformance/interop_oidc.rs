//! Interop with an independent, certified OpenID provider: the npm package `oidc-provider`,
//! started on loopback with the API's paths by `tests/conformance/oidc/provider.mjs`.
//!
//! The SDK performs client credentials (HTTP Basic and form body), the full PKCE sign-in (a
//! scripted login and consent stand in for the browser), refreshes with rotation (directly and
//! through a `Client` after a 401, and one whose caller gave up while the provider's answer was
//! in flight), reads the discovery document, introspects, signs a user out (RFC 7009: the
//! provider then refuses the refresh token), and `TokenVerifier` validates the provider's
//! access tokens. Last, the provider's signing key changes, and a sign-in right after it
//! verifies through a flow that had the old key cached.
//!
//! The package is installed with npm into `target/tmp/oidc-interop` on first use. Without
//! Node.js the runner reports the case ignored, except with `CI=true`, where it fails.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use business_records::auth::{
    AuthServerMetadata, AuthorizationCodeFlow, LoopbackRedirect, MemoryTokenStore, TokenIntrospector,
    TokenSet, TokenStore, TokenVerifier,
};
use business_records::error::ErrorCode;
use business_records::{Auth, Client};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

crate::cases! {
    Node:
        the_sdk_interoperates_with_oidc_provider [multi_thread(2)];
}

/// The provider release the test pins.
const OIDC_PROVIDER_VERSION: &str = "9.13.3";
/// The API identifier the provider puts into `aud` (see `provider.mjs`).
const AUDIENCE: &str = "business-records-api";
const BACKEND: (&str, &str) = ("interop-backend", "interop-backend-secret");
const BACKEND_POST: (&str, &str) = ("interop-backend-post", "interop-backend-post-secret");
const APP: &str = "interop-app";

/// A running provider; killed on drop.
struct Provider {
    child: Child,
    issuer: String,
    log: PathBuf,
    /// The lines it prints after the first.
    output: std::sync::mpsc::Receiver<String>,
}

impl Provider {
    /// Replaces the provider's signing key with a new one (`provider.mjs` withdraws the old
    /// key); returns the new key id.
    fn rotate_key(&mut self) -> Result<String, String> {
        let stdin = self.child.stdin.as_mut().ok_or("no stdin")?;
        stdin.write_all(b"rotate\n").and_then(|()| stdin.flush()).map_err(|e| e.to_string())?;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.output.recv_timeout(left).map_err(|_| "the provider did not rotate its key")?;
            let printed: Option<serde_json::Value> = serde_json::from_str(&line).ok();
            if let Some(kid) = printed.as_ref().and_then(|p| p["rotated"].as_str()) {
                return Ok(kid.to_owned());
            }
        }
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // The log is kept only when the test failed.
        if !std::thread::panicking() {
            let _ = std::fs::remove_file(&self.log);
        } else {
            eprintln!("oidc-provider log: {}", self.log.display());
        }
    }
}

fn run(command: &mut Command) -> Result<String, String> {
    let output = command.output().map_err(|e| format!("cannot run {command:?}: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "{command:?} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).lines().last().unwrap_or_default()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// Serialises installs between test processes sharing the target directory.
struct InstallLock(PathBuf);

impl InstallLock {
    fn acquire(dir: &Path) -> Result<Self, String> {
        let path = dir.join(".install.lock");
        let started = Instant::now();
        loop {
            match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(_) => return Ok(InstallLock(path)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let stale = std::fs::metadata(&path)
                        .and_then(|m| m.modified())
                        .is_ok_and(|t| t.elapsed().unwrap_or_default() > Duration::from_secs(300));
                    if stale {
                        let _ = std::fs::remove_file(&path);
                    } else if started.elapsed() > Duration::from_secs(300) {
                        return Err("timed out waiting for another npm install".into());
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(e) => return Err(format!("cannot create {}: {e}", path.display())),
            }
        }
    }
}

impl Drop for InstallLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Installs the pinned `oidc-provider` (once) and starts it.
fn start_provider() -> Result<Provider, String> {
    let node = run(Command::new("node").arg("--version"))?;
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("oidc-interop");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let installed = || {
        std::fs::read_to_string(dir.join("node_modules/oidc-provider/package.json"))
            .is_ok_and(|p| p.contains(&format!("\"version\": \"{OIDC_PROVIDER_VERSION}\"")))
    };
    if !installed() {
        let _lock = InstallLock::acquire(&dir)?;
        if !installed() {
            println!("installing oidc-provider@{OIDC_PROVIDER_VERSION} with npm (node {node})");
            run(Command::new("npm")
                .args(["install", "--prefix"])
                .arg(&dir)
                .args(["--no-audit", "--no-fund", "--loglevel=error"])
                .arg(format!("oidc-provider@{OIDC_PROVIDER_VERSION}")))?;
        }
    }
    // The script sits beside node_modules so its import resolves; one copy per process.
    let script = dir.join(format!("provider-{}.mjs", std::process::id()));
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/oidc/provider.mjs"), &script)
        .map_err(|e| format!("cannot copy provider.mjs: {e}"))?;
    let log = dir.join(format!("provider-{}.log", std::process::id()));
    let stderr = std::fs::File::create(&log).map_err(|e| format!("cannot create log: {e}"))?;
    let mut child = Command::new("node")
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .map_err(|e| format!("cannot start node: {e}"))?;
    let stdout = child.stdout.take().ok_or_else(|| "no stdout".to_owned())?;
    let (lines, output) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // Read to the end: the provider logs to stdout and must never write into a closed pipe.
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let _ = lines.send(line);
        }
    });
    let mut provider = Provider { child, issuer: String::new(), log, output };
    let first = provider
        .output
        .recv_timeout(Duration::from_secs(30))
        .map_err(|_| format!("the provider did not start; see {}", provider.log.display()))?;
    let announced: serde_json::Value = serde_json::from_str(&first)
        .map_err(|_| format!("unexpected output {first:?}; see {}", provider.log.display()))?;
    provider.issuer = announced["issuer"].as_str().unwrap_or_default().to_owned();
    let _ = std::fs::remove_file(&script);
    Ok(provider)
}

/// The `sub` and `scope` of every token the API accepted.
type Seen = Arc<Mutex<Vec<(Option<String>, Option<String>)>>>;

/// A resource server in front of the provider: answers `GET /v1/companies` for tokens
/// `TokenVerifier` accepts, and refuses the first token of each subject in `reject_once`
/// with 401 `invalid_token` (as after a revocation).
struct Api {
    verifier: TokenVerifier,
    seen: Seen,
    reject_once: Arc<Mutex<Vec<String>>>,
}

impl Respond for Api {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let token = request
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default();
        let refused = |description: &str| {
            ResponseTemplate::new(401)
                .insert_header("www-authenticate", "Bearer error=\"invalid_token\"")
                .set_body_json(
                    serde_json::json!({"error": "invalid_token", "error_description": description}),
                )
        };
        let claims = match self.verifier.verify_cached(token) {
            Ok(claims) => claims,
            Err(e) => return refused(&e.to_string()),
        };
        let mut reject = self.reject_once.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = reject.iter().position(|s| Some(s) == claims.sub.as_ref()) {
            reject.remove(at);
            return refused("revoked");
        }
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).push((claims.sub.clone(), claims.scope.clone()));
        ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "data": [{"id": "cmp_1", "name": "Acme", "status": "active",
                      "createdAt": "2024-01-01T00:00:00Z", "updatedAt": "2024-01-02T00:00:00Z"}],
            "pagination": {"hasMore": false}
        }))
    }
}

/// Cookies of the scripted browser, by name (paths are ignored: every cookie goes to every
/// request to the provider, which is harmless here).
#[derive(Default)]
struct Cookies(BTreeMap<String, String>);

impl Cookies {
    fn update(&mut self, response: &reqwest::Response) {
        for value in response.headers().get_all("set-cookie") {
            let Some((name, rest)) = value.to_str().ok().and_then(|v| v.split_once('=')) else {
                continue;
            };
            let value = rest.split(';').next().unwrap_or_default();
            if value.is_empty() {
                self.0.remove(name);
            } else {
                self.0.insert(name.to_owned(), value.to_owned());
            }
        }
    }

    fn header(&self) -> String {
        self.0.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ")
    }
}

/// Stands in for the browser: follows the provider's redirects, signs `login` in with the
/// provider's development login form, grants consent, and stops at the redirect to the app,
/// whose URL (the callback) it returns.
async fn scripted_login(authorize_url: &str, redirect_uri: &str, login: &str) -> Result<String, String> {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())?;
    let mut cookies = Cookies::default();
    let mut next = authorize_url.to_owned();
    for _ in 0..12 {
        if next.starts_with(redirect_uri) {
            return Ok(next);
        }
        let response = http
            .get(&next)
            .header("cookie", cookies.header())
            .send()
            .await
            .map_err(|e| format!("GET {next}: {e}"))?;
        cookies.update(&response);
        let response = if response.status().is_redirection() {
            response
        } else {
            // An interaction page: the login form, then the consent form.
            let page = response.text().await.map_err(|e| e.to_string())?;
            let form: Vec<(&str, &str)> = if page.contains("name=\"prompt\" value=\"login\"") {
                vec![("prompt", "login"), ("login", login), ("password", "any")]
            } else if page.contains("name=\"prompt\" value=\"consent\"") {
                vec![("prompt", "consent")]
            } else {
                return Err(format!("unexpected page at {next}"));
            };
            let posted = http
                .post(&next)
                .header("cookie", cookies.header())
                .form(&form)
                .send()
                .await
                .map_err(|e| e.to_string())?;
            cookies.update(&posted);
            posted
        };
        let location = response
            .headers()
            .get("location")
            .and_then(|l| l.to_str().ok())
            .ok_or_else(|| format!("{} without a redirect at {next}", response.status()))?;
        next = url::Url::parse(&next)
            .and_then(|base| base.join(location))
            .map_err(|e| e.to_string())?
            .to_string();
    }
    Err("too many redirects".into())
}

/// The PKCE sign-in of `login` through a loopback redirect and the scripted browser; returns
/// the flow, the verified tokens and the callback URL.
async fn sign_in(issuer: &str, login: &str) -> (AuthorizationCodeFlow, TokenSet, String) {
    let redirect = LoopbackRedirect::bind().await.expect("bind").timeout(Duration::from_secs(30));
    let redirect_uri = redirect.redirect_uri().to_owned();
    let flow = AuthorizationCodeFlow::new(issuer, APP, &redirect_uri).expect("flow").scopes([
        "openid",
        "offline_access",
        "api/read",
    ]);
    let request = flow.authorize_url();
    let browser = async {
        let callback = scripted_login(request.url(), &redirect_uri, login).await?;
        reqwest::get(callback).await.map_err(|e| format!("delivering the callback: {e}"))
    };
    let (callback, delivered) = tokio::join!(redirect.wait_for_callback_of(&request), browser);
    delivered.expect("scripted login");
    let callback = callback.expect("callback");
    let tokens = flow.exchange(request, &callback).await.expect("code exchange with oidc-provider");
    (flow, tokens, callback)
}

/// The sign-in of `login` through `flow`, whose redirect URI nobody listens on: the callback
/// is the provider's last redirect.
async fn sign_in_through(flow: &AuthorizationCodeFlow, login: &str) -> TokenSet {
    let request = flow.authorize_url();
    let callback = scripted_login(request.url(), flow.redirect_uri(), login).await.expect("scripted login");
    flow.exchange(request, &callback).await.expect("code exchange with oidc-provider")
}

/// The `kid` in the header of `tokens`' ID token.
fn id_token_key_id(tokens: &TokenSet) -> String {
    use base64::Engine as _;
    let token = tokens.id_token.as_ref().expect("an id token").secret();
    let header = token.split('.').next().expect("a header");
    let header = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(header).expect("base64url");
    let header: serde_json::Value = serde_json::from_slice(&header).expect("json");
    header["kid"].as_str().expect("a kid").to_owned()
}

/// Relays TCP connections to `upstream`, holding every chunk of its answers back for `delay`:
/// the provider has processed a request while its response is still in flight.
async fn slow_relay(upstream: std::net::SocketAddr, delay: Duration) -> std::net::SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Ok(server) = tokio::net::TcpStream::connect(upstream).await else { return };
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                let requests = tokio::io::copy(&mut client_read, &mut server_write);
                let answers = async {
                    let mut buffer = vec![0u8; 16 * 1024];
                    while let Ok(n @ 1..) = server_read.read(&mut buffer).await {
                        tokio::time::sleep(delay).await;
                        if client_write.write_all(&buffer[..n]).await.is_err() {
                            break;
                        }
                    }
                };
                let _ = tokio::join!(requests, answers);
            });
        }
    });
    address
}

async fn the_sdk_interoperates_with_oidc_provider() {
    let mut provider = tokio::task::spawn_blocking(start_provider)
        .await
        .expect("setup task")
        .unwrap_or_else(|reason| panic!("oidc-provider is not available: {reason}"));
    let issuer = provider.issuer.clone();
    let started = Instant::now();

    // Discovery: the provider serves the API's paths.
    let metadata = AuthServerMetadata::discover(&issuer).await.expect("discovery");
    assert_eq!(metadata.issuer, issuer);
    let at = |path: &str| Some(url::Url::parse(&format!("{issuer}{path}")).expect("url"));
    assert_eq!(metadata.authorization_endpoint, at("/oauth2/authorize"));
    assert_eq!(metadata.token_endpoint, at("/oauth2/token"));
    assert_eq!(metadata.jwks_uri, at("/.well-known/jwks.json"));
    assert_eq!(metadata.revocation_endpoint, at("/oauth2/revoke"));
    assert!(metadata.supports_pkce_s256());
    assert!(metadata.authorization_response_iss_parameter_supported);

    // The resource server, validating with TokenVerifier against the provider's JWKS.
    let jwks_url = format!("{issuer}/.well-known/jwks.json");
    let jwks = reqwest::get(&jwks_url).await.expect("jwks").text().await.expect("jwks body");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let reject_once = Arc::new(Mutex::new(Vec::new()));
    let api = MockServer::builder().start().await;
    Mock::given(wiremock::matchers::path("/v1/companies"))
        .respond_with(Api {
            verifier: TokenVerifier::from_jwks(&jwks, issuer.clone(), AUDIENCE).expect("verifier"),
            seen: Arc::clone(&seen),
            reject_once: Arc::clone(&reject_once),
        })
        .mount(&api)
        .await;
    let remote = TokenVerifier::new(&jwks_url, issuer.clone(), AUDIENCE).expect("verifier");

    // Client credentials, HTTP Basic and form body.
    for ((id, secret), in_body) in [(BACKEND, false), (BACKEND_POST, true)] {
        let mut auth = Auth::client_credentials(&issuer, id, secret).scopes(["api/read"]);
        if in_body {
            auth = auth.credentials_in_body();
        }
        let client = Client::builder().base_url(api.uri()).auth(auth).build().expect("client");
        let page = client.companies().send().await.expect("client credentials against oidc-provider");
        assert_eq!(page.data[0].name, "Acme");
        let (sub, scope) = seen.lock().expect("lock").last().cloned().expect("the API saw the token");
        assert_eq!((sub.as_deref(), scope.as_deref()), (Some(id), Some("api/read")));
    }
    let wrong = Client::builder()
        .base_url(api.uri())
        .auth(Auth::client_credentials(&issuer, BACKEND.0, "wrong"))
        .build()
        .expect("client");
    let err = wrong.companies().send().await.expect_err("a wrong secret");
    assert_eq!(err.code(), Some(&ErrorCode::InvalidClient));
    assert!(err.needs_reauthentication());

    // The PKCE sign-in of a native app through the loopback redirect.
    let (flow, tokens, callback) = sign_in(&issuer, "alice").await;
    assert!(callback.contains("iss="), "oidc-provider sends iss (RFC 9207): {callback}");
    let id = tokens.id_token_claims().expect("a verified id token");
    assert_eq!((id.sub.as_deref(), id.iss.as_str()), (Some("alice"), issuer.as_str()));
    assert_eq!(id.aud, [APP]);
    let access =
        remote.verify(tokens.access_token.secret()).await.expect("TokenVerifier accepts the user's token");
    assert_eq!((access.sub.as_deref(), access.client_id.as_deref()), (Some("alice"), Some(APP)));
    assert!(access.has_scope("api/read"));

    // A refresh with rotation; the retired token is then refused as reuse.
    let first_refresh = tokens.refresh_token.clone().expect("a refresh token");
    let refreshed = flow.refresh(&tokens).await.expect("refresh");
    assert_ne!(refreshed.refresh_token.as_ref(), Some(&first_refresh), "oidc-provider rotates");
    assert!(refreshed.id_token_claims().is_some());
    remote.verify(refreshed.access_token.secret()).await.expect("the refreshed token verifies");
    let err = flow.refresh(&tokens).await.expect_err("reuse of a rotated refresh token");
    assert_eq!(err.code(), Some(&ErrorCode::InvalidGrant));
    assert!(err.needs_reauthentication());

    // Through a Client: a 401 makes it refresh at the provider, save the rotation, resend.
    let (flow, tokens, _) = sign_in(&issuer, "bob").await;
    let store = MemoryTokenStore::new();
    let client = Client::builder()
        .base_url(api.uri())
        .auth(Auth::user(flow, tokens.clone()).store(store.clone()))
        .build()
        .expect("client");
    reject_once.lock().expect("lock").push("bob".into());
    client.companies().send().await.expect("recovers after one refresh");
    let saved = store.get().expect("the rotated tokens were saved");
    assert_ne!(saved.refresh_token, tokens.refresh_token);
    assert_eq!(seen.lock().expect("lock").last().and_then(|(sub, _)| sub.clone()).as_deref(), Some("bob"));

    // A refresh whose caller gives up while the provider's answer is still on its way: the
    // provider has rotated the refresh token, the client keeps the answer anyway, and the next
    // call succeeds with it.
    let (_, tokens, _) = sign_in(&issuer, "carol").await;
    let provider_addr = url::Url::parse(&issuer).expect("issuer").socket_addrs(|| None).expect("address")[0];
    let relay = slow_relay(provider_addr, Duration::from_millis(400)).await;
    let mut slow = metadata.clone();
    slow.token_endpoint = Some(url::Url::parse(&format!("http://{relay}/oauth2/token")).expect("url"));
    let slow_flow = AuthorizationCodeFlow::from_metadata(&slow, APP, "http://127.0.0.1:1/callback")
        .expect("flow")
        .scopes(["openid", "offline_access", "api/read"]);
    let store = MemoryTokenStore::new();
    let client = Client::builder()
        .base_url(api.uri())
        .auth(Auth::user(slow_flow.clone(), tokens.clone()).store(store.clone()))
        .build()
        .expect("client");
    reject_once.lock().expect("lock").push("carol".into());
    let cancelled = tokio::time::timeout(Duration::from_millis(150), client.companies().send()).await;
    assert!(cancelled.is_err(), "the caller gave up while the refresh answer was in flight");
    crate::support::eventually("the refresh answer kept", || store.saves() == 1).await;
    let rotated = store.get().expect("saved");
    assert_ne!(rotated.refresh_token, tokens.refresh_token, "oidc-provider rotated, the client kept it");
    client.companies().send().await.expect("the next call succeeds with the rotated token");
    assert_eq!(seen.lock().expect("lock").last().and_then(|(sub, _)| sub.clone()).as_deref(), Some("carol"));
    assert_eq!(store.saves(), 1, "no second refresh was needed");
    let again = slow_flow.refresh(&rotated).await.expect("the kept refresh token is the current one");
    assert_ne!(again.refresh_token, rotated.refresh_token);

    // Introspection: an unknown token is inactive; JWT access tokens are refused by design.
    let introspector =
        TokenIntrospector::from_metadata(&metadata, BACKEND.0, BACKEND.1).expect("introspector");
    assert!(!introspector.introspect("not-a-token").await.expect("introspection").active);
    let err = introspector.introspect(saved.access_token.secret()).await.expect_err("structured tokens");
    assert_eq!(err.code(), Some(&ErrorCode::Other("unsupported_token_type".into())));

    // Sign-out: the refresh token is revoked at the provider, which then refuses it; its JWT
    // access tokens it will not revoke (`unsupported_token_type`), which is no failure.
    let (_, tokens, _) = sign_in(&issuer, "dave").await;
    let flow = AuthorizationCodeFlow::from_metadata(&metadata, APP, "http://127.0.0.1:1/callback")
        .expect("flow")
        .scopes(["openid", "offline_access", "api/read"]);
    let store = MemoryTokenStore::new();
    store.save(&tokens).await.expect("saved");
    let app =
        Client::builder().base_url(api.uri()).auth(Auth::static_token("unused")).build().expect("client");
    let dave = app.with_auth(Auth::user(flow.clone(), tokens.clone()).store(store.clone())).expect("derived");
    dave.companies().send().await.expect("dave lists");
    dave.sign_out().await.expect("sign-out at oidc-provider");
    assert!(store.get().is_none(), "the store was cleared");
    assert!(dave.companies().send().await.expect_err("signed out").needs_reauthentication());
    let err = flow.refresh(&tokens).await.expect_err("the revoked refresh token");
    assert_eq!(err.code(), Some(&ErrorCode::InvalidGrant));
    flow.revoke(&tokens).await.expect("revoking it again is no error");

    // The provider's signing key changes. A flow that verified an ID token under the old key
    // signs the next user in with the new one (one JWKS fetch finds it), and the resource
    // server's verifier accepts the new access token.
    let flow = AuthorizationCodeFlow::new(&issuer, APP, "http://127.0.0.1:1/callback")
        .expect("flow")
        .scopes(["openid", "offline_access", "api/read"]);
    let before = sign_in_through(&flow, "dave").await;
    assert_eq!(id_token_key_id(&before), "interop-key-1");
    let rotated = tokio::task::block_in_place(|| provider.rotate_key()).expect("a new signing key");
    let after = sign_in_through(&flow, "erin").await;
    assert_eq!(id_token_key_id(&after), rotated, "the new ID token is signed with the new key");
    assert_eq!(after.id_token_claims().and_then(|c| c.sub.as_deref()), Some("erin"));
    let access = remote.verify(after.access_token.secret()).await.expect("the new key, fetched");
    assert_eq!(access.sub.as_deref(), Some("erin"));

    println!(
        "oidc-provider {OIDC_PROVIDER_VERSION} interop passed in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
