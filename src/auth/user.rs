//! A signed-in user's tokens behind a [`Client`](crate::Client): the refresh-token grant,
//! rotation, and the token store.

use std::fmt;
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::Mutex;

use super::token_manager::{IssuedToken, TokenManager, TokenSource, signed_out};
use super::{AuthorizationCodeFlow, IdToken, RefreshTurn, TokenSet, TokenStore};
use crate::Error;
use crate::wire::HttpSender;

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

    /// The token manager of a client signed in as this user, the settings checked; the client
    /// builder calls this from `build()`.
    pub(crate) fn into_token_manager(self) -> Result<TokenManager, Error> {
        self.flow.check()?;
        if self.tokens.access_token.secret().trim().is_empty() {
            return Err(Error::invalid("auth", "expected a non-empty access token"));
        }
        if !self.tokens.access_token.fits_header() {
            return Err(Error::invalid("auth", "expected an access token of characters allowed in a header"));
        }
        let token = self.tokens.access_token.clone();
        let expires_at = self.tokens.expires_at;
        let state = UserState { current: self.tokens, unverified: None, unsaved: false, signed_out: false };
        let source = UserSource { flow: self.flow, state: Arc::new(Mutex::new(state)), store: self.store };
        Ok(TokenManager::with_token(Box::new(source), token, expires_at))
    }
}

/// How long one [`TokenStore::save`] may take before it counts as failed.
const SAVE_TIMEOUT: Duration = Duration::from_secs(10);
/// The first pause before a failed save is tried again; it doubles up to [`SAVE_RETRY_MAX`].
const SAVE_RETRY_INITIAL: Duration = Duration::from_millis(500);
const SAVE_RETRY_MAX: Duration = Duration::from_secs(300);

/// Renews a user's tokens with the refresh-token grant.
struct UserSource {
    flow: AuthorizationCodeFlow,
    state: Arc<Mutex<UserState>>,
    store: Option<Arc<dyn TokenStore>>,
}

struct UserState {
    /// The newest set; its refresh token is the one to use next.
    current: TokenSet,
    /// The ID token a refresh brought into `current`, not verified yet, with the set it
    /// replaced.
    unverified: Option<(IdToken, TokenSet)>,
    /// `current` is not in the store: a save failed and is being retried in the background.
    unsaved: bool,
    /// The user signed out: `current` is empty, nothing is saved or refreshed any more.
    signed_out: bool,
}

impl fmt::Debug for UserSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserSource").field("flow", &self.flow).finish_non_exhaustive()
    }
}

impl UserSource {
    /// Saves `state.current`; after a failure, keeps retrying in the background until a save
    /// succeeds, so the store catches up with memory.
    async fn save(&self, state: &mut UserState) {
        let Some(store) = self.store.as_ref().filter(|_| !state.signed_out) else { return };
        if save_once(store.as_ref(), &state.current).await {
            state.unsaved = false;
        } else if !state.unsaved {
            state.unsaved = true;
            retry_save(Arc::downgrade(&self.state), store.clone());
        }
    }
}

/// One save, bounded by [`SAVE_TIMEOUT`]; a failure is logged.
async fn save_once(store: &dyn TokenStore, tokens: &TokenSet) -> bool {
    match tokio::time::timeout(SAVE_TIMEOUT, store.save(tokens)).await {
        Ok(Ok(())) => true,
        Ok(Err(error)) => {
            tracing::warn!(error = %error, "saving renewed tokens failed; the client keeps them in memory and retries");
            false
        }
        Err(_) => {
            tracing::warn!(timeout = ?SAVE_TIMEOUT, "saving renewed tokens timed out; the client keeps them in memory and retries");
            false
        }
    }
}

/// Tries the save again with backoff until it succeeds, a newer set is saved, or the client is
/// gone.
fn retry_save(state: Weak<Mutex<UserState>>, store: Arc<dyn TokenStore>) {
    tokio::spawn(async move {
        let mut delay = SAVE_RETRY_INITIAL;
        loop {
            tokio::time::sleep(delay / 2 + (delay / 2).mul_f64(fastrand::f64())).await;
            let Some(state) = state.upgrade() else { return };
            let mut state = state.lock().await;
            if !state.unsaved {
                return;
            }
            if save_once(store.as_ref(), &state.current).await {
                state.unsaved = false;
                tracing::info!("renewed tokens saved after an earlier failure");
                return;
            }
            delay = delay.saturating_mul(2).min(SAVE_RETRY_MAX);
        }
    });
}

