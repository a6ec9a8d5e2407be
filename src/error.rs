//! The crate's error type.
//!
//! Every fallible operation returns [`Error`]. It is a `#[non_exhaustive]` enum whose variants
//! say what went wrong; the accessors ([`Error::status`], [`Error::code`],
//! [`Error::description`], [`Error::retry_after`]) and predicates ([`Error::is_retryable`],
//! [`Error::needs_reauthentication`], [`Error::is_timeout`]) answer the questions callers
//! usually ask without matching on variants.
//!
//! Messages are lowercase, without trailing punctuation, and never contain a token, a secret or
//! a response body that could hold one.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use url::Url;

use crate::auth::{TokenStoreError, VerifyError};
use crate::deprecation::DeprecationNotice;
use crate::limits::BodyKind;

/// Everything that can go wrong when using the client.
///
/// ```
/// # async fn run(client: business_records::Client) {
/// match client.companies().limit(10).send().await {
///     Ok(page) => println!("{} companies", page.data.len()),
///     Err(err) if err.needs_reauthentication() => eprintln!("sign in again: {err}"),
///     Err(err) if err.is_retryable() => eprintln!("try later: {err}"),
///     Err(err) => eprintln!("failed: {err}"),
/// }
/// # }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An argument given to a builder or constructor was rejected before any request was sent.
    #[error("invalid argument `{argument}`: {message}")]
    InvalidArgument {
        /// The argument's name, as in the method that took it (`limit`, `base_url`, ...).
        argument: &'static str,
        /// What was expected.
        message: String,
    },

    /// The API answered with an error response.
    #[error("{0}")]
    Api(Box<ApiError>),

    /// The authorization server refused a token request.
    #[error("{0}")]
    Auth(Box<ApiError>),

    /// The authorization server sent the user back with an error instead of a code
    /// (RFC 6749 section 4.1.2.1): the user declined (`access_denied`), or the authorization
    /// request was refused. No token request was made.
    #[error("{}", authorization_message(.code, .description))]
    Authorization {
        /// The `error` parameter of the callback.
        code: ErrorCode,
        /// The `error_description` parameter, if any (shortened to 1 KiB, control characters
        /// escaped).
        description: Option<String>,
    },

    /// The redirect back from the authorization server was refused before any token request:
    /// a `state` that does not belong to this sign-in, a foreign `iss`, no code, or no callback
    /// in time.
    #[error("invalid authorization callback: {0}")]
    Callback(CallbackError),

    /// The user must sign in again: the client holds no refresh token, or its tokens cannot be
    /// renewed any more.
    #[error("sign-in required: {reason}")]
    ReauthenticationRequired {
        /// Why the tokens cannot be renewed.
        reason: &'static str,
    },

    /// A [`TokenStore`](crate::auth::TokenStore) failed to load or save tokens; the
    /// [`TokenStoreError`] is the [`source`](std::error::Error::source).
    #[error("token store failed")]
    TokenStore(#[source] TokenStoreError),

    /// The API version has reached its sunset and no longer serves requests.
    #[error("{}", sunset_message(.sunset, .successor))]
    Sunset {
        /// When the version stopped working, if the server said.
        sunset: Option<DateTime<Utc>>,
        /// The replacement announced with `Link: <..>; rel="successor-version"`.
        successor: Option<Url>,
        /// The full error response.
        response: Box<ApiError>,
    },

    /// A response was marked deprecated and the client runs with
    /// [`DeprecationPolicy::Fail`](crate::DeprecationPolicy::Fail).
    #[error("deprecated endpoint refused by policy: {0}")]
    Deprecated(Box<DeprecationNotice>),

    /// The cursor of a listing expired or was rejected; the listing must restart from the
    /// first page.
    #[error(
        "cursor rejected by the server ({code}) after {delivered} items; restart the listing from the first page"
    )]
    CursorRejected {
        /// The server's code: `cursor_expired` or `invalid_cursor`.
        code: ErrorCode,
        /// How many items this listing had delivered before the failure.
        delivered: u64,
        /// The full error response.
        response: Box<ApiError>,
    },

    /// The server broke the pagination contract (spec Part 4.1).
    #[error("pagination protocol violation: {0}")]
    Pagination(PaginationError),

    /// Sending the request or reading the response failed (connection, timeout, TLS).
    #[error("{0}")]
    Http(HttpError),

    /// A response body could not be decoded.
    #[error("could not decode the response of {endpoint}: {message}")]
    Decode {
        /// The request path (no query string).
        endpoint: String,
        /// What was wrong with the body (never the body itself).
        message: String,
    },

    /// An element of a page is not a record, and the listing was told to fail on that with
    /// [`OnUndecodable::Fail`](crate::OnUndecodable::Fail).
    #[error("{endpoint}: {item}")]
    Undecodable {
        /// The request path (no query string).
        endpoint: String,
        /// The element: page, position, raw JSON and why.
        item: Box<crate::Undecodable>,
    },

    /// A response body was larger than the limit for its kind; reading stopped there.
    #[error("the response of {endpoint} is larger than the {body} body limit of {limit} bytes")]
    ResponseTooLarge {
        /// The request path (no query string).
        endpoint: String,
        /// Which limit: page, error, token, discovery, introspection or JWKS.
        body: BodyKind,
        /// The limit, in bytes.
        limit: u64,
    },

    /// A transient failure persisted through every attempt of the retry policy.
    #[error("gave up after {attempts} attempts")]
    RetriesExhausted {
        /// Attempts made, the first one included.
        attempts: u32,
        /// The last attempt's error; its status and `Retry-After` are reachable through
        /// [`Error::status`] and [`Error::retry_after`] on the outer error too.
        #[source]
        last: Box<Error>,
    },

    /// A JWT failed verification.
    #[error("token verification failed")]
    TokenVerification(#[from] VerifyError),
}

