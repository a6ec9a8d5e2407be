//! The pager on Tokio's paused clock, against a scripted API and no HTTP: the cursor rules,
//! the cap, the resume point, pacing and prefetch.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use futures::future::BoxFuture;
use url::Url;

use super::*;
use crate::Company;
use crate::error::ApiError;
use crate::pagination::{GetPage, PageStream, Paging};
use crate::pipeline::ApiResponse;

/// A page request as the scripted API saw it.
#[derive(Debug, Clone, PartialEq)]
struct Sent {
    cursor: Option<String>,
    limit: Option<u32>,
    /// Time since the script was made, on Tokio's clock.
    at: Duration,
}

/// The API of a test: an answer per cursor (`""` for the first page), each after `latency`.
#[derive(Debug)]
struct Script {
    answers: HashMap<String, Result<String, Error>>,
    latency: Duration,
    start: Instant,
    sent: Mutex<Vec<Sent>>,
    /// Requests answered: sent, and not cancelled while the server took its time.
    answered: std::sync::atomic::AtomicUsize,
}

impl Script {
    fn new(
        latency: Duration,
        answers: impl IntoIterator<Item = (&'static str, Result<String, Error>)>,
    ) -> Arc<Self> {
        let answers = answers.into_iter().map(|(cursor, answer)| (cursor.to_owned(), answer)).collect();
        Arc::new(Script {
            answers,
            latency,
            start: Instant::now(),
            sent: Mutex::new(Vec::new()),
            answered: Default::default(),
        })
    }

    fn sent(&self) -> Vec<Sent> {
        self.sent.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn cursors(&self) -> Vec<Option<String>> {
        self.sent().into_iter().map(|s| s.cursor).collect()
    }
}

impl GetPage for Script {
    fn get_page<'a>(
        &'a self,
        _: &'a Url,
        request: &'a PageRequest,
    ) -> BoxFuture<'a, Result<ApiResponse, Error>> {
        Box::pin(async move {
            let cursor = request.cursor.as_ref().map(|c| c.as_str().to_owned());
            let sent = Sent { cursor: cursor.clone(), limit: request.limit, at: self.start.elapsed() };
            self.sent.lock().unwrap_or_else(|e| e.into_inner()).push(sent);
            tokio::time::sleep(self.latency).await;
            self.answered.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let answer = self.answers.get(cursor.as_deref().unwrap_or("")).cloned();
            let body = answer.unwrap_or_else(|| panic!("no answer scripted for cursor {cursor:?}"))?;
            Ok(ApiResponse { body: body.into_bytes(), deprecation: None })
        })
    }
}

