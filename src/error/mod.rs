//! The crate's error type.
//!
//! Every fallible operation returns [`Error`]. It is a `#[non_exhaustive]` enum whose variants
//! say what went wrong; each variant holds one context value whose fields are private and read
//! through accessors, so a variant can carry more context later without breaking callers. The
//! accessors on [`Error`] itself ([`Error::status`], [`Error::code`], [`Error::description`],
//! [`Error::retry_after`]) and its predicates ([`Error::is_retryable`],
//! [`Error::needs_reauthentication`], [`Error::is_timeout`]) answer the questions callers
//! usually ask without matching on variants.
//!
//! Messages are lowercase, without trailing punctuation, and never contain a token, a secret or
//! a response body that could hold one. A message does not repeat its cause: the cause is the
//! [`source`](std::error::Error::source), and a report walks the chain. A body that cannot be
//! decoded is the one whose cause is in its message: the parser's reason (at most 1 KiB; for a
//! token or introspection answer, whose values may be tokens, a value of the wrong type is named
//! by its position alone), with no source to repeat it.
//!
//! Where a request went is its path (`/v1/companies answered 404 (not_found)`), after the
//! server's address when that server is not the API (`https://auth.example.com/oauth2/token
//! answered 401 (invalid_client)`). Every error, `Debug` included, stays under 8 KiB whatever a
//! server or a caller sends: server text and paths are cut at 1 KiB.
//!
//! An `Error` is small (at most 24 bytes) and cheap to clone: every context lives behind an
//! `Arc`, or is a `&'static str`.

