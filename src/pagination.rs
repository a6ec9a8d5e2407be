//! Cursor pagination (spec Part 4.1): pages, cursors, and the streams that follow them.
//!
//! The rules, each enforced here:
//! - a listing ends only on `hasMore: false`; an empty page with `hasMore: true` continues
//!   (up to a bound, then an error);
//! - `hasMore: true` without a cursor, or with a cursor this listing already used, is an error;
//! - every page request repeats limit, sort and filters with the cursor;
//! - `max_items` stops early and never requests past the cap;
//! - a failed page ends the stream with that error, after every item already received;
//! - with prefetch on, page k+1 is requested as soon as page k arrives.

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::hash::{BuildHasher, RandomState};
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use futures::Stream;
use futures::stream::{BoxStream, StreamExt};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use sync_wrapper::SyncWrapper;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::Instrument;

use crate::deprecation::DeprecationNotice;
use crate::envelope::Envelope;
pub use crate::envelope::OnUndecodable;
use crate::error::{CursorRejected, ErrorCode, HttpError, PaginationError, Undecodable, UndecodableError};
use crate::resources::{ListQuery, MAX_LIMIT, Resource};
use crate::transport::{ApiRequest, ApiResponse};
use crate::{Client, Error, telemetry};

mod raw;

use raw::{Arrived, RawPage, fetch_raw_page};

/// Empty pages with `hasMore: true` tolerated in a row, unless the listing says otherwise.
const DEFAULT_MAX_EMPTY_PAGES: u32 = 25;

pub(crate) use crate::limits::MAX_CURSOR_BYTES;

/// Undecodable elements an [`ItemStream`] keeps for [`ItemStream::take_undecodable`]; later
/// ones are still counted.
const KEPT_UNDECODABLE: usize = 1_000;

/// An opaque pagination cursor (`pagination.nextCursor`), passed back unchanged.
///
/// Cursors are for immediate use: they may expire and are bound to the query that produced
/// them (spec Part 4.1 rule 3).
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
/// Deserializes from the wire envelope (spec Part 2), so recorded responses can be decoded
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

