//! A refresh token is presented once, whatever the authorization server does, against a
//! provider that revokes a sign-in whose replaced refresh token is presented again (the
//! reference server with rotation on, or a scripted one): it answers a refresh after the
//! client's timeout, having rotated; it drops the connection mid-refresh; it is down while two
//! processes share one directory store; it rotates the refresh token and returns the same
//! access token.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use business_records::auth::{
    AuthorizationCodeFlow, DirectoryTokenStore, FileTokenStore, KeyedTokenStore, MemoryTokenStore, TokenSet,
    TokenStore,
};
use business_records::{Auth, Client};
use business_records_reference_server::{Endpoint, Fault, Faults, ReferenceServer, TokenSpec};
use futures::future::join_all;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::{Scratch, child_client, child_process};
use crate::auth_user::sign_in;
use crate::support;

crate::cases! {
    ServerControl:
        a_refresh_answered_after_the_callers_timeout_is_kept_and_the_sign_in_lives,
        a_refresh_whose_connection_drops_is_never_sent_again,
        a_provider_that_keeps_the_access_token_is_followed_by_its_refresh_token,
        two_processes_through_an_outage_present_each_refresh_token_once [multi_thread(2)];
    ChildProcess:
        a_process_through_the_outage;
}

/// The session both processes of the outage case serve.
const SESSION: &str = "session-through-an-outage";
/// How the parent tells a child process where the servers and the directory are.
const SETTINGS: [&str; 4] = [
    "BUSINESS_RECORDS_OUTAGE_BASE_URL",
    "BUSINESS_RECORDS_OUTAGE_AUTH_URL",
    "BUSINESS_RECORDS_OUTAGE_CLIENT_ID",
    "BUSINESS_RECORDS_OUTAGE_DIR",
];

/// A provider that rotates refresh tokens and revokes a sign-in whose replaced one comes
/// back, and its signed-in user's client with a 300 ms request timeout, saving into `store`.
async fn impatient_client(store: &MemoryTokenStore) -> (ReferenceServer, Client, TokenSet) {
    let server = ReferenceServer::builder()
        .companies(3)
        .refresh_token_rotation(true)
        .faults(Faults::new())
        .start()
        .await;
    let (flow, tokens) = sign_in(&server).await;
    let client = Client::builder()
        .base_url(server.base_url())
        .auth(Auth::user(flow, tokens.clone()).store(store.clone()))
        .timeout(Duration::from_millis(300))
        .build()
        .expect("client");
    (server, client, tokens)
}

/// The token endpoint answers the refresh 1.5 s late, having rotated at once; the client's
/// requests time out after 300 ms. The caller gets its timeout (the sign-in is not reported
/// lost), the refresh waits on for the answer and saves the rotated set, the next call uses it,
/// and the replaced refresh token is never presented again.
async fn a_refresh_answered_after_the_callers_timeout_is_kept_and_the_sign_in_lives() {
    let store = MemoryTokenStore::new();
    let (server, client, first) = impatient_client(&store).await;
    server.set_faults(Faults::new().on(Endpoint::Token, 1, Fault::Late(Duration::from_millis(1500))));
    server.expire_tokens();
    let started = Instant::now();
    let err = client.companies().limit(1).send().await.expect_err("the answer comes after the timeout");
    assert!(err.is_timeout() && !err.needs_reauthentication(), "{err:?}");
    assert!(started.elapsed() < Duration::from_millis(1500), "{:?}", started.elapsed());
    support::eventually("the late answer saved", || {
        store.get().is_some_and(|saved| saved.refresh_token != first.refresh_token)
    })
    .await;
    client.companies().limit(1).send().await.expect("the rotated set serves the next call");
    assert_eq!(server.fault_counts(Endpoint::Token).get("late"), 1);
    assert_eq!(server.token_requests_for("refresh_token"), 1, "presented once");
    assert_eq!(server.refresh_token_reuses(), 0, "no refresh token presented twice");
    let saved = store.get().and_then(|saved| saved.refresh_token).expect("a refresh token");
    assert_eq!(server.active_refresh_tokens(server.test_user()), [saved.secret()], "the sign-in lives on");
}

