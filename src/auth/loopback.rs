//! The loopback redirect of native apps (RFC 8252 section 7.3): a one-shot HTTP listener on
//! `127.0.0.1` that receives the authorization callback.

use std::net::Ipv4Addr;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use futures::future::{self, Either};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use super::AuthorizationRequest;
use super::authorization_code::CallbackParams;
use super::pkce::constant_time_eq;
use crate::Error;
use crate::error::CallbackError;

/// The path of the redirect URI.
const CALLBACK_PATH: &str = "/callback";
/// How long a connection may take to send its request head.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest request head read.
const MAX_HEAD: usize = 16 * 1024;

const DONE_PAGE: &str = "<!doctype html><html><head><meta charset=\"utf-8\"><title>Sign-in complete</title></head>\
<body><p>Sign-in complete. You can close this window and return to the application.</p></body></html>";
const FAILED_PAGE: &str = "<!doctype html><html><head><meta charset=\"utf-8\"><title>Sign-in not completed</title></head>\
<body><p>Sign-in was not completed. You can close this window and return to the application.</p></body></html>";

/// Receives the redirect back from the authorization server on `http://127.0.0.1:<port>/callback`
/// (RFC 8252: a loopback IP literal, a port the operating system picks).
///
/// It answers exactly one callback, the pending sign-in's own (see
/// [`wait_for_callback_of`](Self::wait_for_callback_of)), with a small page telling the user
/// the window can be closed, then stops listening. Requests to other paths get a 404, and
/// callbacks of no pending sign-in a 400; neither counts.
///
/// ```no_run
/// # async fn run(request: business_records::auth::AuthorizationRequest) -> Result<(), business_records::Error> {
/// use business_records::auth::LoopbackRedirect;
/// use std::time::Duration;
///
/// let redirect = LoopbackRedirect::bind().await?.timeout(Duration::from_secs(120));
/// println!("redirect URI: {}", redirect.redirect_uri());
/// // ... the flow's `authorize_url()` made `request` ...
/// let callback = redirect.wait_for_callback_of(&request).await?;
/// # let _ = callback; Ok(()) }
/// ```
#[derive(Debug)]
pub struct LoopbackRedirect {
    listener: TcpListener,
    port: u16,
    redirect_uri: String,
    timeout: Duration,
}

impl LoopbackRedirect {
    /// How long [`wait_for_callback_of`](Self::wait_for_callback_of) waits unless told otherwise.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

    /// Listens on `127.0.0.1` on a free port.
    ///
    /// # Errors
    ///
    /// [`Error::Callback`] with [`CallbackError::Listener`] when no port can be bound.
    pub async fn bind() -> Result<Self, Error> {
        Self::bind_port(0).await
    }

