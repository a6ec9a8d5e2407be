//! Spec Parts 7 and 9: error bodies become typed errors; unknown versions are 404. Messages
//! that say what went wrong, where, and why, and stay short whatever a server or a user sends.

use business_records::error::{ErrorCode, Origin};
use business_records::{ApiVersion, Auth, Client, Error, RetryPolicy};
use business_records_reference_server::{Endpoint, Fault, Faults, ReferenceServer};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{self, Target};

crate::cases! {
    Anywhere:
        an_unknown_version_segment_is_not_found,
        connection_failures_are_typed_and_retryable,
        a_page_size_past_100_points_to_max_items,
        every_error_stays_under_8_kib_debug_included;
    ServerControl:
        server_errors_carry_code_and_description,
        swapped_base_and_auth_urls_name_the_server_that_answered,
        a_body_that_cannot_be_decoded_says_why;
}

async fn an_unknown_version_segment_is_not_found() {
    let target = Target::new().await;
    let client = target
        .builder()
        .api_version(ApiVersion::new(9).expect("valid version"))
        .build()
        .expect("valid client");
    let err = client.companies().send().await.expect_err("v9 does not exist");
    assert_eq!(err.status(), Some(404));
    assert_eq!(err.code(), Some(&ErrorCode::NotFound));
    assert!(matches!(err, Error::Api(ref e) if e.endpoint() == "/v9/companies"), "{err:?}");
}

async fn server_errors_carry_code_and_description() {
    let server = ReferenceServer::start().await;
    let client = Client::builder().settings(server.settings()).build().expect("client");
    // The list builder refuses a limit of 500 itself; a request to the endpoint can send it.
    let err =
        client.get("companies").query("limit", "500").send::<serde_json::Value>().await.expect_err("400");
    assert!(matches!(err, Error::Api(ref e) if e.endpoint() == "/v1/companies"), "{err:?}");
    assert_eq!((err.status(), err.code()), (Some(400), Some(&ErrorCode::InvalidRequest)));
    assert!(err.description().is_some_and(|d| d.contains("limit")), "{err:?}");
    assert!(!err.is_retryable() && !err.needs_reauthentication());
}

async fn connection_failures_are_typed_and_retryable() {
    // A port nobody listens on: bind, read the port, close.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    drop(listener);
    let client = Client::builder()
        .base_url(format!("http://127.0.0.1:{port}"))
        .auth(Auth::static_token("t"))
        .retry(business_records::RetryPolicy::none())
        .build()
        .expect("valid client");
    let err = client.companies().send().await.expect_err("nothing listens");
    assert!(matches!(err, Error::Http(ref e) if e.is_connect()), "{err:?}");
    assert!(err.is_retryable());
}

async fn a_page_size_past_100_points_to_max_items() {
    let client = Target::new().await.client();
    for (limit, hint) in [(1000, true), (101, true), (0, false)] {
        let err = client.companies().limit(limit).send().await.expect_err("refused before sending");
        let Error::InvalidArgument(ref invalid) = err else { panic!("{err:?}") };
        assert_eq!(invalid.argument(), "limit");
        let expected = format!("expected a page size of 1..=100, got {limit}");
        assert!(invalid.message().starts_with(&expected), "{err}");
        assert_eq!(invalid.message().contains("`max_items`"), hint, "{err}");
    }
}

/// The client's base URL and authorization server's URL given the wrong way round: the token
/// request goes to the API's server, and the error says which server answered.
async fn swapped_base_and_auth_urls_name_the_server_that_answered() {
    let server = ReferenceServer::start().await;
    let client = Client::builder()
        .base_url(server.auth_url())
        .auth(Auth::client_credentials(server.base_url(), server.client_id(), server.client_secret()))
        .retry(RetryPolicy::none())
        .build()
        .expect("a valid client");
    let err = client.companies().send().await.expect_err("no token endpoint there");
    assert!(matches!(err, Error::Api(ref e) if e.origin() == Origin::AuthorizationServer), "{err:?}");
    let Error::Api(ref answer) = err else { unreachable!() };
    assert_eq!(answer.endpoint(), "/oauth2/token", "the path alone, as before");
    let expected = format!("{}/oauth2/token answered 404", server.base_url());
    assert!(err.to_string().starts_with(&expected), "{err} (expected {expected})");

    // The API's own answers name the path alone: the base URL is the caller's.
    let client = support::client_for(&server).build().expect("a valid client");
    let err = client.get("no-such-thing").send::<serde_json::Value>().await.expect_err("404");
    assert!(err.to_string().starts_with("/v1/no-such-thing answered 404"), "{err}");
}

