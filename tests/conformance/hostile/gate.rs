//! What a request may carry, over real HTTP: paths whose segments arrive as given or are refused
//! (control characters, `..` in any encoding, `;` encoded), headers the client owns refused,
//! idempotency keys checked, writes without a key sent once whatever fails, and no proxy from
//! the environment on loopback.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use business_records::auth::AuthServerMetadata;
use business_records::{Auth, Client, Company, Error, Method, RetryPolicy};
use business_records_reference_server::ReferenceServer;
use percent_encoding::percent_decode_str;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{TcpListener, TcpStream};

crate::cases! {
    ServerControl:
        control_characters_and_dots_in_any_encoding_are_refused_and_semicolons_encoded,
        headers_the_client_owns_and_bad_idempotency_keys_are_refused_with_nothing_sent,
        a_post_or_patch_without_a_key_is_sent_once_through_503_429_close_reset_and_timeout,
        arbitrary_segments_and_headers_are_refused_or_arrive_exactly [sync],
        loopback_requests_never_go_through_a_proxy_from_the_environment;
    ChildProcess:
        a_process_with_proxies_in_its_environment;
}

/// A client of `server` with short retries.
fn client(server: &ReferenceServer) -> Client {
    let retry = RetryPolicy::default().initial_delay(Duration::from_millis(5));
    Client::builder().settings(server.settings()).retry(retry).build().expect("a client")
}

/// The argument an `InvalidArgument` names; any other outcome fails the case.
fn refused<T: std::fmt::Debug>(outcome: Result<T, Error>) -> &'static str {
    match outcome {
        Err(Error::InvalidArgument(e)) => e.argument(),
        other => panic!("expected an InvalidArgument, got {other:?}"),
    }
}

async fn control_characters_and_dots_in_any_encoding_are_refused_and_semicolons_encoded() {
    let server = ReferenceServer::builder()
        .company(json!({"id": "a/b", "name": "slash", "status": "active"}))
        .collection("notes", [json!({"id": "n_1"})])
        .start()
        .await;
    let client = client(&server);
    for segments in [vec!["users", "ad\tmin"], vec!["notes", "n_1\n"], vec!["notes", "n\r_1"], vec!["a\u{0}"]]
    {
        let outcome = client.request(Method::DELETE, segments.clone()).send_empty().await;
        assert_eq!(refused(outcome), "path", "{segments:?}");
    }
    for literal in [
        "users/ad%09min",
        "notes/n_1%0A",
        "companies/..;/contacts",
        "companies/..%2fadmin",
        "companies/..%5Cadmin",
        "companies/%2e%2e/contacts",
        "companies/%2E%2E%3B/x",
        "companies/\\admin",
        "//evil.example/companies",
        "companies//cmp_1",
        "https://evil.example/v1/companies",
        "companies?x=1",
        "companies#x",
    ] {
        assert_eq!(refused(client.get(literal).send::<Value>().await), "path", "{literal}");
    }
    assert!(server.journal().is_empty(), "nothing was sent, not even a token request");

    // `;` reaches the server encoded, inside its segment; `%2F` in a literal stays in its own.
    let gone = client.get(["notes", "..;", "contacts"]).send::<Value>().await.expect_err("no such note");
    assert_eq!(gone.status(), Some(404), "{gone:?}");
    let one: Company = client.get("companies/a%2Fb").send().await.expect("the company `a/b`");
    assert_eq!(one.id, "a/b");
    let paths: Vec<String> =
        crate::support::api_requests(&server).iter().map(|r| r.path().to_owned()).collect();
    assert_eq!(paths, ["/v1/notes/..%3B/contacts", "/v1/companies/a%2Fb"]);
}

