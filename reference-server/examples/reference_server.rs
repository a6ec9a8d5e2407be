//! Run the reference server on fixed ports until killed, for tools in other languages
//! (API clients, the schemathesis fuzzer, an OpenAPI viewer).
//!
//! ```text
//! cargo run --example reference_server -- --port 8080 --auth-port 8081
//! ```
//!
//! Prints one `name=value` line each for `base_url`, `auth_url`, `client_id`,
//! `client_secret`, `scopes` (the server's `settings()`) and `openapi_url`, then `ready`. The ports default to
//! `BUSINESS_RECORDS_REFERENCE_PORT` and `BUSINESS_RECORDS_REFERENCE_AUTH_PORT`, else 8080
//! and the API port plus one; 0 picks a free port (read it from the printed URLs).

use business_records_reference_server::ReferenceServer;
use clap::Parser;
use std::process::ExitCode;

/// The reference server of the business-records API.
#[derive(Debug, Parser)]
struct Args {
    /// Port of the API on 127.0.0.1 (0: a free port).
    #[arg(long)]
    port: Option<u16>,
    /// Port of the authorization server on 127.0.0.1 (0: a free port).
    #[arg(long)]
    auth_port: Option<u16>,
    /// Number of companies served.
    #[arg(long, default_value_t = 1_000)]
    companies: usize,
}

#[tokio::main]
async fn main() -> ExitCode {
    match run(Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("reference_server: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), String> {
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

    let server = ReferenceServer::builder()
        .api_port(port)
        .auth_port(auth_port)
        .companies(args.companies)
        .start()
        .await;
    for (name, value) in server.settings() {
        println!("{name}={value}");
    }
    println!("openapi_url={}", server.openapi_url());
    println!("ready");
    std::future::pending::<()>().await;
    Ok(())
}

/// A port from the environment, if the variable is set.
fn env_port(name: &str) -> Result<Option<u16>, String> {
    match std::env::var(name) {
        Ok(value) => value.trim().parse().map(Some).map_err(|_| format!("{name}: not a port: {value:?}")),
        Err(_) => Ok(None),
    }
}
