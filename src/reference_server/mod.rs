//! An in-process reference implementation of the business-records API
//! (feature `reference-server`).
//!
//! [`ReferenceServer`] runs two local HTTP servers: an authorization server
//! ([`auth_url`](ReferenceServer::auth_url): `GET /oauth2/authorize`,
//! `POST /oauth2/token` with the client-credentials, authorization-code and
//! refresh-token grants, `GET /.well-known/jwks.json`,
//! `GET /.well-known/openid-configuration`, `POST /oauth2/introspect`) and the
//! API ([`base_url`](ReferenceServer::base_url): `GET /v1/companies`,
//! `GET /v1/contacts`). It is the specification made executable, including
//! the decisions the specification leaves open:
//!
//! - `/oauth2/authorize` requires every parameter of spec Part 4.2 (PKCE `S256`
//!   only) and signs the [`test user`](ReferenceServer::DEFAULT_TEST_USER) in at
//!   once, answering with `code`, `state` and `iss`; a bad client or redirect URI
//!   is a 400 page, other errors go back to the redirect URI. Codes are single-use.
//!   Refresh responses carry no `refresh_token`, as in the spec's token table: the token
//!   from sign-in stays valid. With
//!   [`refresh_token_rotation`](ReferenceServerBuilder::refresh_token_rotation) each refresh
//!   replaces it, and a replaced one presented again revokes the sign-in (reuse detection,
//!   RFC 9700 section 4.14.2); [`active_refresh_tokens`](ReferenceServer::active_refresh_tokens)
//!   and [`refresh_token_reuses`](ReferenceServer::refresh_token_reuses) show where a sign-in
//!   stands.
//! - Errors are `{"error": code, "error_description": text}` JSON everywhere.
//! - Tokens are RS256 JWTs (`kid` header; `iss` = auth URL; `aud` = the API
//!   audience; space-separated `scope`), validated on every API request with
//!   [`TokenVerifier`](crate::auth::TokenVerifier). A missing, invalid or
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
//! - Unknown paths and versions other than `v1` are 404 `not_found`;
//!   [`serve_version`](ReferenceServerBuilder::serve_version) adds `v2` and
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
//!   connections and bodies cut short (through a TCP proxy, see [`Fault`]),
//!   malformed bodies, slow answers, empty pages, expired cursors, expired tokens, oversized
//!   bodies (generated as they are sent) and raw replies such as a bare 410. The token and
//!   JWKS endpoints have schedules of their own ([`Faults::token_every`],
//!   [`Faults::jwks_every`] and friends); a token fault acts before the grant is processed, as
//!   a proxy or load balancer would, so a faulted refresh never rotates a refresh token and a
//!   faulted code exchange never consumes the code. [`ReferenceServer::fault_counts`] says
//!   what was injected.
//! - [`OddRecords`] sends records the way a server that follows only the spec's letter may:
//!   nulls, epoch numbers, space-separated timestamps, missing fields, unreadable values and
//!   elements that are not objects.
//!
//! The API's OpenAPI document, [`OPENAPI_DOCUMENT`], is served without
//! authentication at [`openapi_url`](ReferenceServer::openapi_url), with the
//! server's own addresses in place of the example ones.
//!
//! ```no_run
//! use business_records::reference_server::ReferenceServer;
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

