//! Spec Part 4.1: cursor pagination against the reference server.

use std::collections::HashSet;

use business_records::error::ErrorCode;
use business_records::{Company, CompanySort, ContactSort, Error, ItemStream, PageStream, Sort};
use business_records_reference_server::ReferenceServer;

use crate::support::{self, Target};

crate::cases! {
    ServerControl:
        every_matching_company_exactly_once_in_the_requested_order_for_each_sort,
        every_page_request_repeats_limit_sort_and_filters,
        streams_ask_for_full_pages_and_send_uses_the_server_default,
        max_items_is_a_total_cap_and_nothing_is_fetched_past_it,
        prefetching_and_sequential_streams_deliver_the_same_items,
        invalid_arguments_fail_before_any_request,
        expired_cursors_say_how_much_was_delivered;
    Anywhere:
        the_order_is_the_order_of_the_sorted_field,
        a_tampered_cursor_is_rejected,
        a_cursor_is_bound_to_its_query,
        streams_are_send_and_static_and_run_on_other_tasks,
        sort_strings_parse_to_typed_sorts [sync];
}

const SORTS: [&str; 6] = ["name", "-name", "createdAt", "-createdAt", "updatedAt", "-updatedAt"];

async fn every_matching_company_exactly_once_in_the_requested_order_for_each_sort() {
    let server = ReferenceServer::builder().companies(1_000).start().await;
    let client = support::client_for(&server).build().expect("valid client");
    for sort in SORTS {
        let got: Vec<Company> =
            client.companies().status("active").sort(sort).stream().try_collect().await.expect("listing");
        let dataset = server.dataset();
        let expected: Vec<&str> =
            dataset.companies_sorted(sort, Some("active")).iter().map(|c| c.id()).collect();
        assert!(expected.len() > 100, "the filter keeps several pages");
        let ids: Vec<&str> = got.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, expected, "sort {sort}");
        assert_eq!(ids.iter().collect::<HashSet<_>>().len(), ids.len(), "no duplicates");
        assert!(got.iter().all(|c| c.status.as_ref().is_some_and(|s| s.as_str() == "active")));
    }
}

async fn the_order_is_the_order_of_the_sorted_field() {
    let target = Target::new().await;
    let client = &target.client();
    let sorted = |sort: Sort<Company>| async move {
        let companies: Vec<Company> =
            client.companies().sort(sort).max_items(300).stream().try_collect().await.expect("listing");
        assert!(companies.len() > 1, "an order needs two companies, got {}", companies.len());
        companies
    };
    let by_created = sorted(CompanySort::CreatedAt.desc()).await;
    assert!(by_created.windows(2).all(|w| w[0].created_at >= w[1].created_at));
    let by_name = sorted(CompanySort::Name.asc()).await;
    assert!(by_name.windows(2).all(|w| w[0].name <= w[1].name));
}

async fn every_page_request_repeats_limit_sort_and_filters() {
    let server = ReferenceServer::start().await;
    let client = support::client_for(&server).build().expect("valid client");
    let company = server.dataset().companies()[0].id().to_owned();
    let pages = client
        .contacts()
        .company_id(company.clone())
        .sort(ContactSort::Name.desc())
        .limit(1)
        .pages()
        .try_collect::<Vec<_>>()
        .await
        .expect("listing");
    let expected = server.dataset().contacts_of(&company).count();
    assert_eq!(pages.len(), expected);
    let requests = support::api_requests(&server);
    assert_eq!(requests.len(), expected);
    for (i, request) in requests.iter().enumerate() {
        assert_eq!(request.path(), "/v1/contacts");
        assert_eq!(request.query("limit"), Some("1"), "request {i}");
        assert_eq!(request.query("sort"), Some("-name"), "request {i}");
        assert_eq!(request.query("companyId"), Some(company.as_str()), "request {i}");
        assert_eq!(request.query("cursor").is_some(), i > 0, "request {i}");
    }
}

async fn streams_ask_for_full_pages_and_send_uses_the_server_default() {
    let server = ReferenceServer::start().await;
    let client = support::client_for(&server).build().expect("valid client");
    let page = client.companies().send().await.expect("one page");
    assert_eq!(page.data.len(), 20, "the API's default page size");
    assert!(page.has_more);
    assert_eq!(page.total_count, Some(server.dataset().companies().len() as u64));
    assert_eq!(support::api_requests(&server)[0].query("limit"), None);

    server.reset_counters();
    let all = client.companies().stream().try_collect::<Vec<_>>().await.expect("listing");
    assert_eq!(all.len(), server.dataset().companies().len());
    let requests = support::api_requests(&server);
    assert_eq!(requests.len(), server.dataset().companies().len().div_ceil(100));
    assert!(requests.iter().all(|r| r.query("limit") == Some("100")));
}

async fn max_items_is_a_total_cap_and_nothing_is_fetched_past_it() {
    let server = ReferenceServer::start().await;
    for prefetch in [true, false] {
        server.reset_counters();
        let client = support::client_for(&server).prefetch(prefetch).build().expect("valid client");
        let got = client
            .companies()
            .limit(40)
            .max_items(100)
            .stream()
            .try_collect::<Vec<_>>()
            .await
            .expect("listing");
        assert_eq!(got.len(), 100);
        let limits: Vec<String> = support::api_requests(&server)
            .iter()
            .map(|r| r.query("limit").unwrap_or_default().to_owned())
            .collect();
        assert_eq!(limits, ["40", "40", "20"], "prefetch {prefetch}");
    }
    server.reset_counters();
    let client = support::client_for(&server).build().expect("valid client");
    let page = client.companies().max_items(3).send().await.expect("one page");
    assert_eq!(page.data.len(), 3);
    assert_eq!(support::api_requests(&server)[0].query("limit"), Some("3"));
}