    /// Listens on `127.0.0.1:port`, for authorization servers that register one exact redirect
    /// URI; `0` picks a free port.
    ///
    /// # Errors
    ///
    /// [`Error::Callback`] with [`CallbackError::Listener`] when the port cannot be bound.
    pub async fn bind_port(port: u16) -> Result<Self, Error> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, port))
            .await
            .map_err(|e| listener_error("bind 127.0.0.1", e))?;
        let port = listener.local_addr().map_err(|e| listener_error("read the bound port", e))?.port();
        Ok(LoopbackRedirect {
            listener,
            port,
            redirect_uri: format!("http://127.0.0.1:{port}{CALLBACK_PATH}"),
            timeout: Self::DEFAULT_TIMEOUT,
        })
    }

    /// How long to wait for the callback. Default: [`DEFAULT_TIMEOUT`](Self::DEFAULT_TIMEOUT)
    /// (five minutes).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The redirect URI to register and to pass to
    /// [`AuthorizationCodeFlow::new`](super::AuthorizationCodeFlow::new):
    /// `http://127.0.0.1:<port>/callback`.
    pub fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Waits for the callback of `request` (the sign-in started with this redirect URI) and
    /// returns its full URL (`http://127.0.0.1:<port>/callback?code=...&state=...`), ready for
    /// [`AuthorizationCodeFlow::exchange`](super::AuthorizationCodeFlow::exchange).
    ///
    /// Only a request to the callback path carrying `request`'s `state` (compared in constant
    /// time) and no parameter of a callback twice ends the wait, with a code or with `error=`
    /// (the user declined). Any other request there (a callback forged by another local
    /// process, a stale browser tab) is answered with a 400 and the wait goes on, up to the
    /// [`timeout`](Self::timeout).
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), business_records::Error> {
    /// use business_records::auth::{AuthorizationCodeFlow, LoopbackRedirect};
    ///
    /// let redirect = LoopbackRedirect::bind().await?;
    /// let flow = AuthorizationCodeFlow::new("https://auth.example.com", "my-app", redirect.redirect_uri())?;
    /// let request = flow.authorize_url();
    /// println!("open {}", request.url());
    /// let callback = redirect.wait_for_callback_of(&request).await?;
    /// let tokens = flow.exchange(request, &callback).await?;
    /// # let _ = tokens; Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Callback`] with [`CallbackError::Timeout`] when the callback does not arrive in
    /// time, or [`CallbackError::Listener`] when accepting connections fails.
    pub async fn wait_for_callback_of(self, request: &AuthorizationRequest) -> Result<String, Error> {
        let state = Arc::<str>::from(request.state());
        let (found, mut callbacks) = mpsc::channel::<String>(1);
        // Ends only on an accept error: it is dropped once a callback arrives.
        let accept = async {
            loop {
                let stream = match self.listener.accept().await {
                    Ok((stream, _)) => stream,
                    Err(e) => return listener_error("accept a connection", e),
                };
                let (found, state, port) = (found.clone(), state.clone(), self.port);
                tokio::spawn(async move {
                    if let Some(url) = serve(stream, port, &state).await {
                        let _ = found.send(url).await;
                    }
                });
            }
        };
        // `found` lives as long as this call: `recv` gives a callback, never `None`.
        match tokio::time::timeout(self.timeout, future::select(pin!(accept), pin!(callbacks.recv()))).await {
            Ok(Either::Left((error, _))) => Err(error),
            Ok(Either::Right((url, _))) => {
                tracing::debug!("authorization callback received");
                url.ok_or_else(|| CallbackError::Listener { action: "keep listening", source: None }.into())
            }
            Err(_) => Err(CallbackError::Timeout(self.timeout).into()),
        }
    }
}

fn listener_error(action: &'static str, error: std::io::Error) -> Error {
    CallbackError::Listener { action, source: Some(error) }.into()
}

/// Answers one connection; returns the callback URL when this was the callback: the one
/// carrying `state`, once.
async fn serve(mut stream: TcpStream, port: u16, state: &str) -> Option<String> {
    let head = tokio::time::timeout(READ_TIMEOUT, read_head(&mut stream)).await.ok()??;
    let mut request_line = head.split(' ');
    let (method, target) = (request_line.next()?, request_line.next()?);
    let ours = |got: &str| constant_time_eq(got.as_bytes(), state.as_bytes());
    let callback =
        CallbackParams::parse(target).ok().filter(|params| params.state.as_deref().is_some_and(ours));
    let (status, body) = match callback {
        _ if method != "GET" => ("405 Method Not Allowed", "method not allowed"),
        _ if target.split('?').next() != Some(CALLBACK_PATH) => ("404 Not Found", "not found"),
        // Another sign-in's, a forged one, or one with a parameter twice: no one's.
        None => ("400 Bad Request", "not the callback of the pending sign-in"),
        Some(params) if params.error.is_some() || params.code.is_none() => ("200 OK", FAILED_PAGE),
        Some(_) => ("200 OK", DONE_PAGE),
    };
    // The answer closes the connection; a page is never cached and sends no referrer on.
    let kind = if body.starts_with('<') { "text/html" } else { "text/plain" };
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {kind}; charset=utf-8\r\ncontent-length: {}\r\n\
         cache-control: no-store\r\nreferrer-policy: no-referrer\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
    // The pending sign-in's own callback, with a code or an error, ends the wait.
    (status == "200 OK").then(|| format!("http://127.0.0.1:{port}{target}"))
}

