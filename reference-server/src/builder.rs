//! Configuring and starting a reference server.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use wiremock::MockServer;

use super::api::{Kind, Resource};
use super::records::{COMPANIES, CONTACTS, Dataset, Record, Table};
use super::reply::Answer;
use super::{
    ClientAuthMethod, DeprecationHeaders, Error, Faults, Hostile, Lifecycle, OPENAPI_DOCUMENT, OddRecords,
    Proxies, ReferenceServer, Shared, TokenBucket, api, auth, cursor, faults, jwt, proxy, secrets, users,
    versions,
};

/// Configures and starts a [`ReferenceServer`].
#[must_use]
#[derive(Debug, Clone)]
pub struct ReferenceServerBuilder {
    /// Generated companies, when asked for.
    pub(super) companies: Option<usize>,
    pub(super) contacts_per_company: usize,
    pub(super) seed: u64,
    pub(super) token_lifetime: Duration,
    pub(super) cursor_ttl: Duration,
    pub(super) audience: String,
    pub(super) clients: Vec<(String, String, Vec<String>)>,
    pub(super) signing_key: Option<(String, String)>,
    pub(super) users: users::UserOptions,
    pub(super) lifecycles: Vec<(String, Lifecycle)>,
    pub(super) extra_versions: Vec<u32>,
    pub(super) previews: HashMap<String, String>,
    pub(super) faults: Option<Faults>,
    pub(super) odd_records: Option<OddRecords>,
    pub(super) api_port: u16,
    pub(super) auth_port: u16,
    pub(super) hostile: Vec<Hostile>,
    pub(super) rate_limit: Option<TokenBucket>,
    /// The test's own records, by resource.
    pub(super) records: Vec<(&'static str, Value)>,
    /// The resources declared besides companies and contacts.
    pub(super) resources: Vec<Resource>,
    pub(super) client_auth: Option<ClientAuthMethod>,
}

impl Default for ReferenceServerBuilder {
    fn default() -> Self {
        Self {
            companies: None,
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
            hostile: Vec::new(),
            rate_limit: None,
            records: Vec::new(),
            resources: Vec::new(),
            client_auth: None,
        }
    }
}

impl ReferenceServerBuilder {
    /// Generates `n` companies (with [`contacts_per_company`](Self::contacts_per_company)
    /// contacts each), served with the test's own records if it gives some. Default: 1,000
    /// companies, unless the test gives records of its own ([`company`](Self::company),
    /// [`contact`](Self::contact)): then none.
    pub fn companies(mut self, n: usize) -> Self {
        self.companies = Some(n);
        self
    }

    /// Serves this company, a JSON object with a string `id` and any other fields, as it is
    /// (a later record with the same id, generated or not, replaces it). A builder given
    /// records of its own serves no generated ones unless [`companies`](Self::companies) asks
    /// for them.
    ///
    /// ```
    /// # async fn run() {
    /// use business_records_reference_server::ReferenceServer;
    /// use serde_json::json;
    ///
    /// let server = ReferenceServer::builder()
    ///     .company(json!({"id": "cmp_1", "name": "Acme", "status": "active"}))
    ///     .contact(json!({"id": "ct_1", "companyId": "cmp_1", "name": "Ada"}))
    ///     .start()
    ///     .await;
    /// assert_eq!(server.dataset().companies().len(), 1);
    /// # }
    /// ```
    ///
    /// [`start`](Self::start) panics, naming the record, if it is not a JSON object with a
    /// non-empty string `id`.
    pub fn company(mut self, record: Value) -> Self {
        self.records.push((COMPANIES, record));
        self
    }

    /// Serves this contact, as [`company`](Self::company) serves a company.
    pub fn contact(mut self, record: Value) -> Self {
        self.records.push((CONTACTS, record));
        self
    }

    /// Serves a resource of the test's own, `GET /v{n}/{name}`, with `records` (JSON objects
    /// with a string `id`): the page envelope, opaque cursors, `limit`, `sort` by any top-level
    /// field (`-` for descending, ties by ascending `id`), an equality filter for every other
    /// parameter (a string field equal to it, or a number or boolean whose JSON text is),
    /// `totalCount`; and `GET /v{n}/{name}/{id}`. Requests go through the same token, scope
    /// (`api/read`), rate limit, lifecycle, preview and fault rules as the companies; faults
    /// name it [`Endpoint::Resource(name)`](crate::Endpoint::Resource).
    ///
    /// [`start`](Self::start) panics if `name` is not made of ASCII letters, digits, `-` and
    /// `_`, if it is served already, or if a record is not a JSON object with a string `id`.
    pub fn list(self, name: &'static str, records: impl IntoIterator<Item = Value>) -> Self {
        self.declare(name, Kind::List, records)
    }

    /// Serves a resource of the test's own as [`list`](Self::list) does, with `records` to
    /// start with, and takes writes (scope `api/write`): `POST /v{n}/{name}` stores the JSON
    /// object sent under a new `id` (`{name}_{n}`) and answers 201 with it;
    /// `DELETE /v{n}/{name}/{id}` answers 204, or 404 `not_found`. A write with an
    /// `Idempotency-Key` the client already sent on the same method and path gets the first
    /// answer again (status and body) and writes nothing.
    ///
    /// ```
    /// # async fn run() {
    /// use business_records_reference_server::ReferenceServer;
    ///
    /// let server = ReferenceServer::builder().collection("notes", []).start().await;
    /// assert!(server.dataset().records("notes").is_empty());
    /// # }
    /// ```
    pub fn collection(self, name: &'static str, records: impl IntoIterator<Item = Value>) -> Self {
        self.declare(name, Kind::Collection, records)
    }

