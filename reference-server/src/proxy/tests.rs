//! What the proxy does on the wire, read with plain TCP.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::Generated;
use crate::{Endpoint, Fault, Faults, ReferenceServer, Reply, TokenSpec};

/// Sends one `GET` of `path` on a new connection and reads until the server closes it.
async fn raw_get(server: &ReferenceServer, path: &str, token: &str) -> Vec<u8> {
    let address = server.base_url().trim_start_matches("http://").to_owned();
    let mut stream = TcpStream::connect(&address).await.unwrap();
    let request = format!(
        "GET {path} HTTP/1.1\r\nhost: {address}\r\nauthorization: Bearer {token}\r\nconnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut received = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut received)).await;
    // A reset after the last byte counts as the end, as it does for a client.
    let _ = read.expect("the server closes the connection");
    received
}

/// The head (up to the blank line) and the body of a response.
fn split(response: &[u8]) -> (String, &[u8]) {
    let end = response.windows(4).position(|w| w == b"\r\n\r\n").expect("a response head") + 4;
    (String::from_utf8_lossy(&response[..end]).to_ascii_lowercase(), &response[end..])
}

fn header(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|line| {
        let (field, value) = line.split_once(':')?;
        (field.trim() == name).then(|| value.trim().to_owned())
    })
}

#[tokio::test]
async fn faults_on_the_wire() {
    let server = ReferenceServer::builder()
        .companies(20)
        .faults(
            Faults::new()
                .on_sequence(Endpoint::Companies, [None, Some(Fault::CutBody), Some(Fault::DropConnection)]),
        )
        .start()
        .await;
    let token = server.mint_token(TokenSpec::new());
    let path = "/v1/companies?limit=10";

    let whole = raw_get(&server, path, &token).await;
    let (head, body) = split(&whole);
    assert!(head.starts_with("http/1.1 200"), "{head}");
    let length: usize = header(&head, "content-length").unwrap().parse().unwrap();
    assert_eq!(body.len(), length);
    assert!(header(&head, "x-reference-fault").is_none());

    // The head promises the whole body; half of it comes, then the end of the connection. (The
    // first half of a page is records, the same in both answers; the cursors come last.)
    let cut = raw_get(&server, path, &token).await;
    let (head, body) = split(&cut);
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert_eq!(header(&head, "content-length"), Some(length.to_string()));
    assert!(header(&head, "x-reference-fault").is_none(), "the marker is not relayed");
    assert_eq!(body, &whole[whole.len() - length..][..length / 2]);

    // Not a byte of a response.
    assert_eq!(raw_get(&server, path, &token).await, b"");
    let counts = server.fault_counts(Endpoint::Companies);
    assert_eq!((counts.requests, counts.get("cut_body"), counts.get("drop_connection")), (3, 1, 1));
}

#[tokio::test]
async fn an_oversized_body_is_streamed_to_its_length_between_whole_answers() {
    let server = ReferenceServer::builder()
        .companies(5)
        .faults(Faults::new().on(Endpoint::Companies, 2, Fault::OversizedBody(3 * 1024 * 1024 + 7)))
        .start()
        .await;
    let token = server.mint_token(TokenSpec::new());
    let http = reqwest::Client::builder().pool_max_idle_per_host(1).build().unwrap();
    let get = || http.get(format!("{}/v1/companies", server.base_url())).bearer_auth(&token).send();

    let first = get().await.unwrap();
    assert_eq!(first.status(), 200);
    first.bytes().await.unwrap();
    let oversized = get().await.unwrap();
    assert_eq!(oversized.status(), 200);
    assert_eq!(oversized.headers()["content-type"], "application/json");
    assert!(oversized.content_length().is_none());
    let body = oversized.bytes().await.unwrap();
    assert_eq!(body.len(), 3 * 1024 * 1024 + 7);
    assert!(body.starts_with(br#"{"data":[{"id":"cmp_filler","name":"Filler"},"#));
    assert_eq!(get().await.unwrap().status(), 200);
    assert_eq!(server.fault_counts(Endpoint::Companies).get("oversized_body"), 1);
    assert_eq!(server.journal().iter().map(|r| r.status()).collect::<Vec<_>>(), [200, 200, 200]);
}

/// 8 MiB of `{"data":[0,0,...]}` in a valid envelope, and `{},{},...`, made as they are written,
/// on any endpoint, with the status and headers of the test's choosing.
#[tokio::test]
async fn generated_replies_are_whole_envelopes_of_any_size() {
    const TAIL: &str = r#"],"pagination":{"hasMore":false}}"#;
    let zeros =
        Reply::json(200, r#"{"data":[0"#).repeated(",0", 4 * 1024 * 1024, TAIL).header("x-test", "zeros");
    let objects = Reply::new(207).body(r#"{"data":[{}"#).repeated(",{}", 10, TAIL);
    let server = ReferenceServer::builder()
        .companies(1)
        .faults(Faults::new().on(Endpoint::Companies, 1, Fault::Reply(zeros)).on(
            Endpoint::Discovery,
            1,
            Fault::Reply(objects),
        ))
        .start()
        .await;
    let http = reqwest::Client::new();
    let token = server.mint_token(TokenSpec::new());
    let page =
        http.get(format!("{}/v1/companies", server.base_url())).bearer_auth(&token).send().await.unwrap();
    assert_eq!((page.status().as_u16(), page.content_length()), (200, None));
    assert_eq!(
        (page.headers()["x-test"].to_str().unwrap(), page.headers()["content-type"].to_str().unwrap()),
        ("zeros", "application/json")
    );
    let body: serde_json::Value = page.json().await.unwrap();
    assert_eq!(body["data"].as_array().unwrap().len(), 4 * 1024 * 1024 + 1);
    assert_eq!(body["pagination"]["hasMore"], false);
    let discovery = http.get(server.discovery_url()).send().await.unwrap();
    assert_eq!((discovery.status().as_u16(), discovery.headers().get("content-type")), (207, None));
    let body: serde_json::Value = discovery.json().await.unwrap();
    assert_eq!(body["data"].as_array().unwrap().len(), 11);
}

#[test]
fn generated_markers_round_trip() {
    let generated =
        Generated { head: vec![0xff, b'.'], unit: b"ab".to_vec(), times: 3, tail: vec![], limit: Some(5) };
    let marker = generated.marker();
    assert_eq!(marker.strip_prefix(super::MARKER_GENERATE).and_then(Generated::parse), Some(generated));
    for bad in ["", "YQ.YQ", "!!.YQ.1.YQ.", "YQ.YQ.x.YQ.", "YQ.YQ.1.YQ.x"] {
        assert_eq!(Generated::parse(bad), None, "{bad}");
    }
}
