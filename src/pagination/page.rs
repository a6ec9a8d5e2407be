//! A page of a list endpoint, the cursor to the next one, and the one way a page is read.

use std::fmt;
use std::sync::Arc;

use serde::de::{DeserializeOwned, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::deprecation::DeprecationNotice;
use crate::error::{Undecodable, UndecodableError};
use crate::pipeline::{Call, Pipeline, Reply};
use crate::retry::CallStats;
use crate::{Error, text};

/// The elements of one page kept as [`Undecodable`]: the first ones; the rest are counted.
pub(crate) const KEPT_UNDECODABLE: usize = 5;

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

/// One page of a listing: the page envelope of API Part 2.
///
/// ```
/// use business_records::{Company, Page};
/// let page = Page::<Company>::from_json(
///     br#"{"data": [{"id": "cmp_1", "name": "Acme"}, 7],
///          "pagination": {"hasMore": true, "nextCursor": "c2", "totalCount": 40}}"#,
/// )?;
/// assert_eq!((page.data.len(), page.undecodable_total), (1, 1));
/// assert_eq!(page.next_cursor.map(|c| c.to_string()).as_deref(), Some("c2"));
///
/// // Built in code, for tests of your own.
/// let mut mine = Page::new(vec![Company::new("cmp_1", "Acme")]);
/// mine.has_more = true;
/// mine.next_cursor = Some("c2".into());
/// # Ok::<(), business_records::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Page<T> {
    /// The results of this page; may be empty even when more follow.
    pub data: Vec<T>,
    /// True when further results exist.
    pub has_more: bool,
    /// The cursor of the next page, when `has_more`.
    pub next_cursor: Option<Cursor>,
    /// Total number of results, when the server says (a value that is not a count from 0 to
    /// 2^53 is left out).
    pub total_count: Option<u64>,
    /// Deprecation headers sent with this page.
    pub deprecation: Option<DeprecationNotice>,
    /// The first elements of `data` that are not a `T` (at most five), with their positions,
    /// an excerpt of their JSON and why. They are not in [`data`](Page::data).
    pub undecodable: Vec<Undecodable>,
    /// How many elements of `data` are not a `T`, the ones in
    /// [`undecodable`](Page::undecodable) included.
    pub undecodable_total: u64,
}

impl<T> Page<T> {
    /// A last page holding `data`.
    pub fn new(data: Vec<T>) -> Self {
        Page {
            data,
            has_more: false,
            next_cursor: None,
            total_count: None,
            deprecation: None,
            undecodable: Vec::new(),
            undecodable_total: 0,
        }
    }

    /// Keeps at most `max` items, when there is a cap; a page cut short reports `has_more` as
    /// the server sent it.
    pub(crate) fn truncated(mut self, max: Option<u64>) -> Self {
        if let Some(max) = max {
            self.data.truncate(usize::try_from(max).unwrap_or(usize::MAX));
        }
        self
    }
}

impl<T: DeserializeOwned> Page<T> {
    /// Reads a page envelope (API Part 2), as every listing reads its pages: each element of
    /// `data` that is not a `T` is left out and counted, the first few kept in
    /// [`undecodable`](Page::undecodable) with an excerpt, so memory stays within the body's
    /// size whatever the page holds.
    ///
    /// # Errors
    ///
    /// [`Error::Decode`] when the body is not a page envelope (no `data` array, no
    /// `pagination.hasMore`, not JSON, not UTF-8); the error holds the parser's reason and
    /// position (cut to 1 KiB), never the whole body.
    pub fn from_json(body: &[u8]) -> Result<Page<T>, Error> {
        Self::read(body, "page")
    }

    /// Sends `call` for page `number` of a listing and reads it: the one way every page
    /// arrives, [`List::send`](crate::List::send)'s and the streams' (a prefetched page in its
    /// own task). With [`OnUndecodable::Fail`], the first element that is not a `T` is the
    /// listing's error.
    pub(crate) async fn fetch(
        pipeline: &Pipeline,
        call: &Call,
        stats: Option<&CallStats>,
        number: u64,
        on: OnUndecodable,
    ) -> Result<Page<T>, Error> {
        let Reply { body, deprecation } = pipeline.send(call, stats).await?;
        let endpoint = call.url.path();
        let mut page = Page::read(&body, endpoint)?;
        page.deprecation = deprecation;
        page.undecodable.iter_mut().for_each(|item| item.page = number);
        if let Some(first) = page.undecodable.first() {
            tracing::warn!(endpoint, more = page.undecodable_total - 1, "{first}");
            if on == OnUndecodable::Fail {
                let error = UndecodableError { endpoint: endpoint.into(), item: first.clone() };
                return Err(Error::Undecodable(Arc::new(error)));
            }
        }
        Ok(page)
    }

    /// The page in `body`, an answer of `endpoint`, read in one pass: each element of `data` is
    /// taken as its JSON text and read as a `T` on its own (see [`Elements`]).
    fn read(body: &[u8], endpoint: &str) -> Result<Page<T>, Error> {
        let Envelope { data: Elements(mut page), pagination } = crate::wire::decode(endpoint, body)?;
        page.has_more = pagination.has_more;
        let cursor = pagination.next_cursor.as_ref().and_then(Value::as_str).filter(|c| !c.is_empty());
        page.next_cursor = cursor.map(Cursor::from);
        page.total_count = pagination.total_count;
        Ok(page)
    }
}

/// What a listing does with an element of a page that is not a record; see
/// [`List::on_undecodable`](crate::List::on_undecodable).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OnUndecodable {
    /// Leave it out of the items, report it, and go on (the default).
    #[default]
    Skip,
    /// End the listing with [`Error::Undecodable`].
    Fail,
}

/// The page envelope as it arrives.
#[derive(Deserialize)]
#[serde(bound = "T: DeserializeOwned")]
struct Envelope<T> {
    data: Elements<T>,
    pagination: Pagination,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Pagination {
    has_more: bool,
    /// Any value, or none: one that is not a string is no cursor.
    next_cursor: Option<Value>,
    #[serde(default, deserialize_with = "crate::bounds::count")]
    total_count: Option<u64>,
}

/// `data`, read as a sequence of raw values into a page's items: each element is borrowed from
/// the body as JSON text and read as a `T` on its own, so one that is not a `T` costs no more
/// than a count (the first [`KEPT_UNDECODABLE`] kept with an excerpt), whatever the page holds.
struct Elements<T>(Page<T>);

impl<'de, T: DeserializeOwned> Deserialize<'de> for Elements<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(Elements(Page::new(Vec::new())))
    }
}

/// The visitor of `data` is the page it fills.
impl<'de, T: DeserializeOwned> Visitor<'de> for Elements<T> {
    type Value = Elements<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array")
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Elements<T>, A::Error> {
        let page = &mut self.0;
        for position in 0.. {
            let Some(raw) = seq.next_element::<&RawValue>()? else { break };
            match serde_json::from_str::<T>(raw.get()) {
                Ok(item) => page.data.push(item),
                Err(error) => {
                    page.undecodable_total += 1;
                    if page.undecodable.len() < KEPT_UNDECODABLE {
                        let reason = text::server_text(&reason(&error));
                        let raw = text::server_text(raw.get());
                        page.undecodable.push(Undecodable { page: 1, position, raw, reason });
                    }
                }
            }
        }
        Ok(self)
    }
}

/// Why an element is not a `T`: the parser's message, without its position in the element.
fn reason(error: &serde_json::Error) -> String {
    let message = error.to_string();
    message.rsplit_once(" at line ").map_or(&*message, |(reason, _)| reason).to_owned()
}

#[cfg(test)]
mod tests;
