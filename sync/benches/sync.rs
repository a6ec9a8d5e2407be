//! The sync's costs, as ratios against baselines measured in the same run (SYNC.md,
//! "Performance"):
//!
//! - a run with no change: list requests per stream (target 1);
//! - an incremental run: list requests against ⌈(changes + records inside the lookback + 1) /
//!   limit⌉, and change rows per change (target exactly 1);
//! - a first sync into SQLite: records per second against the export loop of
//!   `examples/export_companies.rs` (typed pages to NDJSON in a file) over the same server
//!   (target at least 0.8), twice: with the server in process answering at once (what the
//!   machine can do, where SQLite's own write rate is the ceiling), and answering each page
//!   after 20 ms, as a fast API on the same network does;
//! - SQLite writes: `SqliteSink` commits against a hand-written rusqlite loop (prepared
//!   upsert and a change row, 100 rows a transaction, WAL, `synchronous=NORMAL`), the same
//!   records (target at least 0.8).
//!
//! `cargo bench -p business-records-sync`; `-- --records N` for another dataset size.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use business_records::Client;
use business_records_reference_server::{Endpoint, Fault, Faults, ReferenceServer};
use business_records_sync::{Commit, Mirror, Record, Sink, SqliteSink, Stream};
use rusqlite::{Connection, params};

const LIMIT: u64 = 100;
const CHANGES: usize = 250;
const ROUNDS: usize = 5;
/// How long the server takes to answer a page in the second first-sync row.
const PAGE_LATENCY: Duration = Duration::from_millis(20);

