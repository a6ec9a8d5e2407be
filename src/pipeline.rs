//! The API pipeline, on top of the [wire](crate::wire) and the [auth](crate::auth) layer: the
//! one place an API request is sent. Each attempt waits for the client's request budget
//! ([pacing](crate::pacing)), carries a bearer token and `X-API-Preview`, and is retried under
//! the call's [`RetryPolicy`]; a 401 `invalid_token` refreshes the token and sends once more;
//! deprecation headers are reported; error answers are classified (sunset, deprecated).

use std::sync::Arc;
use std::time::Duration;

use std::borrow::Cow;

use http::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use http::{Method, StatusCode};
use url::Url;

use crate::auth::AccessToken;
use crate::auth::token_manager::TokenManager;
use crate::deprecation::{DeprecationNotice, DeprecationPolicy, DeprecationReporter, successor_link};
use crate::error::{ApiError, ErrorCode, Origin, SunsetError};
use crate::limits::BodyLimit;
use crate::pacing::Pacer;
use crate::retry::CallStats;
use crate::urls::ApiPath;
use crate::version::{ApiVersion, preview_header};
use crate::wire::{Expect, HttpSender};
use crate::{Error, RetryPolicy};

/// One API request, described before it is sent: every call of the client, a listing's pages
/// included, is one of these.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub(crate) method: Method,
    /// The endpoint's URL, without a query.
    pub(crate) url: Url,
    /// The path with the values of its segments left out (`/v1/companies/{}`), for spans.
    pub(crate) route: String,
    pub(crate) query: Vec<(Cow<'static, str>, String)>,
    /// The caller's own headers (`X-API-Preview` and `Idempotency-Key` among them).
    pub(crate) headers: HeaderMap,
    /// A JSON body.
    pub(crate) body: Option<Vec<u8>>,
    /// The retry policy of this call, when not the client's.
    pub(crate) retry: Option<RetryPolicy>,
}

impl Call {
    /// A call of `method` on `path` below the versioned root `api_root`.
    pub(crate) fn new(method: Method, api_root: &Url, path: &ApiPath) -> Result<Call, Error> {
        let (url, route) = path.locate(api_root)?;
        Ok(Call { method, url, route, query: Vec::new(), headers: HeaderMap::new(), body: None, retry: None })
    }

    /// Whether sending this call twice does no more than sending it once: every method but
    /// POST and PATCH, and those with an idempotency key.
    pub(crate) fn is_idempotent(&self) -> bool {
        !matches!(self.method, Method::POST | Method::PATCH) || self.headers.contains_key(IDEMPOTENCY_KEY)
    }

    /// Asks for preview features with `X-API-Preview: label`, a `YYYY-MM` label.
    pub(crate) fn preview(&mut self, label: impl AsRef<str>) -> Result<(), Error> {
        self.headers.insert(PREVIEW_HEADER, preview_header(label)?);
        Ok(())
    }
}

/// The request header that asks for preview features (API Part 9.6).
pub(crate) const PREVIEW_HEADER: &str = "x-api-preview";
/// The request header that makes a POST or PATCH safe to send again.
pub(crate) const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// A successful answer of the API: its body, and its deprecation headers.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) body: Vec<u8>,
    pub(crate) deprecation: Option<DeprecationNotice>,
}

/// What every client derived from one another shares: the HTTP configuration (connection
/// pool, timeout, middleware, user agent, retry policy), the versioned root, the request
/// budget, the preview label, deprecation reporting and the listings' settings.
#[derive(Debug)]
pub(crate) struct Settings {
    pub(crate) sender: HttpSender,
    pub(crate) api_root: Url,
    pub(crate) api_version: ApiVersion,
    /// The client's `X-API-Preview` label.
    pub(crate) preview: Option<HeaderValue>,
    pub(crate) deprecation: DeprecationReporter,
    pub(crate) max_body_bytes: u64,
    pub(crate) pacer: Pacer,
    /// Request page k+1 of a listing as soon as page k arrives.
    pub(crate) prefetch: bool,
    /// The least time between two page requests of a listing.
    pub(crate) page_delay: Option<Duration>,
}

/// The API pipeline: the shared settings and this client's tokens. Cheap to clone: listings
/// and prefetch tasks hold one each.
#[derive(Debug, Clone)]
pub(crate) struct Pipeline {
    /// Shared by every client derived from one another.
    pub(crate) settings: Arc<Settings>,
    /// This client's own.
    pub(crate) tokens: TokenManager,
}

impl Pipeline {
    /// Sends `call`: each attempt after waiting for the client's budget, transient failures
    /// retried under the call's retry policy (or the client's), counted in `stats`.
    pub(crate) async fn send(&self, call: &Call, stats: Option<&CallStats>) -> Result<Reply, Error> {
        let policy = call.retry.as_ref().unwrap_or(self.settings.sender.retry_policy());
        let attempt = |number| self.attempt(call, policy, number);
        policy.run(&self.settings.pacer, call.is_idempotent(), stats, attempt).await?
    }