/// Reads up to the blank line that ends the request head.
async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::with_capacity(1024);
    let mut buffer = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let read = stream.read(&mut buffer).await.ok()?;
        if read == 0 || head.len() + read > MAX_HEAD {
            return None;
        }
        head.extend_from_slice(&buffer[..read]);
    }
    String::from_utf8(head).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(port: u16, target: &str) -> String {
        let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).await.expect("connect");
        let request = format!("GET {target} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n\r\n");
        stream.write_all(request.as_bytes()).await.expect("write");
        let mut response = String::new();
        stream.read_to_string(&mut response).await.expect("read");
        response
    }

    #[tokio::test]
    async fn one_callback_is_returned_and_answered_with_a_page() {
        let redirect = LoopbackRedirect::bind().await.expect("bind");
        let port = redirect.port();
        assert_eq!(redirect.redirect_uri(), format!("http://127.0.0.1:{port}/callback"));
        let waiting = tokio::spawn(async move { redirect.wait_for_callback_of(&request("s1")).await });

        assert!(get(port, "/favicon.ico").await.starts_with("HTTP/1.1 404"));
        assert!(get(port, "/callback").await.starts_with("HTTP/1.1 400"));
        assert!(get(port, "/callback?code=a&code=b").await.starts_with("HTTP/1.1 400"), "a repeated code");
        // A connection that never sends anything does not hold the listener up.
        let _silent = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).await.expect("connect");
        let page = get(port, "/callback?code=c1&state=s1").await;
        assert!(page.starts_with("HTTP/1.1 200"), "{page}");
        assert!(page.contains("You can close this window"));
        assert!(!page.contains("c1"), "the page must not echo the code");

        let url = waiting.await.expect("task").expect("callback");
        assert_eq!(url, format!("http://127.0.0.1:{port}/callback?code=c1&state=s1"));
    }

    #[tokio::test]
    async fn an_error_callback_ends_the_wait_with_a_failure_page() {
        let redirect = LoopbackRedirect::bind().await.expect("bind");
        let port = redirect.port();
        let waiting = tokio::spawn(async move { redirect.wait_for_callback_of(&request("s")).await });
        let page = get(port, "/callback?error=access_denied&state=s").await;
        assert!(page.contains("not completed"), "{page}");
        let url = waiting.await.expect("task").expect("callback");
        assert!(url.ends_with("/callback?error=access_denied&state=s"));
    }

    /// A fixed-state request, as `AuthorizationCodeFlow::authorize_url` makes them.
    fn request(state: &str) -> AuthorizationRequest {
        serde_json::from_value(serde_json::json!({
            "url": "https://auth.example.com/authorize", "state": state, "verifier": "v".repeat(43),
        }))
        .expect("a request")
    }

    #[tokio::test]
    async fn only_the_pending_sign_ins_own_callback_ends_the_wait() {
        let redirect = LoopbackRedirect::bind().await.expect("bind");
        let port = redirect.port();
        let waiting = tokio::spawn(async move { redirect.wait_for_callback_of(&request("s1")).await });
        for forged in [
            "/callback?error=access_denied&state=forged",
            "/callback?code=c&state=s",
            "/callback?code=c",
            "/callback?code=c&state=s1&state=s1",
            "/callback?error=access_denied",
        ] {
            assert!(get(port, forged).await.starts_with("HTTP/1.1 400"), "{forged}");
        }
        assert!(!waiting.is_finished(), "the wait goes on");
        let page = get(port, "/callback?code=c1&state=s1").await;
        assert!(page.starts_with("HTTP/1.1 200") && page.contains("You can close this window"), "{page}");
        let url = waiting.await.expect("task").expect("callback");
        assert_eq!(url, format!("http://127.0.0.1:{port}/callback?code=c1&state=s1"));
    }

    #[tokio::test]
    async fn waiting_times_out() {
        let redirect = LoopbackRedirect::bind().await.expect("bind").timeout(Duration::from_millis(100));
        let err = redirect.wait_for_callback_of(&request("s")).await.expect_err("nothing arrives");
        assert!(matches!(&err, Error::Callback(e) if matches!(**e, CallbackError::Timeout(_))), "{err:?}");
        assert_eq!(err.to_string(), "no authorization callback arrived within 100ms");
    }
}
