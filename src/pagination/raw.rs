//! Pages whose items are decoded after the next page has been requested.
//!
//! A prefetched page reaches its listing with the pagination fields decoded and the items still
//! JSON: the listing applies the cursor rules, starts the next request, and only then decodes
//! the items, so decoding overlaps the request.

use serde::Deserialize;
use serde_json::value::RawValue;

use super::envelope::{Data, PaginationMeta};
use super::fetch::{PageResult, request_page};
use super::{Cursor, ListEndpoint, ListParams, Page};
use crate::Error;
use crate::deprecation::DeprecationNotice;
use crate::error::DecodeError;
use crate::model::Resource;
use crate::pipeline::CallStats;

/// A page as it reaches the listing: decoded whole, or with its items still JSON (prefetched).
pub(super) enum Arrived<T> {
    Decoded(Page<T>),
    Raw(RawPage),
}

/// A page as a listing receives it: the pagination fields decoded and the items still JSON, so
/// that the next page can be requested before this one's items are decoded.
pub(super) struct RawPage {
    items: Box<RawValue>,
    pub(super) pagination: PaginationMeta,
    deprecation: Option<DeprecationNotice>,
}

/// The page envelope on the wire, items left undecoded.
#[derive(Deserialize)]
struct RawEnvelope {
    data: Box<RawValue>,
    pagination: PaginationMeta,
}

impl RawPage {
    /// True when `data` is an empty array.
    pub(super) fn is_empty(&self) -> bool {
        let json = self.items.get().trim();
        json.strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'))
            .is_some_and(|inner| inner.trim().is_empty())
    }

    /// Decodes the items as [`Page`]'s own decoding does: element by element, an element that
    /// is not a record set aside.
    pub(super) fn decode<T: Resource>(self, endpoint: impl FnOnce() -> String) -> PageResult<T> {
        let data: Data<T> = serde_json::from_str(self.items.get())
            .map_err(|e| Error::Decode(DecodeError::new(&endpoint(), e)))?;
        Ok(Page { deprecation: self.deprecation, ..self.pagination.into_page(data) })
    }
}

/// Requests one page of a listing, its items left undecoded.
pub(super) async fn fetch_raw_page(
    source: &ListEndpoint,
    query: &ListParams,
    limit: Option<u32>,
    cursor: Option<&Cursor>,
    stats: Option<&CallStats>,
) -> Result<RawPage, Error> {
    let (RawEnvelope { data, pagination }, deprecation) =
        request_page::<RawEnvelope>(source, query, limit, cursor, stats).await?;
    Ok(RawPage { items: data, pagination, deprecation })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Company;

    fn raw(body: &str) -> RawPage {
        let RawEnvelope { data, pagination } = serde_json::from_str(body).expect("an envelope");
        RawPage { items: data, pagination, deprecation: None }
    }

    #[test]
    fn emptiness_and_items_read_after_the_cursor() {
        for data in ["[]", "[ ]", "[\n ]"] {
            let page =
                raw(&format!(r#"{{"data": {data}, "pagination": {{"hasMore": true, "nextCursor": "c"}}}}"#));
            assert!(page.is_empty(), "{data}");
        }
        let body = r#"{"data": [{"id": "cmp_1", "name": "A", "status": "active",
            "createdAt": "2024-01-02T03:04:05Z", "updatedAt": "2024-01-02T03:04:05Z", "tier": 2}],
            "pagination": {"hasMore": false, "nextCursor": "", "totalCount": 1}}"#;
        let page = raw(body);
        assert!(!page.is_empty() && !page.pagination.has_more);
        let decoded: Page<Company> = page.decode(|| "/v1/companies".into()).expect("a page");
        let whole: Page<Company> = serde_json::from_str(body).expect("a page");
        assert_eq!(decoded, whole, "both ways of decoding a page agree");

        // An element that is not a record is set aside, as in a page decoded whole.
        let odd =
            r#"{"data": [{"id": 1}, 7, {"id": "cmp_2", "name": "B"}], "pagination": {"hasMore": false}}"#;
        let decoded: Page<Company> = raw(odd).decode(|| "/v1/companies".into()).expect("a page");
        let whole: Page<Company> = serde_json::from_str(odd).expect("a page");
        assert_eq!(decoded, whole, "both ways of decoding a page with odd elements agree");
        assert_eq!(decoded.data.len(), 1);
        let positions: Vec<usize> = decoded.undecodable.iter().map(|u| u.position).collect();
        assert_eq!(positions, [0, 1]);

        let broken = raw(r#"{"data": {"id": 1}, "pagination": {"hasMore": false}}"#);
        let error = broken.decode::<Company>(|| "/v1/companies".into()).expect_err("data is not an array");
        assert!(matches!(&error, Error::Decode(e) if e.endpoint() == "/v1/companies"), "{error:?}");
    }
}