    /// One attempt. A 401 `invalid_token` makes the token manager drop the token, and the
    /// request is sent once more with a new one; `insufficient_scope` never does. A failed token
    /// request is the call's outcome (`Ok(Err(..))`): it was retried under the policy already.
    async fn attempt(
        &self,
        call: &Call,
        policy: &RetryPolicy,
        number: u32,
    ) -> Result<Result<Reply, Error>, Error> {
        let body = BodyLimit { bytes: self.settings.max_body_bytes, ..BodyLimit::PAGE };
        let expect = Expect { body, origin: Origin::Api, route: Some(&call.route) };
        let mut resent_for_token = false;
        loop {
            let token = match self.tokens.token().await {
                Ok(token) => token,
                Err(failed) => return Ok(Err(failed)),
            };
            let sent_at = tokio::time::Instant::now();
            let (mut deprecation, mut successor) = (None, None);
            // A resend with a new token counts as an attempt of its own on the request's span.
            let number = number + u32::from(resent_for_token);
            // The head of every answer, read once before its body: the budget learns of it, and
            // its deprecation headers are reported. The notice goes with an error answer; one
            // without a notice keeps the successor its `Link` header names, for a sunset.
            let read_head = |status: StatusCode, headers: &HeaderMap| {
                self.settings.pacer.response(sent_at, status.as_u16(), headers);
                deprecation = DeprecationNotice::from_headers(&call.method, &call.url, headers);
                if let Some(notice) = &deprecation {
                    self.settings.deprecation.report(notice, &call.route);
                } else if !status.is_success() {
                    successor = successor_link(headers, &call.url);
                }
                deprecation.clone()
            };
            let answer =
                self.settings.sender.exchange(self.request(call, &token)?, number, expect, read_head).await;
            let error = match answer {
                // A successful answer, unless the client fails deprecated ones.
                Ok(body) => {
                    return match deprecation {
                        Some(notice) if self.settings.deprecation.policy() == DeprecationPolicy::Fail => {
                            Err(Error::Deprecated(Arc::new(notice)))
                        }
                        deprecation => Ok(Ok(Reply { body, deprecation })),
                    };
                }
                Err(Error::Api(error)) => error,
                Err(other) => return Err(other),
            };
            if error.is_invalid_token() && !resent_for_token && self.tokens.invalidate(&token) {
                tracing::debug!("access token rejected; fetching a new one and resending once");
                resent_for_token = true;
                // The resend is a request of its own: it waits for the client's budget too.
                self.settings.pacer.admit(policy.max_delay, None).await?;
                continue;
            }
            let error = classify(error, successor);
            if error.is_throttle() {
                self.settings.pacer.throttled(sent_at, &error, policy.max_delay);
            }
            return Err(error);
        }
    }

    /// The request of `call` for one attempt, with `token` as its bearer token and the
    /// client's preview label unless the call has its own.
    fn request(&self, call: &Call, token: &AccessToken) -> Result<reqwest::Request, Error> {
        let mut url = call.url.clone();
        if !call.query.is_empty() {
            url.query_pairs_mut().extend_pairs(call.query.iter().map(|(k, v)| (k.as_ref(), v.as_str())));
        }
        let mut request = reqwest::Request::new(call.method.clone(), url);
        let headers = request.headers_mut();
        headers.insert(http::header::ACCEPT, HeaderValue::from_static("application/json"));
        if let Some(preview) = &self.settings.preview {
            headers.insert(PREVIEW_HEADER, preview.clone());
        }
        headers.extend(call.headers.clone());
        // Tokens are checked where they come in (`build()`, token responses); one that still
        // cannot be sent came from the authorization server.
        let mut bearer = HeaderValue::from_str(&format!("Bearer {}", token.secret()))
            .map_err(|_| AccessToken::unsendable("the token endpoint"))?;
        bearer.set_sensitive(true);
        headers.insert(AUTHORIZATION, bearer);
        *request.body_mut() = call.body.clone().map(reqwest::Body::from);
        Ok(request)
    }
}

/// Chooses the variant for an API error response, `successor` the link of its `Link` header
/// when it carries no [`DeprecationNotice`].
///
/// Any 410, and any `version_sunset` code, is [`Error::Sunset`], with the date and the successor
/// link when the headers give them, even without a `Deprecation` or `Sunset` header (and so
/// without a notice). Another error whose `Sunset` date has passed is a sunset too, except a
/// transient one ([`Error::is_retryable`]): that stays retryable and carries the notice.
fn classify(error: ApiError, successor: Option<Url>) -> Error {
    let sunset_passed =
        error.deprecation().and_then(|n| n.sunset).is_some_and(|date| date <= chrono::Utc::now());
    let gone = error.status() == 410 || error.code() == Some(&ErrorCode::VersionSunset);
    if gone || (sunset_passed && !error.is_transient()) {
        let successor = successor.or_else(|| error.deprecation()?.successor.clone());
        return Error::Sunset(Arc::new(SunsetError { successor, response: error }));
    }
    Error::Api(error)
}