mod api;
mod auth;
mod cursor;
mod dataset;
mod faults;
mod jwt;
mod odd;
mod proxy;
mod recorder;
#[cfg(feature = "redis")]
mod redis_server;
mod users;
mod versions;

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use wiremock::matchers::{any, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

pub use dataset::{COMPANY_STATUSES, Company, Contact, Dataset};
pub use faults::{EndpointFaultCounts, Fault, FaultCounts, Faults, RetryAfter, TokenFaultCounts};
pub use odd::{OddKind, OddRecords};
pub use recorder::RecordedRequest;
#[cfg(feature = "redis")]
pub use redis_server::RedisServer;
pub use versions::{DeprecationHeaders, Lifecycle};

/// The API's OpenAPI 3.1 document (`openapi/business-records-v1.yaml`), with
/// `https://api.example.com` standing for the API's base URL and
/// `https://auth.example.com` for the authorization server.
pub const OPENAPI_DOCUMENT: &str = include_str!("../../openapi/business-records-v1.yaml");

/// Where the API server serves [`OPENAPI_DOCUMENT`].
const OPENAPI_PATH: &str = "/openapi.yaml";

/// How many [`ApiRequest`]s are kept; older ones are dropped.
const API_LOG_CAPACITY: usize = 10_000;

/// One request the API server received.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiRequest {
    /// HTTP method, e.g. `GET`.
    pub method: String,
    /// URL path, e.g. `/v1/companies`.
    pub path: String,
    /// Decoded query parameters in the order they were sent.
    pub query: Vec<(String, String)>,
    /// Whether an `Authorization` header was present.
    pub authorization: bool,
    /// The `X-API-Preview` header, if one was sent.
    pub preview: Option<String>,
    /// The status code of the response (200 for a dropped connection or a
    /// body cut short, which the client never sees whole).
    pub status: u16,
    /// The fault injected into the answer, if any.
    pub fault: Option<Fault>,
    /// When the request arrived.
    pub received_at: SystemTime,
}

impl ApiRequest {
    /// The first value of query parameter `name`.
    pub fn query_param(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// What to put into a token made by [`ReferenceServer::mint_token`].
///
/// The default is a token for the default client with all its scopes and
/// the server's token lifetime, signed with the published key.
///
/// ```
/// use business_records::reference_server::TokenSpec;
///
/// let expired = TokenSpec::new().scopes(["api/read"]).lifetime_secs(-60);
/// let wrong_audience = TokenSpec::new().audience("another-api");
/// # let _ = (expired, wrong_audience);
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenSpec {
    /// Granted scopes; `None` means all scopes of the default client.
    pub scopes: Option<Vec<String>>,
    /// Seconds until expiry (negative: already expired); `None` means the
    /// server's token lifetime.
    pub lifetime_secs: Option<i64>,
    /// `aud` value instead of the server's audience.
    pub audience: Option<String>,
    /// `iss` value instead of the auth URL.
    pub issuer: Option<String>,
    /// `sub` and `client_id` instead of the default client's id.
    pub client_id: Option<String>,
    /// Use a key id the JWKS does not publish.
    pub unknown_key: bool,
    /// Corrupt the signature (the key id stays valid).
    pub bad_signature: bool,
    /// Seconds the issuer's clock is ahead (negative: behind): `iat`, `nbf` and `exp` are
    /// moved by this much.
    pub clock_skew_secs: i64,
}

impl TokenSpec {
    /// The default spec.
    pub fn new() -> Self {
        Self::default()
    }

    /// Grants exactly these scopes (an empty list grants none).
    #[must_use]
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// Expires `lifetime` from now.
    #[must_use]
    pub fn lifetime(self, lifetime: Duration) -> Self {
        self.lifetime_secs(i64::try_from(lifetime.as_secs()).unwrap_or(i64::MAX))
    }

    /// Expires `secs` seconds from now; zero or negative makes an expired token.
    #[must_use]
    pub fn lifetime_secs(mut self, secs: i64) -> Self {
        self.lifetime_secs = Some(secs);
        self
    }

    /// Uses this `aud` instead of the server's audience.
    #[must_use]
    pub fn audience(mut self, audience: impl Into<String>) -> Self {
        self.audience = Some(audience.into());
        self
    }

    /// Uses this `iss` instead of the auth URL.
    #[must_use]
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// Uses this `sub` and `client_id`.
    #[must_use]
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// Signs under a key id the JWKS does not publish.
    #[must_use]
    pub fn unknown_key(mut self) -> Self {
        self.unknown_key = true;
        self
    }

    /// Corrupts the signature.
    #[must_use]
    pub fn bad_signature(mut self) -> Self {
        self.bad_signature = true;
        self
    }

    /// Issues the token as a server whose clock is `secs` seconds ahead (negative: behind)
    /// would: `iat`, `nbf` and `exp` move by `secs`. With a few seconds ahead, the token is
    /// "not valid yet" to a verifier without leeway.
    #[must_use]
    pub fn clock_skew_secs(mut self, secs: i64) -> Self {
        self.clock_skew_secs = secs;
        self
    }
}

/// State shared between the responders and the [`ReferenceServer`] handle.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    pub(crate) token_requests: AtomicUsize,
    pub(crate) jwks_requests: AtomicUsize,
    pub(crate) authorize_requests: AtomicUsize,
    /// Token requests by `grant_type`.
    grants: Mutex<HashMap<String, usize>>,
    /// Tokens of an earlier generation are refused as revoked.
    pub(crate) token_generation: AtomicU64,
    /// Authorization codes and refresh tokens.
    sessions: Mutex<auth::Sessions>,
    api_log: Mutex<VecDeque<ApiRequest>>,
    pub(crate) faults: Mutex<faults::FaultState>,
    lifecycles: Mutex<HashMap<String, Lifecycle>>,
}

impl Shared {
    pub(crate) fn sessions(&self) -> std::sync::MutexGuard<'_, auth::Sessions> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn count_grant(&self, grant_type: &str) {
        let mut grants = self.grants.lock().unwrap_or_else(|e| e.into_inner());
        *grants.entry(grant_type.chars().take(40).collect()).or_default() += 1;
    }