mod api;
mod auth;
mod http;
mod listing;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use self::api::ApiInner;
pub use self::api::{ApiError, AuthorizationError, ErrorCode, Origin, SunsetError};
pub use self::auth::{CallbackError, TokenStoreError, VerifyError};
pub(crate) use self::http::HttpErrorKind;
pub use self::http::{RetriesExhausted, TransportError};
pub use self::listing::{CursorRejected, PaginationError, Undecodable, UndecodableError};
use crate::deprecation::DeprecationNotice;
use crate::text::{server_text, shown_path};

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
///
/// Each variant's context is read through accessors:
///
/// ```
/// # async fn run(client: business_records::Client) {
/// use business_records::Error;
///
/// match client.companies().limit(10).send().await {
///     Err(Error::Sunset(sunset)) => eprintln!("moved on {:?} to {:?}", sunset.sunset(), sunset.successor()),
///     Err(Error::InvalidArgument(invalid)) => eprintln!("fix `{}`: {}", invalid.argument(), invalid.message()),
///     _ => {}
/// }
/// # }
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An argument given to a builder or constructor was rejected before any request was sent.
    #[error(transparent)]
    InvalidArgument(Arc<InvalidArgument>),

    /// The API or the authorization server answered with an error response;
    /// [`ApiError::origin`] says which.
    #[error(transparent)]
    Api(ApiError),

    /// The authorization server sent the user back with an error instead of a code
    /// (RFC 6749 section 4.1.2.1): the user declined (`access_denied`), or the authorization
    /// request was refused. No token request was made.
    #[error(transparent)]
    Authorization(AuthorizationError),

    /// The redirect back from the authorization server was refused before any token request:
    /// a `state` that does not belong to this sign-in, a foreign `iss`, no code, or no callback
    /// in time.
    #[error(transparent)]
    Callback(Arc<CallbackError>),

    /// The user must sign in again: the client holds no refresh token, or its tokens cannot be
    /// renewed any more. The variant holds the reason, e.g. `the user signed out`.
    #[error("sign-in required: {0}")]
    ReauthenticationRequired(&'static str),

    /// A [`TokenStore`](crate::auth::TokenStore) failed to load or save tokens; the
    /// [`TokenStoreError`] is the [`source`](std::error::Error::source).
    #[error("token store failed")]
    TokenStore(#[from] TokenStoreError),

    /// The API version has reached its sunset and no longer serves requests.
    #[error(transparent)]
    Sunset(Arc<SunsetError>),

    /// A response was marked deprecated and the client runs with
    /// [`DeprecationPolicy::Fail`](crate::DeprecationPolicy::Fail).
    #[error("deprecated endpoint refused by policy: {0}")]
    Deprecated(Arc<DeprecationNotice>),

    /// The cursor of a listing expired or was rejected; the listing must restart from the
    /// first page.
    #[error(transparent)]
    CursorRejected(Arc<CursorRejected>),

    /// The server broke the pagination contract (API Part 4.1).
    #[error("pagination protocol violation: {0}")]
    Pagination(Arc<PaginationError>),

    /// Sending the request or reading the response failed (connection, timeout, TLS, a
    /// redirect, a task that stopped).
    #[error(transparent)]
    Http(TransportError),

    /// A response body could not be decoded, or lacks what the client needs from it; the
    /// message says why.
    #[error(transparent)]
    Decode(TransportError),

    /// An element of a page is not a record, and the listing was told to fail on that with
    /// [`OnUndecodable::Fail`](crate::OnUndecodable::Fail).
    #[error(transparent)]
    Undecodable(Arc<UndecodableError>),

    /// A response body was larger than the limit for its kind; reading stopped there.
    #[error(transparent)]
    ResponseTooLarge(TransportError),

    /// A transient failure persisted through every attempt of the retry policy; the last
    /// attempt's error is the [`source`](std::error::Error::source).
    #[error(transparent)]
    RetriesExhausted(Arc<RetriesExhausted>),

    /// A JWT failed verification; the [`VerifyError`] is the
    /// [`source`](std::error::Error::source).
    #[error("token verification failed")]
    TokenVerification(#[source] Arc<VerifyError>),
}

/// `From` for the contexts that their variant holds in an `Arc`.
macro_rules! from_shared {
    ($($context:ty => $variant:ident),*) => {
        $(impl From<$context> for Error {
            fn from(context: $context) -> Self {
                Error::$variant(Arc::new(context))
            }
        })*
    };
}

from_shared!(VerifyError => TokenVerification, CallbackError => Callback, PaginationError => Pagination);

impl Error {
    /// An [`Error::InvalidArgument`] naming `argument`; `message` is shortened to 1 KiB.
    pub(crate) fn invalid(argument: &'static str, message: impl Into<String>) -> Self {
        let message = server_text(&message.into());
        Error::InvalidArgument(Arc::new(InvalidArgument { argument, message }))
    }

    /// The HTTP status of the response behind this error, if there was one.
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Http(e) => e.status(),
            _ => self.response().map(ApiError::status),
        }
    }

    /// The error code the server sent (`invalid_token`, `rate_limited`, `access_denied`, ...),
    /// if any.
    pub fn code(&self) -> Option<&ErrorCode> {
        self.answer().and_then(|answer| answer.code.as_ref())
    }

    /// The server's human-readable description, if any.
    pub fn description(&self) -> Option<&str> {
        self.answer().and_then(|answer| answer.description.as_deref())
    }

    /// What the server said: an error response, or the error the authorization server sent
    /// the user back with.
    fn answer(&self) -> Option<&ApiInner> {
        match self {
            Error::Authorization(e) => Some(&e.0),
            _ => self.response().map(|r| &*r.0),
        }
    }

    /// How long the server asked to wait (`Retry-After`), if it did: at most a day.
    pub fn retry_after(&self) -> Option<Duration> {
        self.response().and_then(ApiError::retry_after)
    }

    /// The deprecation notice carried by the failed response, if any.
    pub fn deprecation(&self) -> Option<&DeprecationNotice> {
        match self {
            Error::Deprecated(notice) => Some(notice),
            _ => self.response().and_then(ApiError::deprecation),
        }
    }

    /// For a rejected cursor: how many items the listing had delivered.
    pub fn items_delivered(&self) -> Option<u64> {
        if let Error::CursorRejected(e) = self { Some(e.items_delivered()) } else { None }
    }

    /// The error response behind this error, for API and authorization-server errors.
    pub fn response(&self) -> Option<&ApiError> {
        match self.last_attempt() {
            Error::Api(r) => Some(r),
            Error::Sunset(e) => Some(e.response()),
            Error::CursorRejected(e) => Some(e.response()),
            _ => None,
        }
    }

    /// The error of the last attempt: this one, unless it is [`Error::RetriesExhausted`].
    fn last_attempt(&self) -> &Error {
        match self {
            Error::RetriesExhausted(e) => e.last().last_attempt(),
            _ => self,
        }
    }

    /// True when sending the same request again later may succeed: rate limits, 502/503/504,
    /// connection failures (before or during the exchange) and timeouts. From the authorization
    /// server, `server_error` too; never `invalid_client`, `invalid_grant`, `invalid_scope` or
    /// `unauthorized_client`, whatever the status. The crate's one rule of a transient failure:
    /// what retries retry by default, and what never counts as a sunset.
    pub fn is_retryable(&self) -> bool {
        match self.last_attempt() {
            Error::Http(e) => e.is_transient(),
            Error::Api(r) => r.is_transient(),
            _ => false,
        }
    }

    /// True when the server asks the client to slow down: a 429, or a `rate_limited` code.
    pub(crate) fn is_throttle(&self) -> bool {
        self.response().is_some_and(ApiError::is_throttle)
    }

    /// True when the user must sign in again: the refresh token was rejected
    /// (`invalid_grant`), the client's credentials were (`invalid_client`), there is no
    /// refresh token to use, or the API refused the access token (401 `invalid_token`) after
    /// the client had replaced it and sent the request again, or could not replace it (a
    /// static token).
    pub fn needs_reauthentication(&self) -> bool {
        use ErrorCode::{InvalidClient, InvalidGrant};
        match self {
            Error::Api(r) => match r.origin() {
                Origin::Api => r.is_invalid_token(),
                Origin::AuthorizationServer => matches!(r.code(), Some(InvalidGrant | InvalidClient)),
            },
            Error::ReauthenticationRequired(_) => true,
            _ => false,
        }
    }

    /// True when the request cannot have reached the server: the connection was never made.
    pub(crate) fn is_unsent(&self) -> bool {
        matches!(self, Error::Http(e) if e.is_connect())
    }

    /// True when the request timed out (on the last attempt, after retries).
    pub fn is_timeout(&self) -> bool {
        matches!(self.last_attempt(), Error::Http(e) if e.is_timeout())
    }
}

