//! The command line against the embedded reference server, in one command:
//!
//! ```text
//! cargo run -p business-records-sync-cli --example demo -- sync --db mirror.sqlite
//! cargo run -p business-records-sync-cli --example demo -- status --db mirror.sqlite
//! ```
//!
//! With `BUSINESS_RECORDS_BASE_URL`, `_AUTH_URL`, `_CLIENT_ID` and `_CLIENT_SECRET` set, it
//! runs against that deployment instead, as the released binary does. The embedded server
//! serves the same records on every start (1,000 companies and 3,000 contacts from seed 42), so
//! a second run finds nothing to write.

use std::process::ExitCode;

use business_records_reference_server::ReferenceServer;
use business_records_sync_cli::{Api, run};

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<_> = std::env::args_os().collect();
    if let Some(api) = Api::from_env() {
        eprintln!("using the deployment at {}", api.base_url);
        return ExitCode::from(run(args, Some(api)).await);
    }
    let server = ReferenceServer::start().await;
    eprintln!(
        "no BUSINESS_RECORDS_* variables: using the embedded reference server at {}",
        server.base_url()
    );
    let setting = |name: &str| {
        server
            .settings()
            .into_iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value)
            .unwrap_or_default()
    };
    let api = Api {
        base_url: setting("base_url"),
        auth_url: setting("auth_url"),
        client_id: setting("client_id"),
        client_secret: setting("client_secret"),
        scopes: "api/read".to_owned(),
    };
    ExitCode::from(run(args, Some(api)).await)
}
