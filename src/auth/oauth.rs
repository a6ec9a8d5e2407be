//! The one path to the authorization server: token, introspection and revocation requests,
//! each a form POST ([`post_form`]) through the wire's one response path, where every answer
//! other than 2xx becomes [`Error::Api`] (with the real status, `error` and
//! `error_description` when the body is JSON, and `Retry-After`), and transient failures (429,
//! 502, 503, 504 whatever the body, `server_error`, `temporarily_unavailable`, connection
//! failures, timeouts) are sent again under the sender's retry policy. Answers are read into
//! the `oauth2` crate's types.

use std::time::Duration;

use base64::Engine as _;
use chrono::Utc;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Method};
use oauth2::basic::BasicTokenType;
use oauth2::{ExtraTokenFields, StandardTokenResponse, TokenResponse};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use url::Url;
use url::form_urlencoded::{Serializer, byte_serialize};

use super::{AccessToken, ClientSecret, IdToken, RefreshToken, TokenSet};
use crate::Error;
use crate::bounds::{MAX_EPOCH_SECONDS, MAX_TOKEN_LIFETIME, bound_json_fields, clamp_lifetime};
use crate::error::{Endpoint, Origin};
use crate::limits::BodyLimit;
use crate::pacing::Pacer;
use crate::wire::{Expect, HttpSender, no_head};

/// How a client says who it is to the authorization server.
#[derive(Clone, Debug)]
pub(crate) enum ClientAuth {
    /// A public client: `client_id` in the form.
    Public(String),
    /// `client_id` and `client_secret` in the form.
    InBody(String, ClientSecret),
    /// An `Authorization: Basic` header (its `Debug` shows `Sensitive`).
    Basic(HeaderValue),
}

impl ClientAuth {
    /// HTTP Basic of `client_id` and `client_secret`, each form-urlencoded first as RFC 6749
    /// section 2.3.1 says, or `literal`ly (API Part 5.4, RFC 7617: a `:` in the id is refused).
    pub(crate) fn basic(client_id: &str, client_secret: &ClientSecret, literal: bool) -> Result<Self, Error> {
        if literal && client_id.contains(':') {
            let message = "expected no `:` in a client id sent with literal HTTP Basic";
            return Err(Error::invalid("client_id", message));
        }
        let encode =
            |text: &str| if literal { text.to_owned() } else { byte_serialize(text.as_bytes()).collect() };
        let pair = format!("{}:{}", encode(client_id), encode(client_secret.secret()));
        let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
        let mut value = HeaderValue::try_from(format!("Basic {encoded}"))
            .map_err(|_| Error::invalid("client_secret", "expected characters allowed in a header"))?;
        value.set_sensitive(true);
        Ok(ClientAuth::Basic(value))
    }
}

/// POSTs `form` to `url` as `client`, retrying transient failures under `sender`'s policy, and
/// returns the answer's body, read under `limit`.
pub(crate) async fn post_form(
    sender: &HttpSender,
    url: &Url,
    client: &ClientAuth,
    form: &[(&str, &str)],
    limit: BodyLimit,
) -> Result<Vec<u8>, Error> {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/x-www-form-urlencoded"));
    headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
    let mut fields = form.to_vec();
    match client {
        ClientAuth::Public(id) => fields.push(("client_id", id)),
        ClientAuth::InBody(id, secret) => {
            fields.extend([("client_id", &**id), ("client_secret", secret.secret())])
        }
        ClientAuth::Basic(header) => drop(headers.insert(AUTHORIZATION, header.clone())),
    }
    let body = Serializer::new(String::new()).extend_pairs(fields).finish();
    let expect = Expect { body: limit, origin: Origin::AuthorizationServer, route: None };
    let attempt = |number| {
        let mut request = reqwest::Request::new(Method::POST, url.clone());
        *request.headers_mut() = headers.clone();
        *request.body_mut() = Some(body.clone().into());
        sender.exchange(request, number, expect, no_head)
    };
    sender.retry_policy().run(&Pacer::off(), true, None, attempt).await
}

/// `body`, an answer of `url`, as JSON into `T`, its `numbers` (names and largest values) held
/// to their ranges first: one a server sends out of range does not cost the whole answer.
pub(crate) fn read_answer<T: DeserializeOwned>(
    url: &Url,
    body: Vec<u8>,
    numbers: &[(&str, u64)],
) -> Result<T, Error> {
    serde_json::from_slice(&bound_json_fields(body, numbers)).map_err(|e| {
        // The parser quotes a value of the wrong type, which may be a token: then only where.
        let quoted = format!("a value of the wrong type at line {} column {}", e.line(), e.column());
        let reason = Some(e.to_string()).filter(|reason| !reason.contains('"')).unwrap_or(quoted);
        Error::decode(Endpoint::of(url, Origin::AuthorizationServer), reason)
    })
}

/// `expires_in`: whole seconds, at most a year.
const TOKEN_NUMBERS: &[(&str, u64)] = &[("expires_in", MAX_TOKEN_LIFETIME.as_secs())];
/// Epoch times: whole seconds, at most the year 9999.
pub(crate) const INTROSPECTION_NUMBERS: &[(&str, u64)] =
    &[("exp", MAX_EPOCH_SECONDS), ("iat", MAX_EPOCH_SECONDS), ("nbf", MAX_EPOCH_SECONDS)];

/// The token response fields `oauth2`'s basic response drops: the OpenID Connect ID token.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub(crate) struct OidcFields {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id_token: Option<IdToken>,
}

impl ExtraTokenFields for OidcFields {}

type OidcTokenResponse = StandardTokenResponse<OidcFields, BasicTokenType>;

/// The answer of a token request: the new set (a new ID token not verified yet), `expires_in`
/// (clamped), and a new ID token to verify with the set it replaces.
pub(crate) struct Refreshed {
    pub(crate) tokens: TokenSet,
    pub(crate) expires_in: Option<Duration>,
    pub(crate) new_id_token: Option<(IdToken, TokenSet)>,
}

/// Sends the token request `form` to `url` as `client` and reads the set its answer holds
/// (`requested` as the scopes when it names none); an access token that cannot be sent in a
/// header makes the answer unusable. No new ID token is set aside for verification.
pub(crate) async fn request_tokens(
    sender: &HttpSender,
    url: &Url,
    client: &ClientAuth,
    form: &[(&str, &str)],
    requested: &[String],
) -> Result<Refreshed, Error> {
    let sent_at = Utc::now();
    let body = post_form(sender, url, client, form, BodyLimit::TOKEN).await?;
    let response: OidcTokenResponse = read_answer(url, body, TOKEN_NUMBERS)?;
    let mut tokens = TokenSet::new(response.access_token().secret().clone());
    if !tokens.access_token.fits_header() {
        return Err(AccessToken::unsendable(url.path()));
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