async fn headers_the_client_owns_and_bad_idempotency_keys_are_refused_with_nothing_sent() {
    let server = ReferenceServer::builder().collection("notes", []).start().await;
    let client = client(&server);
    let note = json!({"text": "called"});
    let post = || client.request(Method::POST, "notes").json(&note);
    for (name, value) in [
        ("Host", "evil.example"),
        ("content-length", "2"),
        ("Transfer-Encoding", "gzip, chunked"),
        ("CONNECTION", "close"),
        ("authorization", "Bearer forged"),
        ("Idempotency-Key", "k1"),
        ("X-API-Preview", "2026-03"),
        ("X-Trace", "a\r\nInjected: 1"),
        ("X-Trace", "a\nb"),
    ] {
        assert_eq!(refused(post().header(name, value).send::<Value>().await), "header", "{name}: {value:?}");
    }
    let huge = "k".repeat(1024 * 1024);
    for key in ["", " ", "two words", huge.as_str()] {
        let outcome = post().idempotency_key(key).send::<Value>().await;
        assert_eq!(refused(outcome), "idempotency_key", "{} bytes", key.len());
    }
    assert_eq!(refused(post().preview("2026-3").send::<Value>().await), "preview");
    assert!(server.journal().is_empty(), "nothing was sent");

    let created: Value =
        post().header("X-Trace", "t 1").idempotency_key("note-1").send().await.expect("created");
    assert_eq!(created["text"], "called");
    let sent = crate::support::api_requests(&server);
    assert_eq!(sent.len(), 1);
    assert_eq!((sent[0].header("x-trace"), sent[0].idempotency_key()), (Some("t 1"), Some("note-1")));
}

/// What the [`Scripted`] server does with a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answer {
    /// 200 with `{}`.
    Ok,
    /// 503 `temporarily_unavailable`.
    Unavailable,
    /// 429 with `Retry-After: 0`.
    RateLimited,
    /// The connection closed once the request has arrived.
    Close,
    /// The connection reset (RST) once the request has arrived.
    Reset,
    /// No answer for ten seconds.
    Hang,
}

/// The head of a request as the [`Scripted`] server received it.
#[derive(Clone, Debug)]
struct Head {
    method: String,
    target: String,
    headers: Vec<(String, Vec<u8>)>,
}

impl Head {
    /// The values of the header `name` (any case), whitespace around them removed as HTTP
    /// reads them.
    fn header(&self, name: &str) -> Vec<&[u8]> {
        let values = self.headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case(name));
        values.map(|(_, v)| v.trim_ascii()).collect()
    }
}

/// A plain HTTP/1.1 server on loopback that answers its `n`th request (from 0) as its script
/// says and keeps the head of every request, as sent.
struct Scripted {
    base_url: String,
    heads: Arc<Mutex<Vec<Head>>>,
}

impl Scripted {
    async fn start(script: impl Fn(usize) -> Answer + Send + Sync + 'static) -> Scripted {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base_url = format!("http://{}", listener.local_addr().expect("an address"));
        let heads = Arc::new(Mutex::new(Vec::new()));
        let (script, kept) = (Arc::new(script), Arc::clone(&heads));
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, Arc::clone(&kept), script.clone()));
            }
        });
        Scripted { base_url, heads }
    }

    fn heads(&self) -> Vec<Head> {
        self.heads.lock().unwrap().clone()
    }
}

