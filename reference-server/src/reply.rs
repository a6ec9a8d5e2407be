//! The answers both servers send: [`Answer`], any answer on its way out, and [`ErrorReply`], the
//! JSON error.

use std::time::Duration;

use wiremock::ResponseTemplate;
use wiremock::http::{HeaderName, HeaderValue};

/// An answer on its way out: what wiremock sends, and what the journal and the fault counts
/// learn from it (its status, whether a fault shaped it, the user it answered for).
#[derive(Debug, Clone)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    /// Names in lowercase, in the order added; a name may repeat.
    headers: Vec<(String, Vec<u8>)>,
    pub(crate) body: Vec<u8>,
    delay: Option<Duration>,
    /// Whether the endpoint carried out the fault it was given (an empty page, an expired
    /// cursor).
    pub(crate) fault_applied: bool,
    /// The signed-in user the answer is for, when the request alone does not say.
    pub(crate) user: Option<String>,
}

impl Answer {
    pub(crate) fn new(status: u16) -> Self {
        Answer {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            delay: None,
            fault_applied: false,
            user: None,
        }
    }

    /// Sets a header, replacing any of the same name.
    pub(crate) fn header(mut self, name: &str, value: impl Into<Vec<u8>>) -> Self {
        let name = name.to_ascii_lowercase();
        self.headers.retain(|(n, _)| *n != name);
        self.headers.push((name, value.into()));
        self
    }

    /// Adds a header line, keeping those of the same name.
    pub(crate) fn append_header(mut self, name: &str, value: impl Into<Vec<u8>>) -> Self {
        self.headers.push((name.to_ascii_lowercase(), value.into()));
        self
    }

    /// The first value of header `name` (lowercase), if it is text.
    pub(crate) fn header_value(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).and_then(|(_, v)| std::str::from_utf8(v).ok())
    }

    /// The body, with its `content-type`.
    pub(crate) fn body(self, body: impl Into<Vec<u8>>, content_type: &str) -> Self {
        Answer { body: body.into(), ..self.header("content-type", content_type) }
    }

    pub(crate) fn json(self, value: &serde_json::Value) -> Self {
        self.body(value.to_string(), "application/json")
    }

    /// Sent after `delay`.
    pub(crate) fn delay(self, delay: Duration) -> Self {
        Answer { delay: Some(delay), ..self }
    }

    /// Marks the answer as shaped by the fault the endpoint was given.
    pub(crate) fn fault_applied(self) -> Self {
        Answer { fault_applied: true, ..self }
    }

    pub(crate) fn for_user(self, user: &str) -> Self {
        Answer { user: Some(user.to_owned()), ..self }
    }

    /// The first header that cannot be sent (a name that is not a token, a value with control
    /// characters), or a status outside 100 to 999.
    fn unsendable(&self) -> Option<String> {
        if !(100..=999).contains(&self.status) {
            return Some(format!("status {} is not a three-digit HTTP status", self.status));
        }
        self.headers.iter().find_map(|(name, value)| {
            if HeaderName::from_bytes(name.as_bytes()).is_err() {
                Some(format!("header name {name:?} is not an HTTP token"))
            } else if HeaderValue::from_bytes(value).is_err() {
                Some(format!("the value of header {name:?} holds characters HTTP does not allow"))
            } else {
                None
            }
        })
    }

    /// The answer itself when it can be sent; otherwise (a test's fault reply with a bad
    /// header or status) a 500 `server_error` that says what is wrong with it.
    pub(crate) fn checked(self) -> Answer {
        match self.unsendable() {
            None => self,
            Some(problem) => {
                let description = format!("the fault reply cannot be sent: {problem}");
                ErrorReply::new(500, "server_error", description).into_answer()
            }
        }
    }

    /// The answer as wiremock sends it (a [`checked`](Self::checked) one whole).
    pub(crate) fn into_template(self) -> ResponseTemplate {
        let mut template = ResponseTemplate::new(self.status).set_body_bytes(self.body);
        for (name, value) in self.headers {
            if let (Ok(name), Ok(value)) =
                (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_bytes(&value))
            {
                template = template.append_header(name, value);
            }
        }
        match self.delay {
            Some(delay) => template.set_delay(delay),
            None => template,
        }
    }
}

/// An error response: `{"error": code, "error_description": text}`.
#[derive(Debug, Clone)]
pub(crate) struct ErrorReply {
    pub(crate) status: u16,
    pub(crate) code: &'static str,
    pub(crate) description: String,
    headers: Vec<(&'static str, String)>,
}

impl ErrorReply {
    pub(crate) fn new(status: u16, code: &'static str, description: impl Into<String>) -> Self {
        Self { status, code, description: description.into(), headers: Vec::new() }
    }

    pub(crate) fn invalid_request(description: impl Into<String>) -> Self {
        Self::new(400, "invalid_request", description)
    }

    pub(crate) fn not_found() -> Self {
        Self::new(404, "not_found", "no such resource")
    }

    /// 405, naming the methods allowed (`GET`, or `GET, POST`).
    pub(crate) fn method_not_allowed(allow: String) -> Self {
        Self::new(405, "method_not_allowed", "method not allowed").with_header("allow", allow)
    }

    /// Adds a response header (replacing one of the same name).
    pub(crate) fn with_header(mut self, name: &'static str, value: String) -> Self {
        self.headers.retain(|(n, _)| *n != name);
        self.headers.push((name, value));
        self
    }

    pub(crate) fn into_answer(self) -> Answer {
        let body = serde_json::json!({ "error": self.code, "error_description": self.description });
        let answer = Answer::new(self.status).header("cache-control", "no-store").json(&body);
        self.headers.into_iter().fold(answer, |answer, (name, value)| answer.header(name, value))
    }
}

impl From<ErrorReply> for Answer {
    fn from(reply: ErrorReply) -> Self {
        reply.into_answer()
    }
}
