//! Spec Parts 5.4 and 5.8: tokens, secrets, codes and verifiers never reach a log line, an
//! error message or a `Debug` string.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use business_records::auth::{
    AccessToken, AuthServerMetadata, AuthorizationCodeFlow, ClientSecret, IdToken, MemoryTokenStore,
    PkceVerifier, RefreshToken, TokenIntrospector, TokenSet,
};
use business_records::{Auth, Client};
use business_records_reference_server::ReferenceServer;

use crate::auth_user::authorize;

crate::cases! {
    Anywhere:
        debug_of_every_secret_type_is_redacted [sync];
    ServerControl:
        no_secret_reaches_any_tracing_output;
}

/// Everything the subscriber writes, shared with the test.
#[derive(Clone, Default)]
pub(crate) struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Every event and span at TRACE level, as text, for the calling thread until the guard drops.
/// On a test's one-thread runtime, the tasks it spawns log here too.
pub(crate) fn capture_traces() -> (Captured, tracing::subscriber::DefaultGuard) {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer({
            let captured = captured.clone();
            move || captured.clone()
        })
        .finish();
    (captured, tracing::subscriber::set_default(subscriber))
}

impl Captured {
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
    }
}

fn debug_of_every_secret_type_is_redacted() {
    let cases: [(String, &str); 5] = [
        (format!("{:?}", AccessToken::new("s-access")), "AccessToken([redacted])"),
        (format!("{:?}", RefreshToken::new("s-refresh")), "RefreshToken([redacted])"),
        (format!("{:?}", IdToken::new("s-id")), "IdToken([redacted])"),
        (format!("{:?}", PkceVerifier::new("s-verifier")), "PkceVerifier([redacted])"),
        (format!("{:?}", ClientSecret::new("s-secret")), "ClientSecret([redacted])"),
    ];
    for (debug, expected) in cases {
        assert_eq!(debug, expected);
    }
    for display in [
        AccessToken::new("s").to_string(),
        RefreshToken::new("s").to_string(),
        IdToken::new("s").to_string(),
        PkceVerifier::new("s").to_string(),
        ClientSecret::new("s").to_string(),
    ] {
        assert_eq!(display, "[redacted]");
    }

    let tokens = TokenSet::new("s-access").with_refresh_token("s-refresh");
    let flow =
        AuthorizationCodeFlow::new("https://auth.example.com", "app", "http://127.0.0.1:1/cb").expect("flow");
    let request = flow.authorize_url();
    let auth: Auth = Auth::user(flow.clone(), tokens.clone()).store(MemoryTokenStore::new()).into();
    let backend: Auth = Auth::client_credentials("https://auth.example.com", "id", "s-secret").into();
    let client =
        Client::builder().base_url("https://api.example.com").auth(auth.clone()).build().expect("client");
    let introspector =
        TokenIntrospector::new("https://auth.example.com", "api", "s-secret").expect("introspector");
    let debug = format!("{tokens:?} {request:?} {auth:?} {backend:?} {flow:?} {client:?} {introspector:?}");
    for secret in ["s-access", "s-refresh", "s-secret", request.pkce_verifier().secret(), request.state()] {
        assert!(!debug.contains(secret), "{secret} in {debug}");
    }
    assert!(debug.contains("[redacted]"));
}

/// Runs the whole authentication surface with a TRACE subscriber writing into a buffer, then
/// looks for every secret the run handled.
async fn no_secret_reaches_any_tracing_output() {
    let server = ReferenceServer::builder()
        .companies(20)
        .token_lifetime(Duration::from_secs(1))
        .refresh_token_rotation(true)
        .start()
        .await;
    let (captured, _guard) = capture_traces();
    let mut secrets: Vec<String> = vec![server.client_secret().to_owned(), "wrong-secret-value".to_owned()];

    // Client credentials: Basic, body, and a refused secret.
    for in_body in [false, true] {
        let mut flow =
            Auth::client_credentials(server.auth_url(), server.client_id(), server.client_secret())
                .scopes(["api/read"]);
        if in_body {
            flow = flow.credentials_in_body();
        }
        let client = Client::builder().base_url(server.base_url()).auth(flow).build().expect("client");
        client.companies().limit(5).send().await.expect("client credentials");
    }
    let refused = Client::builder()
        .base_url(server.base_url())
        .auth(Auth::client_credentials(server.auth_url(), server.client_id(), "wrong-secret-value"))
        .build()
        .expect("client");
    let err = refused.companies().send().await.expect_err("a wrong secret");
    tracing::warn!(error = %err, debug = ?err, "refused as expected");

    // The user sign-in, step by step, so the code and verifier are known.
    let (flow, request, callback) = authorize(&server, &["openid", "api/read"]).await.expect("authorize");
    secrets.push(request.pkce_verifier().secret().to_owned());
    let code = url::Url::parse(&callback)
        .expect("url")
        .query_pairs()
        .find(|(k, _)| k == "code")
        .map(|(_, v)| v.into_owned())
        .expect("a code");
    secrets.push(code);
    tracing::debug!(request = ?request, "exchanging");
    let tokens = flow.exchange(request, &callback).await.expect("exchange");
    tracing::debug!(tokens = ?tokens, "signed in");
    remember(&mut secrets, &tokens);

    // Refresh with rotation, the 401 path, introspection and discovery.
    let store = MemoryTokenStore::new();
    let client = Client::builder()
        .base_url(server.base_url())
        .auth(Auth::user(flow.clone(), tokens.clone()).store(store.clone()))
        .build()
        .expect("client");
    tracing::debug!(client = ?client, "user client");
    client.companies().send().await.expect("first call");
    tokio::time::sleep(Duration::from_millis(1000)).await;
    client.companies().send().await.expect("after a refresh");
    server.expire_tokens();
    client.companies().send().await.expect("after a 401 and a refresh");
    let saved = store.get().expect("rotated tokens were saved");
    remember(&mut secrets, &saved);
    let metadata = AuthServerMetadata::discover(server.auth_url()).await.expect("discovery");
    let introspector =
        TokenIntrospector::from_metadata(&metadata, server.client_id(), server.client_secret())
            .expect("introspector");
    introspector.introspect(saved.access_token.secret()).await.expect("introspection");

    // A revoked sign-in: the invalid_grant path.
    server.revoke_refresh_tokens();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let err = client.companies().send().await.expect_err("revoked");
    tracing::warn!(error = %err, debug = ?err, "revoked as expected");
    let err = flow.refresh(&tokens).await.expect_err("the first refresh token is long gone");
    tracing::warn!(error = %err, "refresh refused as expected");

    let text = captured.text();
    assert!(text.contains("http_request"), "the subscriber captured the client's spans:\n{text}");
    assert!(text.contains("TRACE") || text.contains("DEBUG"), "detailed levels were captured");
    for secret in &secrets {
        assert!(!secret.is_empty());
        assert!(!text.contains(secret.as_str()), "a secret reached the logs:\n{text}");
    }
    // Every JWT (access and ID tokens, whoever issued them) starts with `eyJ`.
    assert!(!text.contains("eyJ"), "a JWT reached the logs:\n{text}");
    println!("{} lines of trace output checked against {} secrets", text.lines().count(), secrets.len());
}

fn remember(secrets: &mut Vec<String>, tokens: &TokenSet) {
    secrets.push(tokens.access_token.secret().to_owned());
    secrets.extend(tokens.refresh_token.iter().map(|t| t.secret().to_owned()));
    secrets.extend(tokens.id_token.iter().map(|t| t.secret().to_owned()));
}
