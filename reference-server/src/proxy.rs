//! A small HTTP/1.1 proxy in front of a server (the API, the authorization server) that
//! breaks connections and holds requests on purpose.
//!
//! A wiremock responder can only answer with a whole response: it cannot close a connection
//! once it has chosen a fault, cut a body short, stream a body larger than memory, nor wait
//! before the request is processed. For [`Fault::DropConnection`](super::Fault::DropConnection)
//! and [`Fault::CutBody`](super::Fault::CutBody) the server marks its response with the
//! [`MARKER_HEADER`] and this proxy, which relays every request and response, carries the fault
//! out on the client's connection: it closes it without sending anything, or after the response
//! head and half of the body; for [`Fault::OversizedBody`](super::Fault::OversizedBody) it sends
//! a body of the size asked for, generated as it is written. For a slow token answer
//! ([`MARKER_HOLD`]) the server answers at once without processing the request; the proxy
//! waits, and if the client is still connected sends the request again with the
//! [`REPLAY_HEADER`], which the server processes. Unmarked responses are relayed unchanged,
//! keep-alive included.
//!
//! Both sides are hyper's HTTP/1 connections (the hyper wiremock itself serves with): a server
//! connection per client, and a client connection to the server behind, reused from one request
//! to the next. A service error makes hyper close the client's connection without a response;
//! a body error closes it mid-body; and hyper drops a request's service future when its client
//! goes away, so a held request is never sent again for a client that left.
//!
//! The proxy runs on a thread of its own with a single-threaded tokio runtime (as wiremock's
//! servers do), so it works whatever runtime the test uses, and stops when dropped.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt as _, stream};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt as _, Full, StreamBody};
use hyper::body::{Bytes, Frame, Incoming};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{CONNECTION, CONTENT_TYPE, HeaderValue};
use hyper::http::{request, response};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Mutex, oneshot};

use super::faults::{MARKER_CUT, MARKER_DROP, MARKER_HEADER, MARKER_HOLD, MARKER_OVERSIZE, REPLAY_HEADER};

/// The bodies the proxy answers with: relayed whole, cut short or generated.
type Body = UnsyncBoxBody<Bytes, io::Error>;

/// How long the half of a body cut short is given to reach the client before the connection
/// closes (hyper flushes what it has written while the body is pending).
const CUT_PAUSE: Duration = Duration::from_millis(20);

/// A running proxy; dropping it stops it and closes its connections.
#[derive(Debug)]
pub(crate) struct Proxy {
    address: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
}

impl Proxy {
    /// Listens on a free loopback port and relays to `upstream`; held requests are sent again
    /// with `replay_secret`.
    pub(crate) fn start(upstream: SocketAddr, replay_secret: String) -> io::Result<Proxy> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let address = listener.local_addr()?;
        let (shutdown, stopped) = oneshot::channel::<()>();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let replay_secret: Arc<str> = replay_secret.into();
        std::thread::Builder::new().name("reference-server-proxy".into()).spawn(move || {
            runtime.block_on(async move {
                let Ok(listener) = TcpListener::from_std(listener) else { return };
                let accept = async move {
                    loop {
                        match listener.accept().await {
                            Ok((client, _)) => {
                                tokio::spawn(serve(client, upstream, Arc::clone(&replay_secret)));
                            }
                            Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
                        }
                    }
                };
                // Runs until the handle is dropped (or its sender is gone).
                tokio::select! {
                    _ = stopped => {}
                    () = accept => {}
                }
            });
        })?;
        Ok(Proxy { address, shutdown: Some(shutdown) })
    }

    /// Where clients connect.
    pub(crate) fn address(&self) -> SocketAddr {
        self.address
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

/// Serves one client connection, request by request.
async fn serve(client: TcpStream, upstream: SocketAddr, replay_secret: Arc<str>) {
    let _ = client.set_nodelay(true);
    let relay = Arc::new(Relay { upstream, replay_secret, connection: Mutex::new(None) });
    let service = hyper::service::service_fn(move |request| {
        let relay = Arc::clone(&relay);
        async move { relay.handle(request).await }
    });
    // Ends when either side closes, or when a fault closes the connection.
    let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(client), service).await;
}

/// One client connection's way to the server behind.
struct Relay {
    upstream: SocketAddr,
    replay_secret: Arc<str>,
    /// The connection to `upstream`, opened at the first request and again after it closes.
    connection: Mutex<Option<SendRequest<Full<Bytes>>>>,
}

