//! User sign-in on the reference server: public clients, the test user, refresh-token
//! settings, and the handle's view of them.

use std::collections::HashMap;
use std::time::Duration;

use super::auth::{self, RegisteredClient};
use super::{ReferenceServer, ReferenceServerBuilder};

/// Scopes a public client may ask for.
const USER_SCOPES: &[&str] = &["openid", "profile", "email", "offline_access", "api/read", "api/write"];

/// The builder's user sign-in settings.
#[derive(Debug, Clone)]
pub(crate) struct UserOptions {
    /// Public clients and their redirect URIs.
    public_clients: Vec<(String, Vec<String>)>,
    test_user: String,
    /// Users `login_hint` can pick besides the test user.
    more_users: Vec<String>,
    deny_authorization: bool,
    rotate_refresh_tokens: bool,
    refresh_token_lifetime: Duration,
}

impl Default for UserOptions {
    fn default() -> Self {
        UserOptions {
            public_clients: Vec::new(),
            test_user: ReferenceServer::DEFAULT_TEST_USER.to_owned(),
            more_users: Vec::new(),
            deny_authorization: false,
            rotate_refresh_tokens: false,
            refresh_token_lifetime: Duration::from_secs(30 * 24 * 3600),
        }
    }
}

impl UserOptions {
    /// Adds the public clients to `clients`: the default one (any loopback redirect URI) and
    /// those registered with [`ReferenceServerBuilder::public_client`].
    pub(crate) fn register(&self, clients: &mut HashMap<String, RegisteredClient>) {
        let scopes: Vec<String> = USER_SCOPES.iter().map(|s| (*s).to_owned()).collect();
        clients.insert(
            ReferenceServer::DEFAULT_PUBLIC_CLIENT_ID.to_owned(),
            RegisteredClient::public(scopes.clone(), Vec::new(), true),
        );
        for (id, redirect_uris) in &self.public_clients {
            clients
                .insert(id.clone(), RegisteredClient::public(scopes.clone(), redirect_uris.clone(), false));
        }
    }

    /// The authorization server's settings for `issuer` and `audience`.
    pub(crate) fn settings(
        &self,
        issuer: String,
        audience: String,
        token_lifetime_secs: i64,
    ) -> auth::AuthSettings {
        auth::AuthSettings {
            issuer,
            audience,
            token_lifetime_secs,
            id_token_lifetime_secs: 3600,
            refresh_token_lifetime_secs: secs(self.refresh_token_lifetime),
            code_lifetime_secs: 60,
            rotate_refresh_tokens: self.rotate_refresh_tokens,
            test_user: self.test_user.clone(),
            users: std::iter::once(&self.test_user).chain(&self.more_users).cloned().collect(),
            deny_authorization: self.deny_authorization,
        }
    }
}

fn secs(duration: Duration) -> i64 {
    i64::try_from(duration.as_secs()).unwrap_or(i64::MAX)
}

impl ReferenceServerBuilder {
    /// Registers a public client (a native or browser app: no secret, PKCE required) that may
    /// be sent back to `redirect_uris` (exact match; any port on a loopback IP literal, RFC 8252
    /// section 7.3). The public client
    /// [`DEFAULT_PUBLIC_CLIENT_ID`](ReferenceServer::DEFAULT_PUBLIC_CLIENT_ID), which accepts any
    /// loopback redirect URI, is always registered.
    pub fn public_client<I, S>(mut self, id: impl Into<String>, redirect_uris: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.users.public_clients.push((id.into(), redirect_uris.into_iter().map(Into::into).collect()));
        self
    }

    /// The subject `/oauth2/authorize` signs in without asking. Default:
    /// [`DEFAULT_TEST_USER`](ReferenceServer::DEFAULT_TEST_USER).
    pub fn test_user(mut self, subject: impl Into<String>) -> Self {
        self.users.test_user = subject.into();
        self
    }

    /// Registers more users: an authorization request whose `login_hint` names one signs that
    /// user in; without a hint the [`test_user`](Self::test_user) signs in, and a hint that
    /// names nobody is answered `error=access_denied`. Default: the test user alone.
    ///
    /// ```
    /// # async fn run() {
    /// use business_records_reference_server::ReferenceServer;
    /// let server = ReferenceServer::builder().users(["alice", "bob", "carol"]).start().await;
    /// assert_eq!(server.users(), ["reference-user", "alice", "bob", "carol"]);
    /// # }
    /// ```
    pub fn users<I, S>(mut self, subjects: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.users.more_users.extend(subjects.into_iter().map(Into::into));
        self
    }

