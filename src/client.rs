//! [`Client`] and its builder.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::{HeaderValue, Method};
use serde::de::DeserializeOwned;
use url::Url;

use crate::auth::{Auth, AuthServerMetadata, AuthorizationCodeFlow, TokenIntrospector};
use crate::deprecation::{DeprecationCallback, DeprecationNotice, DeprecationPolicy, DeprecationReporter};
use crate::list::List;
use crate::model::{Company, Contact};
use crate::pacing::{Pacer, RateLimit};
use crate::pipeline::{Pipeline, Settings};
use crate::request::Request;
use crate::urls::ApiPath;
use crate::version::preview_header;
use crate::wire::{DEFAULT_USER_AGENT, HttpSender, Layers};
use crate::{ApiVersion, Error, RetryPolicy, urls};

/// The business-records API client.
///
/// `Client` is cheap to clone: clones share one connection pool and one token cache, so there
/// is no need to wrap it in an `Arc`. It is `Send + Sync`.
///
/// ```
/// use business_records::{Auth, Client};
/// let client = Client::builder()
///     .base_url("https://api.example.com")
///     .auth(Auth::client_credentials("https://auth.example.com", "my-client-id", "my-secret")
///         .scopes(["api/read"]))
///     .build()?;
/// # Ok::<(), business_records::Error>(())
/// ```
#[derive(Clone)]
pub struct Client {
    pipeline: Pipeline,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("api_root", &self.api_root().as_str())
            .field("api_version", &self.api_version())
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A builder with every option at its default.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// Lists companies: `GET {base_url}/v1/companies`.
    pub fn companies(&self) -> List<Company> {
        self.list("companies")
    }

    /// Lists contacts: `GET {base_url}/v1/contacts`.
    pub fn contacts(&self) -> List<Contact> {
        self.list("contacts")
    }

