//! Deprecation notices you can act on: one `tracing` warning, a callback for every notice, the
//! move to the successor version, and the typed errors of the `Fail` policy and of a sunset.
//!
//! ```text
//! cargo run --example deprecation
//! ```
//!
//! Runs against the embedded reference server, which deprecates `GET /v1/companies`
//! (`Deprecation`, `Sunset` and a `Link` to its successor `/v2/companies`) and serves `v2`.
//! With `BUSINESS_RECORDS_BASE_URL`, `BUSINESS_RECORDS_AUTH_URL`, `BUSINESS_RECORDS_CLIENT_ID`
//! and `BUSINESS_RECORDS_CLIENT_SECRET` set, it lists that deployment's companies and reports
//! the notices it sent; the steps that need a server whose lifecycle it controls are skipped.

mod support;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use business_records::{ApiVersion, DeprecationPolicy, Error};
use business_records_reference_server::{DeprecationHeaders, Lifecycle, ReferenceServer};
use chrono::{TimeDelta, Utc};

#[tokio::main]
async fn main() -> ExitCode {
    support::exit_code(run().await)
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    // The client logs through `tracing`; show warnings on stderr.
    tracing_subscriber::fmt().with_max_level(tracing::Level::WARN).with_target(false).init();

    let now = Utc::now();
    let headers = DeprecationHeaders::since(now - TimeDelta::days(90))
        .sunset(now + TimeDelta::days(270))
        .successor("/v2/companies")
        .link("https://docs.example.com/deprecations/v1", "deprecation");
    let target = support::Target::from_env_or(
        ReferenceServer::builder().companies(250).serve_version(2).deprecated("/v1/companies", headers),
    )
    .await;
    let builder = || target.client_builder();

    // 1. Every company of v1: three pages, one warning in the log, the callback for each page.
    let notices = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&notices);
    let client = builder()
        .on_deprecation(move |notice| {
            if counter.fetch_add(1, Ordering::Relaxed) == 0 {
                println!("callback: {notice}");
            }
        })
        .build()?;
    let companies: Vec<_> = client.companies().stream().try_collect().await?;
    println!(
        "v1: {} companies; the callback saw {} notices, the log above has {} warning",
        companies.len(),
        notices.load(Ordering::Relaxed),
        if notices.load(Ordering::Relaxed) == 0 { "no" } else { "one" }
    );

    // 2. Each page carries its notice, with the dates and the successor.
    let page = client.companies().limit(1).send().await?;
    if let Some(notice) = &page.deprecation {
        println!(
            "notice: deprecated since {:?}, sunset {:?}, successor {:?}",
            notice.deprecated_since().map(|d| d.date_naive()),
            notice.sunset.map(|d| d.date_naive()),
            notice.successor.as_ref().map(|u| u.as_str()),
        );
    }
    let Some(server) = &target.server else {
        println!("a deployment: moving versions, the Fail policy and the sunset need the embedded server");
        return Ok(());
    };

    // 3. Move to the successor: the same records, no notice.
    let v2 = builder().api_version(ApiVersion::new(2)?).build()?;
    let page = v2.companies().send().await?;
    println!(
        "v2: {} companies on the first page, deprecated: {}",
        page.data.len(),
        page.deprecation.is_some()
    );

    // 4. In CI, make deprecated responses errors.
    let strict = builder().deprecation_policy(DeprecationPolicy::Fail).build()?;
    match strict.companies().send().await {
        Err(Error::Deprecated(refused)) => println!("fail policy: {refused}"),
        Err(other) => return Err(other.into()),
        Ok(_) => return Err("expected a deprecation error, got a page".into()),
    }

    // 5. After the sunset, v1 answers 410 and the error names the successor.
    server.set_lifecycle(
        "/v1/companies",
        Lifecycle::Sunset(DeprecationHeaders::new().sunset(now).successor("/v2/companies")),
    );
    match client.companies().send().await {
        Err(error @ Error::Sunset(_)) => println!("after the sunset: {error}"),
        Err(other) => return Err(other.into()),
        Ok(_) => return Err("expected a sunset error, got a page".into()),
    }
    Ok(())
}
