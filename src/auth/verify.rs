//! Access-token verification for resource servers (API Part 5.7).
//!
//! A backend that receives `Authorization: Bearer <token>` from callers of the
//! business-records API validates the token locally with a [`TokenVerifier`]:
//! the signing key is selected by the token's `kid` header from the
//! authorization server's JWKS, the RS256 signature is checked, `exp` must be
//! in the future, `iss` must equal the configured issuer and `aud` must
//! include the configured audience.
//!
//! ```no_run
//! # async fn run(token: &str) -> Result<(), business_records::Error> {
//! use business_records::auth::TokenVerifier;
//!
//! let verifier = TokenVerifier::new(
//!     "https://auth.example.com/.well-known/jwks.json",
//!     "https://auth.example.com",
//!     "business-records-api",
//! )?;
//! let claims = verifier.verify(token).await?;
//! if !claims.has_scope("api/read") {
//!     // answer 401 insufficient_scope
//! }
//! # Ok(()) }
//! ```

mod claims;
mod key_cache;

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::Utc;
use jsonwebtoken::crypto::{CryptoProvider, aws_lc};
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::{Map, Value};
use url::Url;

pub use self::claims::Claims;
use self::key_cache::{FetchPolicy, Jwks, KeyCache};
use super::non_empty;
use crate::error::{Error, VerifyError};
use crate::limits::BodyLimit;
use crate::text::quoted;
use crate::urls;
use crate::wire::HttpSender;

/// When keys are fetched again unless set otherwise: after an hour, for unknown key ids at most
/// every 5 seconds, and after a failure with a backoff from 1 second up to a minute.
const DEFAULT_FETCH: FetchPolicy = FetchPolicy {
    max_age: Duration::from_secs(3600),
    refetch_interval: Duration::from_secs(5),
    backoff: (Duration::from_secs(1), Duration::from_secs(60)),
};
/// The longest clock-skew allowance: a longer one would take the time it allows past the
/// epoch (and `jsonwebtoken`'s arithmetic with it).
const MAX_LEEWAY: Duration = Duration::from_secs(24 * 60 * 60);
/// Longest token accepted; anything larger is rejected before any parsing.
const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// Validates access tokens against the authorization server's signing keys.
///
/// Cheap to clone: clones share the key cache. `Send + Sync`.
///
/// Keys are cached for at most the [`max_age`](Self::max_age) (1 hour by default): older keys
/// are fetched again, so a key the authorization server withdraws stops being trusted. A token
/// whose `kid` the cached keys lack makes [`verify`](Self::verify) fetch the JWKS again at once,
/// so a rotated key is picked up by the first token signed with it; such refetches happen at
/// most once per [`refetch_interval`](Self::refetch_interval) (5 seconds by default), so tokens
/// with made-up key ids cannot flood the authorization server. One fetch runs at a time, and
/// callers that need keys meanwhile wait for it: a burst of tokens costs one fetch. A failed
/// fetch is tried again after an exponential backoff ([`fetch_backoff`](Self::fetch_backoff));
/// meanwhile, tokens whose key is cached keep verifying with it, and the others fail at once
/// with [`VerifyError::Jwks`].
///
/// A token without `kid` is verified with the key set's only signing key, and refused with
/// [`VerifyError::MissingKeyId`] when the set holds several (OpenID Connect Core section 10.1).
/// Only RSA keys for RS256 signatures are used: keys marked for encryption (`use: enc`), for
/// other operations (`key_ops`) or for another algorithm (`alg`) never verify a signature.
///
/// JWKS requests go through the crate's HTTP layer: one `tracing` span each, the crate's
/// `User-Agent`, a 30 second timeout, and no redirects followed (see [`http`](Self::http)).
#[derive(Clone, Debug)]
pub struct TokenVerifier {
    config: Arc<Config>,
    keys: Arc<KeyCache>,
}

#[derive(Clone, Debug)]
struct Config {
    /// Where keys come from; `None` for a fixed set.
    source: Option<(Url, HttpSender)>,
    /// The signature algorithm, `iss`, `aud`, the claims required and the leeway.
    validation: Validation,
    fetch: FetchPolicy,
}