fn authorization_message(code: &ErrorCode, description: &Option<String>) -> String {
    let mut text = format!("the authorization server refused the sign-in ({code})");
    if let Some(description) = description {
        text.push_str(": ");
        text.push_str(description);
    }
    text
}

fn sunset_message(sunset: &Option<DateTime<Utc>>, successor: &Option<Url>) -> String {
    let mut text = String::from("api version has reached its sunset");
    if let Some(date) = sunset {
        text.push_str(&format!(" on {}", date.format("%Y-%m-%d")));
    }
    if let Some(next) = successor {
        text.push_str(&format!("; successor: {next}"));
    }
    text
}

impl Error {
    pub(crate) fn invalid(argument: &'static str, message: impl Into<String>) -> Self {
        Error::InvalidArgument { argument, message: message.into() }
    }

    /// The HTTP status of the response behind this error, if there was one.
    pub fn status(&self) -> Option<u16> {
        self.response().map(|r| r.status)
    }

    /// The error code the server sent (`invalid_token`, `rate_limited`, `access_denied`, ...),
    /// if any.
    pub fn code(&self) -> Option<&ErrorCode> {
        match self {
            Error::Authorization { code, .. } => Some(code),
            _ => self.response().map(|r| &r.code),
        }
    }

    /// The server's human-readable description, if any.
    pub fn description(&self) -> Option<&str> {
        match self {
            Error::Authorization { description, .. } => description.as_deref(),
            _ => self.response().and_then(|r| r.description.as_deref()),
        }
    }

    /// How long the server asked to wait (`Retry-After`), if it did.
    pub fn retry_after(&self) -> Option<Duration> {
        self.response().and_then(|r| r.retry_after)
    }

    /// The deprecation notice carried by the failed response, if any.
    pub fn deprecation(&self) -> Option<&DeprecationNotice> {
        match self {
            Error::Deprecated(notice) => Some(notice),
            _ => self.response().and_then(|r| r.deprecation.as_deref()),
        }
    }

