//! The streams of a listing: [`PageStream`] and [`ItemStream`].

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use futures::Stream;
use futures::TryStreamExt;
use futures::stream::{BoxStream, StreamExt};
use sync_wrapper::SyncWrapper;

use serde::de::DeserializeOwned;

use super::pager::{Pager, Progress};
use super::{Cursor, Page, Query};
use crate::Error;
use crate::error::Undecodable;
use crate::pipeline::Pipeline;
use crate::retry::CallStats;

/// Undecodable elements an [`ItemStream`] keeps for [`ItemStream::take_undecodable`]; later
/// ones are still counted.
const KEPT_UNDECODABLE: usize = 1_000;

/// A page or the error a listing ended with, and the pager's progress once it was out.
type PagerItem<T> = (Result<Page<T>, Error>, Progress);

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
pub struct PageStream<T> {
    /// The pager's pages, each with what the pager had delivered once it was out.
    inner: SyncWrapper<BoxStream<'static, PagerItem<T>>>,
    /// The pager's progress as of the last page or error this stream handed out.
    progress: Progress,
    stats: Arc<CallStats>,
}

impl<T: DeserializeOwned + Send + 'static> PageStream<T> {
    pub(crate) fn new(pipeline: Pipeline, query: Result<Query, Error>) -> Self {
        let stats = Arc::new(CallStats::default());
        let resume = query.as_ref().ok().and_then(|query| query.cursor.clone());
        let inner = match query {
            Err(error) => futures::stream::once(async { (Err(error), Progress::default()) }).boxed(),
            Ok(query) => {
                let pager = Pager::<T>::new(pipeline, query, Arc::clone(&stats));
                let pages = futures::stream::unfold(pager, |mut pager| async move {
                    let page = pager.next().await?;
                    Some(((page, pager.progress.clone()), pager))
                });
                pages.boxed()
            }
        };
        let progress = Progress { resume, ..Progress::default() };
        PageStream { inner: SyncWrapper::new(inner), progress, stats }
    }

    /// The next page, `Ok(None)` at the end.
    pub async fn try_next(&mut self) -> Result<Option<Page<T>>, Error> {
        TryStreamExt::try_next(self).await
    }

    /// Every remaining page, in a collection of your choice (`Vec<Page<T>>` most often). The
    /// same signature and behaviour as [`TryStreamExt::try_collect`](futures::TryStreamExt::try_collect),
    /// so importing that trait changes nothing.
    pub async fn try_collect<C: Default + Extend<Page<T>>>(self) -> Result<C, Error> {
        TryStreamExt::try_collect(self).await
    }

    /// The cursor of the first page this stream has not yet delivered: pass it to
    /// [`List::cursor`](crate::List::cursor), in the same session and with the same
    /// query, to resume after an error. `None` before the first page of a listing that started
    /// at the beginning, and after the last page.
    pub fn resume_cursor(&self) -> Option<&Cursor> {
        self.progress.resume.as_ref()
    }

    /// How many items the pages delivered so far hold.
    pub fn items_delivered(&self) -> u64 {
        self.progress.delivered
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
        self.stats.retries()
    }

    /// How long this listing's requests waited for the client's budget (its
    /// [`RateLimit`](crate::RateLimit), and the pauses after a 429), including a prefetched
    /// page's wait under way. Zero when nothing held them up.
    ///
    /// ```no_run
    /// # async fn run(client: business_records::Client) -> Result<(), business_records::Error> {
    /// let mut pages = client.companies().pages();
    /// while let Some(page) = pages.try_next().await? {
    ///     println!("{} companies", page.data.len());
    /// }
    /// println!("paced for {:?}", pages.rate_limit_wait());
    /// # Ok(()) }
    /// ```
    pub fn rate_limit_wait(&self) -> Duration {
        self.stats.waited()
    }

    /// How many elements of the pages delivered so far were not records and were left out
    /// (see [`Page::undecodable`]).
    pub fn undecodable(&self) -> u64 {
        self.progress.undecodable
    }
}

impl<T: DeserializeOwned + Send + 'static> Stream for PageStream<T> {
    type Item = Result<Page<T>, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some((result, progress)) = ready!(self.inner.get_mut().poll_next_unpin(cx)) else {
            return Poll::Ready(None);
        };
        self.progress = progress;
        Poll::Ready(Some(result))
    }
}

impl<T> fmt::Debug for PageStream<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PageStream")
            .field("progress", &self.progress)
            .field("retries", &self.stats.retries())
            .field("rate_limit_wait", &self.stats.waited())
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
pub struct ItemStream<T> {
    pages: PageStream<T>,
    buffer: VecDeque<T>,
    undecodable: Vec<Undecodable>,
}

impl<T: DeserializeOwned + Send + 'static> ItemStream<T> {
    pub(crate) fn new(pages: PageStream<T>) -> Self {
        ItemStream { pages, buffer: VecDeque::new(), undecodable: Vec::new() }
    }

    /// The next item, `Ok(None)` at the end.
    pub async fn try_next(&mut self) -> Result<Option<T>, Error> {
        TryStreamExt::try_next(self).await
    }

    /// Every remaining item, in a collection of your choice (`Vec<T>` most often). The same
    /// signature and behaviour as [`TryStreamExt::try_collect`](futures::TryStreamExt::try_collect),
    /// so importing that trait changes nothing.
    ///
    /// ```no_run
    /// # async fn run(client: business_records::Client) -> Result<(), business_records::Error> {
    /// let companies: Vec<_> = client.companies().max_items(500).stream().try_collect::<Vec<_>>().await?;
    /// # let _ = companies;
    /// # Ok(()) }
    /// ```
    pub async fn try_collect<C: Default + Extend<T>>(self) -> Result<C, Error> {
        TryStreamExt::try_collect(self).await
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

    /// How long this listing's requests waited for the client's budget. See
    /// [`PageStream::rate_limit_wait`].
    pub fn rate_limit_wait(&self) -> Duration {
        self.pages.rate_limit_wait()
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
    /// println!("{} elements left out", companies.undecodable());
    /// # Ok(()) }
    /// ```
    pub fn take_undecodable(&mut self) -> Vec<Undecodable> {
        std::mem::take(&mut self.undecodable)
    }
}

// The stream does not pin its items; they are only moved.
impl<T> Unpin for ItemStream<T> {}

impl<T: DeserializeOwned + Send + 'static> Stream for ItemStream<T> {
    type Item = Result<T, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(item) = self.buffer.pop_front() {
                return Poll::Ready(Some(Ok(item)));
            }
            // `?` hands out the error a listing ended with as the next item.
            let Some(page) = ready!(self.pages.poll_next_unpin(cx)?) else { return Poll::Ready(None) };
            let room = KEPT_UNDECODABLE.saturating_sub(self.undecodable.len());
            self.undecodable.extend(page.undecodable.into_iter().take(room));
            self.buffer.extend(page.data);
        }
    }
}

impl<T> fmt::Debug for ItemStream<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemStream")
            .field("pages", &self.pages)
            .field("buffered", &self.buffer.len())
            .finish()
    }
}
