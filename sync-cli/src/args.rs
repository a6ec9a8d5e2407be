//! The command line's arguments.

use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};

/// Mirror business-records lists into SQLite or PostgreSQL, at the cost of what changed.
///
/// The API and its credentials come from BUSINESS_RECORDS_BASE_URL, BUSINESS_RECORDS_AUTH_URL,
/// BUSINESS_RECORDS_CLIENT_ID and BUSINESS_RECORDS_CLIENT_SECRET (client credentials; scopes
/// from BUSINESS_RECORDS_SCOPES, default `api/read`).
///
/// Exit codes: 0 ok, 1 error, 2 usage, 3 busy (another process syncs the stream), 4 a page out
/// of order; with several streams, the highest.
#[derive(Debug, Parser)]
#[command(name = "business-records-sync", version)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Brings the mirror up to date: companies and contacts, or the one `--resource`.
    Sync(SyncArgs),
    /// Shows each stream's mark, lease and last run.
    Status(StatusArgs),
}

#[derive(Debug, clap::Args)]
pub(crate) struct SyncArgs {
    /// The mirror: a SQLite file, or `postgres://user@host/database`.
    #[arg(long)]
    pub(crate) db: String,
    /// The list to mirror: companies, contacts, or any list path (`deals`).
    #[arg(long)]
    pub(crate) resource: Option<String>,
    /// A filter sent with every page request, as NAME=VALUE (with --resource).
    #[arg(long = "filter", value_name = "NAME=VALUE", value_parser = filter)]
    pub(crate) filters: Vec<(String, String)>,
    /// The table (and stream name); default: the last segment of the resource (with --resource).
    #[arg(long)]
    pub(crate) table: Option<String>,
    /// Records per page.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub(crate) limit: Option<u32>,
    /// How far behind the mark each scan still reads: 5s, 500ms, 2m, 1h.
    #[arg(long, default_value = "5s", value_parser = duration)]
    pub(crate) lookback: Duration,
    /// When to reconcile (find deletes): auto is every 24 hours.
    #[arg(long, value_enum, default_value_t = ReconcileArg::Auto)]
    pub(crate) reconcile: ReconcileArg,
    /// What a page out of order does.
    #[arg(long, value_enum, default_value_t = DisorderArg::Fail)]
    pub(crate) on_disorder: DisorderArg,
    /// One JSON object per stream on stdout.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, clap::Args)]
pub(crate) struct StatusArgs {
    /// The mirror: a SQLite file, or `postgres://user@host/database`.
    #[arg(long)]
    pub(crate) db: String,
    /// One JSON object per stream on stdout.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum ReconcileArg {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum DisorderArg {
    Fail,
    FullScan,
}

fn filter(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() && !value.is_empty() => {
            Ok((name.to_owned(), value.to_owned()))
        }
        _ => Err(format!("expected NAME=VALUE, got {text:?}")),
    }
}

/// `5s`, `500ms`, `2m`, `1h`, or a number of seconds.
fn duration(text: &str) -> Result<Duration, String> {
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 =
        number.parse().map_err(|_| format!("expected a duration such as 5s or 500ms, got {text:?}"))?;
    let millis = match unit {
        "ms" => Some(number),
        "" | "s" => number.checked_mul(1_000),
        "m" => number.checked_mul(60_000),
        "h" => number.checked_mul(3_600_000),
        _ => None,
    };
    millis
        .map(Duration::from_millis)
        .ok_or_else(|| format!("expected a duration such as 5s or 500ms, got {text:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_filters_read_as_written() {
        assert_eq!(duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(duration("7"), Ok(Duration::from_secs(7)));
        assert!(duration("5 s").is_err() && duration("s").is_err() && duration("5d").is_err());
        assert_eq!(filter("stage=won"), Ok(("stage".into(), "won".into())));
        assert!(filter("stage").is_err() && filter("=won").is_err());
    }
}