    /// Lists any endpoint that answers with the page envelope (API Part 2), into items of any
    /// type: the same [`List`] as [`companies`](Client::companies), with filters by name
    /// ([`List::filter`]) and sorts in the wire form.
    ///
    /// ```no_run
    /// # async fn run(client: business_records::Client) -> Result<(), business_records::Error> {
    /// use serde_json::Value;
    /// let mut deals = client.list::<Value>("deals").filter("stage", "won").sort("-amount").stream();
    /// while let Some(deal) = deals.try_next().await? {
    ///     println!("{deal}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn list<T: DeserializeOwned + Send + 'static>(&self, path: impl Into<ApiPath>) -> List<T> {
        List::new(self.pipeline.clone(), path.into())
    }

    /// A `GET` of any path below the version root, sent through the same pipeline as the
    /// listings: see [`Request`] and [`ApiPath`]. The token needs the scope `api/read`.
    ///
    /// The type of the answer goes on [`send`](Request::send), not on `get`: annotate the
    /// variable, or write `send::<T>()` (`get` takes no type, so `client.get::<Value>(..)`
    /// does not compile).
    ///
    /// ```no_run
    /// # async fn run(client: business_records::Client, id: &str) -> Result<(), business_records::Error> {
    /// use business_records::Company;
    /// use business_records::serde_json::Value;
    ///
    /// let company: Company = client.get(["companies", id]).send().await?;
    /// let raw = client.get(["companies", id]).send::<Value>().await?;
    /// # let _ = (company, raw); Ok(()) }
    /// ```
    pub fn get(&self, path: impl Into<ApiPath>) -> Request {
        self.request(Method::GET, path)
    }

    /// A request of any method to any path below the version root: see [`Request`]. A read
    /// needs the scope `api/read`, a write (`POST`, `PUT`, `PATCH`, `DELETE`) `api/write`.
    ///
    /// The type of the answer goes on [`send`](Request::send), as for [`get`](Client::get):
    /// annotate the variable, or write `send::<T>()`; [`send_empty`](Request::send_empty)
    /// reads nothing of the answer.
    ///
    /// ```no_run
    /// # async fn run(client: business_records::Client) -> Result<(), business_records::Error> {
    /// use business_records::Method;
    /// use business_records::serde_json::{Value, json};
    ///
    /// let note = client
    ///     .request(Method::POST, "notes")
    ///     .json(&json!({"companyId": "cmp_1", "text": "called"}))
    ///     .idempotency_key("note-7f3a")
    ///     .send::<Value>()
    ///     .await?;
    /// client.request(Method::DELETE, ["notes", "n_1"]).send_empty().await?;
    /// # let _ = note; Ok(()) }
    /// ```
    pub fn request(&self, method: Method, path: impl Into<ApiPath>) -> Request {
        Request::new(self.pipeline.clone(), method, path.into())
    }

    /// The versioned API root every request goes below (`https://api.example.com/v1/`).
    pub fn api_root(&self) -> &Url {
        &self.pipeline.settings.api_root
    }

    /// The API version in use.
    pub fn api_version(&self) -> ApiVersion {
        self.pipeline.settings.api_version
    }

    /// A client that authenticates with `auth` and shares everything else with this one: the
    /// connection pool, settings, middleware, retry policy, request budget
    /// ([`ClientBuilder::rate_limit`]) and deprecation reporting (one warning per endpoint for all
    /// of them). A web app builds one client and derives one per signed-in user from it, for a
    /// few microseconds and a few KiB each; with one
    /// [`AuthorizationCodeFlow`](crate::auth::AuthorizationCodeFlow) cloned into every user's
    /// [`Auth::user`], the users share its JWKS cache too. Clones of the derived client share its
    /// tokens, as clones of any client do.
    ///
    /// ```no_run
    /// # async fn run(app: business_records::Client, flow: business_records::auth::AuthorizationCodeFlow,
    /// #              tokens: business_records::auth::TokenSet) -> Result<(), business_records::Error> {
    /// use business_records::Auth;
    /// let user = app.with_auth(Auth::user(flow, tokens))?;
    /// let page = user.companies().send().await?;
    /// # let _ = page; Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] as [`ClientBuilder::build`] reports it for `auth`.
    pub fn with_auth(&self, auth: impl Into<Auth>) -> Result<Client, Error> {
        let tokens = auth.into().into_token_manager(&self.pipeline.settings.sender)?;
        Ok(Client { pipeline: Pipeline { settings: Arc::clone(&self.pipeline.settings), tokens } })
    }

    /// Signs this client's user out: revokes the refresh token, then the access token, at the
    /// authorization server (RFC 7009, through the flow's
    /// [`revocation_endpoint`](crate::auth::AuthorizationCodeFlow::revocation_endpoint)),
    /// forgets them, and clears the user's [`TokenStore`](crate::auth::TokenStore). A refresh
    /// under way finishes first, so its new refresh token is the one revoked. Afterwards every
    /// request of this client and its clones fails with [`Error::ReauthenticationRequired`]
    /// ("the user signed out"); other users' clients derived from the same client go on.
    ///
    /// ```no_run
    /// # async fn run(user: business_records::Client) -> Result<(), business_records::Error> {
    /// user.sign_out().await?;
    /// assert!(user.companies().send().await.unwrap_err().needs_reauthentication());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// The tokens are forgotten and the store cleared whatever happens; the error says what
    /// failed first: [`Error::InvalidArgument`] naming `auth` for a client without a signed-in
    /// user (client credentials, a static token), or naming `revocation_url` when the server
    /// offers no revocation endpoint; [`Error::Api`] or [`Error::Http`] when the revocation
    /// request fails; [`Error::TokenStore`] when the store cannot be cleared. Revoking tokens
    /// the server no longer knows is no error (RFC 7009 section 2.2).
    pub async fn sign_out(&self) -> Result<(), Error> {
        self.pipeline.tokens.sign_out().await
    }

    /// The signed-in user's current tokens (renewed ones included), with the verified claims of
    /// the ID token ([`TokenSet::id_token_claims`](crate::auth::TokenSet::id_token_claims):
    /// who is signed in). `None` for a client without a user, and after
    /// [`sign_out`](Self::sign_out). Waits for a refresh under way.
    ///
    /// ```no_run
    /// # async fn run(user: business_records::Client) {
    /// if let Some(tokens) = user.token_set().await {
    ///     let sub = tokens.id_token_claims().and_then(|claims| claims.sub.as_deref());
    ///     println!("signed in as {sub:?}, access token until {:?}", tokens.expires_at);
    /// }
    /// # }
    /// ```
    pub async fn token_set(&self) -> Option<crate::auth::TokenSet> {
        self.pipeline.tokens.current().await
    }
}

