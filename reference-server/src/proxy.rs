//! A small HTTP/1.1 proxy in front of a server (the API, the authorization server) that
//! breaks connections and holds requests on purpose.
//!
//! A wiremock responder can only answer with a whole response: it cannot close a connection
//! once it has chosen a fault, cut a body short, stream a body larger than memory, nor wait
//! before the request is processed. For [`Fault::DropConnection`](super::Fault::DropConnection)
//! and [`Fault::CutBody`](super::Fault::CutBody) the server marks its response with the
//! [`MARKER_HEADER`] and this proxy, which relays every request and response, carries the fault
//! out on the client's connection: it closes it without sending anything, or after the response
//! head and half of the body; for [`Fault::OversizedBody`](super::Fault::OversizedBody) and a
//! [`Reply::repeated`](super::Reply::repeated) it sends a body [`Generated`] as it is written.
//! For a slow token answer
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

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures::future::ready;
use futures::{StreamExt as _, stream};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt as _, Full, StreamBody};
use hyper::body::{Bytes, Frame, Incoming};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{CONNECTION, CONTENT_LENGTH, HeaderValue};
use hyper::http::{request, response};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Mutex, oneshot};

/// The response header by which a server asks the proxy to break a connection.
pub(crate) const MARKER_HEADER: &str = "x-reference-fault";
/// Marker value: close the connection without answering.
pub(crate) const MARKER_DROP: &str = "drop";
/// Marker value: close the connection half-way through the body.
pub(crate) const MARKER_CUT: &str = "cut";
/// Marker value prefix: wait this many milliseconds, then send the request again (`hold=<ms>`).
pub(crate) const MARKER_HOLD: &str = "hold=";
/// The request header by which the proxy sends a held request again: the server's replay
/// secret (so no client can skip a fault), a space, and the hold marker.
pub(crate) const REPLAY_HEADER: &str = "x-reference-replay";
/// Marker value prefix of a [`Generated`] body.
const MARKER_GENERATE: &str = "generate:";

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
        let (mut answer, mut answer_body) = self.forward(&head, body.clone(), None).await?;
        if let Some(hold) = marker(&answer).filter(|m| m.starts_with(MARKER_HOLD)).map(str::to_owned) {
            let delay = hold[MARKER_HOLD.len()..].parse().map(Duration::from_millis).unwrap_or_default();
            // Dropped with the connection if the client leaves meanwhile: then never replayed.
            tokio::time::sleep(delay).await;
            (answer, answer_body) = self.forward(&head, body, Some(&hold)).await?;
        }
        let marker = answer.headers.remove(MARKER_HEADER);
        let marker = marker.as_ref().and_then(|value| value.to_str().ok()).unwrap_or_default();
        if let Some(generated) = marker.strip_prefix(MARKER_GENERATE).and_then(Generated::parse) {
            answer.headers.remove(CONTENT_LENGTH);
            answer.headers.insert(CONNECTION, HeaderValue::from_static("close"));
            return Ok(Response::from_parts(answer, generated.into_body()));
        }
        match marker {
            MARKER_DROP => Err(io::Error::other("fault: the connection is dropped")),
            MARKER_CUT => Ok(Response::from_parts(answer, cut_short(answer_body))),
            _ => Ok(Response::from_parts(answer, whole(answer_body))),
        }
    }

    /// Sends the request to the server behind (sent again after the `hold` marker it was held
    /// for) and reads its whole answer.
    async fn forward(
        &self,
        head: &request::Parts,
        body: Bytes,
        hold: Option<&str>,
    ) -> io::Result<(response::Parts, Bytes)> {
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = head.method.clone();
        *request.uri_mut() = head.uri.clone();
        *request.version_mut() = head.version;
        *request.headers_mut() = head.headers.clone();
        if let Some(hold) = hold {
            let value =
                HeaderValue::from_str(&format!("{} {hold}", self.replay_secret)).map_err(io::Error::other)?;
            request.headers_mut().insert(REPLAY_HEADER, value);
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
pub(crate) async fn connect(upstream: SocketAddr) -> io::Result<SendRequest<Full<Bytes>>> {
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

/// A body made as it is written, never held whole: `head`, `unit` `times` times, then `tail`,
/// at most `limit` bytes. hyper stops asking for pieces when the client goes away.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Generated {
    pub(crate) head: Vec<u8>,
    pub(crate) unit: Vec<u8>,
    pub(crate) times: u64,
    pub(crate) tail: Vec<u8>,
    pub(crate) limit: Option<u64>,
}

impl Generated {
    /// The marker that asks the proxy for this body.
    pub(crate) fn marker(&self) -> String {
        let [head, unit, tail] =
            [&self.head, &self.unit, &self.tail].map(|bytes| URL_SAFE_NO_PAD.encode(bytes));
        let limit = self.limit.map(|limit| limit.to_string()).unwrap_or_default();
        format!("{MARKER_GENERATE}{head}.{unit}.{}.{tail}.{limit}", self.times)
    }

    /// The body a marker asks for (after [`MARKER_GENERATE`]).
    fn parse(marker: &str) -> Option<Generated> {
        let [head, unit, times, tail, limit] = marker.splitn(5, '.').collect::<Vec<_>>().try_into().ok()?;
        let bytes = |text: &str| URL_SAFE_NO_PAD.decode(text).ok();
        let limit = if limit.is_empty() { None } else { Some(limit.parse().ok()?) };
        Some(Generated {
            head: bytes(head)?,
            unit: bytes(unit)?,
            times: times.parse().ok()?,
            tail: bytes(tail)?,
            limit,
        })
    }

    fn into_body(self) -> Body {
        // Units go out about 64 KiB at a time.
        let per_piece = (64 * 1024 / self.unit.len().max(1)).max(1);
        let unit_len = self.unit.len();
        let piece = Bytes::from(self.unit.repeat(per_piece));
        let times = if unit_len == 0 { 0 } else { self.times };
        let units = stream::unfold(times, move |left| {
            let n = left.min(per_piece as u64);
            ready((left > 0).then(|| (piece.slice(..n as usize * unit_len), left - n)))
        });
        let pieces = stream::once(ready(Bytes::from(self.head)))
            .chain(units)
            .chain(stream::once(ready(Bytes::from(self.tail))));
        let limit = self.limit.unwrap_or(u64::MAX);
        let frames = pieces.scan(0u64, move |sent, piece| {
            let take = usize::try_from(limit - *sent).unwrap_or(usize::MAX).min(piece.len());
            *sent += take as u64;
            ready((take > 0 || *sent < limit).then(|| Ok(Frame::data(piece.slice(..take)))))
        });
        StreamBody::new(frames).boxed_unsync()
    }
}

#[cfg(test)]
mod tests;
