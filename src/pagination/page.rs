//! A page of a listing, and the cursor that leads to the next one.

use std::fmt;

use serde::Deserialize;

use super::envelope::Envelope;
use crate::deprecation::DeprecationNotice;
use crate::error::Undecodable;
use crate::model::Resource;

/// An opaque pagination cursor (`pagination.nextCursor`), passed back unchanged.
///
/// Cursors are for immediate use: they may expire and are bound to the query that produced
/// them (API Part 4.1 rule 3).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, Deserialize)]
#[serde(transparent)]
pub struct Cursor(String);

impl Cursor {
    /// The cursor text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<String> for Cursor {
    fn from(s: String) -> Self {
        Cursor(s)
    }
}

impl From<&str> for Cursor {
    fn from(s: &str) -> Self {
        Cursor(s.to_owned())
    }
}

impl From<&Cursor> for Cursor {
    fn from(c: &Cursor) -> Self {
        c.clone()
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.0)
    }
}

/// One page of a listing.
///
/// Deserializes from the wire envelope (API Part 2), so recorded responses can be decoded
/// directly:
///
/// ```
/// use business_records::{Company, Page};
/// let page: Page<Company> = serde_json::from_str(
///     r#"{"data": [], "pagination": {"hasMore": true, "nextCursor": "c2", "totalCount": 40}}"#,
/// )?;
/// assert!(page.has_more && page.data.is_empty());
/// assert_eq!(page.next_cursor.map(|c| c.to_string()).as_deref(), Some("c2"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(from = "Envelope<T>", bound(deserialize = "T: Resource"))]
#[non_exhaustive]
pub struct Page<T> {
    /// The results of this page; may be empty even when more follow.
    pub data: Vec<T>,
    /// The elements of the page's `data` that are not records (not objects, or objects
    /// without a required field), with their positions and raw JSON. They are not in
    /// [`data`](Page::data).
    pub undecodable: Vec<Undecodable>,
    /// True when further results exist.
    pub has_more: bool,
    /// The cursor of the next page, when `has_more`.
    pub next_cursor: Option<Cursor>,
    /// Total number of results, when the server says.
    pub total_count: Option<u64>,
    /// Deprecation headers sent with this page.
    pub deprecation: Option<DeprecationNotice>,
}

/// The page's items, in order.
///
/// ```
/// use business_records::{Company, Page};
/// let page: Page<Company> = serde_json::from_str(
///     r#"{"data": [{"id": "cmp_1", "name": "Acme"}], "pagination": {"hasMore": false}}"#,
/// )?;
/// let names: Vec<String> = page.into_iter().map(|company| company.name).collect();
/// assert_eq!(names, ["Acme"]);
/// # Ok::<(), serde_json::Error>(())
/// ```
impl<T> IntoIterator for Page<T> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;

    fn into_iter(self) -> Self::IntoIter {
        self.data.into_iter()
    }
}

impl<'a, T> IntoIterator for &'a Page<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.data.iter()
    }
}

impl<T> Page<T> {
    /// Keeps at most `max` items; a page cut short reports `has_more` as the server sent it.
    pub(crate) fn truncated(mut self, max: u64) -> Self {
        let max = usize::try_from(max).unwrap_or(usize::MAX);
        self.data.truncate(max);
        self
    }
}
