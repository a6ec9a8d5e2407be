//! Errors of listings: broken pagination, rejected cursors, elements that are not records.

use std::fmt;

use super::{ApiError, Endpoint, ErrorCode};
use crate::limits::MAX_CURSOR_BYTES;

/// How a server broke the pagination contract.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PaginationError {
    /// `hasMore` was true but no `nextCursor` was given.
    #[non_exhaustive]
    #[error("page {page} has `hasMore: true` but no `nextCursor`")]
    MissingCursor {
        /// Pages received so far in this listing, this one included.
        page: u64,
    },
    /// The server returned a cursor it had already returned in this listing.
    #[non_exhaustive]
    #[error("page {page} repeats a cursor already seen in this listing")]
    RepeatedCursor {
        /// Pages received so far in this listing, this one included.
        page: u64,
    },
    /// Too many empty pages in a row with `hasMore` true.
    #[non_exhaustive]
    #[error("{count} empty pages in a row with `hasMore: true`")]
    TooManyEmptyPages {
        /// How many empty pages came in a row.
        count: u32,
    },
    /// The server sent a `nextCursor` longer than
    /// [`MAX_CURSOR_BYTES`](crate::limits::MAX_CURSOR_BYTES).
    #[non_exhaustive]
    #[error("page {page} has a `nextCursor` of {bytes} bytes, more than the {MAX_CURSOR_BYTES} allowed")]
    CursorTooLong {
        /// Pages received so far in this listing, this one included.
        page: u64,
        /// The cursor's length in bytes.
        bytes: usize,
    },
}

/// The cursor of a listing expired or was rejected: the context of
/// [`Error::CursorRejected`](super::Error::CursorRejected).
#[derive(Debug, thiserror::Error)]
#[error(
    "cursor rejected by the server ({code}) after {delivered} items; restart the listing from the first page"
)]
pub struct CursorRejected {
    pub(crate) code: ErrorCode,
    pub(crate) delivered: u64,
    pub(crate) response: ApiError,
}

impl CursorRejected {
    /// The server's code: `cursor_expired` or `invalid_cursor`.
    pub fn code(&self) -> &ErrorCode {
        &self.code
    }

    /// How many items this listing had delivered before the failure.
    pub fn items_delivered(&self) -> u64 {
        self.delivered
    }

    /// The full error response.
    pub fn response(&self) -> &ApiError {
        &self.response
    }
}

/// An element of a page's `data` that is not a record: not a JSON object, or an object without
/// a field the model requires (a company's `id` or `name`): where it was, an excerpt and why.
///
/// Found in [`Page::undecodable`](crate::Page::undecodable); with [`OnUndecodable::Fail`](crate::OnUndecodable::Fail) it ends the listing as
/// [`Error::Undecodable`](super::Error::Undecodable).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Undecodable {
    /// The page it came on, counted from 1 in its listing (1 for [`List::send`](crate::List::send)).
    pub page: u64,
    /// Its index in that page's `data` array, from 0.
    pub position: usize,
    /// The element's JSON as the server sent it, up to 1 KiB, control characters escaped.
    pub raw: String,
    /// Why it could not be read, e.g. ``missing field `id` ``.
    pub reason: String,
}

impl fmt::Display for Undecodable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Undecodable { page, position, raw, reason } = self;
        write!(f, "element {position} of page {page} could not be read ({reason}): {raw}")
    }
}

/// A listing ended on an element that is not a record: the context of
/// [`Error::Undecodable`](super::Error::Undecodable).
#[derive(Debug, thiserror::Error)]
#[error("{endpoint}: {item}")]
pub struct UndecodableError {
    pub(crate) endpoint: Endpoint,
    pub(crate) item: Undecodable,
}

impl UndecodableError {
    /// The request path (no query string).
    pub fn endpoint(&self) -> &str {
        &self.endpoint.path
    }

    /// The element: page, position, raw JSON and why.
    pub fn item(&self) -> &Undecodable {
        &self.item
    }
}
