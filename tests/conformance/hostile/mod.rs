//! A hostile server and a careless neighbour on the same machine, over real HTTP: shared file
//! stores under rotation, metadata with plain-http endpoints, floods of unknown session keys,
//! forged loopback callbacks, credentials in URLs, and secrets too short to seal with; the
//! numbers a server sends ([`numbers`]) and the pages it sends ([`pages`]).

pub mod gate;
pub mod numbers;
pub mod pages;
pub mod refresh;
pub mod shown;
#[cfg(unix)]
pub mod stores;
#[cfg(not(unix))]
pub mod stores {
    //! Unix only: FIFOs, file modes and signals.
    pub const CASES: &[crate::harness::Case] = &[];
}

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use business_records::auth::{
    AuthServerMetadata, AuthorizationCodeFlow, DirectoryTokenStore, FileTokenStore, KeyedTokenStore,
    LoopbackRedirect, MemoryKeyedStore, TokenIntrospector, TokenSet, TokenStore,
};
use business_records::{Auth, Client, Error};
use business_records_reference_server::ReferenceServer;
use futures::future::join_all;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::auth_user::{browse, sign_in};
use crate::harness;
use crate::support::{WithoutRefreshLock, stored_user_client};

/// The session key both processes of [`two_processes_sharing_a_directory_present_each_refresh_token_once`] read.
const SESSION: &str = "session-of-two-processes";
/// How the parent tells a child process where the servers and the directory are.
const CHILD_SETTINGS: [&str; 4] = [
    "BUSINESS_RECORDS_HOSTILE_BASE_URL",
    "BUSINESS_RECORDS_HOSTILE_AUTH_URL",
    "BUSINESS_RECORDS_HOSTILE_CLIENT_ID",
    "BUSINESS_RECORDS_HOSTILE_DIR",
];

crate::cases! {
    ServerControl:
        two_processes_sharing_a_directory_present_each_refresh_token_once [multi_thread(2)];
    ChildProcess:
        a_process_of_the_shared_directory;
    ServerControl:
        instances_sharing_a_file_or_directory_store_never_present_a_refresh_token_twice,
        without_the_file_lock_the_second_instance_loses_the_sign_in,
        metadata_with_plain_http_endpoints_is_refused_before_anything_is_sent,
        unknown_session_keys_leave_the_user_maps_as_they_were,
        a_forged_callback_is_answered_400_and_the_real_one_completes_the_sign_in,
        debug_and_errors_show_no_password_and_no_query_value,
        a_short_secret_is_refused_for_sealing_and_for_shared_user_stores;
}

/// A directory of its own under the target's temporary directory (which, unlike `/tmp` on some
/// machines, a child process run as another user can reach), removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let unique = format!("business-records-hostile-{name}-{}-{}", std::process::id(), fastrand::u64(..));
        Scratch(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(unique))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The catalogue's case `name` (`module::case`, a [`harness::Need::ChildProcess`] case) as a
/// process of its own, with `settings` in its environment.
pub fn child_process(name: &str, settings: &[(&str, String)]) -> std::process::Command {
    let exe = std::env::current_exe().expect("the test binary");
    let mut command = std::process::Command::new(exe);
    command.args(["--exact", name, "--ignored", "--nocapture"]).env(harness::CHILD, "1");
    command.envs(settings.iter().map(|(name, value)| (name, value)));
    command
}

/// A child process's client of the user `session` of a `DirectoryTokenStore`, against the
/// servers and in the directory its parent named in `settings` (the base URL, the
/// authorization server's, the client id, the directory): what another instance of the app
/// builds.
pub async fn child_client(settings: [&str; 4], session: &str, timeout: Duration) -> Client {
    let [base_url, auth_url, client_id, dir] = settings.map(|name| std::env::var(name).expect(name));
    let store = DirectoryTokenStore::new(dir).for_user(session);
    let tokens = store.load().await.expect("load").expect("a stored set");
    let flow = AuthorizationCodeFlow::new(auth_url, client_id, "http://127.0.0.1:9/callback")
        .expect("flow")
        .scopes(["openid", "profile", "api/read"]);
    let auth = Auth::user(flow, tokens).store(store);
    Client::builder().base_url(base_url).auth(auth).timeout(timeout).build().expect("client")
}

