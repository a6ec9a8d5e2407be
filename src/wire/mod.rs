//! The wire: the one place requests are sent and answers read.
//!
//! [`HttpSender`] puts a request on the wire: one `tracing` span per request with
//! OpenTelemetry's HTTP field names (see [`telemetry`](crate::telemetry)), the caller's
//! middleware layers, the client's timeout, and no redirects followed.
//! [`HttpSender::exchange`] is the one response path: it sends a request and turns any answer
//! into a [`Response`] or a typed error, its body read under its limit by [`read_body`] and an
//! error answer made into an [`ApiError`](crate::error::ApiError) by [`error_response`]. Everything
//! that talks HTTP goes through it: the API pipeline ([`pipeline`](crate::pipeline)), and the
//! token, discovery, introspection and JWKS requests of [`auth`](crate::auth).
//!
//! This layer knows nothing of tokens or of the API's endpoints.

mod body;
mod error_response;
mod exchange;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use http::header::{ACCEPT, HeaderValue, USER_AGENT};
use tracing::Instrument;
use url::Url;

pub(crate) use body::decode;
use body::read_body;
use error_response::api_error;
pub(crate) use exchange::{Expect, no_head};

use crate::error::HttpError;
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
    /// How requests outside the API pipeline are retried (the authorization server's); API
    /// calls carry their own policy.
    retry: RetryPolicy,
}

impl HttpSender {
    pub(crate) fn new(http: reqwest::Client, timeout: Option<Duration>, user_agent: HeaderValue) -> Self {
        HttpSender { http, layered: None, timeout, user_agent, retry: RetryPolicy::default() }
    }

    /// The same sender with every request passing through `layers` (none: straight to the wire).
    pub(crate) fn with_middleware(mut self, layers: &Layers) -> Self {
        self.layered = (!layers.is_empty())
            .then(|| reqwest_middleware::ClientWithMiddleware::new(self.http.clone(), layers.clone()));
        self
    }

    /// The same sender, with `policy` for the requests that retry outside the API pipeline.
    pub(crate) fn with_retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// How requests outside the API pipeline are retried.
    pub(crate) fn retry_policy(&self) -> &RetryPolicy {
        &self.retry
    }

    /// The timeout of one request.
    pub(crate) fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// A sender over the caller's `reqwest::Client`, with the crate's timeout and user agent.
    pub(crate) fn with_client(http: reqwest::Client) -> Self {
        HttpSender::new(http, Some(DEFAULT_TIMEOUT), HeaderValue::from_static(DEFAULT_USER_AGENT))
    }

    /// The crate-wide sender of everything sent outside a [`Client`](crate::Client) (a flow,
    /// introspector, verifier or discovery used on its own), built once: one connection pool.
    pub(crate) fn shared_default() -> Result<Self, Error> {
        static SENDER: OnceLock<Result<HttpSender, Error>> = OnceLock::new();
        SENDER.get_or_init(|| default_http_client().map(HttpSender::with_client)).clone()
    }

    /// Sends one request. A 3xx answer is an error: credentials are never carried to another
    /// address.
    async fn dispatch(
        &self,
        mut request: reqwest::Request,
        attempt: u32,
        route: Option<&str>,
    ) -> Result<reqwest::Response, Error> {
        let path = request.url().path().to_owned();
        let span = telemetry::request_span(request.method(), request.url(), route, attempt);
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
}

/// A GET for the JSON document at `url`.
pub(crate) fn get_request(url: Url) -> reqwest::Request {
    let mut request = reqwest::Request::new(reqwest::Method::GET, url);
    request.headers_mut().insert(ACCEPT, HeaderValue::from_static("application/json"));
    request
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
