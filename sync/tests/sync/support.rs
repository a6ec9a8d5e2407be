//! What every case uses: the sinks, a client for the reference server, and a run checked
//! against the change rows it writes.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};

use business_records::Client;
use business_records_reference_server::ReferenceServer;
#[cfg(feature = "postgres")]
use business_records_sync::PostgresSink;
use business_records_sync::{Change, MemorySink, Mirror, Op, Row, Sink, SqliteSink, State, StreamReport};
use serde_json::Value;

/// A case: runs against the mirror it is given.
pub type Body = fn(Db) -> Pin<Box<dyn Future<Output = ()> + Send>>;

/// One case of the catalogue.
#[derive(Clone, Copy)]
pub struct Case {
    pub module: &'static str,
    pub name: &'static str,
    pub body: Body,
}

/// Lists a module's cases as `pub const CASES`.
#[macro_export]
macro_rules! cases {
    ($($case:ident),+ $(,)?) => {
        pub const CASES: &[$crate::support::Case] = &[$($crate::support::Case {
            module: module_path!(),
            name: stringify!($case),
            body: |db| Box::pin($case(db)),
        }),+];
    };
}

/// The kinds of sink every case runs against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Memory,
    Sqlite,
    Postgres,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Memory => "memory",
            Kind::Sqlite => "sqlite",
            Kind::Postgres => "postgres",
        }
    }

    /// Why the cases of this kind cannot run here.
    pub fn unmet(self) -> Option<String> {
        match self {
            Kind::Postgres if cfg!(not(feature = "postgres")) => Some(
                "needs the `postgres` feature: cargo test -p business-records-sync --features postgres"
                    .to_owned(),
            ),
            Kind::Postgres => crate::postgres::available().err(),
            _ => None,
        }
    }
}

/// A mirror of one case, in one kind of sink.
#[derive(Clone)]
pub enum Db {
    Memory(MemorySink),
    Sqlite(SqliteSink, PathBuf),
    #[cfg(feature = "postgres")]
    Postgres(PostgresSink, String),
}

/// Tells apart the mirrors of cases that share a name.
static OPENED: AtomicU32 = AtomicU32::new(0);

/// The folder of the SQLite files of this run.
pub fn sqlite_dir() -> PathBuf {
    std::env::temp_dir().join(format!("br-sync-tests-{}", std::process::id()))
}

impl Db {
    /// A new, empty mirror.
    pub async fn open(kind: Kind, case: &str) -> Db {
        let n = OPENED.fetch_add(1, Ordering::Relaxed);
        match kind {
            Kind::Memory => Db::Memory(MemorySink::new()),
            Kind::Sqlite => {
                std::fs::create_dir_all(sqlite_dir()).expect("a folder for the SQLite files");
                let path = sqlite_dir().join(format!("{case}-{n}.sqlite"));
                Db::Sqlite(SqliteSink::open(&path).await.expect("a SQLite mirror"), path)
            }
            #[cfg(feature = "postgres")]
            Kind::Postgres => {
                let server = crate::postgres::server().expect("the suite's PostgreSQL");
                let url = server.database(&format!("{case}_{n}")).await;
                Db::Postgres(PostgresSink::connect(&url).await.expect("a PostgreSQL mirror"), url)
            }
            #[cfg(not(feature = "postgres"))]
            Kind::Postgres => unreachable!("ignored without the feature"),
        }
    }