// The authorization server's requests through a client's HTTP configuration: these live here
// because the auth layer sits below the client and never names it.

impl AuthorizationCodeFlow {
    /// Sends this flow's requests (code exchange, refresh, revocation, JWKS) through `client`'s
    /// HTTP configuration: its connection pool, timeout, middleware, user agent and retry policy.
    /// Default: the crate's shared HTTP client, with reqwest's defaults and no redirects. A
    /// client built with [`Auth::user`] refreshes through its own configuration by itself.
    ///
    /// ```
    /// # fn main() -> Result<(), business_records::Error> {
    /// use business_records::auth::AuthorizationCodeFlow;
    /// use business_records::{Auth, Client};
    /// let app = Client::builder()
    ///     .base_url("https://api.example.com")
    ///     .auth(Auth::client_credentials("https://auth.example.com", "my-web-app", "my-secret"))
    ///     .user_agent("my-app/1.0")
    ///     .build()?;
    /// let flow = AuthorizationCodeFlow::new("https://auth.example.com", "my-web-app", "https://app.example.com/callback")?
    ///     .http(&app);
    /// # let _ = flow; Ok(()) }
    /// ```
    pub fn http(self, client: &Client) -> Self {
        self.with_sender(client.pipeline.settings.sender.clone())
    }
}

impl TokenIntrospector {
    /// Sends the introspection requests through `client`'s HTTP configuration (see
    /// [`AuthorizationCodeFlow::http`]). Default: the crate's shared HTTP client.
    #[must_use]
    pub fn http(self, client: &Client) -> Self {
        self.with_sender(client.pipeline.settings.sender.clone())
    }
}

impl AuthServerMetadata {
    /// [`discover`](Self::discover) through `client`'s HTTP configuration (see
    /// [`AuthorizationCodeFlow::http`]).
    ///
    /// ```no_run
    /// # async fn run(client: business_records::Client) -> Result<(), business_records::Error> {
    /// use business_records::auth::AuthServerMetadata;
    /// let metadata = AuthServerMetadata::discover_with("https://auth.example.com", &client).await?;
    /// # let _ = metadata; Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`discover`](Self::discover).
    pub async fn discover_with(auth_url: impl AsRef<str>, client: &Client) -> Result<Self, Error> {
        Self::fetch(&client.pipeline.settings.sender, auth_url.as_ref()).await
    }
}

/// Builds a [`Client`]. Made by [`Client::builder`].
///
/// Setters never fail: the first invalid argument is kept and reported by
/// [`build`](ClientBuilder::build), so the chain reads straight through.
#[must_use]
#[derive(Default)]
pub struct ClientBuilder {
    base_url: Option<String>,
    auth: Option<Auth>,
    api_version: ApiVersion,
    preview: Option<HeaderValue>,
    timeout: Option<Duration>,
    http: Option<reqwest::Client>,
    user_agent: Option<HeaderValue>,
    prefetch: Option<bool>,
    page_delay: Option<Duration>,
    retry: RetryPolicy,
    rate_limit: RateLimit,
    middleware: Layers,
    deprecation_policy: DeprecationPolicy,
    on_deprecation: Option<DeprecationCallback>,
    max_page_bytes: Option<u64>,
    error: Option<Error>,
}

impl fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("base_url", &self.base_url.as_deref().map(crate::text::shown_url))
            .field("auth", &self.auth)
            .field("api_version", &self.api_version)
            .finish_non_exhaustive()
    }
}

impl ClientBuilder {
    /// Timeout of one HTTP request unless [`timeout`](ClientBuilder::timeout) sets another: 30 s.
    pub const DEFAULT_TIMEOUT: Duration = crate::wire::DEFAULT_TIMEOUT;
    fn fail(self, error: Error) -> Self {
        ClientBuilder { error: self.error.or(Some(error)), ..self }
    }