    /// For a rejected cursor: how many items the listing had delivered.
    pub fn items_delivered(&self) -> Option<u64> {
        match self {
            Error::CursorRejected { delivered, .. } => Some(*delivered),
            _ => None,
        }
    }

    /// The error response behind this error, for API and authorization-server errors.
    pub fn response(&self) -> Option<&ApiError> {
        match self {
            Error::Api(r) | Error::Auth(r) => Some(r),
            Error::Sunset { response, .. } | Error::CursorRejected { response, .. } => Some(response),
            Error::RetriesExhausted { last, .. } => last.response(),
            _ => None,
        }
    }

    /// True when sending the same request again later may succeed: rate limits, 502/503/504,
    /// connection failures (before or during the exchange) and timeouts. From the authorization
    /// server, `server_error` too; never `invalid_client`, `invalid_grant`, `invalid_scope` or
    /// `unauthorized_client`, whatever the status.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Http(e) => {
                e.is_timeout() || e.is_connect() || e.is_connection_lost() || e.kind == HttpErrorKind::Body
            }
            Error::RetriesExhausted { last, .. } => last.is_retryable(),
            Error::Api(r) => r.is_transient(),
            Error::Auth(r) => {
                let definitive = matches!(
                    r.code,
                    ErrorCode::InvalidClient
                        | ErrorCode::InvalidGrant
                        | ErrorCode::InvalidScope
                        | ErrorCode::UnauthorizedClient
                );
                !definitive && (r.is_transient() || r.code == ErrorCode::ServerError)
            }
            _ => false,
        }
    }

    /// True when the user must sign in again: the refresh token was rejected
    /// (`invalid_grant`), the client's credentials were (`invalid_client`), there is no
    /// refresh token to use, or the API refused the access token (401 `invalid_token`) after
    /// the client had replaced it and sent the request again.
    pub fn needs_reauthentication(&self) -> bool {
        match self {
            Error::Auth(r) => matches!(r.code, ErrorCode::InvalidGrant | ErrorCode::InvalidClient),
            Error::Api(r) => r.status == 401 && r.code == ErrorCode::InvalidToken,
            Error::ReauthenticationRequired { .. } => true,
            _ => false,
        }
    }

    /// True when the request timed out (on the last attempt, after retries).
    pub fn is_timeout(&self) -> bool {
        match self {
            Error::Http(e) => e.is_timeout(),
            Error::RetriesExhausted { last, .. } => last.is_timeout(),
            _ => false,
        }
    }
}

impl Error {
    /// An equal error, for each caller that shares one failed token request: same variant,
    /// status, code, `Retry-After` and source chain.
    pub(crate) fn duplicate(&self) -> Error {
        match self {
            Error::InvalidArgument { argument, message } => {
                Error::InvalidArgument { argument, message: message.clone() }
            }
            Error::Api(r) => Error::Api(r.clone()),
            Error::Auth(r) => Error::Auth(r.clone()),
            Error::Authorization { code, description } => {
                Error::Authorization { code: code.clone(), description: description.clone() }
            }
            Error::Callback(e) => Error::Callback(e.clone()),
            Error::ReauthenticationRequired { reason } => Error::ReauthenticationRequired { reason },
            Error::TokenStore(e) => Error::TokenStore(e.clone()),
            Error::Sunset { sunset, successor, response } => {
                Error::Sunset { sunset: *sunset, successor: successor.clone(), response: response.clone() }
            }
            Error::Deprecated(notice) => Error::Deprecated(notice.clone()),
            Error::CursorRejected { code, delivered, response } => Error::CursorRejected {
                code: code.clone(),
                delivered: *delivered,
                response: response.clone(),
            },
            Error::Pagination(e) => Error::Pagination(e.clone()),
            Error::Http(e) => Error::Http(e.clone()),
            Error::Decode { endpoint, message } => {
                Error::Decode { endpoint: endpoint.clone(), message: message.clone() }
            }
            Error::RetriesExhausted { attempts, last } => {
                Error::RetriesExhausted { attempts: *attempts, last: Box::new(last.duplicate()) }
            }
            Error::TokenVerification(e) => Error::TokenVerification(duplicate_verify_error(e)),
            Error::Undecodable { endpoint, item } => {
                Error::Undecodable { endpoint: endpoint.clone(), item: item.clone() }
            }
            Error::ResponseTooLarge { endpoint, body, limit } => {
                Error::ResponseTooLarge { endpoint: endpoint.clone(), body: *body, limit: *limit }
            }
        }
    }
}

