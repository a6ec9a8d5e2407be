//! The journal: every request either server received, in order, with how it was answered and
//! who sent it, and never a secret.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::SystemTime;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use wiremock::Request;

use super::form::parse_basic;
use super::proxy::REPLAY_HEADER;
use super::reply::Answer;
use super::{Endpoint, Fault};

/// How many entries are kept; older ones are dropped.
const CAPACITY: usize = 10_000;
/// Request headers left out of the journal (the `Authorization` scheme is kept on its own).
const SECRET_HEADERS: [&str; 4] = ["authorization", "proxy-authorization", "cookie", REPLAY_HEADER];
/// What stands for a secret query value.
pub const REDACTED: &str = "[redacted]";

/// One request either server received, and how it was answered: an entry of
/// [`ReferenceServer::journal`](crate::ReferenceServer::journal).
///
/// Secrets are never in it: no token, client secret, authorization code, code verifier,
/// refresh token or API key. Request bodies are not kept; the `Authorization`,
/// `Proxy-Authorization` and `Cookie` headers are left out (the scheme of `Authorization` is
/// kept, as sent); query parameters and other headers named like credentials, in any case and
/// spelling (`code`, `Code`, `client_secret`, `CLIENT_SECRET`, `accessToken`, `api_key`,
/// `X-Api-Key`, `X-Amz-Security-Token`, ...: the client's own redaction rule), are kept with
/// the value [`REDACTED`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalEntry {
    endpoint: Option<Endpoint>,
    api: bool,
    method: String,
    path: String,
    query: Vec<(String, String)>,
    headers: Vec<(String, String)>,
    authorization_scheme: Option<String>,
    status: u16,
    client_id: Option<String>,
    user: Option<String>,
    fault: Option<Fault>,
    received_at: SystemTime,
}

impl JournalEntry {
    pub(crate) fn new(
        request: &Request,
        endpoint: Option<Endpoint>,
        api: bool,
        answer: &Answer,
        fault: Option<Fault>,
        received_at: SystemTime,
    ) -> Self {
        let authorization =
            request.headers.get("authorization").map(|v| String::from_utf8_lossy(v.as_bytes()));
        let (client_id, user) = who(request, authorization.as_deref());
        let query = request.url.query_pairs().map(|(name, value)| {
            let value = if is_secret(&name) { REDACTED.into() } else { value };
            (name.into_owned(), value.into_owned())
        });
        let headers = request.headers.iter().filter(|(name, _)| !SECRET_HEADERS.contains(&name.as_str()));
        JournalEntry {
            endpoint,
            api,
            method: request.method.to_string(),
            path: request.url.path().to_owned(),
            query: query.collect(),
            headers: headers
                .map(|(name, value)| {
                    let value = if is_secret(name.as_str()) {
                        REDACTED.into()
                    } else {
                        String::from_utf8_lossy(value.as_bytes())
                    };
                    (name.to_string(), value.into_owned())
                })
                .collect(),
            authorization_scheme: authorization.and_then(|v| v.split(' ').next().map(str::to_owned)),
            status: answer.status,
            client_id,
            user: answer.user.clone().or(user),
            fault,
            received_at,
        }
    }

    /// The endpoint the request was routed to; `None` for a request no endpoint serves (an
    /// unknown path, another method, the OpenAPI document).
    pub fn endpoint(&self) -> Option<Endpoint> {
        self.endpoint
    }

    /// Whether the API received the request (rather than the authorization server).
    pub fn is_api(&self) -> bool {
        self.api
    }

