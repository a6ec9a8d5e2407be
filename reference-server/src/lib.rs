//! An in-process reference implementation of the business-records API and its authorization
//! server, over real HTTP, for tests: of the `business-records` client crate, and of code of
//! your own that talks to the API (as stripe-mock or aws-smithy-mocks serve theirs).
//!
//! ```toml
//! [dev-dependencies]
//! business-records-reference-server = "0.1"
//! ```
//!
//! # Testing your own code
//!
//! A test says what it needs in a line or two; nothing waits in real time.
//!
//! ```no_run
//! use business_records_reference_server::{Endpoint, Fault, Faults, ReferenceServer, RetryAfter};
//! use serde_json::json;
//!
//! # async fn run() -> Result<(), business_records_reference_server::Error> {
//! let server = ReferenceServer::builder()
//!     .company(json!({"id": "cmp_1", "name": "Acme", "status": "active"}))
//!     .contact(json!({"id": "ct_1", "companyId": "cmp_1", "name": "Ada"}))
//!     .faults(Faults::new().on(Endpoint::Companies, 2, Fault::RateLimited(RetryAfter::Seconds(0))))
//!     .start()
//!     .await;
//! let settings = server.settings(); // base_url, auth_url, client_id, client_secret, scopes
//! // ... run the code under test against the server ...
//! server.upsert_company(json!({"id": "cmp_2", "name": "Globex"}))?;
//! let asked = server.journal();
//! assert!(asked.iter().all(|request| request.status() < 500));
//! # let _ = settings; Ok(()) }
//! ```
//!
//! - **Your records.** [`company`](ReferenceServerBuilder::company) and
//!   [`contact`](ReferenceServerBuilder::contact) take JSON objects with an `id`; a builder
//!   given records of its own serves those alone, unless
//!   [`companies(n)`](ReferenceServerBuilder::companies) asks for generated ones too. While it
//!   runs, [`upsert_company`](ReferenceServer::upsert_company),
//!   [`remove_company`](ReferenceServer::remove_company) (and the contact and
//!   [`upsert`](ReferenceServer::upsert) forms) change what is served, with the real filter,
//!   sort, cursor and `totalCount` rules; [`dataset`](ReferenceServer::dataset) is what is
//!   served at that moment.
//! - **Your resources.** [`list`](ReferenceServerBuilder::list) serves `GET /v1/{name}` with
//!   the page envelope, cursors, `limit`, a sort by any field and equality filters;
//!   [`collection`](ReferenceServerBuilder::collection) also takes `POST` and `DELETE`, once
//!   per `Idempotency-Key`. Every resource, companies and contacts included, serves
//!   `GET /v1/{name}/{id}` (404 `not_found`).
//! - **Faults on one endpoint.** [`Faults::on`], [`on_every`](Faults::on_every) and
//!   [`on_sequence`](Faults::on_sequence) number the requests of one [`Endpoint`]: a 429 with
//!   the `Retry-After` you choose ([`RetryAfter::Seconds(0)`](RetryAfter::Seconds) included, or
//!   any raw text), any status, headers and bytes ([`Reply`], bodies of any size generated as
//!   they are sent), dropped connections, bodies cut short, slow answers, empty pages.
//!   [`expire_tokens`](ReferenceServer::expire_tokens) and
//!   [`expire_cursors`](ReferenceServer::expire_cursors) act at once; [`Fault::ExpireTokens`]
//!   and [`Fault::ExpireCursor`] on a request number act in the middle of one call of the code
//!   under test (between two pages of one listing).
//! - **What your code sent.** [`journal`](ReferenceServer::journal): every request in order,
//!   with its endpoint, method, path, query, headers, `Authorization` scheme,
//!   `Idempotency-Key`, status answered, client id and user; never a secret. An entry prints
//!   as one line: `GET /v1/contacts?limit=1&companyId=cmp_2 → 200`.
//! - **A client in one expression.** [`settings`](ReferenceServer::settings) is plain
//!   name/value pairs, for the client's `Client::builder().settings(server.settings())`.
//! - **A sign-in without a browser.** [`approve`](ReferenceServer::approve) runs an
//!   authorization URL as a browser would and returns the callback URL (`code`, `state`,
//!   `iss`, or `error`).
//! - **Strictness.** [`client_authentication`](ReferenceServerBuilder::client_authentication)
//!   accepts one client authentication method only, so a test proves which one its client
//!   uses.
//!
//! # Reference
//!
//! It shares no code with the client: its PKCE check, its token signing and validation, its
//! cursors and its HTTP dates are its own, so a test of the client against it checks the
//! client against an independent implementation of the specification.
//!
//! ## Tasks
//!
//! | To | Use |
//! |---|---|
//! | start a server | [`ReferenceServer::start`], or [`ReferenceServer::builder`] for records, resources, clients, users, token lifetimes, ports |
//! | know what it serves | [`ReferenceServer::dataset`]: [`Dataset`] of [`Record`]s in every served order |
//! | count and read requests | [`journal`](ReferenceServer::journal) ([`JournalEntry`]), [`requests`](ReferenceServer::requests), [`token_requests`](ReferenceServer::token_requests), [`fault_counts`](ReferenceServer::fault_counts) |
//! | make tokens without a request | [`ReferenceServer::mint_token`] with a [`TokenSpec`] |
//! | sign users in | [`approve`](ReferenceServer::approve), [`public_client`](ReferenceServerBuilder::public_client), [`users`](ReferenceServerBuilder::users), [`refresh_token_rotation`](ReferenceServerBuilder::refresh_token_rotation) |
//! | inject failures | [`Faults`] of [`Fault`]s by [`Endpoint`], [`ReferenceServerBuilder::faults`] and [`ReferenceServer::set_faults`] |
//! | play a deprecated or retired API | [`Lifecycle`], [`DeprecationHeaders`], [`serve_version`](ReferenceServerBuilder::serve_version) |
//! | play a hostile OpenID provider | [`Hostile`] |
//! | send records oddly | [`OddRecords`], [`OddKind`] |
//! | rotate or revoke keys and tokens | [`rotate_signing_key`](ReferenceServer::rotate_signing_key), [`expire_tokens`](ReferenceServer::expire_tokens), [`revoke_refresh_tokens`](ReferenceServer::revoke_refresh_tokens) |
//! | run a Redis for tests | [`RedisServer`] (needs `redis-server` on `PATH`) |
//! | serve other programs | the example `reference_server` (`cargo run --example reference_server -- --port 8080`) |
//!
//! ## What it serves
//!
//! [`ReferenceServer`] runs two local HTTP servers: an authorization server
//! ([`auth_url`](ReferenceServer::auth_url): `GET /oauth2/authorize`,
//! `POST /oauth2/token` with the client-credentials, authorization-code and
//! refresh-token grants, `GET /.well-known/jwks.json`,
//! `GET /.well-known/openid-configuration`, `POST /oauth2/introspect`,
//! `POST /oauth2/revoke`) and the
//! API ([`base_url`](ReferenceServer::base_url): `GET /v1/companies`,
//! `GET /v1/contacts`, `GET /v1/companies/{id}`, `GET /v1/contacts/{id}`, and the resources a
//! test declares). It is the specification made executable, including
//! the decisions the specification leaves open:
//!
//! - `/oauth2/authorize` requires every parameter of API Part 4.2 (PKCE `S256`
//!   only) and signs the [`test user`](ReferenceServer::DEFAULT_TEST_USER) in at
//!   once, answering with `code`, `state` and `iss`; a bad client or redirect URI
//!   is a 400 page, other errors go back to the redirect URI. Codes are single-use.
//!   Refresh responses carry no `refresh_token`, as in the API's token table: the token
//!   from sign-in stays valid. With
//!   [`refresh_token_rotation`](ReferenceServerBuilder::refresh_token_rotation) each refresh
//!   replaces it, and a replaced one presented again revokes the sign-in (reuse detection,
//!   RFC 9700 section 4.14.2); [`active_refresh_tokens`](ReferenceServer::active_refresh_tokens)
//!   and [`refresh_token_reuses`](ReferenceServer::refresh_token_reuses) show where a sign-in
//!   stands.
//! - [`users`](ReferenceServerBuilder::users) adds users besides the test user; an authorization
//!   request's `login_hint` chooses who signs in. `POST /oauth2/revoke` (RFC 7009, advertised in
//!   discovery) ends a refresh token's grant or revokes one access token; unknown tokens are
//!   answered 200.
//! - Errors are `{"error": code, "error_description": text}` JSON everywhere.
//! - Tokens are RS256 JWTs (`kid` header; `iss` = auth URL; `aud` = the API
//!   audience; space-separated `scope`), validated on every API request against the key the
//!   server signs with (API Part 5.7: signature, `exp`, `iss`, `aud`). A missing, invalid or
//!   expired token is 401 `invalid_token`; a token without `api/read` (`api/write` for a
//!   write) is 401 `insufficient_scope`. Both carry `WWW-Authenticate: Bearer error="..."`.
//! - `limit` is 1 to 100 (default 20); `sort` is `name`, `createdAt` or
//!   `updatedAt` (any field of a declared resource), optionally prefixed with `-`, ties broken
//!   by ascending `id`; filters are `status` (companies) and `companyId` (contacts). Bad values
//!   are 400 `invalid_request`; unknown parameters are ignored.
//! - Cursors are opaque, HMAC-protected, bound to the endpoint, sort and
//!   filters (400 `invalid_cursor` otherwise) and expire after the cursor TTL
//!   (400 `cursor_expired`). `limit` may change between pages.
//! - `pagination.totalCount` is the number of results matching the filters.
//! - Unknown paths and versions other than `v1` are 404 `not_found` (a name below a served
//!   version that no resource has says how to declare one), other methods of a known
//!   path 405 `method_not_allowed` with `Allow`; wiremock routes every request, one mock per
//!   endpoint. [`serve_version`](ReferenceServerBuilder::serve_version) adds `v2` and
//!   beyond, serving the same records.
//! - Each path has a [`Lifecycle`]: stable, deprecated (every response
//!   carries the [`DeprecationHeaders`]: `Deprecation`, `Sunset`, `Link`) or
//!   sunset (410 `version_sunset` with `Sunset` and `Link`).
//! - `X-API-Preview` must be a `YYYY-MM` label (400 `invalid_request`
//!   otherwise); a label registered with
//!   [`preview_feature`](ReferenceServerBuilder::preview_feature) adds a field
//!   to every record, other labels change nothing.
//! - [`Faults`] inject failures at any [`Endpoint`]: 429 with `Retry-After`, 5xx with a JSON
//!   error, an HTML page (as a gateway in front sends) or no body, any answer of the test's
//!   making ([`Reply`]), dropped connections and bodies cut short (through an HTTP proxy, see
//!   [`Fault`]), malformed bodies, slow answers, empty pages, expired cursors, expired tokens,
//!   oversized bodies (generated as they are sent). A fault that replaces the answer acts
//!   before the request is processed, as a proxy or load balancer would, so a faulted refresh
//!   never rotates a refresh token and a faulted code exchange never consumes the code.
//!   [`ReferenceServer::fault_counts`] says what was injected.
//! - [`Hostile`] switches make the authorization server a hostile OpenID provider, one
//!   misbehaviour each, at build time or on a running server: ID tokens with claims left out or
//!   altered, foreign audiences, unsigned or HS256 tokens, keys without ids, callbacks without
//!   `iss`, refreshes that answer for another user.
//! - A rate limit shared by every caller of a client id, when set ([`TokenBucket`]): over it,
//!   429 `rate_limited` with `Retry-After` in whole seconds, and the IETF `RateLimit` /
//!   `RateLimit-Policy` fields as an option; [`rate_limit_counts`](ReferenceServer::rate_limit_counts)
//!   says how many requests it let through and refused.
//! - [`OddRecords`] sends records the way a server that follows only the API's letter may:
//!   nulls, epoch numbers, space-separated timestamps, missing fields, unreadable values and
//!   elements that are not objects.
//!
//! The API's OpenAPI document, [`OPENAPI_DOCUMENT`], is served without
//! authentication at [`openapi_url`](ReferenceServer::openapi_url), with the
//! server's own addresses in place of the example ones.
//!
//! ## Runtime
//!
//! The servers (wiremock's, and the fault proxies) run on threads of their own, each with a
//! single-threaded Tokio runtime, so a server works whatever runtime the test uses, the
//! current-thread one of `#[tokio::test]` included. Dropping the [`ReferenceServer`] stops
//! them.

