//! What a run reports: per stream at the end, and as it goes.

use serde::Serialize;

use crate::SyncError;
use crate::sink::Written;

/// How a stream's run read the list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Mode {
    /// Newest first, down to the mark minus the lookback.
    #[default]
    Incremental,
    /// The whole list: a first run, or a page out of order with
    /// [`Disorder::FullScan`](crate::Disorder::FullScan).
    Full,
    /// An incremental scan, then a reconciliation (deletes, the server's version wins).
    Reconcile,
}

/// What one stream's run did.
#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
pub struct StreamReport {
    /// The stream (its table).
    pub stream: String,
    /// The run's number in `br_sync_runs`; 0 when none was recorded (busy, or refused before).
    pub run: i64,
    /// `ok` or `failed`.
    pub outcome: &'static str,
    /// Requests sent: list pages and read-one confirmations (the token requests apart).
    pub requests: u64,
    /// List pages read.
    pub pages: u64,
    /// Records read (with a key).
    pub seen: u64,
    /// Rows inserted.
    pub inserted: u64,
    /// Rows updated (undeletes included).
    pub updated: u64,
    /// Records identical to the stored version.
    pub unchanged: u64,
    /// Rows found deleted.
    pub deleted: u64,
    /// Records older than the stored version in an incremental scan, left as stored.
    pub stale: u64,
    /// Records without a key, skipped.
    pub without_id: u64,
    /// Restarts from the first page after a cursor expired.
    pub restarts: u32,
    /// How the list was read.
    pub mode: Mode,
    /// The mark after the run (stored form), if there is one.
    pub mark: Option<String>,
    /// Why the run failed.
    #[serde(skip)]
    pub error: Option<SyncError>,
}

impl StreamReport {
    pub(crate) fn count(&mut self, written: Written) {
        self.inserted += written.inserted;
        self.updated += written.updated + written.undeleted;
        self.unchanged += written.unchanged;
        self.stale += written.stale;
        self.deleted += written.deleted;
    }

    /// Rows written: inserted, updated and deleted.
    pub fn written(&self) -> u64 {
        self.inserted + self.updated + self.deleted
    }
}

/// What a [`Mirror`](crate::Mirror) run did: one report per stream, in the order given.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct SyncReport {
    /// Each stream's report.
    pub streams: Vec<StreamReport>,
}

impl SyncReport {
    /// The report of the stream named `name`.
    pub fn stream(&self, name: &str) -> Option<&StreamReport> {
        self.streams.iter().find(|report| report.stream == name)
    }

    /// The report, or the error of the first stream that failed.
    ///
    /// # Errors
    ///
    /// The first failed stream's [`SyncError`].
    pub fn into_result(self) -> Result<Self, SyncError> {
        match self.streams.iter().find_map(|report| report.error.clone()) {
            Some(error) => Err(error),
            None => Ok(self),
        }
    }
}

/// What a run is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Phase {
    /// Reading the changes, newest first.
    Scan,
    /// Reading the whole list by creation time, for deletes.
    Reconcile,
    /// Asking for the records the reconciliation did not see, one by one.
    Confirm,
    /// Finished.
    Done,
}

/// A run's progress, handed to [`Mirror::on_progress`](crate::Mirror::on_progress) after each
/// page.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Progress {
    /// The stream (its table).
    pub stream: String,
    /// What it is doing.
    pub phase: Phase,
    /// List pages read.
    pub pages: u64,
    /// Records read.
    pub seen: u64,
    /// Rows written.
    pub written: u64,
    /// The list's `totalCount`, when the server sends it.
    pub total: Option<u64>,
}
