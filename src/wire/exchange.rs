//! The one response path: a request sent, and its answer turned into a response or a typed
//! error.

use http::{HeaderMap, StatusCode};

use super::{HttpSender, api_error, read_body};
use crate::Error;
use crate::deprecation::DeprecationNotice;
use crate::error::Origin;
use crate::limits::BodyLimit;

/// What a caller expects of an answer: the limit of a successful answer's body, and the
/// [`Error`] variant an error answer becomes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Expect<'a> {
    /// The kind and limit of a 2xx answer's body.
    pub(crate) body: BodyLimit,
    /// Which server an error answer comes from.
    pub(crate) origin: Origin,
    /// The request's path with the values of its segments left out, for its span.
    pub(crate) route: Option<&'a str>,
}

/// A successful (2xx) answer, its body read whole under its limit.
#[derive(Debug)]
pub(crate) struct Response {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
}

impl HttpSender {
    /// Sends `request` (attempt number `attempt` on its span) and reads its answer: every
    /// response anything of the crate reads comes through here.
    ///
    /// `head` sees the status and headers of every answer before its body is read (the API
    /// pipeline paces itself and reads deprecation headers there); the notice it returns goes
    /// with an error answer's [`ApiError`](crate::error::ApiError).
    ///
    /// A 2xx answer is a [`Response`], its body read under `expect.body`
    /// ([`Error::ResponseTooLarge`] past it). Any other answer is `expect.error` of an
    /// [`ApiError`](crate::error::ApiError) with the status, the body's `error` and `error_description` (or the `error`
    /// of a `WWW-Authenticate` challenge) and `Retry-After`. An error body past its limit
    /// ([`BodyLimit::ERROR`]) is left unread: the status and headers alone make the error, so a
    /// 429 or 503 with a huge page in front of it is still retried. A 3xx is [`Error::Http`].
    pub(crate) async fn exchange(
        &self,
        request: reqwest::Request,
        attempt: u32,
        expect: Expect<'_>,
        head: impl FnOnce(StatusCode, &HeaderMap) -> Option<DeprecationNotice>,
    ) -> Result<Response, Error> {
        let endpoint = request.url().path().to_owned();
        let mut response = self.dispatch(request, attempt, expect.route).await?;
        let status = response.status();
        let deprecation = head(status, response.headers());
        let headers = std::mem::take(response.headers_mut());
        if status.is_success() {
            let body = read_body(&endpoint, response, expect.body).await?;
            return Ok(Response { status, headers, body });
        }
        let body = match read_body(&endpoint, response, BodyLimit::ERROR).await {
            Err(Error::ResponseTooLarge(_)) => Vec::new(),
            other => other?,
        };
        Err(Error::Api(
            api_error(status.as_u16(), &headers, &body, &endpoint, deprecation).with_origin(expect.origin),
        ))
    }
}

impl HttpSender {
    /// GETs a document of the authorization server (discovery, JWKS) in one attempt: its body,
    /// read under `limit`; an error answer is [`Error::Api`] from the authorization server.
    pub(crate) async fn get_document(&self, url: url::Url, limit: BodyLimit) -> Result<Vec<u8>, Error> {
        let expect = Expect { body: limit, origin: Origin::AuthorizationServer, route: None };
        Ok(self.exchange(super::get_request(url), 1, expect, no_head).await?.body)
    }
}

/// A `head` for callers that read nothing from an answer's head.
pub(crate) fn no_head(_: StatusCode, _: &HeaderMap) -> Option<DeprecationNotice> {
    None
}
