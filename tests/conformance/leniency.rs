//! API Parts 2 and 9.3, where the API leaves things open: records whose fields come in other
//! types and formats, elements that are not records, sort fields and filters the SDK does not
//! know, and server text of any size, over real HTTP.

use business_records::{Company, Error, OnUndecodable};
use business_records_reference_server::{
    Endpoint, Fault, Faults, OddKind, OddRecords, ReferenceServer, Reply,
};
use chrono::{DateTime, SecondsFormat, Utc};

use crate::support;

crate::cases! {
    ServerControl:
        odd_records_one_in_seven_all_arrive_in_order,
        an_element_that_is_not_a_record_ends_the_listing_when_asked,
        an_unknown_sort_field_and_a_new_filter_reach_the_server_unchanged,
        a_huge_error_description_with_control_characters_is_cut_and_escaped;
}

fn rfc3339(date: Option<DateTime<Utc>>) -> Option<String> {
    date.map(|d| d.to_rfc3339_opts(SecondsFormat::Secs, true))
}

/// Checks one delivered company against the record the server holds and the way it sent it.
fn check(company: &Company, expected: &business_records_reference_server::Record, kind: Option<OddKind>) {
    let status = company.status.as_ref().map(|s| s.as_str());
    let (created, updated) = (rfc3339(company.created_at), rfc3339(company.updated_at));
    let (created, updated) = (created.as_deref(), updated.as_deref());
    let want = (expected.str("status"), expected.str("createdAt"), expected.str("updatedAt"));
    let id = &company.id;
    match kind {
        Some(OddKind::NullTimestamp) => {
            assert_eq!((status, created, updated), (want.0, want.1, None), "{id}")
        }
        Some(OddKind::MissingFields) => assert_eq!((status, created, updated), (None, None, want.2), "{id}"),
        Some(OddKind::Unreadable) => {
            assert_eq!((status, created, updated), (None, None, want.2), "{id}");
            assert_eq!(company.fallbacks(), ["status", "createdAt"], "{id}");
            assert_eq!(company.extra["createdAt"], "not a date", "{id}: the raw value is kept");
            assert_eq!(company.extra["status"], 42, "{id}: the raw value is kept");
        }
        // Epoch seconds, epoch milliseconds and space-separated timestamps read as the same
        // instants; a non-object element next to the record leaves the record itself whole.
        _ => assert_eq!((status, created, updated), want, "{id} ({kind:?})"),
    }
    if kind != Some(OddKind::Unreadable) {
        assert!(company.fallbacks().is_empty(), "{id}: {:?}", company.fallbacks());
    }
    assert_eq!(company.extra["industry"], expected["industry"], "{id}");
}

async fn odd_records_one_in_seven_all_arrive_in_order() {
    let odd = OddRecords::every(7);
    let server = ReferenceServer::builder()
        .companies(2_000)
        .contacts_per_company(0)
        .odd_records(odd.clone())
        .start()
        .await;
    let client = support::client_for(&server).build().expect("valid client");
    let mut stream = client.companies().sort("name").stream();
    let mut companies = Vec::new();
    while let Some(company) = stream.try_next().await.expect("no error: odd records do not end a listing") {
        companies.push(company);
    }

    let dataset = server.dataset();
    let expected: Vec<&str> = dataset.companies_sorted("name", None).iter().map(|c| c.id()).collect();
    let got: Vec<&str> = companies.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(got, expected, "all 2,000, in the server's order");
    let kind_of =
        |id: &str| dataset.companies().iter().position(|c| c.id() == id).and_then(|i| odd.kind_of(i));
    for company in &companies {
        let record = dataset.company(&company.id).expect("a served company is in the dataset");
        check(company, record, kind_of(&company.id));
    }

    let count = |kind| (0..2_000).filter(|&i| odd.kind_of(i) == Some(kind)).count() as u64;
    assert_eq!(count(OddKind::Unreadable), 40);
    let fell_back = companies.iter().filter(|c| !c.fallbacks().is_empty()).count() as u64;
    assert_eq!(fell_back, count(OddKind::Unreadable), "records with a field kept raw say so");
    assert_eq!(
        stream.undecodable(),
        count(OddKind::NotAnObject),
        "elements that are not records are counted"
    );
    let set_aside = stream.take_undecodable();
    assert_eq!(set_aside.len() as u64, count(OddKind::NotAnObject));
    for element in &set_aside {
        // The bare id the server sent just before its record, reported with page and position.
        let id: String = serde_json::from_str(&element.raw).expect("a JSON string");
        assert_eq!(kind_of(&id), Some(OddKind::NotAnObject), "{element}");
        assert_eq!(element.reason, format!("invalid type: string {id:?}, expected a company object"));
        let page = usize::try_from(element.page).expect("a page number");
        let at = expected.iter().position(|e| *e == id).expect("a served id");
        assert_eq!(page, at / 100 + 1, "{element}");
        // Its record's place in the page, after the other extra elements before it.
        let page_start = at / 100 * 100;
        let extra_before =
            expected[page_start..at].iter().filter(|e| kind_of(e) == Some(OddKind::NotAnObject)).count();
        assert_eq!(element.position, at - page_start + extra_before, "{element}");
    }
}

