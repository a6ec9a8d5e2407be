//! Error responses of the API and the authorization server, and the error codes they carry.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use url::Url;

use super::{Endpoint, Part};
use crate::deprecation::DeprecationNotice;
use crate::text::shown_url;

/// An error response from the API or the authorization server ([`origin`](Self::origin)): the
/// context of [`Error::Api`](super::Error::Api).
///
/// The body format is `{"error": code, "error_description": text}` (API Part 7); a body in
/// another shape still yields an `ApiError` with the HTTP status, and [`code`](Self::code)
/// `None` unless a `WWW-Authenticate` challenge names one. The message names the server's
/// address when it is not the API's (`https://auth.example.com/oauth2/token answered 401
/// (invalid_client)`).
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "{} answered {}{}{}",
    .0.endpoint,
    .0.status.unwrap_or_default(),
    Part(" (", .0.code.as_ref(), ")"),
    Part(": ", .0.description.as_ref(), "")
)]
pub struct ApiError(pub(super) Arc<ApiInner>);

/// What a server said when it refused: an error response ([`ApiError`]), or the error the
/// authorization server sent the user back with ([`AuthorizationError`]), which has no status.
#[derive(Debug, Clone)]
pub(super) struct ApiInner {
    origin: Origin,
    status: Option<u16>,
    pub(super) code: Option<ErrorCode>,
    pub(super) description: Option<String>,
    endpoint: Endpoint,
    retry_after: Option<Duration>,
    deprecation: Option<DeprecationNotice>,
}

impl ApiInner {
    fn new(origin: Origin, status: Option<u16>, code: Option<ErrorCode>, endpoint: Endpoint) -> Arc<Self> {
        let (description, retry_after, deprecation) = (None, None, None);
        Arc::new(ApiInner { origin, status, code, description, endpoint, retry_after, deprecation })
    }
}

impl ApiError {
    /// An error response of the API to a request for `endpoint` (a path, no query string, or
    /// the [`Endpoint`] of a request to another server).
    pub(crate) fn new(status: u16, code: Option<ErrorCode>, endpoint: impl Into<Endpoint>) -> Self {
        ApiError(ApiInner::new(Origin::Api, Some(status), code, endpoint.into()))
    }

    /// With the `error_description` (already made safe to show).
    pub(crate) fn with_description(mut self, description: Option<String>) -> Self {
        Arc::make_mut(&mut self.0).description = description;
        self
    }

    /// With the delay `Retry-After` asked for.
    pub(crate) fn with_retry_after(mut self, retry_after: Option<Duration>) -> Self {
        Arc::make_mut(&mut self.0).retry_after = retry_after;
        self
    }

    /// With the deprecation headers of the response.
    pub(crate) fn with_deprecation(mut self, deprecation: Option<DeprecationNotice>) -> Self {
        Arc::make_mut(&mut self.0).deprecation = deprecation;
        self
    }

    /// The same error, answered by `origin`.
    pub(crate) fn with_origin(mut self, origin: Origin) -> Self {
        Arc::make_mut(&mut self.0).origin = origin;
        self
    }

    /// Which server answered: the API, or the authorization server (token, discovery,
    /// introspection, revocation, JWKS).
    pub fn origin(&self) -> Origin {
        self.0.origin
    }

    /// The HTTP status code.
    pub fn status(&self) -> u16 {
        self.0.status.unwrap_or_default()
    }

    /// The `error` field, or the `error` of a `WWW-Authenticate: Bearer` challenge; `None`
    /// when the response named no code.
    pub fn code(&self) -> Option<&ErrorCode> {
        self.0.code.as_ref()
    }

    /// The `error_description` field, shortened to 1 KiB with control characters escaped.
    pub fn description(&self) -> Option<&str> {
        self.0.description.as_deref()
    }

    /// The request path the error answered (no query string).
    pub fn endpoint(&self) -> &str {
        &self.0.endpoint.path
    }

    /// `Retry-After`, as a duration from when the response arrived, at most a day (a longer
    /// one, or an HTTP-date further away, counts as a day).
    pub fn retry_after(&self) -> Option<Duration> {
        self.0.retry_after
    }

    /// Deprecation headers on the error response.
    pub fn deprecation(&self) -> Option<&DeprecationNotice> {
        self.0.deprecation.as_ref()
    }

    /// A 401 `invalid_token`: the access token was refused.
    pub(crate) fn is_invalid_token(&self) -> bool {
        self.0.status == Some(401) && self.0.code == Some(ErrorCode::InvalidToken)
    }

    /// A 429, or a `rate_limited` code: the server asks the client to slow down.
    pub(crate) fn is_throttle(&self) -> bool {
        self.0.status == Some(429) || self.0.code == Some(ErrorCode::RateLimited)
    }

