//! The size limits of the authorization server's bodies, at their edges and over real HTTP: a
//! token or introspection answer of 64 KiB, a discovery document of 256 KiB and a JWKS of
//! 1 MiB are read, and one byte more is refused with the error naming the body and its limit,
//! whether the answer announces its length or is sent in chunks. An announced length past the
//! limit is refused before the body is read: a server that announces a gigabyte, sends a few
//! bytes and then stalls is answered at once, not after the request timeout.

use std::time::Duration;

use business_records::auth::{AuthServerMetadata, TokenIntrospector, TokenVerifier};
use business_records::{Auth, Client, Error, RetryPolicy};
use business_records_reference_server::{Endpoint, Fault, Faults, ReferenceServer, Reply, TokenSpec};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

use crate::support;

crate::cases! {
    ServerControl:
        each_authorization_server_body_is_read_up_to_its_limit_and_refused_one_byte_past_it;
    Anywhere:
        an_announced_length_past_the_limit_is_refused_without_waiting_for_the_body;
}

/// A body of the authorization server the client reads, with its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Token,
    Introspection,
    Discovery,
    Jwks,
}

impl Kind {
    /// The body's name in [`ResponseTooLarge`](business_records::error::ResponseTooLarge) and
    /// its limit in bytes, as the crate documents them.
    fn limit(self) -> (&'static str, usize) {
        match self {
            Kind::Token => ("token", 64 * 1024),
            Kind::Introspection => ("introspection", 64 * 1024),
            Kind::Discovery => ("discovery", 256 * 1024),
            Kind::Jwks => ("jwks", 1024 * 1024),
        }
    }

    fn endpoint(self) -> Endpoint {
        match self {
            Kind::Token => Endpoint::Token,
            Kind::Introspection => Endpoint::Introspect,
            Kind::Discovery => Endpoint::Discovery,
            Kind::Jwks => Endpoint::Jwks,
        }
    }

    /// A valid answer of this kind, as compact JSON.
    async fn document(self, server: &ReferenceServer) -> Value {
        let get = |url: String| async move {
            let response = reqwest::get(url).await.expect("the server's own document");
            response.json::<Value>().await.expect("JSON")
        };
        match self {
            Kind::Token => json!({
                "access_token": server.mint_token(TokenSpec::new().scopes(["api/read"])),
                "token_type": "Bearer",
                "expires_in": 3600,
            }),
            Kind::Introspection => json!({"active": true, "scope": "api/read", "client_id": "c"}),
            Kind::Discovery => get(format!("{}/.well-known/openid-configuration", server.auth_url())).await,
            Kind::Jwks => get(server.jwks_url()).await,
        }
    }

    /// The client's use of this answer: a page through a client-credentials client, an
    /// introspection, a discovery, a token verified against the key set. Each time with a new
    /// client, so that no cached token, document or backoff is carried over.
    async fn read_by_the_client(self, server: &ReferenceServer) -> Result<(), Error> {
        match self {
            Kind::Token => {
                let client = support::client_for(server).build().expect("client");
                client.companies().send().await.map(drop)
            }
            Kind::Introspection => {
                let introspector =
                    TokenIntrospector::new(server.auth_url(), server.client_id(), server.client_secret())
                        .expect("introspector");
                let answer = introspector.introspect("a-token").await?;
                assert!(answer.active && answer.scopes == ["api/read"], "{answer:?}");
                Ok(())
            }
            Kind::Discovery => {
                let metadata = AuthServerMetadata::discover(server.auth_url()).await?;
                assert_eq!(metadata.jwks_uri.map(String::from), Some(server.jwks_url()));
                Ok(())
            }
            Kind::Jwks => {
                let verifier = TokenVerifier::new(server.jwks_url(), server.auth_url(), server.audience())
                    .expect("verifier");
                let token = server.mint_token(TokenSpec::new());
                match verifier.verify(&token).await {
                    Ok(_) => Ok(()),
                    Err(business_records::auth::VerifyError::Jwks(error)) => Err(error),
                    Err(other) => panic!("the key set was read but the token refused: {other:?}"),
                }
            }
        }
    }

    /// Sends the kind's request as a plain HTTP client would: the announced length and the
    /// bytes of the answer the server gives the client.
    async fn probe(self, server: &ReferenceServer) -> (Option<u64>, usize) {
        let http = reqwest::Client::new();
        let request = match self {
            Kind::Token => http.post(format!("{}/oauth2/token", server.auth_url())),
            Kind::Introspection => http.post(format!("{}/oauth2/introspect", server.auth_url())),
            Kind::Discovery => http.get(format!("{}/.well-known/openid-configuration", server.auth_url())),
            Kind::Jwks => http.get(server.jwks_url()),
        };
        let response = request.send().await.expect("an answer");
        let announced = response.content_length();
        (announced, response.bytes().await.expect("the body").len())
    }
}

/// How the answer is framed: with `Content-Length`, or in chunks without it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Announced,
    Chunked,
}