async fn an_element_that_is_not_a_record_ends_the_listing_when_asked() {
    let odd = OddRecords::every(5).kinds([OddKind::NotAnObject]);
    let server =
        ReferenceServer::builder().companies(20).contacts_per_company(0).odd_records(odd).start().await;
    let client = support::client_for(&server).build().expect("valid client");
    let mut stream = client.companies().on_undecodable(OnUndecodable::Fail).stream();
    let (ids, error) = support::drain(&mut stream).await;
    assert!(ids.is_empty(), "the page that failed delivers nothing: {ids:?}");
    match error {
        Some(Error::Undecodable(e)) => {
            let item = e.item();
            assert_eq!(e.endpoint(), "/v1/companies");
            // Records 0..=3, then the bare id of record 4.
            assert_eq!((item.page, item.position, item.raw.as_str()), (1, 4, r#""cmp_0005""#));
        }
        other => panic!("expected an undecodable element, got {other:?}"),
    }

    let page = client.companies().send().await.expect("skipped by default");
    assert_eq!(page.data.len(), 20);
    let positions: Vec<(u64, usize)> = page.undecodable.iter().map(|u| (u.page, u.position)).collect();
    assert_eq!(positions, [(1, 4), (1, 10), (1, 16), (1, 22)]);
}

async fn an_unknown_sort_field_and_a_new_filter_reach_the_server_unchanged() {
    let server = ReferenceServer::builder().companies(60).contacts_per_company(0).start().await;
    let client = support::client_for(&server).build().expect("valid client");
    let error = client
        .companies()
        .sort("-employeeCount")
        .filter("country", "DE")
        .send()
        .await
        .expect_err("the reference server sorts on the API's fields only");
    assert_eq!((error.status(), error.code().map(|c| c.as_str())), (Some(400), Some("invalid_request")));
    let sent = support::api_requests(&server).pop().expect("a request reached the server");
    assert_eq!(sent.query("sort"), Some("-employeeCount"));
    assert_eq!(sent.query("country"), Some("DE"));

    server.reset_counters();
    let companies: Vec<Company> = client
        .companies()
        .limit(5)
        .filter("region", "north & south/east")
        .status("active")
        .stream()
        .try_collect()
        .await
        .expect("unknown parameters are ignored by the server");
    let expected = server.dataset().companies_sorted("", Some("active")).len();
    assert_eq!(companies.len(), expected);
    let requests = support::api_requests(&server);
    assert!(requests.len() >= 2, "several pages: {}", requests.len());
    for request in &requests {
        assert_eq!(request.query("region"), Some("north & south/east"), "every page repeats it");
        assert_eq!(request.query("status"), Some("active"));
    }
}

async fn a_huge_error_description_with_control_characters_is_cut_and_escaped() {
    let description = format!("line one\nline two\u{1b}[2J\r{}", "x".repeat(100 * 1024));
    let body = serde_json::json!({"error": "invalid_request", "error_description": description});
    let fault = Fault::Reply(Reply::json(400, body.to_string()));
    let server = ReferenceServer::builder()
        .companies(3)
        .faults(Faults::new().on_every(Endpoint::Companies, 1, fault))
        .start()
        .await;
    let client = support::client_for(&server).build().expect("valid client");
    let error = client.companies().send().await.expect_err("the server refuses");
    let text = error.description().expect("a description").to_owned();
    assert!(text.starts_with("line one\\nline two\\u{1b}[2J\\rxxx"), "{}", &text[..40]);
    assert!(text.len() <= 1024 + 3 && text.ends_with('…'), "{} bytes", text.len());
    let shown = error.to_string();
    assert!(!shown.chars().any(char::is_control), "no control character reaches the message");
    assert!(shown.len() < 1200, "{} bytes", shown.len());
}
