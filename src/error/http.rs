//! Failures of the exchange itself: sending, reading, decoding, size limits, retries.

use std::fmt;
use std::sync::Arc;

use super::{Cause, Endpoint, Error, Part};
use crate::limits::BodyLimit;
use crate::text::server_text;

/// A failed exchange with a server, and which request it was: the context of
/// [`Error::Http`](super::Error::Http) (the request could not be sent or its answer read),
/// [`Error::Decode`](super::Error::Decode) (the answer could not be decoded, or lacks what the
/// client needs from it) and [`Error::ResponseTooLarge`](super::Error::ResponseTooLarge).
///
/// The message says what failed, a decoding failure with its reason (at most 1 KiB, never the
/// body); the cause of a failed request (reqwest's error) is the
/// [`source`](std::error::Error::source).
#[derive(Debug, Clone)]
pub struct TransportError(Arc<Transport>);

#[derive(Debug)]
struct Transport {
    endpoint: Endpoint,
    failure: Failure,
    source: Option<Cause>,
}

/// What failed: one of the three variants that hold a [`TransportError`].
#[derive(Debug)]
enum Failure {
    Http(HttpErrorKind),
    /// Why the body could not be decoded, at most 1 KiB.
    Decode(String),
    TooLarge(BodyLimit),
}

/// How a request failed, in the words of the message.
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

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Transport { endpoint, failure, .. } = &*self.0;
        match failure {
            Failure::Http(kind) => write!(f, "request to {endpoint} {kind}"),
            Failure::Decode(reason) => write!(f, "could not decode the response of {endpoint}: {reason}"),
            Failure::TooLarge(BodyLimit { body, bytes }) => {
                write!(f, "the response of {endpoint} is larger than the {body} body limit of {bytes} bytes")
            }
        }
    }
}

impl std::error::Error for TransportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source.as_deref().map(|cause| cause as _)
    }
}

impl Error {
    /// A request to `endpoint` (a path, or what the request was for) that failed as `kind`
    /// says, `cause` telling how when there is one.
    pub(crate) fn http(kind: HttpErrorKind, endpoint: impl Into<Endpoint>, cause: Option<Cause>) -> Self {
        Error::Http(TransportError::new(endpoint, Failure::Http(kind), cause))
    }

    pub(crate) fn from_reqwest(endpoint: impl Into<Endpoint>, err: reqwest::Error) -> Self {
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
        Error::http(kind, endpoint, Some(Box::new(err.without_url())))
    }

    /// A failure of the request, or of a middleware layer given to the client builder.
    pub(crate) fn from_middleware(endpoint: impl Into<Endpoint>, err: reqwest_middleware::Error) -> Self {
        match err {
            reqwest_middleware::Error::Reqwest(err) => Error::from_reqwest(endpoint, err),
            reqwest_middleware::Error::Middleware(err) => {
                Error::http(HttpErrorKind::Middleware, endpoint, Some(err.into()))
            }
        }
    }

    /// A request whose task stopped (panicked or was cancelled) before it answered; `cause`
    /// says how.
    pub(crate) fn task_failed(endpoint: impl Into<Endpoint>, cause: tokio::task::JoinError) -> Self {
        Error::http(HttpErrorKind::Other, endpoint, Some(Box::new(cause)))
    }

    /// A body of `endpoint` that cannot be read, or reads but is not what was expected:
    /// `reason` says why (the parser's message, never quoting more than 1 KiB of the body).
    pub(crate) fn decode(endpoint: impl Into<Endpoint>, reason: impl fmt::Display) -> Self {
        Error::Decode(TransportError::new(endpoint, Failure::Decode(server_text(&reason.to_string())), None))
    }

    /// A body of `endpoint` past `limit`.
    pub(crate) fn too_large(endpoint: impl Into<Endpoint>, limit: BodyLimit) -> Self {
        Error::ResponseTooLarge(TransportError::new(endpoint, Failure::TooLarge(limit), None))
    }
}

impl TransportError {
    fn new(endpoint: impl Into<Endpoint>, failure: Failure, source: Option<Cause>) -> Self {
        TransportError(Arc::new(Transport { endpoint: endpoint.into(), failure, source }))
    }

    fn kind(&self) -> Option<HttpErrorKind> {
        if let Failure::Http(kind) = self.0.failure { Some(kind) } else { None }
    }

    /// The request path (no query string), or what the request was for.
    pub fn endpoint(&self) -> &str {
        &self.0.endpoint.path
    }

    /// The status of the answer, when there was one (a redirect).
    pub fn status(&self) -> Option<u16> {
        if let Some(HttpErrorKind::Redirect(status)) = self.kind() { status } else { None }
    }

    /// True when the request timed out.
    pub fn is_timeout(&self) -> bool {
        self.kind() == Some(HttpErrorKind::Timeout)
    }

    /// True when no connection could be made.
    pub fn is_connect(&self) -> bool {
        self.kind() == Some(HttpErrorKind::Connect)
    }

    /// True when the connection closed or reset after the request was sent, before the
    /// response head arrived.
    pub fn is_connection_lost(&self) -> bool {
        self.kind() == Some(HttpErrorKind::ConnectionLost)
    }

    /// True when the server answered with a redirect, which the client never follows.
    pub fn is_redirect(&self) -> bool {
        matches!(self.kind(), Some(HttpErrorKind::Redirect(_)))
    }

    /// For a response larger than its limit ([`Error::ResponseTooLarge`](super::Error::ResponseTooLarge)):
    /// which body's limit, `page`, `error`, `token`, `discovery`, `introspection` or `jwks`;
    /// empty for other failures.
    pub fn body(&self) -> &'static str {
        if let Failure::TooLarge(limit) = self.0.failure { limit.body } else { "" }
    }

    /// For a response larger than its limit: the limit, in bytes; 0 for other failures.
    pub fn limit(&self) -> u64 {
        if let Failure::TooLarge(limit) = self.0.failure { limit.bytes } else { 0 }
    }

    /// A failure that sending again may not repeat: a timeout, no connection, a connection
    /// lost, a body cut short.
    pub(crate) fn is_transient(&self) -> bool {
        use HttpErrorKind::{Body, Connect, ConnectionLost, Timeout};
        matches!(self.kind(), Some(Timeout | Connect | ConnectionLost | Body))
    }
}

/// True when `err`'s causes say the connection closed or reset in the middle of the exchange.
fn connection_lost(err: &reqwest::Error) -> bool {
    use std::error::Error as _;
    use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset, UnexpectedEof};
    std::iter::successors(err.source(), |&e| e.source()).any(|e| {
        let hyper = e.downcast_ref::<hyper::Error>();
        let io = e.downcast_ref::<std::io::Error>().map(std::io::Error::kind);
        hyper.is_some_and(|e| e.is_incomplete_message() || e.is_closed() || e.is_canceled())
            || matches!(io, Some(ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof))
    })
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