    fn declare(mut self, name: &'static str, kind: Kind, records: impl IntoIterator<Item = Value>) -> Self {
        self.resources.push(Resource { name, kind });
        self.records.extend(records.into_iter().map(|record| (name, record)));
        self
    }

    /// Makes the authorization server accept one client authentication method only
    /// (`client_secret_basic` or `client_secret_post`) from confidential clients, at the token,
    /// introspection and revocation endpoints, and answer the other one 401 `invalid_client`;
    /// discovery advertises the one accepted. Default: both.
    pub fn client_authentication(mut self, only: ClientAuthMethod) -> Self {
        self.client_auth = Some(only);
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

    /// Also serves version `v{number}` of every endpoint of the API, with the
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

    /// Injects `faults`, and puts the HTTP proxies that carry out
    /// [`Fault::DropConnection`](super::Fault::DropConnection),
    /// [`Fault::CutBody`](super::Fault::CutBody), generated bodies and slow token answers in
    /// front of the API and of the authorization server
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

    /// Limits the API to `limit`, one bucket per client id shared by all its callers
    /// (see [`TokenBucket`]). Default: no limit.
    pub fn rate_limit(mut self, limit: TokenBucket) -> Self {
        self.rate_limit = Some(limit);
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

    /// Makes the records and starts both servers on loopback ports (free
    /// ones unless [`api_port`](Self::api_port) or
    /// [`auth_port`](Self::auth_port) say otherwise).
    ///
    /// # Panics
    ///
    /// If a record or a declared resource cannot be served (the message says which), the
    /// signing key cannot be used, a chosen port cannot be bound, or the fault proxy cannot
    /// start.
    pub async fn start(self) -> ReferenceServer {
        let tables = match self.tables() {
            Ok(tables) => tables,
            Err(e) => panic!("reference server: {e}"),
        };
        let (pem, kid) = match &self.signing_key {
            Some((pem, kid)) => (pem.as_str(), kid.as_str()),
            None => (jwt::DEFAULT_SIGNING_KEY_PEM, jwt::DEFAULT_KID),
        };
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
        let replay_secret = secrets::random_value();
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
        let shared = Arc::new(Shared::new(replay_secret));
        *shared.store() = tables;
        shared.rate_limit.set(self.rate_limit);
        for (path, lifecycle) in self.lifecycles {
            shared.set_lifecycle(path, lifecycle);
        }
        for mode in self.hostile {
            shared.hostile.set(mode, true);
        }
        if let Some(faults) = &self.faults {
            *shared.faults() = faults::FaultState::new(faults.clone());
        }
        let token_lifetime_secs = i64::try_from(self.token_lifetime.as_secs()).unwrap_or(i64::MAX);
        let auth_settings = self.users.settings(auth_url.clone(), self.audience.clone(), token_lifetime_secs);

        let auth = auth::AuthServer {
            keys: Arc::clone(&keys),
            clients,
            settings: auth_settings.clone(),
            shared: Arc::clone(&shared),
            client_auth: self.client_auth,
        };
        auth.mount(&auth_server).await;
        let document = OPENAPI_DOCUMENT
            .replace("https://api.example.com", &api_server.uri())
            .replace("https://auth.example.com", &auth_url);
        let cursors = Arc::new(cursor::CursorCodec::new(rand::random(), self.cursor_ttl));
        let api = api::ApiServer {
            keys: Arc::clone(&keys),
            resources: [Resource::COMPANIES, Resource::CONTACTS].into_iter().chain(self.resources).collect(),
            cursors: Arc::clone(&cursors),
            versions: versions::Versions { extra: self.extra_versions, previews: self.previews },
            odd: self.odd_records,
            shared: Arc::clone(&shared),
            replies: Default::default(),
        };
        api.mount(&api_server, Answer::new(200).body(document, "application/yaml")).await;

        ReferenceServer {
            _auth_server: auth_server,
            api_server,
            proxies,
            auth_url,
            audience: self.audience,
            token_lifetime_secs,
            default_scopes,
            keys,
            cursors,
            shared,
            auth_settings,
        }
    }

    /// Every resource's records: generated companies and contacts when asked for (or when the
    /// test gave none of its own), the test's own records, and the declared resources.
    fn tables(&self) -> Result<BTreeMap<String, Table>, Error> {
        let mut names: Vec<&str> = vec![COMPANIES, CONTACTS];
        for resource in &self.resources {
            if !Resource::is_name(resource.name) || names.contains(&resource.name) {
                let reason = format!(
                    "{:?} is not a resource name of its own (ASCII letters, digits, - and _)",
                    resource.name
                );
                return Err(Error::invalid("name", reason));
            }
            names.push(resource.name);
        }
        let own = self.records.iter().any(|(name, _)| [COMPANIES, CONTACTS].contains(name));
        let generated = match (self.companies, own) {
            (None, true) => Dataset::default(),
            (companies, _) => {
                Dataset::generate(companies.unwrap_or(1_000), self.contacts_per_company, self.seed)
            }
        };
        let mut records: BTreeMap<String, Vec<Record>> =
            names.iter().map(|name| ((*name).to_owned(), Vec::new())).collect();
        records.extend(generated.into_tables());
        for (name, record) in &self.records {
            let argument = match *name {
                COMPANIES => "company",
                CONTACTS => "contact",
                _ => "records",
            };
            let record = Record::from_json(record.clone(), argument)?;
            records.entry((*name).to_owned()).or_default().push(record);
        }
        Ok(records.into_iter().map(|(name, records)| (name, Table::new(records))).collect())
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
