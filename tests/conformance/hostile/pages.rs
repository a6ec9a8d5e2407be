//! Pages a hostile server sends: millions of elements that are not records, bodies that are
//! not UTF-8. Memory stays within a small multiple of what was read, and errors hold no body.

use std::time::Duration;

use business_records::{Client, Error};
use business_records_reference_server::{Endpoint, Fault, Faults, ReferenceServer, Reply};

use crate::harness;

crate::cases! {
    (ServerControl, Proc):
        eight_mib_of_elements_that_are_not_records_hold_a_few_and_a_count;
    ChildProcess:
        a_process_reading_a_page_of_odd_elements;
    ServerControl:
        a_page_that_is_not_utf8_leaves_no_body_in_the_error;
}

/// How the parent tells its child which element fills the page.
const ELEMENT: &str = "BUSINESS_RECORDS_HOSTILE_ELEMENT";
/// Elements in the page: 8 MiB of them, each two bytes with its comma.
const ELEMENTS: u64 = 4 * 1024 * 1024;

/// A page of [`ELEMENTS`] copies of `element` (`0`, `{}`), generated as it is sent.
fn page_of(element: &str) -> Reply {
    let head = r#"{"pagination": {"hasMore": false, "totalCount": 0}, "data": ["#;
    Reply::json(200, head).repeated(format!("{element},"), ELEMENTS - 1, format!("{element}]}}"))
}

/// The peak (`VmHWM`) and current (`VmRSS`) resident set of this process, in KiB.
fn resident_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let field = |name: &str| {
        let line = status.lines().find_map(|line| line.strip_prefix(name)).expect(name);
        line.trim().trim_end_matches("kB").trim().parse::<u64>().expect("a number")
    };
    (field("VmHWM:"), field("VmRSS:"))
}

async fn eight_mib_of_elements_that_are_not_records_hold_a_few_and_a_count() {
    let exe = std::env::current_exe().expect("the test binary");
    let children = ["0", "{}"].map(|element| {
        let mut child = std::process::Command::new(&exe);
        child
            .args(["--exact", "hostile::pages::a_process_reading_a_page_of_odd_elements"])
            .args(["--ignored", "--nocapture", "--test-threads=1"])
            .env(harness::CHILD, "1")
            .env(ELEMENT, element);
        tokio::task::spawn_blocking(move || (element, child.output()))
    });
    for child in futures::future::join_all(children).await {
        let (element, output) = child.expect("the child's task ran");
        let output = output.expect("the child ran");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{element}: the child failed:\n{stdout}\n{stderr}");
        let grown: u64 = stdout
            .lines()
            .find_map(|line| line.split_once("peak_growth_kib=").map(|(_, n)| n.trim()))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{element}: no figure in {stdout}"));
        // The body is 8 MiB; reading it may double its buffer once. Nothing per element.
        assert!(grown < 3 * 8 * 1024, "{element}: the peak grew by {grown} KiB for an 8 MiB page");
    }
}

/// The child half of [`eight_mib_of_elements_that_are_not_records_hold_a_few_and_a_count`]:
/// reads one page of 8 MiB of odd elements and prints how far its peak resident set grew.
async fn a_process_reading_a_page_of_odd_elements() {
    let element = std::env::var(ELEMENT).expect("the element, from the parent");
    let faults = Faults::new().on_every(Endpoint::Companies, 1, Fault::Reply(page_of(&element)));
    let server = ReferenceServer::builder().companies(1).faults(faults).start().await;
    let client = Client::builder().settings(server.settings()).build().expect("client");
    client.contacts().send().await.expect("a token and a first connection, before measuring");
    let (_, before) = resident_kib();
    let page = client.companies().send().await.expect("the page is read");
    let (peak, _) = resident_kib();
    assert!(page.data.is_empty());
    assert_eq!((page.undecodable.len(), page.undecodable_total), (5, ELEMENTS), "the first five kept");
    assert!(page.undecodable.iter().all(|odd| odd.raw == element), "{:?}", page.undecodable);
    println!("peak_growth_kib={}", peak.saturating_sub(before));
}

async fn a_page_that_is_not_utf8_leaves_no_body_in_the_error() {
    let mut body = br#"{"data": [{"id": "cmp_1", "name": ""#.to_vec();
    body.extend(std::iter::repeat_n(b'x', 1024 * 1024));
    body.extend(b"\xff\xfe\"}], \"pagination\": {\"hasMore\": false}}");
    let faults = Faults::new().on_every(Endpoint::Companies, 1, Fault::Body(body));
    let server = ReferenceServer::builder().companies(1).faults(faults).start().await;
    let client = Client::builder()
        .settings(server.settings())
        .timeout(Duration::from_secs(20))
        .build()
        .expect("client");
    let error = client.companies().send().await.expect_err("not UTF-8");
    assert!(matches!(error, Error::Decode(_)), "{error:?}");
    let shown = format!("{error:?} {error}");
    assert!(
        shown.len() < 1024 && !shown.contains("xxxx"),
        "{} bytes: {}",
        shown.len(),
        &shown[..shown.len().min(300)]
    );
}
