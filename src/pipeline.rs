//! The API pipeline, on top of the [wire](crate::wire) and the [auth](crate::auth) layer:
//! the client's request budget ([pacing](crate::pacing)), bearer token, `X-API-Preview`, the
//! 401 `invalid_token` refresh-and-resend, deprecation headers, error classification (sunset,
//! deprecated) and decoding.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use http::StatusCode;
use http::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use url::Url;

use crate::auth::AccessToken;
use crate::auth::token_manager::TokenManager;
use crate::deprecation::{DeprecationNotice, DeprecationPolicy, DeprecationReporter, parse_links};
use crate::error::{ApiError, DeprecatedError, ErrorCode, SunsetError};
use crate::limits::{BodyKind, BodyLimit};
use crate::pacing::Pacer;
use crate::retry::is_throttle;
use crate::wire::{Expect, HttpSender, Response, get_request};
use crate::{Error, Preview, RetryPolicy};

/// The request header that asks for preview features (API Part 9.6).
pub(crate) const PREVIEW_HEADER: &str = "x-api-preview";

/// One API call, described before it is sent.
#[derive(Debug, Clone)]
pub(crate) struct ApiRequest<'a> {
    pub(crate) url: &'a Url,
    pub(crate) query: &'a [(std::borrow::Cow<'static, str>, String)],
    pub(crate) preview: Option<&'a Preview>,
    pub(crate) retry: Option<&'a RetryPolicy>,
    /// Counts the retries of this call and its waits for the budget, for its listing.
    pub(crate) stats: Option<&'a CallStats>,
}

/// What the calls of one listing cost beyond their requests.
#[derive(Debug, Default)]
pub(crate) struct CallStats {
    retries: AtomicU64,
    waited_micros: AtomicU64,
}

impl CallStats {
    /// Requests sent again after a transient failure.
    pub(crate) fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }

    /// Time spent waiting for the client's budget (pauses after a 429 included).
    pub(crate) fn waited(&self) -> Duration {
        Duration::from_micros(self.waited_micros.load(Ordering::Relaxed))
    }

    fn count_wait(&self, waited: Duration) {
        let micros = u64::try_from(waited.as_micros()).unwrap_or(u64::MAX);
        self.waited_micros.fetch_add(micros, Ordering::Relaxed);
    }
}

/// A successful API response: its body, and its deprecation headers.
#[derive(Debug)]
pub(crate) struct ApiResponse {
    pub(crate) body: Vec<u8>,
    pub(crate) deprecation: Option<DeprecationNotice>,
}

/// What the pipeline reads from the head of an answer.
#[derive(Default)]
struct Head {
    deprecation: Option<DeprecationNotice>,
    /// An error answer's `rel="successor-version"` link.
    successor: Option<Url>,
}

/// The API pipeline: authentication, headers, error mapping, deprecation reporting.
///
/// Everything but the token source is shared, behind one `Arc`, by every client derived from
/// the one that built it: the connection pool, middleware, retry policy, request budget,
/// preview label and deprecation reporting. Each client has its own [`TokenManager`].
#[derive(Debug)]
pub(crate) struct ApiPipeline {
    shared: Arc<Shared>,
    tokens: TokenManager,
}

/// What the clients derived from one another share.
#[derive(Debug)]
struct Shared {
    sender: HttpSender,
    preview: Option<Preview>,
    deprecation: DeprecationReporter,
    retry: RetryPolicy,
    max_page_bytes: u64,
    pacer: Pacer,
}

impl ApiPipeline {
    pub(crate) fn new(
        sender: HttpSender,
        tokens: TokenManager,
        preview: Option<Preview>,
        deprecation: DeprecationReporter,
        retry: RetryPolicy,
        max_page_bytes: u64,
        pacer: Pacer,
    ) -> Self {
        let shared = Shared { sender, preview, deprecation, retry, max_page_bytes, pacer };
        ApiPipeline { shared: Arc::new(shared), tokens }
    }

    /// The same pipeline with its own tokens: a signed-in user's client derived from the app's.
    pub(crate) fn with_tokens(&self, tokens: TokenManager) -> Self {
        ApiPipeline { shared: Arc::clone(&self.shared), tokens }
    }

    /// Whether `other` shares this pipeline's settings and connection pool.
    #[cfg(test)]
    pub(crate) fn shares_with(&self, other: &ApiPipeline) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// Signs this client's user out through the shared connection pool (see
    /// [`TokenManager::sign_out`]).
    pub(crate) async fn sign_out(&self) -> Result<(), Error> {
        self.tokens.sign_out(&self.shared.sender).await
    }

