//! `GET /oauth2/authorize` (API Part 4.2, RFC 6749 section 4.1.1).
//!
//! Every parameter of API Part 4.2 is required and checked. While the client or the redirect URI
//! is in doubt the answer is a 400 page, never a redirect (RFC 6749 section 4.1.2.1); after
//! that, errors go back to the redirect URI with `error`, `state` and `iss`. A valid request is
//! approved at once for the user its `login_hint` names (one of the server's users), or else
//! the test user: the user agent is sent back with `code`, `state` and `iss` (RFC 9207).

use std::collections::HashMap;

use url::Url;
use wiremock::Request;

use super::super::form::printable;
use super::super::hostile::Hostile;
use super::super::reply::Answer;
use super::super::secrets::random_value;
use super::grants::PendingCode;
use super::{AuthServer, granted_scopes};

/// Why an authorization request failed.
enum Failure {
    /// The client or redirect URI cannot be trusted: a 400 page for the user.
    Page(&'static str),
    /// An error sent back to the client through the redirect URI.
    Redirect { error: &'static str, description: String },
}

fn invalid_request(description: impl Into<String>) -> Failure {
    Failure::Redirect { error: "invalid_request", description: description.into() }
}

/// The query string; a parameter given twice is remembered as repeated.
struct Query {
    values: HashMap<String, String>,
    repeated: Option<String>,
}

impl Query {
    fn parse(request: &Request) -> Self {
        let mut values = HashMap::new();
        let mut repeated = None;
        for (name, value) in request.url.query_pairs() {
            if values.insert(name.to_string(), value.into_owned()).is_some() {
                repeated.get_or_insert_with(|| name.into_owned());
            }
        }
        Query { values, repeated }
    }

    /// A parameter's value; empty counts as absent.
    fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str).filter(|v| !v.is_empty())
    }

    fn is_repeated(&self, name: &str) -> bool {
        self.repeated.as_deref() == Some(name)
    }
}

impl AuthServer {
    pub(super) fn authorize(&self, request: &Request) -> Answer {
        let query = Query::parse(request);
        // The redirect target must be known before anything can be redirected.
        let (client_id, redirect) = match self.trusted_redirect(&query) {
            Ok(found) => found,
            Err(message) => return error_page(message),
        };
        let state = query.get("state");
        match self.approve(&query, client_id) {
            Ok((code, user)) => self.redirect(redirect, &[("code", &code)], state).for_user(&user),
            Err(Failure::Redirect { error, description }) => {
                self.redirect(redirect, &[("error", error), ("error_description", &description)], state)
            }
            Err(Failure::Page(message)) => error_page(message),
        }
    }

    /// Checks `client_id` and `redirect_uri`; failures here are never redirected.
    fn trusted_redirect<'q>(&self, query: &'q Query) -> Result<(&'q str, Url), &'static str> {
        if query.is_repeated("client_id") || query.is_repeated("redirect_uri") {
            return Err("the client_id or redirect_uri parameter is repeated");
        }
        let client_id = query.get("client_id").ok_or("the client_id parameter is missing")?;
        let client = self.clients.get(client_id).ok_or("the client is not registered")?;
        let redirect_uri = query.get("redirect_uri").ok_or("the redirect_uri parameter is missing")?;
        if !client.allows_redirect(redirect_uri) {
            return Err("the redirect_uri is not registered for this client");
        }
        let redirect = Url::parse(redirect_uri).map_err(|_| "the redirect_uri is not a URL")?;
        Ok((client_id, redirect))
    }

    /// Validates the rest of the request and issues a code for the test user.
    fn approve(&self, query: &Query, client_id: &str) -> Result<(String, String), Failure> {
        if let Some(name) = &query.repeated {
            return Err(invalid_request(format!("parameter {} is repeated", printable(name))));
        }
        match query.get("response_type") {
            None => return Err(invalid_request("missing parameter response_type")),
            Some("code") => {}
            Some(_) => {
                return Err(Failure::Redirect {
                    error: "unsupported_response_type",
                    description: "response_type must be code".into(),
                });
            }
        }
        let client = self.clients.get(client_id).ok_or(Failure::Page("the client is not registered"))?;
        let scope = query.get("scope").ok_or_else(|| invalid_request("missing parameter scope"))?;
        let scopes = granted_scopes(Some(scope), &client.scopes)
            .map_err(|e| Failure::Redirect { error: "invalid_scope", description: e.description })?;
        query.get("state").ok_or_else(|| invalid_request("missing parameter state"))?;
        let challenge = query
            .get("code_challenge")
            .ok_or_else(|| invalid_request("PKCE is required: missing parameter code_challenge"))?;
        if query.get("code_challenge_method") != Some("S256") {
            return Err(invalid_request("code_challenge_method must be S256"));
        }
        // A SHA-256 digest in unpadded base64url is 43 characters.
        if challenge.len() != 43
            || !challenge.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(invalid_request("code_challenge is not an S256 challenge"));
        }
        if self.settings.deny_authorization || self.hostile(Hostile::AccessDenied) {
            return Err(Failure::Redirect {
                error: "access_denied",
                description: "the user denied the request".into(),
            });
        }
        let subject = match query.get("login_hint") {
            None => self.settings.test_user.clone(),
            Some(hint) => {
                self.settings.users.iter().find(|user| *user == hint).cloned().ok_or_else(|| {
                    Failure::Redirect {
                        error: "access_denied",
                        description: "login_hint names no user of this server".into(),
                    }
                })?
            }
        };
        let code = random_value();
        let pending = PendingCode {
            client_id: client_id.to_owned(),
            redirect_uri: query.get("redirect_uri").unwrap_or_default().to_owned(),
            challenge: challenge.to_owned(),
            scopes,
            nonce: query.get("nonce").map(str::to_owned),
            subject: subject.clone(),
            expires_at: super::super::jwt::unix_now().saturating_add(self.settings.code_lifetime_secs),
        };
        self.shared.sessions().codes.insert(code.clone(), pending);
        Ok((code, subject))
    }

    /// 302 to the redirect URI with `params`, `state` (when the request had one) and `iss`
    /// (both as the [`Hostile`] switches say).
    fn redirect(&self, mut target: Url, params: &[(&str, &str)], state: Option<&str>) -> Answer {
        let (state, iss) = self.callback_state_and_iss(state);
        {
            let mut pairs = target.query_pairs_mut();
            for (name, value) in params {
                pairs.append_pair(name, value);
            }
            if let Some(state) = &state {
                pairs.append_pair("state", state);
            }
            if let Some(iss) = &iss {
                pairs.append_pair("iss", iss);
            }
        }
        Answer::new(302).header("location", target.as_str()).header("cache-control", "no-store")
    }
}

/// The 400 page shown to the user when the request cannot be redirected.
fn error_page(message: &'static str) -> Answer {
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Sign-in error</title></head>\
         <body><h1>Sign-in error</h1><p>{message}</p></body></html>"
    );
    Answer::new(400).header("cache-control", "no-store").body(body, "text/html; charset=utf-8")
}
