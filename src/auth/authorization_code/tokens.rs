//! What the token endpoint answers a flow: the OpenID Connect fields `oauth2` drops, and the
//! token set made from a response.

use std::time::Duration;

use chrono::{DateTime, Utc};
use oauth2::basic::BasicTokenType;
use oauth2::{ExtraTokenFields, StandardTokenResponse, TokenResponse};
use serde::{Deserialize, Serialize};

use super::super::{AccessToken, IdToken, RefreshToken, TokenSet};
use crate::Error;
use crate::bounds::clamp_lifetime;

/// The token response fields `oauth2`'s basic response drops: the OpenID Connect ID token.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub(crate) struct OidcFields {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id_token: Option<IdToken>,
}

impl ExtraTokenFields for OidcFields {}

pub(super) type OidcTokenResponse = StandardTokenResponse<OidcFields, BasicTokenType>;
/// The answer of a refresh: the new set (its new ID token not verified yet), `expires_in`
/// (clamped), and the ID token to verify with the set it replaces.
pub(crate) struct Refreshed {
    pub(crate) tokens: TokenSet,
    pub(crate) expires_in: Option<Duration>,
    pub(crate) new_id_token: Option<(IdToken, TokenSet)>,
}

/// The set a token response of `endpoint` holds; an access token that cannot be sent in a
/// header makes the response unusable.
pub(super) fn token_set(
    endpoint: &str,
    response: &OidcTokenResponse,
    sent_at: DateTime<Utc>,
    requested: &[String],
) -> Result<TokenSet, Error> {
    let mut tokens = TokenSet::new(response.access_token().secret().clone());
    if !tokens.access_token.fits_header() {
        return Err(AccessToken::unsendable(endpoint));
    }
    tokens.refresh_token = response.refresh_token().map(|t| RefreshToken::new(t.secret().clone()));
    tokens.id_token = response.extra_fields().id_token.clone();
    tokens.expires_at = response
        .expires_in()
        .map(clamp_lifetime)
        .and_then(|lifetime| chrono::Duration::from_std(lifetime).ok())
        .and_then(|lifetime| sent_at.checked_add_signed(lifetime));
    // RFC 6749 section 5.1: no `scope` in the response means the requested ones were granted.
    tokens.scopes = match response.scopes() {
        Some(scopes) => scopes.iter().map(|s| s.to_string()).collect(),
        None => requested.to_vec(),
    };
    Ok(tokens)
}