#[tokio::main]
async fn main() {
    let records: usize = std::env::args()
        .skip_while(|a| a != "--records")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(5_000);
    let dir = std::env::temp_dir().join(format!("br-sync-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    let server = ReferenceServer::builder().companies(records).contacts_per_company(0).start().await;
    let client = Client::builder().settings(server.settings()).build().expect("a client");
    println!("business-records-sync bench: {records} companies, pages of {LIMIT}, best of {ROUNDS}\n");

    let (export, first, db) = first_sync(&client, &dir, "").await;
    let rate = |d: Duration| records as f64 / d.as_secs_f64();
    println!(
        "first sync        export loop {:>9.0} records/s   sync into SQLite {:>9.0} records/s   ratio {:.2} (target >= 0.8)",
        rate(export),
        rate(first),
        export.as_secs_f64() / first.as_secs_f64()
    );
    server.set_faults(Faults::new().on_every(Endpoint::Companies, 1, Fault::Slow(PAGE_LATENCY)));
    let (slow_export, slow_first, _) = first_sync(&client, &dir, "slow-").await;
    server.set_faults(Faults::none());
    println!(
        "  pages in {:>3} ms export loop {:>9.0} records/s   sync into SQLite {:>9.0} records/s   ratio {:.2} (target >= 0.8)",
        PAGE_LATENCY.as_millis(),
        rate(slow_export),
        rate(slow_first),
        slow_export.as_secs_f64() / slow_first.as_secs_f64()
    );

    let sink = SqliteSink::open(&db).await.expect("the mirror");
    let mirror = Mirror::new(client.clone(), sink.clone()).stream(Stream::companies());
    let quiet = mirror.run().await.expect("a run with no change");
    let quiet = quiet.stream("companies").expect("its report");
    println!(
        "no change         {} list request(s) per stream, {} written   ratio {:.2} (target 1)",
        quiet.requests,
        quiet.written(),
        quiet.requests as f64
    );

    let sorted =
        server.dataset().companies_sorted("-updatedAt", None).iter().map(|c| c.to_json()).collect::<Vec<_>>();
    let mark = quiet.mark.clone().unwrap_or_default();
    let inside = sorted.iter().filter(|c| within_lookback(c["updatedAt"].as_str(), &mark)).count();
    for company in sorted.iter().rev().take(CHANGES) {
        server.upsert_company(serde_json::json!({"id": company["id"], "name": "changed"})).expect("a change");
    }
    let seen_before = sink.changes(0, usize::MAX).await.expect("the changes").len();
    let changed = mirror.run().await.expect("an incremental run");
    let changed = changed.stream("companies").expect("its report");
    let rows = sink.changes(0, usize::MAX).await.expect("the changes").len() - seen_before;
    let bound = (CHANGES + inside + 1).div_ceil(LIMIT as usize);
    println!(
        "incremental       {CHANGES} changes: {} list requests, bound {bound}   ratio {:.2} (target <= 1); {:.2} change rows per change (target 1)",
        changed.requests,
        changed.requests as f64 / bound as f64,
        rows as f64 / CHANGES as f64
    );

    let stream = Stream::companies();
    let prepared: Vec<Record> = sorted.iter().filter_map(|c| Record::read(c.clone(), &stream)).collect();
    let (mut by_hand_time, mut sink_time) = (Duration::MAX, Duration::MAX);
    for round in 0..ROUNDS {
        let started = Instant::now();
        by_hand(dir.join(format!("hand-{round}.sqlite")), &prepared).await;
        by_hand_time = by_hand_time.min(started.elapsed());
        let started = Instant::now();
        through_sink(dir.join(format!("sink-{round}.sqlite")), &prepared).await;
        sink_time = sink_time.min(started.elapsed());
    }
    let by_hand = by_hand_time;
    let rows_per_second = |d: Duration| prepared.len() as f64 / d.as_secs_f64();
    println!(
        "SQLite writes     hand-written loop {:>9.0} rows/s   SqliteSink {:>9.0} rows/s   ratio {:.2} (target >= 0.8)",
        rows_per_second(by_hand),
        rows_per_second(sink_time),
        by_hand.as_secs_f64() / sink_time.as_secs_f64()
    );
    println!(
        "ceiling           the hand-written loop alone writes {:.2}x the export loop's records/s; the first sync reaches {:.2} of it",
        rows_per_second(by_hand) / rate(export),
        rate(first) / rows_per_second(by_hand)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The best of [`ROUNDS`] export loops and first syncs into a new SQLite mirror, alternating so
/// that load on the machine weighs on both alike; and the last mirror's path.
async fn first_sync(client: &Client, dir: &Path, prefix: &str) -> (Duration, Duration, PathBuf) {
    let (mut exported, mut first) = (Duration::MAX, Duration::MAX);
    let mut db = PathBuf::new();
    for round in 0..ROUNDS {
        let started = Instant::now();
        export(client, dir.join("export.ndjson")).await;
        exported = exported.min(started.elapsed());
        db = dir.join(format!("{prefix}first-{round}.sqlite"));
        let sink = SqliteSink::open(&db).await.expect("a mirror");
        let started = Instant::now();
        Mirror::new(client.clone(), sink).stream(Stream::companies()).run().await.expect("a first sync");
        first = first.min(started.elapsed());
    }
    (exported, first, db)
}

/// Whether `updated` falls inside the 5 s lookback below `mark` (stored form).
fn within_lookback(updated: Option<&str>, mark: &str) -> bool {
    let parse = |t: &str| chrono::DateTime::parse_from_rfc3339(t).ok();
    match (updated.and_then(parse), parse(mark)) {
        (Some(updated), Some(mark)) => updated >= mark - chrono::Duration::seconds(5),
        _ => false,
    }
}

/// The export example's loop: every page of typed companies, as NDJSON into a file.
async fn export(client: &Client, path: PathBuf) {
    let mut out = BufWriter::new(std::fs::File::create(&path).expect("the export file"));
    let mut pages = client.companies().pages();
    while let Some(page) = pages.try_next().await.expect("a page") {
        for company in &page.data {
            serde_json::to_writer(&mut out, company).expect("a line");
            out.write_all(b"\n").expect("a line");
        }
    }
    out.flush().expect("the export written");
}

/// A hand-written rusqlite loop: prepared upsert and change row, 100 rows a transaction.
async fn by_hand(path: PathBuf, records: &[Record]) {
    let mut db = Connection::open(&path).expect("a database");
    db.pragma_update(None, "journal_mode", "WAL").expect("WAL");
    db.pragma_update(None, "synchronous", "NORMAL").expect("synchronous");
    db.execute_batch(
        "CREATE TABLE companies (id TEXT PRIMARY KEY, updated_at TEXT, updated_at_raw TEXT, digest TEXT NOT NULL,
         body TEXT NOT NULL, deleted_at TEXT, first_run INTEGER NOT NULL, changed_run INTEGER NOT NULL);
         CREATE TABLE changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, stream TEXT, id TEXT, op TEXT, digest TEXT, run INTEGER);",
    )
    .expect("the tables");
    for chunk in records.chunks(100) {
        let tx = db.transaction().expect("a transaction");
        {
            let mut upsert = tx
                .prepare_cached(
                    "INSERT INTO companies VALUES (?1, ?2, ?3, ?4, ?5, NULL, 1, 1) ON CONFLICT (id) DO UPDATE SET
                     updated_at = excluded.updated_at, updated_at_raw = excluded.updated_at_raw, digest = excluded.digest,
                     body = excluded.body, changed_run = 1",
                )
                .expect("the upsert");
            let mut change = tx
                .prepare_cached("INSERT INTO changes (stream, id, op, digest, run) VALUES ('companies', ?1, 'insert', ?2, 1)")
                .expect("the change row");
            for r in chunk {
                upsert
                    .execute(params![r.id, r.updated_at, r.updated_at_raw, r.digest, r.body])
                    .expect("a row");
                change.execute(params![r.id, r.digest]).expect("a change row");
            }
        }
        tx.commit().expect("a commit");
    }
}

/// The same records through `SqliteSink`, a page of 100 a commit, each queued while the next
/// is prepared, as a run does.
async fn through_sink(path: PathBuf, records: &[Record]) {
    let sink = SqliteSink::open(&path).await.expect("a mirror");
    let until = "2999-01-01T00:00:00.000000000Z";
    assert!(
        sink.lease("companies", "bench", "2000-01-01T00:00:00.000000000Z", Some(until))
            .await
            .expect("the lease")
    );
    let run = sink.start_run("companies", "2000-01-01T00:00:00.000000000Z").await.expect("a run");
    let mut pending = None;
    for chunk in records.chunks(100) {
        let commit = sink.commit(Commit::new("companies", run, "bench", until, chunk.to_vec()));
        if let Some(previous) = pending.replace(commit) {
            previous.await.expect("a commit");
        }
    }
    if let Some(last) = pending {
        last.await.expect("a commit");
    }
}
