//! The JSON error answer both servers send.

use wiremock::ResponseTemplate;

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

    pub(crate) fn into_response(self) -> ResponseTemplate {
        let body = serde_json::json!({ "error": self.code, "error_description": self.description });
        let mut response =
            ResponseTemplate::new(self.status).insert_header("cache-control", "no-store").set_body_json(body);
        for (name, value) in self.headers {
            if let Ok(value) = wiremock::http::HeaderValue::from_str(&value) {
                response = response.insert_header(name, value);
            }
        }
        response
    }
}