#![deny(missing_docs)]
// Library code never unwraps: what comes from the network or the caller gets an error instead.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod access;
mod api;
mod approve;
mod auth;
mod builder;
mod cursor;
mod endpoint;
mod error;
mod faults;
mod form;
mod hostile;
mod http_date;
mod journal;
mod jwt;
mod odd;
mod pipeline;
mod pkce;
mod proxy;
mod rate_limit;
mod records;
mod redis_server;
mod reply;
mod routes;
mod secrets;
mod shared;
mod token_spec;
mod users;
mod versions;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use wiremock::MockServer;

pub use auth::ClientAuthMethod;
pub use builder::ReferenceServerBuilder;
pub use endpoint::Endpoint;
pub use error::Error;
pub use faults::{Fault, FaultCounts, Faults, Reply, RetryAfter};
pub use hostile::Hostile;
pub use journal::{JournalEntry, REDACTED};
pub use odd::{OddKind, OddRecords};
pub use rate_limit::{RateLimitCounts, TokenBucket};
pub use records::{COMPANY_STATUSES, Dataset, Record};
pub use redis_server::RedisServer;
pub use token_spec::TokenSpec;
pub use versions::{DeprecationHeaders, Lifecycle};

pub(crate) use reply::ErrorReply;
pub(crate) use shared::Shared;