fn duplicate_verify_error(e: &VerifyError) -> VerifyError {
    match e {
        VerifyError::Malformed => VerifyError::Malformed,
        VerifyError::MissingKeyId => VerifyError::MissingKeyId,
        VerifyError::UnknownKey { kid } => VerifyError::UnknownKey { kid: kid.clone() },
        VerifyError::UnsupportedAlgorithm { alg } => VerifyError::UnsupportedAlgorithm { alg: alg.clone() },
        VerifyError::InvalidSignature => VerifyError::InvalidSignature,
        VerifyError::Expired => VerifyError::Expired,
        VerifyError::NotYetValid => VerifyError::NotYetValid,
        VerifyError::InvalidIssuer => VerifyError::InvalidIssuer,
        VerifyError::InvalidAudience => VerifyError::InvalidAudience,
        VerifyError::InvalidNonce => VerifyError::InvalidNonce,
        VerifyError::MissingClaim { claim } => VerifyError::MissingClaim { claim: claim.clone() },
        VerifyError::Jwks { message } => VerifyError::Jwks { message: message.clone() },
        VerifyError::InvalidConfig { message } => VerifyError::InvalidConfig { message: message.clone() },
    }
}

/// An error response from the API or the authorization server.
///
/// The body format is `{"error": code, "error_description": text}` (spec Part 7); a body in
/// another shape still yields an `ApiError` with the HTTP status and [`ErrorCode::Unknown`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ApiError {
    /// HTTP status code.
    pub status: u16,
    /// The `error` field.
    pub code: ErrorCode,
    /// The `error_description` field, shortened to 1 KiB with control characters escaped.
    pub description: Option<String>,
    /// The request path the error answered (no query string).
    pub endpoint: String,
    /// `Retry-After`, as a duration from when the response arrived.
    pub retry_after: Option<Duration>,
    /// Deprecation headers on the error response.
    pub deprecation: Option<Box<DeprecationNotice>>,
}

impl ApiError {
    /// A rate limit (429), a 502/503/504, or the codes that say the same.
    pub(crate) fn is_transient(&self) -> bool {
        matches!(self.status, 429 | 502 | 503 | 504)
            || matches!(self.code, ErrorCode::RateLimited | ErrorCode::TemporarilyUnavailable)
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} answered {} ({})", self.endpoint, self.status, self.code)?;
        if let Some(text) = &self.description {
            write!(f, ": {text}")?;
        }
        Ok(())
    }
}