impl TokenVerifier {
    /// A verifier that fetches keys from `jwks_url` when it first needs them.
    ///
    /// `issuer` must equal the tokens' `iss` claim; `audience` must be one
    /// of the tokens' `aud` values. The JWKS URL must use `https`, except
    /// for loopback hosts (`127.0.0.1`, `::1`, `localhost`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] naming `jwks_url` for an unparsable or non-HTTPS URL, or
    /// naming `issuer` or `audience` when it is empty.
    ///
    /// ```
    /// # fn main() -> Result<(), business_records::Error> {
    /// use business_records::auth::TokenVerifier;
    /// use std::time::Duration;
    ///
    /// let verifier = TokenVerifier::new(
    ///     "https://auth.example.com/.well-known/jwks.json",
    ///     "https://auth.example.com",
    ///     "business-records-api",
    /// )?
    /// .leeway(Duration::from_secs(5));
    /// # let _ = verifier; Ok(()) }
    /// ```
    pub fn new(
        jwks_url: impl AsRef<str>,
        issuer: impl Into<String>,
        audience: impl Into<String>,
    ) -> Result<Self, Error> {
        let url = urls::parse_service_url("jwks_url", jwks_url.as_ref())?;
        let source = Some((url, HttpSender::shared_default()?));
        Self::with_source(source, Jwks::default(), issuer.into(), audience.into())
    }

    /// A verifier with a fixed key set that never fetches.
    ///
    /// `jwks_json` is a JWKS document (`{"keys":[...]}`); its RSA signing keys for RS256 are
    /// used, other keys are ignored.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] naming `jwks_json` if the document is not a JWKS, or
    /// naming `issuer` or `audience` when it is empty.
    pub fn from_jwks(
        jwks_json: &str,
        issuer: impl Into<String>,
        audience: impl Into<String>,
    ) -> Result<Self, Error> {
        let keys = Jwks::parse(jwks_json.as_bytes())
            .map_err(|e| Error::invalid("jwks_json", format!("expected a JWKS document ({e})")))?;
        Self::with_source(None, keys, issuer.into(), audience.into())
    }

    fn with_source(
        source: Option<(Url, HttpSender)>,
        keys: Jwks,
        issuer: String,
        audience: String,
    ) -> Result<Self, Error> {
        non_empty("issuer", "issuer", &issuer)?;
        non_empty("audience", "audience", &audience)?;
        // Feature unification in a larger dependency tree may enable more than one
        // `jsonwebtoken` backend, and then `jsonwebtoken` cannot pick one by itself and panics at
        // the first signature operation: the crate's is installed for the process, unless one
        // already is (`install_default` sets it once; later calls change nothing).
        let _ = CryptoProvider::install_default(&aws_lc::DEFAULT_PROVIDER);
        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.set_issuer(&[issuer]);
        validation.set_audience(&[audience]);
        validation.leeway = 0;
        validation.validate_nbf = true;
        let config = Arc::new(Config { source, validation, fetch: DEFAULT_FETCH });
        Ok(Self { config, keys: Arc::new(KeyCache::new(keys)) })
    }

    /// Sends the JWKS requests through `http` (proxies, root certificates, a pool of your
    /// own), with the crate's timeout and `User-Agent`. The keys carry no secret, so a client that
    /// follows redirects may serve. Default: the crate's shared HTTP client, which follows no
    /// redirect. Has no effect on a verifier made with [`from_jwks`](Self::from_jwks).
    ///
    /// ```
    /// # fn main() -> Result<(), business_records::Error> {
    /// use business_records::auth::TokenVerifier;
    /// let http = reqwest::Client::builder().pool_max_idle_per_host(2).build().expect("a client");
    /// let verifier = TokenVerifier::new(
    ///     "https://auth.example.com/.well-known/jwks.json",
    ///     "https://auth.example.com",
    ///     "business-records-api",
    /// )?
    /// .http(http);
    /// # let _ = verifier; Ok(()) }
    /// ```
    #[must_use]
    pub fn http(self, http: reqwest::Client) -> Self {
        self.with_sender(HttpSender::with_client(http))
    }

