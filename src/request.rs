//! The builder of a request to any endpoint ([`Request`]).

use std::borrow::Cow;
use std::fmt;

use http::Method;
use http::header::{
    AUTHORIZATION, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, EXPECT, HOST, HeaderName, HeaderValue,
    PROXY_AUTHORIZATION, TE, TRAILER, TRANSFER_ENCODING, UPGRADE,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::pipeline::{Call, IDEMPOTENCY_KEY, PREVIEW_HEADER, Pipeline};
use crate::urls::ApiPath;
use crate::{Error, RetryPolicy};

/// The headers the client sets itself, or that change how a request is framed, and those with
/// methods of their own: refused by [`Request::header`].
const CLIENTS_OWN: [HeaderName; 14] = [
    AUTHORIZATION,
    PROXY_AUTHORIZATION,
    HOST,
    CONTENT_LENGTH,
    TRANSFER_ENCODING,
    CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    TE,
    TRAILER,
    UPGRADE,
    EXPECT,
    HeaderName::from_static(IDEMPOTENCY_KEY),
    HeaderName::from_static(PREVIEW_HEADER),
];

/// The longest idempotency key, in bytes, and what a key is.
const MAX_IDEMPOTENCY_KEY: usize = 255;
const KEY_EXPECTED: &str = "expected 1 to 255 visible ASCII characters, without spaces";

/// A request to any endpoint of the API: made by [`Client::get`](crate::Client::get) or
/// [`Client::request`](crate::Client::request), sent through the same pipeline as the
/// listings (bearer token and the 401 refresh-and-resend, pacing, retries, preview header,
/// deprecation and sunset, body limits, spans).
///
/// Setters never fail: the first invalid argument is reported by
/// [`send`](Request::send) or [`send_empty`](Request::send_empty), before anything is sent.
///
/// One gate decides what a request may carry, and what passes it reaches the server as given:
/// the path's rules are [`ApiPath`](crate::ApiPath)'s (a segment is sent as one segment, or
/// refused); [`header`](Request::header) refuses the headers the client sets itself or that
/// change how the request is framed, and values a server would read otherwise (line breaks,
/// spaces at either end); an idempotency key and a preview label go through their own methods
/// and checks. A POST or PATCH without an idempotency key is sent once, whatever fails.
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
    fn with(self, change: impl FnOnce(&mut Call) -> Result<(), Error>) -> Self {
        Request { call: self.call.and_then(|mut call| change(&mut call).map(|()| call)), ..self }
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
        self.with(|call| {
            let json = serde_json::to_vec(body)
                .map_err(|e| Error::invalid("json", format!("the body does not serialize: {e}")))?;
            call.headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            call.body = Some(json);
            Ok(())
        })
    }

    /// Sends the header `name: value`, after the other headers of this request.
    ///
    /// Refused with [`Error::InvalidArgument`] naming `header`: a name that is not a header
    /// name; a value with characters other than visible ASCII, spaces and tabs (a line break
    /// included), or with spaces at either end; the headers the client sets itself
    /// (`Authorization`, `Proxy-Authorization`, `Host`) or that change how a request is framed
    /// (`Content-Length`, `Transfer-Encoding`, `Connection`, `Keep-Alive`, `Proxy-Connection`,
    /// `TE`, `Trailer`, `Upgrade`, `Expect`), in any case; and `Idempotency-Key` and
    /// `X-API-Preview`, which have their methods and checks
    /// ([`idempotency_key`](Request::idempotency_key), [`preview`](Request::preview)).
    pub fn header(self, name: impl AsRef<str>, value: impl AsRef<str>) -> Self {
        let (name, value) = (name.as_ref(), value.as_ref());
        let visible = value.bytes().all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
            && value.trim_matches([' ', '\t']) == value;
        let parsed =
            HeaderName::try_from(name).ok().zip(HeaderValue::from_str(value).ok().filter(|_| visible));
        self.with(|call| match parsed {
            Some((name, value)) if !CLIENTS_OWN.contains(&name) => {
                call.headers.append(name, value);
                Ok(())
            }
            Some((name, _)) => Err(Error::invalid(
                "header",
                format!("`{name}` is the client's own, frames the request, or has a method of its own"),
            )),
            None => Err(Error::invalid(
                "header",
                "expected a header name and a value of visible ASCII characters, spaces and tabs, without spaces at either end",
            )),
        })
    }

    /// Sends `Idempotency-Key: key`, the same on every attempt, so that a POST or PATCH is
    /// retried like any other request (without one they are never sent again once they may
    /// have reached the server). The key is 1 to 255 visible ASCII characters (no spaces);
    /// another one is refused with [`Error::InvalidArgument`] naming `idempotency_key`.
    pub fn idempotency_key(self, key: impl AsRef<str>) -> Self {
        let key = key.as_ref();
        let valid =
            (1..=MAX_IDEMPOTENCY_KEY).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_graphic());
        let value = HeaderValue::from_str(key).ok().filter(|_| valid);
        self.with(|call| {
            let refused = || Error::invalid("idempotency_key", KEY_EXPECTED);
            call.headers.insert(IDEMPOTENCY_KEY, value.ok_or_else(refused)?);
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
        Request { call: self.call.map(|call| Call { retry: Some(policy), ..call }), ..self }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Auth, Client};

    fn request(method: Method) -> Request {
        let client = Client::builder()
            .base_url("http://127.0.0.1:9")
            .auth(Auth::static_token("t"))
            .build()
            .expect("client");
        client.request(method, "notes")
    }

    /// The argument a request's first refused setter named, or its headers when none was.
    fn outcome(request: Request) -> Result<http::HeaderMap, &'static str> {
        match request.call {
            Ok(call) => Ok(call.headers),
            Err(Error::InvalidArgument(e)) => Err(e.argument()),
            Err(other) => panic!("expected an InvalidArgument, got {other:?}"),
        }
    }

    #[test]
    fn debug_shows_the_method_and_route_and_nothing_sent() {
        let client = Client::builder()
            .base_url("http://127.0.0.1:9")
            .auth(Auth::static_token("s3cret-token"))
            .build()
            .expect("client");
        let shown =
            format!("{:?}", client.request(Method::PATCH, ["notes", "n_1"]).header("X-Trace", "t-77"));
        assert!(shown.contains("PATCH") && shown.contains("\"/v1/notes/{}\""), "{shown}");
        assert!(!shown.contains("s3cret") && !shown.contains("n_1") && !shown.contains("t-77"), "{shown}");
        let refused = format!("{:?}", client.get("notes").idempotency_key(""));
        assert!(refused.contains("Err") && refused.contains("idempotency_key"), "{refused}");
    }

    #[test]
    fn headers_the_client_owns_or_that_frame_the_request_are_refused_in_any_case() {
        for name in [
            "Authorization",
            "authorization",
            "AUTHORIZATION",
            "Proxy-Authorization",
            "Host",
            "content-length",
            "Transfer-Encoding",
            "CONNECTION",
            "Keep-Alive",
            "proxy-connection",
            "TE",
            "Trailer",
            "Upgrade",
            "Expect",
            "Idempotency-Key",
            "x-api-preview",
        ] {
            assert_eq!(outcome(request(Method::GET).header(name, "v")).err(), Some("header"), "{name}");
        }
    }

    #[test]
    fn header_values_a_server_would_read_otherwise_are_refused() {
        for (name, value) in [
            ("X-Trace", "a\r\nInjected: 1"),
            ("X-Trace", "a\nb"),
            ("X-Trace", "a\0b"),
            ("X-Trace", " padded"),
            ("X-Trace", "padded\t"),
            ("X-Trace", "caf\u{e9}"),
            ("bad name", "v"),
            ("", "v"),
        ] {
            assert_eq!(outcome(request(Method::GET).header(name, value)).err(), Some("header"), "{value:?}");
        }
        let sent = request(Method::GET)
            .header("X-Trace", "a b\tc")
            .header("Content-Type", "application/merge-patch+json")
            .header("x-trace", "");
        let headers = outcome(sent).expect("accepted");
        let traces: Vec<&[u8]> = headers.get_all("x-trace").iter().map(HeaderValue::as_bytes).collect();
        assert_eq!(traces, [&b"a b\tc"[..], b""]);
        assert_eq!(headers["content-type"], "application/merge-patch+json");
    }

    #[test]
    fn an_idempotency_key_is_1_to_255_visible_characters() {
        let too_long = "k".repeat(256);
        for key in ["", " ", "two words", " k", "caf\u{e9}", "k\n", too_long.as_str()] {
            let refused = outcome(request(Method::POST).idempotency_key(key)).err();
            assert_eq!(refused, Some("idempotency_key"), "{key:?}");
        }
        let longest = "k".repeat(255);
        for key in ["k", "note-7f3a", "!~{}", longest.as_str()] {
            let headers = outcome(request(Method::POST).idempotency_key(key)).expect(key);
            assert_eq!(headers[IDEMPOTENCY_KEY], key);
        }
    }

    #[test]
    fn post_and_patch_are_retried_only_with_an_idempotency_key() {
        let retried = |request: Request| request.call.expect("a call").is_idempotent();
        for method in [Method::POST, Method::PATCH] {
            assert!(!retried(request(method.clone())), "{method} without a key");
            assert!(retried(request(method.clone()).idempotency_key("k1")), "{method} with a key");
        }
        for method in [Method::GET, Method::PUT, Method::DELETE, Method::HEAD, Method::OPTIONS] {
            assert!(retried(request(method.clone())), "{method}");
        }
    }
}
