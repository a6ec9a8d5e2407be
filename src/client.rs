//! [`Client`] and its builder.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::HeaderValue;
use url::Url;

use crate::auth::Auth;
use crate::deprecation::{DeprecationCallback, DeprecationNotice, DeprecationPolicy, DeprecationReporter};
use crate::list::{ListCompanies, ListContacts};
use crate::model::{Company, Contact, Resource};
use crate::pacing::{Pacer, RateLimit};
use crate::pagination::{GetPage, ListEndpoint, Paging};
use crate::pipeline::ApiPipeline;
use crate::wire::{HttpSender, Layers};
use crate::{ApiVersion, Error, Preview, RetryPolicy, urls};

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
    inner: Arc<ClientInner>,
}

struct ClientInner {
    pipeline: Arc<ApiPipeline>,
    api_root: Url,
    api_version: ApiVersion,
    paging: Paging,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("api_root", &self.inner.api_root.as_str())
            .field("api_version", &self.inner.api_version)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A builder with every option at its default.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// What a listing of `T` needs: the pipeline, the endpoint below the versioned root
    /// (`https://api.example.com/v1/companies`) and the paging settings.
    fn source<T: Resource>(&self) -> ListEndpoint {
        ListEndpoint {
            api: Arc::clone(&self.inner.pipeline) as Arc<dyn GetPage>,
            url: Arc::new(urls::join_path(&self.inner.api_root, T::PATH)),
            paging: self.inner.paging,
        }
    }

    /// Lists companies: `GET {base_url}/v1/companies`.
    pub fn companies(&self) -> ListCompanies {
        ListCompanies::new(self.source::<Company>())
    }

    /// Lists contacts: `GET {base_url}/v1/contacts`.
    pub fn contacts(&self) -> ListContacts {
        ListContacts::new(self.source::<Contact>())
    }

    /// The versioned API root every request goes below (`https://api.example.com/v1/`).
    pub fn api_root(&self) -> &Url {
        &self.inner.api_root
    }

    /// The API version in use.
    pub fn api_version(&self) -> ApiVersion {
        self.inner.api_version
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
        let auth: Auth = auth.into();
        let tokens = auth.into_token_manager()?;
        let inner = &self.inner;
        Ok(Client {
            inner: Arc::new(ClientInner {
                pipeline: Arc::new(inner.pipeline.with_tokens(tokens)),
                api_root: inner.api_root.clone(),
                api_version: inner.api_version,
                paging: inner.paging,
            }),
        })
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
    /// offers no revocation endpoint; [`Error::AuthServer`] or [`Error::Http`] when the revocation
    /// request fails; [`Error::TokenStore`] when the store cannot be cleared. Revoking tokens
    /// the server no longer knows is no error (RFC 7009 section 2.2).
    pub async fn sign_out(&self) -> Result<(), Error> {
        self.inner.pipeline.sign_out().await
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
        self.inner.pipeline.token_set().await
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
    preview: Option<Preview>,
    timeout: Option<Duration>,
    http: Option<reqwest::Client>,
    user_agent: Option<String>,
    prefetch: Option<bool>,
    page_delay: Option<Duration>,
    retry: Option<RetryPolicy>,
    rate_limit: Option<RateLimit>,
    middleware: Layers,
    deprecation_policy: DeprecationPolicy,
    on_deprecation: Option<DeprecationCallback>,
    max_page_bytes: Option<u64>,
    error: Option<Error>,
}

impl fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("base_url", &self.base_url)
            .field("auth", &self.auth)
            .field("api_version", &self.api_version)
            .finish_non_exhaustive()
    }
}

impl ClientBuilder {
    /// Timeout of one HTTP request unless [`timeout`](ClientBuilder::timeout) sets another: 30 s.
    pub const DEFAULT_TIMEOUT: Duration = crate::wire::DEFAULT_TIMEOUT;
    fn fail(mut self, error: Error) -> Self {
        self.error.get_or_insert(error);
        self
    }

    /// The API's base address, without the version segment (`https://api.example.com`); a
    /// trailing `/v1` is accepted and not doubled. HTTPS is required except on loopback hosts.
    /// Required.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// How the client authenticates. Required.
    pub fn auth(mut self, auth: impl Into<Auth>) -> Self {
        self.auth = Some(auth.into());
        self
    }

    /// The API version, the path segment after the base URL. Default: [`ApiVersion::V1`].
    pub fn api_version(mut self, version: ApiVersion) -> Self {
        self.api_version = version;
        self
    }

    /// Requests preview features on every call with `X-API-Preview: YYYY-MM`. Default: none.
    pub fn preview(self, label: impl AsRef<str>) -> Self {
        match Preview::new(label) {
            Ok(label) => ClientBuilder { preview: Some(label), ..self },
            Err(e) => self.fail(e),
        }
    }