    /// Makes `/oauth2/authorize` answer every valid request with `error=access_denied`, as when
    /// the user declines. Default: off (the test user approves).
    pub fn deny_authorization(mut self, deny: bool) -> Self {
        self.users.deny_authorization = deny;
        self
    }

    /// Whether each refresh returns a new refresh token and retires the old one, with reuse
    /// detection (RFC 9700 section 4.14.2): a retired token presented again revokes the whole
    /// sign-in, every token renewed from it included. Off, refresh responses carry no refresh
    /// token and the one from sign-in stays valid, as in the API's token table. Default: off.
    pub fn refresh_token_rotation(mut self, rotate: bool) -> Self {
        self.users.rotate_refresh_tokens = rotate;
        self
    }

    /// How long refresh tokens last from sign-in (rotation keeps the deadline). Default: 30
    /// days.
    pub fn refresh_token_lifetime(mut self, lifetime: Duration) -> Self {
        self.users.refresh_token_lifetime = lifetime;
        self
    }
}

impl ReferenceServer {
    /// Id of the public client that is always registered; it accepts any loopback redirect
    /// URI (`http://127.0.0.1:<any port>/<any path>`).
    pub const DEFAULT_PUBLIC_CLIENT_ID: &'static str = "reference-app";
    /// Subject of the user `/oauth2/authorize` signs in.
    pub const DEFAULT_TEST_USER: &'static str = "reference-user";

    /// Id of the default public client.
    pub fn public_client_id(&self) -> &str {
        Self::DEFAULT_PUBLIC_CLIENT_ID
    }

    /// The subject of the test user.
    pub fn test_user(&self) -> &str {
        &self.auth_settings.test_user
    }

    /// Every user that can sign in: the test user first, then those of
    /// [`users`](ReferenceServerBuilder::users).
    pub fn users(&self) -> &[String] {
        &self.auth_settings.users
    }

    /// The revocation URL (RFC 7009), `{auth_url}/oauth2/revoke`.
    pub fn revocation_url(&self) -> String {
        format!("{}{}", self.auth_url, auth::REVOCATION_PATH)
    }

    /// The authorization URL, `{auth_url}/oauth2/authorize`.
    pub fn authorize_url(&self) -> String {
        format!("{}{}", self.auth_url, auth::AUTHORIZE_PATH)
    }

    /// The discovery document's URL, `{auth_url}/.well-known/openid-configuration`.
    pub fn discovery_url(&self) -> String {
        format!("{}{}", self.auth_url, auth::DISCOVERY_PATH)
    }

    /// The introspection URL, `{auth_url}/oauth2/introspect`.
    pub fn introspection_url(&self) -> String {
        format!("{}{}", self.auth_url, auth::INTROSPECTION_PATH)
    }

    /// `POST /oauth2/token` requests received with this `grant_type` (any outcome).
    pub fn token_requests_for(&self, grant_type: &str) -> usize {
        self.shared.grant_count(grant_type)
    }

    /// Revokes every refresh token issued so far: refreshing with one is `invalid_grant`.
    /// Access tokens keep working until they expire.
    pub fn revoke_refresh_tokens(&self) {
        self.shared.sessions().revoke_all();
    }

    /// The refresh tokens the server would accept now for `subject` (e.g.
    /// [`test_user`](Self::test_user)): issued to it, not expired, not revoked and, with
    /// [`refresh_token_rotation`](ReferenceServerBuilder::refresh_token_rotation), not yet
    /// replaced. One per live sign-in, oldest sign-in first; so after one sign-in it is the
    /// token a client must hold to stay signed in.
    ///
    /// ```
    /// # async fn run() {
    /// use business_records_reference_server::ReferenceServer;
    ///
    /// let server = ReferenceServer::builder().refresh_token_rotation(true).start().await;
    /// // ... sign in and refresh through a client that saves to `store` ...
    /// let current = server.active_refresh_tokens(server.test_user());
    /// assert!(current.len() <= 1);
    /// # }
    /// ```
    pub fn active_refresh_tokens(&self, subject: &str) -> Vec<String> {
        self.shared.sessions().active_refresh_tokens(subject)
    }

    /// How many times a replaced refresh token was presented again. Each time, reuse
    /// detection revoked the sign-in it belonged to, so with a client that never loses a
    /// rotated token this stays zero.
    pub fn refresh_token_reuses(&self) -> u64 {
        self.shared.sessions().reuses()
    }
}
