//! `business-records-sync`: see `business-records-sync --help`.

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    ExitCode::from(business_records_sync_cli::run(std::env::args_os(), None).await)
}
