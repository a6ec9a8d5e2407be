//! Spec Part 9.5 at its edges, over real HTTP: `Deprecation: false`, a 410 without the
//! `version_sunset` code, and a transient failure from a version whose sunset has passed.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use business_records::{DeprecationPolicy, Error, RetryPolicy};
use business_records_reference_server::{
    DeprecationHeaders, Endpoint, Fault, Faults, ReferenceServer, Reply, RetryAfter,
};
use chrono::{TimeZone, Utc};

use crate::support;

crate::cases! {
    ServerControl:
        deprecation_false_means_not_deprecated,
        any_410_is_a_sunset_with_what_the_headers_give,
        a_transient_failure_after_the_sunset_date_stays_retryable,
        a_failure_that_is_not_transient_after_the_sunset_date_is_a_sunset;
}

const COMPANIES: &str = "/v1/companies";

async fn deprecation_false_means_not_deprecated() {
    let server = ReferenceServer::builder()
        .companies(30)
        .deprecated(COMPANIES, DeprecationHeaders::not_deprecated())
        .start()
        .await;
    let notices = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&notices);
    let client = support::client_for(&server)
        .deprecation_policy(DeprecationPolicy::Fail)
        .on_deprecation(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
        })
        .build()
        .expect("valid client");
    let pages = client
        .companies()
        .limit(10)
        .pages()
        .try_collect::<Vec<_>>()
        .await
        .expect("not refused by the policy");
    assert_eq!(pages.len(), 3);
    assert!(pages.iter().all(|p| p.deprecation.is_none()));
    assert_eq!(notices.load(Ordering::SeqCst), 0);
    let sent = support::api_requests(&server);
    assert!(!sent.is_empty());
}

async fn any_410_is_a_sunset_with_what_the_headers_give() {
    let server = ReferenceServer::builder()
        .companies(3)
        .faults(Faults::new().on_every(Endpoint::Companies, 1, Fault::Reply(Reply::json(410, Vec::new()))))
        .start()
        .await;
    let client = support::client_for(&server).build().expect("valid client");
    let error = client.companies().send().await.expect_err("gone");
    match &error {
        Error::Sunset(e) if e.sunset().is_none() && e.successor().is_none() => {}
        other => panic!("a bare 410 is a sunset, got {other:?}"),
    }
    assert_eq!(error.status(), Some(410));
    assert!(!error.is_retryable());
    assert_eq!(support::api_requests(&server).len(), 1, "a sunset is not retried");

    let past = Utc.with_ymd_and_hms(2024, 1, 1, 0, 0, 0).single().expect("a date");
    let headers = DeprecationHeaders::deprecated().sunset(past).successor("/v2/companies");
    server.set_lifecycle(COMPANIES, business_records_reference_server::Lifecycle::Deprecated(headers));
    server.set_faults(Faults::new().on_every(
        Endpoint::Companies,
        1,
        Fault::Reply(Reply::json(410, br#"{"error":"gone"}"#.to_vec())),
    ));
    let error = client.companies().send().await.expect_err("gone");
    match error {
        Error::Sunset(e) => {
            assert_eq!(e.sunset(), Some(past));
            let expected = format!("{}/v2/companies", server.base_url());
            assert_eq!(e.successor().map(|u| u.to_string()), Some(expected));
        }
        other => panic!("a 410 with headers is a sunset with its date and successor, got {other:?}"),
    }
}

async fn a_transient_failure_after_the_sunset_date_stays_retryable() {
    let past = Utc.with_ymd_and_hms(2024, 1, 1, 0, 0, 0).single().expect("a date");
    let headers = DeprecationHeaders::deprecated().sunset(past).successor("/v2/companies");
    let faults = Faults::new().on_sequence(
        Endpoint::Companies,
        [Some(Fault::Status(503)), Some(Fault::RateLimited(RetryAfter::Seconds(0)))],
    );
    let server =
        ReferenceServer::builder().companies(3).deprecated(COMPANIES, headers).faults(faults).start().await;
    let quick =
        RetryPolicy::default().initial_delay(Duration::from_millis(1)).max_delay(Duration::from_millis(5));
    let client = support::client_for(&server).retry(quick).build().expect("valid client");
    let mut pages = client.companies().pages();
    let page = pages.try_next().await.expect("retried past the 503 and the 429").expect("a page");
    assert_eq!((page.data.len(), pages.retries()), (3, 2));
    assert_eq!(page.deprecation.and_then(|n| n.sunset), Some(past));

    server.set_faults(Faults::new().on_every(Endpoint::Companies, 1, Fault::Status(503)));
    let error = client.companies().retry(RetryPolicy::none()).send().await.expect_err("unavailable");
    assert!(matches!(error, Error::Api(_)), "{error:?}");
    assert!(error.is_retryable());
    assert_eq!(error.deprecation().and_then(|n| n.sunset), Some(past), "the notice is carried");
}

/// One rule of a transient failure (429, 502, 503, 504): a 500 or 501 is none, so past the
/// sunset date it is the sunset that answers, with its successor.
async fn a_failure_that_is_not_transient_after_the_sunset_date_is_a_sunset() {
    let past = Utc.with_ymd_and_hms(2024, 1, 1, 0, 0, 0).single().expect("a date");
    let headers = DeprecationHeaders::deprecated().sunset(past).successor("/v2/companies");
    let server = ReferenceServer::builder().companies(3).deprecated(COMPANIES, headers).start().await;
    let client = support::client_for(&server).build().expect("valid client");
    for status in [500, 501] {
        server.set_faults(Faults::new().on_every(Endpoint::Companies, 1, Fault::Status(status)));
        let error = client.companies().send().await.expect_err("a failure");
        assert!(matches!(error, Error::Sunset(ref e) if e.sunset() == Some(past)), "{status}: {error:?}");
        assert_eq!((error.status(), error.is_retryable()), (Some(status), false), "{status}");
        let Error::Sunset(sunset) = &error else { return };
        assert!(sunset.successor().is_some_and(|url| url.path() == "/v2/companies"), "{sunset:?}");
    }
}
