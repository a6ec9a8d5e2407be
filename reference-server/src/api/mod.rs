//! The API server: `GET /v{n}/companies` and `GET /v{n}/contacts`.
//!
//! [`ApiServer::mount`] gives wiremock a mock per endpoint and served version (`GET`, the
//! path); other methods of these paths are answered 405, other paths 404, and logged as well.
//! Every request routed to an [`Endpoint`] runs one pipeline, each stage able to answer early:
//!
//! 1. The endpoint's [`Lifecycle`]: a sunset endpoint answers 410 `version_sunset`.
//! 2. [`FaultState::draw`]: the request's injected fault, if any; 429, 5xx, dropped connections
//!    ([`FaultState::stand_in`]), expired cursors and revoked tokens act here.
//! 3. [`ApiServer::authenticate`]: bearer token and scope (401); then the client id's rate
//!    limit (429, and the `RateLimit` fields on the answer when they are on).
//! 4. [`Versions::preview_field`] and [`ListQuery::parse`]: `X-API-Preview`, `limit`, `sort`,
//!    filters, `cursor` (400).
//! 5. [`ApiServer::select_page`]: filter, order, cursor to offset (400 cursor errors); an
//!    injected empty page here.
//! 6. [`Page::into_body`]: the page envelope; body faults (truncated, invalid, slow, cut) here.
//!
//! A deprecated endpoint's headers are added to whatever the pipeline answered.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::SystemTime;

mod query;

use serde::Serialize;
use wiremock::{MockServer, Request, ResponseTemplate};

use super::access::AccessClaims;
use super::cursor::{CursorCodec, CursorError};
use super::dataset::Dataset;
use super::faults::{self, Fault, FaultState, MARKER_CUT, Target};
use super::jwt::SigningKeys;
use super::jwt::unix_now_ms;
use super::odd::OddRecords;
use super::rate_limit;
use super::routes::{Refuse, Routes};
use super::versions::{self, Lifecycle, Versions};
use super::{ErrorReply, OPENAPI_PATH, ServedRequest, Shared};
use query::ListQuery;

/// The request header that asks for preview features.
const PREVIEW_HEADER: &str = "x-api-preview";

/// Scope every list endpoint requires.
pub(crate) const READ_SCOPE: &str = "api/read";
/// Page size when `limit` is absent.
pub(crate) const DEFAULT_LIMIT: usize = 20;
/// Largest accepted `limit`.
pub(crate) const MAX_LIMIT: usize = 100;

/// A list endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    Companies,
    Contacts,
}

impl Endpoint {
    pub(super) fn name(self) -> &'static str {
        match self {
            Endpoint::Companies => "companies",
            Endpoint::Contacts => "contacts",
        }
    }

    /// The query parameter that filters this endpoint.
    pub(super) fn filter_param(self) -> &'static str {
        match self {
            Endpoint::Companies => "status",
            Endpoint::Contacts => "companyId",
        }
    }
}

/// The API server's responder.
#[derive(Debug)]
pub(crate) struct ApiServer {
    pub(crate) keys: Arc<SigningKeys>,
    pub(crate) dataset: Arc<Dataset>,
    pub(crate) cursors: CursorCodec,
    pub(crate) versions: Versions,
    pub(crate) odd: Option<OddRecords>,
    pub(crate) shared: Arc<Shared>,
}

/// What the pipeline answered, and the fault it applied.
struct Outcome {
    status: u16,
    response: ResponseTemplate,
    fault: Option<Fault>,
}

impl Outcome {
    fn reply(result: Result<ResponseTemplate, ErrorReply>, fault: Option<Fault>) -> Self {
        match result {
            Ok(response) => Outcome { status: 200, response, fault },
            Err(error) => Outcome { status: error.status, response: error.into_response(), fault },
        }
    }
}

impl ApiServer {
    /// Serves both list endpoints of every served version on `server`, and `openapi` (the
    /// OpenAPI document) at [`OPENAPI_PATH`], without a token and unlogged.
    pub(crate) async fn mount(self, server: &MockServer, openapi: ResponseTemplate) {
        let versions = self.versions.numbers();
        let mut routes = Routes::new(server, Arc::new(self));
        for version in versions {
            for endpoint in [Endpoint::Companies, Endpoint::Contacts] {
                let path = format!("/v{version}/{}", endpoint.name());
                routes
                    .route("GET", path, move |api: &Self, request| api.respond(version, endpoint, request))
                    .await;
            }
        }
        routes.route("GET", OPENAPI_PATH, move |_: &Self, _| openapi.clone()).await;
        routes.finish().await;
    }

    /// Answers a request routed to `endpoint` of version `version`, and logs it.
    fn respond(&self, version: u32, endpoint: Endpoint, request: &Request) -> ResponseTemplate {
        let received_at = SystemTime::now();
        let Outcome { status, response, fault } = self.handle(version, endpoint, request);
        self.log(request, status, fault, received_at);
        response
    }

