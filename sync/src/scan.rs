//! One pass over a list, page by page: each page checked and committed while the next one is
//! fetched, started again from the first page when the cursor expires.

use std::collections::HashSet;

use business_records::{Cursor, Page};
use chrono::{DateTime, Utc};
use serde_json::Value;
use tokio::task::JoinHandle;

use crate::context::{Context, Pending};
use crate::sink::Policy;
use crate::{Disorder, SyncError};

/// Restarts from the first page in one run before a refused cursor fails it.
const MAX_RESTARTS: u32 = 3;
/// Empty pages with `hasMore: true` in a row before the listing fails.
const MAX_EMPTY_PAGES: u32 = 25;

/// How a pass reads the list.
#[derive(Debug)]
pub(crate) struct Pass {
    /// The `sort` parameter.
    pub(crate) sort: String,
    /// The incremental scan: pages in descending order of the updated field, a stop, and a
    /// new pass when `totalCount` drops. Otherwise a reconciliation: every page, any order.
    pub(crate) incremental: bool,
    /// Stop after the page holding a record updated before this.
    pub(crate) stop: Option<DateTime<Utc>>,
    /// How the pages' records are committed.
    pub(crate) policy: Policy,
}

/// What a pass saw.
#[derive(Debug, Default)]
pub(crate) struct Walked {
    /// The newest updated field on the first page of the last pass.
    pub(crate) newest: Option<DateTime<Utc>>,
    /// Whether that first page told the server's newest record: it held records, or it was
    /// the whole list.
    pub(crate) known: bool,
    /// A page was out of order and the pass went on as a full scan.
    pub(crate) disordered: bool,
    /// `totalCount` changed between pages.
    pub(crate) total_changed: bool,
}

/// The cursor of the page after `page`, if the pagination contract holds: a cursor, none the
/// pass has used already, and not too many empty pages in a row.
fn following(
    page: &Page<Value>,
    used: &HashSet<Cursor>,
    empty_in_a_row: u32,
) -> Result<Cursor, &'static str> {
    match &page.next_cursor {
        None => Err("`hasMore` is true without a cursor"),
        Some(next) if used.contains(next) => Err("a cursor the pass has used already"),
        Some(_) if empty_in_a_row > MAX_EMPTY_PAGES => Err("too many empty pages in a row"),
        Some(next) => Ok(next.clone()),
    }
}

/// A page request under way, on a task of its own; aborted when dropped.
struct Fetch(JoinHandle<Result<Page<Value>, business_records::Error>>);

impl Fetch {
    fn start(ctx: &mut Context<'_>, sort: &str, cursor: Option<&Cursor>) -> Fetch {
        ctx.report.requests += 1;
        Fetch(tokio::spawn(ctx.fetch(sort, cursor)))
    }

    async fn page(mut self) -> Result<Page<Value>, SyncError> {
        match (&mut self.0).await {
            Ok(page) => page.map_err(SyncError::Client),
            Err(stopped) if stopped.is_panic() => std::panic::resume_unwind(stopped.into_panic()),
            Err(_) => Err(SyncError::Pagination { page: 0, message: "the page request was cancelled" }),
        }
    }
}

impl Drop for Fetch {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Reads the list as `pass` says, committing every page; collects the ids seen into `seen`
/// when given.
pub(crate) async fn walk(
    ctx: &mut Context<'_>,
    pass: &Pass,
    mut seen: Option<&mut HashSet<String>>,
) -> Result<Walked, SyncError> {
    let mut walked = Walked::default();
    let mut rescanned = false;
    'pass: loop {
        let (mut cursor, mut number, mut empty_in_a_row) = (None::<Cursor>, 0_u64, 0_u32);
        let mut used = HashSet::new();
        let (mut first_total, mut largest_total) = (None, None);
        let mut pending: Option<Pending> = None;
        let mut next = Some(Fetch::start(ctx, &pass.sort, None));
        while let Some(fetch) = next.take() {
            let page = match fetch.page().await {
                Ok(page) => page,
                Err(SyncError::Client(business_records::Error::CursorRejected(_))) if cursor.is_some() => {
                    if ctx.report.restarts >= MAX_RESTARTS {
                        return Err(ctx
                            .fail(pending, SyncError::CursorExpired { restarts: ctx.report.restarts })
                            .await);
                    }
                    ctx.settle(pending.take()).await?;
                    ctx.report.restarts += 1;
                    tracing::info!(stream = %ctx.stream.table, restarts = ctx.report.restarts, "cursor refused; from the first page again");
                    continue 'pass;
                }
                Err(error) => return Err(ctx.fail(pending, error).await),
            };
            number += 1;
            ctx.report.pages += 1;
            ctx.total = page.total_count;
            let facts = ctx.facts(&page.data);
            if let Some((previous, next)) = facts.disorder.filter(|_| pass.incremental && !walked.disordered)
            {
                if ctx.stream.disorder == Disorder::Fail {
                    return Err(ctx
                        .fail(pending, SyncError::OutOfOrder { page: number, previous, next })
                        .await);
                }
                tracing::warn!(stream = %ctx.stream.table, page = number, "page out of order; reading the rest as a full scan");
                walked.disordered = true;
            }
            if number == 1 {
                walked.newest = facts.newest;
                walked.known = !page.data.is_empty() || !page.has_more;
            }
            let dropped =
                matches!((largest_total, page.total_count), (Some(before), Some(now)) if now < before);
            first_total = first_total.or(page.total_count);
            largest_total = largest_total.max(page.total_count);
            walked.total_changed |= page.total_count.is_some() && page.total_count != first_total;
            let reached = !walked.disordered
                && pass.stop.is_some_and(|stop| facts.oldest.is_some_and(|oldest| oldest < stop));
            let rescan = pass.incremental && dropped && !rescanned;
            empty_in_a_row = if page.data.is_empty() { empty_in_a_row + 1 } else { 0 };
            ctx.report.seen += facts.keyed;
            ctx.tell();
            // The next page is requested before this one's records are made and committed.
            if page.has_more && !reached && !rescan {
                match following(&page, &used, empty_in_a_row) {
                    Ok(following) => {
                        next = Some(Fetch::start(ctx, &pass.sort, Some(&following)));
                        used.insert(following.clone());
                        cursor = Some(following);
                    }
                    Err(message) => {
                        return Err(ctx.fail(pending, SyncError::Pagination { page: number, message }).await);
                    }
                }
            }
            let records = match ctx.records(page.data, number) {
                Ok(records) => records,
                Err(error) => return Err(ctx.fail(pending, error).await),
            };
            if let Some(seen) = seen.as_deref_mut() {
                seen.extend(records.iter().map(|record| record.id.clone()));
            }
            ctx.settle(pending.take()).await?;
            pending = Some(ctx.commit(records, pass.policy, Vec::new(), None));
            if rescan {
                tracing::info!(stream = %ctx.stream.table, "totalCount dropped during the scan; scanning once more");
                ctx.settle(pending.take()).await?;
                rescanned = true;
                continue 'pass;
            }
        }
        ctx.settle(pending.take()).await?;
        return Ok(walked);
    }
}
