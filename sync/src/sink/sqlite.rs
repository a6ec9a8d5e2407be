//! The SQLite mirror: one file, WAL, written on a thread of its own fed by a channel, so that
//! a page is committed while the next one is fetched.

use std::path::Path;
use std::sync::mpsc;

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use tokio::sync::oneshot;

use super::{
    Change, Commit, Decision, Op, Record, Row, Sink, SinkFuture, State, Stored, StreamStatus, Written,
    decide, valid_table,
};
use crate::{SinkError, SyncError};

/// The schema version this sink writes (`PRAGMA user_version`).
const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS br_sync_state (
    stream TEXT PRIMARY KEY, state TEXT, lease_holder TEXT, lease_until TEXT);
CREATE TABLE IF NOT EXISTS br_sync_changes (
    seq INTEGER PRIMARY KEY, stream TEXT NOT NULL, id TEXT NOT NULL,
    op TEXT NOT NULL, digest TEXT, run INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS br_sync_runs (
    run INTEGER PRIMARY KEY, stream TEXT NOT NULL, started_at TEXT NOT NULL,
    ended_at TEXT, outcome TEXT NOT NULL, report TEXT);
CREATE INDEX IF NOT EXISTS br_sync_runs_stream ON br_sync_runs (stream, outcome);
";

/// Work for the writer thread.
type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// A mirror in one SQLite file (the bundled SQLite; no system library needed).
///
/// The file is opened in WAL mode with `synchronous=NORMAL`, so that other programs read the
/// mirror while it is written; the schema is created, or migrated, on open. Every write runs on
/// one thread of its own, fed by a channel: a run queues a page's commit and fetches the next
/// page meanwhile. Clones share the thread and the connection; the thread ends with the last
/// clone. Two processes may open the same file: the lease keeps one writer per stream, and
/// SQLite's lock (waited for up to 5 s) one transaction at a time.
///
/// ```no_run
/// # async fn run() -> Result<(), business_records_sync::SyncError> {
/// use business_records_sync::SqliteSink;
///
/// let sink = SqliteSink::open("mirror.sqlite").await?;
/// # let _ = sink; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SqliteSink {
    jobs: mpsc::Sender<Job>,
}

fn db(doing: &'static str) -> impl Fn(rusqlite::Error) -> SinkError {
    move |error| SinkError::new(doing, error)
}

impl SqliteSink {
    /// Opens (or creates) the mirror at `path`.
    ///
    /// # Errors
    ///
    /// [`SyncError::Sink`] if the file cannot be opened as a SQLite database, or holds a
    /// schema newer than this version writes.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, SyncError> {
        let path = path.as_ref().to_owned();
        let (jobs, queue) = mpsc::channel::<Job>();
        let (ready, opened) = oneshot::channel();
        let writer = std::thread::Builder::new().name("br-sync-sqlite".to_owned()).spawn(move || {
            let mut connection = match prepare(&path) {
                Ok(connection) => {
                    let _ = ready.send(Ok(()));
                    connection
                }
                Err(error) => {
                    let _ = ready.send(Err(error));
                    return;
                }
            };
            for job in queue {
                job(&mut connection);
            }
        });
        writer.map_err(|e| SinkError::new("starting the writer thread", e))?;
        opened.await.map_err(|_| SinkError::plain("opening the database"))??;
        Ok(SqliteSink { jobs })
    }

    /// Runs `work` on the writer thread; queued at once, answered when done.
    fn call<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T, SinkError> + Send + 'static,
    ) -> SinkFuture<'_, T> {
        let (answer, answered) = oneshot::channel();
        let sent = self.jobs.send(Box::new(move |connection| {
            let _ = answer.send(work(connection));
        }));
        Box::pin(async move {
            sent.map_err(|_| SinkError::plain("queueing work: the writer thread stopped"))?;
            answered.await.map_err(|_| SinkError::plain("waiting for the writer thread"))?
        })
    }
}