/// `document` padded with spaces before its closing brace to exactly `length` bytes, framed
/// as `framing` says.
fn padded(document: &Value, length: usize, framing: Framing) -> Fault {
    let text = document.to_string();
    let head = text.strip_suffix('}').expect("a JSON object");
    let spaces = length.checked_sub(text.len()).expect("the document fits");
    let reply = match framing {
        Framing::Announced => Reply::json(200, format!("{head}{}}}", " ".repeat(spaces))),
        Framing::Chunked => Reply::json(200, head).repeated(" ", spaces as u64, "}"),
    };
    Fault::Reply(reply)
}

/// For each kind and both framings: an answer of exactly the limit is read, and one of a byte
/// more is refused with the error naming the body and the limit. The server's answers are
/// probed first, so that each case knows it sent the bytes and the framing it claims.
async fn each_authorization_server_body_is_read_up_to_its_limit_and_refused_one_byte_past_it() {
    let server =
        ReferenceServer::builder().companies(1).contacts_per_company(0).faults(Faults::new()).start().await;
    for kind in [Kind::Token, Kind::Introspection, Kind::Discovery, Kind::Jwks] {
        let (name, limit) = kind.limit();
        let document = kind.document(&server).await;
        for framing in [Framing::Announced, Framing::Chunked] {
            for length in [limit, limit + 1] {
                let case = format!("{kind:?}, {framing:?}, {length} bytes");
                server.set_faults(Faults::new().on_every(
                    kind.endpoint(),
                    1,
                    padded(&document, length, framing),
                ));
                let announced = (framing == Framing::Announced).then_some(length as u64);
                assert_eq!(kind.probe(&server).await, (announced, length), "{case}: the server's answer");
                let outcome = kind.read_by_the_client(&server).await;
                if length == limit {
                    outcome.unwrap_or_else(|e| panic!("{case}: within the limit: {e:?}"));
                } else {
                    let error = outcome.expect_err(&format!("{case}: past the limit"));
                    assert!(
                        matches!(error, Error::ResponseTooLarge(ref e) if e.body() == name && e.limit() == limit as u64),
                        "{case}: {error:?}"
                    );
                    assert!(
                        error.to_string().ends_with(&format!("the {name} body limit of {limit} bytes")),
                        "{error}"
                    );
                }
            }
        }
    }
}

/// A server on a port of its own that answers every request with `head` (a status line and
/// headers announcing a gigabyte) and a few bytes of body, then holds the connection open
/// without sending more.
async fn stalling_server(head: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let address = listener.local_addr().expect("its address");
    tokio::spawn(async move {
        while let Ok((mut connection, _)) = listener.accept().await {
            tokio::spawn(async move {
                // The request's head (its body, if any, is small enough to arrive with it).
                let mut request = Vec::new();
                let mut buffer = [0; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match connection.read(&mut buffer).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buffer[..n]),
                    }
                }
                let answer = format!("{head}content-length: 1073741824\r\n\r\n{{\"a\":");
                if connection.write_all(answer.as_bytes()).await.is_ok() {
                    // The rest never comes; the connection closes when the test ends.
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                }
            });
        }
    });
    format!("http://{address}")
}

/// A page, a token answer and an error answer that each announce 1 GiB, send 5 bytes and stall:
/// the client answers each at once, without reading on, where waiting for the body would end
/// in the request timeout (an [`Error::Http`], never a too-large error or a status). A page and
/// a token answer are [`Error::ResponseTooLarge`] naming their limit; an error answer, whose
/// body past its limit is ignored, is the error its status makes.
async fn an_announced_length_past_the_limit_is_refused_without_waiting_for_the_body() {
    let timeout = Duration::from_secs(10);
    let once = RetryPolicy::default().max_attempts(1);
    let ok = stalling_server("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n").await;
    let unavailable =
        stalling_server("HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n").await;
    let client = |base: &str, auth: Auth| {
        Client::builder()
            .base_url(base)
            .auth(auth)
            .timeout(timeout)
            .retry(once.clone())
            .build()
            .expect("client")
    };
    let started = std::time::Instant::now();

    let page = client(&ok, Auth::static_token("t")).companies().send().await.expect_err("a gigabyte page");
    assert!(
        matches!(page, Error::ResponseTooLarge(ref e) if e.body() == "page" && e.limit() == 32 * 1024 * 1024),
        "{page:?}"
    );
    let credentials = Auth::client_credentials(ok.as_str(), "client", "secret").into();
    let token = client(&ok, credentials).companies().send().await.expect_err("a gigabyte token answer");
    assert!(
        matches!(token, Error::ResponseTooLarge(ref e) if e.body() == "token" && e.limit() == 64 * 1024),
        "{token:?}"
    );
    let refused = client(&unavailable, Auth::static_token("t")).companies().send().await.expect_err("a 503");
    assert_eq!(refused.status(), Some(503), "{refused:?}");
    assert!(started.elapsed() < timeout, "answered at once: {:?}", started.elapsed());
}
