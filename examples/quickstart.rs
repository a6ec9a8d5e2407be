//! Sign in as a backend and stream the active companies, newest first.
//!
//! ```text
//! cargo run --example quickstart
//! ```
//!
//! Runs against the embedded reference server, or against a deployment when
//! `BUSINESS_RECORDS_BASE_URL`, `BUSINESS_RECORDS_AUTH_URL`, `BUSINESS_RECORDS_CLIENT_ID` and
//! `BUSINESS_RECORDS_CLIENT_SECRET` are set.

use business_records::reference_server::ReferenceServer;
use business_records::{Auth, Client, CompanySort};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Keep the server alive for the whole run when it is the embedded one.
    let (_server, base_url, auth_url, client_id, client_secret) = match deployment() {
        Some((base, auth, id, secret)) => (None, base, auth, id, secret),
        None => {
            let server = ReferenceServer::start().await;
            let settings = (
                server.base_url(),
                server.auth_url(),
                server.client_id().to_owned(),
                server.client_secret().to_owned(),
            );
            println!("reference server: api {} auth {}", settings.0, settings.1);
            (Some(server), settings.0, settings.1, settings.2, settings.3)
        }
    };

    let client = Client::builder()
        .base_url(base_url)
        .auth(Auth::client_credentials(auth_url, client_id, client_secret).scopes(["api/read"]))
        .build()?;

    let mut companies = client.companies().status("active").sort(CompanySort::CreatedAt.desc()).stream();
    println!("{:<10} {:<32} {:<8} created", "id", "name", "status");
    let mut count = 0u64;
    while let Some(company) = companies.try_next().await? {
        if count < 10 {
            println!(
                "{:<10} {:<32} {:<8} {}",
                company.id,
                company.name,
                company.status,
                company.created_at.format("%Y-%m-%d %H:%M")
            );
        } else if count == 10 {
            println!("...");
        }
        count += 1;
    }
    println!("{count} active companies");
    Ok(())
}

/// A real deployment's settings, when all four variables are set.
fn deployment() -> Option<(String, String, String, String)> {
    let var = |name: &str| std::env::var(format!("BUSINESS_RECORDS_{name}")).ok();
    Some((var("BASE_URL")?, var("AUTH_URL")?, var("CLIENT_ID")?, var("CLIENT_SECRET")?))
}