    /// The signed-in user's current token set, if this client has one.
    pub(crate) async fn token_set(&self) -> Option<crate::auth::TokenSet> {
        self.tokens.current().await
    }

    /// Sends a GET, each attempt after waiting for the client's budget, retrying transient
    /// failures under the request's retry policy (or the client's); the body of the answer.
    pub(crate) async fn get(&self, call: &ApiRequest<'_>) -> Result<ApiResponse, Error> {
        let count_retry = || {
            if let Some(stats) = call.stats {
                stats.retries.fetch_add(1, Ordering::Relaxed);
            }
        };
        let pacer = &self.shared.pacer;
        let gate = |patience, time_left| async move {
            let waited = pacer.admit(patience, time_left).await?;
            if let Some(stats) = call.stats {
                stats.count_wait(waited);
            }
            Ok(waited)
        };
        let policy = call.retry.unwrap_or(&self.shared.retry);
        policy.run_gated(pacer.is_active(), gate, |attempt| self.attempt(call, attempt), count_retry).await
    }

    /// One attempt. A 401 `invalid_token` makes the token manager drop the token, and the
    /// request is sent once more with a new one; `insufficient_scope` never does.
    async fn attempt(&self, call: &ApiRequest<'_>, attempt: u32) -> Result<ApiResponse, Error> {
        let page = BodyLimit { kind: BodyKind::Page, bytes: self.shared.max_page_bytes };
        let policy = call.retry.unwrap_or(&self.shared.retry);
        let expect = Expect { body: page, error: Error::Api };
        let mut resent_for_token = false;
        loop {
            let token = self.tokens.token(&self.shared.sender).await?;
            let request = self.build_get(call, &token)?;
            let sent_at = tokio::time::Instant::now();
            let mut head = Head::default();
            // A resend with a new token counts as an attempt of its own on the request's span.
            let number = attempt + u32::from(resent_for_token);
            let answer = self
                .shared
                .sender
                .exchange(request, number, expect, |status, headers| {
                    self.read_head(call.url, sent_at, status, headers, &mut head)
                })
                .await;
            let error = match answer {
                Ok(response) => return self.accept(response, head.deprecation),
                Err(Error::Api(error)) => error,
                Err(other) => return Err(other),
            };
            if error.status() == 401
                && error.code() == Some(&ErrorCode::InvalidToken)
                && !resent_for_token
                && self.tokens.invalidate(&token)
            {
                tracing::debug!("access token rejected; fetching a new one and resending once");
                resent_for_token = true;
                // The resend is a request of its own: it waits for the client's budget too.
                self.shared.pacer.admit(policy.longest_delay(), None).await?;
                continue;
            }
            let error = classify(error, head.successor);
            if is_throttle(&error) {
                self.shared.pacer.throttled(sent_at, &error, policy.longest_delay());
            }
            return Err(error);
        }
    }

    /// What the head of an answer to a request sent at `sent_at` says, before its body is read:
    /// the budget learns of it, its deprecation headers are reported, and an error answer's
    /// successor link kept. The notice goes with an error answer.
    fn read_head(
        &self,
        url: &Url,
        sent_at: tokio::time::Instant,
        status: StatusCode,
        headers: &HeaderMap,
        head: &mut Head,
    ) -> Option<DeprecationNotice> {
        self.shared.pacer.response(sent_at, status.as_u16(), headers);
        head.deprecation = DeprecationNotice::from_headers(url, headers);
        if let Some(notice) = &head.deprecation {
            self.shared.deprecation.report(notice);
        }
        if !status.is_success() {
            head.successor = successor_link(headers, url);
        }
        head.deprecation.clone()
    }

    /// A successful answer, unless the client fails deprecated ones.
    fn accept(
        &self,
        response: Response,
        deprecation: Option<DeprecationNotice>,
    ) -> Result<ApiResponse, Error> {
        if let Some(notice) =
            deprecation.as_ref().filter(|_| self.shared.deprecation.policy() == DeprecationPolicy::Fail)
        {
            return Err(Error::Deprecated(DeprecatedError::new(notice.clone())));
        }
        Ok(ApiResponse { body: response.body, deprecation })
    }

