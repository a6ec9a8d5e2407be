//! [`Reply`]: an answer of the test's own making, for any endpoint.

use super::super::proxy::{Generated, MARKER_HEADER};
use super::super::reply::Answer;

/// What an oversized page is filled with.
const FILLER_RECORD: &[u8] = br#"{"id":"cmp_filler","name":"Filler"},"#;

/// An answer exactly as a test wants it sent, for [`Fault::Reply`](super::Fault::Reply): any
/// status, any headers (none are added but the framing), any body bytes, UTF-8 or not; or a
/// body generated as it is sent, as large as the test likes, never held in memory.
///
/// A status outside 100 to 999, or a header HTTP cannot carry (a name that is not a token, a
/// value with control characters), is answered 500 `server_error` instead, saying which.
///
/// ```
/// use business_records_reference_server::{Fault, Reply};
///
/// // A 410 with an empty body and no other header.
/// let bare = Fault::Reply(Reply::new(410));
/// // A 429 with a Retry-After no client can honour, and a body that is not UTF-8.
/// let odd = Fault::Reply(
///     Reply::new(429).header("retry-after", "18446744073709551615").body(vec![0xff, 0xfe]),
/// );
/// // 8 MiB of `{"data":[0,0,0,...]` in a valid envelope, made by the proxy as it writes it.
/// let zeros = Fault::Reply(
///     Reply::json(200, r#"{"data":[0"#).repeated(",0", 4 * 1024 * 1024, r#"],"pagination":{"hasMore":false}}"#),
/// );
/// # let _ = (bare, odd, zeros);
/// ```
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reply {
    status: u16,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
    /// The unit repeated after the body, how many times, and the tail after them.
    repeated: Option<(Vec<u8>, u64, Vec<u8>)>,
}

impl Reply {
    /// `status`, no header and no body.
    pub fn new(status: u16) -> Self {
        Reply { status, headers: Vec::new(), body: Vec::new(), repeated: None }
    }

    /// `status` with `Content-Type: application/json` and `body` (sent as it is: it need not
    /// be JSON).
    pub fn json(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Reply::new(status).header("content-type", "application/json").body(body)
    }

    /// Adds a header line, sent exactly as given (several lines of one name are sent as
    /// several lines).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<Vec<u8>>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The body (replacing the one set before).
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// Sends `unit` `times` times after the [`body`](Self::body), then `tail`, in chunks and
    /// without `Content-Length`: the proxy makes the bytes as it writes them (needs the proxy,
    /// like [`Fault::DropConnection`](super::Fault::DropConnection)).
    pub fn repeated(mut self, unit: impl Into<Vec<u8>>, times: u64, tail: impl Into<Vec<u8>>) -> Self {
        self.repeated = Some((unit.into(), times, tail.into()));
        self
    }

    pub(crate) fn is_generated(&self) -> bool {
        self.repeated.is_some()
    }

    /// The answer; a generated body is marked for the proxy.
    pub(crate) fn answer(&self) -> Answer {
        let mut answer = self.headers.iter().fold(Answer::new(self.status), |answer, (name, value)| {
            answer.append_header(name, value.clone())
        });
        match &self.repeated {
            None => {
                answer.body = self.body.clone();
                answer
            }
            Some((unit, times, tail)) => {
                let generated = Generated {
                    head: self.body.clone(),
                    unit: unit.clone(),
                    times: *times,
                    tail: tail.clone(),
                    limit: None,
                };
                answer.header(MARKER_HEADER, generated.marker())
            }
        }
    }

    /// [`Fault::OversizedBody`](super::Fault::OversizedBody): `length` bytes of a page that
    /// never ends.
    pub(crate) fn oversized(length: u64) -> Answer {
        let unit = FILLER_RECORD.to_vec();
        let times = length / unit.len() as u64 + 1;
        let generated =
            Generated { head: b"{\"data\":[".to_vec(), unit, times, tail: Vec::new(), limit: Some(length) };
        Answer::new(200).header("content-type", "application/json").header(MARKER_HEADER, generated.marker())
    }
}
