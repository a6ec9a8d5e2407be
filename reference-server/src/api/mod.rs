//! The API server: every resource's list (`GET /v{n}/{name}`) and read one
//! (`GET /v{n}/{name}/{id}`), and a collection's create (`POST /v{n}/{name}`) and delete
//! (`DELETE /v{n}/{name}/{id}`).
//!
//! [`ApiServer::mount`] gives wiremock a mock per route and served version; other methods of
//! these paths are answered 405, other paths 404. Every request takes the
//! [`pipeline`](super::pipeline) (lifecycle, faults, journal), and then, here:
//!
//! 1. [`ApiServer::authenticate`]: bearer token, and the scope of the method (`api/read`, or
//!    `api/write` for a write); then the client id's rate limit (429, and the `RateLimit`
//!    fields on the answer when they are on).
//! 2. [`Versions::preview_field`]: `X-API-Preview` (400).
//! 3. The action: [`list`] (query, page, cursor), or [`item`] (read one, create, delete,
//!    with `Idempotency-Key`).

mod item;
mod list;
mod query;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use wiremock::{MockServer, Request};

use super::access::AccessClaims;
use super::cursor::CursorCodec;
use super::jwt::SigningKeys;
use super::odd::OddRecords;
use super::records::{COMPANIES, CONTACTS, Record};
use super::reply::Answer;
use super::routes::{Paths, Routes};
use super::versions::Versions;
use super::{Endpoint, ErrorReply, Fault, OPENAPI_PATH, Shared};

/// The request header that asks for preview features.
const PREVIEW_HEADER: &str = "x-api-preview";
/// Scope every read requires.
pub(crate) const READ_SCOPE: &str = "api/read";
/// Scope every write requires.
pub(crate) const WRITE_SCOPE: &str = "api/write";
/// Page size when `limit` is absent.
pub(crate) const DEFAULT_LIMIT: usize = 20;
/// Largest accepted `limit`.
pub(crate) const MAX_LIMIT: usize = 100;

/// What a resource serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The companies: sorts `name`, `createdAt`, `updatedAt`; filter `status`.
    Companies,
    /// The contacts: the same sorts; filter `companyId`.
    Contacts,
    /// A list a test declared: sort by any field, every other parameter an equality filter.
    List,
    /// A declared list that also takes `POST` and `DELETE`.
    Collection,
}

/// A resource the API serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Resource {
    pub(crate) name: &'static str,
    pub(crate) kind: Kind,
}

impl Resource {
    pub(crate) const COMPANIES: Resource = Resource { name: COMPANIES, kind: Kind::Companies };
    pub(crate) const CONTACTS: Resource = Resource { name: CONTACTS, kind: Kind::Contacts };

    /// Whether `name` can name a resource: ASCII letters, digits, `-` and `_`.
    pub(crate) fn is_name(name: &str) -> bool {
        !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    }

    /// The endpoint of its list (`item` false) or of one of its records.
    fn endpoint(self, item: bool) -> Endpoint {
        match (self.kind, item) {
            (Kind::Companies, false) => Endpoint::Companies,
            (Kind::Companies, true) => Endpoint::Company,
            (Kind::Contacts, false) => Endpoint::Contacts,
            (Kind::Contacts, true) => Endpoint::Contact,
            _ => Endpoint::Resource(self.name),
        }
    }
}

/// What a request asks of a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    List,
    Read,
    Create,
    Delete,
}

/// A known preview label and the field it adds to every record.
type Preview<'a> = Option<(&'a str, &'a str)>;

/// The API server's responder.
#[derive(Debug)]
pub(crate) struct ApiServer {
    pub(crate) keys: Arc<SigningKeys>,
    pub(crate) resources: Vec<Resource>,
    pub(crate) cursors: Arc<CursorCodec>,
    pub(crate) versions: Versions,
    pub(crate) odd: Option<OddRecords>,
    pub(crate) shared: Arc<Shared>,
    /// The first answer to each write with an `Idempotency-Key`, by client, key, method and
    /// path.
    pub(crate) replies: Mutex<HashMap<[String; 4], Answer>>,
}