/// The user's store as each instance makes it: a `FileTokenStore` over one file, or a
/// `DirectoryTokenStore`'s store for one session.
fn shared_store(dir: &Path, directory: bool) -> Arc<dyn TokenStore> {
    if directory {
        DirectoryTokenStore::new(dir).for_user("session-7f3a")
    } else {
        Arc::new(FileTokenStore::new(dir.join("tokens.json")))
    }
}

/// Rounds of "every access token revoked, then each instance asks for a page": one after the
/// other, then both at once. Returns the refresh-token requests the server received.
async fn rounds(server: &ReferenceServer, instances: &[Client]) -> usize {
    let before = server.token_requests_for("refresh_token");
    for _ in 0..3 {
        server.expire_tokens();
        for client in instances {
            client.companies().limit(1).send().await.expect("no instance loses the sign-in");
        }
    }
    server.expire_tokens();
    for outcome in join_all(instances.iter().map(|c| async { c.companies().limit(1).send().await })).await {
        outcome.expect("no instance loses the sign-in");
    }
    server.token_requests_for("refresh_token") - before
}

/// Two instances share one store (as the README recommends) while the server rotates refresh
/// tokens: whichever asks first refreshes under the lock file, the other finds the new set in
/// the file, and the retired refresh token is never presented again.
async fn instances_sharing_a_file_or_directory_store_never_present_a_refresh_token_twice() {
    let server = ReferenceServer::builder().companies(3).refresh_token_rotation(true).start().await;
    for directory in [false, true] {
        let scratch = Scratch::new("shared");
        let (flow, tokens) = sign_in(&server).await;
        shared_store(&scratch.0, directory).save(&tokens).await.expect("first save");
        let instances = [
            stored_user_client(&server, &flow, shared_store(&scratch.0, directory)).await,
            stored_user_client(&server, &flow, shared_store(&scratch.0, directory)).await,
        ];
        assert_eq!(rounds(&server, &instances).await, 4, "one refresh a round for both instances");
        assert_eq!(server.refresh_token_reuses(), 0, "no refresh token presented twice");
        let stored = shared_store(&scratch.0, directory).load().await.expect("load").expect("stored");
        let refresh = stored.refresh_token.expect("a refresh token").secret().to_owned();
        assert!(server.active_refresh_tokens(server.test_user()).contains(&refresh), "the sign-in lives on");
    }
}

/// Two real processes serve one user from one `DirectoryTokenStore` while the server rotates
/// refresh tokens and access tokens last two seconds, so both come to refresh at about the same
/// moments for five seconds: every page succeeds in both, and no refresh token is presented
/// twice. (Separate processes cannot share paused time: this case waits in real time.)
async fn two_processes_sharing_a_directory_present_each_refresh_token_once() {
    let server = ReferenceServer::builder()
        .companies(3)
        .refresh_token_rotation(true)
        .token_lifetime(Duration::from_secs(2))
        .start()
        .await;
    let (_, tokens) = sign_in(&server).await;
    let scratch = Scratch::new("processes");
    DirectoryTokenStore::new(&scratch.0).for_user(SESSION).save(&tokens).await.expect("first save");
    let settings = [
        server.base_url(),
        server.auth_url(),
        server.public_client_id().to_owned(),
        scratch.0.display().to_string(),
    ];
    let exe = std::env::current_exe().expect("the test binary");
    let children = (0..2).map(|_| {
        let mut command = std::process::Command::new(&exe);
        command
            .args(["--exact", "hostile::a_process_of_the_shared_directory", "--ignored", "--nocapture"])
            .env(harness::CHILD, "1")
            .envs(CHILD_SETTINGS.iter().zip(&settings));
        tokio::task::spawn_blocking(move || command.output())
    });
    for output in join_all(children).await {
        let output = output.expect("the child's task").expect("the child ran");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "child failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(stdout.contains("pages="), "{stdout}");
    }
    let refreshes = server.token_requests_for("refresh_token");
    assert!(refreshes >= 2, "the tokens were renewed along the way: {refreshes} refreshes");
    assert_eq!(server.refresh_token_reuses(), 0, "no refresh token presented twice in {refreshes} refreshes");
    let stored =
        DirectoryTokenStore::new(&scratch.0).for_user(SESSION).load().await.expect("load").expect("stored");
    let refresh = stored.refresh_token.expect("a refresh token").secret().to_owned();
    assert!(server.active_refresh_tokens(server.test_user()).contains(&refresh), "the sign-in lives on");
}