    /// Sends JWKS requests through `sender` (a flow's own, for ID tokens).
    pub(crate) fn with_sender(mut self, sender: HttpSender) -> Self {
        if let Some((_, own)) = &mut Arc::make_mut(&mut self.config).source {
            *own = sender;
        }
        self
    }

    /// The same verifier for tokens of `issuer` (a flow's ID tokens), its keys shared.
    pub(crate) fn with_issuer(mut self, issuer: &str) -> Self {
        Arc::make_mut(&mut self.config).validation.set_issuer(&[issuer]);
        self
    }

    /// Clock-skew allowance for `exp`, `nbf` and `iat`, at most a day (a longer one counts as a
    /// day). Default: zero, so `exp` must be in the future. (ID tokens of an [`AuthorizationCodeFlow`](super::AuthorizationCodeFlow) are
    /// checked with 60 seconds, see
    /// [`id_token_leeway`](super::AuthorizationCodeFlow::id_token_leeway).)
    #[must_use]
    pub fn leeway(mut self, leeway: Duration) -> Self {
        Arc::make_mut(&mut self.config).validation.leeway = leeway.min(MAX_LEEWAY).as_secs();
        self
    }

    /// Minimum pause between two JWKS fetches made because a token named a key id the cached
    /// keys lack. The first such fetch after a rotation happens at once; the interval bounds
    /// how often tokens with made-up key ids can make the verifier fetch. Default: 5 seconds.
    ///
    /// ```
    /// # fn main() -> Result<(), business_records::Error> {
    /// use std::time::Duration;
    /// use business_records::auth::TokenVerifier;
    ///
    /// let verifier = TokenVerifier::new(
    ///     "https://auth.example.com/.well-known/jwks.json",
    ///     "https://auth.example.com",
    ///     "business-records-api",
    /// )?
    /// .refetch_interval(Duration::from_secs(30));
    /// # let _ = verifier; Ok(()) }
    /// ```
    #[must_use]
    pub fn refetch_interval(mut self, interval: Duration) -> Self {
        Arc::make_mut(&mut self.config).fetch.refetch_interval = interval;
        self
    }

    /// How long fetched keys are trusted before the JWKS is fetched again; a key the new
    /// document no longer publishes is then refused. Default: 1 hour.
    ///
    /// ```
    /// # fn main() -> Result<(), business_records::Error> {
    /// use std::time::Duration;
    /// use business_records::auth::TokenVerifier;
    ///
    /// let verifier = TokenVerifier::new(
    ///     "https://auth.example.com/.well-known/jwks.json",
    ///     "https://auth.example.com",
    ///     "business-records-api",
    /// )?
    /// .max_age(Duration::from_secs(15 * 60))
    /// .fetch_backoff(Duration::from_millis(500), Duration::from_secs(30));
    /// # let _ = verifier; Ok(()) }
    /// ```
    #[must_use]
    pub fn max_age(mut self, max_age: Duration) -> Self {
        Arc::make_mut(&mut self.config).fetch.max_age = max_age;
        self
    }

    /// The backoff after a failed JWKS fetch: the next fetch waits up to `initial`, the ceiling
    /// doubling after each further failure up to `max`, each wait drawn between zero and the
    /// ceiling (full jitter, the crate's one backoff). Default: 1 second, up to 60 seconds.
    #[must_use]
    pub fn fetch_backoff(mut self, initial: Duration, max: Duration) -> Self {
        Arc::make_mut(&mut self.config).fetch.backoff = (initial, max.max(initial));
        self
    }

    /// Validates `token`, fetching the JWKS first if its `kid` is not cached or the cached
    /// keys are older than the [`max_age`](Self::max_age) (subject to the refetch interval and
    /// the backoff after a failed fetch). A token without `kid` is verified with the key set's
    /// only signing key.
    ///
    /// # Errors
    ///
    /// The [`VerifyError`] describing the first check that failed.
    pub async fn verify(&self, token: &str) -> Result<Claims, VerifyError> {
        let kid = parse_header(token)?;
        let key = match &self.config.source {
            Some((url, sender)) => {
                let fetch = || async {
                    let body = sender.get_document(url.clone(), BodyLimit::JWKS).await?;
                    Jwks::parse(&body).map_err(|e| Error::decode(url.path(), e))
                };
                self.keys.key(kid.as_deref(), &self.config.fetch, fetch).await?
            }
            None => self.keys.cached(kid.as_deref())?,
        };
        self.verify_with_key(token, &key)
    }