    fn log(&self, request: &Request, status: u16, fault: Option<Fault>, received_at: SystemTime) {
        self.shared.record(ServedRequest {
            method: request.method.as_str().to_owned(),
            path: request.url.path().to_owned(),
            query: request.url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect(),
            authorization: request.headers.contains_key("authorization"),
            preview: header(request, PREVIEW_HEADER).map(str::to_owned),
            status,
            fault,
            received_at,
        });
    }
}

impl Refuse for ApiServer {
    fn refuse(&self, request: &Request, reply: ErrorReply) -> ResponseTemplate {
        self.log(request, reply.status, None, SystemTime::now());
        reply.into_response()
    }
}

fn header<'r>(request: &'r Request, name: &str) -> Option<&'r str> {
    request.headers.get(name).and_then(|v| v.to_str().ok())
}

impl ApiServer {
    fn faults(&self) -> std::sync::MutexGuard<'_, FaultState> {
        self.shared.faults.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The request pipeline, with the endpoint's deprecation headers on the answer.
    fn handle(&self, version: u32, endpoint: Endpoint, request: &Request) -> Outcome {
        let lifecycle = self.shared.lifecycle(request.url.path());
        let mut outcome = match &lifecycle {
            Lifecycle::Sunset(headers) => {
                Outcome { status: 410, response: versions::sunset_reply(headers), fault: None }
            }
            _ => {
                let fault = self.faults().draw(Target::Api);
                let outcome = self.answer(version, endpoint, request, fault);
                if let Some(fault) = &outcome.fault {
                    self.faults().applied(Target::Api, fault);
                }
                outcome
            }
        };
        if let Lifecycle::Deprecated(headers) = &lifecycle {
            outcome.response = headers.apply(outcome.response);
        }
        outcome
    }

    /// Answers a routed request, carrying out its fault.
    fn answer(&self, version: u32, endpoint: Endpoint, request: &Request, fault: Option<Fault>) -> Outcome {
        if let Some(fault) = fault.as_ref()
            && let Some((status, response)) = self.faults().stand_in(Target::Api, fault)
        {
            return Outcome { status, response, fault: Some(fault.clone()) };
        }
        match fault {
            Some(Fault::ExpireCursor) if request.url.query_pairs().any(|(k, _)| k == "cursor") => {
                let reply = ErrorReply::new(
                    400,
                    "cursor_expired",
                    "the cursor has expired; restart from the first page",
                );
                return Outcome::reply(Err(reply), fault);
            }
            Some(Fault::ExpireTokens) => {
                self.shared.token_generation.fetch_add(1, Ordering::SeqCst);
            }
            _ => {}
        }
        let page = self.serve(version, endpoint, request, fault.as_ref() == Some(&Fault::EmptyPage));
        let (body, preview_label, quota) = match page {
            Ok(body) => body,
            // Only an expiry of the tokens has acted by now.
            Err(error) => return Outcome::reply(Err(error), fault.filter(|f| *f == Fault::ExpireTokens)),
        };
        let body = match &fault {
            Some(Fault::TruncatedJson) => body[..body.len() / 2].to_vec(),
            Some(other) => faults::replacement_body(other).unwrap_or(body),
            None => body,
        };
        let mut response = ResponseTemplate::new(200).set_body_raw(body, "application/json");
        if let Some(label) = preview_label {
            response = response.insert_header("x-api-preview", label);
        }
        for (name, value) in quota {
            response = response.insert_header(name, value.as_str());
        }
        match &fault {
            Some(Fault::Slow(delay)) => response = response.set_delay(*delay),
            Some(Fault::CutBody) => response = faults::mark(response, MARKER_CUT),
            _ => {}
        }
        let fault = fault.filter(|f| !matches!(f, Fault::ExpireCursor));
        Outcome { status: 200, response, fault }
    }

    /// Authentication, rate limit, preview label, query and page: the body of a 200, the
    /// preview label that shaped it, and the rate-limit fields.
    fn serve(
        &self,
        version: u32,
        endpoint: Endpoint,
        request: &Request,
        empty: bool,
    ) -> Result<(Vec<u8>, Option<String>, rate_limit::Fields), ErrorReply> {
        let claims = self.authenticate(request)?;
        let quota = self.shared.rate_limit.admit(claims.client_id.as_deref().unwrap_or_default())?;
        let preview_label = header(request, PREVIEW_HEADER);
        let preview_field = self.versions.preview_field(preview_label)?;
        let query = ListQuery::parse(version, endpoint, request)?;
        let page = self.select_page(&query, empty)?;
        let preview = preview_field.zip(preview_label);
        let body = page.into_body(preview)?;
        Ok((body, preview.map(|(_, label)| label.to_owned()), quota))
    }