    /// The API's base address, without the version segment (`https://api.example.com`); a
    /// trailing `/v1` is accepted and not doubled. HTTPS is required except on loopback hosts.
    /// Required.
    pub fn base_url(self, url: impl Into<String>) -> Self {
        ClientBuilder { base_url: Some(url.into()), ..self }
    }

    /// Settings given as name-value pairs, as a configuration file, the environment or a test
    /// server hands them out: `base_url`, and with `auth_url`, `client_id` and `client_secret`
    /// client credentials ([`Auth::client_credentials`]) for the space-separated `scopes`
    /// (none when absent). Other names are refused. The reference server's `settings()` is such
    /// a list:
    ///
    /// ```
    /// use business_records::Client;
    /// let settings = [
    ///     ("base_url", "https://api.example.com"),
    ///     ("auth_url", "https://auth.example.com"),
    ///     ("client_id", "my-client-id"),
    ///     ("client_secret", "my-secret"),
    ///     ("scopes", "api/read api/write"),
    /// ];
    /// let client = Client::builder().settings(settings).build()?;
    /// # Ok::<(), business_records::Error>(())
    /// ```
    pub fn settings<K: AsRef<str>, V: Into<String>>(
        mut self,
        settings: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let (mut auth_url, mut client_id, mut secret, mut scopes) = (None, None, None, String::new());
        for (name, value) in settings {
            let value = value.into();
            match name.as_ref() {
                "base_url" => self.base_url = Some(value),
                "auth_url" => auth_url = Some(value),
                "client_id" => client_id = Some(value),
                "client_secret" => secret = Some(value),
                "scopes" => scopes = value,
                other => {
                    let expected = "expected base_url, auth_url, client_id, client_secret or scopes";
                    let message = format!("{expected}, got {:?}", crate::text::server_text(other));
                    return self.fail(Error::invalid("settings", message));
                }
            }
        }
        match (auth_url, client_id, secret) {
            (Some(auth_url), Some(id), Some(secret)) => {
                self.auth(Auth::client_credentials(auth_url, id, secret).scopes(scopes.split_whitespace()))
            }
            (None, None, None) => self,
            _ => self
                .fail(Error::invalid("settings", "expected auth_url, client_id and client_secret together")),
        }
    }

    /// How the client authenticates. Required.
    pub fn auth(self, auth: impl Into<Auth>) -> Self {
        ClientBuilder { auth: Some(auth.into()), ..self }
    }

    /// The API version, the path segment after the base URL. Default: [`ApiVersion::V1`].
    pub fn api_version(self, version: ApiVersion) -> Self {
        ClientBuilder { api_version: version, ..self }
    }

    /// Requests preview features on every call with `X-API-Preview: YYYY-MM`. Default: none.
    pub fn preview(self, label: impl AsRef<str>) -> Self {
        match preview_header(label) {
            Ok(label) => ClientBuilder { preview: Some(label), ..self },
            Err(e) => self.fail(e),
        }
    }

    /// Timeout of each HTTP request, from sending to the end of the body. Default: 30 seconds.
    pub fn timeout(self, timeout: Duration) -> Self {
        if timeout.is_zero() {
            return self.fail(Error::invalid("timeout", "expected a timeout greater than zero"));
        }
        ClientBuilder { timeout: Some(timeout), ..self }
    }

