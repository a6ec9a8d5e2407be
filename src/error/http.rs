//! Failures of the exchange itself: sending, reading, decoding, size limits, retries.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use super::Error;
use crate::limits::BodyKind;

/// A cause kept as the [`source`](std::error::Error::source) of an error.
type Cause = Arc<dyn std::error::Error + Send + Sync>;

/// A failure to send a request or read its response: the context of
/// [`Error::Http`](super::Error::Http).
#[derive(Debug, Clone)]
pub struct HttpError(Arc<HttpInner>);

#[derive(Debug)]
struct HttpInner {
    kind: HttpErrorKind,
    endpoint: String,
    status: Option<u16>,
    source: Option<Cause>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HttpErrorKind {
    Timeout,
    Connect,
    ConnectionLost,
    Body,
    Redirect,
    Middleware,
    Other,
}

impl HttpError {
    fn new(kind: HttpErrorKind, endpoint: &str, status: Option<u16>, source: Option<Cause>) -> Self {
        HttpError(Arc::new(HttpInner { kind, endpoint: endpoint.to_owned(), status, source }))
    }

    pub(crate) fn from_reqwest(endpoint: &str, err: reqwest::Error) -> Self {
        let kind = if err.is_timeout() {
            HttpErrorKind::Timeout
        } else if err.is_connect() {
            HttpErrorKind::Connect
        } else if err.is_request() && connection_lost(&err) {
            HttpErrorKind::ConnectionLost
        } else if err.is_body() || err.is_decode() {
            HttpErrorKind::Body
        } else if err.is_redirect() {
            HttpErrorKind::Redirect
        } else {
            HttpErrorKind::Other
        };
        // The URL inside a reqwest error may carry a query string; keep only the error chain.
        HttpError::new(kind, endpoint, None, Some(Arc::new(err.without_url())))
    }

    /// A failure of the request, or of a middleware layer given to the client builder.
    pub(crate) fn from_middleware(endpoint: &str, err: reqwest_middleware::Error) -> Self {
        match err {
            reqwest_middleware::Error::Reqwest(err) => HttpError::from_reqwest(endpoint, err),
            reqwest_middleware::Error::Middleware(err) => HttpError::new(
                HttpErrorKind::Middleware,
                endpoint,
                None,
                Some(Arc::from(Box::<dyn std::error::Error + Send + Sync>::from(err))),
            ),
        }
    }

    pub(crate) fn redirect(endpoint: &str, status: u16) -> Self {
        HttpError::new(HttpErrorKind::Redirect, endpoint, Some(status), None)
    }

    /// A request that got no answer within `timeout`, without an underlying error (a caller
    /// that stopped waiting for a shared token request).
    pub(crate) fn timed_out(endpoint: &str) -> Self {
        HttpError::new(HttpErrorKind::Timeout, endpoint, None, None)
    }

    /// A request that ended without any answer: the task that sent it stopped.
    pub(crate) fn abandoned(endpoint: &str) -> Self {
        HttpError::new(HttpErrorKind::Other, endpoint, None, None)
    }

    /// A request whose task failed (panicked or was cancelled) before it answered; `cause` says
    /// how.
    pub(crate) fn task_failed(endpoint: &str, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        HttpError::new(HttpErrorKind::Other, endpoint, None, Some(Arc::new(cause)))
    }

    /// The request path (no query string), or what the request was for.
    pub fn endpoint(&self) -> &str {
        &self.0.endpoint
    }

    /// The status of the answer, when there was one (a redirect).
    pub fn status(&self) -> Option<u16> {
        self.0.status
    }

    /// True when the request timed out.
    pub fn is_timeout(&self) -> bool {
        self.0.kind == HttpErrorKind::Timeout
    }

    /// True when no connection could be made.
    pub fn is_connect(&self) -> bool {
        self.0.kind == HttpErrorKind::Connect
    }

    /// True when the connection closed or reset after the request was sent, before the
    /// response head arrived.
    pub fn is_connection_lost(&self) -> bool {
        self.0.kind == HttpErrorKind::ConnectionLost
    }

    /// True when the server answered with a redirect, which the client never follows.
    pub fn is_redirect(&self) -> bool {
        self.0.kind == HttpErrorKind::Redirect
    }