    /// Validates the bearer token and requires [`READ_SCOPE`].
    fn authenticate(&self, request: &Request) -> Result<AccessClaims, ErrorReply> {
        let token = request
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, token) = v.trim().split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
            })
            .filter(|t| !t.is_empty())
            .ok_or_else(|| bearer_error("invalid_token", "missing bearer token", None))?;
        let claims = self
            .keys
            .current()
            .validator
            .validate(token)
            .map_err(|e| bearer_error("invalid_token", &e.to_string(), None))?;
        if self.shared.is_revoked(&claims) {
            return Err(bearer_error("invalid_token", "the token has been revoked", None));
        }
        if !claims.has_scope(READ_SCOPE) {
            return Err(bearer_error(
                "insufficient_scope",
                &format!("the token lacks the {READ_SCOPE} scope"),
                Some(READ_SCOPE),
            ));
        }
        Ok(claims)
    }

    /// Filters and orders the records, then cuts out the page the cursor
    /// points at.
    /// With `empty`, the page has no items and a fresh cursor to the same position.
    fn select_page(&self, query: &ListQuery, empty: bool) -> Result<Page, ErrorReply> {
        let indices = match query.endpoint {
            Endpoint::Companies => self.dataset.company_indices(query.sort, query.filter.as_deref()),
            Endpoint::Contacts => self.dataset.contact_indices(query.sort, query.filter.as_deref()),
        };
        let binding = query.binding();
        let now = unix_now_ms();
        let offset = match &query.cursor {
            None => 0,
            Some(cursor) => match self.cursors.decode(cursor, &binding, now) {
                Ok(offset) => usize::try_from(offset).unwrap_or(usize::MAX),
                Err(CursorError::Invalid(why)) => {
                    return Err(ErrorReply::new(400, "invalid_cursor", why));
                }
                Err(CursorError::Expired) => {
                    return Err(ErrorReply::new(
                        400,
                        "cursor_expired",
                        "the cursor has expired; restart from the first page",
                    ));
                }
            },
        };
        let total = indices.len();
        let start = offset.min(total);
        let end = if empty { start } else { start.saturating_add(query.limit).min(total) };
        let has_more = empty || end < total;
        let next_cursor = has_more.then(|| self.cursors.encode(end as u64, &binding, now));
        let records = &indices[start..end];
        let data = match query.endpoint {
            Endpoint::Companies => to_json(records.iter().map(|&i| &self.dataset.companies[i as usize])),
            Endpoint::Contacts => to_json(records.iter().map(|&i| &self.dataset.contacts[i as usize])),
        }?;
        let data = match &self.odd {
            Some(odd) => odd.apply(records, data),
            None => data,
        };
        Ok(Page { data, pagination: Pagination { has_more, next_cursor, total_count: total } })
    }
}

fn to_json<'a, T: Serialize + 'a>(
    records: impl Iterator<Item = &'a T>,
) -> Result<Vec<serde_json::Value>, ErrorReply> {
    records
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()
        .map_err(|_| ErrorReply::new(500, "server_error", "serialisation failed"))
}

/// 401 with an RFC 6750 `WWW-Authenticate: Bearer` challenge, naming the
/// required scope for `insufficient_scope`.
fn bearer_error(code: &'static str, description: &str, scope: Option<&str>) -> ErrorReply {
    let mut header = format!("Bearer error=\"{code}\", error_description=\"{}\"", quotable(description));
    if let Some(scope) = scope {
        header.push_str(&format!(", scope=\"{}\"", quotable(scope)));
    }
    ErrorReply::new(401, code, description).with_header("www-authenticate", header)
}

/// Text safe inside a quoted-string header parameter.
fn quotable(s: &str) -> String {
    s.chars().map(|c| if (' '..='~').contains(&c) && c != '"' && c != '\\' { c } else { '?' }).collect()
}

/// One page of results, ready to serialise.
#[derive(Debug, Serialize)]
struct Page {
    data: Vec<serde_json::Value>,
    pagination: Pagination,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Pagination {
    has_more: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<String>,
    total_count: usize,
}

impl Page {
    /// The JSON body; with a known preview label, each item gets the label's field.
    fn into_body(mut self, preview: Option<(&str, &str)>) -> Result<Vec<u8>, ErrorReply> {
        if let Some((field, label)) = preview {
            for item in &mut self.data {
                if let serde_json::Value::Object(fields) = item {
                    fields.insert(field.to_owned(), serde_json::Value::String(label.to_owned()));
                }
            }
        }
        serde_json::to_vec(&self).map_err(|_| ErrorReply::new(500, "server_error", "serialisation failed"))
    }
}

#[cfg(test)]
mod tests;
