//! The wire: the one place requests are sent and answers read.
//!
//! [`HttpSender`] puts a request on the wire: one `tracing` span per request with
//! OpenTelemetry's HTTP field names (see [`telemetry`](crate::telemetry)), the caller's
//! middleware layers, the client's timeout, and no redirects followed.
//! [`HttpSender::exchange`] is the one response path: it sends a request and turns any answer
//! into its body or a typed error, the body read under its limit by [`read_body`] and an
//! error answer made into an [`ApiError`](crate::error::ApiError) by [`api_error`]. Everything
//! that talks HTTP goes through it: the API pipeline ([`pipeline`](crate::pipeline)), and the
//! token, discovery, introspection and JWKS requests of [`auth`](crate::auth).
//!
//! This layer knows nothing of tokens or of the API's endpoints.

mod error_response;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use http::StatusCode;
use http::header::{ACCEPT, HeaderMap, HeaderValue, USER_AGENT};
use reqwest::Response;
use reqwest_middleware::ClientWithMiddleware;
use serde::de::DeserializeOwned;
use tracing::Instrument;
use url::Url;

use error_response::api_error;

use crate::deprecation::DeprecationNotice;
use crate::error::{Endpoint, HttpErrorKind, Origin};
use crate::limits::BodyLimit;
use crate::{Error, RetryPolicy, telemetry};

/// Middleware layers, in the order they run.
pub(crate) type Layers = Vec<Arc<dyn reqwest_middleware::Middleware>>;

/// `User-Agent` unless the caller sets another.
pub(crate) const DEFAULT_USER_AGENT: &str = concat!("business-records/", env!("CARGO_PKG_VERSION"));

/// Timeout of one request unless the caller sets another.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Puts requests on the wire.
#[derive(Debug, Clone)]
pub(crate) struct HttpSender {
    /// The HTTP client behind the caller's middleware layers (none: straight to the wire).
    http: ClientWithMiddleware,
    timeout: Duration,
    user_agent: HeaderValue,
    /// How requests outside the API pipeline are retried (the authorization server's); API
    /// calls carry their own policy.
    retry: RetryPolicy,
}

impl HttpSender {
    /// A sender over `http`, every request passing through `layers` (none: straight to the
    /// wire), with the crate's timeout ([`with_timeout`](Self::with_timeout) sets another).
    pub(crate) fn new(http: reqwest::Client, layers: Layers, user_agent: HeaderValue) -> Self {
        let http = ClientWithMiddleware::new(http, layers);
        HttpSender { http, timeout: DEFAULT_TIMEOUT, user_agent, retry: RetryPolicy::default() }
    }

    /// The same sender, with `policy` for the requests that retry outside the API pipeline.
    pub(crate) fn with_retry(self, policy: RetryPolicy) -> Self {
        HttpSender { retry: policy, ..self }
    }

    /// The same sender, each request waiting at most `timeout` for its answer.
    pub(crate) fn with_timeout(self, timeout: Duration) -> Self {
        HttpSender { timeout, ..self }
    }

    /// How requests outside the API pipeline are retried.
    pub(crate) fn retry_policy(&self) -> &RetryPolicy {
        &self.retry
    }

    /// The timeout of one request.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// A sender over the caller's `reqwest::Client`, with the crate's timeout and user agent.
    pub(crate) fn with_client(http: reqwest::Client) -> Self {
        HttpSender::new(http, Layers::new(), HeaderValue::from_static(DEFAULT_USER_AGENT))
    }

    /// The crate-wide sender of everything sent outside a [`Client`](crate::Client) (a flow,
    /// introspector, verifier or discovery used on its own), built once: one connection pool.
    pub(crate) fn shared_default() -> Result<Self, Error> {
        static SENDER: OnceLock<Result<HttpSender, Error>> = OnceLock::new();
        SENDER.get_or_init(|| default_http_client().map(HttpSender::with_client)).clone()
    }

