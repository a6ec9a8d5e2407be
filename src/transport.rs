//! The one place requests are sent.
//!
//! [`HttpSender`] puts a request on the wire: one `tracing` span per request with
//! OpenTelemetry's HTTP field names (see [`telemetry`](crate::telemetry)), the caller's
//! middleware layers, the client's timeout, and no redirects followed.
//! [`Transport`] is the API pipeline on top of it: bearer token, `X-API-Preview`, the 401
//! `invalid_token` refresh-and-resend, deprecation headers, error bodies and decoding.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use http::header::{ACCEPT, AUTHORIZATION, HeaderMap, HeaderValue, RETRY_AFTER, USER_AGENT};
use serde::de::DeserializeOwned;
use tracing::Instrument;
use url::Url;

use crate::auth::AccessToken;
use crate::auth::token_manager::TokenManager;
use crate::deprecation::{DeprecationNotice, DeprecationPolicy, DeprecationReporter, parse_links};
use crate::error::{
    ApiError, DecodeError, DeprecatedError, ErrorCode, HttpError, ResponseTooLarge, SunsetError,
};
use crate::limits::{BodyKind, BodyLimit};
use crate::{Error, Preview, RetryPolicy, telemetry};

/// Middleware layers, in the order they run.
pub(crate) type Layers = Vec<Arc<dyn reqwest_middleware::Middleware>>;

/// The request header that asks for preview features (spec Part 9.6).
pub(crate) const PREVIEW_HEADER: &str = "x-api-preview";

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
        Ok(HttpSender::with_client(http_client(|builder| builder)?, timeout))
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
    /// Every answer other than 2xx becomes [`Error::Auth`] here, before `oauth2` reads the
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
            return Err(Error::Auth(api_error(status.as_u16(), &headers, &body, path, None)));
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

/// Lets the `oauth2` crate send its token requests through [`HttpSender::dispatch_oauth`].
impl<'c> oauth2::AsyncHttpClient<'c> for HttpSender {
    type Error = Error;
    type Future = futures::future::BoxFuture<'c, Result<oauth2::HttpResponse, Error>>;

    fn call(&'c self, request: oauth2::HttpRequest) -> Self::Future {
        Box::pin(self.dispatch_oauth(request))
    }
}

/// Reads a response body, every one the crate reads: chunk by chunk, stopping as soon as it
/// passes `limit` (or at once when `Content-Length` says it will), so an oversized body is
/// never held in memory.
pub(crate) async fn read_body(
    endpoint: &str,
    mut response: reqwest::Response,
    limit: BodyLimit,
) -> Result<Vec<u8>, Error> {
    let too_large = || Error::ResponseTooLarge(ResponseTooLarge::new(endpoint, limit.kind, limit.bytes));
    let announced = response.content_length();
    if announced.is_some_and(|length| length > limit.bytes) {
        return Err(too_large());
    }
    let capacity = usize::try_from(announced.unwrap_or(0)).unwrap_or(0);
    let mut body = Vec::with_capacity(capacity);
    while let Some(chunk) =
        response.chunk().await.map_err(|e| Error::Http(HttpError::from_reqwest(endpoint, e)))?
    {
        if (body.len() + chunk.len()) as u64 > limit.bytes {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// One API call, described before it is sent.
#[derive(Debug, Clone)]
pub(crate) struct ApiRequest<'a> {
    pub(crate) url: &'a Url,
    pub(crate) query: &'a [(std::borrow::Cow<'static, str>, String)],
    pub(crate) preview: Option<&'a Preview>,
    pub(crate) retry: Option<&'a RetryPolicy>,
    /// Counts the retries of this call, for the listing it belongs to.
    pub(crate) retries: Option<&'a AtomicU64>,
}

/// A decoded API response.
#[derive(Debug)]
pub(crate) struct ApiResponse<T> {
    pub(crate) body: T,
    pub(crate) deprecation: Option<DeprecationNotice>,
}

/// The API pipeline: authentication, headers, error mapping, deprecation reporting.
#[derive(Debug)]
pub(crate) struct Transport {
    pub(crate) sender: HttpSender,
    tokens: TokenManager,
    preview: Option<Preview>,
    deprecation: DeprecationReporter,
    retry: RetryPolicy,
    max_page_bytes: u64,
}

