//! The query of a listing: page size, sort, filters, starting cursor, cap; and the one rule
//! for the size of each page request.

use std::borrow::Cow;

use super::Cursor;
use super::envelope::OnUndecodable;
use crate::limits::DEFAULT_LIMIT;
use crate::model::Sort;
use crate::{Preview, RetryPolicy};

/// Empty pages with `hasMore: true` tolerated in a row, unless the listing says otherwise.
pub(super) const DEFAULT_MAX_EMPTY_PAGES: u32 = 25;

/// The query of a listing, validated as it is built.
#[derive(Debug, Clone, Default)]
pub(crate) struct ListParams {
    pub(crate) limit: Option<u32>,
    pub(crate) sort: Option<Sort>,
    pub(crate) filters: Vec<(Cow<'static, str>, String)>,
    pub(crate) cursor: Option<Cursor>,
    pub(crate) max_items: Option<u64>,
    pub(crate) max_empty_pages: Option<u32>,
    pub(crate) preview: Option<Preview>,
    pub(crate) retry: Option<RetryPolicy>,
    pub(crate) on_undecodable: OnUndecodable,
}

impl ListParams {
    /// Query pairs for one page request: limit, sort, filters, then the cursor. Every page
    /// repeats all of them (API Part 4.1 rule 4).
    pub(crate) fn pairs(
        &self,
        limit: Option<u32>,
        cursor: Option<&Cursor>,
    ) -> Vec<(Cow<'static, str>, String)> {
        let mut pairs = Vec::with_capacity(3 + self.filters.len());
        if let Some(limit) = limit {
            pairs.push((Cow::Borrowed("limit"), limit.to_string()));
        }
        if let Some(sort) = &self.sort {
            pairs.push((Cow::Borrowed("sort"), sort.to_string()));
        }
        pairs.extend(self.filters.iter().cloned());
        if let Some(cursor) = cursor {
            pairs.push((Cow::Borrowed("cursor"), cursor.as_str().to_owned()));
        }
        pairs
    }
}

impl ListParams {
    /// Items still to deliver under `max_items`, after `delivered`.
    pub(crate) fn remaining(&self, delivered: u64) -> Option<u64> {
        self.max_items.map(|max| max.saturating_sub(delivered))
    }

    /// The page size of the next request: the listing's `limit`, else `default` (`None`: the
    /// server's), never more than the items still to deliver. The one rule for `send`, `pages`
    /// and `stream`; a listing with nothing left to deliver sends no request at all.
    pub(crate) fn page_limit(&self, default: Option<u32>, delivered: u64) -> Option<u32> {
        let limit = self.limit.or(default);
        match self.remaining(delivered) {
            Some(remaining) => {
                let remaining = u32::try_from(remaining).unwrap_or(u32::MAX);
                Some(limit.unwrap_or(DEFAULT_LIMIT).min(remaining))
            }
            None => limit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::MAX_LIMIT;

    #[test]
    fn one_page_size_rule() {
        let query = |limit: Option<u32>, max_items: Option<u64>| ListParams {
            limit,
            max_items,
            ..ListParams::default()
        };
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