/// Opens the file, sets WAL and `synchronous=NORMAL`, creates or migrates the schema.
fn prepare(path: &Path) -> Result<Connection, SinkError> {
    let connection = Connection::open(path).map_err(db("opening the database"))?;
    connection.busy_timeout(std::time::Duration::from_secs(5)).map_err(db("setting the busy timeout"))?;
    connection.pragma_update(None, "journal_mode", "WAL").map_err(db("turning WAL on"))?;
    connection.pragma_update(None, "synchronous", "NORMAL").map_err(db("setting synchronous"))?;
    let version: i64 = connection
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(db("reading the schema version"))?;
    if version > SCHEMA_VERSION {
        return Err(SinkError::plain("opening the database: its schema is newer than this version writes"));
    }
    connection.execute_batch(SCHEMA).map_err(db("creating the schema"))?;
    connection
        .pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(db("writing the schema version"))?;
    Ok(connection)
}

fn create_table(tx: &Transaction<'_>, table: &str) -> Result<(), SinkError> {
    if !valid_table(table) {
        return Err(SinkError::plain("creating a table: not a valid table name"));
    }
    let sql = format!(
        "CREATE TABLE IF NOT EXISTS \"{table}\" (id TEXT PRIMARY KEY, updated_at TEXT, updated_at_raw TEXT,
         digest TEXT NOT NULL, body TEXT NOT NULL, deleted_at TEXT, first_run INTEGER NOT NULL,
         changed_run INTEGER NOT NULL)"
    );
    tx.execute_batch(&sql).map_err(db("creating a table"))
}

/// Whether `holder` holds the stream's lease.
fn holds(tx: &Transaction<'_>, stream: &str, holder: &str) -> Result<bool, SinkError> {
    let current: Option<Option<String>> = tx
        .query_row("SELECT lease_holder FROM br_sync_state WHERE stream = ?1", [stream], |row| row.get(0))
        .optional()
        .map_err(db("reading the lease"))?;
    Ok(current.flatten().as_deref() == Some(holder))
}

fn write(tx: &Transaction<'_>, commit: &Commit) -> Result<Written, SinkError> {
    if !valid_table(&commit.stream) {
        return Err(SinkError::plain("committing: not a valid table name"));
    }
    if !holds(tx, &commit.stream, &commit.holder)? {
        return Err(SinkError::lease_lost());
    }
    let table = &commit.stream;
    let doing = "committing a page";
    let mut select = tx
        .prepare_cached(&format!(
            "SELECT digest, updated_at, deleted_at IS NOT NULL FROM \"{table}\" WHERE id = ?1"
        ))
        .map_err(db(doing))?;
    let mut insert = tx
        .prepare_cached(&format!(
            "INSERT INTO \"{table}\" (id, updated_at, updated_at_raw, digest, body, deleted_at, first_run,
             changed_run) VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6, ?6)"
        ))
        .map_err(db(doing))?;
    let mut update = tx
        .prepare_cached(&format!(
            "UPDATE \"{table}\" SET updated_at = ?2, updated_at_raw = ?3, digest = ?4, body = ?5,
             deleted_at = NULL, changed_run = ?6 WHERE id = ?1"
        ))
        .map_err(db(doing))?;
    let mut delete = tx
        .prepare_cached(&format!(
            "UPDATE \"{table}\" SET deleted_at = ?2, changed_run = ?3 WHERE id = ?1 AND deleted_at IS NULL
             RETURNING digest"
        ))
        .map_err(db(doing))?;
    let mut change = tx
        .prepare_cached(
            "INSERT INTO br_sync_changes (stream, id, op, digest, run) VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .map_err(db(doing))?;
    let mut written = Written::default();
    for record in &commit.records {
        let stored = select
            .query_row([&record.id], |row| {
                Ok(Stored { digest: row.get(0)?, updated_at: row.get(1)?, deleted: row.get(2)? })
            })
            .optional()
            .map_err(db(doing))?;
        let decision = decide(stored.as_ref(), record, commit.policy);
        written.count(decision);
        let Decision::Write(op) = decision else { continue };
        let Record { id, updated_at, updated_at_raw, digest, body } = record;
        let values = params![id, updated_at, updated_at_raw, digest, body, commit.run];
        if op == Op::Insert { insert.execute(values) } else { update.execute(values) }.map_err(db(doing))?;
        change.execute(params![table, id, op.as_str(), digest, commit.run]).map_err(db(doing))?;
    }
    let now = crate::time::now();
    for id in &commit.deletes {
        let deleted: Option<String> =
            delete.query_row(params![id, now, commit.run], |row| row.get(0)).optional().map_err(db(doing))?;
        if let Some(digest) = deleted {
            written.count(Decision::Write(Op::Delete));
            change.execute(params![table, id, Op::Delete.as_str(), digest, commit.run]).map_err(db(doing))?;
        }
    }
    let state = State::text(commit.state.as_ref(), doing)?;
    tx.execute(
        "UPDATE br_sync_state SET lease_until = ?2, state = coalesce(?3, state) WHERE stream = ?1",
        params![table, commit.lease_until, state],
    )
    .map_err(db(doing))?;
    Ok(written)
}