macro_rules! error_codes {
    ($($(#[$doc:meta])* $variant:ident => $text:literal,)*) => {
        /// An OAuth 2.0 or API error code (the `error` field of an error body).
        ///
        /// Codes the crate does not know are kept in [`ErrorCode::Other`].
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $($(#[$doc])* $variant,)*
            /// A code this version of the crate does not know.
            Other(String),
            /// The body carried no code.
            Unknown,
        }

        impl ErrorCode {
            /// The code as sent on the wire.
            pub fn as_str(&self) -> &str {
                match self {
                    $(ErrorCode::$variant => $text,)*
                    ErrorCode::Other(code) => code,
                    ErrorCode::Unknown => "unknown",
                }
            }

            /// Parses a wire code; unknown codes become [`ErrorCode::Other`], shortened to
            /// 1 KiB with control characters escaped.
            pub fn parse(code: &str) -> Self {
                match code {
                    $($text => ErrorCode::$variant,)*
                    other => ErrorCode::Other(crate::text::server_text(other)),
                }
            }

            /// Every code this version of the crate knows.
            pub const KNOWN: &'static [&'static str] = &[$($text,)*];
        }
    };
}

error_codes! {
    /// The access token is expired or invalid.
    InvalidToken => "invalid_token",
    /// The access token lacks a required scope.
    InsufficientScope => "insufficient_scope",
    /// The refresh token or authorization code is invalid or expired.
    InvalidGrant => "invalid_grant",
    /// Client authentication failed.
    InvalidClient => "invalid_client",
    /// The request is malformed (bad limit, sort, filter or parameter).
    InvalidRequest => "invalid_request",
    /// A requested scope is invalid or not allowed for the client.
    InvalidScope => "invalid_scope",
    /// The client may not use this grant type.
    UnauthorizedClient => "unauthorized_client",
    /// The authorization server does not support the grant type.
    UnsupportedGrantType => "unsupported_grant_type",
    /// The user or server denied the authorization request.
    AccessDenied => "access_denied",
    /// The cursor is malformed or belongs to another query.
    InvalidCursor => "invalid_cursor",
    /// The cursor is too old.
    CursorExpired => "cursor_expired",
    /// No such resource or version.
    NotFound => "not_found",
    /// Too many requests.
    RateLimited => "rate_limited",
    /// The server failed.
    ServerError => "server_error",
    /// The server is temporarily unable to answer.
    TemporarilyUnavailable => "temporarily_unavailable",
    /// The API version has reached its sunset.
    VersionSunset => "version_sunset",
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why the redirect back from the authorization server was refused.
///
/// Every check runs before the code is exchanged, so a refused callback never reaches the
/// token endpoint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallbackError {
    /// The callback is not a URL (or query string) that can be read.
    #[error("the callback url cannot be parsed")]
    Malformed,
    /// A parameter appears more than once.
    #[error("the callback repeats the `{0}` parameter")]
    RepeatedParameter(&'static str),
    /// The callback has no `state` parameter.
    #[error("the callback has no `state` parameter")]
    MissingState,
    /// The `state` does not belong to this sign-in (a forged or stale callback).
    #[error("the `state` parameter does not match this sign-in")]
    StateMismatch,
    /// The `iss` parameter names another authorization server (RFC 9207: a mix-up attack).
    #[error("the `iss` parameter does not name the expected authorization server")]
    IssuerMismatch,
    /// The callback has neither a `code` nor an `error`.
    #[error("the callback has no `code` parameter")]
    MissingCode,
    /// No callback arrived before the loopback listener's timeout.
    #[error("no callback arrived within {0:?}")]
    Timeout(Duration),
    /// The loopback listener could not bind or accept connections.
    #[error("the loopback listener failed: {0}")]
    Listener(String),
}

/// How a server broke the pagination contract.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PaginationError {
    /// `hasMore` was true but no `nextCursor` was given.
    MissingCursor {
        /// Pages received so far in this listing, this one included.
        page: u64,
    },
    /// The server returned a cursor it had already returned in this listing.
    RepeatedCursor {
        /// Pages received so far in this listing, this one included.
        page: u64,
    },
    /// Too many empty pages in a row with `hasMore` true.
    TooManyEmptyPages {
        /// How many empty pages came in a row.
        count: u32,
    },
    /// The server sent a `nextCursor` longer than
    /// [`MAX_CURSOR_BYTES`](crate::limits::MAX_CURSOR_BYTES).
    CursorTooLong {
        /// Pages received so far in this listing, this one included.
        page: u64,
        /// The cursor's length in bytes.
        bytes: usize,
    },
}

impl fmt::Display for PaginationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PaginationError::MissingCursor { page } => {
                write!(f, "page {page} has `hasMore: true` but no `nextCursor`")
            }
            PaginationError::RepeatedCursor { page } => {
                write!(f, "page {page} repeats a cursor already seen in this listing")
            }
            PaginationError::TooManyEmptyPages { count } => {
                write!(f, "{count} empty pages in a row with `hasMore: true`")
            }
            PaginationError::CursorTooLong { page, bytes } => {
                write!(
                    f,
                    "page {page} has a `nextCursor` of {bytes} bytes, more than the {} allowed",
                    crate::limits::MAX_CURSOR_BYTES
                )
            }
        }
    }
}

