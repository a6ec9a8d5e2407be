//! A pending sign-in sealed for a cookie: any instance of a web app that holds the same
//! secret opens it and finishes the sign-in, with nothing kept on the server. The flow's
//! sealing secret and the sealed value's maximum age are set here.
//!
//! The value is `base64url(flow tag || sealed)`. The flow tag (8 bytes of SHA-256 over the
//! client id and the redirect URI) tells a value of another flow from a damaged one; `sealed`
//! is AES-256-GCM ([`Sealer`](super::super::seal::Sealer)) over the creation time and the
//! `state`, PKCE verifier and `nonce`, with the purpose, client id and redirect URI as
//! additional data. The authorize URL is not kept: it is not needed to finish.

use std::sync::Arc;
use std::time::Duration;

use aws_lc_rs::digest;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::Utc;

use super::super::seal::Sealer;
use super::super::{PkceVerifier, TokenSet};
use super::{AuthorizationCodeFlow, AuthorizationRequest};
use crate::Error;
use crate::error::CallbackError;

/// What the sealing key is for (HKDF info): keys for other uses of the same secret differ.
const PENDING_PURPOSE: &str = "pending sign-in";
const TAG_LEN: usize = 8;

impl AuthorizationCodeFlow {
    /// The secret pending sign-ins are sealed with (AES-256-GCM under a key derived from it
    /// with HKDF-SHA256): at least 32 bytes, random, the same on every instance of the app, and
    /// kept out of source control. See [`seal_pending`](Self::seal_pending). Default: none.
    ///
    /// A shorter secret is reported by [`seal_pending`](Self::seal_pending),
    /// [`open_pending`](Self::open_pending), [`exchange`](Self::exchange) and
    /// [`ClientBuilder::build`](crate::ClientBuilder::build) as [`Error::InvalidArgument`]
    /// naming `sealing_secret`.
    pub fn sealing_secret(self, secret: impl AsRef<[u8]>) -> Self {
        let sealer = Sealer::from_secret("sealing_secret", secret.as_ref(), PENDING_PURPOSE);
        self.set(sealer, |c, sealer| c.sealer = Some(Arc::new(sealer)))
    }

    /// How long after [`seal_pending`](Self::seal_pending) a pending sign-in can still be
    /// opened; an older one is [`CallbackError::SealedSignInExpired`](crate::error::CallbackError::SealedSignInExpired).
    /// Default: 10 minutes.
    pub fn pending_max_age(self, max_age: Duration) -> Self {
        let checked = Some(max_age).filter(|max_age| !max_age.is_zero());
        let checked =
            checked.ok_or_else(|| Error::invalid("pending_max_age", "expected a duration above zero"));
        self.set(checked, |c, max_age| c.pending_max_age = max_age)
    }

    /// The pending sign-in `request` sealed into a cookie-safe string (base64url, about 270
    /// characters), to keep in the user's browser until the callback: the app needs no
    /// server-side state, and any instance with the same
    /// [`sealing_secret`](Self::sealing_secret) finishes the sign-in with
    /// [`exchange_sealed`](Self::exchange_sealed) (or [`open_pending`](Self::open_pending) and
    /// [`exchange`](Self::exchange)).
    ///
    /// The value is encrypted and authenticated, bound to this flow's client id and redirect
    /// URI, and carries its creation time; it can be opened for
    /// [`pending_max_age`](Self::pending_max_age). Send it as an `HttpOnly`, `Secure`,
    /// `SameSite=Lax` cookie.
    ///
    /// ```
    /// use business_records::auth::AuthorizationCodeFlow;
    /// let flow = AuthorizationCodeFlow::new("https://auth.example.com", "my-web-app", "https://app.example.com/callback")?
    ///     .sealing_secret("a secret of at least 32 bytes, from the app's vault");
    /// let request = flow.authorize_url();
    /// let cookie = flow.seal_pending(&request)?;
    /// let opened = flow.open_pending(&cookie)?;
    /// assert_eq!(opened.state(), request.state());
    /// # Ok::<(), business_records::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] naming `sealing_secret` when none was set (or it is too short),
    /// or the operating system's random source fails.
    pub fn seal_pending(&self, request: &AuthorizationRequest) -> Result<String, Error> {
        let sealer = self.sealer()?;
        let pending =
            (Utc::now().timestamp_millis(), &request.state, request.verifier.secret(), &request.nonce);
        let plain = serde_json::to_vec(&pending).map_err(|e| Error::invalid("request", e.to_string()))?;
        let sealed = sealer
            .seal(&self.binding(), &plain)
            .ok_or_else(|| Error::invalid("sealing_secret", "the operating system's random source failed"))?;
        Ok(URL_SAFE_NO_PAD.encode([self.flow_tag(), sealed].concat()))
    }

