//! What a stream's run carries from page to page: the client, the sink, the lease, the report.

use std::sync::Arc;
use std::time::Duration;

use business_records::{Client, Cursor, Page};
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use serde_json::Value;

use crate::record::{as_served, element, key};
use crate::report::{Phase, Progress, StreamReport};
use crate::sink::{Commit, Policy, Record, Sink, State, Written};
use crate::{Missing, SinkError, Stream, SyncError, time};

/// The callback of [`Mirror::on_progress`](crate::Mirror::on_progress).
pub(crate) type ProgressFn = dyn Fn(&Progress) + Send + Sync;

/// A commit under way on the sink.
pub(crate) type Pending = BoxFuture<'static, Result<Written, SyncError>>;

/// What the run reads from a page's updated fields.
#[derive(Debug, Default)]
pub(crate) struct Facts {
    /// Elements with a key.
    pub(crate) keyed: u64,
    /// The newest and the oldest updated field of the page.
    pub(crate) newest: Option<DateTime<Utc>>,
    pub(crate) oldest: Option<DateTime<Utc>>,
    /// The first pair of records out of descending order: the earlier's and the later's raw
    /// updated field.
    pub(crate) disorder: Option<(String, String)>,
}

/// One stream's run.
pub(crate) struct Context<'m> {
    pub(crate) client: &'m Client,
    pub(crate) sink: Arc<dyn Sink>,
    pub(crate) stream: &'m Stream,
    pub(crate) holder: &'m str,
    pub(crate) lease: Duration,
    pub(crate) run: i64,
    pub(crate) progress: Option<&'m ProgressFn>,
    pub(crate) phase: Phase,
    pub(crate) total: Option<u64>,
    pub(crate) report: StreamReport,
}

impl Context<'_> {
    /// Requests one page of the stream's list in `sort` order, at `cursor`.
    pub(crate) fn fetch(
        &self,
        sort: &str,
        cursor: Option<&Cursor>,
    ) -> impl Future<Output = Result<Page<Value>, business_records::Error>> + use<> {
        let mut list =
            self.client.list::<Value>(self.stream.path.as_str()).sort(sort).limit(self.stream.limit);
        for (name, value) in &self.stream.filters {
            list = list.filter(name.as_str(), value.as_str());
        }
        if let Some(cursor) = cursor {
            list = list.cursor(cursor);
        }
        list.send()
    }

    /// What the run reads from a page before its records are made: the newest and oldest
    /// updated field, and the first pair of records out of descending order.
    pub(crate) fn facts(&self, elements: &[Value]) -> Facts {
        let keyed = elements.iter().filter(|e| key(e, &self.stream.fields.key).is_some()).count() as u64;
        let mut facts = Facts { keyed, ..Facts::default() };
        let mut previous: Option<(DateTime<Utc>, &Value)> = None;
        let updated = elements
            .iter()
            .filter_map(|e| e.get(&self.stream.fields.updated).map(|raw| (time::parse(raw), raw)));
        for (instant, raw) in updated {
            let Some(instant) = instant else { continue };
            if let Some((before, before_raw)) = previous
                && instant > before
                && facts.disorder.is_none()
            {
                facts.disorder = Some((as_served(before_raw), as_served(raw)));
            }
            facts.newest = facts.newest.max(Some(instant));
            facts.oldest = Some(facts.oldest.map_or(instant, |oldest| oldest.min(instant)));
            previous = Some((instant, raw));
        }
        facts
    }

    /// The elements of page `number` as records, counted; `Missing::Fail` stops at the first
    /// without a key.
    pub(crate) fn records(&mut self, elements: Vec<Value>, number: u64) -> Result<Vec<Record>, SyncError> {
        let mut records = Vec::with_capacity(elements.len());
        for (position, value) in elements.into_iter().enumerate() {
            let Some(record) = element(value, &self.stream.fields) else {
                if self.stream.missing == Missing::Fail {
                    return Err(SyncError::MissingId { page: number, position });
                }
                tracing::warn!(stream = %self.stream.table, page = number, position, "a record without an id was skipped");
                self.report.without_id += 1;
                continue;
            };
            records.push(record);
        }
        Ok(records)
    }

    /// The lease's end if renewed now.
    pub(crate) fn lease_until(&self) -> String {
        lease_until(self.lease)
    }

    /// Starts a commit of `records` and `deletes` (and `state`, if any) on the sink.
    pub(crate) fn commit(
        &self,
        records: Vec<Record>,
        policy: Policy,
        deletes: Vec<String>,
        state: Option<State>,
    ) -> Pending {
        let commit = Commit {
            stream: self.stream.table.clone(),
            run: self.run,
            holder: self.holder.to_owned(),
            lease_until: self.lease_until(),
            records,
            policy,
            deletes,
            state,
        };
        let (sink, stream) = (Arc::clone(&self.sink), self.stream.table.clone());
        // On a task of its own, at once: the sink writes while the run fetches and reads.
        let task = tokio::spawn(async move {
            sink.commit(commit).await.map_err(|error| {
                if error.is_lease_lost() { SyncError::LeaseLost { stream } } else { SyncError::Sink(error) }
            })
        });
        Box::pin(async move {
            match task.await {
                Ok(written) => written,
                Err(stopped) if stopped.is_panic() => std::panic::resume_unwind(stopped.into_panic()),
                Err(_) => Err(SyncError::Sink(SinkError::plain("committing: the task was cancelled"))),
            }
        })
    }

    /// Waits for `pending`, if any, and counts what it wrote.
    pub(crate) async fn settle(&mut self, pending: Option<Pending>) -> Result<(), SyncError> {
        if let Some(pending) = pending {
            let written = pending.await?;
            self.report.count(written);
        }
        Ok(())
    }

    /// Waits for `pending`, if any, so that the rows a failed run committed are counted, and
    /// returns `error`.
    pub(crate) async fn fail(&mut self, pending: Option<Pending>, error: SyncError) -> SyncError {
        let _ = self.settle(pending).await;
        error
    }

    /// Tells the progress callback where the run is.
    pub(crate) fn tell(&self) {
        if let Some(progress) = self.progress {
            progress(&Progress {
                stream: self.stream.table.clone(),
                phase: self.phase,
                pages: self.report.pages,
                seen: self.report.seen,
                written: self.report.written(),
                total: self.total,
            });
        }
    }
}

/// The lease's end if taken or renewed now for `lease`.
pub(crate) fn lease_until(lease: Duration) -> String {
    let lease = chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::MAX);
    time::format(Utc::now().checked_add_signed(lease).unwrap_or(DateTime::<Utc>::MAX_UTC))
}
