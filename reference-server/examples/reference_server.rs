//! Run the reference server on fixed ports until killed, for tools in other languages
//! (API clients, the schemathesis fuzzer, an OpenAPI viewer) and for apps run by hand.
//!
//! ```text
//! cargo run --example reference_server -- --port 8080 --auth-port 8081
//! cargo run --example reference_server -- --company acme.json --list deals=deals.json --collection notes
//! ```
//!
//! Prints one `name=value` line each for `base_url`, `auth_url`, `client_id`,
//! `client_secret`, `scopes` (the server's `settings()`) and `openapi_url`, then `ready`. The ports default to
//! `BUSINESS_RECORDS_REFERENCE_PORT` and `BUSINESS_RECORDS_REFERENCE_AUTH_PORT`, else 8080
//! and the API port plus one; 0 picks a free port (read it from the printed URLs).
//!
//! It serves what a test's builder declares: `--company FILE.json` and `--contact FILE.json`
//! (a JSON object, or an array of them, each with a string `id`) as `.company(..)` and
//! `.contact(..)` do, `--list NAME=FILE.json` as `.list(NAME, records)`, and
//! `--collection NAME[=FILE.json]` as `.collection(NAME, records)`. A request to a name
//! nobody declared is answered 404 with a description that says how to declare it.

use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use business_records_reference_server::ReferenceServer;
use clap::Parser;
use serde_json::Value;

/// The reference server of the business-records API.
#[derive(Debug, Parser)]
struct Args {
    /// Port of the API on 127.0.0.1 (0: a free port).
    #[arg(long)]
    port: Option<u16>,
    /// Port of the authorization server on 127.0.0.1 (0: a free port).
    #[arg(long)]
    auth_port: Option<u16>,
    /// Number of generated companies served [default: 1000, or none with --company or --contact].
    #[arg(long)]
    companies: Option<usize>,
    /// Serves the companies of a JSON file: one object with a string `id`, or an array of them.
    #[arg(long, value_name = "FILE.json")]
    company: Vec<PathBuf>,
    /// Serves the contacts of a JSON file, as --company does.
    #[arg(long, value_name = "FILE.json")]
    contact: Vec<PathBuf>,
    /// Serves GET /v1/NAME with the page envelope, cursors, sorts and filters, over the
    /// records of FILE.json.
    #[arg(long, value_name = "NAME=FILE.json", value_parser = listed)]
    list: Vec<(String, PathBuf)>,
    /// Serves NAME as --list does, and takes POST /v1/NAME and DELETE /v1/NAME/{id} (scope
    /// api/write); its records start empty, or with those of FILE.json.
    #[arg(long, value_name = "NAME[=FILE.json]", value_parser = declared)]
    collection: Vec<(String, Option<PathBuf>)>,
}

#[tokio::main]
async fn main() -> ExitCode {
    match run(Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // The message, then each cause: the `Debug` form of an error is for developers.
            eprintln!("reference_server: {e}");
            for cause in std::iter::successors(e.source(), |&cause| cause.source()) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), Box<dyn Error>> {
    let port = match args.port {
        Some(port) => port,
        None => env_port("BUSINESS_RECORDS_REFERENCE_PORT")?.unwrap_or(8080),
    };
    let auth_port = match args.auth_port {
        Some(port) => port,
        None => env_port("BUSINESS_RECORDS_REFERENCE_AUTH_PORT")?.unwrap_or(if port == 0 {
            0
        } else {
            port.checked_add(1).ok_or("no port after 65535")?
        }),
    };
    for p in [port, auth_port].into_iter().filter(|&p| p != 0) {
        // Say which port is taken instead of panicking inside the server.
        std::net::TcpListener::bind(("127.0.0.1", p)).map_err(|e| format!("port {p}: {e}"))?;
    }

    let mut server = ReferenceServer::builder().api_port(port).auth_port(auth_port);
    if let Some(n) = args.companies {
        server = server.companies(n);
    }
    for path in &args.company {
        for record in records(path)? {
            server = server.company(record);
        }
    }
    for path in &args.contact {
        for record in records(path)? {
            server = server.contact(record);
        }
    }
    let collections = args.collection.into_iter().map(|(name, file)| (name, file, false));
    let declared = args.list.into_iter().map(|(name, file)| (name, Some(file), true)).chain(collections);
    let mut served = vec!["companies".to_owned(), "contacts".to_owned()];
    for (name, file, list) in declared {
        if served.contains(&name) {
            return Err(format!("{name:?} is served already: declare each name once").into());
        }
        served.push(name.clone());
        let records = file.as_deref().map(records).transpose()?.unwrap_or_default();
        // The builder takes names that live as long as the program: this one runs until killed.
        let name = name.leak();
        server = if list { server.list(name, records) } else { server.collection(name, records) };
    }

    let server = server.start().await;
    for (name, value) in server.settings() {
        println!("{name}={value}");
    }
    println!("openapi_url={}", server.openapi_url());
    println!("ready");
    std::future::pending::<()>().await;
    Ok(())
}

/// `NAME=FILE.json`, for `--list`.
fn listed(value: &str) -> Result<(String, PathBuf), String> {
    match declared(value)? {
        (name, Some(file)) => Ok((name, file)),
        (name, None) => Err(format!("expected NAME=FILE.json, got {name:?} without a file")),
    }
}

/// `NAME` or `NAME=FILE.json`, NAME made of ASCII letters, digits, `-` and `_`.
fn declared(value: &str) -> Result<(String, Option<PathBuf>), String> {
    let (name, file) = match value.split_once('=') {
        Some((name, file)) => (name, Some(PathBuf::from(file))),
        None => (value, None),
    };
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        return Err(format!("expected a name of ASCII letters, digits, - and _, got {name:?}"));
    }
    Ok((name.to_owned(), file))
}

/// The records of a JSON file: one object, or an array of objects, each with a string `id`.
fn records(path: &Path) -> Result<Vec<Value>, String> {
    let in_file = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let text = std::fs::read_to_string(path).map_err(|e| in_file(&e))?;
    let records = match serde_json::from_str(&text).map_err(|e| in_file(&e))? {
        Value::Array(records) => records,
        record => vec![record],
    };
    match records.iter().position(|record| record["id"].as_str().is_none_or(str::is_empty)) {
        Some(n) => Err(in_file(&format_args!("record {n} is not a JSON object with a string `id`"))),
        None => Ok(records),
    }
}

/// A port from the environment, if the variable is set.
fn env_port(name: &str) -> Result<Option<u16>, String> {
    match std::env::var(name) {
        Ok(value) => value.trim().parse().map(Some).map_err(|_| format!("{name}: not a port: {value:?}")),
        Err(_) => Ok(None),
    }
}
