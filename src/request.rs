//! The one description of an API request ([`Call`]), paths below the version root
//! ([`ApiPath`]), and the builder for any endpoint ([`Request`]).

use std::borrow::Cow;
use std::fmt;

use http::Method;
use http::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde::Serialize;
use serde::de::DeserializeOwned;
use url::Url;

use crate::error::DecodeError;
use crate::pipeline::Pipeline;
use crate::version::Preview;
use crate::{Error, RetryPolicy};

/// The request header that asks for preview features (API Part 9.6).
pub(crate) const PREVIEW_HEADER: &str = "x-api-preview";
/// The request header that makes a POST or PATCH safe to send again.
const IDEMPOTENCY_KEY: &str = "idempotency-key";

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
        let segments = path.segments.as_ref().map_err(|why| Error::invalid("path", why.clone()))?;
        let mut url = api_root.clone();
        let mut route = url.path().trim_end_matches('/').to_owned();
        if let Ok(mut out) = url.path_segments_mut() {
            out.pop_if_empty().extend(segments);
        }
        for (index, segment) in segments.iter().enumerate() {
            route.push('/');
            route.push_str(if index % 2 == 0 { segment } else { "{}" });
        }
        Ok(Call { method, url, route, query: Vec::new(), headers: HeaderMap::new(), body: None, retry: None })
    }

    /// Whether sending this call twice does no more than sending it once: every method but
    /// POST and PATCH, and those with an idempotency key.
    pub(crate) fn is_idempotent(&self) -> bool {
        !matches!(self.method, Method::POST | Method::PATCH) || self.headers.contains_key(IDEMPOTENCY_KEY)
    }

    /// Asks for preview features with `X-API-Preview: label`.
    pub(crate) fn preview(&mut self, label: &Preview) {
        self.headers.insert(PREVIEW_HEADER, label.header());
    }
}

/// A path below the API's version root (`https://api.example.com/v1/`): a literal such as
/// `"companies/cmp_1"`, or segments such as `["companies", id]`, each of which is
/// percent-encoded as one segment, so an id `a/b` never makes two.
///
/// A path never leaves the version root: `.` and `..` segments, empty segments, a scheme or
/// an absolute URL, a query or a fragment are refused with [`Error::InvalidArgument`] naming
/// `path`, before anything is sent. Spans name the path with every second segment's value left
/// out (`/v1/companies/{}`), as in the API's `/collection/{id}` paths.
///
/// ```
/// # async fn run(client: business_records::Client, id: &str) -> Result<(), business_records::Error> {
/// use business_records::Company;
/// let one: Company = client.get(["companies", id]).send().await?;
/// let same: Company = client.get(format!("companies/{}", one.id)).send().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ApiPath {
    segments: Result<Vec<String>, String>,
}

impl ApiPath {
    fn from_segments<S: AsRef<str>>(segments: impl IntoIterator<Item = S>) -> ApiPath {
        let segments = segments
            .into_iter()
            .map(|segment| match segment.as_ref() {
                "" => Err("expected no empty segment".to_owned()),
                dots @ ("." | "..") => {
                    Err(format!("expected no `{dots}` segment: a path stays below the version root"))
                }
                segment => Ok(segment.to_owned()),
            })
            .collect();
        ApiPath { segments }
    }
}

/// A literal path, `/` between segments; its other characters are percent-encoded where a
/// path needs it, and a `%` is taken as the start of an encoding.
impl From<&str> for ApiPath {
    fn from(literal: &str) -> Self {
        let refused = if literal.contains(['?', '#', '\\']) {
            Some("expected no query, fragment or backslash")
        } else if literal.starts_with('/')
            || literal.split('/').next().is_some_and(|first| first.contains(':'))
        {
            Some("expected a path below the version root, not an absolute path or URL")
        } else {
            None
        };
        match refused {
            Some(why) => {
                ApiPath { segments: Err(format!("{why}, got {:?}", crate::text::server_text(literal))) }
            }
            None => ApiPath::from_segments(literal.split('/').map(percent_decoded)),
        }
    }
}

impl From<String> for ApiPath {
    fn from(literal: String) -> Self {
        ApiPath::from(literal.as_str())
    }
}

impl From<&String> for ApiPath {
    fn from(literal: &String) -> Self {
        ApiPath::from(literal.as_str())
    }
}

/// Segments, each encoded as one.
impl<S: AsRef<str>, const N: usize> From<[S; N]> for ApiPath {
    fn from(segments: [S; N]) -> Self {
        ApiPath::from_segments(segments)
    }
}

/// Segments, each encoded as one.
impl<S: AsRef<str>> From<&[S]> for ApiPath {
    fn from(segments: &[S]) -> Self {
        ApiPath::from_segments(segments)
    }
}

/// Segments, each encoded as one.
impl<S: AsRef<str>> From<Vec<S>> for ApiPath {
    fn from(segments: Vec<S>) -> Self {
        ApiPath::from_segments(segments)
    }
}

/// A literal segment with its `%XX` encodings decoded (an encoded `/` stays in the segment).
fn percent_decoded(segment: &str) -> String {
    percent_encoding::percent_decode_str(segment).decode_utf8_lossy().into_owned()
}

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
        let call = Call::new(method, pipeline.api_root(), &path);
        Request { pipeline, call }
    }

    fn with(mut self, change: impl FnOnce(&mut Call) -> Result<(), Error>) -> Self {
        if let Ok(call) = &mut self.call
            && let Err(error) = change(call)
        {
            self.call = Err(error);
        }
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
        let label = Preview::new(label);
        self.with(|call| {
            call.preview(&label?);
            Ok(())
        })
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
        serde_json::from_slice(&reply.body).map_err(|e| Error::Decode(DecodeError::new(call.url.path(), e)))
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
