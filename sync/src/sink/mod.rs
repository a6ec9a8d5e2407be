//! Where a mirror is kept: the [`Sink`] trait, what it stores, and the rule every sink applies
//! to a record that arrives.
//!
//! A sink keeps, per stream, a table of records, the stream's state and lease, its runs, and
//! the change rows (the outbox). Every [`Commit`] is one transaction: the page's changes, one
//! change row per change, and the new state, together.

mod memory;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

pub use memory::MemorySink;
#[cfg(feature = "postgres")]
pub use postgres::PostgresSink;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteSink;

use crate::SinkError;

/// What the methods of a [`Sink`] return.
pub type SinkFuture<'a, T> = BoxFuture<'a, Result<T, SinkError>>;

/// A record as a sink stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Record {
    /// The record's key (its `id`).
    pub id: String,
    /// The updated field as a timestamp in the stored form
    /// (`YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`, UTC); `None` without a readable one.
    pub updated_at: Option<String>,
    /// The updated field as served, when there is one.
    pub updated_at_raw: Option<String>,
    /// SHA-256, in hex, of the record's RFC 8785 canonical JSON.
    pub digest: String,
    /// The record as served, as JSON text.
    pub body: String,
}

impl Record {
    /// The record `value` as `stream` reads it (its key, updated field and digest); `None`
    /// without a key. For sinks' own tests and benchmarks: a run makes its records itself.
    pub fn read(value: serde_json::Value, stream: &crate::Stream) -> Option<Record> {
        crate::record::element(value, &stream.fields)
    }
}

/// A row of a mirror's table, as [`Sink::rows`] reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Row {
    /// The record as last written.
    pub record: Record,
    /// When it was found deleted (stored form); `None` while live.
    pub deleted_at: Option<String>,
    /// The run that inserted the row.
    pub first_run: i64,
    /// The run that wrote its last change.
    pub changed_run: i64,
}

/// One change row of `br_sync_changes`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Change {
    /// Its place in the outbox, increasing.
    pub seq: i64,
    /// The stream (its table).
    pub stream: String,
    /// The record's key.
    pub id: String,
    /// What was written.
    pub op: Op,
    /// The digest of the record written (for a delete: of the record deleted).
    pub digest: String,
    /// The run that wrote it.
    pub run: i64,
}

/// What a change did to a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Op {
    /// A record the mirror did not hold.
    Insert,
    /// A new version of a record.
    Update,
    /// A record found deleted (`deleted_at` set; the row stays).
    Delete,
    /// A record found deleted that the server serves again.
    Undelete,
}

impl Op {
    /// Its name in `br_sync_changes.op`.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Insert => "insert",
            Op::Update => "update",
            Op::Delete => "delete",
            Op::Undelete => "undelete",
        }
    }

    /// The op named `name`.
    pub fn parse(name: &str) -> Option<Op> {
        [Op::Insert, Op::Update, Op::Delete, Op::Undelete].into_iter().find(|op| op.as_str() == name)
    }
}

/// A stream's state: a JSON object in `br_sync_state.state`, of constant size but for the
/// suspects of a list without a read-one endpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct State {
    /// The mark, in the stored timestamp form; absent before the first successful run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark: Option<String>,
    /// When the last reconciliation (or the first run) started, in the stored form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconciled_at: Option<String>,
    /// Ids the last reconciliation missed, where no read-one endpoint confirms a delete.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
}

impl State {
    /// The state kept in a database's `state` column (JSON text), if any.
    pub(crate) fn read(text: Option<String>) -> Result<Option<State>, SinkError> {
        let read = text.map(|text| serde_json::from_str(&text)).transpose();
        read.map_err(|e| SinkError::new("reading a stream's state", e))
    }

    /// `state` as the `state` column keeps it, for the commit `doing`.
    pub(crate) fn text(state: Option<&State>, doing: &'static str) -> Result<Option<String>, SinkError> {
        state.map(serde_json::to_string).transpose().map_err(|e| SinkError::new(doing, e))
    }
}

/// How a commit treats a record whose stored version is newer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Policy {
    /// An incremental scan: a record whose updated field is older than the stored one's is
    /// stale, and the stored row stays.
    Incremental,
    /// A reconciliation: the server's version wins.
    Authoritative,
}

