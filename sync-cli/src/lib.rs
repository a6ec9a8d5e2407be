//! The `business-records-sync` command line: `sync` and `status` over a SQLite or PostgreSQL
//! mirror, as the binary runs them. [`run`] is the whole program, so that other front ends (the
//! `demo` example, which starts the embedded reference server) run the same one.

#![deny(missing_docs)]

mod args;
mod bars;

use std::ffi::OsString;
use std::io::Write;

use business_records::Client;
#[cfg(feature = "postgres")]
use business_records_sync::PostgresSink;
use business_records_sync::{
    Disorder, Mirror, Reconcile, Sink, SqliteSink, Stream, StreamReport, StreamStatus, SyncError,
};
use clap::Parser;
use serde_json::json;

use args::{Cli, Command, DisorderArg, ReconcileArg, StatusArgs, SyncArgs};
use bars::Bars;

/// Exit code: a usage error.
pub const USAGE: u8 = 2;

/// The API a sync talks to, and its client credentials.
#[derive(Debug, Clone)]
pub struct Api {
    /// The API's base URL.
    pub base_url: String,
    /// The authorization server's URL.
    pub auth_url: String,
    /// The client id.
    pub client_id: String,
    /// The client secret.
    pub client_secret: String,
    /// Space-separated scopes.
    pub scopes: String,
}

impl Api {
    /// From `BUSINESS_RECORDS_BASE_URL`, `_AUTH_URL`, `_CLIENT_ID`, `_CLIENT_SECRET` and the
    /// optional `_SCOPES` (default `api/read`); `None` unless the four are set.
    pub fn from_env() -> Option<Api> {
        let var =
            |name: &str| std::env::var(format!("BUSINESS_RECORDS_{name}")).ok().filter(|v| !v.is_empty());
        Some(Api {
            base_url: var("BASE_URL")?,
            auth_url: var("AUTH_URL")?,
            client_id: var("CLIENT_ID")?,
            client_secret: var("CLIENT_SECRET")?,
            scopes: var("SCOPES").unwrap_or_else(|| "api/read".to_owned()),
        })
    }

    fn client(&self) -> Result<Client, business_records::Error> {
        Client::builder()
            .settings([
                ("base_url", &self.base_url),
                ("auth_url", &self.auth_url),
                ("client_id", &self.client_id),
                ("client_secret", &self.client_secret),
                ("scopes", &self.scopes),
            ])
            .build()
    }
}

/// Runs the command line `args` (the program's name first) and returns its exit code. The
/// API is `api`, or the environment's when `None`.
pub async fn run(args: impl IntoIterator<Item = OsString>, api: Option<Api>) -> u8 {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return if error.use_stderr() { USAGE } else { 0 };
        }
    };
    match cli.command {
        Command::Sync(args) => sync(args, api).await,
        Command::Status(args) => status(args).await,
    }
}

/// A mirror, whichever database holds it.
enum Db {
    Sqlite(SqliteSink),
    #[cfg(feature = "postgres")]
    Postgres(PostgresSink),
}

impl Db {
    async fn open(db: &str) -> Result<Db, SyncError> {
        if db.starts_with("postgres://") || db.starts_with("postgresql://") {
            #[cfg(feature = "postgres")]
            return Ok(Db::Postgres(PostgresSink::connect(db).await?));
            #[cfg(not(feature = "postgres"))]
            return Err(SyncError::InvalidArgument {
                argument: "db",
                message: "this build has no PostgreSQL support (feature `postgres`)".to_owned(),
            });
        }
        Ok(Db::Sqlite(SqliteSink::open(db).await?))
    }

    fn sink(&self) -> &dyn Sink {
        match self {
            Db::Sqlite(sink) => sink,
            #[cfg(feature = "postgres")]
            Db::Postgres(sink) => sink,
        }
    }

    fn mirror(&self, client: Client) -> Mirror {
        match self {
            Db::Sqlite(sink) => Mirror::new(client, sink.clone()),
            #[cfg(feature = "postgres")]
            Db::Postgres(sink) => Mirror::new(client, sink.clone()),
        }
    }
}

/// The streams `args` name: the one `--resource`, or companies and contacts.
fn streams(args: &SyncArgs) -> Result<Vec<Stream>, String> {
    let Some(resource) = &args.resource else {
        if args.table.is_some() || !args.filters.is_empty() {
            return Err("--table and --filter need --resource".to_owned());
        }
        return Ok(vec![limited(Stream::companies(), args), limited(Stream::contacts(), args)]);
    };
    let mut stream = limited(Stream::list(resource.as_str()), args);
    for (name, value) in &args.filters {
        stream = stream.filter(name.as_str(), value.as_str());
    }
    if let Some(table) = &args.table {
        stream = stream.table(table.as_str());
    }
    Ok(vec![stream])
}