    /// A transient failure: a throttle, a 502/503/504, or a `temporarily_unavailable` code;
    /// from the authorization server, `server_error` too, and never a code that refuses the
    /// client or its grant for good (`invalid_client`, `invalid_grant`, `invalid_scope`,
    /// `unauthorized_client`), whatever the status.
    pub(crate) fn is_transient(&self) -> bool {
        use ErrorCode::{InvalidClient, InvalidGrant, InvalidScope, ServerError, UnauthorizedClient};
        let code = self.0.code.as_ref();
        let transient = self.is_throttle()
            || matches!(self.0.status, Some(502..=504))
            || code == Some(&ErrorCode::TemporarilyUnavailable);
        match self.0.origin {
            Origin::Api => transient,
            Origin::AuthorizationServer => {
                let definitive =
                    matches!(code, Some(InvalidClient | InvalidGrant | InvalidScope | UnauthorizedClient));
                !definitive && (transient || code == Some(&ServerError))
            }
        }
    }
}

/// Which server sent an error response: [`ApiError::origin`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Origin {
    /// The API (`{base_url}/v1/...`).
    Api,
    /// The authorization server: its token, discovery, introspection, revocation or JWKS
    /// endpoint.
    AuthorizationServer,
}

/// The API version has reached its sunset: the context of [`Error::Sunset`](super::Error::Sunset).
///
/// `Debug` and the message show the successor as errors show URLs: without user information or
/// query values.
#[derive(thiserror::Error)]
#[error(
    "api version has reached its sunset{}{}",
    Part(" on ", self.sunset().map(|date| date.format("%Y-%m-%d")), ""),
    Part("; successor: ", .successor.as_ref().map(shown_url), "")
)]
pub struct SunsetError {
    pub(crate) successor: Option<Url>,
    pub(crate) response: ApiError,
}

impl SunsetError {
    /// When the version stopped working, if the server said (`Sunset`).
    pub fn sunset(&self) -> Option<DateTime<Utc>> {
        self.response.deprecation().and_then(|notice| notice.sunset)
    }

    /// The replacement announced with `Link: <..>; rel="successor-version"`.
    pub fn successor(&self) -> Option<&Url> {
        self.successor.as_ref()
    }

    /// The full error response.
    pub fn response(&self) -> &ApiError {
        &self.response
    }
}

impl fmt::Debug for SunsetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let successor = self.successor.as_ref().map(shown_url);
        f.debug_struct("SunsetError")
            .field("successor", &successor)
            .field("response", &self.response)
            .finish()
    }
}

/// The authorization server sent the user back with an error instead of a code: the context
/// of [`Error::Authorization`](super::Error::Authorization). It has no status: the error came
/// in the redirect, not in an answer to the client.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "the authorization server refused the sign-in{}{}",
    Part(" (", .0.code.as_ref(), ")"),
    Part(": ", .0.description.as_ref(), "")
)]
pub struct AuthorizationError(pub(super) Arc<ApiInner>);

impl AuthorizationError {
    /// The refusal `code` with its `description` (already made safe to show), sent back from
    /// the authorization endpoint `endpoint`.
    pub(crate) fn new(code: ErrorCode, description: Option<String>, endpoint: &Url) -> Self {
        let endpoint = Endpoint::of(endpoint, Origin::AuthorizationServer);
        let mut inner = ApiInner::new(Origin::AuthorizationServer, None, Some(code), endpoint);
        Arc::make_mut(&mut inner).description = description;
        AuthorizationError(inner)
    }

    /// The `error` parameter of the callback (`access_denied` when the user declined).
    pub fn code(&self) -> Option<&ErrorCode> {
        self.0.code.as_ref()
    }

    /// The `error_description` parameter, if any (shortened to 1 KiB, control characters
    /// escaped).
    pub fn description(&self) -> Option<&str> {
        self.0.description.as_deref()
    }
}

macro_rules! error_codes {
    ($($(#[$doc:meta])* $variant:ident => $text:literal,)*) => {
        /// An OAuth 2.0 or API error code (the `error` field of an error body).
        ///
        /// Codes the crate does not know are kept in [`ErrorCode::Other`]; a response without
        /// a code has none ([`ApiError::code`] is `None`).
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $($(#[$doc])* $variant,)*
            /// A code this version of the crate does not know.
            Other(String),
        }

        impl ErrorCode {
            /// The code as sent on the wire.
            pub fn as_str(&self) -> &str {
                match self {
                    $(ErrorCode::$variant => $text,)*
                    ErrorCode::Other(code) => code,
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