impl Transport {
    pub(crate) fn new(
        sender: HttpSender,
        tokens: TokenManager,
        preview: Option<Preview>,
        deprecation: DeprecationReporter,
        retry: RetryPolicy,
    ) -> Self {
        Transport {
            sender,
            tokens,
            preview,
            deprecation,
            retry,
            max_page_bytes: BodyKind::Page.default_limit(),
        }
    }

    /// The same pipeline with another limit for page bodies.
    pub(crate) fn with_max_page_bytes(mut self, bytes: u64) -> Self {
        self.max_page_bytes = bytes;
        self
    }

    /// Sends a GET and decodes a JSON body of type `T`, retrying transient failures under
    /// the request's retry policy (or the client's).
    pub(crate) async fn get_json<T: DeserializeOwned>(
        &self,
        call: &ApiRequest<'_>,
    ) -> Result<ApiResponse<T>, Error> {
        let count_retry = || {
            if let Some(retries) = call.retries {
                retries.fetch_add(1, Ordering::Relaxed);
            }
        };
        call.retry.unwrap_or(&self.retry).run(|attempt| self.attempt(call, attempt), count_retry).await
    }

    /// One attempt. A 401 `invalid_token` makes the token manager drop the token, and the
    /// request is sent once more with a new one; `insufficient_scope` never does.
    async fn attempt<T: DeserializeOwned>(
        &self,
        call: &ApiRequest<'_>,
        attempt: u32,
    ) -> Result<ApiResponse<T>, Error> {
        let endpoint = call.url.path();
        let mut resent_for_token = false;
        loop {
            let token = self.tokens.token(&self.sender).await?;
            let request = self.build_get(call, &token)?;
            // A resend with a new token counts as an attempt of its own on the request's span.
            let response = self.sender.dispatch(request, attempt + u32::from(resent_for_token)).await?;
            let status = response.status();
            let deprecation =
                DeprecationNotice::from_headers(&http::Method::GET, call.url, response.headers());
            // Only an error answer needs its headers once the body is read.
            let headers = if status.is_success() { HeaderMap::new() } else { response.headers().clone() };
            if let Some(notice) = &deprecation {
                self.deprecation.report(notice);
            }
            let body = if status.is_success() {
                let limit = BodyLimit { kind: BodyKind::Page, bytes: self.max_page_bytes };
                read_body(endpoint, response, limit).await?
            } else {
                // An error body past its limit is ignored: the status and headers still say
                // what happened, and whether to retry.
                match read_body(endpoint, response, BodyKind::Error.into()).await {
                    Err(Error::ResponseTooLarge(_)) => Vec::new(),
                    other => other?,
                }
            };

            if status.is_success() {
                if let Some(notice) =
                    deprecation.as_ref().filter(|_| self.deprecation.policy() == DeprecationPolicy::Fail)
                {
                    return Err(Error::Deprecated(DeprecatedError::new(notice.clone())));
                }
                return decode(endpoint, &body).map(|body| ApiResponse { body, deprecation });
            }

            let error = api_error(status.as_u16(), &headers, &body, endpoint, deprecation);
            if status.as_u16() == 401
                && error.code() == Some(&ErrorCode::InvalidToken)
                && !resent_for_token
                && self.tokens.invalidate(&token)
            {
                tracing::debug!("access token rejected; fetching a new one and resending once");
                resent_for_token = true;
                continue;
            }
            return Err(classify(error, &headers, call.url));
        }
    }

