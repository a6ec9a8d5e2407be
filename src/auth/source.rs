//! Where a client's tokens come from and where they are kept: one shape for the client
//! credentials grant (alone, or shared through a store), a signed-in user's refresh token, and a
//! token the caller fixed.
//!
//! A renewal holds the newest set, asks the store for its turn (a store shared by several
//! processes locks the renewal across them and hands back a set another process saved), renews,
//! keeps the new set in memory at once, saves it, and only then releases the turn and hands the
//! token out. A save that fails is retried in the background until it lands.

use std::fmt;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::Mutex;

use super::authorization_code::Refreshed;
use super::client_credentials::ClientCredentialsGrant;
use super::token_manager::{IssuedToken, signed_out};
use super::{AuthorizationCodeFlow, IdToken, RefreshTurn, TokenSet, TokenStore};
use crate::Error;
use crate::error::ReauthenticationRequired;
use crate::retry::backoff;

/// How long one [`TokenStore::save`] may take before it counts as failed.
const SAVE_TIMEOUT: Duration = Duration::from_secs(10);
/// The first and the longest pause before a failed save is tried again.
const SAVE_RETRY: (Duration, Duration) = (Duration::from_millis(500), Duration::from_secs(300));

/// How a set is renewed.
pub(crate) enum Grant {
    /// The client credentials grant.
    ClientCredentials(Box<ClientCredentialsGrant>),
    /// The refresh-token grant of a signed-in user's flow.
    Refresh(AuthorizationCodeFlow),
    /// A token the caller manages: never renewed.
    Fixed,
    /// Answers from a test's script.
    #[cfg(test)]
    Scripted(Box<dyn Fn() -> futures::future::BoxFuture<'static, Result<IssuedToken, Error>> + Send + Sync>),
}

/// A client's tokens: how they are renewed, where they are kept, and the newest set.
pub(crate) struct Source {
    grant: Grant,
    store: Option<Arc<dyn TokenStore>>,
    kept: Arc<Mutex<Kept>>,
}

struct Kept {
    /// The newest set; its refresh token is the one to use next.
    current: TokenSet,
    /// The ID token a refresh brought into `current`, not verified yet, with the set it
    /// replaced.
    unverified: Option<(IdToken, TokenSet)>,
    /// `current` is not in the store: a save failed and is being retried in the background.
    unsaved: bool,
    /// The user signed out: `current` is empty, nothing is saved or renewed any more.
    signed_out: bool,
}

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Source").field("store", &self.store.is_some()).finish_non_exhaustive()
    }
}

impl Source {
    /// Renews `current` with `grant`, keeping every renewed set in `store` when there is one.
    pub(crate) fn new(grant: Grant, store: Option<Arc<dyn TokenStore>>, current: TokenSet) -> Self {
        let kept = Kept { current, unverified: None, unsaved: false, signed_out: false };
        Source { grant, store, kept: Arc::new(Mutex::new(kept)) }
    }

    /// Whether a token the API rejected can be replaced.
    pub(crate) fn is_renewable(&self) -> bool {
        !matches!(self.grant, Grant::Fixed)
    }

    /// Whether this source holds a signed-in user's tokens (and so can sign out).
    pub(crate) fn has_user(&self) -> bool {
        matches!(self.grant, Grant::Refresh(_))
    }

    /// A new token. Runs in the token manager's own task, never cancelled: the new set is kept
    /// in memory the moment it arrives (refresh token first), saved, and only then handed out.
    pub(crate) async fn fetch(&self) -> Result<IssuedToken, Error> {
        #[cfg(test)]
        if let Grant::Scripted(script) = &self.grant {
            return script().await;
        }
        let mut kept = self.kept.lock().await;
        if kept.signed_out {
            return Err(signed_out());
        }
        let RefreshTurn { newer, lock } = match &self.store {
            Some(store) => store.begin_refresh(&kept.current).await.map_err(Error::TokenStore)?,
            None => RefreshTurn::proceed(),
        };
        let result = match newer {
            // Its refresh token is the newest, whether or not its access token still works.
            Some(newer) => {
                kept.current = newer;
                kept.unverified = None;
                if kept.current.is_expired() {
                    self.renew(&mut kept).await
                } else {
                    tracing::debug!("tokens taken from the store, renewed elsewhere");
                    Ok(kept.current.issued())
                }
            }
            None => self.renew(&mut kept).await,
        };
        if let Some(lock) = lock {
            lock.release().await;
        }
        result
    }