    /// Sends `request` (attempt number `attempt` on its span) and reads its answer: every
    /// response anything of the crate reads comes through here.
    ///
    /// `head` sees the status and headers of every answer before its body is read (the API
    /// pipeline paces itself and reads deprecation headers there); the notice it returns goes
    /// with an error answer's [`ApiError`](crate::error::ApiError).
    ///
    /// A 2xx answer is its body, read under `expect.body`
    /// ([`Error::ResponseTooLarge`] past it). Any other answer is an [`Error::Api`] from
    /// `expect.origin` with the status, the body's `error` and `error_description` (or the
    /// `error` of a `WWW-Authenticate` challenge) and `Retry-After`. An error body past its
    /// limit ([`BodyLimit::ERROR`]) is left unread: the status and headers alone make the error,
    /// so a 429 or 503 with a huge page in front of it is still retried. A 3xx is
    /// [`Error::Http`]: credentials are never carried to another address.
    pub(crate) async fn exchange(
        &self,
        mut request: reqwest::Request,
        attempt: u32,
        expect: Expect<'_>,
        head: impl FnOnce(StatusCode, &HeaderMap) -> Option<DeprecationNotice>,
    ) -> Result<Vec<u8>, Error> {
        let endpoint = Endpoint::of(request.url(), expect.origin);
        let span = telemetry::request_span(request.method(), request.url(), expect.route, attempt);
        request.headers_mut().entry(USER_AGENT).or_insert_with(|| self.user_agent.clone());
        request.timeout_mut().get_or_insert(self.timeout);
        let sent = self.http.execute(request).instrument(span.clone()).await;
        let mut response = sent
            .map_err(|e| Error::from_middleware(endpoint.clone(), e))
            .inspect_err(|error| telemetry::record_error(&span, error))?;
        let status = response.status();
        telemetry::record_status(&span, status);
        if status.is_redirection() {
            return Err(Error::http(HttpErrorKind::Redirect(Some(status.as_u16())), endpoint, None));
        }
        let deprecation = head(status, response.headers());
        if status.is_success() {
            return read_body(&endpoint, response, expect.body).await;
        }
        let headers = std::mem::take(response.headers_mut());
        let body = match read_body(&endpoint, response, BodyLimit::ERROR).await {
            Err(Error::ResponseTooLarge(_)) => Vec::new(),
            other => other?,
        };
        let refused = api_error(status.as_u16(), &headers, &body, &endpoint).with_deprecation(deprecation);
        Err(Error::Api(refused.with_origin(expect.origin)))
    }

    /// GETs a document of the authorization server (discovery, JWKS) in one attempt: its body,
    /// read under `limit`; an error answer is [`Error::Api`] from the authorization server.
    pub(crate) async fn get_document(&self, url: Url, limit: BodyLimit) -> Result<Vec<u8>, Error> {
        let mut request = reqwest::Request::new(reqwest::Method::GET, url);
        request.headers_mut().insert(ACCEPT, HeaderValue::from_static("application/json"));
        let expect = Expect { body: limit, origin: Origin::AuthorizationServer, route: None };
        self.exchange(request, 1, expect, no_head).await
    }
}

/// A `head` for callers that read nothing from an answer's head.
pub(crate) fn no_head(_: StatusCode, _: &HeaderMap) -> Option<DeprecationNotice> {
    None
}

/// What a caller expects of an answer: the limit of a successful answer's body, and the
/// origin of an error answer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Expect<'a> {
    /// The kind and limit of a 2xx answer's body.
    pub(crate) body: BodyLimit,
    /// Which server an error answer comes from.
    pub(crate) origin: Origin,
    /// The request's path with the values of its segments left out, for its span.
    pub(crate) route: Option<&'a str>,
}

/// The user's settings for the HTTP client (proxies, root certificates, default headers), over
/// [`builder`], with redirects turned off after them: credentials never travel to another
/// address.
///
/// # Errors
///
/// [`Error::InvalidArgument`] naming `http_config` when reqwest cannot build the client (an
/// unusable certificate or proxy), with reqwest's reasons.
pub(crate) fn http_client(
    configure: impl FnOnce(reqwest::ClientBuilder) -> reqwest::ClientBuilder,
) -> Result<reqwest::Client, Error> {
    configure(builder()).redirect(reqwest::redirect::Policy::none()).build().map_err(|e| {
        let chain = std::iter::successors(Some(&e as &dyn std::error::Error), |e| e.source());
        let message = chain.fold(String::from("the HTTP client cannot be built"), |m, e| format!("{m}: {e}"));
        Error::invalid("http_config", message)
    })
}