async fn a_body_that_cannot_be_decoded_says_why() {
    let body = serde_json::json!({"data": [], "pagination": {"hasMore": "soon"}}).to_string();
    let server = ReferenceServer::builder()
        .faults(Faults::new().on_every(Endpoint::Companies, 1, Fault::Body(body.into_bytes())))
        .start()
        .await;
    let client = support::client_for(&server).build().expect("a valid client");
    let err = client.companies().send().await.expect_err("not a page");
    assert!(matches!(err, Error::Decode(ref e) if e.endpoint() == "/v1/companies"), "{err:?}");
    let shown = err.to_string();
    let why =
        "could not decode the response of /v1/companies: invalid type: string \"soon\", expected a boolean";
    assert!(shown.starts_with(why) && shown.contains(" at line 1 column "), "{shown}");
    assert!(std::error::Error::source(&err).is_none(), "the reason is shown once, in the message");
}

/// The longest error a hostile server or a careless caller can cause, over real HTTP: a path of
/// 60 KB, an error code and description of 30 and 60 KB made of characters `Debug` escapes, a
/// successor link of 60 KB, a body that quotes 100 KB back, an argument of 100 KB; each error,
/// `Display` and `Debug`, is under 8 KiB.
async fn every_error_stays_under_8_kib_debug_included() {
    let huge = |c: &str, n: usize| c.repeat(n);
    let answer = |status: u16| {
        // Within the 256 KiB of an error body, so that both are read.
        let body =
            serde_json::json!({"error": huge("\"", 30_000), "error_description": huge("\\\"\n", 20_000)});
        ResponseTemplate::new(status).set_body_json(body)
    };
    let server = MockServer::builder().start().await;
    let successor = format!("<{}/v2/{}?token=t>; rel=\"successor-version\"", server.uri(), huge("s", 60_000));
    Mock::given(wiremock::matchers::path_regex("^/v1/gone/"))
        .respond_with(answer(410).insert_header("link", successor.as_str()))
        .mount(&server)
        .await;
    Mock::given(wiremock::matchers::path_regex("^/v1/quoted/"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(serde_json::json!({"data": huge("q", 100_000)})),
        )
        .mount(&server)
        .await;
    Mock::given(wiremock::matchers::path_regex("/oauth2/token$"))
        .respond_with(answer(400))
        .mount(&server)
        .await;
    let id = huge("p", 60_000);
    let api = |auth: Auth| {
        let builder = Client::builder().base_url(server.uri()).auth(auth).retry(RetryPolicy::none());
        builder.build().expect("a valid client")
    };
    let client = api(Auth::static_token("t"));
    let mut errors = vec![
        client.get(["gone", id.as_str()]).send::<serde_json::Value>().await.expect_err("410"),
        client.get(["quoted", id.as_str()]).send::<Vec<String>>().await.expect_err("not a list"),
        api(Auth::client_credentials(format!("{}/{id}", server.uri()), "id", "secret").into())
            .companies()
            .send()
            .await
            .expect_err("400"),
        client.companies().sort(huge("\" ", 50_000).as_str()).send().await.expect_err("a bad sort"),
        Client::builder()
            .base_url(format!("ftp://{id}"))
            .auth(Auth::static_token("t"))
            .build()
            .expect_err("ftp"),
    ];
    let nobody = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = nobody.local_addr().expect("address").port();
    drop(nobody);
    let unreachable =
        Client::builder().base_url(format!("http://127.0.0.1:{port}")).auth(Auth::static_token("t"));
    let unreachable = unreachable.retry(RetryPolicy::none()).build().expect("a valid client");
    errors
        .push(unreachable.get(["x", id.as_str()]).send::<serde_json::Value>().await.expect_err("no server"));

    assert!(matches!(errors[0], Error::Sunset(_)), "{:.300}", errors[0]);
    assert!(errors[0].description().is_some_and(|d| d.len() > 500), "the body was read: {:.300}", errors[0]);
    assert!(matches!(errors[1], Error::Decode(_)), "{:.300}", errors[1]);
    assert!(
        matches!(errors[2], Error::Api(ref e) if e.origin() == Origin::AuthorizationServer),
        "{:.300}",
        errors[2]
    );
    assert!(matches!(errors[3], Error::InvalidArgument(_)), "{:.300}", errors[3]);
    assert!(matches!(errors[5], Error::Http(ref e) if e.is_connect()), "{:.300}", errors[5]);
    for error in &errors {
        let (shown, debug) = (error.to_string(), format!("{error:?}"));
        println!("{} bytes of message, {} of Debug: {shown:.60}", shown.len(), debug.len());
        assert!(shown.len() < 8 * 1024, "{} bytes of message: {shown:.300}", shown.len());
        assert!(debug.len() < 8 * 1024, "{} bytes of Debug: {debug:.300}", debug.len());
        assert!(!shown.contains("token=t") && !debug.contains("token=t"), "no query value: {debug:.300}");
    }
}