async fn prefetching_and_sequential_streams_deliver_the_same_items() {
    let server = ReferenceServer::start().await;
    let mut results = Vec::new();
    for prefetch in [true, false] {
        let client = support::client_for(&server).prefetch(prefetch).build().expect("valid client");
        let ids: Vec<String> = client
            .companies()
            .sort("-updatedAt")
            .limit(33)
            .stream()
            .try_collect::<Vec<_>>()
            .await
            .expect("listing")
            .into_iter()
            .map(|c| c.id)
            .collect();
        results.push(ids);
    }
    assert_eq!(results[0], results[1]);
    assert_eq!(results[0].len(), server.dataset().companies().len());
}

async fn invalid_arguments_fail_before_any_request() {
    let server = ReferenceServer::start().await;
    let client = support::client_for(&server).build().expect("valid client");
    let cases: Vec<(&str, Result<_, Error>)> = vec![
        ("limit", client.companies().limit(0).send().await.map(|_| ())),
        ("limit", client.companies().limit(101).stream().try_collect::<Vec<_>>().await.map(|_| ())),
        ("sort", client.companies().sort("name,email").send().await.map(|_| ())),
        ("sort", client.contacts().sort("-company id").pages().try_collect::<Vec<_>>().await.map(|_| ())),
        ("filter", client.contacts().filter("cursor", "abc").send().await.map(|_| ())),
        ("status", client.companies().status("").send().await.map(|_| ())),
        ("company_id", client.contacts().company_id(" ").send().await.map(|_| ())),
    ];
    for (argument, result) in cases {
        match result {
            Err(Error::InvalidArgument(got)) => {
                assert_eq!(got.argument(), argument);
                assert!(!got.message().is_empty());
            }
            other => panic!("expected invalid `{argument}`, got {other:?}"),
        }
    }
    assert_eq!(server.token_requests(), 0);
    assert!(support::api_requests(&server).is_empty());
}

async fn a_tampered_cursor_is_rejected() {
    let target = Target::new().await;
    let client = target.client();
    let page = client.companies().limit(2).send().await.expect("first page");
    let cursor = page.next_cursor.expect("more than two companies");
    let mut tampered = cursor.as_str().to_owned();
    let last = tampered.pop().expect("non-empty cursor");
    tampered.push(if last == 'A' { 'B' } else { 'A' });

    let err = client.companies().limit(2).cursor(tampered.as_str()).send().await.expect_err("tampered");
    assert_eq!(err.status(), Some(400));
    assert_eq!(err.code(), Some(&ErrorCode::InvalidCursor));

    let mut stream = client.companies().limit(2).cursor(tampered.as_str()).stream();
    let err = stream.try_next().await.expect_err("tampered, streamed");
    assert!(matches!(err, Error::CursorRejected(ref e) if e.items_delivered() == 0), "{err:?}");
    assert!(err.to_string().contains("restart the listing"));
    assert!(stream.try_next().await.expect("the stream ended").is_none());
}

async fn a_cursor_is_bound_to_its_query() {
    let target = Target::new().await;
    let client = target.client();
    let page = client.companies().sort("name").limit(2).send().await.expect("first page");
    let cursor = page.next_cursor.expect("more pages");
    let err = client.companies().sort("-name").cursor(&cursor).send().await.expect_err("another sort");
    assert_eq!(err.code(), Some(&ErrorCode::InvalidCursor));
    let err = client
        .companies()
        .sort("name")
        .status("active")
        .cursor(&cursor)
        .send()
        .await
        .expect_err("another filter");
    assert_eq!(err.code(), Some(&ErrorCode::InvalidCursor));
    let next = client
        .companies()
        .sort("name")
        .limit(5)
        .cursor(&cursor)
        .send()
        .await
        .expect("same query, other limit");
    assert_eq!(next.data.len(), 5);
}

async fn expired_cursors_say_how_much_was_delivered() {
    let server = ReferenceServer::builder().cursor_ttl(std::time::Duration::from_millis(300)).start().await;
    let client = support::client_for(&server).prefetch(false).build().expect("valid client");
    let mut stream = client.companies().limit(10).stream();
    for _ in 0..10 {
        stream.try_next().await.expect("first page").expect("an item");
    }
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let err = stream.try_next().await.expect_err("the cursor expired");
    assert!(
        matches!(err, Error::CursorRejected(ref e) if *e.code() == ErrorCode::CursorExpired && e.items_delivered() == 10),
        "{err:?}"
    );
    assert_eq!(err.items_delivered(), Some(10));
}

async fn streams_are_send_and_static_and_run_on_other_tasks() {
    fn assert_send_sync_static<T: Send + Sync + 'static>(_: &T) {}
    let target = Target::new().await;
    let client = target.client();
    let stream: ItemStream<Company> = client.companies().max_items(150).stream();
    let pages: PageStream<Company> = client.companies().max_items(150).pages();
    assert_send_sync_static(&stream);
    assert_send_sync_static(&pages);
    assert_send_sync_static(&client);
    let items = tokio::spawn(stream.try_collect::<Vec<_>>()).await.expect("task ran").expect("listing");
    assert_eq!(items.len(), 150);
    let pages = tokio::spawn(pages.try_collect::<Vec<_>>()).await.expect("task ran").expect("listing");
    assert_eq!(pages.iter().map(|p| p.data.len()).sum::<usize>(), 150);
}

fn sort_strings_parse_to_typed_sorts() {
    assert_eq!(Sort::<Company>::from("-createdAt"), CompanySort::CreatedAt.desc());
    assert_eq!(Sort::<Company>::from("name"), CompanySort::Name.asc());
}