    /// A failure that sending again may not repeat: a timeout, no connection, a connection
    /// lost, a body cut short.
    pub(crate) fn is_transient(&self) -> bool {
        matches!(
            self.0.kind,
            HttpErrorKind::Timeout
                | HttpErrorKind::Connect
                | HttpErrorKind::ConnectionLost
                | HttpErrorKind::Body
        )
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.0.kind {
            HttpErrorKind::Timeout => "timed out",
            HttpErrorKind::Connect => "could not connect",
            HttpErrorKind::ConnectionLost => "lost its connection before the response arrived",
            HttpErrorKind::Body => "failed while reading the response",
            HttpErrorKind::Redirect => "answered with a redirect, which is not followed",
            HttpErrorKind::Middleware => "was stopped by a middleware layer",
            HttpErrorKind::Other => "failed",
        };
        write!(f, "request to {} {what}", self.0.endpoint)?;
        if let Some(status) = self.0.status {
            write!(f, " (status {status})")?;
        }
        Ok(())
    }
}

impl std::error::Error for HttpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// True when `err`'s causes say the connection closed or reset in the middle of the exchange.
fn connection_lost(err: &reqwest::Error) -> bool {
    use std::error::Error as _;
    use std::io::ErrorKind;
    let mut cause = err.source();
    while let Some(e) = cause {
        if let Some(e) = e.downcast_ref::<hyper::Error>()
            && (e.is_incomplete_message() || e.is_closed() || e.is_canceled())
        {
            return true;
        }
        if let Some(e) = e.downcast_ref::<std::io::Error>()
            && matches!(
                e.kind(),
                ErrorKind::ConnectionReset
                    | ErrorKind::ConnectionAborted
                    | ErrorKind::BrokenPipe
                    | ErrorKind::UnexpectedEof
            )
        {
            return true;
        }
        cause = e.source();
    }
    false
}

/// A response body that could not be decoded, or lacks what the client needs from it: the
/// context of [`Error::Decode`](super::Error::Decode). The parser's error, when there is one,
/// is the [`source`](std::error::Error::source).
#[derive(Debug, Clone)]
pub struct DecodeError(Arc<DecodeInner>);

#[derive(Debug)]
struct DecodeInner {
    endpoint: String,
    detail: Option<Cow<'static, str>>,
    source: Option<Cause>,
}

impl DecodeError {
    /// A body of `endpoint` that `source` could not read.
    pub(crate) fn new(endpoint: &str, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        DecodeError(Arc::new(DecodeInner {
            endpoint: endpoint.to_owned(),
            detail: None,
            source: Some(Arc::new(source)),
        }))
    }

    /// A body of `endpoint` that reads but is not what was expected, `detail` saying how (never
    /// quoting the body).
    pub(crate) fn invalid(endpoint: &str, detail: impl Into<Cow<'static, str>>) -> Self {
        DecodeError(Arc::new(DecodeInner {
            endpoint: endpoint.to_owned(),
            detail: Some(detail.into()),
            source: None,
        }))
    }

    /// The request path (no query string), or what the response was for.
    pub fn endpoint(&self) -> &str {
        &self.0.endpoint
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "could not decode the response of {}", self.0.endpoint)?;
        if let Some(detail) = &self.0.detail {
            write!(f, ": {detail}")?;
        }
        Ok(())
    }
}

impl std::error::Error for DecodeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// A response body larger than the limit for its kind: the context of
/// [`Error::ResponseTooLarge`](super::Error::ResponseTooLarge).
#[derive(Debug, thiserror::Error)]
#[error("the response of {endpoint} is larger than the {} body limit of {limit} bytes", .body.as_str())]
pub struct ResponseTooLarge {
    pub(crate) endpoint: String,
    pub(crate) body: BodyKind,
    pub(crate) limit: u64,
}

impl ResponseTooLarge {
    /// The request path (no query string).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Which body's limit: `page`, `error`, `token`, `discovery`, `introspection` or `jwks`.
    pub fn body(&self) -> &'static str {
        self.body.as_str()
    }

    /// The limit, in bytes.
    pub fn limit(&self) -> u64 {
        self.limit
    }
}

/// A transient failure that persisted through every attempt of the retry policy: the context
/// of [`Error::RetriesExhausted`](super::Error::RetriesExhausted). The last attempt's error is
/// the [`source`](std::error::Error::source).
#[derive(Debug, thiserror::Error)]
#[error("gave up after {attempts} attempts")]
pub struct RetriesExhausted {
    pub(crate) attempts: u32,
    #[source]
    pub(crate) last: Error,
}

impl RetriesExhausted {
    /// Attempts made, the first one included.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The last attempt's error; its status and `Retry-After` are reachable through
    /// [`Error::status`] and [`Error::retry_after`] on the outer error too.
    pub fn last(&self) -> &Error {
        &self.last
    }
}
