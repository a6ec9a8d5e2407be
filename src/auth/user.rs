//! A signed-in user's tokens behind a [`Client`](crate::Client): the refresh-token grant,
//! rotation, and the token store.

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;

use super::token_manager::{IssuedToken, TokenManager, TokenSource};
use super::{AuthorizationCodeFlow, RefreshTurn, TokenSet, TokenStore};
use crate::Error;
use crate::transport::HttpSender;

/// Authentication as a signed-in user; made by [`Auth::user`](crate::Auth::user).
///
/// The client sends the user's access token and renews it with the refresh-token grant ahead
/// of expiry (and after a 401 `invalid_token`), one refresh at a time however many tasks need
/// it. When the server rotates the refresh token, the new one is kept, and saved through the
/// [`store`](Self::store) before any request uses the new access token.
///
/// Build one [`Client`](crate::Client) per signed-in user and clone it: clones share the
/// tokens. Two clients built from the same `UserAuth` would each renew with the same refresh
/// token, and a server that rotates refresh tokens treats the second use as theft and revokes
/// the sign-in.
///
/// ```no_run
/// # async fn run(flow: business_records::auth::AuthorizationCodeFlow,
/// #              tokens: business_records::auth::TokenSet) -> Result<(), business_records::Error> {
/// use business_records::auth::FileTokenStore;
/// use business_records::{Auth, Client};
///
/// let client = Client::builder()
///     .base_url("https://api.example.com")
///     .auth(Auth::user(flow, tokens).store(FileTokenStore::new("tokens.json")))
///     .build()?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
#[must_use]
pub struct UserAuth {
    flow: AuthorizationCodeFlow,
    tokens: TokenSet,
    store: Option<Arc<dyn TokenStore>>,
}

impl fmt::Debug for UserAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserAuth")
            .field("flow", &self.flow)
            .field("tokens", &self.tokens)
            .field("store", &self.store.is_some())
            .finish()
    }
}

impl UserAuth {
    pub(crate) fn new(flow: AuthorizationCodeFlow, tokens: TokenSet) -> Self {
        UserAuth { flow, tokens, store: None }
    }

    /// Saves every renewed token set here. Default: none (renewed tokens live in memory only).
    pub fn store(mut self, store: impl TokenStore) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// Checks the settings; the client builder calls this from `build()`.
    pub(crate) fn into_manager(self) -> Result<TokenManager, Error> {
        self.flow.check()?;
        if self.tokens.access_token.secret().trim().is_empty() {
            return Err(Error::invalid("auth", "expected a non-empty access token"));
        }
        let token = self.tokens.access_token.clone();
        let expires_at = self.tokens.expires_at;
        let source =
            UserSource { flow: self.flow, current: tokio::sync::Mutex::new(self.tokens), store: self.store };
        Ok(TokenManager::with_token(Box::new(source), token, expires_at))
    }
}

/// Renews a user's tokens with the refresh-token grant.
struct UserSource {
    flow: AuthorizationCodeFlow,
    /// The newest set; its refresh token is the one to use next.
    current: tokio::sync::Mutex<TokenSet>,
    store: Option<Arc<dyn TokenStore>>,
}

impl fmt::Debug for UserSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserSource").field("flow", &self.flow).finish_non_exhaustive()
    }
}

impl TokenSource for UserSource {
    /// Runs under the token manager's refresh lock: the new set is kept, then saved, and only
    /// then handed out.
    fn fetch<'a>(&'a self, sender: &'a HttpSender) -> BoxFuture<'a, Result<IssuedToken, Error>> {
        Box::pin(async move {
            let mut current = self.current.lock().await;
            // A store shared by several processes locks the refresh for all of them, and hands
            // back the set another process saved meanwhile.
            let turn = match &self.store {
                Some(store) => store.begin_refresh(&current).await.map_err(Error::TokenStore)?,
                None => RefreshTurn::proceed(),
            };
            let RefreshTurn { newer, lock } = turn;
            if let Some(newer) = newer {
                // Its refresh token is the newest, whether or not its access token still works.
                let usable = !newer.is_expired();
                *current = newer;
                if usable {
                    if let Some(lock) = lock {
                        lock.release().await;
                    }
                    tracing::debug!("user tokens taken from the store, refreshed elsewhere");
                    let now = chrono::Utc::now();
                    return Ok(IssuedToken {
                        access_token: current.access_token.clone(),
                        expires_in: current.expires_at.map(|at| (at - now).to_std().unwrap_or_default()),
                        scopes: current.scopes.clone(),
                    });
                }
            }
            let (next, expires_in) = self.flow.refresh_with(sender, &current).await?;
            let rotated = next.refresh_token != current.refresh_token;
            // Kept first: the server has already retired the old refresh token.
            *current = next;
            if let Some(store) = &self.store {
                store.save(&current).await.map_err(Error::TokenStore)?;
            }
            if let Some(lock) = lock {
                lock.release().await;
            }
            tracing::debug!(rotated, saved = self.store.is_some(), "user tokens refreshed");
            Ok(IssuedToken {
                access_token: current.access_token.clone(),
                expires_in,
                scopes: current.scopes.clone(),
            })
        })
    }
}
