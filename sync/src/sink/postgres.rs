//! The PostgreSQL mirror: one mirror for many processes and machines, one holder per stream
//! through the lease on its state row.

use std::sync::Arc;

use tokio::sync::Mutex;
use tokio_postgres::{Client, NoTls, Transaction};

use super::{
    Change, Commit, Decision, Op, Record, Row, Sink, SinkFuture, State, Stored, StreamStatus, Written,
    decide, valid_table,
};
use crate::{SinkError, SyncError};

/// The advisory lock key that serialises schema creation between processes.
const SCHEMA_LOCK: i64 = 0x0062_725f_7379_6e63;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS br_sync_state (
    stream TEXT PRIMARY KEY, state TEXT, lease_holder TEXT, lease_until TEXT);
CREATE TABLE IF NOT EXISTS br_sync_changes (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, stream TEXT NOT NULL, id TEXT NOT NULL,
    op TEXT NOT NULL, digest TEXT, run BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS br_sync_runs (
    run BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, stream TEXT NOT NULL,
    started_at TEXT NOT NULL, ended_at TEXT, outcome TEXT NOT NULL, report TEXT);
CREATE INDEX IF NOT EXISTS br_sync_runs_stream ON br_sync_runs (stream, outcome);
";

/// A mirror in PostgreSQL (`tokio-postgres`), shared by any number of processes on any number
/// of machines: the lease on each stream's state row lets one holder at a time sync it, and
/// every commit checks, in its transaction, that the lease is still its holder's.
///
/// Bodies are `jsonb`. [`connect`](PostgresSink::connect) connects without TLS (a local or
/// private network); for TLS, connect a `tokio_postgres::Client` with the TLS connector of
/// your choice and hand it to [`new`](PostgresSink::new).
///
/// ```no_run
/// # async fn run() -> Result<(), business_records_sync::SyncError> {
/// use business_records_sync::PostgresSink;
///
/// let sink = PostgresSink::connect("postgres://sync@db.internal/mirror").await?;
/// # let _ = sink; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct PostgresSink {
    client: Arc<Mutex<Client>>,
}

fn db(doing: &'static str) -> impl Fn(tokio_postgres::Error) -> SinkError {
    move |error| SinkError::new(doing, error)
}

impl PostgresSink {
    /// Connects to `url` (`postgres://user:password@host:port/database`, or the key-value form)
    /// without TLS, and creates the schema if it does not exist. The connection runs on a
    /// Tokio task of its own.
    ///
    /// # Errors
    ///
    /// [`SyncError::Sink`] if the connection or the schema fails.
    pub async fn connect(url: &str) -> Result<Self, SyncError> {
        let (client, connection) = tokio_postgres::connect(url, NoTls).await.map_err(db("connecting"))?;
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::warn!(%error, "the PostgreSQL connection ended");
            }
        });
        Self::new(client).await
    }

    /// A sink over a connected client, creating the schema if it does not exist.
    ///
    /// # Errors
    ///
    /// [`SyncError::Sink`] if the schema cannot be created.
    pub async fn new(mut client: Client) -> Result<Self, SyncError> {
        let doing = "creating the schema";
        let tx = client.transaction().await.map_err(db(doing))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK]).await.map_err(db(doing))?;
        tx.batch_execute(SCHEMA).await.map_err(db(doing))?;
        tx.commit().await.map_err(db(doing))?;
        Ok(PostgresSink { client: Arc::new(Mutex::new(client)) })
    }
}

async fn create_table(tx: &Transaction<'_>, table: &str) -> Result<(), SinkError> {
    if !valid_table(table) {
        return Err(SinkError::plain("creating a table: not a valid table name"));
    }
    let doing = "creating a table";
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK]).await.map_err(db(doing))?;
    let sql = format!(
        "CREATE TABLE IF NOT EXISTS \"{table}\" (id TEXT PRIMARY KEY, updated_at TEXT, updated_at_raw TEXT,
         digest TEXT NOT NULL, body JSONB NOT NULL, deleted_at TEXT, first_run BIGINT NOT NULL,
         changed_run BIGINT NOT NULL)"
    );
    tx.batch_execute(&sql).await.map_err(db(doing))
}