    /// Validates `token` with the cached keys only; never performs I/O.
    ///
    /// # Errors
    ///
    /// The [`VerifyError`] describing the first check that failed;
    /// [`VerifyError::UnknownKey`] if the `kid` is not cached.
    pub fn verify_cached(&self, token: &str) -> Result<Claims, VerifyError> {
        let kid = parse_header(token)?;
        self.verify_with_key(token, &*self.keys.cached(kid.as_deref())?)
    }

    fn verify_with_key(&self, token: &str, key: &DecodingKey) -> Result<Claims, VerifyError> {
        let validation = &self.config.validation;
        // Decoded as a map first: `jsonwebtoken` names a missing claim only once it has the claims.
        let claims =
            jsonwebtoken::decode::<Map<String, Value>>(token, key, validation).map_err(map_jwt_error)?;
        let claims: Claims =
            serde_json::from_value(Value::Object(claims.claims)).map_err(|_| VerifyError::Malformed)?;
        let now = Utc::now().timestamp();
        let leeway = i64::try_from(validation.leeway).unwrap_or(i64::MAX);
        // `exp` must be strictly in the future (jsonwebtoken accepts `exp == now`).
        if claims.exp.saturating_add(leeway) <= now {
            return Err(VerifyError::Expired);
        }
        // A token is not issued in the future (jsonwebtoken does not look at `iat`).
        if claims.iat.is_some_and(|iat| iat > now.saturating_add(leeway)) {
            return Err(VerifyError::NotYetValid);
        }
        Ok(claims)
    }
}

fn map_jwt_error(err: jsonwebtoken::errors::Error) -> VerifyError {
    match err.into_kind() {
        ErrorKind::InvalidSignature => VerifyError::InvalidSignature,
        ErrorKind::ExpiredSignature => VerifyError::Expired,
        ErrorKind::ImmatureSignature => VerifyError::NotYetValid,
        ErrorKind::InvalidIssuer => VerifyError::InvalidIssuer,
        ErrorKind::InvalidAudience => VerifyError::InvalidAudience,
        ErrorKind::MissingRequiredClaim(claim) => VerifyError::MissingClaim { claim },
        ErrorKind::InvalidAlgorithm | ErrorKind::UnsupportedAlgorithm => {
            VerifyError::UnsupportedAlgorithm { alg: "unknown".into() }
        }
        _ => VerifyError::Malformed,
    }
}

/// Checks the token's shape and header, before any key is chosen: a compact JWS no larger than
/// [`MAX_TOKEN_BYTES`] signed with RS256, without critical header extensions (none are
/// understood, RFC 7515 section 4.1.11). Returns its `kid`, `None` when it has none (then the
/// key set's only signing key applies, OpenID Connect Core section 10.1).
fn parse_header(token: &str) -> Result<Option<String>, VerifyError> {
    #[derive(Deserialize)]
    struct Header {
        alg: String,
        kid: Option<String>,
        crit: Option<Value>,
    }
    if token.len() > MAX_TOKEN_BYTES {
        return Err(VerifyError::Malformed);
    }
    let segments: Vec<&str> = token.splitn(4, '.').collect();
    let [header, payload, signature] = segments[..] else { return Err(VerifyError::Malformed) };
    let json = URL_SAFE_NO_PAD.decode(header).map_err(|_| VerifyError::Malformed)?;
    let header: Header = serde_json::from_slice(&json).map_err(|_| VerifyError::Malformed)?;
    if header.alg != "RS256" {
        return Err(VerifyError::UnsupportedAlgorithm { alg: quoted(&header.alg) });
    }
    // An empty signature is `alg: none`'s, which a token claiming RS256 cannot have.
    if header.crit.is_some() || payload.is_empty() || signature.is_empty() {
        return Err(VerifyError::Malformed);
    }
    Ok(header.kid.filter(|kid| !kid.is_empty()))
}

#[cfg(test)]
mod tests;