    /// Settings of the HTTP client: `configure` receives a `reqwest::ClientBuilder` and returns
    /// it with your proxies, root certificates, default headers or pool settings. The client
    /// then turns redirects off, whatever `configure` chose: no request that carries a secret
    /// or a bearer token is ever sent to another address, and a 3xx answer is an error.
    /// Default: reqwest's defaults, without redirects.
    ///
    /// Proxies from the environment (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`, their lower-case
    /// forms, `NO_PROXY`) are used as reqwest uses them, except for loopback hosts
    /// (`localhost`, `127.0.0.0/8`, `::1`), which are always reached directly: a token sent in
    /// clear text to a local server never passes a proxy. Proxies set in `configure` come after
    /// the environment's; `no_proxy()` there turns those off.
    ///
    /// This replaces `http_client(reqwest::Client)`: a client built elsewhere could follow
    /// redirects, and reqwest has no per-request redirect setting.
    ///
    /// ```
    /// use business_records::{Auth, Client};
    /// let client = Client::builder()
    ///     .base_url("https://api.example.com")
    ///     .auth(Auth::static_token("eyJhbGciOi..."))
    ///     .http_config(|http| http.pool_max_idle_per_host(4).tcp_nodelay(true))
    ///     .build()?;
    /// # Ok::<(), business_records::Error>(())
    /// ```
    pub fn http_config(
        self,
        configure: impl FnOnce(reqwest::ClientBuilder) -> reqwest::ClientBuilder,
    ) -> Self {
        match crate::wire::http_client(configure) {
            Ok(http) => ClientBuilder { http: Some(http), ..self },
            Err(error) => self.fail(error),
        }
    }

    /// The `User-Agent` header. Default: `business-records/<version>`.
    pub fn user_agent(self, user_agent: impl Into<String>) -> Self {
        match HeaderValue::try_from(user_agent.into()) {
            Ok(value) => ClientBuilder { user_agent: Some(value), ..self },
            Err(_) => self.fail(Error::invalid("user_agent", "expected visible ASCII characters only")),
        }
    }

    /// Requests page k+1 as soon as page k arrives, while the caller still reads page k.
    /// Default: on.
    pub fn prefetch(self, prefetch: bool) -> Self {
        ClientBuilder { prefetch: Some(prefetch), ..self }
    }

    /// Minimum pause between the starts of two page requests of one listing (API Part 8
    /// advises pausing when paging through large datasets), at most an hour. It paces each
    /// listing on its own and never its first page; [`rate_limit`](Self::rate_limit) paces the
    /// whole client. Default: none.
    pub fn page_delay(self, delay: Duration) -> Self {
        if delay > Duration::from_secs(3600) {
            return self
                .fail(Error::invalid("page_delay", format!("expected at most an hour, got {delay:?}")));
        }
        ClientBuilder { page_delay: Some(delay), ..self }
    }

    /// How transient failures are retried, of API calls and of token requests alike. Default:
    /// [`RetryPolicy::default`]; a listing can override it with
    /// [`List::retry`](crate::List::retry).
    pub fn retry(self, policy: RetryPolicy) -> Self {
        ClientBuilder { retry: policy, ..self }
    }

    /// How fast the client sends API requests: one budget for every request of this client and
    /// of the clients derived from it ([`Client::with_auth`]), listings and single pages alike,
    /// first pages included, served in order of arrival. A 429's `Retry-After` pauses them all.
    /// Token requests go to the authorization server and are not counted. Default:
    /// [`RateLimit::adaptive`], which slows down when the server answers 429 or advertises its
    /// limit in the IETF `RateLimit-Policy` field, and speeds up again with each success.
    ///
    /// ```
    /// use business_records::{Auth, Client, RateLimit};
    /// let client = Client::builder()
    ///     .base_url("https://api.example.com")
    ///     .auth(Auth::client_credentials("https://auth.example.com", "my-client-id", "my-secret"))
    ///     .rate_limit(RateLimit::per_second(20).burst(5))
    ///     .build()?;
    /// # Ok::<(), business_records::Error>(())
    /// ```
    pub fn rate_limit(self, limit: RateLimit) -> Self {
        ClientBuilder { rate_limit: limit, ..self }
    }

