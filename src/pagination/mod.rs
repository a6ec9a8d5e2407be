//! Cursor pagination (API Part 4.1): pages, cursors, and the streams that follow them.
//!
//! The rules, each enforced here:
//! - a listing ends only on `hasMore: false`; an empty page with `hasMore: true` continues
//!   (up to a bound, then an error);
//! - `hasMore: true` without a cursor, or with a cursor this listing already used, is an error;
//! - every page request repeats limit, sort and filters with the cursor;
//! - `max_items` stops early and never requests past the cap;
//! - a failed page ends the stream with that error, after every item already received;
//! - with prefetch on, page k+1 is requested as soon as page k arrives.
//!
//! Layout: [`page`] (a page, its cursor, and the one way a page is read), [`guards`] (the
//! cursor rules, apart from any request), [`pager`] (the state of a listing: what it delivered,
//! where it would resume, the page in flight) and [`stream`] (the streams).

mod guards;
mod page;
mod pager;
mod stream;

use std::borrow::Cow;
use std::sync::Arc;

pub use page::{Cursor, OnUndecodable, Page};
pub use stream::{ItemStream, PageStream};

use crate::Error;
use crate::error::CursorRejected;
use crate::error::ErrorCode;
use crate::limits::DEFAULT_LIMIT;
use crate::pipeline::Call;

/// Empty pages with `hasMore: true` tolerated in a row, unless the listing says otherwise.
pub(crate) const DEFAULT_MAX_EMPTY_PAGES: u32 = 25;

/// The query of a listing, validated as it is built, and the request of its first page.
#[derive(Debug, Clone)]
pub(crate) struct Query {
    /// The endpoint, its preview label and retry policy.
    pub(crate) call: Call,
    pub(crate) limit: Option<u32>,
    pub(crate) sort: Option<String>,
    pub(crate) filters: Vec<(Cow<'static, str>, String)>,
    pub(crate) cursor: Option<Cursor>,
    pub(crate) max_items: Option<u64>,
    pub(crate) max_empty_pages: u32,
    pub(crate) on_undecodable: OnUndecodable,
}

impl Query {
    pub(crate) fn new(call: Call) -> Query {
        Query {
            call,
            limit: None,
            sort: None,
            filters: Vec::new(),
            cursor: None,
            max_items: None,
            max_empty_pages: DEFAULT_MAX_EMPTY_PAGES,
            on_undecodable: OnUndecodable::default(),
        }
    }

    /// The request for one page: limit, sort, filters, then the cursor. Every page repeats
    /// all of them (API Part 4.1 rule 4).
    pub(crate) fn page(&self, limit: Option<u32>, cursor: Option<&Cursor>) -> Call {
        let mut call = self.call.clone();
        let limit = limit.map(|limit| (Cow::Borrowed("limit"), limit.to_string()));
        let sort = self.sort.clone().map(|sort| (Cow::Borrowed("sort"), sort));
        let cursor = cursor.map(|cursor| (Cow::Borrowed("cursor"), cursor.to_string()));
        call.query.extend(limit.into_iter().chain(sort).chain(self.filters.iter().cloned()).chain(cursor));
        call
    }

    /// Items still to deliver under `max_items`, after `delivered`.
    pub(crate) fn remaining(&self, delivered: u64) -> Option<u64> {
        self.max_items.map(|max| max.saturating_sub(delivered))
    }

    /// The page size of the next request: the listing's `limit`, else `default` (`None`: the
    /// server's), never more than the items still to deliver. The one rule for `send`, `pages`
    /// and `stream`.
    pub(crate) fn page_limit(&self, default: Option<u32>, delivered: u64) -> Option<u32> {
        let limit = self.limit.or(default);
        let Some(remaining) = self.remaining(delivered) else { return limit };
        Some(limit.unwrap_or(DEFAULT_LIMIT).min(u32::try_from(remaining).unwrap_or(u32::MAX)))
    }
}

/// An error answer to a page request: a cursor the server refused (`invalid_cursor`,
/// `cursor_expired`) is [`Error::CursorRejected`] when the request carried one, saying how many
/// items the listing had delivered.
pub(crate) fn cursor_rejected(error: Error, sent_cursor: bool, delivered: u64) -> Error {
    match error {
        Error::Api(response) if sent_cursor => match response.code() {
            Some(code @ (ErrorCode::CursorExpired | ErrorCode::InvalidCursor)) => {
                Error::CursorRejected(Arc::new(CursorRejected { code: code.clone(), delivered, response }))
            }
            _ => Error::Api(response),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::MAX_LIMIT;

    fn query(limit: Option<u32>, max_items: Option<u64>) -> Query {
        let root = url::Url::parse("https://api.example.com/v1/").expect("static url");
        let call = Call::new(http::Method::GET, &root, &"companies".into()).expect("a valid path");
        Query { limit, max_items, ..Query::new(call) }
    }

    #[test]
    fn a_page_request_is_limit_sort_filters_then_the_cursor() {
        let mut listing = query(Some(5), None);
        listing.sort = Some("-name".to_owned());
        listing.filters.push((Cow::Borrowed("status"), "active".to_owned()));
        let pairs = |call: Call| call.query.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>();
        let next = listing.page(Some(5), Some(&Cursor::from("c2")));
        assert_eq!(pairs(next), ["limit=5", "sort=-name", "status=active", "cursor=c2"]);
        assert_eq!(pairs(listing.page(None, None)), ["sort=-name", "status=active"]);
    }

    #[test]
    fn one_page_size_rule() {
        // `send` leaves the size to the server unless a limit or a cap says otherwise.
        assert_eq!(query(None, None).page_limit(None, 0), None);
        assert_eq!(query(Some(50), None).page_limit(None, 0), Some(50));
        assert_eq!(query(None, Some(7)).page_limit(None, 0), Some(7));
        assert_eq!(query(None, Some(700)).page_limit(None, 0), Some(20));
        // Streams ask for full pages, and never past the cap.
        assert_eq!(query(None, None).page_limit(Some(MAX_LIMIT), 300), Some(100));
        assert_eq!(query(Some(30), Some(250)).page_limit(Some(MAX_LIMIT), 240), Some(10));
        assert_eq!(query(None, Some(250)).page_limit(Some(MAX_LIMIT), 200), Some(50));
        assert_eq!(query(None, Some(5)).remaining(5), Some(0));
        assert_eq!(query(None, None).remaining(5), None);
    }
}