/// One transaction: the changed records and the deletes of a page, their change rows, the
/// lease renewed, and the new state when the run sets one.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Commit {
    /// The stream (its table).
    pub stream: String,
    /// The run writing.
    pub run: i64,
    /// The lease holder writing: the commit fails if the lease is another's.
    pub holder: String,
    /// The lease renewed until then (stored form).
    pub lease_until: String,
    /// The records of the page, each inserted, updated or left as the rule says.
    pub records: Vec<Record>,
    /// How stored versions that are newer are treated.
    pub policy: Policy,
    /// Ids found deleted.
    pub deletes: Vec<String>,
    /// The new state, if it changes.
    pub state: Option<State>,
}

impl Commit {
    /// A commit of `records` (incremental, no delete, the state unchanged) by `holder` for
    /// `run`, renewing the lease until `lease_until`. For sinks' own tests and benchmarks: a
    /// run makes its commits itself.
    pub fn new(stream: &str, run: i64, holder: &str, lease_until: &str, records: Vec<Record>) -> Commit {
        Commit {
            stream: stream.to_owned(),
            run,
            holder: holder.to_owned(),
            lease_until: lease_until.to_owned(),
            records,
            policy: Policy::Incremental,
            deletes: Vec::new(),
            state: None,
        }
    }
}

/// What a commit wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Written {
    /// Rows inserted.
    pub inserted: u64,
    /// Rows updated.
    pub updated: u64,
    /// Rows live again.
    pub undeleted: u64,
    /// Records identical to the stored version: nothing written.
    pub unchanged: u64,
    /// Records older than the stored version in an incremental scan: nothing written.
    pub stale: u64,
    /// Rows marked deleted.
    pub deleted: u64,
}

/// What a commit does with a record, given the stored row (`None`: none).
pub(crate) fn decide(stored: Option<&Stored>, record: &Record, policy: Policy) -> Decision {
    let Some(stored) = stored else { return Decision::Write(Op::Insert) };
    if stored.deleted {
        return Decision::Write(Op::Undelete);
    }
    if stored.digest == record.digest {
        return Decision::Unchanged;
    }
    let older = match (&stored.updated_at, &record.updated_at) {
        (Some(stored), Some(new)) => new < stored,
        _ => false,
    };
    if policy == Policy::Incremental && older { Decision::Stale } else { Decision::Write(Op::Update) }
}

/// What a sink reads of a stored row before it writes.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    pub(crate) digest: String,
    pub(crate) updated_at: Option<String>,
    pub(crate) deleted: bool,
}

/// What [`decide`] says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    Write(Op),
    Unchanged,
    Stale,
}

impl Written {
    /// Counts one decision.
    pub(crate) fn count(&mut self, decision: Decision) {
        match decision {
            Decision::Write(Op::Insert) => self.inserted += 1,
            Decision::Write(Op::Update) => self.updated += 1,
            Decision::Write(Op::Undelete) => self.undeleted += 1,
            Decision::Write(Op::Delete) => self.deleted += 1,
            Decision::Unchanged => self.unchanged += 1,
            Decision::Stale => self.stale += 1,
        }
    }
}

/// A stream's standing, as `business-records-sync status` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamStatus {
    /// The stream (its table).
    pub stream: String,
    /// Its state.
    pub state: State,
    /// Who holds its lease, if anyone.
    pub lease_holder: Option<String>,
    /// Until when (stored form).
    pub lease_until: Option<String>,
    /// Its last run, if any.
    pub last_run: Option<i64>,
    /// That run's outcome (`ok`, `failed`, `abandoned`, `running`).
    pub last_outcome: Option<String>,
}

