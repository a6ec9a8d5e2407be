//! The flow's settings for web apps: the secret that seals pending sign-ins, their maximum
//! age, and the revocation endpoint that sign-out uses.

use std::sync::Arc;
use std::time::Duration;

use url::Url;

use super::super::seal::Sealer;
use super::AuthorizationCodeFlow;
use crate::{Error, urls};

/// How long a sealed pending sign-in can be opened unless set otherwise: 10 minutes.
pub(super) const DEFAULT_PENDING_MAX_AGE: Duration = Duration::from_secs(600);
/// What the sealing key is for (HKDF info): keys for other uses of the same secret differ.
pub(super) const PENDING_PURPOSE: &str = "pending sign-in";

/// Settings of [`AuthorizationCodeFlow`] for web apps.
#[derive(Clone)]
pub(super) struct WebSettings {
    /// Seals pending sign-ins; `None` until [`AuthorizationCodeFlow::sealing_secret`].
    pub(super) sealer: Option<Arc<Sealer>>,
    pub(super) pending_max_age: Duration,
    /// Where sign-out revokes tokens (RFC 7009); `None` when the server offers none.
    pub(super) revocation_url: Option<Url>,
}

impl Default for WebSettings {
    fn default() -> Self {
        WebSettings { sealer: None, pending_max_age: DEFAULT_PENDING_MAX_AGE, revocation_url: None }
    }
}

impl AuthorizationCodeFlow {
    pub(super) fn with_revocation(mut self, url: Option<Url>) -> Self {
        Arc::make_mut(&mut self.config).web.revocation_url = url;
        self
    }

    fn invalid_setting(mut self, error: Error) -> Self {
        self.config_mut().invalid.get_or_insert(error);
        self
    }

    /// The secret pending sign-ins are sealed with (AES-256-GCM under a key derived from it
    /// with HKDF-SHA256): at least 32 bytes, random, the same on every instance of the app, and
    /// kept out of source control. See [`seal_pending`](Self::seal_pending). Default: none.
    ///
    /// A shorter secret is reported by [`seal_pending`](Self::seal_pending),
    /// [`open_pending`](Self::open_pending), [`exchange`](Self::exchange) and
    /// [`ClientBuilder::build`](crate::ClientBuilder::build) as [`Error::InvalidArgument`]
    /// naming `sealing_secret`.
    pub fn sealing_secret(mut self, secret: impl AsRef<[u8]>) -> Self {
        match Sealer::from_secret("sealing_secret", secret.as_ref(), PENDING_PURPOSE) {
            Ok(sealer) => {
                self.config_mut().web.sealer = Some(Arc::new(sealer));
                self
            }
            Err(error) => self.invalid_setting(error),
        }
    }

    /// How long after [`seal_pending`](Self::seal_pending) a pending sign-in can still be
    /// opened; an older one is [`CallbackError::SealedSignInExpired`](crate::error::CallbackError::SealedSignInExpired).
    /// Default: 10 minutes.
    pub fn pending_max_age(mut self, max_age: Duration) -> Self {
        if max_age.is_zero() {
            return self.invalid_setting(Error::invalid("pending_max_age", "expected a duration above zero"));
        }
        self.config_mut().web.pending_max_age = max_age;
        self
    }

    /// The revocation endpoint (RFC 7009) that [`revoke`](Self::revoke) and
    /// [`Client::sign_out`](crate::Client::sign_out) use. Default: `{auth_url}/oauth2/revoke`
    /// for [`new`](Self::new), the discovery document's `revocation_endpoint` for
    /// [`from_metadata`](Self::from_metadata).
    ///
    /// An invalid URL (not https, off loopback) is reported as [`Error::InvalidArgument`]
    /// naming `revocation_url`.
    pub fn revocation_url(self, url: impl AsRef<str>) -> Self {
        match urls::parse_service_url("revocation_url", url.as_ref()) {
            Ok(url) => {
                let mut flow = self;
                flow.config_mut().web.revocation_url = Some(url);
                flow
            }
            Err(error) => self.invalid_setting(error),
        }
    }

    /// Where sign-out revokes tokens, if anywhere.
    pub fn revocation_endpoint(&self) -> Option<&Url> {
        self.config.web.revocation_url.as_ref()
    }
}
