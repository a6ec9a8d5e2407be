//! Every number a server sends is bounded before it is used (README, "Where the API is open"):
//! a `Retry-After` past any clock or a trillion seconds away, a spent quota whose reset is a
//! day away, a `totalCount` out of range, an `expires_in` that is past any clock or not a whole
//! number, and `Sunset` and `Deprecation` dates far in the future or the past. None of them
//! panics, fails a page, or holds a client longer than its retry policy's `max_delay`.

use std::time::{Duration, Instant};

use business_records::{Auth, Client, Deprecation, RetryPolicy};
use business_records_reference_server::{
    DeprecationHeaders, Endpoint, Fault, Faults, JournalEntry, Lifecycle, ReferenceServer, RetryAfter,
};
use chrono::DateTime;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::auth_token_endpoint::{Setup, token};
use crate::support;

crate::cases! {
    ServerControl:
        a_retry_after_past_any_clock_neither_panics_nor_stalls_a_client_or_its_derived_ones,
        a_retry_after_ages_away_holds_the_client_no_longer_than_max_delay,
        a_total_count_out_of_range_is_absent_and_the_page_is_read,
        sunset_and_deprecation_dates_far_away_fail_nothing;
    Anywhere:
        an_expires_in_past_any_clock_or_not_a_whole_number_fails_nothing,
        a_spent_quota_whose_reset_is_a_day_away_holds_the_client_no_longer_than_max_delay;
}

/// The longest wait of the policies below: 2 s, as a 429 (or a spent quota) also lowers the
/// client's rate, to 0.5 requests a second at the lowest, so that the next slot may be up to
/// 2 s away whatever the server says; past it, only the server's number could hold a request.
const MAX_DELAY: Duration = Duration::from_secs(2);
/// What a busy machine adds to a wait.
const SLACK: Duration = Duration::from_millis(700);
/// The longest `Retry-After` an error reports (README).
const ONE_DAY: Duration = Duration::from_secs(24 * 3600);

/// A short policy, so that a case stays fast.
fn short() -> RetryPolicy {
    RetryPolicy::default().initial_delay(Duration::from_millis(20)).max_delay(MAX_DELAY)
}

/// A server whose first list request is answered 429 with `retry_after`.
async fn refusing_once(retry_after: RetryAfter) -> (ReferenceServer, Client) {
    let server = ReferenceServer::builder()
        .companies(3)
        .contacts_per_company(0)
        .faults(Faults::new().on(Endpoint::Companies, 1, Fault::RateLimited(retry_after)))
        .start()
        .await;
    let client = support::client_for(&server).retry(short()).build().expect("client");
    (server, client)
}

/// The first request gets the 429, which asks for longer than `max_delay`: it ends at once,
/// and its `retry_after` is within the documented bound.
async fn refused(client: &Client) {
    let started = Instant::now();
    let error = client.companies().send().await.expect_err("the 429");
    assert_eq!(error.status(), Some(429), "{error:?}");
    assert!(error.retry_after().is_some_and(|wait| wait > MAX_DELAY && wait <= ONE_DAY), "{error:?}");
    assert!(started.elapsed() < SLACK, "not waited for: {:?}", started.elapsed());
}

async fn a_retry_after_past_any_clock_neither_panics_nor_stalls_a_client_or_its_derived_ones() {
    let (server, client) = refusing_once(RetryAfter::Seconds(u64::MAX)).await;
    refused(&client).await;
    let auth = Auth::client_credentials(server.auth_url(), server.client_id(), server.client_secret())
        .scopes(["api/read"]);
    let derived = client.with_auth(auth).expect("a derived client");
    for (who, client) in [("the client", &client), ("a client derived from it", &derived)] {
        let started = Instant::now();
        let page = client.companies().send().await.unwrap_or_else(|e| panic!("{who} sends again: {e:?}"));
        assert_eq!(page.data.len(), 3);
        assert!(started.elapsed() <= MAX_DELAY + SLACK, "{who}: held for {:?}", started.elapsed());
    }
    let statuses: Vec<u16> = support::api_requests(&server).iter().map(JournalEntry::status).collect();
    assert_eq!(statuses, [429, 200, 200]);
}

async fn a_retry_after_ages_away_holds_the_client_no_longer_than_max_delay() {
    let ages = Duration::from_secs(100 * 365 * 24 * 3600);
    for retry_after in [RetryAfter::Seconds(1_000_000_000_000), RetryAfter::Date(ages)] {
        let (server, client) = refusing_once(retry_after.clone()).await;
        refused(&client).await;
        client.companies().send().await.unwrap_or_else(|e| panic!("{retry_after:?}: sent again: {e:?}"));
        let requests = support::api_requests(&server);
        assert_eq!(requests.len(), 2, "{retry_after:?}: the second request was sent");
        let quiet = requests[1].received_at().duration_since(requests[0].received_at()).unwrap_or_default();
        // The client paused for `max_delay`, no more (and no less: the server asked for longer).
        assert!(quiet >= MAX_DELAY - Duration::from_millis(50), "{retry_after:?}: {quiet:?}");
        assert!(quiet <= MAX_DELAY + SLACK, "{retry_after:?}: {quiet:?}");
    }
}

