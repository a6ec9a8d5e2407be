//! Playing the browser of a sign-in: [`ReferenceServer::approve`].

use std::io;
use std::net::{IpAddr, SocketAddr};

use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Bytes;
use hyper::header::{HOST, LOCATION};
use url::{Host, Position, Url};

use super::{Error, ReferenceServer, proxy};

/// How much of a refusal's body is read.
const MAX_PAGE: usize = 64 * 1024;
/// How much of it goes into the error.
const MAX_DESCRIPTION: usize = 200;

impl ReferenceServer {
    /// Plays the browser of a sign-in (Authorization Code with PKCE): sends the authorization
    /// request `authorize_url` (as a client builds it) to the authorization server over HTTP,
    /// which signs in the user its `login_hint` names (the [`test_user`](Self::test_user)
    /// without one), and returns the URL the browser would be sent back to: the redirect URI
    /// with `code`, `state` and `iss`, or with `error` and `error_description` (RFC 6749
    /// section 4.1.2.1) when the request is wrong past its client and redirect URI. The
    /// request is journalled and takes the faults of [`Endpoint::Authorize`](crate::Endpoint::Authorize).
    ///
    /// ```no_run
    /// # async fn run(server: business_records_reference_server::ReferenceServer, authorize_url: String)
    /// # -> Result<(), business_records_reference_server::Error> {
    /// let callback = server.approve(&authorize_url).await?;
    /// assert!(callback.contains("code="));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// - [`Error::InvalidArgument`] (`authorize_url`): not a URL, or not this server's
    ///   authorization endpoint ([`authorize_url`](Self::authorize_url)).
    /// - [`Error::Refused`]: the server answered without sending the browser back, with what
    ///   its page says: a 400 when the client is not registered or the redirect URI is not
    ///   one of the client's (RFC 6749 section 4.1.2.1), or an injected fault.
    /// - [`Error::Io`]: the connection failed (e.g. an injected dropped connection).
    pub async fn approve(&self, authorize_url: &str) -> Result<String, Error> {
        let invalid = |reason: String| Error::invalid("authorize_url", reason);
        let url = Url::parse(authorize_url).map_err(|e| invalid(format!("not a URL: {e}")))?;
        let endpoint = self.authorize_url();
        let ours = Url::parse(&endpoint).map_err(|e| invalid(format!("no endpoint to compare with: {e}")))?;
        let address = match (url.host(), url.port()) {
            (Some(Host::Ipv4(ip)), Some(port)) => SocketAddr::new(IpAddr::V4(ip), port),
            _ => return Err(invalid(format!("not this server's authorization endpoint {endpoint}"))),
        };
        if url.origin() != ours.origin() || url.path() != ours.path() {
            return Err(invalid(format!("not this server's authorization endpoint {endpoint}")));
        }
        let request = hyper::Request::get(&url[Position::BeforePath..Position::AfterQuery])
            .header(HOST, address.to_string())
            .body(Full::new(Bytes::new()))
            .map_err(|e| invalid(format!("not a request target: {e}")))?;
        let mut sender = proxy::connect(address).await.map_err(Error::Io)?;
        let response = sender.send_request(request).await.map_err(|e| Error::Io(io::Error::other(e)))?;
        let status = response.status().as_u16();
        if response.status().is_redirection()
            && let Some(location) = response.headers().get(LOCATION).and_then(|v| v.to_str().ok())
        {
            return Ok(location.to_owned());
        }
        let body = Limited::new(response.into_body(), MAX_PAGE).collect().await;
        let body = body.map(|b| b.to_bytes()).unwrap_or_default();
        Err(Error::Refused { status, description: describe(&String::from_utf8_lossy(&body)) })
    }
}

/// What a refusal says: a JSON error's `error_description`, an HTML page's paragraph, or the
/// start of the text.
fn describe(body: &str) -> String {
    let json = serde_json::from_str::<serde_json::Value>(body).ok();
    let described = json.as_ref().and_then(|json| json["error_description"].as_str());
    let paragraph = body.split_once("<p>").and_then(|(_, rest)| rest.split_once("</p>")).map(|(p, _)| p);
    described.or(paragraph).unwrap_or(body).chars().take(MAX_DESCRIPTION).collect()
}
