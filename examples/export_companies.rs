//! Export companies to NDJSON or CSV, with a progress bar, resuming after a failure.
//!
//! ```text
//! cargo run --example export_companies -- --status active --sort=-createdAt --format csv --output companies.csv
//! cargo run --example export_companies -- --help
//! ```
//!
//! The bar is sized from `totalCount` when the API sends it, and is a spinner otherwise. A
//! listing that fails after the client's own retries goes on from the cursor of the first page
//! not yet written (cursors are valid within a run), up to `--resumes` times. `--flaky` makes
//! the embedded reference server answer some requests with 503 and drop some connections; the
//! summary at the end counts the requests the client sent again.

mod support;

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use business_records::{Client, Company};
use business_records_reference_server::{Endpoint, Fault, Faults, ReferenceServer};
use clap::{Parser, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    Ndjson,
    Csv,
}

/// Export companies to NDJSON or CSV.
#[derive(Debug, Parser)]
struct Args {
    /// Only companies with this status.
    #[arg(long)]
    status: Option<String>,
    /// Sort order: name, createdAt or updatedAt, with a leading `-` for descending.
    #[arg(long, allow_hyphen_values = true)]
    sort: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Ndjson)]
    format: Format,
    /// Output file; standard output when absent.
    #[arg(long)]
    output: Option<std::path::PathBuf>,
    /// Stop after this many companies.
    #[arg(long)]
    max_items: Option<u64>,
    /// How many times a failed listing is resumed from its last cursor.
    #[arg(long, default_value_t = 3)]
    resumes: u32,
    /// Embedded server only: answer every 4th request 503 and drop every 9th connection, to
    /// watch the retries at work.
    #[arg(long)]
    flaky: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    support::exit_code(run().await)
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let mut server = ReferenceServer::builder();
    if args.flaky {
        let faults = Faults::new().on_every(Endpoint::Companies, 4, Fault::Status(503)).on_every(
            Endpoint::Companies,
            9,
            Fault::DropConnection,
        );
        server = server.faults(faults);
    }
    let target = support::Target::from_env_or(server).await;
    let client = target.client_builder().build()?;

    let out: Box<dyn Write> = match &args.output {
        Some(path) => Box::new(File::create(path)?),
        None => Box::new(io::stdout().lock()),
    };
    let mut writer = Writer::new(BufWriter::new(out), args.format)?;
    let started = Instant::now();
    let summary = export(&client, &args, &mut writer).await?;
    writer.finish()?;
    eprintln!(
        "exported {} companies in {} pages, {} requests retried, resumed {} times, in {:.2?}",
        summary.items,
        summary.pages,
        summary.retries,
        summary.resumes,
        started.elapsed()
    );
    Ok(())
}

#[derive(Default)]
struct Summary {
    items: u64,
    pages: u64,
    /// Page requests the SDK sent again after a transient failure (its `RetryPolicy`).
    retries: u64,
    /// Listings resumed from their last cursor after the retries ran out.
    resumes: u32,
}

async fn export(
    client: &Client,
    args: &Args,
    writer: &mut Writer,
) -> Result<Summary, Box<dyn std::error::Error>> {
    let mut summary = Summary::default();
    let mut resume_at = None;
    let bar = ProgressBar::hidden();
    loop {
        let mut list = client.companies();
        if let Some(status) = &args.status {
            list = list.status(status.as_str());
        }
        if let Some(sort) = &args.sort {
            list = list.sort(sort.as_str());
        }
        if let Some(max) = args.max_items {
            list = list.max_items(max.saturating_sub(summary.items));
        }
        if let Some(cursor) = resume_at.take() {
            list = list.cursor(cursor);
        }
        let mut pages = list.pages();
        let failure = loop {
            match pages.try_next().await {
                Ok(Some(page)) => {
                    if summary.pages == 0 {
                        setup_bar(&bar, page.total_count.map(|t| args.max_items.map_or(t, |m| m.min(t))));
                    }
                    for company in &page.data {
                        writer.write(company)?;
                    }
                    summary.pages += 1;
                    summary.items += page.data.len() as u64;
                    bar.set_position(summary.items);
                }
                Ok(None) => break None,
                Err(error) => break Some(error),
            }
        };
        summary.retries += pages.retries();
        let Some(error) = failure else {
            bar.finish_and_clear();
            return Ok(summary);
        };
        match pages.resume_cursor() {
            Some(cursor) if error.is_retryable() && summary.resumes < args.resumes => {
                bar.println(format!("listing failed ({error}); resuming after {} companies", summary.items));
                summary.resumes += 1;
                resume_at = Some(cursor.clone());
            }
            _ => {
                bar.abandon();
                return Err(error.into());
            }
        }
    }
}

fn setup_bar(bar: &ProgressBar, total: Option<u64>) {
    let style = match total {
        Some(total) => {
            bar.set_length(total);
            ProgressStyle::with_template("{bar:40} {pos}/{len} companies ({per_sec}, eta {eta})")
        }
        None => ProgressStyle::with_template("{spinner} {pos} companies ({per_sec})"),
    };
    if let Ok(style) = style {
        bar.set_style(style);
    }
    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    bar.enable_steady_tick(Duration::from_millis(120));
}

/// Writes companies as NDJSON lines or CSV rows (RFC 4180 quoting).
struct Writer {
    out: BufWriter<Box<dyn Write>>,
    format: Format,
}

impl Writer {
    fn new(mut out: BufWriter<Box<dyn Write>>, format: Format) -> io::Result<Self> {
        if let Format::Csv = format {
            writeln!(out, "id,name,status,createdAt,updatedAt,extra")?;
        }
        Ok(Writer { out, format })
    }

    fn write(&mut self, company: &Company) -> io::Result<()> {
        match self.format {
            Format::Ndjson => {
                serde_json::to_writer(&mut self.out, company)?;
                writeln!(self.out)
            }
            Format::Csv => {
                let extra = serde_json::to_string(&company.extra)?;
                let fields = [
                    company.id.clone(),
                    company.name.clone(),
                    company.status.as_ref().map(ToString::to_string).unwrap_or_default(),
                    company.created_at.map(|d| d.to_rfc3339()).unwrap_or_default(),
                    company.updated_at.map(|d| d.to_rfc3339()).unwrap_or_default(),
                    extra,
                ];
                let row: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
                writeln!(self.out, "{}", row.join(","))
            }
        }
    }

    fn finish(mut self) -> io::Result<()> {
        self.out.flush()
    }
}

fn csv_field(value: &str) -> String {
    if value.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value.to_owned()
    }
}
