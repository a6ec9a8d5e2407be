//! Endpoints the client does not model yet: read one company, create a note safely, and list a
//! resource of any shape, all through the client's pipeline (tokens, retries, pacing,
//! deprecation warnings, spans).
//!
//! ```text
//! cargo run --example endpoints
//! ```
//!
//! Runs against the embedded reference server, which declares `notes` and `deals` for it.

use business_records::{Client, Company, Method};
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
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let deals =
        (1..=25).map(|n| json!({"id": format!("deal_{n}"), "amount": n * 150 % 1_000, "stage": "won"}));
    let server =
        ReferenceServer::builder().companies(10).collection("notes", []).list("deals", deals).start().await;
    let client = Client::builder().settings(server.settings()).build()?;

    // Read one: the id is one path segment, whatever it holds.
    let first = client.companies().limit(1).send().await?.data.remove(0);
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