/// Where a mirror is kept. Implemented by [`SqliteSink`], [`PostgresSink`] and [`MemorySink`];
/// a sink of your own implements it the same way (boxed futures, as the client's
/// `TokenStore`).
///
/// Timestamps are text in the stored form, `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ` (UTC), so that
/// comparing them as text compares them in time.
pub trait Sink: Send + Sync + 'static {
    /// The stream's state; `None` before its first successful run.
    fn load<'a>(&'a self, stream: &'a str) -> SinkFuture<'a, Option<State>>;

    /// Takes or renews the stream's lease for `holder` until `until`, if no other holder's
    /// lease lasts past `now`; with `until` `None`, releases it if `holder` holds it. Returns
    /// whether `holder` holds it now. Creates the stream's table (`stream` is its name) when
    /// it does not exist.
    fn lease<'a>(
        &'a self,
        stream: &'a str,
        holder: &'a str,
        now: &'a str,
        until: Option<&'a str>,
    ) -> SinkFuture<'a, bool>;

    /// Records a new run of the stream, `running` since `now`, and marks the runs of the
    /// stream still `running` (their holders' leases expired, since this holder has the
    /// lease) `abandoned`. Returns the run's number.
    fn start_run<'a>(&'a self, stream: &'a str, now: &'a str) -> SinkFuture<'a, i64>;

    /// Writes `commit` in one transaction: each record inserted, updated or left unchanged
    /// (see [`Policy`]), each delete, one change row per change, the lease renewed and the
    /// new state. Fails, writing nothing, if the lease is not the commit's holder's.
    fn commit(&self, commit: Commit) -> SinkFuture<'_, Written>;

    /// The ids of the stream's live rows (not deleted).
    fn live_ids<'a>(&'a self, stream: &'a str) -> SinkFuture<'a, Vec<String>>;

    /// Ends a run: its outcome (`ok` or `failed`), when, and its report as JSON.
    fn finish_run<'a>(
        &'a self,
        run: i64,
        outcome: &'a str,
        now: &'a str,
        report: &'a str,
    ) -> SinkFuture<'a, ()>;

    /// Every stream's standing.
    fn status(&self) -> SinkFuture<'_, Vec<StreamStatus>>;

    /// The change rows after `after` (a `seq`), oldest first, at most `limit`: the outbox a
    /// pipeline of your own follows.
    fn changes(&self, after: i64, limit: usize) -> SinkFuture<'_, Vec<Change>>;

    /// Every row of the stream's table, in id order (for tests and small mirrors).
    fn rows<'a>(&'a self, stream: &'a str) -> SinkFuture<'a, Vec<Row>>;
}

/// Whether `name` can name a table: ASCII letters, digits and `_`, not starting with a
/// digit, at most 63 bytes, and not a `br_sync_` table.
pub(crate) fn valid_table(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 63
        && !name.to_ascii_lowercase().starts_with("br_sync_")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(digest: &str, updated_at: Option<&str>) -> Record {
        Record {
            id: "a".into(),
            updated_at: updated_at.map(Into::into),
            updated_at_raw: None,
            digest: digest.into(),
            body: "{}".into(),
        }
    }

    #[test]
    fn a_record_is_written_when_its_content_differs_and_it_is_not_older() {
        let stored = |digest: &str, updated_at: Option<&str>, deleted| Stored {
            digest: digest.into(),
            updated_at: updated_at.map(Into::into),
            deleted,
        };
        let (t1, t2) = (Some("2024-01-01T00:00:00.000000000Z"), Some("2024-01-02T00:00:00.000000000Z"));
        let incremental = Policy::Incremental;
        assert_eq!(decide(None, &record("d", t1), incremental), Decision::Write(Op::Insert));
        assert_eq!(decide(Some(&stored("d", t1, false)), &record("d", t2), incremental), Decision::Unchanged);
        assert_eq!(
            decide(Some(&stored("d", t1, false)), &record("e", t1), incremental),
            Decision::Write(Op::Update)
        );
        assert_eq!(decide(Some(&stored("d", t2, false)), &record("e", t1), incremental), Decision::Stale);
        assert_eq!(
            decide(Some(&stored("d", t2, false)), &record("e", t1), Policy::Authoritative),
            Decision::Write(Op::Update)
        );
        assert_eq!(
            decide(Some(&stored("d", t2, false)), &record("e", None), incremental),
            Decision::Write(Op::Update)
        );
        assert_eq!(
            decide(Some(&stored("d", t1, true)), &record("d", t1), incremental),
            Decision::Write(Op::Undelete)
        );
    }

    #[test]
    fn table_names_are_plain_identifiers() {
        for good in ["companies", "active_companies", "_x1"] {
            assert!(valid_table(good), "{good}");
        }
        for bad in ["", "1a", "a-b", "a b", "br_sync_state", "BR_SYNC_runs", "\"x\"", &"a".repeat(64)] {
            assert!(!valid_table(bad), "{bad}");
        }
    }
}