impl TokenSource for UserSource {
    /// Runs in the token manager's own task, never cancelled: the new set is kept in memory
    /// the moment it arrives (refresh token first), saved, and only then handed out. Its ID
    /// token is verified afterwards, in [`after_fetch`](TokenSource::after_fetch).
    fn fetch<'a>(&'a self, sender: &'a HttpSender) -> BoxFuture<'a, Result<IssuedToken, Error>> {
        Box::pin(async move {
            let mut state = self.state.lock().await;
            if state.signed_out {
                return Err(signed_out());
            }
            // A store shared by several processes locks the refresh for all of them, and hands
            // back the set another process saved meanwhile.
            let turn = match &self.store {
                Some(store) => store.begin_refresh(&state.current).await.map_err(Error::TokenStore)?,
                None => RefreshTurn::proceed(),
            };
            let RefreshTurn { newer, lock } = turn;
            if let Some(newer) = newer {
                // Its refresh token is the newest, whether or not its access token still works.
                let usable = !newer.is_expired();
                state.current = newer;
                state.unverified = None;
                if usable {
                    if let Some(lock) = lock {
                        lock.release().await;
                    }
                    tracing::debug!("user tokens taken from the store, refreshed elsewhere");
                    let now = chrono::Utc::now();
                    return Ok(IssuedToken {
                        access_token: state.current.access_token.clone(),
                        expires_in: state
                            .current
                            .expires_at
                            .map(|at| (at - now).to_std().unwrap_or_default()),
                        scopes: state.current.scopes.clone(),
                    });
                }
            }
            let refreshed = self.flow.refresh_with(sender, &state.current).await?;
            let rotated = refreshed.tokens.refresh_token != state.current.refresh_token;
            // Kept first: the server has already retired the old refresh token.
            state.current = refreshed.tokens;
            state.unverified = refreshed.new_id_token;
            self.save(&mut state).await;
            if let Some(lock) = lock {
                lock.release().await;
            }
            tracing::debug!(rotated, saved = self.store.is_some() && !state.unsaved, "user tokens refreshed");
            Ok(IssuedToken {
                access_token: state.current.access_token.clone(),
                expires_in: refreshed.expires_in,
                scopes: state.current.scopes.clone(),
            })
        })
    }

    fn has_user(&self) -> bool {
        true
    }

    fn current(&self) -> BoxFuture<'_, Option<TokenSet>> {
        Box::pin(async move {
            let state = self.state.lock().await;
            (!state.signed_out).then(|| state.current.clone())
        })
    }

    /// Waits for a refresh under way (so the newest refresh token is the one revoked), forgets
    /// the tokens, then revokes them and clears the store, whatever the revocation's outcome.
    fn sign_out<'a>(&'a self, sender: &'a HttpSender) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            let mut state = self.state.lock().await;
            state.signed_out = true;
            state.unsaved = false;
            state.unverified = None;
            let tokens = std::mem::replace(&mut state.current, TokenSet::new(String::new()));
            let revoked = self.flow.revoke_with(sender, &tokens).await;
            let cleared = match &self.store {
                Some(store) => store.clear().await.map_err(Error::TokenStore),
                None => Ok(()),
            };
            if let Err(error) = &revoked {
                tracing::warn!(error = %error, "revoking the user's tokens failed; they are forgotten here");
            }
            revoked.and(cleared)
        })
    }

    /// Verifies the new ID token; one that fails is dropped from the set (and the store).
    fn after_fetch<'a>(&'a self, _sender: &'a HttpSender) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let Some((id_token, previous)) = self.state.lock().await.unverified.take() else { return };
            let outcome = self.flow.verify_id_token(&id_token).await;
            let mut state = self.state.lock().await;
            if state.current.id_token.as_ref() != Some(&id_token) {
                return; // a newer refresh replaced it
            }
            let dropped = outcome.is_err();
            state.current.settle_id_token(outcome, &previous);
            if dropped {
                self.save(&mut state).await;
            }
        })
    }
}