/// An argument given to a builder or constructor that was rejected, before any request was
/// sent: the context of [`Error::InvalidArgument`].
#[derive(Debug, thiserror::Error)]
#[error("invalid argument `{argument}`: {message}")]
pub struct InvalidArgument {
    argument: &'static str,
    message: String,
}

impl InvalidArgument {
    /// The argument's name, as in the method that took it (`limit`, `base_url`, ...).
    pub fn argument(&self) -> &'static str {
        self.argument
    }

    /// What was expected.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// A cause kept as the [`source`](std::error::Error::source) of an error.
type Cause = Box<dyn std::error::Error + Send + Sync>;

/// Where a request went, as an error shows it: the path (no query string), after the scheme,
/// host and port when the server is not the API (`https://auth.example.com/oauth2/token`), or
/// what the request was for (`the token endpoint`); each part cut as [`shown_path`] cuts it.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    server: Option<String>,
    /// The path, or what the request was for.
    path: String,
}

impl Endpoint {
    /// The endpoint of a request for `url` to the `server`.
    pub(crate) fn of(url: &url::Url, server: Origin) -> Self {
        let origin = (server != Origin::Api).then(|| shown_path(&url.origin().ascii_serialization()));
        Endpoint { server: origin, path: shown_path(url.path()) }
    }
}

impl<T: AsRef<str>> From<T> for Endpoint {
    fn from(path: T) -> Self {
        Endpoint { server: None, path: shown_path(path.as_ref()) }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.server.as_deref().unwrap_or_default(), self.path)
    }
}

/// An optional part of a message: the text before, the value and the text after when there is
/// a value, nothing otherwise.
struct Part<T>(&'static str, Option<T>, &'static str);

impl<T: fmt::Display> fmt::Display for Part<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.1.as_ref().map_or(Ok(()), |value| write!(f, "{}{value}{}", self.0, self.2))
    }
}

#[cfg(test)]
mod tests;
