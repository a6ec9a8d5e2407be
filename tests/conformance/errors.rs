//! Spec Parts 7 and 9: error bodies become typed errors; unknown versions are 404.

use business_records::error::ErrorCode;
use business_records::{ApiVersion, Auth, Client, Error};
use business_records_reference_server::ReferenceServer;

use crate::support::Target;

crate::cases! {
    Anywhere:
        an_unknown_version_segment_is_not_found,
        connection_failures_are_typed_and_retryable;
    ServerControl:
        server_errors_carry_code_and_description;
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