/// The connection drops after the refresh arrived: the client cannot know whether it rotated,
/// so the refresh is not sent again (not even under the retry policy, which resends dropped
/// API requests), its refresh token is dropped from the store, and the caller is told to sign
/// in again, now and on the next call.
async fn a_refresh_whose_connection_drops_is_never_sent_again() {
    let store = MemoryTokenStore::new();
    let (server, client, _) = impatient_client(&store).await;
    server.set_faults(Faults::new().on_every(Endpoint::Token, 1, Fault::DropConnection));
    server.expire_tokens();
    let err = client.companies().limit(1).send().await.expect_err("the answer is lost");
    assert!(err.needs_reauthentication() && !err.is_timeout(), "{err:?}");
    assert!(
        store.get().is_some_and(|saved| saved.refresh_token.is_none()),
        "the store keeps no refresh token"
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let err = client.companies().limit(1).send().await.expect_err("still signed out");
    assert!(err.needs_reauthentication(), "{err:?}");
    assert_eq!(server.fault_counts(Endpoint::Token).requests, 1, "one refresh request, never resent");
    assert_eq!(server.refresh_token_reuses(), 0);
}

/// A provider that rotates refresh tokens, returns the same access token every time, and
/// revokes the sign-in when a replaced refresh token comes back.
#[derive(Clone, Default)]
struct SameAccessToken {
    access_token: String,
    /// The refresh tokens presented, in order; the current one is `r<number presented>`.
    presented: Arc<Mutex<Vec<String>>>,
}

impl Respond for SameAccessToken {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let form: Vec<(String, String)> = url::form_urlencoded::parse(&request.body).into_owned().collect();
        let token = form.iter().find(|(name, _)| name == "refresh_token").map(|(_, v)| v.clone());
        let mut presented = self.presented.lock().unwrap_or_else(|e| e.into_inner());
        let current = format!("r{}", presented.len());
        presented.push(token.clone().unwrap_or_default());
        if token.as_deref() != Some(current.as_str()) {
            return ResponseTemplate::new(400).set_body_json(serde_json::json!({"error": "invalid_grant"}));
        }
        ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "access_token": self.access_token,
            "token_type": "Bearer",
            "expires_in": 3600,
            "refresh_token": format!("r{}", presented.len()),
        }))
    }
}

/// Two instances over one token file; the provider rotates the refresh token and keeps the
/// access token. The second instance recognises the set the first saved by its refresh token
/// and expiry, and takes it: one refresh, no refresh token presented twice.
async fn a_provider_that_keeps_the_access_token_is_followed_by_its_refresh_token() {
    let api = ReferenceServer::builder().companies(3).start().await;
    let provider = SameAccessToken {
        access_token: api.mint_token(TokenSpec::new().scopes(["api/read"])),
        presented: Arc::default(),
    };
    let auth = MockServer::builder().start().await;
    Mock::given(method("POST")).and(path("/oauth2/token")).respond_with(provider.clone()).mount(&auth).await;
    let scratch = Scratch::new("same-access-token");
    let file = scratch.0.join("tokens.json");
    let first = TokenSet::new(provider.access_token.clone())
        .with_refresh_token("r0")
        .with_expires_at(chrono::Utc::now() + chrono::Duration::milliseconds(1000));
    FileTokenStore::new(&file).save(&first).await.expect("first save");
    let flow = AuthorizationCodeFlow::for_refresh(auth.uri(), "app").expect("flow");
    let instance = || {
        let auth = Auth::user(flow.clone(), first.clone()).store(FileTokenStore::new(&file));
        Client::builder().base_url(api.base_url()).auth(auth).build().expect("client")
    };
    let (one, two) = (instance(), instance());
    tokio::time::sleep(Duration::from_millis(1000)).await;
    one.companies().limit(1).send().await.expect("the first instance refreshes");
    two.companies().limit(1).send().await.expect("the second takes the set the first saved");
    let presented = provider.presented.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert_eq!(presented, ["r0"], "one refresh, no refresh token presented twice");
    let stored = FileTokenStore::new(&file).load().await.expect("load").expect("stored");
    assert_eq!(stored.refresh_token.as_ref().map(|t| t.secret()), Some("r1"));
}