/// The API's OpenAPI 3.1 document (`openapi/business-records-v1.yaml`), with
/// `https://api.example.com` standing for the API's base URL and
/// `https://auth.example.com` for the authorization server.
pub const OPENAPI_DOCUMENT: &str = include_str!("../openapi/business-records-v1.yaml");

/// Where the API server serves [`OPENAPI_DOCUMENT`].
pub(crate) const OPENAPI_PATH: &str = "/openapi.yaml";

/// The fault proxies in front of the API and of the authorization server.
#[derive(Debug)]
struct Proxies {
    api: proxy::Proxy,
    auth: proxy::Proxy,
}

/// A running reference server: an authorization server and the API, each
/// on its own loopback port. Dropping it stops both.
pub struct ReferenceServer {
    /// Runs as long as the handle lives (reached through [`auth_url`](Self::auth_url)).
    _auth_server: MockServer,
    api_server: MockServer,
    proxies: Option<Proxies>,
    auth_url: String,
    audience: String,
    token_lifetime_secs: i64,
    default_scopes: Vec<String>,
    keys: Arc<jwt::SigningKeys>,
    cursors: Arc<cursor::CursorCodec>,
    shared: Arc<Shared>,
    auth_settings: auth::AuthSettings,
}

impl fmt::Debug for ReferenceServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReferenceServer")
            .field("base_url", &self.base_url())
            .field("auth_url", &self.auth_url)
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

