//! Endpoints the client does not model yet: read one company, create a note safely, and list a
//! resource of any shape, all through the client's pipeline (tokens, retries, pacing,
//! deprecation warnings, spans).
//!
//! ```text
//! cargo run --example endpoints
//! ```
//!
//! Runs against the embedded reference server, which declares `notes` and `deals` for it, or
//! against a deployment that serves them (`BUSINESS_RECORDS_BASE_URL`, `..._AUTH_URL`,
//! `..._CLIENT_ID`, `..._CLIENT_SECRET`), such as the standalone reference server:
//!
//! ```text
//! cargo run --example reference_server -- --collection notes --list deals=deals.json
//! ```
//!
//! Reads need the scope `api/read`, writes (the note's `POST` and `DELETE`) `api/write`.

mod support;

use std::process::ExitCode;

use business_records::{Auth, Client, Company, Method};
use business_records_reference_server::ReferenceServer;
use serde::Deserialize;
use serde_json::{Value, json};

/// A deal as this app reads it: the fields it needs, whatever else the API sends.
#[derive(Debug, Deserialize)]
struct Deal {
    id: String,
    amount: u64,
}

#[tokio::main]
async fn main() -> ExitCode {
    support::exit_code(run().await)
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let deals =
        (1..=25).map(|n| json!({"id": format!("deal_{n}"), "amount": n * 150 % 1_000, "stage": "won"}));
    let target = support::Target::from_env_or(
        ReferenceServer::builder().companies(10).collection("notes", []).list("deals", deals),
    )
    .await;
    let auth = Auth::client_credentials(&target.auth_url, &target.client_id, &target.client_secret);
    let client = Client::builder()
        .base_url(&target.base_url)
        .auth(auth.scopes(["api/read", "api/write"])) // api/write: the note is created and deleted
        .build()?;

    // Read one: the id is one path segment, whatever it holds.
    let first =
        client.companies().limit(1).send().await?.data.into_iter().next().ok_or("no company to read")?;
    let company: Company = client.get(["companies", &first.id]).send().await?;
    println!("read {} ({})", company.id, company.name);

    // Create: with an idempotency key, a POST is retried like a GET, and created once.
    let note: Value = client
        .request(Method::POST, "notes")
        .json(&json!({"companyId": company.id, "text": "called about the renewal"}))
        .idempotency_key(format!("renewal-call-{}", company.id))
        .send()
        .await?;
    println!("created note {}", note["id"]);

    // Any list: the same paging, filters and sorts as companies(), into a type of your own.
    let mut big = client.list::<Deal>("deals").filter("stage", "won").sort("-amount").stream();
    while let Some(deal) = big.try_next().await? {
        if deal.amount < 800 {
            break;
        }
        println!("{:<8} {}", deal.id, deal.amount);
    }

    client.request(Method::DELETE, ["notes", note["id"].as_str().unwrap_or_default()]).send_empty().await?;
    println!("deleted the note again");
    Ok(())
}
