//! The state of one listing: where it is, what it has delivered, the page in flight.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::Instrument;

use super::guards::Walk;
use super::{Cursor, Page, Query, cursor_rejected};
use crate::bounds::later;
use crate::limits::MAX_LIMIT;
use crate::pipeline::Pipeline;
use crate::retry::CallStats;
use crate::{Error, telemetry};

/// What a listing has delivered so far, and where it would go on: kept by the pager alone, and
/// handed to its stream with every page.
#[derive(Debug, Clone, Default)]
pub(super) struct Progress {
    /// The cursor of the first page not delivered yet: `None` before the first page of a listing
    /// that started at the beginning, and after the last page.
    pub(super) resume: Option<Cursor>,
    /// Items of the pages delivered.
    pub(super) delivered: u64,
    /// Elements of the pages delivered that were not items.
    pub(super) undecodable: u64,
}

/// The state of one listing: where it is, what it has seen, and the page in flight.
pub(super) struct Pager<T> {
    pipeline: Pipeline,
    query: Query,
    /// The cursor of the next page, and the rules every page must keep.
    walk: Walk,
    pages: u64,
    pub(super) progress: Progress,
    /// No page follows: the last one arrived, the listing failed, or its cap is reached
    /// (`max_items(0)` from the start).
    finished: bool,
    /// The next page, requested and decoded in a task of its own while this one is read.
    prefetched: Option<JoinHandle<Result<Page<T>, Error>>>,
    not_before: Option<Instant>,
    /// A contract violation found on a page whose items are delivered first (the listing is
    /// then finished).
    deferred: Option<Error>,
    /// Requests sent again after a transient failure and waits for the budget, shared with the
    /// stream.
    stats: Arc<CallStats>,
    /// The listing's span: a child of the span current when the stream was made, and the parent
    /// of every request of the listing, prefetched or not.
    span: tracing::Span,
}

impl<T: DeserializeOwned + Send + 'static> Pager<T> {
    pub(super) fn new(pipeline: Pipeline, query: Query, stats: Arc<CallStats>) -> Self {
        Pager {
            pipeline,
            span: telemetry::listing_span(query.call.url.path()),
            walk: Walk::new(query.cursor.clone(), query.max_empty_pages),
            progress: Progress { resume: query.cursor.clone(), ..Progress::default() },
            finished: query.max_items == Some(0),
            query,
            pages: 0,
            prefetched: None,
            not_before: None,
            deferred: None,
            stats,
        }
    }

    fn remaining(&self) -> Option<u64> {
        self.query.remaining(self.progress.delivered)
    }

    /// The next page, at the walk's cursor, in the listing's span, once its time has come:
    /// requested and decoded, awaited right away or spawned as a prefetch. Its `limit` counts
    /// the items delivered so far.
    fn request(&mut self) -> impl Future<Output = Result<Page<T>, Error>> + Send + 'static {
        let limit = self.query.page_limit(Some(MAX_LIMIT), self.progress.delivered);
        let call = self.query.page(limit, self.walk.cursor());
        let (number, on) = (self.pages + 1, self.query.on_undecodable);
        let not_before = self.not_before;
        if let Some(delay) = self.pipeline.settings.page_delay {
            let now = Instant::now();
            self.not_before = Some(later(not_before.unwrap_or(now).max(now), delay));
        }
        let (pipeline, stats) = (self.pipeline.clone(), Arc::clone(&self.stats));
        async move {
            if let Some(at) = not_before {
                tokio::time::sleep_until(at).await;
            }
            Page::fetch(&pipeline, &call, Some(&stats), number, on).await
        }
        .instrument(self.span.clone())
    }

    /// The next page, or the error the listing ends with; `None` at the end.
    pub(super) async fn next(&mut self) -> Option<Result<Page<T>, Error>> {
        // A listing that failed after a page of items hands out the error, then ends.
        if self.finished {
            return self.deferred.take().map(Err);
        }
        let page = match self.prefetched.take() {
            Some(handle) => {
                handle.await.unwrap_or_else(|join| Err(Error::task_failed(self.query.call.url.path(), join)))
            }
            None => self.request().await,
        };
        Some(page.map_err(|error| self.fail(error)).and_then(|page| self.accept(page)))
    }

    /// Ends the listing with `error` (no request is in flight: `next` took any prefetch).
    fn fail(&mut self, error: Error) -> Error {
        self.finished = true;
        cursor_rejected(error, self.walk.cursor().is_some(), self.progress.delivered)
    }

    /// Applies the pagination rules to a page that arrived, counts what it delivers, and, with
    /// prefetch on, starts the next request. A page that breaks the contract is still
    /// delivered; the error follows it.
    fn accept(&mut self, page: Page<T>) -> Result<Page<T>, Error> {
        self.pages += 1;
        let empty = page.data.is_empty() && page.undecodable_total == 0;
        let walked = self.walk.advance(self.pages, page.has_more, page.next_cursor.as_ref(), empty);
        let page = page.truncated(self.remaining());
        self.progress.delivered += page.data.len() as u64;
        self.progress.undecodable += page.undecodable_total;
        match walked {
            Ok(more) => {
                self.finished = !more || self.remaining() == Some(0);
                self.progress.resume = if page.has_more { page.next_cursor.clone() } else { None };
                if !self.finished && self.pipeline.settings.prefetch {
                    self.prefetched = Some(tokio::spawn(self.request()));
                }
                Ok(page)
            }
            Err(violation) => {
                let error = self.fail(violation.into());
                if page.data.is_empty() {
                    return Err(error);
                }
                self.deferred = Some(error);
                Ok(page)
            }
        }
    }
}

impl<T> Drop for Pager<T> {
    fn drop(&mut self) {
        if let Some(handle) = self.prefetched.take() {
            handle.abort();
        }
        telemetry::record_listing(
            &self.span,
            self.pages,
            self.progress.delivered,
            self.stats.retries(),
            self.stats.waited(),
        );
    }
}