    pub(crate) fn grant_count(&self, grant_type: &str) -> usize {
        self.grants.lock().unwrap_or_else(|e| e.into_inner()).get(grant_type).copied().unwrap_or(0)
    }

    pub(crate) fn record(&self, request: ApiRequest) {
        let mut log = self.api_log.lock().unwrap_or_else(|e| e.into_inner());
        if log.len() >= API_LOG_CAPACITY {
            log.pop_front();
        }
        log.push_back(request);
    }

    /// The lifecycle of the endpoint at `path`.
    pub(crate) fn lifecycle(&self, path: &str) -> Lifecycle {
        let lifecycles = self.lifecycles.lock().unwrap_or_else(|e| e.into_inner());
        lifecycles.get(path).cloned().unwrap_or_default()
    }

    fn set_lifecycle(&self, path: String, lifecycle: Lifecycle) {
        let mut lifecycles = self.lifecycles.lock().unwrap_or_else(|e| e.into_inner());
        match lifecycle {
            Lifecycle::Stable => lifecycles.remove(&path),
            other => lifecycles.insert(path, other),
        };
    }
}

/// An error response: `{"error": code, "error_description": text}`.
#[derive(Debug, Clone)]
pub(crate) struct ErrorReply {
    pub(crate) status: u16,
    pub(crate) code: &'static str,
    pub(crate) description: String,
    headers: Vec<(&'static str, String)>,
}

impl ErrorReply {
    pub(crate) fn new(status: u16, code: &'static str, description: impl Into<String>) -> Self {
        Self { status, code, description: description.into(), headers: Vec::new() }
    }

    pub(crate) fn invalid_request(description: impl Into<String>) -> Self {
        Self::new(400, "invalid_request", description)
    }

    pub(crate) fn not_found() -> Self {
        Self::new(404, "not_found", "no such resource")
    }

    pub(crate) fn method_not_allowed(allow: &'static str) -> Self {
        Self::new(405, "method_not_allowed", "method not allowed").with_header("allow", allow.to_owned())
    }

    /// Adds a response header (replacing one of the same name).
    pub(crate) fn with_header(mut self, name: &'static str, value: String) -> Self {
        self.headers.retain(|(n, _)| *n != name);
        self.headers.push((name, value));
        self
    }