fn limited(stream: Stream, args: &SyncArgs) -> Stream {
    let stream = match args.on_disorder {
        DisorderArg::Fail => stream.on_disorder(Disorder::Fail),
        DisorderArg::FullScan => stream.on_disorder(Disorder::FullScan),
    };
    match args.limit {
        Some(limit) => stream.limit(limit),
        None => stream,
    }
}

async fn sync(args: SyncArgs, api: Option<Api>) -> u8 {
    let streams = match streams(&args) {
        Ok(streams) => streams,
        Err(message) => return usage(&message),
    };
    let Some(api) = api.or_else(Api::from_env) else {
        return usage(
            "set BUSINESS_RECORDS_BASE_URL, BUSINESS_RECORDS_AUTH_URL, BUSINESS_RECORDS_CLIENT_ID and BUSINESS_RECORDS_CLIENT_SECRET",
        );
    };
    let client = match api.client() {
        Ok(client) => client,
        Err(error) => return fail(&error),
    };
    let db = match Db::open(&args.db).await {
        Ok(db) => db,
        Err(error) => return fail(&error),
    };
    let bars = Bars::new();
    let shown = bars.clone();
    let mut mirror = db.mirror(client).lookback(args.lookback).on_progress(move |p| shown.show(p));
    mirror = mirror.reconcile(match args.reconcile {
        ReconcileArg::Auto => Reconcile::default(),
        ReconcileArg::Always => Reconcile::Always,
        ReconcileArg::Never => Reconcile::Never,
    });
    for stream in streams {
        mirror = mirror.stream(stream);
    }
    let report = mirror.run_all().await;
    let mut out = std::io::stdout().lock();
    let mut code = 0;
    for stream in &report.streams {
        code = code.max(exit_code(stream.error.as_ref()));
        let printed = if args.json {
            writeln!(out, "{}", report_json(stream))
        } else {
            writeln!(out, "{}", line(stream))
        };
        if printed.is_err() {
            return 1;
        }
        if let Some(error) = &stream.error {
            eprintln!("{}: {}", stream.stream, chain(error));
        }
    }
    code
}

async fn status(args: StatusArgs) -> u8 {
    let db = match Db::open(&args.db).await {
        Ok(db) => db,
        Err(error) => return fail(&error),
    };
    let statuses = match db.sink().status().await {
        Ok(statuses) => statuses,
        Err(error) => return fail(&error),
    };
    let mut out = std::io::stdout().lock();
    for status in &statuses {
        let printed = if args.json {
            writeln!(out, "{}", status_json(status))
        } else {
            writeln!(out, "{}", status_line(status))
        };
        if printed.is_err() {
            return 1;
        }
    }
    0
}

/// 0 ok, 3 busy, 4 out of order, 1 any other failure.
fn exit_code(error: Option<&SyncError>) -> u8 {
    match error {
        None => 0,
        Some(error) if error.is_busy() => 3,
        Some(error) if error.is_out_of_order() => 4,
        Some(_) => 1,
    }
}

fn usage(message: &str) -> u8 {
    eprintln!("error: {message}\n\nFor more information, try '--help'.");
    USAGE
}

fn fail(error: &dyn std::error::Error) -> u8 {
    eprintln!("error: {}", chain(error));
    1
}

/// An error and its causes, `: `-separated.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

fn report_json(report: &StreamReport) -> serde_json::Value {
    let mut value = serde_json::to_value(report).unwrap_or_else(|_| json!({"stream": report.stream}));
    if let (Some(error), Some(object)) = (&report.error, value.as_object_mut()) {
        object.insert("error".to_owned(), chain(error).into());
    }
    value
}

fn line(report: &StreamReport) -> String {
    let mode = serde_json::to_value(report.mode)
        .ok()
        .and_then(|m| m.as_str().map(str::to_owned))
        .unwrap_or_default();
    format!(
        "{}: {}, {mode}, {} requests, {} inserted, {} updated, {} deleted ({} unchanged, {} stale, {} without id), mark {}",
        report.stream,
        report.outcome,
        report.requests,
        report.inserted,
        report.updated,
        report.deleted,
        report.unchanged,
        report.stale,
        report.without_id,
        report.mark.as_deref().unwrap_or("none"),
    )
}

fn status_json(status: &StreamStatus) -> serde_json::Value {
    json!({
        "stream": status.stream,
        "mark": status.state.mark,
        "lease_holder": status.lease_holder,
        "lease_until": status.lease_until,
        "last_run": status.last_run,
        "last_outcome": status.last_outcome,
    })
}

fn status_line(status: &StreamStatus) -> String {
    let lease = match (&status.lease_holder, &status.lease_until) {
        (Some(holder), Some(until)) => format!("held by {holder} until {until}"),
        _ => "free".to_owned(),
    };
    format!(
        "{}: mark {}, lease {lease}, last run {} {}",
        status.stream,
        status.state.mark.as_deref().unwrap_or("none"),
        status.last_run.map_or("none".to_owned(), |run| run.to_string()),
        status.last_outcome.as_deref().unwrap_or(""),
    )
}