    fn build_get(&self, call: &ApiRequest<'_>, token: &AccessToken) -> Result<reqwest::Request, Error> {
        let mut url = call.url.clone();
        if !call.query.is_empty() {
            url.query_pairs_mut().extend_pairs(call.query.iter().map(|(k, v)| (k.as_ref(), v.as_str())));
        }
        let mut request = get_request(url);
        let headers = request.headers_mut();
        // Tokens are checked where they come in (`build()`, token responses); one that still
        // cannot be sent came from the authorization server.
        let mut bearer = HeaderValue::from_str(&format!("Bearer {}", token.secret()))
            .map_err(|_| AccessToken::unsendable("the token endpoint"))?;
        bearer.set_sensitive(true);
        headers.insert(AUTHORIZATION, bearer);
        if let Some(preview) = call.preview.or(self.shared.preview.as_ref()) {
            // A validated label is `YYYY-MM`, always a valid header value.
            if let Ok(value) = HeaderValue::from_str(preview.as_str()) {
                headers.insert(PREVIEW_HEADER, value);
            }
        }
        Ok(request)
    }
}

/// Chooses the variant for an API error response to a request for `url`.
///
/// Any 410, and any `version_sunset` code, is [`Error::Sunset`], with the date and the successor
/// link when the headers give them, even without a `Deprecation` or `Sunset` header (and so
/// without a [`DeprecationNotice`]). Another error whose `Sunset` date has passed is a sunset
/// too, except a transient one (429, 5xx): that stays retryable and carries the notice.
fn classify(error: ApiError, successor: Option<Url>) -> Error {
    let sunset_passed =
        error.deprecation().and_then(|n| n.sunset).is_some_and(|date| date <= chrono::Utc::now());
    let gone = error.status() == 410 || error.code() == Some(&ErrorCode::VersionSunset);
    let transient = error.status() == 429 || error.status() >= 500 || error.is_transient();
    if gone || (sunset_passed && !transient) {
        let notice = error.deprecation();
        let sunset = notice.and_then(|n| n.sunset);
        let successor = notice.and_then(|n| n.successor.clone()).or(successor);
        return Error::Sunset(SunsetError::new(sunset, successor, error));
    }
    Error::Api(error)
}

/// The first `rel="successor-version"` link of a response.
fn successor_link(headers: &HeaderMap, url: &Url) -> Option<Url> {
    let lines: Vec<String> = headers
        .get_all(http::header::LINK)
        .iter()
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
        .collect();
    let links = parse_links(lines.iter().map(String::as_str), url);
    links.into_iter().find(|link| link.has_relation("successor-version")).map(|link| link.target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_signals() {
        let url = Url::parse("https://api.example.com/v1/companies").expect("static url");
        let past = "Sun, 06 Nov 1994 08:49:37 GMT";
        let link = "</v2/companies>; rel=\"successor-version\"";
        let response = |status: u16, code: &str, sunset: Option<&'static str>, link: Option<&'static str>| {
            let mut headers = HeaderMap::new();
            if let Some(date) = sunset {
                headers.insert("sunset", HeaderValue::from_static(date));
            }
            if let Some(link) = link {
                headers.insert("link", HeaderValue::from_static(link));
            }
            let notice = DeprecationNotice::from_headers(&url, &headers);
            let code = (!code.is_empty()).then(|| ErrorCode::parse(code));
            let error = ApiError::new(status, code, "/v1/companies").with_deprecation(notice);
            (error, successor_link(&headers, &url))
        };
        let (bare_gone, successor) = response(410, "", None, None);
        assert!(matches!(
            classify(bare_gone, successor),
            Error::Sunset(ref e) if e.sunset().is_none() && e.successor().is_none()
        ));
        let (gone, successor) = response(410, "gone", Some(past), Some(link));
        match classify(gone, successor) {
            Error::Sunset(e) => {
                assert!(e.sunset().is_some());
                assert_eq!(e.successor().map(|u| u.as_str()), Some("https://api.example.com/v2/companies"));
            }
            other => panic!("expected a sunset, got {other:?}"),
        }
        // A link without any deprecation header still names the successor.
        let (linked, successor) = response(410, "", None, Some(link));
        match classify(linked, successor) {
            Error::Sunset(e) => assert!(e.sunset().is_none() && e.successor().is_some()),
            other => panic!("expected a sunset, got {other:?}"),
        }
        for status in [429, 500, 503] {
            let (busy, successor) = response(status, "temporarily_unavailable", Some(past), Some(link));
            let error = classify(busy, successor);
            assert!(matches!(error, Error::Api(_)), "{status}: {error:?}");
            assert!(error.deprecation().is_some_and(|n| n.sunset.is_some()), "{status}");
        }
        let (refused, successor) = response(403, "forbidden", Some(past), Some(link));
        assert!(matches!(classify(refused, successor), Error::Sunset(_)));
    }
}
