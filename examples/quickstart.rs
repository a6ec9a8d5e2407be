//! Sign in as a backend and stream the active companies, newest first.
//!
//! ```text
//! cargo run --example quickstart
//! ```
//!
//! Runs against the embedded reference server, or against a deployment when
//! `BUSINESS_RECORDS_BASE_URL`, `BUSINESS_RECORDS_AUTH_URL`, `BUSINESS_RECORDS_CLIENT_ID` and
//! `BUSINESS_RECORDS_CLIENT_SECRET` are set.

mod support;

use std::process::ExitCode;

use business_records::{Auth, Client, CompanySort};

#[tokio::main]
async fn main() -> ExitCode {
    support::exit_code(run().await)
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let target = support::Target::from_env().await;
    let client = Client::builder()
        .base_url(&target.base_url)
        .auth(
            Auth::client_credentials(&target.auth_url, &target.client_id, &target.client_secret)
                .scopes(["api/read"]),
        )
        .build()?;

    let mut companies = client.companies().status("active").sort(CompanySort::CreatedAt.desc()).stream();
    println!("{:<10} {:<32} {:<8} created", "id", "name", "status");
    let mut count = 0u64;
    while let Some(company) = companies.try_next().await? {
        if count < 10 {
            let created = company.created_at.map(|d| d.format("%Y-%m-%d %H:%M").to_string());
            let status = company.status.as_ref().map_or("-", |s| s.as_str());
            let created = created.as_deref().unwrap_or("-");
            println!("{:<10} {:<32} {status:<8} {created}", company.id, company.name);
        } else if count == 10 {
            println!("...");
        }
        count += 1;
    }
    println!("{count} active companies");
    Ok(())
}
