//! Spec Parts 3 and 9: deprecation and sunset headers, the typed notices and errors built from
//! them, how they are reported, version switching and preview labels, over real HTTP.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use business_records::Deprecation;
use business_records::error::ErrorCode;
use business_records::{ApiVersion, ClientBuilder, DeprecationPolicy, Error};
use business_records_reference_server::{
    DeprecationHeaders, Lifecycle, ReferenceServer, ReferenceServerBuilder, TokenSpec,
};
use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use url::Url;

use crate::support;

crate::cases! {
    ServerControl:
        deprecation_true_with_several_links_is_on_every_page,
        deprecation_as_a_structured_date_with_sunset_and_links,
        every_deprecation_and_sunset_form_is_read_over_http,
        a_sunset_earlier_than_the_deprecation_is_diagnosed,
        fifty_pages_log_one_warning_and_call_the_callback_fifty_times,
        a_near_or_past_sunset_is_logged_as_an_error_once_per_endpoint,
        the_fail_policy_turns_deprecated_responses_into_errors,
        a_sunset_endpoint_is_a_typed_error_with_its_date_and_successor,
        a_sunset_answer_with_only_a_link_still_names_the_successor,
        any_error_response_past_its_sunset_date_is_a_sunset_error,
        an_endpoint_reaching_its_sunset_mid_listing_ends_the_stream_with_a_sunset_error,
        api_version_switches_the_url_segment,
        preview_labels_are_sent_per_client_and_per_request;
}

const COMPANIES: &str = "/v1/companies";

fn date(year: i32, month: u32, day: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(year, month, day, 0, 0, 0).single().expect("a valid date")
}

/// A server with `companies` companies and `/v1/companies` deprecated with `headers`; `v2` is
/// served too.
fn deprecated(companies: usize, headers: DeprecationHeaders) -> ReferenceServerBuilder {
    ReferenceServer::builder()
        .companies(companies)
        .contacts_per_company(1)
        .serve_version(2)
        .deprecated(COMPANIES, headers)
}

