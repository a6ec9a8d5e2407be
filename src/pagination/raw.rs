//! How every page arrives: its envelope read first (the pagination fields), its items decoded
//! after.
//!
//! A listing reads a page's cursor, applies the cursor rules and starts the next request, and
//! only then decodes the items, so that decoding overlaps the request (with prefetch on). A
//! single page ([`List::send`](crate::List::send)) and a page without prefetch go the same way.

use std::ops::Range;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::envelope::{Data, OnUndecodable, PaginationMeta};
use super::{Cursor, Page};
use crate::Error;
use crate::deprecation::DeprecationNotice;
use crate::error::{DecodeError, UndecodableError};
use crate::model::Resource;
use crate::pipeline::ApiResponse;

/// A page as a listing receives it: the pagination fields decoded and the items still JSON, so
/// that the next page can be requested before this one's items are decoded.
pub(crate) struct RawPage {
    /// The body, checked to be UTF-8 once: decoding from text skips serde_json's check of each
    /// string.
    body: String,
    /// Where `data` is in `body`.
    items: Range<usize>,
    pagination: PaginationMeta,
    deprecation: Option<DeprecationNotice>,
}

/// The page envelope on the wire, items left undecoded.
#[derive(Deserialize)]
struct RawEnvelope<'a> {
    #[serde(borrow)]
    data: &'a RawValue,
    pagination: PaginationMeta,
}

impl RawPage {
    /// Reads the envelope of a page of `endpoint`.
    pub(crate) fn read(endpoint: &str, response: ApiResponse) -> Result<RawPage, Error> {
        let ApiResponse { body, deprecation } = response;
        let body = String::from_utf8(body).map_err(|e| Error::Decode(DecodeError::new(endpoint, e)))?;
        let envelope: RawEnvelope<'_> =
            serde_json::from_str(&body).map_err(|e| Error::Decode(DecodeError::new(endpoint, e)))?;
        // `data` is borrowed from `body`: its place there, to decode it later without a copy.
        let start = (envelope.data.get().as_ptr() as usize).saturating_sub(body.as_ptr() as usize);
        let items = start..start + envelope.data.get().len();
        let pagination = envelope.pagination;
        Ok(RawPage { body, items, pagination, deprecation })
    }

    /// True when more pages follow.
    pub(crate) fn has_more(&self) -> bool {
        self.pagination.has_more
    }

    /// The cursor of the next page, as sent.
    pub(crate) fn next_cursor(&self) -> Option<&Cursor> {
        self.pagination.next_cursor.as_ref()
    }

    /// True when `data` is an empty array.
    pub(crate) fn is_empty(&self) -> bool {
        let json = self.body.get(self.items.clone()).unwrap_or_default().trim_ascii();
        json.strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'))
            .is_some_and(|inner| inner.trim_ascii().is_empty())
    }

    /// Decodes the items, page number `number` of a listing of `endpoint`: element by element,
    /// an element that is not a record set aside (numbered, a few of them logged), or with
    /// [`OnUndecodable::Fail`] the listing's error.
    pub(crate) fn decode<T: Resource>(
        self,
        number: u64,
        endpoint: &str,
        on_undecodable: OnUndecodable,
    ) -> Result<Page<T>, Error> {
        let items = self.body.get(self.items).unwrap_or_default();
        let data: Data<T> =
            serde_json::from_str(items).map_err(|e| Error::Decode(DecodeError::new(endpoint, e)))?;
        let mut page = Page { deprecation: self.deprecation, ..self.pagination.into_page(data) };
        settle_undecodable(&mut page, number, endpoint, on_undecodable)?;
        Ok(page)
    }
}

