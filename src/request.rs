//! The builder of a request to any endpoint ([`Request`]).

use std::borrow::Cow;
use std::fmt;

use http::Method;
use http::header::{AUTHORIZATION, CONTENT_TYPE, HeaderName, HeaderValue};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::pipeline::{Call, IDEMPOTENCY_KEY, Pipeline};
use crate::urls::ApiPath;
use crate::{Error, RetryPolicy};

/// A request to any endpoint of the API: made by [`Client::get`](crate::Client::get) or
/// [`Client::request`](crate::Client::request), sent through the same pipeline as the
/// listings (bearer token and the 401 refresh-and-resend, pacing, retries, preview header,
/// deprecation and sunset, body limits, spans).
///
/// Setters never fail: the first invalid argument is reported by
/// [`send`](Request::send) or [`send_empty`](Request::send_empty), before anything is sent.
///
/// ```no_run
/// # async fn run(client: business_records::Client) -> Result<(), business_records::Error> {
/// use business_records::Method;
/// use serde_json::{Value, json};
/// let raw: Value = client.get("companies/cmp_1").query("expand", "owner").send().await?;
/// let created: Value = client
///     .request(Method::POST, "notes")
///     .json(&json!({"companyId": "cmp_1", "text": "called"}))
///     .idempotency_key("note-7f3a")
///     .send()
///     .await?;
/// client.request(Method::DELETE, ["notes", "n_1"]).send_empty().await?;
/// # let _ = (raw, created); Ok(()) }
/// ```
#[must_use = "a request does nothing until `send` or `send_empty`"]
pub struct Request {
    pipeline: Pipeline,
    call: Result<Call, Error>,
}

impl fmt::Debug for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let call = self.call.as_ref().map(|call| (&call.method, &call.route));
        f.debug_struct("Request").field("call", &call).finish_non_exhaustive()
    }
}

impl Request {
    pub(crate) fn new(pipeline: Pipeline, method: Method, path: ApiPath) -> Request {
        let call = Call::new(method, &pipeline.settings.api_root, &path);
        Request { pipeline, call }
    }

    /// Applies `change` unless an earlier setter failed; its error replaces the call.
    fn with(mut self, change: impl FnOnce(&mut Call) -> Result<(), Error>) -> Self {
        self.call = self.call.and_then(|mut call| change(&mut call).map(|()| call));
        self
    }

    /// Adds the query parameter `name=value` (encoded); a name may repeat.
    pub fn query(self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let (name, value) = (name.into(), value.into());
        self.with(|call| {
            if name.is_empty() {
                return Err(Error::invalid("query", "expected a parameter name, got an empty one"));
            }
            call.query.push((Cow::Owned(name), value));
            Ok(())
        })
    }

    /// Sends `body` as JSON (`Content-Type: application/json`).
    pub fn json<B: Serialize + ?Sized>(self, body: &B) -> Self {
        let json = serde_json::to_vec(body);
        self.with(|call| {
            let json =
                json.map_err(|e| Error::invalid("json", format!("the body does not serialize: {e}")))?;
            call.headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            call.body = Some(json);
            Ok(())
        })
    }

    /// Sends the header `name: value`. `Authorization` is the client's own and is refused.
    pub fn header(self, name: impl AsRef<str>, value: impl AsRef<str>) -> Self {
        let (name, value) = (name.as_ref(), value.as_ref());
        let parsed = HeaderName::try_from(name).ok().zip(HeaderValue::from_str(value).ok());
        self.with(|call| match parsed {
            Some((name, _)) if name == AUTHORIZATION => {
                Err(Error::invalid("header", "`Authorization` is set by the client from its `auth`"))
            }
            Some((name, value)) => {
                call.headers.append(name, value);
                Ok(())
            }
            None => Err(Error::invalid("header", "expected a valid header name and a visible ASCII value")),
        })
    }

    /// Sends `Idempotency-Key: key`, the same on every attempt, so that a POST or PATCH is
    /// retried like any other request (without one they are never sent again once they may
    /// have reached the server).
    pub fn idempotency_key(self, key: impl AsRef<str>) -> Self {
        let value = HeaderValue::from_str(key.as_ref()).ok().filter(|_| !key.as_ref().trim().is_empty());
        self.with(|call| {
            let value = value.ok_or_else(|| {
                Error::invalid("idempotency_key", "expected a non-empty key of visible ASCII characters")
            })?;
            call.headers.insert(IDEMPOTENCY_KEY, value);
            Ok(())
        })
    }

    /// Asks for preview features with `X-API-Preview` on this request, overriding the
    /// client's label. The label is `YYYY-MM`.
    pub fn preview(self, label: impl AsRef<str>) -> Self {
        self.with(|call| call.preview(label))
    }

    /// The retry policy of this request, instead of the client's.
    pub fn retry(self, policy: RetryPolicy) -> Self {
        self.with(|call| {
            call.retry = Some(policy);
            Ok(())
        })
    }

    /// Sends the request and decodes the answer's JSON body into `T`.
    ///
    /// # Errors
    ///
    /// As for listings: [`Error::InvalidArgument`] before anything is sent, [`Error::Api`]
    /// for an error answer (a 410 is [`Error::Sunset`]), [`Error::Decode`] for a body that is
    /// not a `T`, and the transport's errors.
    pub async fn send<T: DeserializeOwned>(self) -> Result<T, Error> {
        let call = self.call?;
        let reply = self.pipeline.send(&call, None).await?;
        crate::wire::decode(call.url.path(), &reply.body)
    }

    /// Sends the request and reads nothing of a successful answer (a 204, or any 2xx).
    ///
    /// # Errors
    ///
    /// As [`send`](Request::send), without [`Error::Decode`].
    pub async fn send_empty(self) -> Result<(), Error> {
        let call = self.call?;
        self.pipeline.send(&call, None).await.map(drop)
    }
}