async fn write(tx: &Transaction<'_>, commit: &Commit) -> Result<Written, SinkError> {
    let (table, doing) = (&commit.stream, "committing a page");
    if !valid_table(table) {
        return Err(SinkError::plain("committing: not a valid table name"));
    }
    let holder: Option<Option<String>> = tx
        .query_opt("SELECT lease_holder FROM br_sync_state WHERE stream = $1 FOR UPDATE", &[table])
        .await
        .map_err(db(doing))?
        .map(|row| row.get(0));
    if holder.flatten().as_deref() != Some(commit.holder.as_str()) {
        return Err(SinkError::lease_lost());
    }
    let select = tx
        .prepare(&format!("SELECT digest, updated_at, deleted_at IS NOT NULL FROM \"{table}\" WHERE id = $1"))
        .await
        .map_err(db(doing))?;
    let insert = tx
        .prepare(&format!(
            "INSERT INTO \"{table}\" (id, updated_at, updated_at_raw, digest, body, deleted_at, first_run,
             changed_run) VALUES ($1, $2, $3, $4, $5::text::jsonb, NULL, $6, $6)"
        ))
        .await
        .map_err(db(doing))?;
    let update = tx
        .prepare(&format!(
            "UPDATE \"{table}\" SET updated_at = $2, updated_at_raw = $3, digest = $4, body = $5::text::jsonb,
             deleted_at = NULL, changed_run = $6 WHERE id = $1"
        ))
        .await
        .map_err(db(doing))?;
    let change = tx
        .prepare("INSERT INTO br_sync_changes (stream, id, op, digest, run) VALUES ($1, $2, $3, $4, $5)")
        .await
        .map_err(db(doing))?;
    let mut written = Written::default();
    for record in &commit.records {
        let stored = tx.query_opt(&select, &[&record.id]).await.map_err(db(doing))?.map(|row| Stored {
            digest: row.get(0),
            updated_at: row.get(1),
            deleted: row.get(2),
        });
        let decision = decide(stored.as_ref(), record, commit.policy);
        written.count(decision);
        let Decision::Write(op) = decision else { continue };
        let Record { id, updated_at, updated_at_raw, digest, body } = record;
        let statement = if op == Op::Insert { &insert } else { &update };
        tx.execute(statement, &[id, updated_at, updated_at_raw, digest, body, &commit.run])
            .await
            .map_err(db(doing))?;
        tx.execute(&change, &[table, id, &op.as_str(), digest, &commit.run]).await.map_err(db(doing))?;
    }
    let now = crate::time::now();
    for id in &commit.deletes {
        let deleted = tx
            .query_opt(
                &format!(
                    "UPDATE \"{table}\" SET deleted_at = $2, changed_run = $3 WHERE id = $1 AND deleted_at IS NULL
                     RETURNING digest"
                ),
                &[id, &now, &commit.run],
            )
            .await
            .map_err(db(doing))?;
        if let Some(row) = deleted {
            let digest: String = row.get(0);
            written.count(Decision::Write(Op::Delete));
            tx.execute(&change, &[table, id, &Op::Delete.as_str(), &digest, &commit.run])
                .await
                .map_err(db(doing))?;
        }
    }
    let state = State::text(commit.state.as_ref(), doing)?;
    tx.execute(
        "UPDATE br_sync_state SET lease_until = $2, state = coalesce($3, state) WHERE stream = $1",
        &[table, &commit.lease_until, &state],
    )
    .await
    .map_err(db(doing))?;
    Ok(written)
}

impl Sink for PostgresSink {
    fn load<'a>(&'a self, stream: &'a str) -> SinkFuture<'a, Option<State>> {
        Box::pin(async move {
            let client = self.client.lock().await;
            let row = client
                .query_opt("SELECT state FROM br_sync_state WHERE stream = $1", &[&stream])
                .await
                .map_err(db("reading a stream's state"))?;
            State::read(row.and_then(|row| row.get(0)))
        })
    }

