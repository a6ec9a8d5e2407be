//! The wire: the one place requests are sent.
//!
//! [`HttpSender`] puts a request on the wire: one `tracing` span per request with
//! OpenTelemetry's HTTP field names (see [`telemetry`](crate::telemetry)), the caller's
//! middleware layers, the client's timeout, and no redirects followed. Everything that talks
//! HTTP goes through it: the API pipeline ([`transport`](crate::transport)), token requests,
//! discovery, introspection and JWKS. Bodies are read by [`read_body`] under their limits and
//! error responses become [`ApiError`](crate::ApiError)s in [`error_response`].
//!
//! This layer knows nothing of tokens or of the API's endpoints.

mod body;
mod error_response;

use std::sync::Arc;
use std::time::Duration;

use http::header::{ACCEPT, HeaderValue, USER_AGENT};
use serde::de::DeserializeOwned;
use tracing::Instrument;
use url::Url;

pub(crate) use body::{decode, read_body};
pub(crate) use error_response::api_error;

use crate::error::{DecodeError, HttpError};
use crate::limits::BodyKind;
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
    http: reqwest::Client,
    /// `http` behind the caller's middleware layers, when there are any.
    layered: Option<reqwest_middleware::ClientWithMiddleware>,
    timeout: Option<Duration>,
    user_agent: HeaderValue,
    /// How token requests are retried (API calls carry their own policy).
    retry: RetryPolicy,
    /// What the `oauth2` crate's requests through this sender fetch: tokens by default.
    oauth_body: BodyKind,
}

impl HttpSender {
    pub(crate) fn new(http: reqwest::Client, timeout: Option<Duration>, user_agent: HeaderValue) -> Self {
        HttpSender {
            http,
            layered: None,
            timeout,
            user_agent,
            retry: RetryPolicy::default(),
            oauth_body: BodyKind::Token,
        }
    }

    /// The same sender, for token introspection responses.
    pub(crate) fn for_introspection(mut self) -> Self {
        self.oauth_body = BodyKind::Introspection;
        self
    }

    /// The same sender with every request passing through `layers` (none: straight to the wire).
    pub(crate) fn with_middleware(mut self, layers: &Layers) -> Self {
        self.layered = (!layers.is_empty())
            .then(|| reqwest_middleware::ClientWithMiddleware::new(self.http.clone(), layers.clone()));
        self
    }

    /// A sender outside any [`Client`](crate::Client), for sign-in, discovery and introspection:
    /// a client of the crate's that follows no redirects; the default user agent.
    pub(crate) fn standalone(timeout: Duration) -> Result<Self, Error> {
        Ok(HttpSender::with_client(default_http_client()?, timeout))
    }

    /// The same sender with another timeout.
    pub(crate) fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The same sender retrying token requests under `policy`.
    pub(crate) fn with_retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// The timeout of one request.
    pub(crate) fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// A sender outside any [`Client`](crate::Client) over the caller's `reqwest::Client`.
    pub(crate) fn with_client(http: reqwest::Client, timeout: Duration) -> Self {
        HttpSender::new(http, Some(timeout), HeaderValue::from_static(DEFAULT_USER_AGENT))
    }

    /// Sends a GET for a JSON document outside the API pipeline (discovery documents). An error
    /// status becomes [`Error::Api`].
    pub(crate) async fn get_json<T: DeserializeOwned>(&self, url: Url) -> Result<T, Error> {
        let path = url.path().to_owned();
        let mut request = reqwest::Request::new(reqwest::Method::GET, url);
        request.headers_mut().insert(ACCEPT, HeaderValue::from_static("application/json"));
        let response = self.dispatch(request, 1).await?;
        let status = response.status();
        let headers = response.headers().clone();
        let kind = if status.is_success() { BodyKind::Discovery } else { BodyKind::Error };
        let body = read_body(&path, response, kind.into()).await?;
        if !status.is_success() {
            return Err(Error::Api(api_error(status.as_u16(), &headers, &body, &path, None)));
        }
        decode(&path, &body)
    }