/// A page of `count` companies numbered from `first`, followed by the page at `next`.
fn page(first: u32, count: u32, next: Option<&str>) -> Result<String, Error> {
    let data: Vec<String> =
        (first..first + count).map(|i| format!(r#"{{"id": "cmp_{i}", "name": "C{i}"}}"#)).collect();
    let pagination = match next {
        Some(cursor) => format!(r#"{{"hasMore": true, "nextCursor": "{cursor}"}}"#),
        None => r#"{"hasMore": false}"#.to_owned(),
    };
    Ok(format!(r#"{{"data": [{}], "pagination": {pagination}}}"#, data.join(",")))
}

const PATH: &str = "/v1/companies";

fn pages(script: &Arc<Script>, paging: Paging, params: ListParams) -> PageStream<Company> {
    let endpoint = ListEndpoint {
        api: Arc::clone(script) as Arc<dyn GetPage>,
        url: Arc::new(Url::parse(&format!("https://api.example.com{PATH}")).expect("a URL")),
        paging,
    };
    PageStream::new(endpoint, params, None)
}

fn ids(page: &Page<Company>) -> Vec<String> {
    page.data.iter().map(|c| c.id.clone()).collect()
}

fn cursor(c: &str) -> Option<String> {
    Some(c.to_owned())
}

#[tokio::test(start_paused = true)]
async fn every_page_follows_its_cursor_and_the_pager_keeps_the_count_and_resume_point() {
    let script = Script::new(
        Duration::from_millis(10),
        [("", page(0, 3, Some("c1"))), ("c1", page(3, 2, Some("c2"))), ("c2", page(5, 1, None))],
    );
    let mut stream = pages(&script, Paging::default(), ListParams::default());
    assert_eq!((stream.items_delivered(), stream.resume_cursor()), (0, None));

    let first = stream.try_next().await.expect("page 1").expect("a page");
    assert_eq!(ids(&first), ["cmp_0", "cmp_1", "cmp_2"]);
    assert_eq!(stream.items_delivered(), 3);
    assert_eq!(stream.resume_cursor().map(Cursor::as_str), Some("c1"));
    let second = stream.try_next().await.expect("page 2").expect("a page");
    assert_eq!(ids(&second), ["cmp_3", "cmp_4"]);
    assert_eq!((stream.items_delivered(), stream.resume_cursor().map(Cursor::as_str)), (5, Some("c2")));
    let last = stream.try_next().await.expect("page 3").expect("a page");
    assert_eq!(ids(&last), ["cmp_5"]);
    assert_eq!((stream.items_delivered(), stream.resume_cursor()), (6, None));
    assert!(stream.try_next().await.expect("the end").is_none());

    // Every request asks for full pages, with the cursor of the page before.
    let sent = script.sent();
    assert_eq!(script.cursors(), [None, cursor("c1"), cursor("c2")]);
    assert!(sent.iter().all(|s| s.limit == Some(MAX_LIMIT)), "{sent:?}");
}

#[tokio::test(start_paused = true)]
async fn a_listing_that_starts_at_a_cursor_resumes_there_until_a_page_arrives() {
    let script = Script::new(Duration::ZERO, [("c7", page(0, 1, None))]);
    let params = ListParams { cursor: Some(Cursor::from("c7")), ..ListParams::default() };
    let mut stream = pages(&script, Paging::default(), params);
    assert_eq!(stream.resume_cursor().map(Cursor::as_str), Some("c7"));
    stream.try_next().await.expect("a page").expect("a page");
    assert_eq!((stream.items_delivered(), stream.resume_cursor()), (1, None));
    assert_eq!(script.cursors(), [cursor("c7")]);
}

/// Every page of `stream` until its first error: the ids delivered, and that error.
async fn until_error(stream: &mut PageStream<Company>) -> (Vec<String>, Option<Error>) {
    let mut delivered = Vec::new();
    loop {
        match stream.try_next().await {
            Ok(Some(page)) => delivered.extend(ids(&page)),
            Ok(None) => return (delivered, None),
            Err(error) => {
                assert!(stream.try_next().await.expect("nothing after the error").is_none());
                return (delivered, Some(error));
            }
        }
    }
}

fn pagination_error(error: Option<Error>) -> PaginationError {
    match error {
        Some(Error::Pagination(e)) => (*e).clone(),
        other => panic!("expected a pagination error, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_repeated_cursor_ends_the_listing_after_its_page_is_delivered() {
    for prefetch in [false, true] {
        let script = Script::new(
            Duration::from_millis(5),
            [("", page(0, 2, Some("c1"))), ("c1", page(2, 1, Some("c2"))), ("c2", page(3, 1, Some("c1")))],
        );
        let mut stream = pages(&script, Paging { prefetch, page_delay: None }, ListParams::default());
        let (delivered, error) = until_error(&mut stream).await;
        assert_eq!(delivered, ["cmp_0", "cmp_1", "cmp_2", "cmp_3"], "prefetch {prefetch}");
        assert_eq!(pagination_error(error), PaginationError::RepeatedCursor { page: 3 });
        assert_eq!(script.cursors(), [None, cursor("c1"), cursor("c2")], "c1 is not asked for twice");
        assert_eq!(stream.items_delivered(), 4);
    }
}

#[tokio::test(start_paused = true)]
async fn has_more_without_a_cursor_is_an_error_after_the_page() {
    let body = r#"{"data": [{"id": "cmp_0", "name": "A"}], "pagination": {"hasMore": true}}"#;
    let script = Script::new(Duration::ZERO, [("", Ok(body.to_owned()))]);
    let mut stream = pages(&script, Paging::default(), ListParams::default());
    let (delivered, error) = until_error(&mut stream).await;
    assert_eq!(delivered, ["cmp_0"]);
    assert_eq!(pagination_error(error), PaginationError::MissingCursor { page: 1 });
    assert_eq!(script.sent().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn empty_pages_with_has_more_continue_up_to_the_bound() {
    let answers = [
        ("", page(0, 0, Some("e1"))),
        ("e1", page(0, 0, Some("e2"))),
        ("e2", page(0, 1, Some("e3"))),
        ("e3", page(1, 0, Some("e4"))),
        ("e4", page(1, 0, Some("e5"))),
        ("e5", page(1, 0, Some("e6"))),
    ];
    let script = Script::new(Duration::ZERO, answers);
    let params = ListParams { max_empty_pages: Some(2), ..ListParams::default() };
    let mut stream = pages(&script, Paging::default(), params);
    let (delivered, error) = until_error(&mut stream).await;
    // Two empty pages in a row are tolerated, a page with an item resets the count, and the
    // third empty page in a row ends the listing.
    assert_eq!(delivered, ["cmp_0"]);
    assert_eq!(pagination_error(error), PaginationError::TooManyEmptyPages { count: 3 });
    assert_eq!(script.sent().len(), 6);
}

#[tokio::test(start_paused = true)]
async fn the_cap_shrinks_the_last_request_and_no_request_goes_past_it() {
    for prefetch in [false, true] {
        let script = Script::new(
            Duration::from_millis(5),
            // The server ignores the limit on page 2: the pager still delivers only the cap.
            [
                ("", page(0, 100, Some("c1"))),
                ("c1", page(100, 100, Some("c2"))),
                ("c2", page(200, 100, None)),
            ],
        );
        let params = ListParams { max_items: Some(150), ..ListParams::default() };
        let mut stream = pages(&script, Paging { prefetch, page_delay: None }, params);
        let (delivered, error) = until_error(&mut stream).await;
        assert!(error.is_none(), "{error:?}");
        assert_eq!(delivered.len(), 150);
        assert_eq!(stream.items_delivered(), 150);
        tokio::time::sleep(Duration::from_secs(1)).await;
        let limits: Vec<_> = script.sent().iter().map(|s| s.limit).collect();
        assert_eq!(limits, [Some(100), Some(50)], "prefetch {prefetch}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_rejected_cursor_says_how_many_items_were_delivered() {
    let expired = ApiError::new(400, Some(ErrorCode::CursorExpired), PATH);
    let script =
        Script::new(Duration::ZERO, [("", page(0, 4, Some("c1"))), ("c1", Err(Error::Api(expired)))]);
    let mut stream = pages(&script, Paging::default(), ListParams::default());
    let (delivered, error) = until_error(&mut stream).await;
    assert_eq!(delivered.len(), 4);
    match error {
        Some(Error::CursorRejected(rejected)) => {
            assert_eq!(rejected.code(), &ErrorCode::CursorExpired);
            assert_eq!(rejected.items_delivered(), 4);
        }
        other => panic!("expected CursorRejected, got {other:?}"),
    }
    // The resume point stays at the page that failed.
    assert_eq!(stream.resume_cursor().map(Cursor::as_str), Some("c1"));

    // On the first page there is no cursor to blame: the API's error as it came.
    let first = ApiError::new(400, Some(ErrorCode::InvalidCursor), PATH);
    let script = Script::new(Duration::ZERO, [("", Err(Error::Api(first)))]);
    let (_, error) = until_error(&mut pages(&script, Paging::default(), ListParams::default())).await;
    assert!(matches!(error, Some(Error::Api(_))), "{error:?}");
}

#[tokio::test(start_paused = true)]
async fn page_delay_spaces_the_requests_of_a_listing() {
    let script = Script::new(
        Duration::from_millis(10),
        [("", page(0, 1, Some("c1"))), ("c1", page(1, 1, Some("c2"))), ("c2", page(2, 1, None))],
    );
    let paging = Paging { prefetch: false, page_delay: Some(Duration::from_millis(500)) };
    let (delivered, error) = until_error(&mut pages(&script, paging, ListParams::default())).await;
    assert_eq!((delivered.len(), error.is_none()), (3, true));
    let at: Vec<Duration> = script.sent().iter().map(|s| s.at).collect();
    assert_eq!(at, [Duration::ZERO, Duration::from_millis(500), Duration::from_millis(1000)]);
}

/// Reads every page of a listing of three pages, each taking the server 50 ms, while the
/// consumer takes 50 ms per page: the time it takes, and the requests as sent.
async fn consume_slowly(prefetch: bool) -> (Duration, Vec<Sent>) {
    let script = Script::new(
        Duration::from_millis(50),
        [("", page(0, 2, Some("c1"))), ("c1", page(2, 2, Some("c2"))), ("c2", page(4, 2, None))],
    );
    let start = Instant::now();
    let mut stream = pages(&script, Paging { prefetch, page_delay: None }, ListParams::default());
    let mut delivered = 0;
    while let Some(page) = stream.try_next().await.expect("a page") {
        delivered += page.data.len();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(delivered, 6);
    (start.elapsed(), script.sent())
}

#[tokio::test(start_paused = true)]
async fn prefetch_requests_the_next_page_as_soon_as_a_page_arrives() {
    let (with, sent) = consume_slowly(true).await;
    let at: Vec<Duration> = sent.iter().map(|s| s.at).collect();
    // Page 2 is asked for when page 1 arrives (50 ms), not when the consumer is done with it.
    assert_eq!(at, [Duration::ZERO, Duration::from_millis(50), Duration::from_millis(100)]);
    let (without, sent) = consume_slowly(false).await;
    let at: Vec<Duration> = sent.iter().map(|s| s.at).collect();
    assert_eq!(at, [Duration::ZERO, Duration::from_millis(100), Duration::from_millis(200)]);
    // Server and consumer overlap: 50 ms + 3 × 50 ms, against 3 × (50 + 50) ms.
    assert_eq!((with, without), (Duration::from_millis(200), Duration::from_millis(300)));
}

#[tokio::test(start_paused = true)]
async fn without_prefetch_nothing_is_requested_before_the_consumer_asks() {
    let script = Script::new(Duration::ZERO, [("", page(0, 1, Some("c1"))), ("c1", page(1, 1, None))]);
    let mut stream = pages(&script, Paging::default(), ListParams::default());
    stream.try_next().await.expect("a page").expect("a page");
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(script.sent().len(), 1);
    stream.try_next().await.expect("a page").expect("a page");
    assert_eq!(script.sent().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_failed_prefetch_comes_after_every_item_already_received() {
    let down = Error::Http(HttpError::timed_out(PATH));
    let script = Script::new(Duration::from_millis(5), [("", page(0, 3, Some("c1"))), ("c1", Err(down))]);
    let mut items = crate::pagination::ItemStream::new(pages(
        &script,
        Paging { prefetch: true, page_delay: None },
        ListParams::default(),
    ));
    let mut received = Vec::new();
    let error = loop {
        match items.try_next().await {
            Ok(Some(company)) => received.push(company.id),
            Ok(None) => panic!("the listing cannot end without its second page"),
            Err(error) => break error,
        }
    };
    assert_eq!(received, ["cmp_0", "cmp_1", "cmp_2"]);
    assert!(matches!(&error, Error::Http(e) if e.is_timeout()), "{error:?}");
    assert_eq!((items.items_delivered(), items.resume_cursor().map(Cursor::as_str)), (3, Some("c1")));
}

#[tokio::test(start_paused = true)]
async fn dropping_a_stream_cancels_its_prefetch() {
    let script = Script::new(
        Duration::from_millis(100),
        [("", page(0, 1, Some("c1"))), ("c1", page(1, 1, Some("c2"))), ("c2", page(2, 1, None))],
    );
    let mut stream = pages(&script, Paging { prefetch: true, page_delay: None }, ListParams::default());
    stream.try_next().await.expect("a page").expect("a page");
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(script.cursors(), [None, cursor("c1")], "page 2 is under way");
    drop(stream);
    tokio::time::sleep(Duration::from_secs(5)).await;
    // Page 2's request was cancelled before its answer, and nothing followed it.
    assert_eq!(script.answered.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(script.cursors(), [None, cursor("c1")]);
}