async fn a_total_count_out_of_range_is_absent_and_the_page_is_read() {
    let counts = [
        ("-1", None),
        ("12.5", None),
        ("1e30", None),
        ("18446744073709551616", None),
        ("\"40\"", None),
        ("{\"value\": 40}", None),
        ("null", None),
        ("18446744073709551615", None),
        ("9007199254740993", None),
        ("9007199254740992", Some(1 << 53)),
        ("40", Some(40)),
    ];
    let body = |count: &str| {
        let page = r#"{"data": [{"id": "cmp_1", "name": "Acme"}], "pagination": {"hasMore": false, "totalCount": COUNT}}"#;
        page.replace("COUNT", count).into_bytes()
    };
    let faults = counts.iter().zip(1..).fold(Faults::new(), |faults, ((count, _), n)| {
        faults.on(Endpoint::Companies, n, Fault::Body(body(count)))
    });
    let server = ReferenceServer::builder().companies(3).faults(faults).start().await;
    let client = support::client_for(&server).build().expect("client");
    for (count, expected) in counts {
        let page = client.companies().send().await.unwrap_or_else(|e| panic!("totalCount {count}: {e:?}"));
        assert_eq!((page.data.len(), page.total_count), (1, expected), "totalCount {count}");
    }
}

async fn sunset_and_deprecation_dates_far_away_fail_nothing() {
    let server = ReferenceServer::builder().companies(3).start().await;
    let client = support::client_for(&server).build().expect("client");
    let at = |seconds: i64| DateTime::from_timestamp(seconds, 0);
    let last_second = at(253_402_300_799);
    // Each with the deprecation date and the sunset the notice holds. Dates a `DateTime` cannot
    // hold still mean "deprecated"; a sunset past the year 9999 is unreadable.
    let headers = [
        ("@999999999999999", "Fri, 31 Dec 9999 23:59:59 GMT", None, last_second),
        ("@-999999999999999", "Thu, 01 Jan 1970 00:00:00 GMT", None, at(0)),
        ("Fri, 31 Dec 9999 23:59:59 GMT", "Sat, 01 Jan 10000 00:00:00 GMT", last_second, None),
        ("@0", "Wed, 31 Dec 1969 23:59:59 GMT", at(0), None),
    ];
    for (deprecation, sunset, since, until) in headers {
        let lifecycle = Lifecycle::Deprecated(DeprecationHeaders::raw(deprecation).sunset_raw(sunset));
        server.set_lifecycle("/v1/companies", lifecycle);
        let page = client
            .companies()
            .send()
            .await
            .unwrap_or_else(|e| panic!("Deprecation {deprecation}, Sunset {sunset}: {e:?}"));
        assert_eq!(page.data.len(), 3);
        let notice = page.deprecation.expect("a notice");
        let read = notice.deprecation.as_ref().map(Deprecation::since);
        assert_eq!((read, notice.sunset), (Some(since), until), "{deprecation}, {sunset}");
    }
}

async fn an_expires_in_past_any_clock_or_not_a_whole_number_fails_nothing() {
    let lifetimes = [
        serde_json::json!(u64::MAX),
        serde_json::json!(1e30),
        serde_json::json!(-1),
        serde_json::json!(3600.5),
        serde_json::json!("3600"),
        serde_json::json!("soon"),
    ];
    for expires_in in lifetimes {
        let setup = Setup::new(|api| vec![token(api, expires_in.clone())]).await;
        let client = setup.client().build().expect("client");
        for _ in 0..3 {
            client.companies().send().await.unwrap_or_else(|e| panic!("expires_in {expires_in}: {e:?}"));
        }
        assert_eq!(setup.token_requests().await, 1, "expires_in {expires_in}: the token is kept");
    }
}

async fn a_spent_quota_whose_reset_is_a_day_away_holds_the_client_no_longer_than_max_delay() {
    let api = MockServer::builder().start().await;
    let page =
        serde_json::json!({"data": [{"id": "cmp_1", "name": "Acme"}], "pagination": {"hasMore": false}});
    Mock::given(method("GET"))
        .and(path("/v1/companies"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(page)
                .insert_header("x-ratelimit-remaining", "0")
                .insert_header("x-ratelimit-reset", "86000"),
        )
        .mount(&api)
        .await;
    let client = Client::builder()
        .base_url(api.uri())
        .auth(Auth::static_token("a-token"))
        .retry(short())
        .build()
        .expect("client");
    client.companies().send().await.expect("the first page");
    let started = Instant::now();
    client.companies().send().await.expect("sent again once the longest wait is over");
    let held = started.elapsed();
    assert!(held >= MAX_DELAY - Duration::from_millis(50) && held <= MAX_DELAY + SLACK, "{held:?}");
    assert_eq!(api.received_requests().await.map(|r| r.len()), Some(2));
}