/// Requests page number `number` (from 1) of a listing.
pub(crate) async fn fetch_page<T: Resource>(
    client: &Client,
    query: &ListQuery,
    limit: Option<u32>,
    cursor: Option<&Cursor>,
    retries: Option<&AtomicU64>,
    number: u64,
) -> Result<Page<T>, Error> {
    let response = request_page::<T, Page<T>>(client, query, limit, cursor, retries).await?;
    let mut page = Page { deprecation: response.deprecation, ..response.body };
    settle_undecodable(&mut page, number, client.inner().endpoint(T::PATH).path(), query.on_undecodable)?;
    Ok(page)
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

/// Sends the request for a page of `T` and decodes the body as `B`.
async fn request_page<T: Resource, B: DeserializeOwned>(
    client: &Client,
    query: &ListQuery,
    limit: Option<u32>,
    cursor: Option<&Cursor>,
    retries: Option<&AtomicU64>,
) -> Result<ApiResponse<B>, Error> {
    let inner = client.inner();
    let url = inner.endpoint(T::PATH);
    let pairs = query.pairs(limit, cursor);
    let call = ApiRequest {
        url: &url,
        query: &pairs,
        preview: query.preview.as_ref(),
        retry: query.retry.as_ref(),
        retries,
    };
    inner.transport.get_json::<B>(&call).await
}

type PageResult<T> = Result<Page<T>, Error>;

/// The state of one listing: where it is, what it has seen, and the page in flight.
struct Pager<T: Resource> {
    client: Client,
    query: ListQuery,
    page_size: u32,
    /// The cursor of the next page to request; `None` before the first page.
    cursor: Option<Cursor>,
    seen: SeenCursors,
    empty_in_a_row: u32,
    pages: u64,
    delivered: u64,
    finished: bool,
    prefetched: Option<JoinHandle<Result<RawPage, Error>>>,
    not_before: Option<Instant>,
    /// A contract violation found on a page whose items are delivered first.
    deferred: Option<Error>,
    /// Requests sent again after a transient failure, shared with the stream.
    retries: Arc<AtomicU64>,
    /// The listing's span: a child of the span current when the stream was made, and the parent
    /// of every request of the listing, prefetched or not.
    span: tracing::Span,
    items: PhantomData<fn() -> T>,
}

impl<T: Resource> Pager<T> {
    fn new(client: Client, query: ListQuery, retries: Arc<AtomicU64>) -> Self {
        let span = telemetry::listing_span(client.inner().endpoint(T::PATH).path());
        let page_size = query.limit.unwrap_or(MAX_LIMIT);
        let cursor = query.cursor.clone();
        Pager {
            client,
            query,
            page_size,
            cursor,
            seen: SeenCursors::default(),
            empty_in_a_row: 0,
            pages: 0,
            delivered: 0,
            finished: false,
            prefetched: None,
            not_before: None,
            deferred: None,
            retries,
            span,
            items: PhantomData,
        }
    }

    fn remaining(&self) -> Option<u64> {
        self.query.max_items.map(|max| max.saturating_sub(self.delivered))
    }

    /// The page size of the next request, and when it may start; moves the pacing on.
    fn next_request(&mut self) -> (u32, Option<Instant>) {
        let limit = match self.remaining() {
            Some(remaining) => self.page_size.min(u32::try_from(remaining).unwrap_or(u32::MAX)),
            None => self.page_size,
        };
        let not_before = self.not_before;
        if let Some(delay) = self.client.inner().page_delay {
            self.not_before = Some(Instant::now().max(not_before.unwrap_or_else(Instant::now)) + delay);
        }
        (limit, not_before)
    }

    /// Requests the page at `self.cursor` in the listing's span, and decodes it whole: with no
    /// request to overlap, one pass over the body is the fastest.
    async fn fetch(&mut self) -> Result<Arrived<T>, Error> {
        let (limit, not_before) = self.next_request();
        if let Some(at) = not_before {
            tokio::time::sleep_until(at).await;
        }
        let number = self.pages + 1;
        fetch_page(&self.client, &self.query, Some(limit), self.cursor.as_ref(), Some(&self.retries), number)
            .instrument(self.span.clone())
            .await
            .map(Arrived::Decoded)
    }

    /// Starts the request for the page at `self.cursor` as a task of its own, in the listing's
    /// span.
    fn prefetch(&mut self) -> JoinHandle<Result<RawPage, Error>> {
        let (limit, not_before) = self.next_request();
        let client = self.client.clone();
        let query = self.query.clone();
        let cursor = self.cursor.clone();
        let retries = Arc::clone(&self.retries);
        let request = async move {
            if let Some(at) = not_before {
                tokio::time::sleep_until(at).await;
            }
            fetch_raw_page::<T>(&client, &query, Some(limit), cursor.as_ref(), Some(&retries)).await
        };
        tokio::spawn(request.instrument(self.span.clone()))
    }

    async fn next_page(&mut self) -> Option<PageResult<T>> {
        if let Some(error) = self.deferred.take() {
            return Some(Err(error));
        }
        if self.finished {
            return None;
        }
        if self.remaining() == Some(0) {
            self.finished = true;
            return None;
        }
        let result = match self.prefetched.take() {
            Some(handle) => match handle.await {
                Ok(result) => result.map(Arrived::Raw),
                Err(join) => {
                    let endpoint = self.client.inner().endpoint(T::PATH);
                    Err(Error::Http(HttpError::task_failed(endpoint.path(), join)))
                }
            },
            None => self.fetch().await,
        };
        let page = match result {
            Ok(page) => page,
            Err(error) => return Some(Err(self.fail(error))),
        };
        Some(self.accept(page))
    }

    fn fail(&mut self, error: Error) -> Error {
        self.finished = true;
        if let Some(handle) = self.prefetched.take() {
            handle.abort();
        }
        match error {
            Error::Api(response) if self.cursor.is_some() => match response.code() {
                Some(code @ (ErrorCode::CursorExpired | ErrorCode::InvalidCursor)) => {
                    Error::CursorRejected(CursorRejected::new(code.clone(), self.delivered, response))
                }
                _ => Error::Api(response),
            },
            other => other,
        }
    }

    /// Applies the pagination rules to a page that arrived and starts the next request; a
    /// prefetched page's items are decoded after that, while the next request is under way. A
    /// page that breaks the contract is still delivered; the error follows it.
    fn accept(&mut self, arrived: Arrived<T>) -> PageResult<T> {
        self.pages += 1;
        let (rules, page) = match arrived {
            Arrived::Raw(raw) if self.remaining().is_none() => {
                let rules = self.advance(
                    raw.pagination.has_more,
                    raw.pagination.next_cursor.as_ref(),
                    raw.is_empty(),
                );
                let page = match self.decode(raw) {
                    Ok(page) => page,
                    Err(error) => return Err(self.fail(error)),
                };
                self.delivered += page.data.len() as u64;
                (rules, page)
            }
            // With a cap, the items are counted before deciding whether to ask for more.
            arrived => {
                let decoded = match arrived {
                    Arrived::Raw(raw) => self.decode(raw),
                    Arrived::Decoded(page) => Ok(page),
                };
                let mut page = match decoded {
                    Ok(page) => page,
                    Err(error) => return Err(self.fail(error)),
                };
                if let Some(remaining) = self.remaining() {
                    page = page.truncated(remaining);
                }
                self.delivered += page.data.len() as u64;
                (self.advance(page.has_more, page.next_cursor.as_ref(), page.data.is_empty()), page)
            }
        };
        match rules {
            Ok(()) => Ok(page),
            Err(violation) => {
                let error = self.fail(violation.into());
                if page.data.is_empty() {
                    Err(error)
                } else {
                    self.deferred = Some(error);
                    Ok(page)
                }
            }
        }
    }

    /// Decodes the items of the page just arrived (page number `self.pages`).
    fn decode(&self, raw: RawPage) -> PageResult<T> {
        let url = self.client.inner().endpoint(T::PATH);
        let mut page = raw.decode(|| url.path().to_owned())?;
        settle_undecodable(&mut page, self.pages, url.path(), self.query.on_undecodable)?;
        Ok(page)
    }

    /// Moves to the page after one that says `has_more` and `next_cursor` (and holds no items
    /// when `empty`), or says which rule it broke.
    fn advance(
        &mut self,
        has_more: bool,
        next_cursor: Option<&Cursor>,
        empty: bool,
    ) -> Result<(), PaginationError> {
        if !has_more {
            self.finished = true;
            return Ok(());
        }
        let next = next_cursor
            .filter(|c| !c.as_str().is_empty())
            .cloned()
            .ok_or(PaginationError::MissingCursor { page: self.pages })?;
        if next.as_str().len() > MAX_CURSOR_BYTES {
            return Err(PaginationError::CursorTooLong { page: self.pages, bytes: next.as_str().len() });
        }
        if self.cursor.as_ref() == Some(&next) || !self.seen.insert(&next) {
            return Err(PaginationError::RepeatedCursor { page: self.pages });
        }
        if empty {
            self.empty_in_a_row += 1;
            let bound = self.query.max_empty_pages.unwrap_or(DEFAULT_MAX_EMPTY_PAGES);
            if self.empty_in_a_row > bound {
                return Err(PaginationError::TooManyEmptyPages { count: self.empty_in_a_row });
            }
        } else {
            self.empty_in_a_row = 0;
        }
        self.cursor = Some(next);
        if self.remaining() == Some(0) {
            self.finished = true;
        } else if self.client.inner().prefetch {
            self.prefetched = Some(self.prefetch());
        }
        Ok(())
    }
}

/// The cursors a listing has used, as fixed-size digests: two SipHash values under random
/// keys, so memory grows by 16 bytes per page whatever the cursors' length, and a server that
/// does not know the keys cannot make two cursors collide.
#[derive(Default)]
struct SeenCursors {
    keys: [RandomState; 2],
    digests: HashSet<[u64; 2]>,
}

impl SeenCursors {
    /// Records `cursor`; false when it was already seen.
    fn insert(&mut self, cursor: &Cursor) -> bool {
        let digest = self.keys.each_ref().map(|key| key.hash_one(cursor.as_str()));
        self.digests.insert(digest)
    }
}

impl<T: Resource> Drop for Pager<T> {
    fn drop(&mut self) {
        if let Some(handle) = self.prefetched.take() {
            handle.abort();
        }
        telemetry::record_listing(
            &self.span,
            self.pages,
            self.delivered,
            self.retries.load(Ordering::Relaxed),
        );
    }
}

/// A stream of pages: `Stream<Item = Result<Page<T>, Error>>`.
///
/// Owns a clone of the client, so it is `'static` and can move to another task. The stream ends
/// after the last page, or after its first error.
///
/// ```no_run
/// # async fn run(client: business_records::Client) -> Result<(), business_records::Error> {
/// let mut pages = client.contacts().company_id("cmp_1").pages();
/// while let Some(page) = pages.try_next().await? {
///     println!("{} contacts", page.data.len());
/// }
/// # Ok(()) }
/// ```
#[must_use = "streams do nothing unless polled"]
pub struct PageStream<T: Resource> {
    inner: SyncWrapper<BoxStream<'static, PageResult<T>>>,
    resume: ResumePoint,
    retries: Arc<AtomicU64>,
    fallbacks: u64,
    undecodable: u64,
}

/// What a stream knows about where to resume; shared with the pager through the stream item.
#[derive(Debug, Clone, Default)]
struct ResumePoint {
    cursor: Option<Cursor>,
    delivered: u64,
}

impl<T: Resource> PageStream<T> {
    pub(crate) fn new(client: Client, query: ListQuery, error: Option<Error>) -> Self {
        let resume = ResumePoint { cursor: query.cursor.clone(), delivered: 0 };
        let retries = Arc::new(AtomicU64::new(0));
        let inner = match error {
            Some(error) => futures::stream::once(async move { Err(error) }).boxed(),
            None => {
                let pager = Pager::<T>::new(client, query, Arc::clone(&retries));
                futures::stream::unfold(pager, |mut pager| async move {
                    pager.next_page().await.map(|item| (item, pager))
                })
                .boxed()
            }
        };
        PageStream { inner: SyncWrapper::new(inner), resume, retries, fallbacks: 0, undecodable: 0 }
    }

    /// The next page, `Ok(None)` at the end.
    pub async fn try_next(&mut self) -> Result<Option<Page<T>>, Error> {
        self.next().await.transpose()
    }

    /// Every remaining page.
    pub async fn try_collect(mut self) -> Result<Vec<Page<T>>, Error> {
        let mut pages = Vec::new();
        while let Some(page) = self.try_next().await? {
            pages.push(page);
        }
        Ok(pages)
    }

    /// The cursor of the first page this stream has not yet delivered: pass it to
    /// [`List::cursor`](crate::resources::List::cursor), in the same session and with the same
    /// query, to resume after an error. `None` before the first page of a listing that started
    /// at the beginning, and after the last page.
    pub fn resume_cursor(&self) -> Option<&Cursor> {
        self.resume.cursor.as_ref()
    }

    /// How many items the pages delivered so far hold.
    pub fn items_delivered(&self) -> u64 {
        self.resume.delivered
    }

    /// How many page requests of this listing were sent again after a transient failure
    /// (under its [`RetryPolicy`](crate::RetryPolicy)), including one in flight for a
    /// prefetched page.
    ///
    /// ```no_run
    /// # async fn run(client: business_records::Client) -> Result<(), business_records::Error> {
    /// let mut pages = client.companies().pages();
    /// while let Some(page) = pages.try_next().await? {
    ///     println!("{} companies", page.data.len());
    /// }
    /// println!("{} retries", pages.retries());
    /// # Ok(()) }
    /// ```
    pub fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }

    /// How many records of the pages delivered so far have a field that fell back: a value
    /// that could not be read, kept raw in the record's `extra` (see
    /// [`Company::fallbacks`](crate::Company::fallbacks)).
    pub fn fallbacks(&self) -> u64 {
        self.fallbacks
    }

    /// How many elements of the pages delivered so far were not records and were left out
    /// (see [`Page::undecodable`]).
    pub fn undecodable(&self) -> u64 {
        self.undecodable
    }
}