/// A client that counts the notices its callback receives.
fn counting(server: &ReferenceServer) -> (ClientBuilder, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let builder = support::client_for(server).on_deprecation(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    (builder, calls)
}

/// `path` resolved against the server's base URL.
fn at_server(server: &ReferenceServer, path: &str) -> Url {
    Url::parse(&server.base_url()).and_then(|base| base.join(path)).expect("a valid URL")
}

async fn deprecation_true_with_several_links_is_on_every_page() {
    let headers = DeprecationHeaders::deprecated()
        .successor("/v2/companies")
        .link("/v3/companies", "latest-version")
        .link_line(r#"<https://docs.example.com/deprecations/v1>; rel="deprecation"; title="v1; retired, see the guide""#)
        .link_line("<https://docs.example.com/sunset-policy>; REL=\"alternate sunset\"");
    let server = deprecated(30, headers).start().await;
    let (builder, calls) = counting(&server);
    let pages =
        builder.build().expect("valid client").companies().limit(10).pages().try_collect::<Vec<_>>().await;
    let pages = pages.expect("a deprecated endpoint still answers");
    assert_eq!(pages.len(), 3);
    assert_eq!(calls.load(Ordering::SeqCst), 3, "the callback sees every notice");
    for page in &pages {
        let notice = page.deprecation.as_ref().expect("every page carries its notice");
        assert_eq!(notice.endpoint, COMPANIES);
        assert_eq!(notice.deprecation, Some(Deprecation::Deprecated));
        assert_eq!(notice.deprecated_since(), None);
        assert_eq!(notice.sunset, None);
        assert_eq!(notice.successor, Some(at_server(&server, "/v2/companies")), "relative links resolved");
        assert_eq!(notice.latest_version, Some(at_server(&server, "/v3/companies")));
        let docs = notice.documentation.as_ref().map(Url::as_str);
        assert_eq!(docs, Some("https://docs.example.com/deprecations/v1"));
        let policy = notice.sunset_policy.as_ref().map(Url::as_str);
        assert_eq!(policy, Some("https://docs.example.com/sunset-policy"));
        assert_eq!(notice.diagnostic, None);
    }
}

async fn deprecation_as_a_structured_date_with_sunset_and_links() {
    let headers = DeprecationHeaders::since(date(2026, 1, 1))
        .sunset(date(2100, 1, 1))
        .successor("/v2/companies")
        .link("https://docs.example.com/deprecations/v1", "deprecation")
        .link_line("</v2>; rel=latest-version");
    assert_eq!(headers.deprecation_value(), Some("@1767225600"));
    let server = deprecated(30, headers).start().await;
    let client = support::client_for(&server).build().expect("valid client");
    let page = client.companies().send().await.expect("a page");
    let notice = page.deprecation.expect("a notice");
    assert_eq!(notice.deprecation, Some(Deprecation::Since(date(2026, 1, 1))));
    assert_eq!(notice.sunset, Some(date(2100, 1, 1)));
    assert_eq!(notice.successor, Some(at_server(&server, "/v2/companies")));
    assert_eq!(notice.latest_version, Some(at_server(&server, "/v2")));
    assert_eq!(
        notice.to_string(),
        format!(
            "GET /v1/companies is deprecated since 2026-01-01T00:00:00Z, sunset at 2100-01-01T00:00:00Z, \
             successor {}, see https://docs.example.com/deprecations/v1",
            at_server(&server, "/v2/companies")
        )
    );
    // Only the deprecated endpoint says so.
    let contacts = client.contacts().send().await.expect("a page");
    assert_eq!(contacts.deprecation, None);
}

async fn every_deprecation_and_sunset_form_is_read_over_http() {
    let server = deprecated(5, DeprecationHeaders::deprecated()).start().await;
    let client = support::client_for(&server).build().expect("valid client");
    let rfc_example = Utc.timestamp_opt(784_111_777, 0).single();
    let since_2026 = Some(Deprecation::Since(date(2026, 1, 1)));
    let year_2100 = Some(date(2100, 1, 1));
    let earlier = Some("sunset is earlier than deprecation");
    // (Deprecation, Sunset, what each reads as, the diagnostic)
    let cases = [
        ("@1767225600", "Fri, 01 Jan 2100 00:00:00 GMT", since_2026.clone(), year_2100, None),
        (
            "@1767225600;reason=\"x\"",
            "Friday, 01-Jan-99 00:00:00 GMT",
            since_2026.clone(),
            Some(date(1999, 1, 1)),
            earlier,
        ),
        ("true", "Sun Nov  6 08:49:37 1994", Some(Deprecation::Deprecated), rfc_example, None),
        ("true", "Sun, 06 Nov 1994 08:49:37 UTC", Some(Deprecation::Deprecated), rfc_example, None),
        ("Thu, 01 Jan 2026 00:00:00 GMT", "Fri, 01 Jan 2100 00:00:00 GMT", since_2026, year_2100, None),
        (
            "soon",
            "Fri, 01 Jan 2100 00:00:00 GMT",
            Some(Deprecation::Unrecognized("soon".into())),
            year_2100,
            Some("deprecation header \"soon\" is in no known form"),
        ),
        ("", "Fri, 01 Jan 2100 00:00:00 GMT", None, year_2100, None),
        (
            "true",
            "next year",
            Some(Deprecation::Deprecated),
            None,
            Some("sunset header \"next year\" is not an http-date"),
        ),
    ];
    for (deprecation, sunset, expected_deprecation, expected_sunset, diagnostic) in cases {
        let headers = match deprecation {
            "" => DeprecationHeaders::new(),
            value => DeprecationHeaders::raw(value),
        };
        server.set_lifecycle(COMPANIES, Lifecycle::Deprecated(headers.sunset_raw(sunset)));
        let page = client.companies().send().await.expect("a page");
        let notice = page.deprecation.expect("a notice");
        assert_eq!(notice.deprecation, expected_deprecation, "{deprecation:?}");
        assert_eq!(notice.sunset, expected_sunset, "{sunset:?}");
        assert_eq!(notice.diagnostic.as_deref(), diagnostic, "{deprecation:?} {sunset:?}");
    }
}

async fn a_sunset_earlier_than_the_deprecation_is_diagnosed() {
    let headers = DeprecationHeaders::since(date(2027, 1, 1)).sunset(date(2026, 1, 1));
    let server = deprecated(5, headers).start().await;
    let page = support::client_for(&server).build().expect("valid client").companies().send().await;
    let notice = page.expect("a page").deprecation.expect("a notice");
    assert_eq!(notice.diagnostic.as_deref(), Some("sunset is earlier than deprecation"));
}

/// Log lines written by the `tracing` subscriber of the current thread.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().map_err(|_| std::io::Error::other("poisoned"))?.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    /// Captures warnings and errors on this thread until the guard is dropped. The tests using
    /// it run on a single-threaded runtime, so the tasks that fetch pages log here too.
    fn capture() -> (Logs, tracing::subscriber::DefaultGuard) {
        let logs = Logs::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_max_level(tracing::Level::WARN)
            .with_ansi(false)
            .without_time()
            .finish();
        (logs, tracing::subscriber::set_default(subscriber))
    }

    fn lines(&self) -> Vec<String> {
        let bytes = self.0.lock().map(|b| b.clone()).unwrap_or_default();
        String::from_utf8_lossy(&bytes).lines().map(str::to_owned).collect()
    }

    fn take(&self) -> Vec<String> {
        let lines = self.lines();
        if let Ok(mut bytes) = self.0.lock() {
            bytes.clear();
        }
        lines
    }
}

async fn fifty_pages_log_one_warning_and_call_the_callback_fifty_times() {
    let headers =
        DeprecationHeaders::since(date(2026, 1, 1)).sunset(date(2100, 1, 1)).successor("/v2/companies");
    let server = deprecated(100, headers).start().await;
    let (logs, _guard) = Logs::capture();

    let (builder, calls) = counting(&server);
    let client = builder.build().expect("valid client");
    let pages = client.companies().limit(2).pages().try_collect::<Vec<_>>().await.expect("listing");
    assert_eq!(pages.len(), 50);
    assert!(pages.iter().all(|p| p.deprecation.is_some()));
    assert_eq!(calls.load(Ordering::SeqCst), 50);
    let lines = logs.take();
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert!(lines[0].contains("WARN") && lines[0].contains("endpoint is deprecated"), "{}", lines[0]);
    assert!(lines[0].contains(r#"endpoint="/v1/companies""#), "{}", lines[0]);
    let successor = format!("successor=\"{}\"", at_server(&server, "/v2/companies"));
    assert!(lines[0].contains(&successor), "{}", lines[0]);

    // Once per client: a second listing of the same endpoint stays quiet.
    client.companies().limit(50).pages().try_collect::<Vec<_>>().await.expect("listing");
    assert!(logs.take().is_empty());

    // Every response with `WarnEvery`, none with `Ignore`; the callback sees all either way.
    for (policy, warnings) in [(DeprecationPolicy::WarnEvery, 50), (DeprecationPolicy::Ignore, 0)] {
        let (builder, calls) = counting(&server);
        let client = builder.deprecation_policy(policy).build().expect("valid client");
        client.companies().limit(2).stream().try_collect::<Vec<_>>().await.expect("listing");
        assert_eq!(calls.load(Ordering::SeqCst), 50, "{policy:?}");
        assert_eq!(logs.take().len(), warnings, "{policy:?}");
    }
}

async fn a_near_or_past_sunset_is_logged_as_an_error_once_per_endpoint() {
    let soon = Utc::now() + TimeDelta::days(10);
    let headers = DeprecationHeaders::deprecated().sunset(soon);
    let server = deprecated(30, headers)
        .deprecated("/v1/contacts", DeprecationHeaders::deprecated().sunset(date(2020, 1, 1)))
        .start()
        .await;
    let (logs, _guard) = Logs::capture();
    let client = support::client_for(&server).build().expect("valid client");
    client.companies().limit(10).stream().try_collect::<Vec<_>>().await.expect("listing");
    client
        .contacts()
        .limit(10)
        .stream()
        .try_collect::<Vec<_>>()
        .await
        .expect("a listing past its sunset still answers");
    let lines = logs.take();
    assert_eq!(lines.len(), 2, "one line per endpoint: {lines:#?}");
    assert!(lines[0].contains("ERROR") && lines[0].contains("within 30 days"), "{}", lines[0]);
    assert!(lines[1].contains("ERROR") && lines[1].contains("past its sunset date"), "{}", lines[1]);
    assert!(lines[1].contains(r#"endpoint="/v1/contacts""#), "{}", lines[1]);
}

async fn the_fail_policy_turns_deprecated_responses_into_errors() {
    let headers = DeprecationHeaders::deprecated().successor("/v2/companies");
    let server = deprecated(30, headers).start().await;
    let (builder, calls) = counting(&server);
    let client = builder.deprecation_policy(DeprecationPolicy::Fail).build().expect("valid client");
    let mut stream = client.companies().stream();
    let error = stream.try_next().await.expect_err("deprecated");
    let Error::Deprecated(notice) = &error else { panic!("expected Error::Deprecated, got {error:?}") };
    assert_eq!(notice.successor, Some(at_server(&server, "/v2/companies")));
    assert_eq!(error.deprecation(), Some(&**notice));
    assert!(!error.is_retryable());
    assert!(
        error.to_string().starts_with("deprecated endpoint refused by policy: GET /v1/companies"),
        "{error}"
    );
    assert!(matches!(stream.try_next().await, Ok(None)));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(support::api_requests(&server).len(), 1, "not retried");
    // Endpoints that are not deprecated work as usual.
    assert_eq!(client.contacts().limit(5).send().await.expect("a page").data.len(), 5);
}

async fn a_sunset_endpoint_is_a_typed_error_with_its_date_and_successor() {
    let server = ReferenceServer::builder()
        .companies(30)
        .serve_version(2)
        .sunset(COMPANIES, DeprecationHeaders::new().sunset(date(2026, 1, 1)).successor("/v2/companies"))
        .start()
        .await;
    let (builder, calls) = counting(&server);
    let client = builder.build().expect("valid client");
    let error = client.companies().stream().try_collect::<Vec<_>>().await.expect_err("sunset");
    let Error::Sunset(sunset) = &error else { panic!("expected Error::Sunset, got {error:?}") };
    assert_eq!(sunset.sunset(), Some(date(2026, 1, 1)));
    let v2 = at_server(&server, "/v2/companies");
    assert_eq!(sunset.successor(), Some(&v2));
    assert_eq!((error.status(), error.code()), (Some(410), Some(&ErrorCode::VersionSunset)));
    assert_eq!(error.deprecation().and_then(|n| n.successor.as_ref()), Some(&v2));
    assert_eq!(
        error.to_string(),
        format!("api version has reached its sunset on 2026-01-01; successor: {v2}")
    );
    assert!(!error.is_retryable());
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the callback sees the notice of the error response");
    assert_eq!(support::api_requests(&server).len(), 1);

    // The successor works.
    let v2_client = support::client_for(&server)
        .api_version(ApiVersion::new(2).expect("a valid version"))
        .build()
        .expect("valid client");
    assert_eq!(v2_client.companies().stream().try_collect::<Vec<_>>().await.expect("listing").len(), 30);
}

async fn a_sunset_answer_with_only_a_link_still_names_the_successor() {
    let server = ReferenceServer::builder()
        .companies(5)
        .sunset(COMPANIES, DeprecationHeaders::new().successor("/v2/companies"))
        .start()
        .await;
    let client = support::client_for(&server).build().expect("valid client");
    let error = client.companies().send().await.expect_err("sunset");
    assert!(matches!(error, Error::Sunset(ref e) if e.sunset().is_none()), "{error:?}");
    let Error::Sunset(sunset) = &error else { return };
    assert_eq!(sunset.successor(), Some(&at_server(&server, "/v2/companies")));
}

async fn any_error_response_past_its_sunset_date_is_a_sunset_error() {
    let past = DeprecationHeaders::deprecated().sunset(date(2020, 1, 1)).successor("/v2/companies");
    let server = deprecated(30, past).start().await;
    let client = support::client_for(&server).build().expect("valid client");
    let error = client.companies().cursor("not-a-cursor").send().await.expect_err("a bad cursor");
    assert!(
        matches!(error, Error::Sunset(ref e) if e.sunset().is_some() && e.successor().is_some()),
        "{error:?}"
    );
    assert_eq!((error.status(), error.code()), (Some(400), Some(&ErrorCode::InvalidCursor)));

    // With a sunset still ahead, the error is the refused cursor, and it carries the notice.
    let ahead = DeprecationHeaders::deprecated().sunset(date(2100, 1, 1)).successor("/v2/companies");
    server.set_lifecycle(COMPANIES, Lifecycle::Deprecated(ahead));
    let error = client.companies().cursor("not-a-cursor").send().await.expect_err("a bad cursor");
    assert!(matches!(error, Error::CursorRejected(_)), "{error:?}");
    assert_eq!(error.deprecation().and_then(|n| n.sunset), Some(date(2100, 1, 1)));
}

async fn an_endpoint_reaching_its_sunset_mid_listing_ends_the_stream_with_a_sunset_error() {
    let headers = DeprecationHeaders::deprecated().sunset(date(2100, 1, 1));
    let server = deprecated(30, headers).start().await;
    let client = support::client_for(&server).prefetch(false).build().expect("valid client");
    let mut stream = client.companies().limit(10).stream();
    for _ in 0..10 {
        stream.try_next().await.expect("the first page").expect("an item");
    }
    server.set_lifecycle(COMPANIES, Lifecycle::Sunset(DeprecationHeaders::new().sunset(date(2026, 1, 1))));
    let error = stream.try_next().await.expect_err("sunset");
    assert!(matches!(error, Error::Sunset(_)), "{error:?}");
    assert!(matches!(stream.try_next().await, Ok(None)));
}

async fn api_version_switches_the_url_segment() {
    let headers = DeprecationHeaders::deprecated().successor("/v2/companies");
    let server = deprecated(30, headers).start().await;
    let v1 = support::client_for(&server).build().expect("valid client");
    let v2 = support::client_for(&server)
        .api_version("v2".parse().expect("a valid version"))
        .build()
        .expect("valid client");
    assert_eq!(v2.api_version(), ApiVersion::new(2).expect("a valid version"));

    let old = v1.companies().limit(10).send().await.expect("a page");
    let successor = old.deprecation.as_ref().and_then(|n| n.successor.clone()).expect("a successor");
    assert_eq!(v2.api_root().join("companies").ok(), Some(successor), "the successor is the v2 endpoint");

    let new = v2.companies().limit(10).pages().try_collect::<Vec<_>>().await.expect("v2 listing");
    assert!(new.iter().all(|p| p.deprecation.is_none()));
    let ids: Vec<&str> = new.iter().flat_map(|p| &p.data).map(|c| c.id.as_str()).collect();
    let dataset = server.dataset();
    let expected: Vec<&str> = dataset.companies_sorted("", None).iter().map(|c| c.id()).collect();
    assert_eq!(ids, expected);
    let paths: Vec<String> =
        support::api_requests(&server).into_iter().map(|r| r.path().to_owned()).collect();
    assert_eq!(paths, ["/v1/companies", "/v2/companies", "/v2/companies", "/v2/companies"]);

    // Cursors belong to their version; versions the server does not serve are 404.
    let cursor = old.next_cursor.expect("more pages");
    let error = v2.companies().limit(10).cursor(cursor).send().await.expect_err("a v1 cursor");
    assert_eq!(error.code(), Some(&ErrorCode::InvalidCursor));
    let v3 = support::client_for(&server).api_version(ApiVersion::new(3).expect("valid")).build();
    let error = v3.expect("valid client").contacts().send().await.expect_err("no v3");
    assert_eq!((error.status(), error.code()), (Some(404), Some(&ErrorCode::NotFound)));
}

async fn preview_labels_are_sent_per_client_and_per_request() {
    let server =
        ReferenceServer::builder().companies(30).preview_feature("2026-03", "previewFeature").start().await;
    let plain = support::client_for(&server).build().expect("valid client");
    let page = plain.companies().limit(5).send().await.expect("a page");
    assert!(page.data.iter().all(|c| !c.extra.contains_key("previewFeature")));

    let preview = support::client_for(&server).preview("2026-03").build().expect("valid client");
    let companies = preview.companies().limit(10).stream().try_collect::<Vec<_>>().await.expect("listing");
    assert_eq!(companies.len(), 30);
    assert!(companies.iter().all(|c| c.extra.get("previewFeature") == Some(&serde_json::json!("2026-03"))));

    // A label the server does not know changes nothing; a per-request label overrides the client's.
    let other = support::client_for(&server).preview("2026-01").build().expect("valid client");
    let page = other.companies().limit(5).send().await.expect("a page");
    assert!(page.data.iter().all(|c| !c.extra.contains_key("previewFeature")));
    let page = other.companies().limit(5).preview("2026-03").send().await.expect("a page");
    assert!(page.data.iter().all(|c| c.extra.contains_key("previewFeature")));

    let sent: Vec<Option<String>> = support::api_requests(&server)
        .into_iter()
        .map(|r| r.header("x-api-preview").map(str::to_owned))
        .collect();
    let label = |l: &str| Some(l.to_owned());
    assert_eq!(
        sent,
        [None, label("2026-03"), label("2026-03"), label("2026-03"), label("2026-01"), label("2026-03")]
    );

    // The client refuses a malformed label before sending anything; the server answers one with 400.
    let error = plain.companies().preview("2026-13").send().await.expect_err("month 13");
    assert!(matches!(error, Error::InvalidArgument(ref e) if e.argument() == "preview"), "{error:?}");
    for malformed in ["2026-13", "2026-1", "march"] {
        let response = reqwest::Client::new()
            .get(format!("{}/v1/companies", server.base_url()))
            .bearer_auth(server.mint_token(TokenSpec::new()))
            .header("x-api-preview", malformed)
            .send()
            .await
            .expect("a response");
        assert_eq!(response.status(), 400, "{malformed}");
        let body: serde_json::Value = response.json().await.expect("an error body");
        assert_eq!(body["error"], "invalid_request", "{malformed}");
    }
}
