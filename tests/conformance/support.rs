//! Where the catalogue runs: the reference server, or a live deployment.

use std::time::Duration;

use business_records::auth::{AuthorizationCodeFlow, TokenSet, TokenStore, TokenStoreError};
use business_records::{Auth, Client, ClientBuilder, Company, Error, ItemStream};
use business_records_reference_server::{JournalEntry, ReferenceServer};
use futures::future::BoxFuture;

/// A live deployment's settings, when all four variables are set.
pub struct Live {
    pub base_url: String,
    pub auth_url: String,
    pub client_id: String,
    pub client_secret: String,
}

pub fn live() -> Option<Live> {
    let var = |name: &str| std::env::var(format!("BUSINESS_RECORDS_CONFORMANCE_{name}")).ok();
    Some(Live {
        base_url: var("BASE_URL")?,
        auth_url: var("AUTH_URL")?,
        client_id: var("CLIENT_ID")?,
        client_secret: var("CLIENT_SECRET")?,
    })
}

/// The target of a read-only case.
pub enum Target {
    Reference(Box<ReferenceServer>),
    Live(Live),
}

/// Base URL, authorization server URL, client id and client secret.
pub struct Credentials {
    pub base_url: String,
    pub auth_url: String,
    pub client_id: String,
    pub client_secret: String,
}

impl Target {
    pub async fn new() -> Target {
        match live() {
            Some(live) => Target::Live(live),
            None => Target::Reference(Box::new(ReferenceServer::start().await)),
        }
    }

    pub fn credentials(&self) -> Credentials {
        match self {
            Target::Reference(s) => Credentials {
                base_url: s.base_url(),
                auth_url: s.auth_url(),
                client_id: s.client_id().to_owned(),
                client_secret: s.client_secret().to_owned(),
            },
            Target::Live(l) => Credentials {
                base_url: l.base_url.clone(),
                auth_url: l.auth_url.clone(),
                client_id: l.client_id.clone(),
                client_secret: l.client_secret.clone(),
            },
        }
    }

    /// A client-credentials client for this target, ready to build.
    pub fn builder(&self) -> ClientBuilder {
        let c = self.credentials();
        Client::builder()
            .base_url(c.base_url)
            .auth(Auth::client_credentials(c.auth_url, c.client_id, c.client_secret).scopes(["api/read"]))
            .timeout(Duration::from_secs(20))
    }

    pub fn client(&self) -> Client {
        self.builder().build().expect("a valid client")
    }
}

/// A client-credentials client for the reference server.
pub fn client_for(server: &ReferenceServer) -> ClientBuilder {
    Client::builder()
        .base_url(server.base_url())
        .auth(
            Auth::client_credentials(server.auth_url(), server.client_id(), server.client_secret())
                .scopes(["api/read"]),
        )
        .timeout(Duration::from_secs(20))
}

/// Every item's id until the end or the first error; checks that nothing follows an error.
pub async fn drain(stream: &mut ItemStream<Company>) -> (Vec<String>, Option<Error>) {
    let mut ids = Vec::new();
    loop {
        match stream.try_next().await {
            Ok(Some(company)) => ids.push(company.id),
            Ok(None) => return (ids, None),
            Err(error) => {
                assert!(matches!(stream.try_next().await, Ok(None)), "the stream ends after its error");
                return (ids, Some(error));
            }
        }
    }
}

/// Waits until `done` holds, for at most ten seconds (work a cancelled caller left running).
pub async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "{what} never happened");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A shared store minus its refresh lock (`begin_refresh` left at the default): what a store
/// shared by processes without single flight across them does.
pub struct WithoutRefreshLock<S>(pub S);

impl<S: TokenStore> TokenStore for WithoutRefreshLock<S> {
    fn load(&self) -> BoxFuture<'_, Result<Option<TokenSet>, TokenStoreError>> {
        self.0.load()
    }

    fn save<'a>(&'a self, tokens: &'a TokenSet) -> BoxFuture<'a, Result<(), TokenStoreError>> {
        self.0.save(tokens)
    }
}

/// A signed-in user's client for the reference server, with the set `store` holds: what an
/// instance of an app that shares the store builds (its own token manager).
pub async fn stored_user_client(
    server: &ReferenceServer,
    flow: &AuthorizationCodeFlow,
    store: impl TokenStore,
) -> Client {
    let tokens = store.load().await.expect("load").expect("a stored set");
    Client::builder()
        .base_url(server.base_url())
        .auth(Auth::user(flow.clone(), tokens).store(store))
        .timeout(Duration::from_secs(20))
        .build()
        .expect("client")
}

/// What the API received, oldest first: the reference server's journal without the requests to
/// the authorization server.
pub fn api_requests(server: &ReferenceServer) -> Vec<JournalEntry> {
    server.journal().into_iter().filter(JournalEntry::is_api).collect()
}