    /// The same mirror through a connection of its own, as another process opens it.
    pub async fn reopen(&self) -> Db {
        match self {
            Db::Memory(sink) => Db::Memory(sink.clone()),
            Db::Sqlite(_, path) => {
                Db::Sqlite(SqliteSink::open(path).await.expect("the mirror again"), path.clone())
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(_, url) => {
                Db::Postgres(PostgresSink::connect(url).await.expect("the mirror again"), url.clone())
            }
        }
    }

    pub fn sink(&self) -> &dyn Sink {
        match self {
            Db::Memory(sink) => sink,
            Db::Sqlite(sink, _) => sink,
            #[cfg(feature = "postgres")]
            Db::Postgres(sink, _) => sink,
        }
    }

    /// A mirror with `client` into this sink.
    pub fn mirror(&self, client: &Client) -> Mirror {
        let client = client.clone();
        match self {
            Db::Memory(sink) => Mirror::new(client, sink.clone()),
            Db::Sqlite(sink, _) => Mirror::new(client, sink.clone()),
            #[cfg(feature = "postgres")]
            Db::Postgres(sink, _) => Mirror::new(client, sink.clone()),
        }
    }

    /// The rows of `table`, by id.
    pub async fn rows(&self, table: &str) -> BTreeMap<String, Row> {
        let rows = self.sink().rows(table).await.expect("the rows");
        rows.into_iter().map(|row| (row.record.id.clone(), row)).collect()
    }

    /// The live rows' bodies, by id.
    pub async fn live(&self, table: &str) -> BTreeMap<String, Value> {
        let rows = self.rows(table).await;
        rows.into_iter()
            .filter(|(_, row)| row.deleted_at.is_none())
            .map(|(id, row)| (id, serde_json::from_str(&row.record.body).expect("a JSON body")))
            .collect()
    }

    /// Every change row.
    pub async fn changes(&self) -> Vec<Change> {
        self.sink().changes(0, usize::MAX).await.expect("the changes")
    }

    /// The stream's state.
    pub async fn state(&self, stream: &str) -> Option<State> {
        self.sink().load(stream).await.expect("the state")
    }

    /// The outcomes of the stream's runs, oldest first, read from `br_sync_runs` (`None` for
    /// the memory sink, which keeps no table).
    pub async fn outcomes(&self, stream: &str) -> Option<Vec<String>> {
        match self {
            Db::Memory(_) => None,
            Db::Sqlite(_, path) => {
                let connection = rusqlite::Connection::open(path).expect("the file");
                let mut statement = connection
                    .prepare("SELECT outcome FROM br_sync_runs WHERE stream = ?1 ORDER BY run")
                    .expect("a query");
                let outcomes = statement.query_map([stream], |row| row.get(0)).expect("the runs");
                Some(outcomes.collect::<Result<_, _>>().expect("the outcomes"))
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(_, url) => {
                let (client, connection) =
                    tokio_postgres::connect(url, tokio_postgres::NoTls).await.expect("a connection");
                tokio::spawn(connection);
                let rows = client
                    .query("SELECT outcome FROM br_sync_runs WHERE stream = $1 ORDER BY run", &[&stream])
                    .await
                    .expect("the runs");
                Some(rows.iter().map(|row| row.get(0)).collect())
            }
        }
    }
}

/// An `updatedAt` `seconds` after 2024-05-01T10:00:00Z, in the form the server writes.
pub fn at(seconds: u32) -> String {
    format!("2024-05-01T10:{:02}:{:02}Z", seconds / 60, seconds % 60)
}

/// The mark stored for [`at`]`(seconds)`.
pub fn mark(seconds: u32) -> String {
    at(seconds).replace('Z', ".000000000Z")
}

/// A client of the server's default client.
pub fn client(server: &ReferenceServer) -> Client {
    Client::builder().settings(server.settings()).build().expect("a client")
}

/// The records the server serves in `resource`, by id.
pub fn served(server: &ReferenceServer, resource: &str) -> BTreeMap<String, Value> {
    server
        .dataset()
        .records(resource)
        .iter()
        .map(|record| (record.id().to_owned(), record.to_json()))
        .collect()
}

/// Runs `mirror` (one stream, `table`) and checks what it wrote against the change rows:
/// one change row per change written, the last of each id's rows carrying what is stored now,
/// an insert only for a row that was not there, and no change row for a row left as it was.
pub async fn run(db: &Db, mirror: &Mirror, table: &str) -> StreamReport {
    let before = db.rows(table).await;
    let seen_before = db.changes().await.last().map_or(0, |change| change.seq);
    let report = mirror.run_all().await.streams.into_iter().next().expect("a stream's report");
    let after = db.rows(table).await;
    let changes: Vec<Change> = db.changes().await.into_iter().filter(|c| c.seq > seen_before).collect();
    assert_eq!(
        changes.len() as u64,
        report.written(),
        "one change row per change written: {changes:?} {report:?}"
    );
    assert!(changes.iter().all(|c| c.stream == table && c.run == report.run), "{changes:?}");
    let ids: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    for id in ids {
        let state = |row: Option<&Row>| row.map(|r| (r.record.digest.clone(), r.deleted_at.is_some()));
        let (was, is) = (state(before.get(id)), state(after.get(id)));
        let mine: Vec<&Change> = changes.iter().filter(|c| &c.id == id).collect();
        if was == is {
            assert!(mine.is_empty(), "no change row for {id}, left as it was: {mine:?}");
            continue;
        }
        let (last, (digest, deleted)) =
            (mine.last().expect("a change row for a changed row"), is.expect("a row"));
        assert_eq!(last.digest, digest, "the last change row of {id} carries its digest");
        assert_eq!(last.op == Op::Delete, deleted, "{id}: {last:?}");
        if mine.iter().any(|c| c.op == Op::Insert) {
            assert!(was.is_none(), "an insert of {id}, which was there");
        }
    }
    report
}
