//! Access-token verification for resource servers (spec Part 5.7).
//!
//! A backend that receives `Authorization: Bearer <token>` from callers of the
//! business-records API validates the token locally with a [`TokenVerifier`]:
//! the signing key is selected by the token's `kid` header from the
//! authorization server's JWKS, the RS256 signature is checked, `exp` must be
//! in the future, `iss` must equal the configured issuer and `aud` must
//! include the configured audience.
//!
//! ```no_run
//! # async fn run(token: &str) -> Result<(), business_records::auth::VerifyError> {
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

mod jwks;

use std::fmt;
use std::sync::{Arc, Once};
use std::time::Duration;

use chrono::{DateTime, Utc};
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use self::jwks::{FetchPolicy, JwksSource, KeyCache, KeyMap, parse_jwks};
use crate::RetryPolicy;
use crate::wire::HttpSender;

/// Default minimum pause between two JWKS fetches triggered by unknown key ids.
const DEFAULT_REFETCH_INTERVAL: Duration = Duration::from_secs(60);
/// Default age after which the JWKS is fetched again.
const DEFAULT_MAX_AGE: Duration = Duration::from_secs(3600);
/// Default first and largest backoff after a failed JWKS fetch.
const DEFAULT_BACKOFF: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(60));
/// Timeout of JWKS requests.
const JWKS_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest token accepted; anything larger is rejected before any parsing.
const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// Longest key id quoted back in an error.
const MAX_KID_IN_ERROR: usize = 64;

/// Installs the crate's JWT crypto backend once per process.
///
/// Feature unification in a larger dependency tree may enable more than one
/// `jsonwebtoken` backend, in which case `jsonwebtoken` cannot pick one by
/// itself and would panic at the first signature operation. Installing the
/// provider explicitly avoids that; if another provider is already installed,
/// it is kept.
pub(crate) fn ensure_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let _ = jsonwebtoken::crypto::CryptoProvider::install_default(
            &jsonwebtoken::crypto::aws_lc::DEFAULT_PROVIDER,
        );
    });
}

/// Why a token (or the verifier's configuration) was rejected.
///
/// Messages never contain the token itself.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The token is not a well-formed JWS compact serialization, or its
    /// header or claims are not valid JSON of the expected shape.
    #[error("malformed token")]
    Malformed,
    /// The token header carries no `kid`, so no key can be selected.
    #[error("token header has no key id")]
    MissingKeyId,
    /// No key with the token's `kid` is published in the JWKS.
    #[error("no signing key with id `{kid}`")]
    UnknownKey {
        /// The key id from the token header (shortened if very long).
        kid: String,
    },
    /// The token is signed with an algorithm other than RS256.
    #[error("unsupported signing algorithm `{alg}`")]
    UnsupportedAlgorithm {
        /// The `alg` value from the token header (shortened if very long).
        alg: String,
    },
    /// The signature does not match the selected key.
    #[error("invalid token signature")]
    InvalidSignature,
    /// The token's `exp` is not in the future (allowing for the leeway).
    #[error("token has expired")]
    Expired,
    /// The token's `nbf` or `iat` is in the future (allowing for the leeway).
    #[error("token is not valid yet")]
    NotYetValid,
    /// The token's `iss` is not the configured issuer.
    #[error("token issuer does not match")]
    InvalidIssuer,
    /// The token's `aud` does not include the configured audience.
    #[error("token audience does not match")]
    InvalidAudience,
    /// An ID token's `nonce` is not the one sent with the sign-in (a replayed token).
    #[error("token nonce does not match the sign-in")]
    InvalidNonce,
    /// A required claim (`exp`, `iss` or `aud`) is absent.
    #[error("token has no `{claim}` claim")]
    MissingClaim {
        /// Name of the missing claim.
        claim: String,
    },
    /// The JWKS could not be fetched or parsed.
    #[error("jwks unavailable: {message}")]
    Jwks {
        /// What went wrong; never includes a token.
        message: String,
    },
    /// The verifier was configured with an unusable value.
    #[error("invalid verifier configuration: {message}")]
    InvalidConfig {
        /// What is wrong with the configuration.
        message: String,
    },
}

