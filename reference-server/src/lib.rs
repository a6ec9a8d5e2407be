//! An in-process reference implementation of the business-records API and its authorization
//! server, for tests: of the `business-records` client crate, and of code of your own that
//! talks to the API.
//!
//! It shares no code with the client: its PKCE check, its token signing and validation, its
//! cursors and its HTTP dates are its own, so a test of the client against it checks the
//! client against an independent implementation of the specification. Add it as a
//! dev-dependency:
//!
//! ```toml
//! [dev-dependencies]
//! business-records-reference-server = "0.1"
//! ```
//!
//! ```no_run
//! use business_records_reference_server::ReferenceServer;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let server = ReferenceServer::builder().companies(250).seed(7).start().await;
//! let token: serde_json::Value = reqwest::Client::new()
//!     .post(format!("{}/oauth2/token", server.auth_url()))
//!     .basic_auth(server.client_id(), Some(server.client_secret()))
//!     .form(&[("grant_type", "client_credentials"), ("scope", "api/read")])
//!     .send()
//!     .await?
//!     .json()
//!     .await?;
//! let expected = server.dataset().companies_sorted("-createdAt", Some("active"));
//! # let _ = (token, expected);
//! # Ok(()) }
//! ```
//!
//! ## Tasks
//!
//! | To | Use |
//! |---|---|
//! | start a server | [`ReferenceServer::start`], or [`ReferenceServer::builder`] for the dataset's size and seed, clients, users, token lifetimes, ports |
//! | know what it serves | [`ReferenceServer::dataset`]: [`Dataset`] with its records in every served order |
//! | count and read requests | [`token_requests`](ReferenceServer::token_requests), [`api_requests`](ReferenceServer::api_requests) ([`ServedRequest`]), [`recorded_requests`](ReferenceServer::recorded_requests) ([`RecordedRequest`]), [`fault_counts`](ReferenceServer::fault_counts) |
//! | make tokens without a request | [`ReferenceServer::mint_token`] with a [`TokenSpec`] |
//! | sign users in | [`public_client`](ReferenceServerBuilder::public_client), [`users`](ReferenceServerBuilder::users), [`refresh_token_rotation`](ReferenceServerBuilder::refresh_token_rotation) |
//! | inject failures | [`Faults`] of [`Fault`]s, [`ReferenceServerBuilder::faults`] and [`ReferenceServer::set_faults`] |
//! | play a deprecated or retired API | [`Lifecycle`], [`DeprecationHeaders`], [`serve_version`](ReferenceServerBuilder::serve_version) |
//! | play a hostile OpenID provider | [`Hostile`] |
//! | send records oddly | [`OddRecords`], [`OddKind`] |
//! | rotate or revoke keys and tokens | [`rotate_signing_key`](ReferenceServer::rotate_signing_key), [`revoke_issued_tokens`](ReferenceServer::revoke_issued_tokens), [`revoke_refresh_tokens`](ReferenceServer::revoke_refresh_tokens) |
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
//! `GET /v1/contacts`). It is the specification made executable, including
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
//!   expired token is 401 `invalid_token`; a token without `api/read` is 401
//!   `insufficient_scope`. Both carry `WWW-Authenticate: Bearer error="..."`.
//! - `limit` is 1 to 100 (default 20); `sort` is `name`, `createdAt` or
//!   `updatedAt`, optionally prefixed with `-`, ties broken by ascending `id`;
//!   filters are `status` (companies) and `companyId` (contacts). Bad values
//!   are 400 `invalid_request`; unknown parameters are ignored.
//! - Cursors are opaque, HMAC-protected, bound to the endpoint, sort and
//!   filters (400 `invalid_cursor` otherwise) and expire after the cursor TTL
//!   (400 `cursor_expired`). `limit` may change between pages.
//! - `pagination.totalCount` is the number of results matching the filters.
//! - Unknown paths and versions other than `v1` are 404 `not_found`, other methods of a known
//!   path 405 `method_not_allowed` with `Allow`; wiremock routes every request, one mock per
//!   endpoint. [`serve_version`](ReferenceServerBuilder::serve_version) adds `v2` and
//!   beyond, serving the same records.
//! - Each endpoint has a [`Lifecycle`]: stable, deprecated (every response
//!   carries the [`DeprecationHeaders`]: `Deprecation`, `Sunset`, `Link`) or
//!   sunset (410 `version_sunset` with `Sunset` and `Link`).
//! - `X-API-Preview` must be a `YYYY-MM` label (400 `invalid_request`
//!   otherwise); a label registered with
//!   [`preview_feature`](ReferenceServerBuilder::preview_feature) adds a field
//!   to every item, other labels change nothing.
//! - [`Faults`] inject failures: 429 with `Retry-After`, 5xx with a JSON error, an HTML page
//!   (as a gateway in front sends) or no body, dropped
//!   connections and bodies cut short (through an HTTP proxy, see [`Fault`]),
//!   malformed bodies, slow answers, empty pages, expired cursors, expired tokens, oversized
//!   bodies (generated as they are sent) and raw replies such as a bare 410. The token and
//!   JWKS endpoints have schedules of their own ([`Faults::token_every`],
//!   [`Faults::jwks_every`] and friends); a token fault acts before the grant is processed, as
//!   a proxy or load balancer would, so a faulted refresh never rotates a refresh token and a
//!   faulted code exchange never consumes the code. [`ReferenceServer::fault_counts`] says
//!   what was injected.
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
mod auth;
mod builder;
mod cursor;
mod dataset;
mod faults;
mod hostile;
mod http_date;
mod jwt;
mod odd;
mod pkce;
mod proxy;
mod rate_limit;
mod recorder;
mod redis_server;
mod reply;
mod routes;
mod secrets;
mod served;
mod shared;
mod token_spec;
mod users;
mod versions;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use wiremock::MockServer;