/// The crate's own HTTP client, for every path where the caller configured none: [`builder`].
///
/// # Errors
///
/// [`Error::Http`] with reqwest's error as the source when it cannot be built (no TLS backend
/// starts): the caller gave no argument that could be wrong.
pub(crate) fn default_http_client() -> Result<reqwest::Client, Error> {
    builder().build().map_err(|e| Error::from_reqwest("the default HTTP client", e))
}

/// reqwest's builder with redirects off and the proxies of the environment, read as reqwest reads them
/// (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`, their lower-case forms, and `NO_PROXY`; none in a
/// CGI process, where `HTTP_PROXY` comes from a request header), except that they never serve a
/// loopback host (`localhost`, `127.0.0.0/8`, `::1`): what a client sends in clear text to a
/// local server, a bearer token or a client secret, never goes to a proxy. Proxies set in
/// `http_config` come after these; its `no_proxy()` turns these off.
fn builder() -> reqwest::ClientBuilder {
    let var = |names: [&str; 2]| names.into_iter().find_map(|name| std::env::var(name).ok());
    let builder = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).no_proxy();
    if std::env::var_os("REQUEST_METHOD").is_some() {
        return builder;
    }
    let direct = format!("localhost,127.0.0.0/8,::1,{}", var(["NO_PROXY", "no_proxy"]).unwrap_or_default());
    let direct = reqwest::NoProxy::from_string(&direct);
    let http = var(["HTTP_PROXY", "http_proxy"]).and_then(|url| reqwest::Proxy::http(url).ok());
    let https = var(["HTTPS_PROXY", "https_proxy"]).and_then(|url| reqwest::Proxy::https(url).ok());
    let all = var(["ALL_PROXY", "all_proxy"]).and_then(|url| reqwest::Proxy::all(url).ok());
    let proxies = [http, https, all].into_iter().flatten();
    proxies.fold(builder, |builder, proxy| builder.proxy(proxy.no_proxy(direct.clone())))
}

/// Reads a response body, every one the crate reads: chunk by chunk, stopping as soon as it
/// passes `limit` (or at once when `Content-Length` says it will), so an oversized body is
/// never held in memory.
async fn read_body(endpoint: &Endpoint, mut response: Response, limit: BodyLimit) -> Result<Vec<u8>, Error> {
    let too_large = || Error::too_large(endpoint.clone(), limit);
    let announced = response.content_length();
    if announced.is_some_and(|length| length > limit.bytes) {
        return Err(too_large());
    }
    let capacity = usize::try_from(announced.unwrap_or(0)).unwrap_or(0);
    let mut body = Vec::with_capacity(capacity);
    while let Some(chunk) = response.chunk().await.map_err(|e| Error::from_reqwest(endpoint.clone(), e))? {
        if (body.len() + chunk.len()) as u64 > limit.bytes {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// `body`, an answer of `endpoint`, as JSON into `T`; [`Error::Decode`] when it is not one.
pub(crate) fn decode<T: DeserializeOwned>(endpoint: &str, body: &[u8]) -> Result<T, Error> {
    serde_json::from_slice(body).map_err(|e| Error::decode(endpoint, e))
}

#[cfg(test)]
mod tests {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};

    use super::*;

    #[tokio::test]
    async fn the_default_client_follows_no_redirect() {
        let elsewhere = MockServer::start().await;
        Mock::given(method("GET")).respond_with(ResponseTemplate::new(200)).expect(0).mount(&elsewhere).await;
        let server = MockServer::start().await;
        let moved = ResponseTemplate::new(302).insert_header("location", format!("{}/x", elsewhere.uri()));
        Mock::given(method("GET")).respond_with(moved).mount(&server).await;
        let sender = HttpSender::shared_default().expect("the default sender");
        let url = Url::parse(&server.uri()).expect("a url");
        let err = sender.get_document(url, BodyLimit::DISCOVERY).await.expect_err("a redirect");
        assert!(matches!(&err, Error::Http(e) if e.is_redirect() && e.status() == Some(302)), "{err:?}");
    }
}
