//! A mirror in memory, for tests: the same rules as the database sinks, behind one lock.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use super::{
    Change, Commit, Decision, Op, Row, Sink, SinkFuture, State, Stored, StreamStatus, Written, decide,
};
use crate::SinkError;

/// A mirror held in memory: for tests, and for trying the library without a database.
/// Clones share the same mirror.
///
/// ```
/// # async fn run(client: business_records::Client) -> Result<(), business_records_sync::SyncError> {
/// use business_records_sync::{MemorySink, Mirror, Sink, Stream};
///
/// let sink = MemorySink::new();
/// Mirror::new(client, sink.clone()).stream(Stream::companies()).run().await?;
/// let rows = sink.rows("companies").await?;
/// # let _ = rows; Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct MemorySink {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug, Default)]
struct Inner {
    tables: BTreeMap<String, BTreeMap<String, Row>>,
    streams: BTreeMap<String, StreamRow>,
    runs: Vec<RunRow>,
    changes: Vec<Change>,
}

#[derive(Debug, Default)]
struct StreamRow {
    state: Option<State>,
    holder: Option<String>,
    until: Option<String>,
}

#[derive(Debug)]
struct RunRow {
    stream: String,
    outcome: String,
}

impl MemorySink {
    /// An empty mirror.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Inner {
    fn write(&mut self, commit: &Commit) -> Result<Written, SinkError> {
        let holds =
            self.streams.get(&commit.stream).and_then(|s| s.holder.as_deref()) == Some(&commit.holder);
        if !holds {
            return Err(SinkError::lease_lost());
        }
        let mut written = Written::default();
        let table = self.tables.entry(commit.stream.clone()).or_default();
        let mut changes = Vec::new();
        for record in &commit.records {
            let stored = table.get(&record.id).map(|row| Stored {
                digest: row.record.digest.clone(),
                updated_at: row.record.updated_at.clone(),
                deleted: row.deleted_at.is_some(),
            });
            let decision = decide(stored.as_ref(), record, commit.policy);
            written.count(decision);
            let Decision::Write(op) = decision else { continue };
            let first_run = table.get(&record.id).map_or(commit.run, |row| row.first_run);
            let row = Row { record: record.clone(), deleted_at: None, first_run, changed_run: commit.run };
            table.insert(record.id.clone(), row);
            changes.push((record.id.clone(), op, record.digest.clone()));
        }
        for id in &commit.deletes {
            let Some(row) = table.get_mut(id).filter(|row| row.deleted_at.is_none()) else { continue };
            row.deleted_at = Some(crate::time::now());
            row.changed_run = commit.run;
            written.count(Decision::Write(Op::Delete));
            changes.push((id.clone(), Op::Delete, row.record.digest.clone()));
        }
        for (id, op, digest) in changes {
            let seq = self.changes.len() as i64 + 1;
            self.changes.push(Change { seq, stream: commit.stream.clone(), id, op, digest, run: commit.run });
        }
        let stream = self.streams.entry(commit.stream.clone()).or_default();
        stream.until = Some(commit.lease_until.clone());
        if let Some(state) = &commit.state {
            stream.state = Some(state.clone());
        }
        Ok(written)
    }
}

impl Sink for MemorySink {
    fn load<'a>(&'a self, stream: &'a str) -> SinkFuture<'a, Option<State>> {
        let state = self.lock().streams.get(stream).and_then(|s| s.state.clone());
        Box::pin(async move { Ok(state) })
    }

    fn lease<'a>(
        &'a self,
        stream: &'a str,
        holder: &'a str,
        now: &'a str,
        until: Option<&'a str>,
    ) -> SinkFuture<'a, bool> {
        let mut inner = self.lock();
        inner.tables.entry(stream.to_owned()).or_default();
        let row = inner.streams.entry(stream.to_owned()).or_default();
        let mine = row.holder.as_deref() == Some(holder);
        let free = row.holder.is_none() || row.until.as_deref().is_none_or(|until| until < now);
        let holds = match until {
            Some(until) if mine || free => {
                row.holder = Some(holder.to_owned());
                row.until = Some(until.to_owned());
                true
            }
            Some(_) => false,
            None => {
                if mine {
                    row.holder = None;
                    row.until = None;
                }
                false
            }
        };
        Box::pin(async move { Ok(holds) })
    }

    fn start_run<'a>(&'a self, stream: &'a str, _now: &'a str) -> SinkFuture<'a, i64> {
        let mut inner = self.lock();
        for run in inner.runs.iter_mut().filter(|run| run.stream == stream && run.outcome == "running") {
            run.outcome = "abandoned".to_owned();
        }
        inner.runs.push(RunRow { stream: stream.to_owned(), outcome: "running".to_owned() });
        let run = inner.runs.len() as i64;
        Box::pin(async move { Ok(run) })
    }

    fn commit(&self, commit: Commit) -> SinkFuture<'_, Written> {
        let written = self.lock().write(&commit);
        Box::pin(async move { written })
    }

    fn live_ids<'a>(&'a self, stream: &'a str) -> SinkFuture<'a, Vec<String>> {
        let inner = self.lock();
        let rows = inner.tables.get(stream).into_iter().flat_map(|table| table.values());
        let ids = rows.filter(|row| row.deleted_at.is_none()).map(|row| row.record.id.clone()).collect();
        Box::pin(async move { Ok(ids) })
    }

    fn finish_run<'a>(
        &'a self,
        run: i64,
        outcome: &'a str,
        _now: &'a str,
        _report: &'a str,
    ) -> SinkFuture<'a, ()> {
        let mut inner = self.lock();
        if let Some(row) = usize::try_from(run - 1).ok().and_then(|i| inner.runs.get_mut(i)) {
            row.outcome = outcome.to_owned();
        }
        Box::pin(async move { Ok(()) })
    }

    fn status(&self) -> SinkFuture<'_, Vec<StreamStatus>> {
        let inner = self.lock();
        let statuses = inner
            .streams
            .iter()
            .map(|(name, row)| {
                let last = inner.runs.iter().enumerate().rfind(|(_, run)| &run.stream == name);
                StreamStatus {
                    stream: name.clone(),
                    state: row.state.clone().unwrap_or_default(),
                    lease_holder: row.holder.clone(),
                    lease_until: row.until.clone(),
                    last_run: last.map(|(i, _)| i as i64 + 1),
                    last_outcome: last.map(|(_, run)| run.outcome.clone()),
                }
            })
            .collect();
        Box::pin(async move { Ok(statuses) })
    }

    fn changes(&self, after: i64, limit: usize) -> SinkFuture<'_, Vec<Change>> {
        let inner = self.lock();
        let changes = inner.changes.iter().filter(|c| c.seq > after).take(limit).cloned().collect();
        Box::pin(async move { Ok(changes) })
    }

    fn rows<'a>(&'a self, stream: &'a str) -> SinkFuture<'a, Vec<Row>> {
        let rows = self.lock().tables.get(stream).map(|t| t.values().cloned().collect()).unwrap_or_default();
        Box::pin(async move { Ok(rows) })
    }
}