    fn build_get(&self, call: &ApiRequest<'_>, token: &AccessToken) -> Result<reqwest::Request, Error> {
        let mut url = call.url.clone();
        if !call.query.is_empty() {
            url.query_pairs_mut().extend_pairs(call.query.iter().map(|(k, v)| (k.as_ref(), v.as_str())));
        }
        let mut request = reqwest::Request::new(reqwest::Method::GET, url);
        let headers = request.headers_mut();
        // Tokens are checked where they come in (`build()`, token responses); one that still
        // cannot be sent came from the authorization server.
        let mut bearer = HeaderValue::from_str(&format!("Bearer {}", token.secret()))
            .map_err(|_| AccessToken::unsendable("the token endpoint"))?;
        bearer.set_sensitive(true);
        headers.insert(AUTHORIZATION, bearer);
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        if let Some(preview) = call.preview.or(self.preview.as_ref()) {
            // A validated label is `YYYY-MM`, always a valid header value.
            if let Ok(value) = HeaderValue::from_str(preview.as_str()) {
                headers.insert(PREVIEW_HEADER, value);
            }
        }
        Ok(request)
    }
}

fn decode<T: DeserializeOwned>(endpoint: &str, body: &[u8]) -> Result<T, Error> {
    serde_json::from_slice(body).map_err(|e| Error::Decode(DecodeError::new(endpoint, e)))
}

/// The wire shape of an error body (spec Part 7).
#[derive(serde::Deserialize)]
struct ErrorBody {
    error: Option<String>,
    error_description: Option<String>,
}

/// Builds an [`ApiError`] from an error response, whatever its body looks like.
pub(crate) fn api_error(
    status: u16,
    headers: &HeaderMap,
    body: &[u8],
    endpoint: &str,
    deprecation: Option<DeprecationNotice>,
) -> ApiError {
    let parsed: Option<ErrorBody> = serde_json::from_slice(body).ok();
    let (code, description) = match parsed {
        Some(ErrorBody { error, error_description }) => {
            (error.map(|code| ErrorCode::parse(&code)), error_description)
        }
        None => (None, None),
    };
    let code = code.or_else(|| www_authenticate_error(headers));
    ApiError::new(status, code, endpoint)
        .with_description(description.map(crate::text::server_text_owned))
        .with_retry_after(headers.get(RETRY_AFTER).and_then(|v| v.to_str().ok()).and_then(parse_retry_after))
        .with_deprecation(deprecation)
}

/// The `error="..."` parameter of a `WWW-Authenticate: Bearer` challenge (RFC 6750 3).
fn www_authenticate_error(headers: &HeaderMap) -> Option<ErrorCode> {
    let value = headers.get(http::header::WWW_AUTHENTICATE)?.to_str().ok()?;
    let start = value.find("error=\"")? + "error=\"".len();
    let end = value[start..].find('"')? + start;
    Some(ErrorCode::parse(&value[start..end]))
}

/// `Retry-After` as delay-seconds or an HTTP-date (RFC 9110 10.2.3).
pub(crate) fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let when = crate::timestamp::parse_http_date(value)?;
    Some((when - chrono::Utc::now()).to_std().unwrap_or(Duration::ZERO))
}

/// Chooses the variant for an API error response to a request for `url`.
///
/// Any 410, and any `version_sunset` code, is [`Error::Sunset`], with the date and the successor
/// link when the headers give them, even without a `Deprecation` or `Sunset` header (and so
/// without a [`DeprecationNotice`]). Another error whose `Sunset` date has passed is a sunset
/// too, except a transient one (429, 5xx): that stays retryable and carries the notice.
fn classify(error: ApiError, headers: &HeaderMap, url: &Url) -> Error {
    let sunset_passed =
        error.deprecation().and_then(|n| n.sunset).is_some_and(|date| date <= chrono::Utc::now());
    let gone = error.status() == 410 || error.code() == Some(&ErrorCode::VersionSunset);
    let transient = error.status() == 429 || error.status() >= 500 || error.is_transient();
    if gone || (sunset_passed && !transient) {
        let notice = error.deprecation();
        let sunset = notice.and_then(|n| n.sunset);
        let successor = notice.and_then(|n| n.successor.clone()).or_else(|| successor_link(headers, url));
        return Error::Sunset(SunsetError::new(sunset, successor, error));
    }
    Error::Api(error)
}