    /// Opens a value of [`seal_pending`](Self::seal_pending). The request it gives back has no
    /// [`url`](AuthorizationRequest::url) (the browser has already been there).
    ///
    /// # Errors
    ///
    /// [`Error::Callback`] with [`CallbackError::SealedSignInForeign`] for a value sealed by
    /// another flow (another client id or redirect URI),
    /// [`CallbackError::SealedSignInTampered`] for one that was altered, sealed under another
    /// secret or is not a sealed sign-in at all, and [`CallbackError::SealedSignInExpired`]
    /// for one older than [`pending_max_age`](Self::pending_max_age); [`Error::InvalidArgument`]
    /// naming `sealing_secret` when none was set.
    pub fn open_pending(&self, sealed: &str) -> Result<AuthorizationRequest, Error> {
        let sealer = self.sealer()?;
        let value = URL_SAFE_NO_PAD.decode(sealed.trim()).map_err(|_| CallbackError::SealedSignInTampered)?;
        let (tag, sealed) = value.split_at_checked(TAG_LEN).ok_or(CallbackError::SealedSignInTampered)?;
        if self.flow_tag() != tag {
            return Err(CallbackError::SealedSignInForeign.into());
        }
        let plain = sealer.open(&self.binding(), sealed).ok_or(CallbackError::SealedSignInTampered)?;
        let (created_ms, state, verifier, nonce): (i64, String, String, Option<String>) =
            serde_json::from_slice(&plain).map_err(|_| CallbackError::SealedSignInTampered)?;
        let max_age = self.config.pending_max_age;
        let age_ms = Utc::now().timestamp_millis().saturating_sub(created_ms);
        if u128::try_from(age_ms).unwrap_or(0) > max_age.as_millis() {
            return Err(CallbackError::SealedSignInExpired(max_age).into());
        }
        Ok(AuthorizationRequest { url: String::new(), state, verifier: PkceVerifier::new(verifier), nonce })
    }

    /// Finishes a sign-in whose pending request was sealed with
    /// [`seal_pending`](Self::seal_pending): [`open_pending`](Self::open_pending), then
    /// [`exchange`](Self::exchange). Nothing is sent when the value cannot be opened.
    ///
    /// ```no_run
    /// # async fn run(flow: business_records::auth::AuthorizationCodeFlow, cookie: &str, uri: &str)
    /// #     -> Result<(), business_records::Error> {
    /// // In the callback handler: the cookie set at /login, and the request's URI as the
    /// // framework gives it (`/callback?code=..&state=..&iss=..`).
    /// let tokens = flow.exchange_sealed(cookie, uri).await?;
    /// # let _ = tokens; Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`open_pending`](Self::open_pending), then as [`exchange`](Self::exchange).
    pub async fn exchange_sealed(&self, sealed: &str, callback: &str) -> Result<TokenSet, Error> {
        self.exchange(self.open_pending(sealed)?, callback).await
    }

    /// The sealer, once every setting of the flow is valid.
    fn sealer(&self) -> Result<&Sealer, Error> {
        self.check()?;
        let missing = "required to seal or open a pending sign-in: call `sealing_secret(..)`";
        self.config.sealer.as_deref().ok_or_else(|| Error::invalid("sealing_secret", missing))
    }

    /// The additional data every sealed value of this flow is bound to.
    fn binding(&self) -> String {
        format!("{PENDING_PURPOSE}\n{}\n{}", self.client_id(), self.redirect_uri())
    }

    /// Says which flow sealed a value (public data: the client id and redirect URI).
    fn flow_tag(&self) -> Vec<u8> {
        digest::digest(&digest::SHA256, self.binding().as_bytes()).as_ref()[..TAG_LEN].to_vec()
    }
}