    /// Timeout of each HTTP request, from sending to the end of the body. Default: 30 seconds.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        if timeout.is_zero() {
            return self.fail(Error::invalid("timeout", "expected a timeout greater than zero"));
        }
        self.timeout = Some(timeout);
        self
    }

    /// Settings of the HTTP client: `configure` receives a `reqwest::ClientBuilder` and returns
    /// it with your proxies, root certificates, default headers or pool settings. The client
    /// then turns redirects off, whatever `configure` chose: no request that carries a secret
    /// or a bearer token is ever sent to another address, and a 3xx answer is an error.
    /// Default: reqwest's defaults, without redirects.
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
        mut self,
        configure: impl FnOnce(reqwest::ClientBuilder) -> reqwest::ClientBuilder,
    ) -> Self {
        match crate::wire::http_client(configure) {
            Ok(http) => {
                self.http = Some(http);
                self
            }
            Err(error) => self.fail(error),
        }
    }

    /// The `User-Agent` header. Default: `business-records/<version>`.
    pub fn user_agent(mut self, user_agent: impl Into<String>) -> Self {
        let value = user_agent.into();
        if HeaderValue::from_str(&value).is_err() {
            return self.fail(Error::invalid("user_agent", "expected visible ASCII characters only"));
        }
        self.user_agent = Some(value);
        self
    }

    /// Requests page k+1 as soon as page k arrives, while the caller still reads page k.
    /// Default: on.
    pub fn prefetch(mut self, prefetch: bool) -> Self {
        self.prefetch = Some(prefetch);
        self
    }

    /// Minimum pause between the starts of two page requests of one listing (API Part 8
    /// advises pausing when paging through large datasets). It paces each listing on its own
    /// and never its first page; [`rate_limit`](Self::rate_limit) paces the whole client.
    /// Default: none.
    pub fn page_delay(mut self, delay: Duration) -> Self {
        self.page_delay = Some(delay);
        self
    }

    /// How transient failures are retried, of API calls and of token requests alike. Default:
    /// [`RetryPolicy::default`]; a listing can override it with
    /// [`List::retry`](crate::List::retry).
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = Some(policy);
        self
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
    pub fn rate_limit(mut self, limit: RateLimit) -> Self {
        self.rate_limit = Some(limit);
        self
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
    pub fn deprecation_policy(mut self, policy: DeprecationPolicy) -> Self {
        self.deprecation_policy = policy;
        self
    }

    /// Called with every deprecation notice, whatever the policy. Default: none.
    pub fn on_deprecation<F>(mut self, callback: F) -> Self
    where
        F: Fn(&DeprecationNotice) + Send + Sync + 'static,
    {
        self.on_deprecation = Some(Arc::new(callback));
        self
    }

    /// The most bytes read of one page's body; a larger page fails with
    /// [`Error::ResponseTooLarge`] as soon as that many bytes have arrived, before anything is
    /// decoded. At least 1 KiB. Default: 32 MiB
    /// ([`DEFAULT_MAX_PAGE_BYTES`](crate::limits::DEFAULT_MAX_PAGE_BYTES)). See
    /// [`limits`](crate::limits) for the other bodies' limits.
    pub fn max_page_bytes(mut self, bytes: u64) -> Self {
        if bytes < 1024 {
            return self
                .fail(Error::invalid("max_page_bytes", format!("expected at least 1024, got {bytes}")));
        }
        self.max_page_bytes = Some(bytes);
        self
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

        let http = match self.http {
            Some(http) => http,
            None => crate::wire::default_http_client()?,
        };
        let retry = self.retry.unwrap_or_default();
        let user_agent = self.user_agent.unwrap_or_else(|| crate::wire::DEFAULT_USER_AGENT.to_owned());
        let user_agent = HeaderValue::from_str(&user_agent)
            .map_err(|_| Error::invalid("user_agent", "expected visible ASCII characters only"))?;
        let sender = HttpSender::new(http, Some(self.timeout.unwrap_or(Self::DEFAULT_TIMEOUT)), user_agent)
            .with_retry(retry.clone())
            .with_middleware(&self.middleware);

        let limit = self.rate_limit.unwrap_or_default();
        let pacer = Pacer::new(&limit, &api_root, auth.client_id(), retry.longest_delay())?;
        let tokens = auth.into_token_manager()?;
        let reporter = DeprecationReporter::new(self.deprecation_policy, self.on_deprecation);
        let max_page_bytes = self.max_page_bytes.unwrap_or(crate::limits::DEFAULT_MAX_PAGE_BYTES);
        let pipeline = ApiPipeline::new(sender, tokens, self.preview, reporter, retry, max_page_bytes, pacer);
        Ok(Client {
            inner: Arc::new(ClientInner {
                pipeline: Arc::new(pipeline),
                api_root,
                api_version: self.api_version,
                paging: Paging {
                    prefetch: self.prefetch.unwrap_or(true),
                    page_delay: self.page_delay.filter(|d| !d.is_zero()),
                },
            }),
        })
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
        assert!(user.inner.pipeline.shares_with(&app.inner.pipeline));
        assert_eq!(user.api_root(), app.api_root());
        assert!(!user.inner.paging.prefetch, "paging settings are shared");
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
        assert_eq!(client.source::<crate::Company>().url.as_str(), "https://api.example.com/v1/companies");
        let v2 = Client::builder()
            .base_url("https://api.example.com")
            .api_version(ApiVersion::new(2).expect("valid version"))
            .auth(Auth::static_token("t"))
            .build()
            .expect("valid client");
        assert_eq!(v2.api_root().as_str(), "https://api.example.com/v2/");
    }
}
