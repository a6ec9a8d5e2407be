//! One record: read one (`GET /v{n}/{name}/{id}`), and a collection's create
//! (`POST /v{n}/{name}`) and delete (`DELETE /v{n}/{name}/{id}`), each write once per
//! `Idempotency-Key`.
//!
//! The id is the path's last segment, percent-decoded: an id holding `/`, `?`, `#`, `%`, spaces
//! or any other character is one segment when the client encodes it as one (only `.` and `..`
//! cannot travel in a URL as a segment: URL parsers remove them).

use serde_json::Value;
use wiremock::Request;

use super::super::form::percent_decode;
use super::super::records::Record;
use super::{ApiServer, ErrorReply, Preview, Resource, header};
use crate::reply::Answer;

/// The id a request's path names, decoded.
fn id_of(request: &Request) -> Result<String, ErrorReply> {
    let segment = request.url.path().rsplit('/').next().unwrap_or_default();
    percent_decode(segment).ok_or_else(ErrorReply::not_found)
}

impl ApiServer {
    /// `GET /v{n}/{name}/{id}`: the record, or 404 `not_found`.
    pub(super) fn read(
        &self,
        resource: Resource,
        request: &Request,
        preview: Preview<'_>,
    ) -> Result<Answer, ErrorReply> {
        let id = id_of(request)?;
        let store = self.shared.store();
        let record =
            store.get(resource.name).and_then(|table| table.get(&id)).ok_or_else(ErrorReply::not_found)?;
        Ok(Answer::new(200).json(&Self::present(record, preview)))
    }

    /// `POST /v{n}/{name}`: the body (a JSON object) stored under a new `id`; 201 with the
    /// record.
    pub(super) fn create(&self, resource: Resource, request: &Request) -> Answer {
        let Ok(Value::Object(mut fields)) = serde_json::from_slice(&request.body) else {
            return ErrorReply::invalid_request("the body must be a JSON object").into();
        };
        let mut store = self.shared.store();
        let Some(table) = store.get_mut(resource.name) else { return ErrorReply::not_found().into() };
        let id = table.new_id(resource.name);
        fields.insert("id".to_owned(), Value::String(id.clone()));
        let Ok(record) = Record::from_json(Value::Object(fields), "body") else {
            return ErrorReply::new(500, "server_error", "the record could not be made").into();
        };
        let answer = Answer::new(201).json(&record.to_json());
        table.upsert(record);
        answer.header("location", format!("{}/{id}", request.url.path()))
    }

    /// `DELETE /v{n}/{name}/{id}`: 204, or 404 `not_found`.
    pub(super) fn delete(&self, resource: Resource, request: &Request) -> Answer {
        let removed =
            id_of(request).ok().and_then(|id| self.shared.store().get_mut(resource.name)?.remove(&id));
        match removed {
            Some(_) => Answer::new(204),
            None => ErrorReply::not_found().into(),
        }
    }

    /// `write`'s answer, or, for a request whose `Idempotency-Key` this client already sent
    /// with the same method and path, the first answer again (and nothing written).
    pub(super) fn idempotent(
        &self,
        request: &Request,
        client_id: &str,
        write: impl FnOnce() -> Answer,
    ) -> Answer {
        let Some(key) = header(request, "idempotency-key") else { return write() };
        let slot = [client_id, key, request.method.as_str(), request.url.path()].map(str::to_owned);
        let mut replies = self.replies.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(first) = replies.get(&slot) {
            return first.clone();
        }
        let answer = write();
        replies.insert(slot, answer.clone());
        answer
    }
}
