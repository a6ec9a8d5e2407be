//! What the client shows of what a server or a user gave it, over real HTTP: one redaction rule
//! (credential names in any case and spelling, in spans, logs, `Debug`, errors and the
//! reference server's journal) and one length rule (every error, `Debug` included, under 8 KiB;
//! every log line too), whatever the size of a link, a path or a discovered URL.

use std::sync::{Arc, Mutex};

use business_records::auth::{AuthServerMetadata, TokenIntrospector};
use business_records::{Auth, Client, Error};
use business_records_reference_server::{
    DeprecationHeaders, Endpoint, Fault, Faults, REDACTED, ReferenceServer, Reply,
};
use serde_json::{Value, json};
use tracing_subscriber::fmt::format::FmtSpan;

crate::cases! {
    ServerControl:
        a_410_with_a_100_kb_successor_or_everything_at_its_longest_stays_under_8_kib,
        a_huge_discovery_url_stays_short_in_errors_and_debug,
        refused_paths_and_urls_show_no_credential_and_stay_short,
        credentials_in_urls_and_headers_reach_no_span_log_or_journal;
}

/// The bound of every error, `Debug` included, and of every log line.
const BOUND: usize = 8 * 1024;

/// Checks that `error` is under [`BOUND`] as `Display` and `Debug` show it, and holds none of
/// `hidden`.
fn short_and_clean(error: &Error, hidden: &[&str]) {
    for shown in [error.to_string(), format!("{error:?}")] {
        assert!(shown.len() < BOUND, "{} bytes: {}", shown.len(), &shown[..shown.len().min(600)]);
        for secret in hidden {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
    }
}

/// Every byte written by a `tracing` subscriber.
#[derive(Clone, Default)]
struct Written(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Written {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs `work` with a `fmt` subscriber at DEBUG on this thread, which writes a line for every
/// event and for every span as it opens and closes, with its fields; returns those lines.
async fn logged<F: Future>(work: F) -> (F::Output, Vec<String>) {
    let written = Written::default();
    let writer = written.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_span_events(FmtSpan::NEW | FmtSpan::CLOSE)
        .with_writer(move || writer.clone())
        .finish();
    let guard = tracing::subscriber::set_default(subscriber);
    let output = work.await;
    drop(guard);
    let text = String::from_utf8_lossy(&written.0.lock().unwrap()).into_owned();
    (output, text.lines().map(str::to_owned).collect())
}

/// A `Link` target on `server` of exactly `length` bytes, its query of backslashes (which
/// `Debug` doubles).
fn link_of(server: &ReferenceServer, length: usize) -> String {
    let base = format!("{}/l?", server.base_url());
    format!("{base}{}", "\\".repeat(length - base.len()))
}

/// A 410 whose `Link` successor is 100 KB: its error, `Debug` included, and the log lines of
/// the request (spans, the deprecation warning) stay under 8 KiB. So do they for a 410 with
/// every part at its longest: a 60 KB path, links of the longest length kept (256 bytes) for
/// every relation, 30 KB `Deprecation` and `Sunset` values, a 100 KB error code and
/// description of characters that `Debug` escapes.
async fn a_410_with_a_100_kb_successor_or_everything_at_its_longest_stays_under_8_kib() {
    let long_successor = format!("/v2/{}", "z".repeat(100 * 1024));
    let gone = DeprecationHeaders::deprecated().successor(&long_successor);
    let builder = ReferenceServer::builder().list("deals", [json!({"id": "d1"})]).sunset("/v1/deals", gone);
    let server = builder.collection("notes", []).start().await;
    let longest = link_of(&server, 256);
    let mut links: Vec<String> = ["successor-version", "latest-version", "deprecation", "sunset"]
        .iter()
        .map(|rel| format!("<{longest}>; rel=\"{rel}\""))
        .collect();
    links.insert(0, format!("<{long_successor}>; rel=\"successor-version\""));
    let body = json!({"error": "\"".repeat(100 * 1024), "error_description": "\u{200b}\\".repeat(30 * 1024)});
    let reply = Reply::json(410, body.to_string())
        .header("deprecation", "d".repeat(30 * 1024))
        .header("sunset", "y".repeat(30 * 1024))
        .header("link", links.join(", "));
    server.set_faults(Faults::new().on(Endpoint::Resource("notes"), 1, Fault::Reply(reply)));
    let client = Client::builder().settings(server.settings()).build().expect("a client");

    // The longest path a request can carry (`http::Uri` holds up to 64 KiB).
    let long_id = "p".repeat(60 * 1024);
    let (errors, lines) = logged(async {
        let sunset = client.list::<Value>("deals").send().await.expect_err("gone");
        let everything = client.get(["notes", long_id.as_str()]).send::<Value>().await.expect_err("gone");
        [sunset, everything]
    })
    .await;
    for error in &errors {
        assert!(matches!(error, Error::Sunset(_)), "{error:?}");
        short_and_clean(error, &[&"z".repeat(64)]);
    }
    let Error::Sunset(everything) = &errors[1] else { unreachable!() };
    assert_eq!(everything.successor().map(|url| url.as_str().len()), Some(256), "the longest kept");
    assert!(everything.response().endpoint().starts_with("/v1/notes/ppp"));
    assert!(lines.iter().any(|line| line.contains("deprecat")), "the deprecation was logged");
    for line in &lines {
        assert!(line.len() < BOUND, "a log line of {} bytes: {}", line.len(), &line[..600]);
    }
}

/// A discovery document names 100 KB plain-http endpoints off loopback, with a key in its
/// query: the refusal is short and shows neither the key nor the 100 KB. One that names 100 KB
/// endpoints on loopback is accepted; its `Debug`, and the error of a request to one, are short.
async fn a_huge_discovery_url_stays_short_in_errors_and_debug() {
    let server = ReferenceServer::start().await;
    let huge = "u".repeat(100 * 1024);
    let document = |endpoint: String| {
        let document = json!({
            "issuer": server.auth_url(),
            "token_endpoint": endpoint,
            "introspection_endpoint": endpoint,
        });
        Fault::Reply(Reply::json(200, document.to_string()))
    };
    let off_loopback = format!("http://auth.example/{huge}?api_key=SECRETKEY");
    let on_loopback = format!("{}/{huge}", server.auth_url());
    server.set_faults(Faults::new().on(Endpoint::Discovery, 1, document(off_loopback)).on(
        Endpoint::Discovery,
        2,
        document(on_loopback),
    ));
    let refused = AuthServerMetadata::discover(server.auth_url()).await.expect_err("plain http off loopback");
    short_and_clean(&refused, &["SECRETKEY", &huge[..1024]]);

    let metadata = AuthServerMetadata::discover(server.auth_url()).await.expect("on loopback");
    let debug = format!("{metadata:?}");
    assert!(debug.len() < BOUND && !debug.contains(&huge[..1024]), "{} bytes", debug.len());
    let introspector =
        TokenIntrospector::from_metadata(&metadata, server.client_id(), server.client_secret())
            .expect("an introspector");
    let failed = introspector.introspect("token").await.expect_err("no such endpoint");
    short_and_clean(&failed, &[&huge[..1024], server.client_secret()]);

    let argument = format!("http://auth.example/{huge}?client_secret=SECRETKEY");
    let refused = AuthServerMetadata::discover(argument).await.expect_err("refused");
    assert!(matches!(&refused, Error::InvalidArgument(_)), "{refused:?}");
    short_and_clean(&refused, &["SECRETKEY", &huge[..1024]]);
}

/// Paths and base URLs refused for what they hold never echo a password or a key, and a
/// 400 KB path, refused or sent, makes an error of less than 8 KiB.
async fn refused_paths_and_urls_show_no_credential_and_stay_short() {
    let server = ReferenceServer::builder().companies(1).start().await;
    let client = Client::builder().settings(server.settings()).build().expect("a client");
    let long = "x".repeat(400 * 1024);
    let hidden = ["PASSWORD", "SECRETKEY", &long[..1024]];
    for literal in [
        "https://user:PASSWORD@evil.example/x".to_owned(),
        "//user:PASSWORD@evil.example/x".to_owned(),
        "companies?api_key=SECRETKEY".to_owned(),
        "companies#SECRETKEY".to_owned(),
        format!("/{long}"),
        format!("companies/{long}?api_key=SECRETKEY"),
        format!("companies/{long}%09"),
    ] {
        let refused = client.get(literal.as_str()).send::<Value>().await.expect_err("refused");
        assert!(matches!(&refused, Error::InvalidArgument(e) if e.argument() == "path"), "{refused:?}");
        short_and_clean(&refused, &hidden);
    }
    assert!(server.journal().is_empty(), "nothing was sent");
    // Sent: whatever the server makes of a 400 KB path, the error is short.
    let sent = client.get(["companies", long.as_str()]).send::<Value>().await.expect_err("no such company");
    short_and_clean(&sent, &hidden[2..]);
    let built = Client::builder()
        .base_url(format!("http://user:PASSWORD@evil.example/{long}?access_token=SECRETKEY"))
        .auth(Auth::static_token("t"))
        .build()
        .expect_err("refused");
    short_and_clean(&built, &hidden);
}

/// Query parameters and a header named like credentials, in every spelling the rule names, go
/// to the server as given; DEBUG spans and logs show the listing's other parameters and never
/// their values, and the reference server's journal keeps them as `[redacted]`.
async fn credentials_in_urls_and_headers_reach_no_span_log_or_journal() {
    let server = ReferenceServer::builder().collection("notes", [json!({"id": "n_1"})]).start().await;
    let client = Client::builder().settings(server.settings()).build().expect("a client");
    let names = [
        "accessToken",
        "clientSecret",
        "refreshToken",
        "access-token",
        "private_token",
        "X-Amz-Security-Token",
        "X-Goog-Signature",
        "Code",
        "CLIENT_SECRET",
        "api_key",
        "sig",
    ];
    let ((), lines) = logged(async {
        let mut request = client.get("notes").query("limit", "5");
        for (n, name) in names.iter().enumerate() {
            request = request.query(*name, format!("S3CRET{n}"));
        }
        let _: Value = request.header("X-Api-Key", "S3CRETKEY").send().await.expect("a page of notes");
    })
    .await;
    let everything = lines.join("\n");
    assert!(!everything.contains("S3CRET"), "{everything}");
    assert!(everything.contains("limit=5") && everything.contains("accessToken=REDACTED"), "{everything}");

    let sent = crate::support::api_requests(&server);
    let listing = sent.iter().find(|r| r.path() == "/v1/notes").expect("the request");
    assert_eq!(listing.query("limit"), Some("5"));
    for name in names {
        assert_eq!(listing.query(name), Some(REDACTED), "{name}");
    }
    assert_eq!(listing.header("x-api-key"), Some(REDACTED));
    let journal = format!("{:?}", server.journal());
    assert!(!journal.contains("S3CRET"), "{journal}");
}
