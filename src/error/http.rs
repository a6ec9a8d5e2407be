//! Failures of the exchange itself: sending, reading, decoding, size limits, retries.

use std::borrow::Cow;
use std::sync::Arc;

use super::{Cause, Error, Part};
use crate::text::shown_path;

/// A failure to send a request or read its response: the context of
/// [`Error::Http`](super::Error::Http).
#[derive(Debug, Clone, thiserror::Error)]
#[error(transparent)]
pub struct HttpError(Arc<HttpInner>);

#[derive(Debug, thiserror::Error)]
#[error("request to {endpoint} {kind}")]
struct HttpInner {
    kind: HttpErrorKind,
    endpoint: String,
    source: Option<Cause>,
}

/// What went wrong, in the words of the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum HttpErrorKind {
    #[error("timed out")]
    Timeout,
    #[error("could not connect")]
    Connect,
    #[error("lost its connection before the response arrived")]
    ConnectionLost,
    #[error("failed while reading the response")]
    Body,
    /// With the status of the answer, when there was one.
    #[error("answered with a redirect, which is not followed{}", Part(" (status ", .0.as_ref(), ")"))]
    Redirect(Option<u16>),
    #[error("was stopped by a middleware layer")]
    Middleware,
    /// Anything else, such as a task that sent the request and stopped.
    #[error("failed")]
    Other,
}

impl HttpError {
    /// A request to `endpoint` (a path, or what the request was for) that failed as `kind`
    /// says, `cause` telling how when there is one.
    pub(crate) fn new(kind: HttpErrorKind, endpoint: &str, cause: Option<Cause>) -> Self {
        HttpError(Arc::new(HttpInner { kind, endpoint: shown_path(endpoint), source: cause }))
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
            HttpErrorKind::Redirect(None)
        } else {
            HttpErrorKind::Other
        };
        // The URL inside a reqwest error may carry a query string; keep only the error chain.
        HttpError::new(kind, endpoint, Some(Box::new(err.without_url())))
    }

    /// A failure of the request, or of a middleware layer given to the client builder.
    pub(crate) fn from_middleware(endpoint: &str, err: reqwest_middleware::Error) -> Self {
        match err {
            reqwest_middleware::Error::Reqwest(err) => HttpError::from_reqwest(endpoint, err),
            reqwest_middleware::Error::Middleware(err) => {
                HttpError::new(HttpErrorKind::Middleware, endpoint, Some(err.into()))
            }
        }
    }

    /// A request whose task stopped (panicked or was cancelled) before it answered; `cause`
    /// says how.
    pub(crate) fn task_failed(endpoint: &str, cause: tokio::task::JoinError) -> Self {
        HttpError::new(HttpErrorKind::Other, endpoint, Some(Box::new(cause)))
    }

    /// An answer with a redirect `status`, which the client never follows.
    pub(crate) fn redirect(endpoint: &str, status: u16) -> Self {
        HttpError::new(HttpErrorKind::Redirect(Some(status)), endpoint, None)
    }

    /// The request path (no query string), or what the request was for.
    pub fn endpoint(&self) -> &str {
        &self.0.endpoint
    }

    /// The status of the answer, when there was one (a redirect).
    pub fn status(&self) -> Option<u16> {
        match self.0.kind {
            HttpErrorKind::Redirect(status) => status,
            _ => None,
        }
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
        matches!(self.0.kind, HttpErrorKind::Redirect(_))
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

/// True when `err`'s causes say the connection closed or reset in the middle of the exchange.
fn connection_lost(err: &reqwest::Error) -> bool {
    use std::error::Error as _;
    use std::io::ErrorKind;
    std::iter::successors(err.source(), |&e| e.source()).any(|e| {
        let hyper = e.downcast_ref::<hyper::Error>();
        let io = e.downcast_ref::<std::io::Error>().map(std::io::Error::kind);
        hyper.is_some_and(|e| e.is_incomplete_message() || e.is_closed() || e.is_canceled())
            || matches!(
                io,
                Some(
                    ErrorKind::ConnectionReset
                        | ErrorKind::ConnectionAborted
                        | ErrorKind::BrokenPipe
                        | ErrorKind::UnexpectedEof
                )
            )
    })
}

/// A response body that could not be decoded, or lacks what the client needs from it: the
/// context of [`Error::Decode`](super::Error::Decode). The parser's error, when there is one,
/// is the [`source`](std::error::Error::source).
#[derive(Debug, Clone, thiserror::Error)]
#[error(transparent)]
pub struct DecodeError(Arc<DecodeInner>);

#[derive(Debug, thiserror::Error)]
#[error("could not decode the response of {endpoint}{}", Part(": ", .detail.as_ref(), ""))]
struct DecodeInner {
    endpoint: String,
    detail: Option<Cow<'static, str>>,
    source: Option<Cause>,
}

impl DecodeError {
    /// A body of `endpoint` that `source` could not read.
    pub(crate) fn new(endpoint: &str, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        let source = Some(Box::new(source) as Cause);
        DecodeError(Arc::new(DecodeInner { endpoint: shown_path(endpoint), detail: None, source }))
    }

    /// A body of `endpoint` that reads but is not what was expected, `detail` saying how (never
    /// quoting the body).
    pub(crate) fn invalid(endpoint: &str, detail: impl Into<Cow<'static, str>>) -> Self {
        let detail = Some(detail.into());
        DecodeError(Arc::new(DecodeInner { endpoint: shown_path(endpoint), detail, source: None }))
    }

    /// The request path (no query string), or what the response was for.
    pub fn endpoint(&self) -> &str {
        &self.0.endpoint
    }
}

/// A response body larger than the limit for its kind: the context of
/// [`Error::ResponseTooLarge`](super::Error::ResponseTooLarge).
#[derive(Debug, thiserror::Error)]
#[error("the response of {endpoint} is larger than the {body} body limit of {limit} bytes")]
pub struct ResponseTooLarge {
    pub(crate) endpoint: String,
    pub(crate) body: &'static str,
    pub(crate) limit: u64,
}

impl ResponseTooLarge {
    /// The request path (no query string).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Which body's limit: `page`, `error`, `token`, `discovery`, `introspection` or `jwks`.
    pub fn body(&self) -> &'static str {
        self.body
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