    /// HTTP method, e.g. `GET`.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// URL path as received (percent-encoded), e.g. `/v1/companies`.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The first value of query parameter `name`, decoded.
    pub fn query(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// Every query parameter, decoded, in the order sent. The `business-records` client sends
    /// a listing's `limit`, `sort`, its filters in the order they were set (a filter set again
    /// moves to the end), then `cursor`; and the pairs of `Request::query` in the order given.
    /// Compare with [`query`](Self::query), by name, to leave the order out.
    pub fn query_pairs(&self) -> &[(String, String)] {
        &self.query
    }

    /// The first value of request header `name` (any case), as text (invalid UTF-8 replaced).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The scheme of the `Authorization` header exactly as sent (`Bearer`, `bearer`, `Basic`,
    /// ...); `None` without one.
    pub fn authorization_scheme(&self) -> Option<&str> {
        self.authorization_scheme.as_deref()
    }

    /// The `Idempotency-Key` header, if one was sent.
    pub fn idempotency_key(&self) -> Option<&str> {
        self.header("idempotency-key")
    }

    /// The status answered (200 for a dropped connection or a body cut short, which the
    /// client never sees whole).
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The client the request came from: the `client_id` of its bearer token, or the client
    /// it names at the authorization server (HTTP Basic, `client_id` in the form body or the
    /// query), whether or not it proved who it is.
    pub fn client_id(&self) -> Option<&str> {
        self.client_id.as_deref()
    }

    /// The signed-in user: the subject of a user's bearer token, or the user a sign-in, code
    /// exchange or refresh was for.
    pub fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    /// The fault injected into the answer, if any.
    pub fn fault(&self) -> Option<&Fault> {
        self.fault.as_ref()
    }

    /// When the request arrived (a held token request: when it was processed).
    pub fn received_at(&self) -> SystemTime {
        self.received_at
    }
}

/// One line: the method, the path as received, the query decoded in the order sent (secret
/// values as [`REDACTED`]), the status answered, and the fault injected if any:
/// `GET /v1/contacts?limit=1&companyId=cmp_2 → 200`,
/// `GET /v1/companies?limit=100 → 429 (fault rate_limited)`. In names and values, `%`, `&`,
/// `=`, `+`, `#`, spaces and control characters are percent-encoded, so that the line reads
/// back as the query it stands for.
impl std::fmt::Display for JournalEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        fn escaped(f: &mut std::fmt::Formatter<'_>, text: &str) -> std::fmt::Result {
            for c in text.chars() {
                if c.is_control() || c.is_whitespace() || matches!(c, '%' | '&' | '=' | '+' | '#') {
                    c.encode_utf8(&mut [0; 4]).bytes().try_for_each(|byte| write!(f, "%{byte:02X}"))?;
                } else {
                    write!(f, "{c}")?;
                }
            }
            Ok(())
        }
        write!(f, "{} {}", self.method, self.path)?;
        for (n, (name, value)) in self.query.iter().enumerate() {
            f.write_str(if n == 0 { "?" } else { "&" })?;
            escaped(f, name)?;
            f.write_str("=")?;
            escaped(f, value)?;
        }
        write!(f, " → {}", self.status)?;
        match &self.fault {
            Some(fault) => write!(f, " (fault {})", fault.name()),
            None => Ok(()),
        }
    }
}

/// Whether a query parameter or a header named `name` carries a secret: the client's rule,
/// written again here (the crates share no code). Its letters and digits, in lower case, hold
/// `token`, `secret`, `passw`, `credential`, `signature`, `session`, `cookie`, `assertion`,
/// `verifier`, `authorization` or `accesskey`, or end in `key` other than `idempotencykey`, or
/// are `auth`, `code`, `sig`, `pwd` or `jwt`.
fn is_secret(name: &str) -> bool {
    const HELD: [&str; 11] = [
        "token",
        "secret",
        "passw",
        "credential",
        "signature",
        "session",
        "cookie",
        "assertion",
        "verifier",
        "authorization",
        "accesskey",
    ];
    let name: String =
        name.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect();
    HELD.iter().any(|word| name.contains(word))
        || (name.ends_with("key") && name != "idempotencykey")
        || ["auth", "code", "sig", "pwd", "jwt"].contains(&name.as_str())
}

/// The client and the user a request names: from its bearer token (read, not verified: the
/// status says whether it was accepted), its Basic credentials, or `client_id` in the form
/// body or the query.
fn who(request: &Request, authorization: Option<&str>) -> (Option<String>, Option<String>) {
    let (scheme, credentials) = authorization.and_then(|v| v.trim().split_once(' ')).unwrap_or_default();
    if scheme.eq_ignore_ascii_case("bearer") {
        let claims = credentials
            .trim()
            .split('.')
            .nth(1)
            .and_then(|payload| URL_SAFE_NO_PAD.decode(payload).ok())
            .and_then(|json| serde_json::from_slice::<serde_json::Value>(&json).ok())
            .unwrap_or_default();
        let text = |name: &str| claims[name].as_str().map(str::to_owned);
        let (client_id, subject) = (text("client_id"), text("sub"));
        return (client_id.clone(), subject.filter(|s| Some(s) != client_id.as_ref()));
    }
    let basic = authorization.and_then(|v| parse_basic(v).into_iter().next()).map(|(id, _)| id);
    let form = request
        .headers
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"application/x-www-form"));
    let named = url::form_urlencoded::parse(if form { &request.body } else { &[] })
        .chain(request.url.query_pairs())
        .find_map(|(name, value)| (name == "client_id").then(|| value.into_owned()));
    (basic.or(named), None)
}

/// The journal of one server pair.
#[derive(Debug, Default)]
pub(crate) struct Journal(Mutex<VecDeque<JournalEntry>>);

impl Journal {
    pub(crate) fn record(&self, entry: JournalEntry) {
        let mut entries = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() == CAPACITY {
            entries.pop_front();
        }
        entries.push_back(entry);
    }

    pub(crate) fn entries(&self) -> Vec<JournalEntry> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect()
    }

    pub(crate) fn clear(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}