    pub(crate) fn into_response(self) -> ResponseTemplate {
        let body = serde_json::json!({ "error": self.code, "error_description": self.description });
        let mut response =
            ResponseTemplate::new(self.status).insert_header("cache-control", "no-store").set_body_json(body);
        for (name, value) in self.headers {
            if let Ok(value) = reqwest::header::HeaderValue::from_str(&value) {
                response = response.insert_header(name, value);
            }
        }
        response
    }
}

/// Configures and starts a [`ReferenceServer`].
#[must_use]
#[derive(Debug, Clone)]
pub struct ReferenceServerBuilder {
    companies: usize,
    contacts_per_company: usize,
    seed: u64,
    token_lifetime: Duration,
    cursor_ttl: Duration,
    audience: String,
    clients: Vec<(String, String, Vec<String>)>,
    signing_key: Option<(String, String)>,
    users: users::UserOptions,
    lifecycles: Vec<(String, Lifecycle)>,
    extra_versions: Vec<u32>,
    previews: HashMap<String, String>,
    faults: Option<Faults>,
    odd_records: Option<OddRecords>,
    api_port: u16,
    auth_port: u16,
    recorded_headers: Vec<String>,
}

impl Default for ReferenceServerBuilder {
    fn default() -> Self {
        Self {
            companies: 1_000,
            contacts_per_company: 3,
            seed: 42,
            token_lifetime: Duration::from_secs(3600),
            cursor_ttl: Duration::from_secs(600),
            audience: ReferenceServer::DEFAULT_AUDIENCE.to_owned(),
            clients: Vec::new(),
            signing_key: None,
            users: users::UserOptions::default(),
            lifecycles: Vec::new(),
            extra_versions: Vec::new(),
            previews: HashMap::new(),
            faults: None,
            odd_records: None,
            api_port: 0,
            auth_port: 0,
            recorded_headers: Vec::new(),
        }
    }
}

impl ReferenceServerBuilder {
    /// Records these headers of every request either server receives (API, token, JWKS,
    /// discovery, ...), for [`ReferenceServer::recorded_requests`]. Default: none, and then
    /// nothing is recorded.
    pub fn record_headers<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.recorded_headers.extend(names.into_iter().map(Into::into));
        self
    }

    /// Number of companies. Default: 1,000.
    pub fn companies(mut self, n: usize) -> Self {
        self.companies = n;
        self
    }

    /// Contacts per company. Default: 3.
    pub fn contacts_per_company(mut self, n: usize) -> Self {
        self.contacts_per_company = n;
        self
    }

    /// Seed of the generated data. Default: 42.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Lifetime of issued access tokens, whole seconds, at least one.
    /// Default: 3,600 seconds.
    pub fn token_lifetime(mut self, lifetime: Duration) -> Self {
        self.token_lifetime = lifetime.max(Duration::from_secs(1));
        self
    }

    /// How long a cursor stays usable. Default: 10 minutes.
    pub fn cursor_ttl(mut self, ttl: Duration) -> Self {
        self.cursor_ttl = ttl;
        self
    }

    /// The API identifier put into `aud` and required by the API.
    /// Default: `business-records-api`.
    pub fn audience(mut self, audience: impl Into<String>) -> Self {
        self.audience = audience.into();
        self
    }

    /// Registers another client (or replaces one with the same id). The
    /// default client (`reference-client` / `reference-secret`, scopes
    /// `api/read api/write`) is always registered unless replaced.
    pub fn client<I, S>(mut self, id: impl Into<String>, secret: impl Into<String>, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let scopes = scopes.into_iter().map(Into::into).collect();
        self.clients.push((id.into(), secret.into(), scopes));
        self
    }

    /// Signs tokens with this RSA private key (PKCS#1 or PKCS#8 PEM),
    /// published under key id `kid`. Default: a fixed 2048-bit key shipped
    /// with the crate, key id `reference-key-1`.
    pub fn signing_key_pem(mut self, pem: impl Into<String>, kid: impl Into<String>) -> Self {
        self.signing_key = Some((pem.into(), kid.into()));
        self
    }

    /// Puts the endpoint at `path` (e.g. `/v1/companies`) at this stage of
    /// its lifecycle. Default: every endpoint is [`Lifecycle::Stable`].
    pub fn lifecycle(mut self, path: impl Into<String>, lifecycle: Lifecycle) -> Self {
        self.lifecycles.push((path.into(), lifecycle));
        self
    }

    /// Marks the endpoint at `path` deprecated: every response carries
    /// `headers`. Shorthand for [`lifecycle`](Self::lifecycle) with
    /// [`Lifecycle::Deprecated`].
    pub fn deprecated(self, path: impl Into<String>, headers: DeprecationHeaders) -> Self {
        self.lifecycle(path, Lifecycle::Deprecated(headers))
    }

