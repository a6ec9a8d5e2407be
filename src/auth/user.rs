//! A signed-in user's tokens behind a [`Client`](crate::Client): the refresh-token grant,
//! rotation, and the token store.

use std::fmt;
use std::sync::Arc;

use super::source::{Grant, Source};
use super::token_manager::TokenManager;
use super::{AuthorizationCodeFlow, TokenSet, TokenStore, check_token};
use crate::Error;
use crate::wire::{DEFAULT_TIMEOUT, HttpSender};

/// Authentication as a signed-in user; made by [`Auth::user`](crate::Auth::user).
///
/// The client sends the user's access token and renews it with the refresh-token grant ahead
/// of expiry (and after a 401 `invalid_token`), one refresh at a time however many tasks need
/// it. A refresh runs in a task of its own, so a caller that gives up never cancels it. When the
/// server rotates the refresh token, the new one is kept in memory at once, and saved through
/// the [`store`](Self::store) before any request uses the new access token and before the new ID
/// token is verified. A save that fails is logged and retried in the background; the client
/// goes on with the new tokens. See the refresh guarantees in the [`auth`](super) module.
///
/// Give each signed-in user one client and clone it: clones share the tokens. A web app with
/// many users derives each user's client from one shared client with
/// [`Client::with_auth`](crate::Client::with_auth), which shares the connection pool and every
/// setting for a few microseconds and a few KiB per user; a desktop app builds its one client
/// as below. Two clients made from the same `UserAuth` would each renew with the same refresh
/// token, and a server that rotates refresh tokens treats the second use as theft and revokes
/// the sign-in, unless they share a store that locks refreshes ([`FileTokenStore`] and
/// [`DirectoryTokenStore`] over the same file, or a `RedisUserStore`): each client then takes
/// the set the other saved. [`Client::sign_out`](crate::Client::sign_out) ends the sign-in.
///
/// [`FileTokenStore`]: super::FileTokenStore
/// [`DirectoryTokenStore`]: super::DirectoryTokenStore
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

    /// Saves every renewed token set here, before its access token is used. Default: none
    /// (renewed tokens live in memory only).
    pub fn store(mut self, store: impl TokenStore) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// The app's client id, which keys a rate limit shared over Redis.
    pub(crate) fn client_id(&self) -> &str {
        self.flow.client_id()
    }

    /// The token manager of a client signed in as this user, its requests through `sender`
    /// (the client's), the settings checked; the client builder calls this from `build()`.
    pub(crate) fn into_token_manager(self, sender: &HttpSender) -> Result<TokenManager, Error> {
        self.flow.check()?;
        check_token(&self.tokens.access_token)?;
        let initial = Some((self.tokens.access_token.clone(), self.tokens.expires_at));
        let grant = Grant::Refresh(self.flow.with_sender(sender.clone()));
        let source = Source::new(grant, self.store, self.tokens);
        Ok(TokenManager::new(source, sender.timeout().unwrap_or(DEFAULT_TIMEOUT), initial))
    }
}
