//! The state of one listing: where it is, what it has delivered, the page in flight.

use std::marker::PhantomData;
use std::sync::Arc;

use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::Instrument;

use super::fetch::PageRequest;
use super::guards::Walk;
use super::params::DEFAULT_MAX_EMPTY_PAGES;
use super::raw::RawPage;
use super::{Cursor, ListEndpoint, ListParams, Page};
use crate::bounds::later;
use crate::error::{CursorRejected, ErrorCode, HttpError, PaginationError};
use crate::limits::MAX_LIMIT;
use crate::model::Resource;
use crate::pipeline::CallStats;
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
    /// Records of the pages delivered with a field that fell back.
    pub(super) fallbacks: u64,
    /// Elements of the pages delivered that were not records.
    pub(super) undecodable: u64,
}

impl Progress {
    /// The progress of a listing that has delivered nothing yet and starts at `start`.
    pub(super) fn start(start: Option<Cursor>) -> Self {
        Progress { resume: start, ..Progress::default() }
    }
}

/// The state of one listing: where it is, what it has seen, and the page in flight.
pub(super) struct Pager<T: Resource> {
    endpoint: ListEndpoint,
    params: Arc<ListParams>,
    /// The cursor of the next page, and the rules every page must keep.
    walk: Walk,
    pages: u64,
    progress: Progress,
    finished: bool,
    prefetched: Option<JoinHandle<Result<RawPage, Error>>>,
    not_before: Option<Instant>,
    /// A contract violation found on a page whose items are delivered first.
    deferred: Option<Error>,
    /// Requests sent again after a transient failure and waits for the budget, shared with the
    /// stream.
    stats: Arc<CallStats>,
    /// The listing's span: a child of the span current when the stream was made, and the parent
    /// of every request of the listing, prefetched or not.
    span: tracing::Span,
    items: PhantomData<fn() -> T>,
}

impl<T: Resource> Pager<T> {
    pub(super) fn new(endpoint: ListEndpoint, params: Arc<ListParams>, stats: Arc<CallStats>) -> Self {
        let span = telemetry::listing_span(endpoint.url.path());
        let walk =
            Walk::new(params.cursor.clone(), params.max_empty_pages.unwrap_or(DEFAULT_MAX_EMPTY_PAGES));
        Pager {
            endpoint,
            progress: Progress::start(params.cursor.clone()),
            params,
            walk,
            pages: 0,
            finished: false,
            prefetched: None,
            not_before: None,
            deferred: None,
            stats,
            span,
            items: PhantomData,
        }
    }

    fn remaining(&self) -> Option<u64> {
        self.params.remaining(self.progress.delivered)
    }

    /// The request for the page at the walk's cursor, and when it may start; moves the pacing
    /// on.
    fn next_request(&mut self) -> (PageRequest, Option<Instant>) {
        let limit = self.params.page_limit(Some(MAX_LIMIT), self.progress.delivered).unwrap_or(MAX_LIMIT);
        let not_before = self.not_before;
        if let Some(delay) = self.endpoint.paging.page_delay {
            self.not_before = Some(later(Instant::now().max(not_before.unwrap_or_else(Instant::now)), delay));
        }
        let request = PageRequest {
            params: Arc::clone(&self.params),
            limit: Some(limit),
            cursor: self.walk.cursor().cloned(),
            stats: Some(Arc::clone(&self.stats)),
        };
        (request, not_before)
    }