/// One of the two processes of [`two_processes_sharing_a_directory_present_each_refresh_token_once`]:
/// a page every 50 ms for five seconds as the stored user; runs only there.
async fn a_process_of_the_shared_directory() {
    let client = child_client(CHILD_SETTINGS, SESSION, Duration::from_secs(20)).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let mut pages = 0;
    while std::time::Instant::now() < deadline {
        client.companies().limit(1).send().await.expect("no process loses the sign-in");
        pages += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!("pages={pages}");
}

/// The same store without its refresh lock: the second instance refreshes with the token the
/// first one already replaced, and reuse detection ends the sign-in for both.
async fn without_the_file_lock_the_second_instance_loses_the_sign_in() {
    let server = ReferenceServer::builder().companies(3).refresh_token_rotation(true).start().await;
    let scratch = Scratch::new("no-lock");
    let (flow, tokens) = sign_in(&server).await;
    let path = scratch.0.join("tokens.json");
    FileTokenStore::new(&path).save(&tokens).await.expect("first save");
    let first = stored_user_client(&server, &flow, WithoutRefreshLock(FileTokenStore::new(&path))).await;
    let second = stored_user_client(&server, &flow, WithoutRefreshLock(FileTokenStore::new(&path))).await;
    server.expire_tokens();
    first.companies().limit(1).send().await.expect("the first refresh");
    let err = second.companies().limit(1).send().await.expect_err("a retired refresh token");
    assert!(err.needs_reauthentication(), "{err:?}");
    assert_eq!(server.refresh_token_reuses(), 1);
}

/// Metadata the app built (a cached copy) names plain-http revocation and introspection
/// endpoints off loopback, on a host the test resolves to a server of its own: the flow and the
/// introspector refuse it, naming the member, and that server receives nothing, neither the
/// refresh token nor the introspection secret.
async fn metadata_with_plain_http_endpoints_is_refused_before_anything_is_sent() {
    let server = ReferenceServer::start().await;
    let trap = wiremock::MockServer::builder().start().await;
    let address = *trap.address();
    // A client whose HTTP configuration reaches the trap, for the flow and the introspector.
    let resolving = Client::builder()
        .base_url(server.base_url())
        .auth(Auth::static_token("t"))
        .http_config(move |http| http.resolve("auth.example", address))
        .build()
        .expect("client");
    let plain = |path: &str| format!("http://auth.example:{}/{path}", address.port());
    let document = |revocation: String, introspection: String| -> AuthServerMetadata {
        serde_json::from_value(serde_json::json!({
            "issuer": server.auth_url(),
            "authorization_endpoint": server.authorize_url(),
            "token_endpoint": server.token_url(),
            "jwks_uri": server.jwks_url(),
            "revocation_endpoint": revocation,
            "introspection_endpoint": introspection,
        }))
        .expect("a document")
    };
    // The trap is reachable as the SDK would reach it: a plain request gets there.
    let probe = reqwest::Client::builder().resolve("auth.example", address).build().expect("client");
    probe.get(plain("probe")).send().await.expect("the trap answers");
    let reached = trap.received_requests().await.expect("recording").len();
    assert_eq!(reached, 1);

    for (member, metadata) in [
        ("revocation_endpoint", document(plain("oauth2/revoke"), server.introspection_url())),
        ("introspection_endpoint", document(server.revocation_url(), plain("oauth2/introspect"))),
        (
            "revocation_endpoint",
            document("https://user:PASSWORD@auth.example/revoke".into(), server.introspection_url()),
        ),
    ] {
        let flow = AuthorizationCodeFlow::from_metadata(
            &metadata,
            server.public_client_id(),
            "http://127.0.0.1:9/cb",
        )
        .map(|flow| flow.http(&resolving));
        let introspector =
            TokenIntrospector::from_metadata(&metadata, server.client_id(), server.client_secret())
                .map(|introspector| introspector.http(&resolving));
        let refusal = match (flow, introspector) {
            (Err(refused), _) | (Ok(_), Err(refused)) => refused,
            (Ok(flow), Ok(introspector)) => {
                let tokens = TokenSet::new("access").with_refresh_token("refresh");
                let _ = flow.revoke(&tokens).await;
                let _ = introspector.introspect("access").await;
                panic!("{member} accepted");
            }
        };
        assert!(matches!(&refusal, Error::InvalidArgument(e) if e.argument() == member), "{refusal:?}");
        assert!(!refusal.to_string().contains("PASSWORD"), "{refusal}");
        assert!(!format!("{metadata:?}").contains("PASSWORD"), "{metadata:?}");
    }
    assert_eq!(
        trap.received_requests().await.expect("recording").len(),
        reached,
        "nothing sent in clear text"
    );
}

/// A web app looks up whatever session cookie comes in. 20,000 unknown ones leave the memory
/// store with its one signed-in user and the directory with its one file, and that user's
/// client still works through the store.
async fn unknown_session_keys_leave_the_user_maps_as_they_were() {
    let server = ReferenceServer::builder().companies(3).start().await;
    let (flow, tokens) = sign_in(&server).await;
    let scratch = Scratch::new("unknown-keys");
    let memory = MemoryKeyedStore::new();
    let stores: [Arc<dyn KeyedTokenStore>; 2] =
        [Arc::new(memory.clone()), Arc::new(DirectoryTokenStore::new(&scratch.0))];
    for stores in stores {
        stores.for_user("session-of-alice").save(&tokens).await.expect("save");
        for n in 0..20_000 {
            let unknown = format!("forged-session-{n:016x}");
            assert!(stores.for_user(&unknown).load().await.expect("load").is_none());
        }
        let store = stores.for_user("session-of-alice");
        let user = stored_user_client(&server, &flow, store).await;
        user.companies().limit(1).send().await.expect("the signed-in user's page");
    }
    assert_eq!(memory.len(), 1, "one user, whatever was looked up");
    assert_eq!(std::fs::read_dir(&scratch.0).expect("the directory").count(), 1, "one file");
}

/// The first line of the answer to a `GET target` on the loopback redirect.
async fn status_line(port: u16, target: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
    let request = format!("GET {target} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("read");
    response.lines().next().unwrap_or_default().to_owned()
}

/// Another local process sends a made-up callback to a desktop sign-in's redirect: it is
/// answered 400, the wait goes on, and the real callback signs the user in.
async fn a_forged_callback_is_answered_400_and_the_real_one_completes_the_sign_in() {
    let server = ReferenceServer::builder().companies(3).start().await;
    let redirect = LoopbackRedirect::bind().await.expect("bind").timeout(Duration::from_secs(20));
    let port = redirect.port();
    let flow =
        AuthorizationCodeFlow::new(server.auth_url(), server.public_client_id(), redirect.redirect_uri())
            .expect("flow")
            .scopes(["openid", "api/read"]);
    let request = flow.authorize_url();
    let waiting = {
        let request = request.clone();
        tokio::spawn(async move { redirect.wait_for_callback_of(&request).await })
    };
    for forged in ["/callback?error=access_denied&state=forged", "/callback?code=stolen&state=forged"] {
        assert_eq!(status_line(port, forged).await, "HTTP/1.1 400 Bad Request", "{forged}");
    }
    let page = browse(request.url()).await;
    assert!(page.contains("Sign-in complete"), "{page}");
    let callback = waiting.await.expect("task").expect("the real callback");
    let tokens = flow.exchange(request, &callback).await.expect("signed in");
    let client =
        Client::builder().base_url(server.base_url()).auth(Auth::user(flow, tokens)).build().expect("client");
    client.companies().limit(1).send().await.expect("a page as the user");
}

/// Credentials and query values in URLs given to the client never reach `Debug` or an error
/// message, and a URL refused for them sends nothing.
async fn debug_and_errors_show_no_password_and_no_query_value() {
    let server = ReferenceServer::start().await;
    let with_password = |url: String| url.replacen("://", "://user:PASSWORD@", 1);
    let cases = [
        (with_password(server.base_url()), server.auth_url(), "base_url"),
        (format!("{}/?key=QUERYVALUE", server.base_url()), server.auth_url(), "base_url"),
        (server.base_url(), with_password(server.auth_url()), "auth_url"),
        (server.base_url(), format!("{}/?tenant=QUERYVALUE", server.auth_url()), "auth_url"),
    ];
    for (base_url, auth_url, argument) in cases {
        let builder = Client::builder().base_url(base_url).auth(Auth::client_credentials(
            auth_url,
            server.client_id(),
            server.client_secret(),
        ));
        let debug = format!("{builder:?}");
        let err = builder.build().expect_err("refused");
        assert!(matches!(&err, Error::InvalidArgument(e) if e.argument() == argument), "{err:?}");
        for shown in [debug, err.to_string(), format!("{err:?}")] {
            for hidden in ["PASSWORD", "QUERYVALUE", server.client_secret()] {
                assert!(!shown.contains(hidden), "{hidden} in {shown}");
            }
        }
    }
    let flow =
        AuthorizationCodeFlow::new(server.auth_url(), "app", "http://127.0.0.1:9/cb?tenant=QUERYVALUE")
            .expect("a redirect URI may carry a query");
    assert!(!format!("{flow:?}").contains("QUERYVALUE"), "{flow:?}");
    assert_eq!(server.token_requests(), 0, "nothing was sent");
    assert!(crate::support::api_requests(&server).is_empty(), "nothing was sent");
}

/// A sealing secret and a Redis user secret share one minimum (32 bytes) and one message; a
/// flow with a short one refuses to seal and exchanges nothing.
async fn a_short_secret_is_refused_for_sealing_and_for_shared_user_stores() {
    let server = ReferenceServer::start().await;
    let message = |err: &Error| match err {
        Error::InvalidArgument(e) => (e.argument(), e.message().to_owned()),
        other => panic!("expected InvalidArgument, got {other:?}"),
    };
    let flow =
        AuthorizationCodeFlow::new(server.auth_url(), server.public_client_id(), "http://127.0.0.1:9/cb")
            .expect("flow")
            .sealing_secret("x");
    let err = flow.seal_pending(&flow.authorize_url()).expect_err("short");
    let (argument, refused) = message(&err);
    assert_eq!(argument, "sealing_secret");
    assert_eq!(
        refused,
        "expected at least 32 bytes (a random key, such as 32 random bytes in base64), got 1"
    );
    let err = flow.exchange_sealed("sealed", "/cb?code=c&state=s").await.expect_err("short");
    assert_eq!(message(&err), (argument, refused.clone()));
    assert_eq!(server.token_requests(), 0, "nothing was sent");

    #[cfg(feature = "redis")]
    {
        use business_records::auth::RedisTokenCache;
        // Nothing listens on port 1: the secret is refused before Redis is needed.
        let cache = RedisTokenCache::connect_with_timeout("redis://127.0.0.1:1", Duration::from_millis(100))
            .await
            .expect("a cache");
        let err = cache.user_secret("x").user_store("user-42").load().await.expect_err("short");
        assert_eq!(err.to_string(), format!("invalid argument `user_secret`: {refused}"));
    }
}