impl<T: Resource> Stream for PageStream<T> {
    type Item = PageResult<T>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.inner.get_mut().poll_next_unpin(cx);
        if let Poll::Ready(Some(Ok(page))) = &polled {
            let next = if page.has_more { page.next_cursor.clone() } else { None };
            self.resume.cursor = next;
            self.resume.delivered += page.data.len() as u64;
            let fell_back = page.data.iter().filter(|r| !r.fallback_fields().is_empty()).count() as u64;
            let undecodable = page.undecodable.len() as u64;
            self.fallbacks += fell_back;
            self.undecodable += undecodable;
        }
        polled
    }
}

impl<T: Resource> fmt::Debug for PageStream<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PageStream")
            .field("resume", &self.resume)
            .field("retries", &self.retries())
            .field("fallbacks", &self.fallbacks)
            .field("undecodable", &self.undecodable)
            .finish_non_exhaustive()
    }
}

/// A stream of items across pages: `Stream<Item = Result<T, Error>>`.
///
/// ```no_run
/// use business_records::CompanySort;
/// # async fn run(client: business_records::Client) -> Result<(), business_records::Error> {
/// let mut companies = client.companies().sort(CompanySort::Name.asc()).stream();
/// while let Some(company) = companies.try_next().await? {
///     println!("{}", company.name);
/// }
/// # Ok(()) }
/// ```
#[must_use = "streams do nothing unless polled"]
pub struct ItemStream<T: Resource> {
    pages: PageStream<T>,
    buffer: VecDeque<T>,
    undecodable: Vec<Undecodable>,
}