    /// Sends one request. A 3xx answer is an error: credentials are never carried to another
    /// address.
    pub(crate) async fn dispatch(
        &self,
        mut request: reqwest::Request,
        attempt: u32,
    ) -> Result<reqwest::Response, Error> {
        let path = request.url().path().to_owned();
        let span = telemetry::request_span(request.method(), request.url(), attempt);
        if !request.headers().contains_key(USER_AGENT) {
            request.headers_mut().insert(USER_AGENT, self.user_agent.clone());
        }
        if let Some(timeout) = self.timeout {
            request.timeout_mut().get_or_insert(timeout);
        }
        let sent = async {
            match &self.layered {
                Some(layered) => {
                    layered.execute(request).await.map_err(|e| HttpError::from_middleware(&path, e))
                }
                None => self.http.execute(request).await.map_err(|e| HttpError::from_reqwest(&path, e)),
            }
        };
        let outcome = sent.instrument(span.clone()).await.map_err(Error::Http);
        match &outcome {
            Ok(response) => telemetry::record_status(&span, response.status()),
            Err(error) => telemetry::record_error(&span, error),
        }
        let response = outcome?;
        if response.status().is_redirection() {
            return Err(Error::Http(HttpError::redirect(&path, response.status().as_u16())));
        }
        Ok(response)
    }

    /// The HTTP client handed to the `oauth2` crate for token requests.
    ///
    /// Every answer other than 2xx becomes [`Error::AuthServer`] here, before `oauth2` reads the
    /// body, with the real status, `error` and `error_description` when the body is JSON, and
    /// `Retry-After`. Transient failures (429, 502, 503, 504 whatever the body,
    /// `server_error`, `temporarily_unavailable`, connection failures, timeouts) are sent again
    /// under the sender's [`RetryPolicy`].
    pub(crate) async fn dispatch_oauth(
        &self,
        request: oauth2::HttpRequest,
    ) -> Result<oauth2::HttpResponse, Error> {
        let path = request.uri().path().to_owned();
        let (parts, body) = request.into_parts();
        let send = |attempt| {
            let request = http::Request::from_parts(parts.clone(), body.clone());
            self.oauth_attempt(request, &path, attempt)
        };
        self.retry.run(send, || {}).await
    }

    async fn oauth_attempt(
        &self,
        request: oauth2::HttpRequest,
        path: &str,
        attempt: u32,
    ) -> Result<oauth2::HttpResponse, Error> {
        let request =
            reqwest::Request::try_from(request).map_err(|e| Error::Http(HttpError::from_reqwest(path, e)))?;
        let response = self.dispatch(request, attempt).await?;
        let status = response.status();
        let headers = response.headers().clone();
        let kind = if status.is_success() { self.oauth_body } else { BodyKind::Error };
        let body = read_body(path, response, kind.into()).await?;
        if !status.is_success() {
            return Err(Error::AuthServer(api_error(status.as_u16(), &headers, &body, path, None)));
        }
        let mut builder = http::Response::builder().status(status);
        if let Some(target) = builder.headers_mut() {
            *target = headers;
        }
        builder.body(body).map_err(|e| Error::Decode(DecodeError::new(path, e)))
    }
}

/// The user's settings for the HTTP client (proxies, root certificates, default headers), with
/// redirects turned off after them: credentials never travel to another address.
///
/// # Errors
///
/// [`Error::InvalidArgument`] naming `http_config` when reqwest cannot build the client (an
/// unusable certificate or proxy), with reqwest's reasons.
pub(crate) fn http_client(
    configure: impl FnOnce(reqwest::ClientBuilder) -> reqwest::ClientBuilder,
) -> Result<reqwest::Client, Error> {
    configure(reqwest::Client::builder()).redirect(reqwest::redirect::Policy::none()).build().map_err(|e| {
        let mut message = String::from("the HTTP client cannot be built");
        let mut cause: Option<&dyn std::error::Error> = Some(&e);
        while let Some(error) = cause {
            message.push_str(": ");
            message.push_str(&error.to_string());
            cause = error.source();
        }
        Error::invalid("http_config", message)
    })
}

/// The crate's own HTTP client, for every path where the caller configured none: reqwest's
/// defaults with redirects off.
///
/// # Errors
///
/// [`Error::Http`] with reqwest's error as the source when it cannot be built (no TLS backend
/// starts): the caller gave no argument that could be wrong.
pub(crate) fn default_http_client() -> Result<reqwest::Client, Error> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| Error::Http(HttpError::from_reqwest("the default HTTP client", e)))
}

/// Lets the `oauth2` crate send its token requests through [`HttpSender::dispatch_oauth`].
impl<'c> oauth2::AsyncHttpClient<'c> for HttpSender {
    type Error = Error;
    type Future = futures::future::BoxFuture<'c, Result<oauth2::HttpResponse, Error>>;

    fn call(&'c self, request: oauth2::HttpRequest) -> Self::Future {
        Box::pin(self.dispatch_oauth(request))
    }
}