impl ReferenceServer {
    /// Default API identifier (`aud`).
    pub const DEFAULT_AUDIENCE: &'static str = "business-records-api";
    /// Id of the client that is always registered.
    pub const DEFAULT_CLIENT_ID: &'static str = "reference-client";
    /// Secret of the client that is always registered.
    pub const DEFAULT_CLIENT_SECRET: &'static str = "reference-secret";

    /// Starts a server with the defaults: 1,000 generated companies, 3 contacts per
    /// company, seed 42.
    pub async fn start() -> Self {
        Self::builder().start().await
    }

    /// A builder for a server with other settings.
    pub fn builder() -> ReferenceServerBuilder {
        ReferenceServerBuilder::default()
    }

    /// The API's base URL, `http://127.0.0.1:PORT` (no trailing slash, no
    /// version segment). With [`faults`](ReferenceServerBuilder::faults) set,
    /// the address of the fault proxy in front of the API.
    pub fn base_url(&self) -> String {
        match &self.proxies {
            Some(proxies) => format!("http://{}", proxies.api.address()),
            None => self.api_server.uri(),
        }
    }

    /// The authorization server's URL, `http://127.0.0.1:PORT`; also the
    /// tokens' issuer (`iss`). With [`faults`](ReferenceServerBuilder::faults) set, the
    /// address of the fault proxy in front of the authorization server.
    pub fn auth_url(&self) -> String {
        self.auth_url.clone()
    }

