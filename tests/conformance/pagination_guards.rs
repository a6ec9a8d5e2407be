//! Spec Part 4.1 rules 1 and 2 against servers that break them: empty pages in the middle,
//! `hasMore` without a cursor, a cursor served twice. A scripted HTTP server (wiremock) plays
//! the misbehaving API.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use business_records::error::PaginationError;
use business_records::{Auth, Client, Company, Error};
use serde_json::{Value, json};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate, matchers};

crate::cases! {
    Anywhere:
        empty_pages_with_has_more_do_not_end_the_listing,
        endless_empty_pages_end_in_an_error_not_a_hang,
        has_more_without_a_cursor_is_an_error_after_the_items_received,
        a_repeated_cursor_is_an_error_not_an_endless_loop,
        unknown_fields_in_the_envelope_and_items_are_tolerated,
        a_body_that_is_not_a_page_is_a_decode_error,
        cursors_go_back_unchanged_whatever_they_hold;
}

/// Answers the n-th request with the n-th page, and records each request's query.
struct Script {
    pages: Vec<Value>,
    served: Arc<AtomicUsize>,
}

impl Respond for Script {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let n = self.served.fetch_add(1, Ordering::SeqCst);
        match self.pages.get(n) {
            Some(page) => ResponseTemplate::new(200).set_body_json(page),
            None => ResponseTemplate::new(500)
                .set_body_json(json!({"error": "server_error", "error_description": "script exhausted"})),
        }
    }
}

fn company(n: usize) -> Value {
    json!({"id": format!("cmp_{n}"), "name": format!("Company {n}"), "status": "active",
           "createdAt": "2024-01-01T00:00:00Z", "updatedAt": "2024-01-01T00:00:00Z"})
}

fn page(items: std::ops::Range<usize>, has_more: bool, cursor: Option<&str>) -> Value {
    let mut pagination = json!({"hasMore": has_more});
    if let Some(c) = cursor {
        pagination["nextCursor"] = json!(c);
    }
    json!({"data": items.map(company).collect::<Vec<_>>(), "pagination": pagination})
}

async fn scripted(pages: Vec<Value>) -> (MockServer, Client, Arc<AtomicUsize>) {
    let server = MockServer::builder().start().await;
    let served = Arc::new(AtomicUsize::new(0));
    Mock::given(matchers::method("GET"))
        .and(matchers::path("/v1/companies"))
        .respond_with(Script { pages, served: served.clone() })
        .mount(&server)
        .await;
    let client = Client::builder()
        .base_url(server.uri())
        .auth(Auth::static_token("scripted"))
        .build()
        .expect("valid client");
    (server, client, served)
}

async fn collect_ids(client: &Client) -> (Vec<String>, Option<Error>) {
    crate::support::drain(&mut client.companies().stream()).await
}

async fn empty_pages_with_has_more_do_not_end_the_listing() {
    let (_server, client, served) = scripted(vec![
        page(0..3, true, Some("c1")),
        page(0..0, true, Some("c2")),
        page(0..0, true, Some("c3")),
        page(3..5, false, None),
    ])
    .await;
    let (ids, error) = collect_ids(&client).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(ids, ["cmp_0", "cmp_1", "cmp_2", "cmp_3", "cmp_4"]);
    assert_eq!(served.load(Ordering::SeqCst), 4);
}

async fn endless_empty_pages_end_in_an_error_not_a_hang() {
    let pages = (0..40).map(|i| page(0..0, true, Some(&format!("c{i}")))).collect();
    let (_server, client, served) = scripted(pages).await;
    let (ids, error) = collect_ids(&client).await;
    assert!(ids.is_empty());
    assert!(
        matches!(error, Some(Error::Pagination(ref e)) if matches!(**e, PaginationError::TooManyEmptyPages { count: 26, .. })),
        "{error:?}"
    );
    assert!(served.load(Ordering::SeqCst) <= 27, "prefetch may have one more in flight");
}

async fn has_more_without_a_cursor_is_an_error_after_the_items_received() {
    let (_server, client, _) = scripted(vec![page(0..2, true, Some("c1")), page(2..4, true, None)]).await;
    let (ids, error) = collect_ids(&client).await;
    assert_eq!(ids, ["cmp_0", "cmp_1", "cmp_2", "cmp_3"], "items received before the error are delivered");
    assert!(
        matches!(error, Some(Error::Pagination(ref e)) if matches!(**e, PaginationError::MissingCursor { page: 2, .. })),
        "{error:?}"
    );
}

async fn a_repeated_cursor_is_an_error_not_an_endless_loop() {
    let (_server, client, served) = scripted(vec![
        page(0..1, true, Some("same")),
        page(1..2, true, Some("other")),
        page(2..3, true, Some("same")),
        page(3..4, false, None),
    ])
    .await;
    let (ids, error) = collect_ids(&client).await;
    assert_eq!(ids, ["cmp_0", "cmp_1", "cmp_2"]);
    assert!(
        matches!(error, Some(Error::Pagination(ref e)) if matches!(**e, PaginationError::RepeatedCursor { page: 3, .. })),
        "{error:?}"
    );
    assert_eq!(served.load(Ordering::SeqCst), 3, "nothing is requested with the repeated cursor");
}

async fn unknown_fields_in_the_envelope_and_items_are_tolerated() {
    let mut first = page(0..2, false, None);
    first["pagination"]["pageNumber"] = json!(1);
    first["meta"] = json!({"requestId": "r-1"});
    first["data"][0]["newField"] = json!({"nested": [1, 2]});
    let (_server, client, _) = scripted(vec![first]).await;
    let companies: Vec<Company> = client.companies().stream().try_collect().await.expect("listing");
    assert_eq!(companies[0].extra["newField"], json!({"nested": [1, 2]}));
}

async fn a_body_that_is_not_a_page_is_a_decode_error() {
    let (_server, client, _) = scripted(vec![json!({"data": "nope"})]).await;
    let err = client.companies().send().await.expect_err("not a page");
    assert!(matches!(err, Error::Decode(ref e) if e.endpoint() == "/v1/companies"), "{err:?}");
}

async fn cursors_go_back_unchanged_whatever_they_hold() {
    let cursors = ["a+b/c=", "x&limit=1", "50%25%", "two words", "#frag?q", "Zürich"];
    let mut pages: Vec<Value> =
        cursors.iter().enumerate().map(|(n, c)| page(n..n + 1, true, Some(c))).collect();
    pages.push(page(9..10, false, None));
    let (server, client, _) = scripted(pages).await;
    let (ids, error) = collect_ids(&client).await;
    assert_eq!((ids.len(), error.map(|e| e.to_string())), (cursors.len() + 1, None));
    let requests = server.received_requests().await.expect("recorded");
    let sent: Vec<Option<String>> = requests
        .iter()
        .map(|r| r.url.query_pairs().find(|(name, _)| name == "cursor").map(|(_, value)| value.into_owned()))
        .collect();
    let expected: Vec<Option<String>> =
        std::iter::once(None).chain(cursors.iter().map(|c| Some((*c).to_owned()))).collect();
    assert_eq!(sent, expected, "each cursor decodes back to exactly what the page sent");
    assert!(requests.iter().all(|r| r.url.query_pairs().filter(|(name, _)| name == "limit").count() == 1));
}