    /// The request for the page at the walk's cursor, in the listing's span, once its time has
    /// come: awaited right away, or spawned as a prefetch while the consumer reads the page
    /// before.
    fn request(&mut self) -> impl Future<Output = Result<RawPage, Error>> + Send + 'static {
        let (request, not_before) = self.next_request();
        let endpoint = self.endpoint.clone();
        let fetch = async move {
            if let Some(at) = not_before {
                tokio::time::sleep_until(at).await;
            }
            endpoint.fetch(&request).await
        };
        fetch.instrument(self.span.clone())
    }

    /// The next page and what the listing has delivered with it; `None` at the end.
    pub(super) async fn next_page(&mut self) -> Option<(Result<Page<T>, Error>, Progress)> {
        let result = self.next().await?;
        Some((result, self.progress.clone()))
    }

    async fn next(&mut self) -> Option<Result<Page<T>, Error>> {
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
        let arrived = match self.prefetched.take() {
            Some(handle) => match handle.await {
                Ok(result) => result,
                Err(join) => Err(Error::Http(HttpError::task_failed(self.endpoint.url.path(), join))),
            },
            None => self.request().await,
        };
        Some(match arrived {
            Ok(raw) => self.accept(raw),
            Err(error) => Err(self.fail(error)),
        })
    }

    fn fail(&mut self, error: Error) -> Error {
        self.finished = true;
        if let Some(handle) = self.prefetched.take() {
            handle.abort();
        }
        match error {
            Error::Api(response) if self.walk.cursor().is_some() => match response.code() {
                Some(code @ (ErrorCode::CursorExpired | ErrorCode::InvalidCursor)) => {
                    let delivered = self.progress.delivered;
                    Error::CursorRejected(CursorRejected::new(code.clone(), delivered, response))
                }
                _ => Error::Api(response),
            },
            other => other,
        }
    }

    /// Applies the pagination rules to a page that arrived and starts the next request. Without
    /// a cap on the items, that happens before the page's items are decoded, so decoding
    /// overlaps the next request; with one, the items are decoded and counted first, as they
    /// decide whether another page is needed. A page that breaks the contract is still
    /// delivered; the error follows it.
    fn accept(&mut self, raw: RawPage) -> Result<Page<T>, Error> {
        self.pages += 1;
        let early = self
            .params
            .max_items
            .is_none()
            .then(|| self.advance(raw.has_more(), raw.next_cursor(), raw.is_empty()));
        let decoded = raw.decode(self.pages, self.endpoint.url.path(), self.params.on_undecodable);
        let mut page = match decoded {
            Ok(page) => page,
            Err(error) => return Err(self.fail(error)),
        };
        if let Some(remaining) = self.remaining() {
            page = page.truncated(remaining);
        }
        self.progress.delivered += page.data.len() as u64;
        let rules = match early {
            Some(rules) => rules,
            None => self.advance(page.has_more, page.next_cursor.as_ref(), page.data.is_empty()),
        };
        match rules {
            Ok(()) => Ok(self.deliver(page)),
            Err(violation) => {
                let error = self.fail(violation.into());
                if page.data.is_empty() {
                    Err(error)
                } else {
                    self.deferred = Some(error);
                    Ok(self.deliver(page))
                }
            }
        }
    }

    /// Counts what `page` hands over and moves the resume point past it.
    fn deliver(&mut self, page: Page<T>) -> Page<T> {
        self.progress.resume = if page.has_more { page.next_cursor.clone() } else { None };
        let fell_back = page.data.iter().filter(|r| !r.fallback_fields().is_empty()).count();
        self.progress.fallbacks += fell_back as u64;
        self.progress.undecodable += page.undecodable.len() as u64;
        page
    }

    /// Moves to the page after one that says `has_more` and `next_cursor` (and holds no items
    /// when `empty`), or says which rule it broke.
    fn advance(
        &mut self,
        has_more: bool,
        next_cursor: Option<&Cursor>,
        empty: bool,
    ) -> Result<(), PaginationError> {
        if !self.walk.advance(self.pages, has_more, next_cursor, empty)? {
            self.finished = true;
            return Ok(());
        }
        if self.remaining() == Some(0) {
            self.finished = true;
        } else if self.endpoint.paging.prefetch {
            self.prefetched = Some(tokio::spawn(self.request()));
        }
        Ok(())
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
            self.progress.delivered,
            self.stats.retries(),
            self.stats.waited(),
        );
    }
}

#[cfg(test)]
mod tests;