    /// What a client of the default client needs, as plain name/value pairs: `base_url`,
    /// `auth_url`, `client_id`, `client_secret`, and `scopes` (the scopes the default client
    /// is registered for, space-separated). The `business-records` client reads them with
    /// `Client::builder().settings(server.settings())`.
    ///
    /// ```
    /// # async fn run() {
    /// use business_records_reference_server::ReferenceServer;
    ///
    /// let server = ReferenceServer::start().await;
    /// let settings = server.settings();
    /// assert_eq!(settings[4], ("scopes", "api/read api/write".to_owned()));
    /// # }
    /// ```
    pub fn settings(&self) -> Vec<(&'static str, String)> {
        vec![
            ("base_url", self.base_url()),
            ("auth_url", self.auth_url()),
            ("client_id", self.client_id().to_owned()),
            ("client_secret", self.client_secret().to_owned()),
            ("scopes", self.default_scopes.join(" ")),
        ]
    }

    /// Where the API's OpenAPI document is served, `{base_url}/openapi.yaml`
    /// (no token needed).
    pub fn openapi_url(&self) -> String {
        format!("{}{OPENAPI_PATH}", self.base_url())
    }

    /// The JWKS URL, `{auth_url}/.well-known/jwks.json`.
    pub fn jwks_url(&self) -> String {
        format!("{}{}", self.auth_url, auth::JWKS_PATH)
    }

    /// The token URL, `{auth_url}/oauth2/token`.
    pub fn token_url(&self) -> String {
        format!("{}{}", self.auth_url, auth::TOKEN_PATH)
    }

    /// The API identifier tokens must carry in `aud`.
    pub fn audience(&self) -> &str {
        &self.audience
    }

    /// Id of the default client.
    pub fn client_id(&self) -> &str {
        Self::DEFAULT_CLIENT_ID
    }

    /// Secret of the default client.
    pub fn client_secret(&self) -> &str {
        Self::DEFAULT_CLIENT_SECRET
    }

    /// Requests to `endpoint` received (any outcome; a held slow request once).
    pub fn requests(&self, endpoint: Endpoint) -> usize {
        self.shared.requests(endpoint)
    }

    /// `POST /oauth2/token` requests received: [`requests(Endpoint::Token)`](Self::requests).
    pub fn token_requests(&self) -> usize {
        self.requests(Endpoint::Token)
    }

    /// `GET /.well-known/jwks.json` requests received: [`requests(Endpoint::Jwks)`](Self::requests).
    pub fn jwks_requests(&self) -> usize {
        self.requests(Endpoint::Jwks)
    }

    /// Every request either server received, oldest first (the last 10,000), each with how it
    /// was answered: see [`JournalEntry`].
    ///
    /// ```
    /// # async fn run() {
    /// use business_records_reference_server::{Endpoint, ReferenceServer};
    ///
    /// let server = ReferenceServer::start().await;
    /// // ... the code under test lists companies ...
    /// for request in server.journal().iter().filter(|r| r.endpoint() == Some(Endpoint::Companies)) {
    ///     assert_eq!(request.authorization_scheme(), Some("Bearer"));
    ///     assert_eq!(request.query("limit"), Some("100"));
    /// }
    /// # }
    /// ```
    pub fn journal(&self) -> Vec<JournalEntry> {
        self.shared.journal.entries()
    }

    /// Sets the request counts to zero and clears the journal.
    pub fn reset_counters(&self) {
        self.shared.reset_counters();
    }