    /// Puts the endpoint at `path` past its sunset: every request is
    /// answered 410 `version_sunset` with `headers` (typically `Sunset` and a
    /// `successor-version` link). Shorthand for [`lifecycle`](Self::lifecycle)
    /// with [`Lifecycle::Sunset`].
    pub fn sunset(self, path: impl Into<String>, headers: DeprecationHeaders) -> Self {
        self.lifecycle(path, Lifecycle::Sunset(headers))
    }

    /// Also serves version `v{number}` of both list endpoints, with the
    /// same records (cursors are bound to their version). Default: `v1` only.
    pub fn serve_version(mut self, number: u32) -> Self {
        if number > 1 && !self.extra_versions.contains(&number) {
            self.extra_versions.push(number);
        }
        self
    }

    /// Registers a preview label (`YYYY-MM`): a request with
    /// `X-API-Preview: {label}` gets `field` added to every item, with the
    /// label as its value. Default: no labels are known (well-formed
    /// unknown labels are accepted and change nothing).
    pub fn preview_feature(mut self, label: impl Into<String>, field: impl Into<String>) -> Self {
        self.previews.insert(label.into(), field.into());
        self
    }

    /// Injects `faults` into the list endpoints and the token endpoint, and puts the TCP
    /// proxies that carry out [`Fault::DropConnection`], [`Fault::CutBody`] and slow token
    /// answers in front of the API and of the authorization server
    /// ([`base_url`](ReferenceServer::base_url) and [`auth_url`](ReferenceServer::auth_url)
    /// are then the proxies'). [`ReferenceServer::set_faults`] replaces the schedule later.
    /// Default: no faults and no proxy.
    pub fn faults(mut self, faults: Faults) -> Self {
        self.faults = Some(faults);
        self
    }

    /// Sends some records oddly, as [`OddRecords`] chooses: nulls, epoch numbers,
    /// space-separated timestamps, missing fields, unreadable values and elements that are not
    /// objects. Default: every record as the dataset has it.
    pub fn odd_records(mut self, odd: OddRecords) -> Self {
        self.odd_records = Some(odd);
        self
    }

    /// Serves the API on this port of `127.0.0.1`. Default: 0, a free port.
    pub fn api_port(mut self, port: u16) -> Self {
        self.api_port = port;
        self
    }

    /// Serves the authorization server on this port of `127.0.0.1`.
    /// Default: 0, a free port.
    pub fn auth_port(mut self, port: u16) -> Self {
        self.auth_port = port;
        self
    }

