//! The `oauth2` crate's side of authentication: its requests sent through the wire, and its
//! errors turned into the crate's.
//!
//! Token, introspection and revocation requests go through [`OAuthHttp`]: the wire's one
//! response path, where every answer other than 2xx becomes [`Error::Api`] before
//! `oauth2` reads the body (with the real status, `error` and `error_description` when the
//! body is JSON, and `Retry-After`), and transient failures (429, 502, 503, 504 whatever the
//! body, `server_error`, `temporarily_unavailable`, connection failures, timeouts) are sent
//! again under the sender's retry policy.

use futures::future::BoxFuture;
use http::HeaderValue;
use http::header::AUTHORIZATION;
use oauth2::RequestTokenError;
use oauth2::basic::BasicErrorResponse;

use crate::Error;
use crate::bounds::{MAX_EPOCH_SECONDS, MAX_TOKEN_LIFETIME, bound_json_fields};
use crate::error::{ApiError, DecodeError, ErrorCode, HttpError, Origin};
use crate::limits::BodyKind;
use crate::pacing::Pacer;
use crate::wire::{Expect, HttpSender, no_head};

/// The HTTP client handed to the `oauth2` crate: its requests through `sender`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OAuthHttp<'s> {
    sender: &'s HttpSender,
    /// What a successful answer's body is, for its size limit.
    body: BodyKind,
    /// An `Authorization` header in place of the one `oauth2` makes.
    authorization: Option<&'s HeaderValue>,
    /// The numbers of a successful answer and their largest values, held to their ranges
    /// before `oauth2` reads them: it fails a whole answer for one it cannot read.
    numbers: &'static [(&'static str, u64)],
}

/// `expires_in`: whole seconds, at most a year.
const TOKEN_NUMBERS: &[(&str, u64)] = &[("expires_in", MAX_TOKEN_LIFETIME.as_secs())];
/// Epoch times: whole seconds, at most the year 9999.
const INTROSPECTION_NUMBERS: &[(&str, u64)] =
    &[("exp", MAX_EPOCH_SECONDS), ("iat", MAX_EPOCH_SECONDS), ("nbf", MAX_EPOCH_SECONDS)];

impl<'s> OAuthHttp<'s> {
    /// For token requests (and revocation, whose answers are as small).
    pub(crate) fn token(sender: &'s HttpSender) -> Self {
        OAuthHttp { sender, body: BodyKind::Token, authorization: None, numbers: TOKEN_NUMBERS }
    }

    /// For token introspection.
    pub(crate) fn introspection(sender: &'s HttpSender) -> Self {
        OAuthHttp {
            sender,
            body: BodyKind::Introspection,
            authorization: None,
            numbers: INTROSPECTION_NUMBERS,
        }
    }

    /// With `header` (when set) as every request's `Authorization`.
    pub(crate) fn authorization(self, header: Option<&'s HeaderValue>) -> Self {
        OAuthHttp { authorization: header, ..self }
    }

    /// Sends `request`, retrying transient failures under the sender's policy.
    pub(crate) async fn send(&self, request: oauth2::HttpRequest) -> Result<oauth2::HttpResponse, Error> {
        let path = request.uri().path().to_owned();
        let (mut parts, body) = request.into_parts();
        if let Some(header) = self.authorization {
            parts.headers.insert(AUTHORIZATION, header.clone());
        }
        let expect = Expect { body: self.body.into(), origin: Origin::AuthorizationServer, route: None };
        let attempt = |number| {
            let request = http::Request::from_parts(parts.clone(), body.clone());
            let path = path.as_str();
            async move {
                let request = reqwest::Request::try_from(request)
                    .map_err(|e| Error::Http(HttpError::from_reqwest(path, e)))?;
                let response = self.sender.exchange(request, number, expect, no_head).await?;
                let mut answer = http::Response::builder().status(response.status);
                if let Some(headers) = answer.headers_mut() {
                    *headers = response.headers;
                }
                let body = bound_json_fields(response.body, self.numbers);
                answer.body(body).map_err(|e| Error::Decode(DecodeError::new(path, e)))
            }
        };
        self.sender.retry_policy().run(&Pacer::off(), true, None, attempt).await
    }
}

impl<'c> oauth2::AsyncHttpClient<'c> for OAuthHttp<'_> {
    type Error = Error;
    type Future = BoxFuture<'c, Result<oauth2::HttpResponse, Error>>;

    fn call(&'c self, request: oauth2::HttpRequest) -> Self::Future {
        Box::pin(self.send(request))
    }
}

/// Turns the `oauth2` crate's error into ours. The raw body of a parse failure may hold tokens,
/// so it is dropped, never shown.
///
/// Error answers (every status but 2xx) are typed by [`OAuthHttp`] before `oauth2` sees them,
/// with their real status; an error body `oauth2` still reads came with a 2xx status other
/// than 200.
pub(crate) fn token_error(endpoint: &str, err: RequestTokenError<Error, BasicErrorResponse>) -> Error {
    match err {
        RequestTokenError::Request(inner) => inner,
        RequestTokenError::ServerResponse(body) => {
            let status = match body.error().as_ref() {
                "invalid_client" => 401,
                _ => 400,
            };
            Error::Api(
                ApiError::new(status, Some(ErrorCode::parse(body.error().as_ref())), endpoint)
                    .with_origin(Origin::AuthorizationServer)
                    .with_description(body.error_description().map(|d| crate::text::server_text(d))),
            )
        }
        // Only the path of the field: the parser's message may quote a token.
        RequestTokenError::Parse(parse, _body) => {
            Error::Decode(DecodeError::invalid(endpoint, format!("token response: {}", parse.path())))
        }
        RequestTokenError::Other(message) => Error::Decode(DecodeError::invalid(endpoint, message)),
    }
}