    /// Renews `kept.current` with the grant, keeps the new set and saves it.
    async fn renew(&self, kept: &mut Kept) -> Result<IssuedToken, Error> {
        let Refreshed { tokens, expires_in, new_id_token } = match &self.grant {
            Grant::ClientCredentials(grant) => grant.request().await?,
            Grant::Refresh(flow) => flow.refresh_unverified(&kept.current).await?,
            Grant::Fixed => {
                return Err(Error::ReauthenticationRequired(ReauthenticationRequired::new(
                    "the static token was rejected and cannot be renewed",
                )));
            }
            #[cfg(test)]
            Grant::Scripted(_) => return Err(Error::invalid("grant", "a script answers in `fetch`")),
        };
        let rotated = tokens.refresh_token != kept.current.refresh_token;
        // Kept first: the server has already retired the old refresh token.
        kept.current = tokens;
        kept.unverified = new_id_token;
        self.save(kept).await;
        tracing::debug!(rotated, saved = self.store.is_some() && !kept.unsaved, "tokens renewed");
        Ok(IssuedToken { access_token: kept.current.access_token.clone(), expires_in })
    }

    /// Saves `kept.current`; after a failure, keeps retrying in the background until a save
    /// succeeds, so the store catches up with memory.
    async fn save(&self, kept: &mut Kept) {
        let Some(store) = self.store.as_ref().filter(|_| !kept.signed_out) else { return };
        if save_once(store.as_ref(), &kept.current).await {
            kept.unsaved = false;
        } else if !kept.unsaved {
            kept.unsaved = true;
            retry_save(Arc::downgrade(&self.kept), store.clone());
        }
    }

    /// Verifies the ID token the last refresh brought, once its tokens are handed out; one that
    /// fails is dropped from the set (and the store).
    pub(crate) async fn after_fetch(&self) {
        let Grant::Refresh(flow) = &self.grant else { return };
        let Some((id_token, previous)) = self.kept.lock().await.unverified.take() else { return };
        let outcome = flow.verify_id_token(&id_token).await;
        let mut kept = self.kept.lock().await;
        if kept.current.id_token.as_ref() != Some(&id_token) {
            return; // a newer refresh replaced it
        }
        let dropped = outcome.is_err();
        kept.current.settle_id_token(outcome, &previous);
        if dropped {
            self.save(&mut kept).await;
        }
    }

    /// The user's current set; `None` for other sources and after sign-out.
    pub(crate) async fn current(&self) -> Option<TokenSet> {
        let kept = self.kept.lock().await;
        (self.has_user() && !kept.signed_out).then(|| kept.current.clone())
    }

    /// Waits for a refresh under way (so the newest refresh token is the one revoked), forgets
    /// the tokens, then revokes them and clears the store, whatever the revocation's outcome.
    pub(crate) async fn sign_out(&self) -> Result<(), Error> {
        let Grant::Refresh(flow) = &self.grant else { return Ok(()) };
        let mut kept = self.kept.lock().await;
        kept.signed_out = true;
        kept.unsaved = false;
        kept.unverified = None;
        let tokens = std::mem::replace(&mut kept.current, TokenSet::new(String::new()));
        let revoked = flow.revoke(&tokens).await;
        let cleared = match &self.store {
            Some(store) => store.clear().await.map_err(Error::TokenStore),
            None => Ok(()),
        };
        if let Err(error) = &revoked {
            tracing::warn!(error = %error, "revoking the user's tokens failed; they are forgotten here");
        }
        revoked.and(cleared)
    }
}

/// One save, bounded by [`SAVE_TIMEOUT`]; a failure is logged.
async fn save_once(store: &dyn TokenStore, tokens: &TokenSet) -> bool {
    let failure = match tokio::time::timeout(SAVE_TIMEOUT, store.save(tokens)).await {
        Ok(Ok(())) => return true,
        Ok(Err(error)) => error.to_string(),
        Err(_) => format!("no answer within {SAVE_TIMEOUT:?}"),
    };
    tracing::warn!(
        error = failure,
        "saving renewed tokens failed; the client keeps them in memory and retries"
    );
    false
}

/// Tries the save again after the crate's backoff until it succeeds, a newer set is saved, or
/// the client is gone.
fn retry_save(kept: Weak<Mutex<Kept>>, store: Arc<dyn TokenStore>) {
    tokio::spawn(async move {
        let (initial, max) = SAVE_RETRY;
        for pause in backoff(initial, max) {
            tokio::time::sleep(pause).await;
            let Some(kept) = kept.upgrade() else { return };
            let mut kept = kept.lock().await;
            if !kept.unsaved {
                return;
            }
            if save_once(store.as_ref(), &kept.current).await {
                kept.unsaved = false;
                tracing::info!("renewed tokens saved after an earlier failure");
                return;
            }
        }
    });
}
