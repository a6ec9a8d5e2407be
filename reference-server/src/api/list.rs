//! A list request: its query, the page the cursor points at, and the page envelope.

use serde::Serialize;
use wiremock::Request;

use super::super::cursor::CursorError;
use super::super::jwt::unix_now_ms;
use super::query::ListQuery;
use super::{ApiServer, ErrorReply, Fault, Preview, Resource};
use crate::reply::Answer;

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

fn cursor_expired() -> ErrorReply {
    ErrorReply::new(400, "cursor_expired", "the cursor has expired; restart from the first page")
}

impl ApiServer {
    /// `GET /v{n}/{resource}`: the page the query asks for, or an injected empty page or
    /// expired cursor.
    pub(super) fn list(
        &self,
        version: u32,
        resource: Resource,
        request: &Request,
        preview: Preview<'_>,
        fault: Option<&Fault>,
    ) -> Result<Answer, ErrorReply> {
        let query = ListQuery::parse(version, resource, request)?;
        if fault == Some(&Fault::ExpireCursor) && query.cursor.is_some() {
            return Ok(cursor_expired().into_answer().fault_applied());
        }
        let empty = fault == Some(&Fault::EmptyPage);
        let page = self.select_page(&query, empty, preview)?;
        let body = serde_json::to_vec(&page)
            .map_err(|_| ErrorReply::new(500, "server_error", "serialisation failed"))?;
        let answer = Answer::new(200).body(body, "application/json");
        Ok(if empty { answer.fault_applied() } else { answer })
    }

    /// Filters and orders the records, then cuts out the page the cursor points at. With
    /// `empty`, the page has no items and a fresh cursor to the same position.
    fn select_page(&self, query: &ListQuery, empty: bool, preview: Preview<'_>) -> Result<Page, ErrorReply> {
        let (records, order) = {
            let mut store = self.shared.store();
            let table = store.get_mut(query.resource).ok_or_else(ErrorReply::not_found)?;
            (table.records(), table.select(query.sort.as_ref(), &query.filters))
        };
        let binding = query.binding();
        let now = unix_now_ms();
        let offset = match &query.cursor {
            None => 0,
            Some(cursor) => match self.cursors.decode(cursor, &binding, now) {
                Ok(offset) => usize::try_from(offset).unwrap_or(usize::MAX),
                Err(CursorError::Invalid(why)) => return Err(ErrorReply::new(400, "invalid_cursor", why)),
                Err(CursorError::Expired) => return Err(cursor_expired()),
            },
        };
        let total = order.len();
        let start = offset.min(total);
        let end = if empty { start } else { start.saturating_add(query.limit).min(total) };
        let has_more = empty || end < total;
        let next_cursor = has_more.then(|| self.cursors.encode(end as u64, &binding, now));
        let positions = &order[start..end];
        let data = positions.iter().map(|&i| Self::present(&records[i as usize], preview)).collect();
        let data = match &self.odd {
            Some(odd) => odd.apply(positions, data),
            None => data,
        };
        Ok(Page { data, pagination: Pagination { has_more, next_cursor, total_count: total } })
    }
}
