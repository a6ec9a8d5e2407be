//! The `oauth2` crate's side of authentication: its requests sent through the wire, and its
//! errors turned into the crate's.
//!
//! Token, introspection and revocation requests go through [`OAuthHttp`]: the wire's one
//! response path, where every answer other than 2xx becomes [`Error::Api`] before
//! `oauth2` reads the body (with the real status, `error` and `error_description` when the
//! body is JSON, and `Retry-After`), and transient failures (429, 502, 503, 504 whatever the
//! body, `server_error`, `temporarily_unavailable`, connection failures, timeouts) are sent
//! again under the sender's retry policy.

use std::time::Duration;

use chrono::Utc;
use futures::future::BoxFuture;
use http::HeaderValue;
use http::header::AUTHORIZATION;
use oauth2::basic::{
    BasicErrorResponse, BasicRevocationErrorResponse, BasicTokenIntrospectionResponse, BasicTokenType,
};
use oauth2::{
    EndpointNotSet, ExtraTokenFields, RequestTokenError, StandardRevocableToken, StandardTokenResponse,
    TokenResponse,
};
use serde::{Deserialize, Serialize};

use super::{AccessToken, IdToken, RefreshToken, TokenSet};
use crate::Error;
use crate::bounds::{MAX_EPOCH_SECONDS, MAX_TOKEN_LIFETIME, bound_json_fields, clamp_lifetime};
use crate::error::{ApiError, ErrorCode, Origin};
use crate::limits::BodyLimit;
use crate::pacing::Pacer;
use crate::wire::{Expect, HttpSender, no_head};

/// The HTTP client handed to the `oauth2` crate: its requests through `sender`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OAuthHttp<'s> {
    sender: &'s HttpSender,
    /// What a successful answer's body is, for its size limit.
    body: BodyLimit,
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
        OAuthHttp { sender, body: BodyLimit::TOKEN, authorization: None, numbers: TOKEN_NUMBERS }
    }

    /// For token introspection.
    pub(crate) fn introspection(sender: &'s HttpSender) -> Self {
        OAuthHttp { body: BodyLimit::INTROSPECTION, numbers: INTROSPECTION_NUMBERS, ..Self::token(sender) }
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
        let expect = Expect { body: self.body, origin: Origin::AuthorizationServer, route: None };
        let attempt = |number| {
            let request = http::Request::from_parts(parts.clone(), body.clone());
            let path = path.as_str();
            async move {
                let request =
                    reqwest::Request::try_from(request).map_err(|e| Error::from_reqwest(path, e))?;
                let response = self.sender.exchange(request, number, expect, no_head).await?;
                let mut answer = http::Response::new(bound_json_fields(response.body, self.numbers));
                *answer.status_mut() = response.status;
                *answer.headers_mut() = response.headers;
                Ok(answer)
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
            let code = body.error().as_ref();
            let status = if code == "invalid_client" { 401 } else { 400 };
            Error::Api(
                ApiError::new(status, Some(ErrorCode::parse(code)), endpoint)
                    .with_origin(Origin::AuthorizationServer)
                    .with_description(body.error_description().map(|d| crate::text::server_text(d))),
            )
        }
        // Only the path of the field: the parser's message may quote a token.
        RequestTokenError::Parse(parse, _body) => {
            Error::decode(endpoint, format_args!("token response: {}", parse.path()))
        }
        RequestTokenError::Other(message) => Error::decode(endpoint, message),
    }
}

/// The token response fields `oauth2`'s basic response drops: the OpenID Connect ID token.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub(crate) struct OidcFields {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id_token: Option<IdToken>,
}

impl ExtraTokenFields for OidcFields {}

pub(crate) type OidcTokenResponse = StandardTokenResponse<OidcFields, BasicTokenType>;

/// The `oauth2` client of every request the crate sends the authorization server, with the
/// authorization, token and introspection endpoints it has (`EndpointSet`) or not.
pub(crate) type OAuthClient<Authorize, Introspect, Token> = oauth2::Client<
    BasicErrorResponse,
    OidcTokenResponse,
    BasicTokenIntrospectionResponse,
    StandardRevocableToken,
    BasicRevocationErrorResponse,
    Authorize,
    EndpointNotSet,
    Introspect,
    EndpointNotSet,
    Token,
>;

/// The answer of a token request: the new set (a new ID token not verified yet), `expires_in`
/// (clamped), and a new ID token to verify with the set it replaces.
pub(crate) struct Refreshed {
    pub(crate) tokens: TokenSet,
    pub(crate) expires_in: Option<Duration>,
    pub(crate) new_id_token: Option<(IdToken, TokenSet)>,
}

/// Sends `request`, a token request to `endpoint` through [`OAuthHttp`], and reads the set its
/// answer holds (`requested` as the scopes when it names none); an access token that cannot be
/// sent in a header makes the answer unusable. No new ID token is set aside for verification.
pub(crate) async fn request_tokens(
    endpoint: &str,
    requested: &[String],
    request: impl Future<Output = Result<OidcTokenResponse, RequestTokenError<Error, BasicErrorResponse>>>,
) -> Result<Refreshed, Error> {
    let sent_at = Utc::now();
    let response = request.await.map_err(|e| token_error(endpoint, e))?;
    let mut tokens = TokenSet::new(response.access_token().secret().clone());
    if !tokens.access_token.fits_header() {
        return Err(AccessToken::unsendable(endpoint));
    }
    tokens.refresh_token = response.refresh_token().map(|t| RefreshToken::new(t.secret().clone()));
    tokens.id_token = response.extra_fields().id_token.clone();
    let expires_in = response.expires_in().map(clamp_lifetime);
    let lifetime = expires_in.and_then(|lifetime| chrono::Duration::from_std(lifetime).ok());
    tokens.expires_at = lifetime.and_then(|lifetime| sent_at.checked_add_signed(lifetime));
    // RFC 6749 section 5.1: no `scope` in the response means the requested ones were granted.
    let granted = response.scopes().map(|scopes| scopes.iter().map(|scope| scope.to_string()).collect());
    tokens.scopes = granted.unwrap_or_else(|| requested.to_vec());
    Ok(Refreshed { tokens, expires_in, new_id_token: None })
}
