//! A small HTTP/1.1 proxy in front of a server (the API, the authorization server) that
//! breaks connections and holds requests on purpose.
//!
//! A wiremock responder can only answer; it cannot close a connection early, nor wait before
//! it acts. For [`Fault::DropConnection`](super::Fault::DropConnection) and
//! [`Fault::CutBody`](super::Fault::CutBody) the server marks its response with the
//! [`MARKER_HEADER`] and this proxy, which relays every request and response, carries
//! the fault out on the real TCP connection: it closes the client's connection without sending
//! anything, or after the response head and half of the body; for
//! [`Fault::OversizedBody`](super::Fault::OversizedBody) it sends a body of the size asked for,
//! generated as it is written. For a slow token answer
//! ([`MARKER_HOLD`]) the server answers at once without processing the request; the proxy
//! waits, and if the client is still connected sends the request again with the
//! [`REPLAY_HEADER`], which the server processes. Unmarked responses are relayed unchanged,
//! keep-alive included.
//!
//! The proxy runs on a thread of its own with a single-threaded tokio runtime (as wiremock's
//! servers do), so it works whatever runtime the test uses, and stops when dropped. It handles
//! what the API serves: requests without a body or with `Content-Length`, responses framed by
//! `Content-Length` or by the end of the connection.

use std::io;
use std::net::SocketAddr;

use futures::future;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

use super::faults::{MARKER_CUT, MARKER_DROP, MARKER_HEADER, MARKER_HOLD, MARKER_OVERSIZE, REPLAY_HEADER};

/// Largest request or response head accepted.
const MAX_HEAD: usize = 64 * 1024;

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
        std::thread::Builder::new().name("reference-server-proxy".into()).spawn(move || {
            runtime.block_on(async move {
                let Ok(listener) = TcpListener::from_std(listener) else { return };
                let accept = async move {
                    loop {
                        match listener.accept().await {
                            Ok((client, _)) => {
                                tokio::spawn(relay(client, upstream, replay_secret.clone()));
                            }
                            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(5)).await,
                        }
                    }
                };
                let accept: std::pin::Pin<Box<dyn Future<Output = ()> + Send>> = Box::pin(accept);
                // Runs until the handle is dropped (or its sender is gone).
                let _ = future::select(stopped, accept).await;
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

/// Relays one client connection, request by request.
async fn relay(mut client: TcpStream, upstream: SocketAddr, replay_secret: String) {
    let _ = client.set_nodelay(true);
    let mut from_client = Vec::new();
    let mut server: Option<(TcpStream, Vec<u8>)> = None;
    loop {
        let Some(request) = read_message(&mut client, &mut from_client, None).await else { return };
        let (server_stream, from_server) = match &mut server {
            Some(connection) => connection,
            None => {
                let Ok(stream) = TcpStream::connect(upstream).await else { return };
                let _ = stream.set_nodelay(true);
                server.insert((stream, Vec::new()))
            }
        };
        if server_stream.write_all(&request.bytes).await.is_err() {
            return;
        }
        let Some(mut response) = read_message(server_stream, from_server, Some(&request)).await else {
            return;
        };
        let hold = response.header(MARKER_HEADER).and_then(|marker| hold_delay(&marker));
        if let Some(delay) = hold {
            tokio::time::sleep(delay).await;
            if client_gone(&client, &mut from_client) {
                return;
            }
            let replay = request.with_header(REPLAY_HEADER, &replay_secret);
            if server_stream.write_all(&replay).await.is_err() {
                return;
            }
            let Some(answer) = read_message(server_stream, from_server, Some(&request)).await else {
                return;
            };
            response = answer;
        }
        match response.header(MARKER_HEADER).as_deref() {
            Some(MARKER_DROP) => return,
            Some(MARKER_CUT) => {
                let bytes = response.without_header(MARKER_HEADER);
                let cut = bytes.len() - response.body_len / 2 - response.body_len % 2;
                let _ = client.write_all(&bytes[..cut]).await;
                let _ = client.flush().await;
                return;
            }
            Some(marker) if marker.starts_with(MARKER_OVERSIZE) => {
                let length = marker[MARKER_OVERSIZE.len()..].parse().unwrap_or(0);
                let _ = send_oversized(&mut client, length).await;
                return;
            }
            _ => {
                if client.write_all(&response.bytes).await.is_err() {
                    return;
                }
            }
        }
        if request.closes() || response.closes() {
            return;
        }
    }
}

/// The wait a `hold=<ms>` marker asks for.
fn hold_delay(marker: &str) -> Option<std::time::Duration> {
    marker.strip_prefix(MARKER_HOLD)?.parse().ok().map(std::time::Duration::from_millis)
}

/// Whether the client has closed its connection (or reset it). Bytes it has sent meanwhile
/// are kept in `buffer`.
fn client_gone(client: &TcpStream, buffer: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 4096];
    loop {
        match client.try_read(&mut chunk) {
            Ok(0) => return true,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
            Err(_) => return true,
        }
    }
}

/// Sends a 200 whose body is `length` bytes, framed by the end of the connection: the start of
/// a page, then filler records, made chunk by chunk as they are written (never held whole).
/// Stops early when the client goes away.
async fn send_oversized(client: &mut TcpStream, length: u64) -> io::Result<()> {
    const HEAD: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n";
    const RECORD: &[u8] = br#"{"id":"cmp_filler","name":"Filler"},"#;
    const OPENING: &[u8] = b"{\"data\":[";
    client.write_all(HEAD).await?;
    let mut filler = Vec::with_capacity(64 * 1024 + RECORD.len());
    while filler.len() < 64 * 1024 {
        filler.extend_from_slice(RECORD);
    }
    let mut sent = 0u64;
    while sent < length {
        let piece: &[u8] = if sent == 0 { OPENING } else { &filler };
        let take = usize::try_from(length - sent).unwrap_or(usize::MAX).min(piece.len());
        client.write_all(&piece[..take]).await?;
        sent += take as u64;
    }
    client.flush().await
}

/// One request or response: its bytes as received, and what the relay needs to know.
struct Message {
    bytes: Vec<u8>,
    head_len: usize,
    body_len: usize,
    method: Option<String>,
}

impl Message {
    fn head(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.head_len]).unwrap_or("")
    }

    /// The first value of header `name`, trimmed.
    fn header(&self, name: &str) -> Option<String> {
        header_value(self.head(), name)
    }

    fn closes(&self) -> bool {
        self.header("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"))
    }

    /// The message with a field line `name: value` added after the start line.
    fn with_header(&self, name: &str, value: &str) -> Vec<u8> {
        let start_line = self.head().find("\r\n").map_or(0, |i| i + 2);
        let mut out = Vec::with_capacity(self.bytes.len() + name.len() + value.len() + 4);
        out.extend_from_slice(&self.bytes[..start_line]);
        out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
        out.extend_from_slice(&self.bytes[start_line..]);
        out
    }

    /// The message with every field line of `name` removed.
    fn without_header(&self, name: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.bytes.len());
        for line in self.head().split_inclusive("\r\n") {
            let is_named =
                line.split_once(':').is_some_and(|(field, _)| field.trim().eq_ignore_ascii_case(name));
            if !is_named {
                out.extend_from_slice(line.as_bytes());
            }
        }
        out.extend_from_slice(&self.bytes[self.head_len..]);
        out
    }
}

