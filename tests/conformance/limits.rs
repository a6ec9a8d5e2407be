//! Bounds against a hostile server, over real HTTP: page bodies past their limit, error bodies
//! past theirs, cursors past theirs.

use business_records::error::{Origin, PaginationError};
use business_records::{Error, RetryPolicy};
use business_records_reference_server::{Endpoint, Fault, Faults, ReferenceServer, Reply};

use crate::{harness, support};

crate::cases! {
    (ServerControl, Proc):
        a_200_mib_page_is_refused_with_little_memory;
    ChildProcess:
        oversized_page_child;
    ServerControl:
        the_page_limit_is_settable_and_announced_lengths_are_refused_unread,
        an_error_body_past_its_limit_leaves_the_status_and_headers_to_make_the_error,
        a_cursor_longer_than_8_kib_ends_the_listing_after_its_page;
}

/// A 200 MiB page, streamed by the reference server's proxy without `Content-Length` and
/// generated as it is written, fails with the page size error while the process's peak
/// resident set stays under 100 MiB.
///
/// The conformance binary runs many tests at once in one process, so the peak of this one
/// cannot be read there: the test runs the binary again as a child process with only
/// [`oversized_page_child`] selected (`--exact --ignored`), and the child prints its own peak
/// resident set (`VmHWM` from `/proc/self/status`, Linux only) after the listing failed.
async fn a_200_mib_page_is_refused_with_little_memory() {
    let exe = std::env::current_exe().expect("the test binary");
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(exe)
            .args(["--exact", "limits::oversized_page_child", "--ignored", "--nocapture", "--test-threads=1"])
            .env(harness::CHILD, "1")
            .output()
    })
    .await
    .expect("the child's task ran")
    .expect("the child ran");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "child failed:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let value = |key: &str| {
        // libtest may print the test's name on the same line as its first output.
        let found = stdout.lines().find_map(|l| l.split_once(key).map(|(_, value)| value.trim()));
        found.unwrap_or_else(|| panic!("no {key} in {stdout}"))
    };
    assert_eq!(
        value("error="),
        "the response of /v1/companies is larger than the page body limit of 33554432 bytes"
    );
    let peak_kib: u64 = value("peak_rss_kib=").parse().expect("a number");
    assert!(peak_kib < 100 * 1024, "peak resident set {peak_kib} KiB");
}

/// The child half of [`a_200_mib_page_is_refused_with_little_memory`]; runs only there (the
/// runner reports it ignored anywhere else).
async fn oversized_page_child() {
    let server = ReferenceServer::builder()
        .companies(5)
        .contacts_per_company(0)
        .faults(Faults::new().on_every(Endpoint::Companies, 1, Fault::OversizedBody(200 * 1024 * 1024)))
        .start()
        .await;
    let client = support::client_for(&server).build().expect("valid client");
    let error = client.companies().send().await.expect_err("too large");
    assert!(
        matches!(error, Error::ResponseTooLarge(ref e) if e.body() == "page" && e.limit() == 33_554_432),
        "{error:?}"
    );
    assert!(!error.is_retryable());
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let peak = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).expect("VmHWM");
    println!("error={error}");
    println!("peak_rss_kib={}", peak.trim().trim_end_matches("kB").trim());
}

async fn the_page_limit_is_settable_and_announced_lengths_are_refused_unread() {
    let page = serde_json::json!({
        "data": (0..100).map(|i| serde_json::json!({"id": format!("c{i}"), "name": "x".repeat(1000)})).collect::<Vec<_>>(),
        "pagination": {"hasMore": false},
    });
    let body = page.to_string().into_bytes();
    let server = ReferenceServer::builder()
        .companies(3)
        .faults(Faults::new().on_every(Endpoint::Companies, 1, Fault::Body(body)))
        .start()
        .await;
    let small = support::client_for(&server).max_page_bytes(64 * 1024).build().expect("valid client");
    let error = small.companies().send().await.expect_err("too large for 64 KiB");
    assert!(
        matches!(error, Error::ResponseTooLarge(ref e) if e.body() == "page" && e.limit() == 65_536),
        "{error:?}"
    );
    let default = support::client_for(&server).build().expect("valid client");
    assert_eq!(default.companies().send().await.expect("within 32 MiB").data.len(), 100);
    let refused = support::client_for(&server).max_page_bytes(10).build().expect_err("too small");
    assert!(matches!(refused, Error::InvalidArgument(ref e) if e.argument() == "max_page_bytes"));
}