impl Relay {
    /// Relays `request` and carries out the fault its answer is marked with. An error closes
    /// the client's connection without a response.
    async fn handle(&self, request: Request<Incoming>) -> io::Result<Response<Body>> {
        let (head, body) = request.into_parts();
        let body = body.collect().await.map_err(io::Error::other)?.to_bytes();
        let (mut answer, mut answer_body) = self.forward(&head, body.clone(), false).await?;
        if let Some(delay) = marker(&answer).and_then(hold_delay) {
            // Dropped with the connection if the client leaves meanwhile: then never replayed.
            tokio::time::sleep(delay).await;
            (answer, answer_body) = self.forward(&head, body, true).await?;
        }
        let marker = answer.headers.remove(MARKER_HEADER);
        match marker.as_ref().and_then(|value| value.to_str().ok()) {
            Some(MARKER_DROP) => Err(io::Error::other("fault: the connection is dropped")),
            Some(MARKER_CUT) => Ok(Response::from_parts(answer, cut_short(answer_body))),
            Some(marker) if marker.starts_with(MARKER_OVERSIZE) => {
                Ok(oversized(marker[MARKER_OVERSIZE.len()..].parse().unwrap_or(0)))
            }
            _ => Ok(Response::from_parts(answer, whole(answer_body))),
        }
    }

    /// Sends the request to the server behind (marked as a replay with `replay`) and reads its
    /// whole answer.
    async fn forward(
        &self,
        head: &request::Parts,
        body: Bytes,
        replay: bool,
    ) -> io::Result<(response::Parts, Bytes)> {
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = head.method.clone();
        *request.uri_mut() = head.uri.clone();
        *request.version_mut() = head.version;
        *request.headers_mut() = head.headers.clone();
        if replay {
            let secret = HeaderValue::from_str(&self.replay_secret).map_err(io::Error::other)?;
            request.headers_mut().insert(REPLAY_HEADER, secret);
        }
        let mut connection = self.connection.lock().await;
        let mut sender = match connection.take().filter(|sender| !sender.is_closed()) {
            Some(sender) => sender,
            None => connect(self.upstream).await?,
        };
        sender.ready().await.map_err(io::Error::other)?;
        let response = sender.send_request(request).await.map_err(io::Error::other)?;
        let (answer, body) = response.into_parts();
        let body = body.collect().await.map_err(io::Error::other)?.to_bytes();
        *connection = Some(sender);
        Ok((answer, body))
    }
}

/// A client connection to `upstream`, driven by a task of its own until it closes.
async fn connect(upstream: SocketAddr) -> io::Result<SendRequest<Full<Bytes>>> {
    let stream = TcpStream::connect(upstream).await?;
    let _ = stream.set_nodelay(true);
    let (sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.map_err(io::Error::other)?;
    tokio::spawn(connection);
    Ok(sender)
}

/// The fault marker of an answer, if any.
fn marker(answer: &response::Parts) -> Option<&str> {
    answer.headers.get(MARKER_HEADER).and_then(|value| value.to_str().ok())
}

/// The wait a `hold=<ms>` marker asks for.
fn hold_delay(marker: &str) -> Option<Duration> {
    marker.strip_prefix(MARKER_HOLD)?.parse().ok().map(Duration::from_millis)
}

/// A body sent as it is.
fn whole(body: Bytes) -> Body {
    Full::new(body).map_err(|never| match never {}).boxed_unsync()
}

/// The first half of `body`, then an error that closes the connection: the response head
/// still announces the whole length.
fn cut_short(body: Bytes) -> Body {
    let half = body.slice(..body.len() / 2);
    let frames = stream::once(async move { Ok(Frame::data(half)) }).chain(stream::once(async {
        tokio::time::sleep(CUT_PAUSE).await;
        Err(io::Error::other("fault: the body is cut short"))
    }));
    StreamBody::new(frames).boxed_unsync()
}

/// A 200 whose body is `length` bytes, with no `Content-Length` (so sent in chunks): the
/// start of a page, then filler records, made piece by piece as they are written (never held
/// whole). hyper stops asking for pieces when the client goes away.
fn oversized(length: u64) -> Response<Body> {
    const RECORD: &[u8] = br#"{"id":"cmp_filler","name":"Filler"},"#;
    const OPENING: &[u8] = b"{\"data\":[";
    let filler = Bytes::from(RECORD.repeat(64 * 1024 / RECORD.len() + 1));
    let frames = stream::unfold(0u64, move |sent| {
        let piece = if sent == 0 { Bytes::from_static(OPENING) } else { filler.clone() };
        async move {
            if sent >= length {
                return None;
            }
            let take = usize::try_from(length - sent).unwrap_or(usize::MAX).min(piece.len());
            Some((Ok(Frame::data(piece.slice(..take))), sent + take as u64))
        }
    });
    let mut response = Response::new(StreamBody::new(frames).boxed_unsync());
    *response.status_mut() = StatusCode::OK;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response.headers_mut().insert(CONNECTION, HeaderValue::from_static("close"));
    response
}

#[cfg(test)]
mod tests;