/// Serves one connection of a [`Scripted`] server.
async fn serve(stream: TcpStream, heads: Arc<Mutex<Vec<Head>>>, script: Arc<impl Fn(usize) -> Answer>) {
    let mut reader = BufReader::new(stream);
    loop {
        let mut lines = Vec::new();
        loop {
            let mut line = Vec::new();
            if reader.read_until(b'\n', &mut line).await.unwrap_or(0) == 0 {
                return;
            }
            if line == b"\r\n" {
                break;
            }
            line.truncate(line.len().saturating_sub(2));
            lines.push(line);
        }
        let request_line = String::from_utf8_lossy(&lines[0]).into_owned();
        let mut parts = request_line.split(' ');
        let (method, target) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
        let headers: Vec<(String, Vec<u8>)> = lines[1..]
            .iter()
            .filter_map(|line| {
                let colon = line.iter().position(|&b| b == b':')?;
                Some((String::from_utf8_lossy(&line[..colon]).into_owned(), line[colon + 1..].to_vec()))
            })
            .collect();
        let head = Head { method: method.to_owned(), target: target.to_owned(), headers };
        let length = head
            .header("content-length")
            .first()
            .map_or(0, |v| String::from_utf8_lossy(v).parse().unwrap_or(0));
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).await.is_err() {
            return;
        }
        let n = {
            let mut heads = heads.lock().unwrap();
            heads.push(head);
            heads.len() - 1
        };
        let reply = |status: &str, extra: &str, body: &str| {
            format!(
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\n\r\n{body}",
                body.len()
            )
        };
        let reply = match script(n) {
            Answer::Ok => reply("200 OK", "", "{}"),
            Answer::Unavailable => {
                reply("503 Service Unavailable", "", r#"{"error":"temporarily_unavailable"}"#)
            }
            Answer::RateLimited => {
                reply("429 Too Many Requests", "retry-after: 0\r\n", r#"{"error":"rate_limited"}"#)
            }
            Answer::Close => return,
            Answer::Reset => {
                let _ = reader.get_ref().set_zero_linger();
                return;
            }
            Answer::Hang => {
                tokio::time::sleep(Duration::from_secs(10)).await;
                return;
            }
        };
        if reader.get_mut().write_all(reply.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// For each way an attempt can fail: a POST and a PATCH without a key are each sent once; with
/// a key each is sent again, with the same key, and succeeds.
async fn a_post_or_patch_without_a_key_is_sent_once_through_503_429_close_reset_and_timeout() {
    for fault in [Answer::Unavailable, Answer::RateLimited, Answer::Close, Answer::Reset, Answer::Hang] {
        // Requests 0 and 1: one call each; 2 and 3, 4 and 5: a call and its retry.
        let server = Scripted::start(move |n| if n == 3 || n == 5 { Answer::Ok } else { fault }).await;
        let client = Client::builder()
            .base_url(&server.base_url)
            .auth(Auth::static_token("t"))
            .retry(RetryPolicy::default().initial_delay(Duration::from_millis(5)))
            .timeout(Duration::from_secs(1))
            .build()
            .expect("a client");
        let write = |method: Method| client.request(method, ["notes", "n_1"]).json(&json!({"text": "x"}));
        for method in [Method::POST, Method::PATCH] {
            write(method.clone()).send::<Value>().await.expect_err("failed once, not sent again");
        }
        for (method, key) in [(Method::POST, "k-post"), (Method::PATCH, "k-patch")] {
            write(method).idempotency_key(key).send::<Value>().await.expect("sent again with its key");
        }
        let heads = server.heads();
        let keys: Vec<(&str, Option<&[u8]>)> =
            heads.iter().map(|h| (h.method.as_str(), h.header("idempotency-key").first().copied())).collect();
        assert_eq!(
            keys,
            [
                ("POST", None),
                ("PATCH", None),
                ("POST", Some(&b"k-post"[..])),
                ("POST", Some(&b"k-post"[..])),
                ("PATCH", Some(&b"k-patch"[..])),
                ("PATCH", Some(&b"k-patch"[..])),
            ],
            "{fault:?}"
        );
    }
}

/// Headers the client sets itself or that frame a request, in any case.
const CLIENTS_OWN: [&str; 14] = [
    "authorization",
    "proxy-authorization",
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
    "expect",
    "idempotency-key",
    "x-api-preview",
];

/// Segments that stress the rules.
const ODD_SEGMENTS: [&str; 16] = [
    "..", ".", "", "..;", "a;b", "%2e%2e", "a/b", "\\", "?", "#", "%", "\t", "\u{85}", "ad\tmin", "a\r\nb",
    " ",
];

/// A header name any way: one the client owns in any case, a token, or any text.
fn header_name() -> impl Strategy<Value = String> {
    let owned = (prop::sample::select(&CLIENTS_OWN[..]), prop::collection::vec(any::<bool>(), 20)).prop_map(
        |(name, upper)| {
            name.chars().zip(upper).map(|(c, up)| if up { c.to_ascii_uppercase() } else { c }).collect()
        },
    );
    prop_oneof![owned, "[!#$%&'*+.^_`|~0-9A-Za-z-]{1,12}", ".{0,6}"]
}

/// Whether `name` is a header name (a token) and `value` a value the gate lets through: visible
/// ASCII, spaces and tabs, none at either end.
fn sendable(name: &str, value: &str) -> bool {
    let token = !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    let visible = value.bytes().all(|b| b == b'\t' || (b' '..=b'~').contains(&b));
    token && visible && value.trim_matches([' ', '\t']) == value
}

/// Arbitrary segments and headers: each request is refused with an `InvalidArgument` naming
/// `path` or `header`, for a reason the rules give, with nothing sent; or it reaches the server
/// with the segment exactly as given (one segment, `;` encoded) and the header exactly as given.
fn arbitrary_segments_and_headers_are_refused_or_arrive_exactly() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let (server, client) = runtime.block_on(async {
        let server = Scripted::start(|_| Answer::Ok).await;
        let client = Client::builder()
            .base_url(&server.base_url)
            .auth(Auth::static_token("t"))
            .build()
            .expect("a client");
        (server, client)
    });
    let segment = prop_oneof![
        any::<String>(),
        "[ -~]{1,12}",
        prop::sample::select(&ODD_SEGMENTS[..]).prop_map(str::to_owned)
    ];
    let value =
        prop_oneof!["[!-~]([ -~\t]{0,12}[!-~])?", "[ -~\t]{0,8}", ".{0,8}", "[a-z]{0,4}\r\n[a-z]{1,4}: x"];
    let mut runner = TestRunner::new(Config { cases: 256, failure_persistence: None, ..Config::default() });
    let outcome = runner.run(&(segment, header_name(), value), |(segment, name, value)| {
        let before = server.heads().len();
        let sent =
            runtime.block_on(client.get(["p", segment.as_str()]).header(&name, &value).send::<Value>());
        let heads = server.heads();
        match sent {
            Err(Error::InvalidArgument(e)) if e.argument() == "path" => {
                let control = segment.contains(char::is_control);
                prop_assert!(control || ["", ".", ".."].contains(&segment.as_str()), "{segment:?}: {e}");
                prop_assert_eq!(heads.len(), before, "nothing sent");
            }
            Err(Error::InvalidArgument(e)) if e.argument() == "header" => {
                let owned = CLIENTS_OWN.contains(&name.to_ascii_lowercase().as_str());
                prop_assert!(owned || !sendable(&name, &value), "{name:?}: {value:?}: {e}");
                prop_assert_eq!(heads.len(), before, "nothing sent");
            }
            Err(other) => return Err(TestCaseError::fail(format!("{segment:?} {name:?}: {other:?}"))),
            Ok(_) => {
                prop_assert!(!CLIENTS_OWN.contains(&name.to_ascii_lowercase().as_str()), "{name:?} was sent");
                prop_assert_eq!(heads.len(), before + 1);
                let head = &heads[before];
                let encoded = head.target.strip_prefix("/v1/p/").unwrap_or_default();
                prop_assert!(!encoded.contains(['/', ';', '?', '#']), "{}", head.target);
                let received = percent_decode_str(encoded).collect::<Vec<u8>>();
                prop_assert_eq!(received, segment.as_bytes().to_vec(), "{}", head.target);
                prop_assert_eq!(head.header(&name), [value.as_bytes()], "{:?}", name);
            }
        }
        Ok(())
    });
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
}

/// How the parent tells its child where the API, the authorization server and the proxy are.
const CHILD_SETTINGS: [&str; 4] = [
    "BUSINESS_RECORDS_PROXY_BASE_URL",
    "BUSINESS_RECORDS_PROXY_AUTH_URL",
    "BUSINESS_RECORDS_PROXY_CLIENT_ID",
    "BUSINESS_RECORDS_PROXY_CLIENT_SECRET",
];

/// A process whose environment names a proxy (every variable, upper and lower case) reaches
/// the reference server on `127.0.0.1` and `localhost` directly, through a client with and
/// without `http_config` and on its own (discovery): the proxy, a listener on loopback, sees
/// none of it, neither the client secret nor a bearer token. Requests to other hosts still go
/// to the proxy.
async fn loopback_requests_never_go_through_a_proxy_from_the_environment() {
    let server = ReferenceServer::builder().companies(2).start().await;
    let proxy = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let proxy_url = format!("http://{}", proxy.local_addr().expect("an address"));
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let heard = Arc::clone(&seen);
    tokio::spawn(async move {
        while let Ok((stream, _)) = proxy.accept().await {
            let mut reader = BufReader::new(stream);
            let mut line = String::new();
            let _ = reader.read_line(&mut line).await;
            heard.lock().unwrap().push(line.trim_end().to_owned());
            let refusal = b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
            let _ = reader.get_mut().write_all(refusal).await;
        }
    });
    let values =
        [server.base_url(), server.auth_url(), server.client_id().into(), server.client_secret().into()];
    let settings: Vec<(&str, String)> = CHILD_SETTINGS.into_iter().zip(values).collect();
    let mut command =
        super::child_process("hostile::gate::a_process_with_proxies_in_its_environment", &settings);
    command
        .arg("--test-threads=1")
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .env_remove("REQUEST_METHOD");
    for name in ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"] {
        command.env(name, &proxy_url);
    }
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .expect("the child's task ran")
        .expect("the child ran");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("direct=4"), "{stdout}");
    let mut seen = seen.lock().unwrap().clone();
    seen.sort();
    assert_eq!(
        seen,
        ["CONNECT api.example:443 HTTP/1.1", "CONNECT auth.example:443 HTTP/1.1"],
        "the proxy sees the other hosts, and nothing of loopback"
    );
    assert!(server.token_requests() >= 2, "the tokens came straight from the server");
}

/// The child of [`loopback_requests_never_go_through_a_proxy_from_the_environment`].
async fn a_process_with_proxies_in_its_environment() {
    let [base_url, auth_url, client_id, secret] = CHILD_SETTINGS.map(|name| std::env::var(name).expect(name));
    let localhost = |url: &str| url.replacen("127.0.0.1", "localhost", 1);
    let mut direct = 0;
    for (base_url, auth_url) in
        [(base_url.clone(), auth_url.clone()), (localhost(&base_url), localhost(&auth_url))]
    {
        for configured in [false, true] {
            let auth = Auth::client_credentials(&auth_url, &client_id, &secret).scopes(["api/read"]);
            let builder = Client::builder().base_url(&base_url).auth(auth).timeout(Duration::from_secs(10));
            let builder =
                if configured { builder.http_config(|http| http.pool_max_idle_per_host(1)) } else { builder };
            let client = builder.build().expect("a client");
            client
                .companies()
                .send()
                .await
                .unwrap_or_else(|e| panic!("{base_url}, configured {configured}: {e:?}"));
            direct += 1;
        }
    }
    // Other hosts still go to the proxy, whose 502 ends the tunnel.
    AuthServerMetadata::discover("https://auth.example").await.expect_err("through the proxy");
    let other = Client::builder()
        .base_url("https://api.example")
        .auth(Auth::static_token("t"))
        .retry(RetryPolicy::none())
        .http_config(|http| http)
        .build()
        .expect("a client");
    other.companies().send().await.expect_err("through the proxy");
    println!("direct={direct}");
}