/// A failure to send a request or read its response.
#[derive(Debug, Clone)]
pub struct HttpError {
    kind: HttpErrorKind,
    endpoint: String,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HttpErrorKind {
    Timeout,
    Connect,
    ConnectionLost,
    Body,
    Redirect,
    Middleware,
    Other,
}

impl HttpError {
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
        HttpError { kind, endpoint: endpoint.to_owned(), source: Some(Arc::new(err.without_url())) }
    }

    /// A failure of the request, or of a middleware layer given to the client builder.
    pub(crate) fn from_middleware(endpoint: &str, err: reqwest_middleware::Error) -> Self {
        match err {
            reqwest_middleware::Error::Reqwest(err) => HttpError::from_reqwest(endpoint, err),
            reqwest_middleware::Error::Middleware(err) => HttpError {
                kind: HttpErrorKind::Middleware,
                endpoint: endpoint.to_owned(),
                source: Some(Arc::from(Box::<dyn std::error::Error + Send + Sync>::from(err))),
            },
        }
    }

    pub(crate) fn redirect(endpoint: &str, status: u16) -> Self {
        HttpError {
            kind: HttpErrorKind::Redirect,
            endpoint: format!("{endpoint} (status {status})"),
            source: None,
        }
    }

    /// A request that got no answer within `timeout`, without an underlying error (a caller
    /// that stopped waiting for a shared token request).
    pub(crate) fn timed_out(endpoint: &str) -> Self {
        HttpError { kind: HttpErrorKind::Timeout, endpoint: endpoint.to_owned(), source: None }
    }

    /// A request that ended without any answer: the task that sent it stopped.
    pub(crate) fn abandoned(endpoint: &str) -> Self {
        HttpError { kind: HttpErrorKind::Other, endpoint: endpoint.to_owned(), source: None }
    }

    /// True when the request timed out.
    pub fn is_timeout(&self) -> bool {
        self.kind == HttpErrorKind::Timeout
    }

    /// True when no connection could be made.
    pub fn is_connect(&self) -> bool {
        self.kind == HttpErrorKind::Connect
    }

    /// True when the connection closed or reset after the request was sent, before the
    /// response head arrived.
    pub fn is_connection_lost(&self) -> bool {
        self.kind == HttpErrorKind::ConnectionLost
    }

    /// True when the server answered with a redirect, which the client never follows.
    pub fn is_redirect(&self) -> bool {
        self.kind == HttpErrorKind::Redirect
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            HttpErrorKind::Timeout => "timed out",
            HttpErrorKind::Connect => "could not connect",
            HttpErrorKind::ConnectionLost => "lost its connection before the response arrived",
            HttpErrorKind::Body => "failed while reading the response",
            HttpErrorKind::Redirect => "answered with a redirect, which is not followed",
            HttpErrorKind::Middleware => "was stopped by a middleware layer",
            HttpErrorKind::Other => "failed",
        };
        write!(f, "request to {} {what}", self.endpoint)
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

impl std::error::Error for HttpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for code in ErrorCode::KNOWN {
            assert_eq!(ErrorCode::parse(code).as_str(), *code);
            assert!(!matches!(ErrorCode::parse(code), ErrorCode::Other(_)));
        }
        assert_eq!(ErrorCode::parse("teapot"), ErrorCode::Other("teapot".into()));
    }

    #[test]
    fn messages_are_lowercase_without_trailing_punctuation() {
        let err = Error::invalid("limit", "expected 1..=100, got 0");
        let text = err.to_string();
        assert_eq!(text, "invalid argument `limit`: expected 1..=100, got 0");
        assert!(!text.ends_with('.'));
    }
}