fn header_value(head: &str, name: &str) -> Option<String> {
    head.split("\r\n").skip(1).find_map(|line| {
        let (field, value) = line.split_once(':')?;
        field.trim().eq_ignore_ascii_case(name).then(|| value.trim().to_owned())
    })
}

/// Reads one message from `stream`, using and refilling `buffer`. A response is read as the
/// answer to `request`. `None` at the end of the stream or on anything unsupported.
async fn read_message(
    stream: &mut TcpStream,
    buffer: &mut Vec<u8>,
    request: Option<&Message>,
) -> Option<Message> {
    let head_len = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        if buffer.len() > MAX_HEAD || !fill(stream, buffer).await {
            return None;
        }
    };
    let head = std::str::from_utf8(&buffer[..head_len]).ok()?.to_owned();
    if header_value(&head, "transfer-encoding").is_some() {
        return None;
    }
    let first_line = head.split("\r\n").next().unwrap_or("");
    let content_length = match header_value(&head, "content-length") {
        Some(value) => Some(value.parse::<usize>().ok()?),
        None => None,
    };
    let body_len = match request {
        // A request without Content-Length has no body.
        None => content_length.unwrap_or(0),
        Some(request) => {
            let status = first_line.split(' ').nth(1).and_then(|s| s.parse::<u16>().ok()).unwrap_or(0);
            let bodiless = request.method.as_deref() == Some("HEAD")
                || (100..200).contains(&status)
                || status == 204
                || status == 304;
            match (bodiless, content_length) {
                (true, _) => 0,
                (false, Some(length)) => length,
                // Delimited by the end of the connection.
                (false, None) => {
                    while fill(stream, buffer).await {}
                    buffer.len() - head_len
                }
            }
        }
    };
    let method = request.is_none().then(|| first_line.split(' ').next().unwrap_or("").to_owned());
    while buffer.len() < head_len + body_len {
        if !fill(stream, buffer).await {
            return None;
        }
    }
    let bytes: Vec<u8> = buffer.drain(..head_len + body_len).collect();
    Some(Message { bytes, head_len, body_len, method })
}

/// Reads more bytes into `buffer`; false at the end of the stream or on an error.
async fn fill(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 16 * 1024];
    match stream.read(&mut chunk).await {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buffer.extend_from_slice(&chunk[..n]);
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(raw: &str) -> Message {
        let head_len = raw.find("\r\n\r\n").map_or(raw.len(), |i| i + 4);
        Message {
            bytes: raw.as_bytes().to_vec(),
            head_len,
            body_len: raw.len() - head_len,
            method: Some("GET".into()),
        }
    }

    #[test]
    fn headers_are_read_and_removed_case_insensitively() {
        let m = message(
            "HTTP/1.1 200 OK\r\nX-Reference-Fault: cut\r\ncontent-length: 2\r\nConnection: Close\r\n\r\n{}",
        );
        assert_eq!(m.header(MARKER_HEADER).as_deref(), Some("cut"));
        assert!(m.closes());
        let stripped = String::from_utf8(m.without_header(MARKER_HEADER)).unwrap();
        assert_eq!(stripped, "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nConnection: Close\r\n\r\n{}");
        let request = message("POST /oauth2/token HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\nab");
        let replay = String::from_utf8(request.with_header("x-a", "1")).unwrap();
        assert_eq!(replay, "POST /oauth2/token HTTP/1.1\r\nx-a: 1\r\nhost: x\r\ncontent-length: 2\r\n\r\nab");
        assert_eq!(hold_delay("hold=1500"), Some(std::time::Duration::from_millis(1500)));
        assert_eq!(hold_delay("cut"), None);
    }
}
