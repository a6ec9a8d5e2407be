//! Server-to-server authentication in detail: HTTP Basic and form-body client credentials,
//! scopes, what the errors look like, and one page at a time.
//!
//! ```text
//! cargo run --example client_credentials
//! ```

mod support;

use std::process::ExitCode;

use business_records::error::{ErrorCode, Origin};
use business_records::{Auth, Client, ContactSort, Error};

#[tokio::main]
async fn main() -> ExitCode {
    support::exit_code(run().await)
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let target = support::Target::from_env().await;

    // HTTP Basic is the default; the form body is one call away.
    for (how, auth) in [
        ("basic", Auth::client_credentials(&target.auth_url, &target.client_id, &target.client_secret)),
        (
            "form body",
            Auth::client_credentials(&target.auth_url, &target.client_id, &target.client_secret)
                .credentials_in_body(),
        ),
    ] {
        let client = Client::builder().base_url(&target.base_url).auth(auth.scopes(["api/read"])).build()?;
        let page = client.companies().limit(3).send().await?;
        println!("{how:>9}: {} companies on the first page of {:?}", page.data.len(), page.total_count);
    }

    // A wrong secret is a typed error that never shows the secret.
    let wrong = Client::builder()
        .base_url(&target.base_url)
        .auth(Auth::client_credentials(&target.auth_url, &target.client_id, "not-the-secret"))
        .build()?;
    match wrong.companies().send().await {
        Err(Error::Api(err)) if err.origin() == Origin::AuthorizationServer => {
            println!(
                "wrong secret: {err} (code {:?}, sign in again: {})",
                err.code(),
                Error::Api(err.clone()).needs_reauthentication()
            );
            assert_eq!(err.code(), Some(&ErrorCode::InvalidClient));
        }
        Err(other) => return Err(other.into()),
        Ok(_) => return Err("expected invalid_client, got a page".into()),
    }

    // One page at a time, by hand: the contacts of the first company, sorted by name.
    let client = Client::builder()
        .base_url(&target.base_url)
        .auth(Auth::client_credentials(&target.auth_url, &target.client_id, &target.client_secret))
        .build()?;
    let company = client.companies().limit(1).send().await?.data.into_iter().next().ok_or("no companies")?;
    let mut page =
        client.contacts().company_id(&company.id).sort(ContactSort::Name.asc()).limit(2).send().await?;
    loop {
        for contact in &page.data {
            println!("{}: {}", company.name, contact.field_str("name").unwrap_or("(no name)"));
        }
        match (page.has_more, page.next_cursor.take()) {
            (true, Some(cursor)) => {
                page = client
                    .contacts()
                    .company_id(&company.id)
                    .sort(ContactSort::Name.asc())
                    .limit(2)
                    .cursor(cursor)
                    .send()
                    .await?
            }
            _ => break,
        }
    }
    Ok(())
}