impl<T: Resource> ItemStream<T> {
    pub(crate) fn new(pages: PageStream<T>) -> Self {
        ItemStream { pages, buffer: VecDeque::new(), undecodable: Vec::new() }
    }

    /// The next item, `Ok(None)` at the end.
    pub async fn try_next(&mut self) -> Result<Option<T>, Error> {
        self.next().await.transpose()
    }

    /// Every remaining item.
    pub async fn try_collect(mut self) -> Result<Vec<T>, Error> {
        let mut items = Vec::new();
        while let Some(item) = self.try_next().await? {
            items.push(item);
        }
        Ok(items)
    }

    /// The cursor of the first page none of whose items this stream has delivered yet, once
    /// the items of every page received so far have been taken. See
    /// [`PageStream::resume_cursor`].
    pub fn resume_cursor(&self) -> Option<&Cursor> {
        self.pages.resume_cursor()
    }

    /// How many items this stream has handed out.
    pub fn items_delivered(&self) -> u64 {
        self.pages.items_delivered() - self.buffer.len() as u64
    }

    /// How many page requests were sent again after a transient failure. See
    /// [`PageStream::retries`].
    pub fn retries(&self) -> u64 {
        self.pages.retries()
    }

    /// How many records of the pages received so far have a field that fell back. See
    /// [`PageStream::fallbacks`].
    pub fn fallbacks(&self) -> u64 {
        self.pages.fallbacks()
    }