pub use builder::ReferenceServerBuilder;
pub use dataset::{COMPANY_STATUSES, Dataset, DatasetCompany, DatasetContact};
pub use faults::{EndpointFaultCounts, Fault, FaultCounts, Faults, RetryAfter};
pub use hostile::Hostile;
pub use odd::{OddKind, OddRecords};
pub use rate_limit::{RateLimitCounts, TokenBucket};
pub use recorder::RecordedRequest;
pub use redis_server::RedisServer;
pub use served::ServedRequest;
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
    dataset: Arc<Dataset>,
    shared: Arc<Shared>,
    auth_settings: auth::AuthSettings,
    recorder: recorder::Recorder,
}

impl fmt::Debug for ReferenceServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReferenceServer")
            .field("base_url", &self.base_url())
            .field("auth_url", &self.auth_url)
            .field("audience", &self.audience)
            .field("companies", &self.dataset.companies.len())
            .field("contacts", &self.dataset.contacts.len())
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

    /// Starts a server with the defaults: 1,000 companies, 3 contacts per
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

    /// The records served.
    pub fn dataset(&self) -> &Dataset {
        &self.dataset
    }

    /// `POST /oauth2/token` requests received (any grant, any outcome).
    pub fn token_requests(&self) -> usize {
        self.shared.token_requests.load(Ordering::Relaxed)
    }

    /// `GET /.well-known/jwks.json` requests received.
    pub fn jwks_requests(&self) -> usize {
        self.shared.jwks_requests.load(Ordering::Relaxed)
    }

    /// Requests the API server received, oldest first (the last 10,000).
    pub fn api_requests(&self) -> Vec<ServedRequest> {
        self.shared.api_requests()
    }

    /// Requests either server received, oldest first (the last 10,000), with the headers
    /// named in [`record_headers`](ReferenceServerBuilder::record_headers); empty when none
    /// were named.
    pub fn recorded_requests(&self) -> Vec<RecordedRequest> {
        self.recorder.requests()
    }

    /// Sets the token and JWKS request counts to zero and clears the
    /// request logs.
    pub fn reset_counters(&self) {
        self.recorder.clear();
        self.shared.reset_counters();
    }

    /// Replaces the fault schedule and zeroes the [`fault_counts`](Self::fault_counts).
    ///
    /// # Panics
    ///
    /// If `faults` holds [`Fault::DropConnection`] or [`Fault::CutBody`], or a
    /// [`Fault::Slow`] token fault, and the server was started without
    /// [`faults`](ReferenceServerBuilder::faults), so without the proxy that
    /// carries them out.
    pub fn set_faults(&self, faults: Faults) {
        assert!(
            self.proxies.is_some() || !faults.need_proxy(),
            "reference server: connection faults and slow token answers need the proxy; start the server with `.faults(..)`"
        );
        *self.shared.faults.lock().unwrap_or_else(|e| e.into_inner()) = faults::FaultState::new(faults);
    }

    /// What the fault injection did since the schedule was set.
    pub fn fault_counts(&self) -> FaultCounts {
        self.shared.faults.lock().unwrap_or_else(|e| e.into_inner()).counts()
    }

    /// Replaces the rate limit of the list endpoints (`None`: no limit), from the next request,
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

    /// Moves the endpoint at `path` (e.g. `/v1/companies`) to another stage
    /// of its lifecycle, effective from the next request.
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

    /// Revokes every access token issued so far: the API answers 401 `invalid_token` to each
    /// of them, as after a key rotation or a security incident. Tokens issued afterwards work.
    pub fn revoke_issued_tokens(&self) {
        self.shared.token_generation.fetch_add(1, Ordering::SeqCst);
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