    /// Runs `layer` on every request the client sends: API calls and token requests alike
    /// (a [`reqwest_middleware::Middleware`](crate::reqwest_middleware::Middleware), as the
    /// reqwest middleware ecosystem writes them). Layers run in the order they were added,
    /// inside the request's `http_request` span, after the client has set its own headers
    /// (`Authorization`, `User-Agent`, `X-API-Preview`) and before the request goes on the wire.
    /// Retries stay the client's ([`retry`](Self::retry)): add no retrying layer. Default: none.
    ///
    /// A layer that adds W3C trace context (`traceparent`) for the current span, so the API's
    /// own traces join the caller's:
    ///
    /// ```
    /// use business_records::reqwest_middleware::{Middleware, Next, Result};
    /// use business_records::{Auth, Client};
    /// use http::{Extensions, HeaderValue};
    ///
    /// struct TraceContext;
    ///
    /// #[async_trait::async_trait]
    /// impl Middleware for TraceContext {
    ///     async fn handle(
    ///         &self,
    ///         mut request: reqwest::Request,
    ///         extensions: &mut Extensions,
    ///         next: Next<'_>,
    ///     ) -> Result<reqwest::Response> {
    ///         // Runs inside the request's span. With `tracing-opentelemetry`:
    ///         // opentelemetry::global::get_text_map_propagator(|propagator| {
    ///         //     propagator.inject_context(&tracing::Span::current().context(),
    ///         //         &mut opentelemetry_http::HeaderInjector(request.headers_mut()))
    ///         // });
    ///         if let Some(traceparent) = current_traceparent() {
    ///             request.headers_mut().insert("traceparent", traceparent);
    ///         }
    ///         next.run(request, extensions).await
    ///     }
    /// }
    /// # fn current_traceparent() -> Option<HeaderValue> {
    /// #     Some(HeaderValue::from_static("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
    /// # }
    ///
    /// let client = Client::builder()
    ///     .base_url("https://api.example.com")
    ///     .auth(Auth::client_credentials("https://auth.example.com", "my-client-id", "my-secret"))
    ///     .middleware(TraceContext)
    ///     .build()?;
    /// # Ok::<(), business_records::Error>(())
    /// ```
    ///
    /// Ready-made layers work too, such as `reqwest-tracing`'s `TracingMiddleware`, which
    /// propagates the context of its own span (a child of the client's).
    pub fn middleware(mut self, layer: impl reqwest_middleware::Middleware) -> Self {
        self.middleware.push(Arc::new(layer));
        self
    }

    /// What to do with deprecated responses. Default: [`DeprecationPolicy::WarnOnce`].
    pub fn deprecation_policy(self, policy: DeprecationPolicy) -> Self {
        ClientBuilder { deprecation_policy: policy, ..self }
    }

    /// Called with every deprecation notice, whatever the policy. Default: none.
    pub fn on_deprecation<F>(self, callback: F) -> Self
    where
        F: Fn(&DeprecationNotice) + Send + Sync + 'static,
    {
        ClientBuilder { on_deprecation: Some(Arc::new(callback)), ..self }
    }

    /// The most bytes read of one page's body; a larger page fails with
    /// [`Error::ResponseTooLarge`] as soon as that many bytes have arrived, before anything is
    /// decoded. At least 1 KiB. Default: 32 MiB
    /// ([`DEFAULT_MAX_PAGE_BYTES`](crate::limits::DEFAULT_MAX_PAGE_BYTES)). See
    /// [`limits`](crate::limits) for the other bodies' limits.
    pub fn max_page_bytes(self, bytes: u64) -> Self {
        if bytes < 1024 {
            return self
                .fail(Error::invalid("max_page_bytes", format!("expected at least 1024, got {bytes}")));
        }
        ClientBuilder { max_page_bytes: Some(bytes), ..self }
    }

    /// Checks every setting and builds the client.
    pub fn build(self) -> Result<Client, Error> {
        if let Some(error) = self.error {
            return Err(error);
        }
        let raw =
            self.base_url.ok_or_else(|| Error::invalid("base_url", "required: the API's base address"))?;
        let base = urls::parse_service_url("base_url", &raw)?;
        let api_root = urls::api_root(&base, self.api_version)?;
        let auth =
            self.auth.ok_or_else(|| Error::invalid("auth", "required: call `auth(..)` with an `Auth`"))?;

        let http = self.http.map_or_else(crate::wire::default_http_client, Ok)?;
        let user_agent = self.user_agent.unwrap_or_else(|| HeaderValue::from_static(DEFAULT_USER_AGENT));
        let timeout = self.timeout.unwrap_or(Self::DEFAULT_TIMEOUT);
        let pacer = Pacer::new(&self.rate_limit, &api_root, auth.client_id(), self.retry.max_delay)?;
        let sender =
            HttpSender::new(http, self.middleware, user_agent).with_timeout(timeout).with_retry(self.retry);
        let tokens = auth.into_token_manager(&sender)?;
        let settings = Settings {
            sender,
            api_root,
            api_version: self.api_version,
            preview: self.preview,
            deprecation: DeprecationReporter::new(self.deprecation_policy, self.on_deprecation),
            max_body_bytes: self.max_page_bytes.unwrap_or(crate::limits::DEFAULT_MAX_PAGE_BYTES),
            pacer,
            prefetch: self.prefetch.unwrap_or(true),
            page_delay: self.page_delay.filter(|d| !d.is_zero()),
        };
        Ok(Client { pipeline: Pipeline { settings: Arc::new(settings), tokens } })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argument_of(result: Result<Client, Error>) -> &'static str {
        match result {
            Err(Error::InvalidArgument(e)) => e.argument(),
            other => panic!("expected an invalid argument, got {other:?}"),
        }
    }