/// The validated claims of an access token.
///
/// Claims the struct does not name are kept in [`extra`](Self::extra).
#[non_exhaustive]
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Claims {
    /// Issuer: the authorization server.
    pub iss: String,
    /// Subject: the user, or the client id for client-credentials tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub: Option<String>,
    /// Audiences; a single string in the token is read as a one-element list.
    #[serde(deserialize_with = "string_or_seq")]
    pub aud: Vec<String>,
    /// Expiry, seconds since the Unix epoch.
    pub exp: i64,
    /// Issue time, seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<i64>,
    /// Space-separated granted scopes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The OAuth client the token was issued to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Every other claim of the token.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, Value>,
}

impl Claims {
    /// The granted scopes, split on spaces.
    ///
    /// ```
    /// # use business_records::auth::Claims;
    /// # fn check(claims: &Claims) {
    /// for scope in claims.scopes() {
    ///     println!("granted: {scope}");
    /// }
    /// # }
    /// ```
    pub fn scopes(&self) -> impl Iterator<Item = &str> {
        self.scope.as_deref().unwrap_or("").split(' ').filter(|s| !s.is_empty())
    }

    /// Whether `scope` is among the granted scopes (exact match).
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes().any(|s| s == scope)
    }

    /// The expiry (`exp`) as a UTC timestamp.
    pub fn expires_at(&self) -> DateTime<Utc> {
        DateTime::from_timestamp(self.exp, 0).unwrap_or(if self.exp < 0 {
            DateTime::<Utc>::MIN_UTC
        } else {
            DateTime::<Utc>::MAX_UTC
        })
    }
}

fn string_or_seq<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(deserializer)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
    })
}

/// Validates access tokens against the authorization server's signing keys.
///
/// Cheap to clone: clones share the key cache. `Send + Sync`.
///
/// Keys are cached by `kid`, for at most the [`max_age`](Self::max_age) (1 hour by default):
/// older keys are fetched again, so a key the authorization server withdraws stops being
/// trusted. A token whose `kid` is not cached makes [`verify`](Self::verify) fetch the JWKS
/// again, at most once per [`refetch_interval`](Self::refetch_interval), so rotated keys are
/// picked up while a flood of tokens with made-up key ids cannot flood the authorization
/// server. A failed fetch is tried again after an exponential backoff
/// ([`fetch_backoff`](Self::fetch_backoff)); meanwhile, tokens whose key is cached keep
/// verifying with it, and the others fail at once with [`VerifyError::Jwks`].
///
/// JWKS requests go through the crate's HTTP layer: one `tracing` span each, the crate's
/// `User-Agent`, a 10 second timeout, and no redirects followed.
#[derive(Clone)]
pub struct TokenVerifier {
    config: Arc<Config>,
    keys: Arc<KeyCache>,
}

#[derive(Clone)]
struct Config {
    source: Option<JwksSource>,
    issuer: String,
    audience: String,
    leeway: Duration,
    fetch: FetchPolicy,
}