    /// Generates the data and starts both servers on loopback ports (free
    /// ones unless [`api_port`](Self::api_port) or
    /// [`auth_port`](Self::auth_port) say otherwise).
    ///
    /// # Panics
    ///
    /// If the signing key cannot be used, or a chosen port cannot be bound, or the fault proxy cannot start.
    pub async fn start(self) -> ReferenceServer {
        let (pem, kid) = match &self.signing_key {
            Some((pem, kid)) => (pem.as_str(), kid.as_str()),
            None => (jwt::DEFAULT_SIGNING_KEY_PEM, jwt::DEFAULT_KID),
        };
        let dataset = Arc::new(Dataset::generate(self.companies, self.contacts_per_company, self.seed));
        let mut clients = HashMap::new();
        self.users.register(&mut clients);
        clients.insert(
            ReferenceServer::DEFAULT_CLIENT_ID.to_owned(),
            auth::RegisteredClient::confidential(
                ReferenceServer::DEFAULT_CLIENT_SECRET.to_owned(),
                vec!["api/read".to_owned(), "api/write".to_owned()],
            ),
        );
        for (id, secret, scopes) in self.clients {
            clients.insert(id, auth::RegisteredClient::confidential(secret, scopes));
        }
        let default_scopes =
            clients.get(ReferenceServer::DEFAULT_CLIENT_ID).map(|c| c.scopes.clone()).unwrap_or_default();

        let auth_server = listen(self.auth_port).await;
        let api_server = listen(self.api_port).await;
        let recorder = recorder::Recorder::new(self.recorded_headers);
        recorder.mount(&auth_server).await;
        recorder.mount(&api_server).await;
        let replay_secret = crate::auth::pkce::random_value();
        let start_proxy =
            |server: &MockServer| match proxy::Proxy::start(*server.address(), replay_secret.clone()) {
                Ok(proxy) => proxy,
                Err(e) => panic!("reference server: cannot start the fault proxy: {e}"),
            };
        let proxies = self
            .faults
            .as_ref()
            .map(|_| Proxies { api: start_proxy(&api_server), auth: start_proxy(&auth_server) });
        let auth_url = match &proxies {
            Some(proxies) => format!("http://{}", proxies.auth.address()),
            None => auth_server.uri(),
        };
        let keys = match jwt::SigningKeys::new(pem, kid, auth_url.clone(), self.audience.clone()) {
            Ok(keys) => Arc::new(keys),
            Err(e) => panic!("reference server: {e}"),
        };
        let shared = Arc::new(Shared::default());
        for (path, lifecycle) in self.lifecycles {
            shared.set_lifecycle(path, lifecycle);
        }
        if let Some(faults) = &self.faults {
            *shared.faults.lock().unwrap_or_else(|e| e.into_inner()) =
                faults::FaultState::new(faults.clone());
        }
        let token_lifetime_secs = i64::try_from(self.token_lifetime.as_secs()).unwrap_or(i64::MAX);
        let auth_settings = self.users.settings(auth_url.clone(), self.audience.clone(), token_lifetime_secs);

        Mock::given(any())
            .respond_with(auth::AuthServer {
                keys: Arc::clone(&keys),
                clients,
                settings: auth_settings.clone(),
                shared: Arc::clone(&shared),
                replay_secret,
            })
            .mount(&auth_server)
            .await;
        let document = OPENAPI_DOCUMENT
            .replace("https://api.example.com", &api_server.uri())
            .replace("https://auth.example.com", &auth_url);
        Mock::given(method("GET"))
            .and(path(OPENAPI_PATH))
            .respond_with(ResponseTemplate::new(200).set_body_raw(document, "application/yaml"))
            .with_priority(1)
            .mount(&api_server)
            .await;
        Mock::given(any())
            .respond_with(api::ApiServer {
                keys: Arc::clone(&keys),
                dataset: Arc::clone(&dataset),
                cursors: cursor::CursorCodec::new(rand::random(), self.cursor_ttl),
                versions: versions::Versions { extra: self.extra_versions, previews: self.previews },
                odd: self.odd_records,
                shared: Arc::clone(&shared),
            })
            .mount(&api_server)
            .await;

        ReferenceServer {
            _auth_server: auth_server,
            api_server,
            proxies,
            auth_url,
            audience: self.audience,
            token_lifetime_secs,
            default_scopes,
            keys,
            dataset,
            shared,
            auth_settings,
            recorder,
        }
    }
}

/// A server of its own (not from wiremock's pool) on `127.0.0.1:port`, or on a
/// free port for 0.
async fn listen(port: u16) -> MockServer {
    let builder = MockServer::builder().disable_request_recording();
    if port == 0 {
        return builder.start().await;
    }
    match std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, port)) {
        Ok(listener) => builder.listener(listener).start().await,
        Err(e) => panic!("reference server: cannot listen on 127.0.0.1:{port}: {e}"),
    }
}

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
    pub fn api_requests(&self) -> Vec<ApiRequest> {
        let log = self.shared.api_log.lock().unwrap_or_else(|e| e.into_inner());
        log.iter().cloned().collect()
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
        self.shared.token_requests.store(0, Ordering::Relaxed);
        self.shared.jwks_requests.store(0, Ordering::Relaxed);
        self.shared.authorize_requests.store(0, Ordering::Relaxed);
        self.shared.grants.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.shared.api_log.lock().unwrap_or_else(|e| e.into_inner()).clear();
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
        if !spec.bad_signature {
            return token;
        }
        // Replace the signature's first character: still base64url, no longer valid.
        match token.rsplit_once('.') {
            Some((head, sig)) => {
                let first = if sig.starts_with('A') { 'B' } else { 'A' };
                format!("{head}.{first}{}", sig.get(1..).unwrap_or(""))
            }
            None => token,
        }
    }
}

#[cfg(test)]
mod tests;