    #[test]
    fn build_reports_the_first_bad_argument() {
        let auth = || Auth::static_token("t");
        assert_eq!(argument_of(Client::builder().auth(auth()).build()), "base_url");
        assert_eq!(argument_of(Client::builder().base_url("https://a.example").build()), "auth");
        assert_eq!(
            argument_of(Client::builder().base_url("http://a.example").auth(auth()).build()),
            "base_url"
        );
        assert_eq!(
            argument_of(
                Client::builder().base_url("https://a.example").auth(auth()).preview("2026-1").build()
            ),
            "preview"
        );
        assert_eq!(
            argument_of(
                Client::builder().base_url("https://a.example").auth(auth()).timeout(Duration::ZERO).build()
            ),
            "timeout"
        );
        assert_eq!(
            argument_of(
                Client::builder().base_url("https://a.example").auth(auth()).user_agent("bad\n").build()
            ),
            "user_agent"
        );
    }

    #[tokio::test]
    async fn derived_clients_share_everything_but_their_tokens() {
        let app = Client::builder()
            .base_url("https://api.example.com")
            .auth(Auth::static_token("app"))
            .prefetch(false)
            .build()
            .expect("valid client");
        let flow = crate::auth::AuthorizationCodeFlow::new(
            "https://auth.example.com",
            "my-web-app",
            "https://app.example.com/callback",
        )
        .expect("flow");
        let user = app
            .with_auth(Auth::user(flow.clone(), crate::auth::TokenSet::new("alice-token")))
            .expect("derived");
        assert!(Arc::ptr_eq(&user.pipeline.settings, &app.pipeline.settings));
        assert_eq!(user.api_root(), app.api_root());
        assert!(!user.pipeline.settings.prefetch, "paging settings are shared");
        let tokens = user.token_set().await.expect("a user's client has tokens");
        assert_eq!(tokens.access_token.secret(), "alice-token");
        assert!(app.token_set().await.is_none(), "a static token is no user");
        assert_eq!(argument_of(app.with_auth(Auth::static_token(" "))), "auth");
        let bad = Auth::user(flow.scopes(["a b"]), crate::auth::TokenSet::new("t"));
        assert_eq!(argument_of(app.with_auth(bad)), "scopes");
        match app.sign_out().await {
            Err(Error::InvalidArgument(e)) => assert_eq!(e.argument(), "auth"),
            other => panic!("a client without a user cannot sign out: {other:?}"),
        }
        assert!(app.token_set().await.is_none());
    }

    #[test]
    fn version_segment_and_endpoints() {
        let client = Client::builder()
            .base_url("https://api.example.com/v1/")
            .auth(Auth::static_token("t"))
            .build()
            .expect("valid client");
        let companies = crate::pipeline::Call::new(Method::GET, client.api_root(), &"companies".into());
        assert_eq!(
            companies.map(|call| call.url.to_string()).ok().as_deref(),
            Some("https://api.example.com/v1/companies")
        );
        let v2 = Client::builder()
            .base_url("https://api.example.com")
            .api_version(ApiVersion::new(2).expect("valid version"))
            .auth(Auth::static_token("t"))
            .build()
            .expect("valid client");
        assert_eq!(v2.api_root().as_str(), "https://api.example.com/v2/");
    }
}