impl fmt::Debug for TokenVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let jwks_url = self.config.source.as_ref().map(|s| s.url.as_str());
        f.debug_struct("TokenVerifier")
            .field("jwks_url", &jwks_url)
            .field("issuer", &self.config.issuer)
            .field("audience", &self.config.audience)
            .field("leeway", &self.config.leeway)
            .field("max_age", &self.config.fetch.max_age)
            .field("refetch_interval", &self.config.fetch.refetch_interval)
            .field("cached_keys", &self.keys.len())
            .finish()
    }
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
    /// [`VerifyError::InvalidConfig`] for an unparsable or non-HTTPS URL, an
    /// empty issuer or audience, or if the HTTP client cannot be built.
    ///
    /// ```
    /// # fn main() -> Result<(), business_records::auth::VerifyError> {
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
    ) -> Result<Self, VerifyError> {
        let url = parse_jwks_url(jwks_url.as_ref())?;
        let sender = HttpSender::standalone(JWKS_TIMEOUT)
            .map_err(|e| VerifyError::InvalidConfig { message: format!("cannot build http client: {e}") })?;
        Self::with_source(Some(JwksSource { url, sender }), KeyMap::new(), issuer, audience)
    }

    /// A verifier with a fixed key set that never fetches.
    ///
    /// `jwks_json` is a JWKS document (`{"keys":[...]}`); RSA signing keys
    /// with a `kid` are used, other keys are ignored.
    ///
    /// # Errors
    ///
    /// [`VerifyError::Jwks`] if the document is not a JWKS,
    /// [`VerifyError::InvalidConfig`] for an empty issuer or audience.
    pub fn from_jwks(
        jwks_json: &str,
        issuer: impl Into<String>,
        audience: impl Into<String>,
    ) -> Result<Self, VerifyError> {
        let keys = parse_jwks(jwks_json.as_bytes())?;
        Self::with_source(None, keys, issuer, audience)
    }

    fn with_source(
        source: Option<JwksSource>,
        keys: KeyMap,
        issuer: impl Into<String>,
        audience: impl Into<String>,
    ) -> Result<Self, VerifyError> {
        let issuer = issuer.into();
        let audience = audience.into();
        if issuer.is_empty() {
            return Err(VerifyError::InvalidConfig { message: "issuer is empty".into() });
        }
        if audience.is_empty() {
            return Err(VerifyError::InvalidConfig { message: "audience is empty".into() });
        }
        ensure_crypto_provider();
        let (initial, max) = DEFAULT_BACKOFF;
        Ok(Self {
            config: Arc::new(Config {
                source,
                issuer,
                audience,
                leeway: Duration::ZERO,
                fetch: FetchPolicy {
                    max_age: DEFAULT_MAX_AGE,
                    refetch_interval: DEFAULT_REFETCH_INTERVAL,
                    backoff: backoff_policy(initial, max),
                },
            }),
            keys: Arc::new(KeyCache::new(keys)),
        })
    }

    /// Settings of the HTTP client of JWKS requests (proxies, root certificates, default
    /// headers): `configure` receives a `reqwest::ClientBuilder` and returns it; redirects are
    /// then turned off, whatever it chose, and a 3xx answer is a failed fetch. Requests still
    /// time out after 10 seconds and carry the crate's `User-Agent`.
    ///
    /// Has no effect on a verifier made with [`from_jwks`](Self::from_jwks).
    ///
    /// ```
    /// # fn main() -> Result<(), business_records::auth::VerifyError> {
    /// use business_records::auth::TokenVerifier;
    /// let verifier = TokenVerifier::new(
    ///     "https://auth.example.com/.well-known/jwks.json",
    ///     "https://auth.example.com",
    ///     "business-records-api",
    /// )?
    /// .http_config(|http| http.pool_max_idle_per_host(2))?;
    /// # let _ = verifier; Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`VerifyError::InvalidConfig`] when reqwest cannot build the client.
    pub fn http_config(
        self,
        configure: impl FnOnce(reqwest::ClientBuilder) -> reqwest::ClientBuilder,
    ) -> Result<Self, VerifyError> {
        let client = crate::wire::http_client(configure)
            .map_err(|e| VerifyError::InvalidConfig { message: e.to_string() })?;
        Ok(self.with_sender(HttpSender::with_client(client, JWKS_TIMEOUT)))
    }

    /// Sends JWKS requests through `sender` (a flow's own, for ID tokens).
    pub(crate) fn with_sender(mut self, sender: HttpSender) -> Self {
        if let Some(source) = &mut Arc::make_mut(&mut self.config).source {
            source.sender = sender;
        }
        self
    }

    /// Clock-skew allowance for `exp`, `nbf` and `iat`. Default: zero, so `exp` must be in the
    /// future. (ID tokens of an [`AuthorizationCodeFlow`](super::AuthorizationCodeFlow) are
    /// checked with 60 seconds, see
    /// [`id_token_leeway`](super::AuthorizationCodeFlow::id_token_leeway).)
    #[must_use]
    pub fn leeway(mut self, leeway: Duration) -> Self {
        Arc::make_mut(&mut self.config).leeway = leeway;
        self
    }

    /// Minimum pause between a successful JWKS fetch and one triggered by an unknown key id.
    /// Default: 60 seconds.
    #[must_use]
    pub fn refetch_interval(mut self, interval: Duration) -> Self {
        Arc::make_mut(&mut self.config).fetch.refetch_interval = interval;
        self
    }

    /// How long fetched keys are trusted before the JWKS is fetched again; a key the new
    /// document no longer publishes is then refused. Default: 1 hour.
    ///
    /// ```
    /// # fn main() -> Result<(), business_records::auth::VerifyError> {
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

    /// The backoff after a failed JWKS fetch: the next fetch waits `initial`, doubling after
    /// each further failure up to `max`, each wait drawn between half and all of that (jitter).
    /// Default: 1 second, up to 60 seconds.
    #[must_use]
    pub fn fetch_backoff(mut self, initial: Duration, max: Duration) -> Self {
        Arc::make_mut(&mut self.config).fetch.backoff = backoff_policy(initial, max.max(initial));
        self
    }

    /// Validates `token`, fetching the JWKS first if its `kid` is not cached or the cached
    /// keys are older than the [`max_age`](Self::max_age) (subject to the refetch interval and
    /// the backoff after a failed fetch).
    ///
    /// # Errors
    ///
    /// The [`VerifyError`] describing the first check that failed.
    pub async fn verify(&self, token: &str) -> Result<Claims, VerifyError> {
        let kid = parse_header(token)?;
        let key = match &self.config.source {
            Some(source) => self.keys.key(&kid, source, &self.config.fetch).await?,
            None => self.keys.cached(&kid).ok_or_else(|| unknown_key(&kid))?,
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
        match self.keys.cached(&kid) {
            Some(key) => self.verify_with_key(token, &key),
            None => Err(unknown_key(&kid)),
        }
    }

    fn verify_with_key(&self, token: &str, key: &DecodingKey) -> Result<Claims, VerifyError> {
        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.set_issuer(&[&self.config.issuer]);
        validation.set_audience(&[&self.config.audience]);
        validation.leeway = self.config.leeway.as_secs();
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.validate_aud = true;

        let data = jsonwebtoken::decode::<serde_json::Map<String, Value>>(token, key, &validation)
            .map_err(map_jwt_error)?;
        let claims: Claims =
            serde_json::from_value(Value::Object(data.claims)).map_err(|_| VerifyError::Malformed)?;
        // `exp` must be strictly in the future (jsonwebtoken accepts `exp == now`).
        let now = Utc::now().timestamp();
        let leeway = i64::try_from(self.config.leeway.as_secs()).unwrap_or(i64::MAX);
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

fn shorten(s: &str) -> String {
    crate::text::server_text(&s.chars().take(MAX_KID_IN_ERROR).collect::<String>())
}

fn unknown_key(kid: &str) -> VerifyError {
    VerifyError::UnknownKey { kid: shorten(kid) }
}

/// Checks the token's shape and header; returns its `kid`.
fn parse_header(token: &str) -> Result<String, VerifyError> {
    #[derive(Deserialize)]
    struct RawHeader {
        alg: Option<String>,
        kid: Option<String>,
        crit: Option<Value>,
    }

    if token.len() > MAX_TOKEN_BYTES {
        return Err(VerifyError::Malformed);
    }
    let mut parts = token.split('.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(VerifyError::Malformed);
    };
    if header.is_empty() || payload.is_empty() || signature.is_empty() {
        return Err(VerifyError::Malformed);
    }
    let bytes = b64url_decode(header).ok_or(VerifyError::Malformed)?;
    let raw: RawHeader = serde_json::from_slice(&bytes).map_err(|_| VerifyError::Malformed)?;
    match raw.alg.as_deref() {
        Some("RS256") => {}
        Some(other) => {
            return Err(VerifyError::UnsupportedAlgorithm { alg: shorten(other) });
        }
        None => return Err(VerifyError::Malformed),
    }
    // No critical header extensions are understood (RFC 7515 section 4.1.11).
    if raw.crit.is_some() {
        return Err(VerifyError::Malformed);
    }
    match raw.kid {
        Some(kid) if !kid.is_empty() => Ok(kid),
        _ => Err(VerifyError::MissingKeyId),
    }
}

/// Decodes unpadded base64url; `None` for any other input.
fn b64url_decode(input: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(input.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits: u32 = 0;
    for &c in input.as_bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // A single dangling character cannot encode a byte.
    if bits >= 6 {
        return None;
    }
    Some(out)
}

fn parse_jwks_url(raw: &str) -> Result<url::Url, VerifyError> {
    let url = url::Url::parse(raw)
        .map_err(|e| VerifyError::InvalidConfig { message: format!("invalid jwks url: {e}") })?;
    match url.scheme() {
        "https" => Ok(url),
        "http" if crate::urls::is_loopback(&url) => Ok(url),
        "http" => Err(VerifyError::InvalidConfig {
            message: "jwks url must use https (http is allowed for loopback hosts only)".into(),
        }),
        other => {
            Err(VerifyError::InvalidConfig { message: format!("unsupported jwks url scheme `{other}`") })
        }
    }
}

/// The backoff schedule of failed JWKS fetches: the verifier never stops trying.
fn backoff_policy(initial: Duration, max: Duration) -> RetryPolicy {
    RetryPolicy::default().initial_delay(initial).max_delay(max).max_attempts(u32::MAX)
}

#[cfg(test)]
mod tests;