/// The first `rel="successor-version"` link of a response.
fn successor_link(headers: &HeaderMap, url: &Url) -> Option<Url> {
    let lines: Vec<String> = headers
        .get_all(http::header::LINK)
        .iter()
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
        .collect();
    let links = parse_links(lines.iter().map(String::as_str), url);
    links.into_iter().find(|link| link.has_relation("successor-version")).map(|link| link.target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_forms() {
        assert_eq!(parse_retry_after("5"), Some(Duration::from_secs(5)));
        assert_eq!(parse_retry_after(" 0 "), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), Some(Duration::ZERO));
        let later = std::time::SystemTime::now() + Duration::from_secs(120);
        let parsed = parse_retry_after(&httpdate::fmt_http_date(later)).unwrap_or_default();
        assert!(parsed > Duration::from_secs(100) && parsed <= Duration::from_secs(120), "{parsed:?}");
        assert_eq!(parse_retry_after("soon"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }

    #[test]
    fn version_signals() {
        let url = Url::parse("https://api.example.com/v1/companies").expect("static url");
        let past = "Sun, 06 Nov 1994 08:49:37 GMT";
        let response = |status: u16, code: &str, sunset: Option<&'static str>| {
            let mut headers = HeaderMap::new();
            if let Some(date) = sunset {
                headers.insert("sunset", HeaderValue::from_static(date));
                headers
                    .insert("link", HeaderValue::from_static("</v2/companies>; rel=\"successor-version\""));
            }
            let notice = DeprecationNotice::from_headers(&http::Method::GET, &url, &headers);
            let body = format!(r#"{{"error":"{code}"}}"#);
            (api_error(status, &headers, body.as_bytes(), "/v1/companies", notice), headers)
        };
        let (bare_gone, headers) = response(410, "", None);
        assert!(matches!(
            classify(bare_gone, &headers, &url),
            Error::Sunset(ref e) if e.sunset().is_none() && e.successor().is_none()
        ));
        let (gone, headers) = response(410, "gone", Some(past));
        match classify(gone, &headers, &url) {
            Error::Sunset(e) => {
                assert!(e.sunset().is_some());
                assert_eq!(e.successor().map(|u| u.as_str()), Some("https://api.example.com/v2/companies"));
            }
            other => panic!("expected a sunset, got {other:?}"),
        }
        for status in [429, 500, 503] {
            let (busy, headers) = response(status, "temporarily_unavailable", Some(past));
            let error = classify(busy, &headers, &url);
            assert!(matches!(error, Error::Api(_)), "{status}: {error:?}");
            assert!(error.deprecation().is_some_and(|n| n.sunset.is_some()), "{status}");
        }
        let (refused, headers) = response(403, "forbidden", Some(past));
        assert!(matches!(classify(refused, &headers, &url), Error::Sunset(_)));
    }

    #[test]
    fn server_text_is_bounded_and_escaped() {
        let description = format!("line one\nline two\u{1b}[31m{}", "x".repeat(100 * 1024));
        let body = serde_json::json!({"error": format!("weird\n{}", "c".repeat(5000)), "error_description": description});
        let e = api_error(400, &HeaderMap::new(), body.to_string().as_bytes(), "/v1/companies", None);
        let text = e.description().unwrap_or_default();
        assert!(
            text.starts_with("line one\\nline two\\u{1b}[31mxxx") && text.len() <= 1027,
            "{}",
            text.len()
        );
        let code = e.code().map(ErrorCode::as_str).unwrap_or_default();
        assert!(code.starts_with("weird\\n") && code.len() <= 1027);
    }

    #[test]
    fn error_bodies_of_any_shape() {
        let headers = HeaderMap::new();
        let e = api_error(
            400,
            &headers,
            br#"{"error":"invalid_cursor","error_description":"bad"}"#,
            "/v1/companies",
            None,
        );
        assert_eq!((e.code(), e.description()), (Some(&ErrorCode::InvalidCursor), Some("bad")));
        let e = api_error(502, &headers, b"<html>bad gateway</html>", "/v1/companies", None);
        assert_eq!((e.status(), e.code(), e.description()), (502, None, None));
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::WWW_AUTHENTICATE,
            HeaderValue::from_static(r#"Bearer realm="api", error="insufficient_scope", scope="api/read""#),
        );
        let e = api_error(403, &headers, b"", "/v1/companies", None);
        assert_eq!(e.code(), Some(&ErrorCode::InsufficientScope));
    }
}
