//! The rules every page of a listing must keep (API Part 4.1), apart from any request: a
//! listing ends only on `hasMore: false`; `hasMore: true` needs a cursor this listing has not
//! used, no longer than [`MAX_CURSOR_BYTES`]; empty pages with `hasMore: true` continue, up to
//! a bound.

use std::collections::HashSet;
use std::hash::{BuildHasher, RandomState};

use super::Cursor;
use crate::error::PaginationError;
use crate::limits::MAX_CURSOR_BYTES;

/// Where a listing is in its walk over cursors.
#[derive(Default)]
pub(super) struct Walk {
    /// The cursor of the next page to request; `None` before the first page.
    cursor: Option<Cursor>,
    /// The cursors the listing has used, as fixed-size digests: two SipHash values under the
    /// random `keys`, so memory grows by 16 bytes per page whatever the cursors' length, and a
    /// server that does not know the keys cannot make two cursors collide.
    seen: HashSet<[u64; 2]>,
    keys: [RandomState; 2],
    empty_in_a_row: u32,
    max_empty_pages: u32,
}

impl Walk {
    /// A walk from `start` (the first page when `None`), tolerating `max_empty_pages` empty
    /// pages with `hasMore: true` in a row.
    pub(super) fn new(start: Option<Cursor>, max_empty_pages: u32) -> Self {
        Walk { cursor: start, max_empty_pages, ..Walk::default() }
    }

    /// The cursor of the next page to request.
    pub(super) fn cursor(&self) -> Option<&Cursor> {
        self.cursor.as_ref()
    }

    /// Takes in what page `number` said (`has_more`, `next_cursor`, and whether it held no
    /// items): true when a next page follows (its cursor is now [`cursor`](Walk::cursor)),
    /// false at the end, or the rule the page broke. An empty `nextCursor` arrives here as
    /// `None`: the page decoder reads it as no cursor.
    pub(super) fn advance(
        &mut self,
        number: u64,
        has_more: bool,
        next_cursor: Option<&Cursor>,
        empty: bool,
    ) -> Result<bool, PaginationError> {
        if !has_more {
            return Ok(false);
        }
        let next = next_cursor.ok_or(PaginationError::MissingCursor { page: number })?;
        if next.as_str().len() > MAX_CURSOR_BYTES {
            return Err(PaginationError::CursorTooLong { page: number, bytes: next.as_str().len() });
        }
        let digest = self.keys.each_ref().map(|key| key.hash_one(next.as_str()));
        if self.cursor.as_ref() == Some(next) || !self.seen.insert(digest) {
            return Err(PaginationError::RepeatedCursor { page: number });
        }
        if empty {
            self.empty_in_a_row += 1;
            if self.empty_in_a_row > self.max_empty_pages {
                return Err(PaginationError::TooManyEmptyPages { count: self.empty_in_a_row });
            }
        } else {
            self.empty_in_a_row = 0;
        }
        self.cursor = Some(next.clone());
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cursor(text: &str) -> Cursor {
        Cursor::from(text)
    }

    #[test]
    fn the_last_page_ends_the_walk_whatever_its_cursor() {
        let mut walk = Walk::new(None, 25);
        assert_eq!(walk.advance(1, false, Some(&cursor("c1")), false), Ok(false));
        assert_eq!(walk.advance(1, false, None, true), Ok(false));
        assert_eq!(walk.cursor(), None);
    }

    #[test]
    fn more_without_a_cursor_is_refused() {
        let mut walk = Walk::new(None, 25);
        assert_eq!(walk.advance(1, true, None, false), Err(PaginationError::MissingCursor { page: 1 }));
    }

    #[test]
    fn a_cursor_used_before_is_refused() {
        let mut walk = Walk::new(Some(cursor("start")), 25);
        assert_eq!(
            walk.advance(1, true, Some(&cursor("start")), false),
            Err(PaginationError::RepeatedCursor { page: 1 })
        );
        let mut walk = Walk::new(None, 25);
        assert_eq!(walk.advance(1, true, Some(&cursor("c1")), false), Ok(true));
        assert_eq!(walk.advance(2, true, Some(&cursor("c2")), false), Ok(true));
        assert_eq!(walk.cursor(), Some(&cursor("c2")));
        assert_eq!(
            walk.advance(3, true, Some(&cursor("c1")), false),
            Err(PaginationError::RepeatedCursor { page: 3 })
        );
    }

    #[test]
    fn an_oversized_cursor_is_refused() {
        let mut walk = Walk::new(None, 25);
        let long = cursor(&"c".repeat(MAX_CURSOR_BYTES + 1));
        assert_eq!(
            walk.advance(1, true, Some(&long), false),
            Err(PaginationError::CursorTooLong { page: 1, bytes: MAX_CURSOR_BYTES + 1 })
        );
        assert_eq!(walk.advance(1, true, Some(&cursor(&"c".repeat(MAX_CURSOR_BYTES))), false), Ok(true));
    }

    #[test]
    fn empty_pages_continue_up_to_the_bound_and_a_full_page_resets_the_count() {
        let mut walk = Walk::new(None, 2);
        assert_eq!(walk.advance(1, true, Some(&cursor("c1")), true), Ok(true));
        assert_eq!(walk.advance(2, true, Some(&cursor("c2")), true), Ok(true));
        assert_eq!(walk.advance(3, true, Some(&cursor("c3")), false), Ok(true));
        assert_eq!(walk.advance(4, true, Some(&cursor("c4")), true), Ok(true));
        assert_eq!(walk.advance(5, true, Some(&cursor("c5")), true), Ok(true));
        assert_eq!(
            walk.advance(6, true, Some(&cursor("c6")), true),
            Err(PaginationError::TooManyEmptyPages { count: 3 })
        );
    }

    #[test]
    fn seen_cursors_are_digests_that_tell_cursors_apart() {
        let mut walk = Walk::new(None, 25);
        for n in 1..=10_000 {
            assert_eq!(walk.advance(n, true, Some(&cursor(&format!("cursor-{n}"))), false), Ok(true), "{n}");
        }
        let again = walk.advance(10_001, true, Some(&cursor("cursor-42")), false);
        assert_eq!(again, Err(PaginationError::RepeatedCursor { page: 10_001 }));
        assert_eq!(walk.seen.len(), 10_000);
    }
}