/// Numbers the elements of page `number` that are not records, warns about a few of them, and
/// with [`OnUndecodable::Fail`] turns the first into the listing's error.
fn settle_undecodable<T>(
    page: &mut Page<T>,
    number: u64,
    endpoint: &str,
    on_undecodable: OnUndecodable,
) -> Result<(), Error> {
    for item in &mut page.undecodable {
        item.page = number;
    }
    // A few warnings per page: a page of thousands of odd elements must not flood the log.
    for item in page.undecodable.iter().take(3) {
        tracing::warn!(endpoint, "{item}");
    }
    if page.undecodable.len() > 3 {
        let more = page.undecodable.len() - 3;
        tracing::warn!(endpoint, "{more} more elements of page {number} are not records");
    }
    if on_undecodable == OnUndecodable::Fail
        && let Some(item) = page.undecodable.drain(..).next()
    {
        return Err(Error::Undecodable(UndecodableError::new(endpoint, item)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Company;

    fn raw(body: &str) -> RawPage {
        let response = ApiResponse { body: body.as_bytes().to_vec(), deprecation: None };
        RawPage::read("/v1/companies", response).expect("an envelope")
    }

    fn decode(page: RawPage) -> Result<Page<Company>, Error> {
        page.decode(1, "/v1/companies", OnUndecodable::Skip)
    }

    #[test]
    fn emptiness_and_items_read_after_the_cursor() {
        for data in ["[]", "[ ]", "[\n ]"] {
            let page =
                raw(&format!(r#"{{"data": {data}, "pagination": {{"hasMore": true, "nextCursor": "c"}}}}"#));
            assert!(page.is_empty(), "{data}");
            assert_eq!(page.next_cursor().map(Cursor::as_str), Some("c"));
        }
        let body = r#"{"data": [{"id": "cmp_1", "name": "A", "status": "active",
            "createdAt": "2024-01-02T03:04:05Z", "updatedAt": "2024-01-02T03:04:05Z", "tier": 2}],
            "pagination": {"hasMore": false, "nextCursor": "", "totalCount": 1}}"#;
        let page = raw(body);
        assert!(!page.is_empty() && !page.has_more());
        let decoded = decode(page).expect("a page");
        let whole: Page<Company> = serde_json::from_str(body).expect("a page");
        assert_eq!(decoded, whole, "the envelope's decoding and Page's own agree");

        // An element that is not a record is set aside, as in a page decoded whole.
        let odd =
            r#"{"data": [{"id": 1}, 7, {"id": "cmp_2", "name": "B"}], "pagination": {"hasMore": false}}"#;
        let decoded = decode(raw(odd)).expect("a page");
        let mut whole: Page<Company> = serde_json::from_str(odd).expect("a page");
        whole.undecodable.iter_mut().for_each(|u| u.page = 1);
        assert_eq!(decoded, whole, "both ways of decoding a page with odd elements agree");
        assert_eq!(decoded.data.len(), 1);
        let positions: Vec<(u64, usize)> = decoded.undecodable.iter().map(|u| (u.page, u.position)).collect();
        assert_eq!(positions, [(1, 0), (1, 1)]);
        let failed = raw(odd).decode::<Company>(2, "/v1/companies", OnUndecodable::Fail);
        assert!(matches!(&failed, Err(Error::Undecodable(_))), "{failed:?}");

        let broken = raw(r#"{"data": {"id": 1}, "pagination": {"hasMore": false}}"#);
        let error = decode(broken).expect_err("data is not an array");
        assert!(matches!(&error, Error::Decode(e) if e.endpoint() == "/v1/companies"), "{error:?}");
        let response = ApiResponse { body: b"{\"data\": []}".to_vec(), deprecation: None };
        assert!(matches!(RawPage::read("/v1/companies", response), Err(Error::Decode(_))));
        let body = b"{\"data\": [{\"id\": \"cmp_\xff\"}], \"pagination\": {\"hasMore\": false}}".to_vec();
        let response = ApiResponse { body, deprecation: None };
        assert!(matches!(RawPage::read("/v1/companies", response), Err(Error::Decode(_))), "not UTF-8");
    }
}