    /// Replaces the fault schedule and zeroes the [`fault_counts`](Self::fault_counts).
    ///
    /// # Panics
    ///
    /// If `faults` holds a fault the proxy carries out ([`Fault::DropConnection`],
    /// [`Fault::CutBody`], [`Fault::OversizedBody`], a [`Reply::repeated`] body, a
    /// [`Fault::Slow`] token answer) and the server was started without
    /// [`faults`](ReferenceServerBuilder::faults), so without the proxy.
    pub fn set_faults(&self, faults: Faults) {
        assert!(
            self.proxies.is_some() || !faults.need_proxy(),
            "reference server: connection faults, generated bodies and slow token answers need the proxy; start the server with `.faults(..)`"
        );
        *self.shared.faults() = faults::FaultState::new(faults);
    }

    /// What the fault injection did at `endpoint` since the schedule was set.
    pub fn fault_counts(&self, endpoint: Endpoint) -> FaultCounts {
        self.shared.faults().counts(endpoint)
    }

    /// Expires every access token issued so far, at once: the API answers 401
    /// `invalid_token` to each of them, as when they run out or are revoked (after a key
    /// rotation or a security incident). Tokens issued afterwards work.
    pub fn expire_tokens(&self) {
        self.shared.token_generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Expires every cursor issued so far, at once: a request with one is answered 400
    /// `cursor_expired`. Cursors issued afterwards work.
    pub fn expire_cursors(&self) {
        self.cursors.expire_all();
    }

    /// Replaces the rate limit of the API (`None`: no limit), from the next request,
    /// with every bucket full and the [`rate_limit_counts`](Self::rate_limit_counts) at zero.
    pub fn set_rate_limit(&self, limit: Option<TokenBucket>) {
        self.shared.rate_limit.set(limit);
        self.shared.rate_limit.reset_counts();
    }

    /// How many API requests the rate limit let through and refused since it was set (or the
    /// counters were reset).
    pub fn rate_limit_counts(&self) -> RateLimitCounts {
        self.shared.rate_limit.counts()
    }

    /// Moves the path `path` (e.g. `/v1/companies`) to another stage of its lifecycle,
    /// effective from the next request.
    pub fn set_lifecycle(&self, path: impl Into<String>, lifecycle: Lifecycle) {
        self.shared.set_lifecycle(path.into(), lifecycle);
    }

    /// Signs tokens with this RSA private key (PKCS#1 or PKCS#8 PEM) under key id `kid` from
    /// now on, and withdraws the old key: the JWKS publishes the new key alone, and the API
    /// refuses tokens signed with the old one (401 `invalid_token`). Verifiers that cached
    /// the old key keep trusting it until they fetch the JWKS again.
    ///
    /// # Panics
    ///
    /// If `pem` is not an RSA private key.
    pub fn rotate_signing_key(&self, pem: &str, kid: &str) {
        if let Err(e) = self.keys.rotate(pem, kid) {
            panic!("reference server: {e}");
        }
    }

    /// The key id tokens are signed under now.
    pub fn signing_key_id(&self) -> String {
        self.keys.current().signer.kid().to_owned()
    }

    /// A signed access token built from `spec`, without a token request.
    ///
    /// # Panics
    ///
    /// If signing fails (it does not with a key accepted at start).
    pub fn mint_token(&self, spec: TokenSpec) -> String {
        let client_id = spec.client_id.as_deref().unwrap_or(Self::DEFAULT_CLIENT_ID);
        let scopes = spec.scopes.as_ref().unwrap_or(&self.default_scopes);
        let keys = self.keys.current();
        let token = keys
            .signer
            .issue(&jwt::TokenClaims {
                subject: client_id,
                client_id,
                scopes,
                lifetime_secs: spec.lifetime_secs.unwrap_or(self.token_lifetime_secs),
                audience: spec.audience.as_deref().unwrap_or(&self.audience),
                issuer: spec.issuer.as_deref().unwrap_or(&self.auth_url),
                kid: if spec.unknown_key { jwt::UNKNOWN_KID } else { keys.signer.kid() },
                generation: self.shared.token_generation.load(Ordering::SeqCst),
                clock_skew_secs: spec.clock_skew_secs,
            })
            .unwrap_or_else(|e| panic!("reference server: {e}"));
        if spec.bad_signature { jwt::corrupt_signature(&token) } else { token }
    }
}

#[cfg(test)]
mod tests;

/// The README's example, compiled as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