    /// How many elements of the pages received so far were not records and were left out.
    /// See [`PageStream::undecodable`].
    pub fn undecodable(&self) -> u64 {
        self.pages.undecodable()
    }

    /// The elements left out since the last call (up to 1,000 are kept between calls; the
    /// count in [`undecodable`](ItemStream::undecodable) goes on).
    ///
    /// ```no_run
    /// # async fn run(client: business_records::Client) -> Result<(), business_records::Error> {
    /// let mut companies = client.companies().stream();
    /// while let Some(company) = companies.try_next().await? {
    ///     println!("{}", company.name);
    /// }
    /// for element in companies.take_undecodable() {
    ///     eprintln!("skipped: {element}");
    /// }
    /// println!("{} records with fields kept raw", companies.fallbacks());
    /// # Ok(()) }
    /// ```
    pub fn take_undecodable(&mut self) -> Vec<Undecodable> {
        std::mem::take(&mut self.undecodable)
    }
}

// Neither stream pins its items or pages; they are only moved.
impl<T: Resource> Unpin for ItemStream<T> {}
impl<T: Resource> Unpin for PageStream<T> {}

impl<T: Resource> Stream for ItemStream<T> {
    type Item = Result<T, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(item) = self.buffer.pop_front() {
                return Poll::Ready(Some(Ok(item)));
            }
            match self.pages.poll_next_unpin(cx) {
                Poll::Ready(Some(Ok(page))) => {
                    let room = KEPT_UNDECODABLE.saturating_sub(self.undecodable.len());
                    self.undecodable.extend(page.undecodable.into_iter().take(room));
                    self.buffer.extend(page.data);
                }
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl<T: Resource> fmt::Debug for ItemStream<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemStream")
            .field("pages", &self.pages)
            .field("buffered", &self.buffer.len())
            .finish()
    }
}