/// An error answer of JSON past the 256 KiB error body limit, naming `code`.
fn huge_error(status: u16, code: &str) -> Fault {
    let description = "x".repeat(300 * 1024);
    let body = serde_json::json!({"error": code, "error_description": description});
    Fault::Reply(Reply::json(status, body.to_string()))
}

/// From the API and from the authorization server alike, an error body past its limit is left
/// unread and the status makes the error: a 503 or 502 is retried as any other, and a 400 is an
/// error with its status and no code (the body that named one was never read).
async fn an_error_body_past_its_limit_leaves_the_status_and_headers_to_make_the_error() {
    let faults = Faults::new()
        .on_sequence(Endpoint::Token, [Some(huge_error(503, "temporarily_unavailable"))])
        .on_sequence(Endpoint::Companies, [Some(huge_error(502, "server_error"))]);
    let server = ReferenceServer::builder().companies(3).contacts_per_company(0).faults(faults).start().await;
    let quick = RetryPolicy::default().initial_delay(std::time::Duration::from_millis(5));
    let client = support::client_for(&server).retry(quick).build().expect("valid client");
    let page = client.companies().send().await.expect("both answers retried");
    assert_eq!(page.data.len(), 3);
    let token = server.fault_counts(Endpoint::Token);
    assert_eq!((token.requests, token.get("reply")), (2, 1), "{token:?}");
    let counts = server.fault_counts(Endpoint::Companies);
    assert_eq!((counts.requests, counts.get("reply")), (2, 1), "{counts:?}");

    server.set_faults(Faults::new().on_sequence(Endpoint::Token, [Some(huge_error(400, "invalid_scope"))]));
    let refused = support::client_for(&server).build().expect("valid client");
    let error = refused.companies().send().await.expect_err("a 400 token answer");
    assert!(
        matches!(error, Error::Api(ref e) if e.origin() == Origin::AuthorizationServer && e.status() == 400 && e.code().is_none()),
        "{error:?}"
    );

    server.set_faults(Faults::new().on_sequence(Endpoint::Companies, [Some(huge_error(404, "not_found"))]));
    let error = client.companies().send().await.expect_err("a 404 page answer");
    assert!(matches!(error, Error::Api(ref e) if e.status() == 404 && e.code().is_none()), "{error:?}");
}

async fn a_cursor_longer_than_8_kib_ends_the_listing_after_its_page() {
    let cursor = "c".repeat(8 * 1024 + 1);
    let body = serde_json::json!({
        "data": [{"id": "c1", "name": "One"}],
        "pagination": {"hasMore": true, "nextCursor": cursor},
    });
    let server = ReferenceServer::builder()
        .companies(3)
        .faults(Faults::new().on_every(Endpoint::Companies, 1, Fault::Body(body.to_string().into_bytes())))
        .start()
        .await;
    let client = support::client_for(&server).build().expect("valid client");
    let (ids, error) = support::drain(&mut client.companies().stream()).await;
    assert_eq!(ids, ["c1"]);
    assert!(
        matches!(error, Some(Error::Pagination(ref e)) if matches!(**e, PaginationError::CursorTooLong { page: 1, bytes: 8193, .. })),
        "{error:?}"
    );
    assert_eq!(support::api_requests(&server).len(), 1, "the long cursor is never sent back");
}