/// Two real processes serve one user from one `DirectoryTokenStore`, with access tokens of one
/// second, while the provider is down for two seconds (every refresh answered 502 or 503; the
/// outage of minutes, scaled down): calls fail during the outage without ever asking for a new
/// sign-in, both processes work again once it is back, and no refresh token is presented
/// twice. (Separate processes cannot share paused time: this case waits in real time.)
async fn two_processes_through_an_outage_present_each_refresh_token_once() {
    let server = ReferenceServer::builder()
        .companies(3)
        .refresh_token_rotation(true)
        .token_lifetime(Duration::from_secs(1))
        .faults(Faults::new())
        .start()
        .await;
    let (_, tokens) = sign_in(&server).await;
    let scratch = Scratch::new("outage");
    DirectoryTokenStore::new(&scratch.0).for_user(SESSION).save(&tokens).await.expect("first save");
    let values = [
        server.base_url(),
        server.auth_url(),
        server.public_client_id().to_owned(),
        scratch.0.display().to_string(),
    ];
    let settings: Vec<(&str, String)> = SETTINGS.into_iter().zip(values).collect();
    let children = (0..2).map(|_| {
        let mut command = child_process("hostile::refresh::a_process_through_the_outage", &settings);
        tokio::task::spawn_blocking(move || command.output())
    });
    let children = tokio::spawn(join_all(children));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let down = Faults::new().on_every(Endpoint::Token, 2, Fault::Html(502)).on_every(
        Endpoint::Token,
        1,
        Fault::Status(503),
    );
    server.set_faults(down);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let refused = server.fault_counts(Endpoint::Token).total();
    server.set_faults(Faults::new());
    let mut felt = 0;
    for output in children.await.expect("the children's task") {
        let output = output.expect("the child's task").expect("the child ran");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "child failed:\n{stdout}\n{stderr}");
        let failures =
            stdout.split("failures=").nth(1).and_then(|n| n.split_whitespace().next()?.parse::<u32>().ok());
        felt += failures.expect("the child's tally");
    }
    assert!(refused > 0, "the provider refused refreshes during the outage");
    assert!(felt > 0, "calls failed during the outage");
    assert_eq!(server.refresh_token_reuses(), 0, "no refresh token presented twice");
    let stored =
        DirectoryTokenStore::new(&scratch.0).for_user(SESSION).load().await.expect("load").expect("stored");
    let refresh = stored.refresh_token.expect("a refresh token").secret().to_owned();
    assert!(server.active_refresh_tokens(server.test_user()).contains(&refresh), "the sign-in lives on");
}

/// One of the two processes of [`two_processes_through_an_outage_present_each_refresh_token_once`]:
/// a page every 50 ms for five seconds as the stored user, failures allowed but never a request
/// to sign in again, then pages until one succeeds (within ten seconds of the provider's return).
async fn a_process_through_the_outage() {
    let client = child_client(SETTINGS, SESSION, Duration::from_secs(5)).await;
    let mut failures = 0;
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Err(err) = client.companies().limit(1).send().await {
            assert!(!err.needs_reauthentication(), "the outage ended the sign-in: {err:?}");
            failures += 1;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let back = Instant::now() + Duration::from_secs(10);
    loop {
        match client.companies().limit(1).send().await {
            Ok(_) => break,
            Err(err) => assert!(!err.needs_reauthentication() && Instant::now() < back, "{err:?}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("failures={failures}");
}
