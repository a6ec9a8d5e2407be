//! The state of one listing: where it is, what it has delivered, the page in flight.

use std::marker::PhantomData;
use std::sync::Arc;

use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::Instrument;

use super::fetch::{PageResult, fetch_page, settle_undecodable};
use super::guards::Walk;
use super::params::DEFAULT_MAX_EMPTY_PAGES;
use super::raw::{Arrived, RawPage, fetch_raw_page};
use super::{Cursor, ListEndpoint, ListParams};
use crate::error::{CursorRejected, ErrorCode, HttpError, PaginationError};
use crate::limits::MAX_LIMIT;
use crate::model::Resource;
use crate::pipeline::CallStats;
use crate::{Error, telemetry};

/// The state of one listing: where it is, what it has seen, and the page in flight.
pub(super) struct Pager<T: Resource> {
    source: ListEndpoint,
    query: ListParams,
    /// The cursor of the next page, and the rules every page must keep.
    walk: Walk,
    pages: u64,
    delivered: u64,
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
    pub(super) fn new(source: ListEndpoint, query: ListParams, stats: Arc<CallStats>) -> Self {
        let span = telemetry::listing_span(source.url.path());
        let walk = Walk::new(query.cursor.clone(), query.max_empty_pages.unwrap_or(DEFAULT_MAX_EMPTY_PAGES));
        Pager {
            source,
            query,
            walk,
            pages: 0,
            delivered: 0,
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
        self.query.remaining(self.delivered)
    }

    /// The page size of the next request, and when it may start; moves the pacing on.
    fn next_request(&mut self) -> (u32, Option<Instant>) {
        let limit = self.query.page_limit(Some(MAX_LIMIT), self.delivered).unwrap_or(MAX_LIMIT);
        let not_before = self.not_before;
        if let Some(delay) = self.source.paging.page_delay {
            self.not_before = Some(Instant::now().max(not_before.unwrap_or_else(Instant::now)) + delay);
        }
        (limit, not_before)
    }

    /// Requests the page at the walk's cursor in the listing's span, and decodes it whole: with no
    /// request to overlap, one pass over the body is the fastest.
    async fn fetch(&mut self) -> Result<Arrived<T>, Error> {
        let (limit, not_before) = self.next_request();
        if let Some(at) = not_before {
            tokio::time::sleep_until(at).await;
        }
        let number = self.pages + 1;
        let cursor = self.walk.cursor();
        fetch_page(&self.source, &self.query, Some(limit), cursor, Some(&self.stats), number)
            .instrument(self.span.clone())
            .await
            .map(Arrived::Decoded)
    }

    /// Starts the request for the page at the walk's cursor as a task of its own, in the listing's
    /// span.
    fn prefetch(&mut self) -> JoinHandle<Result<RawPage, Error>> {
        let (limit, not_before) = self.next_request();
        let source = self.source.clone();
        let query = self.query.clone();
        let cursor = self.walk.cursor().cloned();
        let stats = Arc::clone(&self.stats);
        let request = async move {
            if let Some(at) = not_before {
                tokio::time::sleep_until(at).await;
            }
            fetch_raw_page(&source, &query, Some(limit), cursor.as_ref(), Some(&stats)).await
        };
        tokio::spawn(request.instrument(self.span.clone()))
    }

    pub(super) async fn next_page(&mut self) -> Option<PageResult<T>> {
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
                Err(join) => Err(Error::Http(HttpError::task_failed(self.source.url.path(), join))),
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
            Error::Api(response) if self.walk.cursor().is_some() => match response.code() {
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
        let endpoint = self.source.url.path();
        let mut page = raw.decode(|| endpoint.to_owned())?;
        settle_undecodable(&mut page, self.pages, endpoint, self.query.on_undecodable)?;
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
        if !self.walk.advance(self.pages, has_more, next_cursor, empty)? {
            self.finished = true;
            return Ok(());
        }
        if self.remaining() == Some(0) {
            self.finished = true;
        } else if self.source.paging.prefetch {
            self.prefetched = Some(self.prefetch());
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
            self.delivered,
            self.stats.retries(),
            self.stats.waited(),
        );
    }
}