    fn lease<'a>(
        &'a self,
        stream: &'a str,
        holder: &'a str,
        now: &'a str,
        until: Option<&'a str>,
    ) -> SinkFuture<'a, bool> {
        Box::pin(async move {
            let mut client = self.client.lock().await;
            let doing = "taking the lease";
            let Some(until) = until else {
                client
                    .execute(
                        "UPDATE br_sync_state SET lease_holder = NULL, lease_until = NULL
                         WHERE stream = $1 AND lease_holder = $2",
                        &[&stream, &holder],
                    )
                    .await
                    .map_err(db("releasing the lease"))?;
                return Ok(false);
            };
            let tx = client.transaction().await.map_err(db(doing))?;
            create_table(&tx, stream).await?;
            let taken = tx
                .execute(
                    "INSERT INTO br_sync_state AS s (stream, state, lease_holder, lease_until) VALUES ($1, NULL, $2, $3)
                     ON CONFLICT (stream) DO UPDATE SET lease_holder = excluded.lease_holder,
                     lease_until = excluded.lease_until
                     WHERE s.lease_holder IS NULL OR s.lease_holder = excluded.lease_holder
                     OR s.lease_until IS NULL OR s.lease_until < $4",
                    &[&stream, &holder, &until, &now],
                )
                .await
                .map_err(db(doing))?;
            tx.commit().await.map_err(db(doing))?;
            Ok(taken > 0)
        })
    }

    fn start_run<'a>(&'a self, stream: &'a str, now: &'a str) -> SinkFuture<'a, i64> {
        Box::pin(async move {
            let mut client = self.client.lock().await;
            let doing = "starting a run";
            let tx = client.transaction().await.map_err(db(doing))?;
            tx.execute(
                "UPDATE br_sync_runs SET outcome = 'abandoned' WHERE stream = $1 AND outcome = 'running'",
                &[&stream],
            )
            .await
            .map_err(db(doing))?;
            let row = tx
                .query_one(
                    "INSERT INTO br_sync_runs (stream, started_at, outcome) VALUES ($1, $2, 'running') RETURNING run",
                    &[&stream, &now],
                )
                .await
                .map_err(db(doing))?;
            tx.commit().await.map_err(db(doing))?;
            Ok(row.get(0))
        })
    }

    fn commit(&self, commit: Commit) -> SinkFuture<'_, Written> {
        Box::pin(async move {
            let mut client = self.client.lock().await;
            let tx = client.transaction().await.map_err(db("committing a page"))?;
            let written = write(&tx, &commit).await?;
            tx.commit().await.map_err(db("committing a page"))?;
            Ok(written)
        })
    }

    fn live_ids<'a>(&'a self, stream: &'a str) -> SinkFuture<'a, Vec<String>> {
        Box::pin(async move {
            if !valid_table(stream) {
                return Err(SinkError::plain("reading ids: not a valid table name"));
            }
            let client = self.client.lock().await;
            let rows = client
                .query(&format!("SELECT id FROM \"{stream}\" WHERE deleted_at IS NULL"), &[])
                .await
                .map_err(db("reading the live ids"))?;
            Ok(rows.iter().map(|row| row.get(0)).collect())
        })
    }

    fn finish_run<'a>(
        &'a self,
        run: i64,
        outcome: &'a str,
        now: &'a str,
        report: &'a str,
    ) -> SinkFuture<'a, ()> {
        Box::pin(async move {
            let client = self.client.lock().await;
            client
                .execute(
                    "UPDATE br_sync_runs SET outcome = $2, ended_at = $3, report = $4 WHERE run = $1",
                    &[&run, &outcome, &now, &report],
                )
                .await
                .map_err(db("ending a run"))?;
            Ok(())
        })
    }

    fn status(&self) -> SinkFuture<'_, Vec<StreamStatus>> {
        Box::pin(async move {
            let client = self.client.lock().await;
            let rows = client
                .query(
                    "SELECT s.stream, s.state, s.lease_holder, s.lease_until, r.run, r.outcome
                     FROM br_sync_state s LEFT JOIN br_sync_runs r
                     ON r.run = (SELECT max(run) FROM br_sync_runs WHERE stream = s.stream) ORDER BY s.stream",
                    &[],
                )
                .await
                .map_err(db("reading the status"))?;
            rows.iter()
                .map(|row| {
                    Ok(StreamStatus {
                        stream: row.get(0),
                        state: State::read(row.get(1))?.unwrap_or_default(),
                        lease_holder: row.get(2),
                        lease_until: row.get(3),
                        last_run: row.get(4),
                        last_outcome: row.get(5),
                    })
                })
                .collect()
        })
    }

    fn changes(&self, after: i64, limit: usize) -> SinkFuture<'_, Vec<Change>> {
        Box::pin(async move {
            let client = self.client.lock().await;
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let rows = client
                .query(
                    "SELECT seq, stream, id, op, digest, run FROM br_sync_changes WHERE seq > $1 ORDER BY seq LIMIT $2",
                    &[&after, &limit],
                )
                .await
                .map_err(db("reading the changes"))?;
            Ok(rows
                .iter()
                .map(|row| Change {
                    seq: row.get(0),
                    stream: row.get(1),
                    id: row.get(2),
                    op: Op::parse(row.get(3)).unwrap_or(Op::Update),
                    digest: row.get::<_, Option<String>>(4).unwrap_or_default(),
                    run: row.get(5),
                })
                .collect())
        })
    }

    fn rows<'a>(&'a self, stream: &'a str) -> SinkFuture<'a, Vec<Row>> {
        Box::pin(async move {
            if !valid_table(stream) {
                return Err(SinkError::plain("reading rows: not a valid table name"));
            }
            let client = self.client.lock().await;
            let doing = "reading rows";
            let exists = client
                .query_one("SELECT to_regclass($1) IS NOT NULL", &[&format!("\"{stream}\"")])
                .await
                .map_err(db(doing))?;
            if !exists.get::<_, bool>(0) {
                return Ok(Vec::new());
            }
            let rows = client
                .query(
                    &format!(
                        "SELECT id, updated_at, updated_at_raw, digest, body::text, deleted_at, first_run, changed_run
                         FROM \"{stream}\" ORDER BY id"
                    ),
                    &[],
                )
                .await
                .map_err(db(doing))?;
            Ok(rows
                .iter()
                .map(|row| Row {
                    record: Record {
                        id: row.get(0),
                        updated_at: row.get(1),
                        updated_at_raw: row.get(2),
                        digest: row.get(3),
                        body: row.get(4),
                    },
                    deleted_at: row.get(5),
                    first_run: row.get(6),
                    changed_run: row.get(7),
                })
                .collect())
        })
    }
}