/// Runs `work` in an immediate transaction and commits it.
fn transaction<T>(
    connection: &mut Connection,
    doing: &'static str,
    work: impl FnOnce(&Transaction<'_>) -> Result<T, SinkError>,
) -> Result<T, SinkError> {
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate).map_err(db(doing))?;
    let value = work(&tx)?;
    tx.commit().map_err(db(doing))?;
    Ok(value)
}

impl Sink for SqliteSink {
    fn load<'a>(&'a self, stream: &'a str) -> SinkFuture<'a, Option<State>> {
        let stream = stream.to_owned();
        self.call(move |connection| {
            let text: Option<Option<String>> = connection
                .query_row("SELECT state FROM br_sync_state WHERE stream = ?1", [&stream], |row| row.get(0))
                .optional()
                .map_err(db("reading a stream's state"))?;
            State::read(text.flatten())
        })
    }

    fn lease<'a>(
        &'a self,
        stream: &'a str,
        holder: &'a str,
        now: &'a str,
        until: Option<&'a str>,
    ) -> SinkFuture<'a, bool> {
        let (stream, holder, now, until) =
            (stream.to_owned(), holder.to_owned(), now.to_owned(), until.map(str::to_owned));
        self.call(move |connection| {
            transaction(connection, "taking the lease", |tx| {
                let Some(until) = until else {
                    tx.execute(
                        "UPDATE br_sync_state SET lease_holder = NULL, lease_until = NULL
                         WHERE stream = ?1 AND lease_holder = ?2",
                        [&stream, &holder],
                    )
                    .map_err(db("releasing the lease"))?;
                    return Ok(false);
                };
                create_table(tx, &stream)?;
                let taken = tx
                    .execute(
                        "INSERT INTO br_sync_state (stream, state, lease_holder, lease_until) VALUES (?1, NULL, ?2, ?3)
                         ON CONFLICT (stream) DO UPDATE SET lease_holder = excluded.lease_holder,
                         lease_until = excluded.lease_until
                         WHERE br_sync_state.lease_holder IS NULL OR br_sync_state.lease_holder = excluded.lease_holder
                         OR br_sync_state.lease_until IS NULL OR br_sync_state.lease_until < ?4",
                        [&stream, &holder, &until, &now],
                    )
                    .map_err(db("taking the lease"))?;
                Ok(taken > 0)
            })
        })
    }

    fn start_run<'a>(&'a self, stream: &'a str, now: &'a str) -> SinkFuture<'a, i64> {
        let (stream, now) = (stream.to_owned(), now.to_owned());
        self.call(move |connection| {
            transaction(connection, "starting a run", |tx| {
                tx.execute(
                    "UPDATE br_sync_runs SET outcome = 'abandoned' WHERE stream = ?1 AND outcome = 'running'",
                    [&stream],
                )
                .map_err(db("starting a run"))?;
                tx.query_row(
                    "INSERT INTO br_sync_runs (stream, started_at, outcome) VALUES (?1, ?2, 'running') RETURNING run",
                    [&stream, &now],
                    |row| row.get(0),
                )
                .map_err(db("starting a run"))
            })
        })
    }

    fn commit(&self, commit: Commit) -> SinkFuture<'_, Written> {
        self.call(move |connection| transaction(connection, "committing a page", |tx| write(tx, &commit)))
    }

    fn live_ids<'a>(&'a self, stream: &'a str) -> SinkFuture<'a, Vec<String>> {
        let stream = stream.to_owned();
        self.call(move |connection| {
            if !valid_table(&stream) {
                return Err(SinkError::plain("reading ids: not a valid table name"));
            }
            let doing = "reading the live ids";
            let mut statement = connection
                .prepare(&format!("SELECT id FROM \"{stream}\" WHERE deleted_at IS NULL"))
                .map_err(db(doing))?;
            let ids = statement.query_map([], |row| row.get(0)).map_err(db(doing))?;
            ids.collect::<Result<_, _>>().map_err(db(doing))
        })
    }

    fn finish_run<'a>(
        &'a self,
        run: i64,
        outcome: &'a str,
        now: &'a str,
        report: &'a str,
    ) -> SinkFuture<'a, ()> {
        let (outcome, now, report) = (outcome.to_owned(), now.to_owned(), report.to_owned());
        self.call(move |connection| {
            connection
                .execute(
                    "UPDATE br_sync_runs SET outcome = ?2, ended_at = ?3, report = ?4 WHERE run = ?1",
                    params![run, outcome, now, report],
                )
                .map_err(db("ending a run"))?;
            Ok(())
        })
    }

    fn status(&self) -> SinkFuture<'_, Vec<StreamStatus>> {
        self.call(|connection| {
            let doing = "reading the status";
            let mut statement = connection
                .prepare(
                    "SELECT s.stream, s.state, s.lease_holder, s.lease_until, r.run, r.outcome
                     FROM br_sync_state s LEFT JOIN br_sync_runs r
                     ON r.run = (SELECT max(run) FROM br_sync_runs WHERE stream = s.stream) ORDER BY s.stream",
                )
                .map_err(db(doing))?;
            let rows = statement
                .query_map([], |row| {
                    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?))
                })
                .map_err(db(doing))?;
            let mut statuses = Vec::new();
            for row in rows {
                let (stream, state, lease_holder, lease_until, last_run, last_outcome) = row.map_err(db(doing))?;
                let state = State::read(state)?.unwrap_or_default();
                statuses.push(StreamStatus { stream, state, lease_holder, lease_until, last_run, last_outcome });
            }
            Ok(statuses)
        })
    }

    fn changes(&self, after: i64, limit: usize) -> SinkFuture<'_, Vec<Change>> {
        self.call(move |connection| {
            let doing = "reading the changes";
            let mut statement = connection
                .prepare("SELECT seq, stream, id, op, digest, run FROM br_sync_changes WHERE seq > ?1 ORDER BY seq LIMIT ?2")
                .map_err(db(doing))?;
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let rows = statement
                .query_map(params![after, limit], |row| {
                    let op: String = row.get(3)?;
                    Ok(Change {
                        seq: row.get(0)?,
                        stream: row.get(1)?,
                        id: row.get(2)?,
                        op: Op::parse(&op).unwrap_or(Op::Update),
                        digest: row.get::<_, Option<String>>(4)?.unwrap_or_default(),
                        run: row.get(5)?,
                    })
                })
                .map_err(db(doing))?;
            rows.collect::<Result<_, _>>().map_err(db(doing))
        })
    }

    fn rows<'a>(&'a self, stream: &'a str) -> SinkFuture<'a, Vec<Row>> {
        let stream = stream.to_owned();
        self.call(move |connection| {
            if !valid_table(&stream) {
                return Err(SinkError::plain("reading rows: not a valid table name"));
            }
            let doing = "reading rows";
            let exists: bool = connection
                .query_row(
                    "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = ?1",
                    [&stream],
                    |r| r.get(0),
                )
                .map_err(db(doing))?;
            if !exists {
                return Ok(Vec::new());
            }
            let mut statement = connection
                .prepare(&format!(
                    "SELECT id, updated_at, updated_at_raw, digest, body, deleted_at, first_run, changed_run
                     FROM \"{stream}\" ORDER BY id"
                ))
                .map_err(db(doing))?;
            let rows = statement
                .query_map([], |row| {
                    Ok(Row {
                        record: Record {
                            id: row.get(0)?,
                            updated_at: row.get(1)?,
                            updated_at_raw: row.get(2)?,
                            digest: row.get(3)?,
                            body: row.get(4)?,
                        },
                        deleted_at: row.get(5)?,
                        first_run: row.get(6)?,
                        changed_run: row.get(7)?,
                    })
                })
                .map_err(db(doing))?;
            rows.collect::<Result<_, _>>().map_err(db(doing))
        })
    }
}