impl ApiServer {
    /// Serves every resource of every served version on `server`, and `openapi` (the OpenAPI
    /// document) at [`OPENAPI_PATH`], without a token.
    pub(crate) async fn mount(self, server: &MockServer, openapi: Answer) {
        let (versions, resources) = (self.versions.numbers(), self.resources.clone());
        let shared = Arc::clone(&self.shared);
        let mut routes = Routes::new(server, Arc::new(self), shared, true);
        let names: Vec<&str> = resources.iter().map(|resource| resource.name).collect();
        let not_found = {
            let versions = versions.clone();
            move |request: &Request| undeclared(request.url.path(), &versions, &names)
        };
        for version in versions {
            for resource in &resources {
                let path = format!("/v{version}/{}", resource.name);
                let mut actions = vec![(Action::List, "GET"), (Action::Read, "GET")];
                if resource.kind == Kind::Collection {
                    actions.extend([(Action::Create, "POST"), (Action::Delete, "DELETE")]);
                }
                for (action, method) in actions {
                    let item = matches!(action, Action::Read | Action::Delete);
                    let paths = if item { Paths::Item(path.clone()) } else { Paths::Exact(path.clone()) };
                    let resource = *resource;
                    let respond = move |api: &Self, request: &Request, fault: Option<&Fault>| {
                        api.respond(version, resource, action, request, fault)
                    };
                    routes.route(method, paths, Some(resource.endpoint(item)), respond).await;
                }
            }
        }
        routes
            .route("GET", Paths::Exact(OPENAPI_PATH.to_owned()), None, move |_, _, _| openapi.clone())
            .await;
        routes.finish(not_found).await;
    }

    /// Authentication, rate limit, preview label, then the action; the rate-limit fields on
    /// whatever was answered past the rate limit.
    fn respond(
        &self,
        version: u32,
        resource: Resource,
        action: Action,
        request: &Request,
        fault: Option<&Fault>,
    ) -> Answer {
        let scope = if matches!(action, Action::Create | Action::Delete) { WRITE_SCOPE } else { READ_SCOPE };
        let claims = match self.authenticate(request, scope) {
            Ok(claims) => claims,
            Err(error) => return error.into(),
        };
        let client_id = claims.client_id.as_deref().unwrap_or_default();
        let quota = match self.shared.rate_limit.admit(client_id) {
            Ok(quota) => quota,
            Err(error) => return error.into(),
        };
        let label = header(request, PREVIEW_HEADER);
        let answer = self.versions.preview_field(label).and_then(|field| {
            let preview = field.zip(label);
            let answer = match action {
                Action::List => self.list(version, resource, request, preview, fault),
                Action::Read => self.read(resource, request, preview),
                Action::Create => Ok(self.idempotent(request, client_id, || self.create(resource, request))),
                Action::Delete => Ok(self.idempotent(request, client_id, || self.delete(resource, request))),
            }?;
            Ok(match preview {
                Some((_, label)) => answer.header(PREVIEW_HEADER, label),
                None => answer,
            })
        });
        let answer = answer.unwrap_or_else(Answer::from);
        quota.into_iter().fold(answer, |answer, (name, value)| answer.header(name, value))
    }

    /// Validates the bearer token and requires `scope`.
    fn authenticate(&self, request: &Request, scope: &str) -> Result<AccessClaims, ErrorReply> {
        let token = header(request, "authorization")
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
            return Err(bearer_error("invalid_token", "the token has expired or been revoked", None));
        }
        if !claims.has_scope(scope) {
            return Err(bearer_error(
                "insufficient_scope",
                &format!("the token lacks the {scope} scope"),
                Some(scope),
            ));
        }
        Ok(claims)
    }

    /// `record` as sent: with a known preview label, with the label's field.
    fn present(record: &Record, preview: Preview<'_>) -> serde_json::Value {
        let mut json = record.to_json();
        if let (Some((field, label)), serde_json::Value::Object(fields)) = (preview, &mut json) {
            fields.insert(field.to_owned(), label.into());
        }
        json
    }
}

/// 404 for a path no route serves. A path below a served version (`/v{n}/{name}/...`) whose
/// first segment could name a resource but names none says how to declare it.
fn undeclared(path: &str, versions: &[u32], names: &[&str]) -> ErrorReply {
    let mut segments = path.split('/').skip(1);
    let version = segments.next().and_then(|v| v.strip_prefix('v')?.parse::<u32>().ok());
    let name = segments.next().unwrap_or_default();
    let served = version.is_some_and(|version| versions.contains(&version));
    if !served || names.contains(&name) || !Resource::is_name(name) {
        return ErrorReply::not_found();
    }
    let description = format!(
        "no resource `{name}` is declared: declare it with `.list(\"{name}\", records)` or \
         `.collection(\"{name}\", records)` on `ReferenceServer::builder()`, or with \
         `--list {name}=FILE.json` or `--collection {name}` on the reference_server example"
    );
    ErrorReply::new(404, "not_found", description)
}

fn header<'r>(request: &'r Request, name: &str) -> Option<&'r str> {
    request.headers.get(name).and_then(|v| v.to_str().ok())
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

#[cfg(test)]
mod tests;
