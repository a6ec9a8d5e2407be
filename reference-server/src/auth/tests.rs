//! The user side of the authorization server, over HTTP.

use std::collections::HashMap;

use serde_json::Value;

use super::*;
use crate::ReferenceServer;

/// RFC 7636 appendix B.
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
const REDIRECT: &str = "http://127.0.0.1:8400/callback";

fn http() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

pub(crate) fn valid_params() -> Vec<(&'static str, String)> {
    vec![
        ("response_type", "code".into()),
        ("client_id", ReferenceServer::DEFAULT_PUBLIC_CLIENT_ID.into()),
        ("redirect_uri", REDIRECT.into()),
        ("scope", "openid api/read".into()),
        ("state", "s1".into()),
        ("code_challenge", CHALLENGE.into()),
        ("code_challenge_method", "S256".into()),
        ("nonce", "n1".into()),
    ]
}

/// The answer of `/oauth2/authorize`: the status, and the redirect's query when it redirected.
pub(crate) async fn authorize(
    server: &ReferenceServer,
    params: &[(&str, String)],
) -> (u16, Option<HashMap<String, String>>) {
    let response = http().get(server.authorize_url()).query(params).send().await.unwrap();
    let status = response.status().as_u16();
    let location = response.headers().get("location").map(|l| l.to_str().unwrap().to_owned());
    let query = location.map(|l| {
        assert!(l.starts_with(REDIRECT), "{l}");
        url::Url::parse(&l).unwrap().query_pairs().into_owned().collect()
    });
    (status, query)
}

pub(crate) async fn token(server: &ReferenceServer, form: &[(&str, &str)]) -> (u16, Value) {
    let response = http().post(server.token_url()).form(form).send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

async fn code(server: &ReferenceServer) -> String {
    let (status, query) = authorize(server, &valid_params()).await;
    assert_eq!(status, 302);
    query.unwrap()["code"].clone()
}

fn exchange_form<'a>(code: &'a str, verifier: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("grant_type", "authorization_code"),
        ("client_id", ReferenceServer::DEFAULT_PUBLIC_CLIENT_ID),
        ("code", code),
        ("redirect_uri", REDIRECT),
        ("code_verifier", verifier),
    ]
}

/// The claims of an ID token for the default public client, its RS256 signature checked
/// with the published key.
fn verify_id_token(server: &ReferenceServer, token: &str) -> Value {
    let jwk = &server.keys.current().signer.jwk().clone();
    let key = jsonwebtoken::DecodingKey::from_rsa_components(
        jwk["n"].as_str().unwrap(),
        jwk["e"].as_str().unwrap(),
    )
    .unwrap();
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
    validation.set_issuer(&[server.auth_url()]);
    validation.set_audience(&[ReferenceServer::DEFAULT_PUBLIC_CLIENT_ID]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    jsonwebtoken::decode::<Value>(token, &key, &validation).expect("a valid id token").claims
}

pub(crate) async fn sign_in(server: &ReferenceServer) -> Value {
    let code = code(server).await;
    let (status, body) = token(server, &exchange_form(&code, VERIFIER)).await;
    assert_eq!(status, 200, "{body}");
    body
}

#[test]
fn scope_rules() {
    let allowed = vec!["api/read".to_owned(), "api/write".to_owned()];
    assert_eq!(granted_scopes(None, &allowed).unwrap(), allowed);
    assert_eq!(granted_scopes(Some("  "), &allowed).unwrap(), allowed);
    assert_eq!(granted_scopes(Some("api/read api/read"), &allowed).unwrap(), vec!["api/read"]);
    let err = granted_scopes(Some("api/read admin"), &allowed).unwrap_err();
    assert_eq!((err.status, err.code), (400, "invalid_scope"));
}

#[test]
fn redirect_uri_registration_rules() {
    let exact = RegisteredClient::public(
        vec![],
        vec!["https://app.example/cb".into(), "http://127.0.0.1/cb".into()],
        false,
    );
    assert!(exact.allows_redirect("https://app.example/cb"));
    assert!(!exact.allows_redirect("https://app.example/cb/"));
    assert!(!exact.allows_redirect("https://app.example/cb?x=1"));
    assert!(!exact.allows_redirect("https://app.example:444/cb"));
    // Any port on a loopback IP literal, same path.
    assert!(exact.allows_redirect("http://127.0.0.1:51234/cb"));
    assert!(!exact.allows_redirect("http://127.0.0.1:51234/other"));
    assert!(!exact.allows_redirect("http://localhost:51234/cb"));
    let loopback = RegisteredClient::public(vec![], vec![], true);
    assert!(loopback.allows_redirect("http://127.0.0.1:1/anything"));
    assert!(loopback.allows_redirect("http://[::1]:1/cb"));
    assert!(!loopback.allows_redirect("https://127.0.0.1:1/cb"));
    assert!(!loopback.allows_redirect("http://127.0.0.1:1/cb#frag"));
    assert!(!loopback.allows_redirect("http://evil.example/cb"));
}

#[tokio::test]
async fn authorize_validates_every_parameter() {
    let server = ReferenceServer::builder().companies(1).start().await;
    let (status, query) = authorize(&server, &valid_params()).await;
    assert_eq!(status, 302);
    let query = query.unwrap();
    assert_eq!(query["state"], "s1");
    assert_eq!(query["iss"], server.auth_url());
    assert_eq!(query["code"].len(), 43);

    // A bad client or redirect URI is never redirected.
    for (name, value) in [
        ("client_id", None),
        ("client_id", Some("unknown-app")),
        ("client_id", Some(ReferenceServer::DEFAULT_CLIENT_ID)),
        ("redirect_uri", None),
        ("redirect_uri", Some("http://evil.example/callback")),
    ] {
        let mut params = valid_params();
        params.retain(|(n, _)| *n != name);
        if let Some(value) = value {
            params.push((name, value.into()));
        }
        let (status, query) = authorize(&server, &params).await;
        assert_eq!((status, query), (400, None), "{name}={value:?}");
    }
    let mut twice = valid_params();
    twice.push(("redirect_uri", REDIRECT.into()));
    assert_eq!(authorize(&server, &twice).await, (400, None));

    // Everything else goes back to the client.
    let cases: [(&str, Option<&str>, &str); 9] = [
        ("response_type", None, "invalid_request"),
        ("response_type", Some("token"), "unsupported_response_type"),
        ("scope", None, "invalid_request"),
        ("scope", Some("openid api/admin"), "invalid_scope"),
        ("state", None, "invalid_request"),
        ("code_challenge", None, "invalid_request"),
        ("code_challenge", Some("too-short"), "invalid_request"),
        ("code_challenge_method", None, "invalid_request"),
        ("code_challenge_method", Some("plain"), "invalid_request"),
    ];
    for (name, value, error) in cases {
        let mut params = valid_params();
        params.retain(|(n, _)| *n != name);
        if let Some(value) = value {
            params.push((name, value.into()));
        }
        let (status, query) = authorize(&server, &params).await;
        assert_eq!(status, 302, "{name}={value:?}");
        let query = query.unwrap();
        assert_eq!(query["error"], error, "{name}={value:?}");
        assert_eq!(query.get("state").map(String::as_str), (name != "state").then_some("s1"));
        assert_eq!(query["iss"], server.auth_url());
        assert!(!query.contains_key("code"));
    }
    let mut repeated = valid_params();
    repeated.push(("scope", "openid".into()));
    assert_eq!(authorize(&server, &repeated).await.1.unwrap()["error"], "invalid_request");
    assert_eq!(server.requests(crate::Endpoint::Authorize), 17);
    assert_eq!(server.token_requests(), 0);
}

#[tokio::test]
async fn a_denying_server_redirects_with_access_denied() {
    let server = ReferenceServer::builder().companies(1).deny_authorization(true).start().await;
    let (status, query) = authorize(&server, &valid_params()).await;
    assert_eq!(status, 302);
    let query = query.unwrap();
    assert_eq!((query["error"].as_str(), query["state"].as_str()), ("access_denied", "s1"));
}

#[tokio::test]
async fn codes_are_single_use_bound_to_client_redirect_and_verifier() {
    let server = ReferenceServer::builder().companies(1).start().await;
    let body = sign_in(&server).await;
    assert_eq!(body["token_type"], "Bearer");
    assert_eq!(body["scope"], "openid api/read");
    assert_eq!(body["refresh_token"].as_str().unwrap().len(), 43);
    let id = verify_id_token(&server, body["id_token"].as_str().unwrap());
    assert_eq!(id["sub"], ReferenceServer::DEFAULT_TEST_USER);
    assert_eq!(id["nonce"], "n1");

    let code1 = code(&server).await;
    let (status, body) = token(&server, &exchange_form(&code1, "x".repeat(43).as_str())).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "wrong verifier");
    let (status, body) = token(&server, &exchange_form(&code1, VERIFIER)).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "a code is tried once");

    let code2 = code(&server).await;
    let mut form = exchange_form(&code2, VERIFIER);
    form[3].1 = "http://127.0.0.1:8401/callback";
    assert_eq!(token(&server, &form).await.1["error"], "invalid_grant", "another redirect_uri");
    let code3 = code(&server).await;
    let form: Vec<_> =
        exchange_form(&code3, VERIFIER).into_iter().filter(|(n, _)| *n != "code_verifier").collect();
    assert_eq!(token(&server, &form).await.1["error"], "invalid_request", "no verifier");
    let code4 = code(&server).await;
    let mut form = exchange_form(&code4, VERIFIER);
    form.push(("client_secret", "anything"));
    assert_eq!(
        token(&server, &form).await,
        (
            401,
            serde_json::json!({"error": "invalid_client", "error_description": "a public client does not authenticate with a secret"})
        )
    );
    assert_eq!(server.token_requests_for("authorization_code"), 6);
}

#[tokio::test]
async fn refresh_tokens_rotate_and_reuse_revokes_the_sign_in() {
    let server = ReferenceServer::builder().companies(1).refresh_token_rotation(true).start().await;
    let first = sign_in(&server).await["refresh_token"].as_str().unwrap().to_owned();
    assert_eq!(server.active_refresh_tokens(server.test_user()), std::slice::from_ref(&first));
    let refresh = |rt: String| {
        let server = &server;
        async move {
            token(
                server,
                &[("grant_type", "refresh_token"), ("client_id", "reference-app"), ("refresh_token", &rt)],
            )
            .await
        }
    };
    let (status, body) = refresh(first.clone()).await;
    assert_eq!(status, 200, "{body}");
    let second = body["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(second, first);
    assert!(body["id_token"].is_string() && body["access_token"].is_string());
    assert_eq!(
        server.active_refresh_tokens(server.test_user()),
        std::slice::from_ref(&second),
        "the new one replaced it"
    );
    assert_eq!(server.refresh_token_reuses(), 0);

    let (status, body) = refresh(first).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "reuse of a rotated token");
    assert_eq!(server.refresh_token_reuses(), 1);
    assert!(server.active_refresh_tokens(server.test_user()).is_empty(), "the whole sign-in is revoked");
    let (_, body) = refresh(second).await;
    assert_eq!(body["error"], "invalid_grant", "the whole sign-in is revoked");
    assert_eq!(server.token_requests_for("refresh_token"), 3);
    assert_eq!(server.refresh_token_reuses(), 1, "a revoked token is not a reuse");
}

#[tokio::test]
async fn by_default_refresh_responses_carry_no_refresh_token_as_in_the_spec_table() {
    let server = ReferenceServer::builder().companies(1).start().await;
    let rt = sign_in(&server).await["refresh_token"].as_str().unwrap().to_owned();
    for _ in 0..2 {
        let form =
            [("grant_type", "refresh_token"), ("client_id", "reference-app"), ("refresh_token", rt.as_str())];
        let (status, body) = token(&server, &form).await;
        assert_eq!(status, 200);
        assert!(body.get("refresh_token").is_none(), "{body}");
        assert!(body["id_token"].is_string() && body["access_token"].is_string());
    }
    assert_eq!(server.active_refresh_tokens(server.test_user()), std::slice::from_ref(&rt));
    assert_eq!(server.refresh_token_reuses(), 0);
    server.revoke_refresh_tokens();
    assert!(server.active_refresh_tokens(server.test_user()).is_empty());
    let form =
        [("grant_type", "refresh_token"), ("client_id", "reference-app"), ("refresh_token", rt.as_str())];
    assert_eq!(token(&server, &form).await.1["error"], "invalid_grant");
}

#[tokio::test]
async fn discovery_and_introspection() {
    let server = ReferenceServer::builder().companies(1).start().await;
    let doc: Value = http().get(server.discovery_url()).send().await.unwrap().json().await.unwrap();
    assert_eq!(doc["issuer"], server.auth_url());
    assert_eq!(doc["token_endpoint"], server.token_url());
    assert_eq!(doc["code_challenge_methods_supported"], serde_json::json!(["S256"]));
    assert_eq!(doc["authorization_response_iss_parameter_supported"], true);

    let tokens = sign_in(&server).await;
    let introspect = |token: String, secret: &'static str| {
        let server = &server;
        async move {
            let response = http()
                .post(server.introspection_url())
                .basic_auth(server.client_id(), Some(secret))
                .form(&[("token", token)])
                .send()
                .await
                .unwrap();
            (response.status().as_u16(), response.json::<Value>().await.unwrap())
        }
    };
    let (status, access) =
        introspect(tokens["access_token"].as_str().unwrap().into(), "reference-secret").await;
    assert_eq!(status, 200);
    assert_eq!((access["active"].as_bool(), access["sub"].as_str()), (Some(true), Some("reference-user")));
    assert_eq!(access["client_id"], "reference-app");
    let (_, refresh) = introspect(tokens["refresh_token"].as_str().unwrap().into(), "reference-secret").await;
    assert_eq!(refresh["active"], true);
    let (_, garbage) = introspect("garbage".into(), "reference-secret").await;
    assert_eq!(garbage, serde_json::json!({"active": false}));
    let (status, _) = introspect("garbage".into(), "wrong").await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn basic_credentials_are_accepted_in_both_encodings() {
    use base64::Engine as _;

    // `:`, `+`, space and `%` read differently once form-urlencoded (RFC 6749 section 2.3.1).
    const ID: &str = "my:client id+%";
    const SECRET: &str = "s:e+c r%t";
    let server = ReferenceServer::builder().companies(1).client(ID, SECRET, ["api/read"]).start().await;
    let form_encode = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let rfc6749 = |id: &str, secret: &str| {
        let pair = format!("{}:{}", form_encode(id), form_encode(secret));
        format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair))
    };
    // Spec Part 5.4: base64 of `client_id:client_secret`, as reqwest's `basic_auth` sends it.
    let literal = |id: &str, secret: &str| {
        format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}")))
    };
    assert_ne!(rfc6749(ID, SECRET), literal(ID, SECRET), "the two encodings differ for these credentials");
    let post = |authorization: String| {
        let server = &server;
        async move {
            let response = http()
                .post(server.token_url())
                .header("authorization", authorization)
                .form(&[("grant_type", "client_credentials")])
                .send()
                .await
                .unwrap();
            (response.status().as_u16(), response.json::<Value>().await.unwrap())
        }
    };
    for (name, header) in [("rfc 6749", rfc6749(ID, SECRET)), ("literal", literal(ID, SECRET))] {
        let (status, body) = post(header).await;
        assert_eq!((status, body["scope"].as_str()), (200, Some("api/read")), "{name}: {body}");
    }
    for (name, header) in [("rfc 6749", rfc6749(ID, "s:e+c r%x")), ("literal", literal(ID, "s:e+c r%x"))] {
        let (status, body) = post(header).await;
        assert_eq!((status, body["error"].as_str()), (401, Some("invalid_client")), "{name}, wrong secret");
    }
    // The body must name the same client as the header.
    let response = http()
        .post(server.token_url())
        .header("authorization", literal(ID, SECRET))
        .form(&[("grant_type", "client_credentials"), ("client_id", "reference-client")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);
    // Form-encoded in the body, the credentials are read as they are.
    let (status, _) =
        token(&server, &[("grant_type", "client_credentials"), ("client_id", ID), ("client_secret", SECRET)])
            .await;
    assert_eq!(status, 200);
}

/// A refresh of `refresh_token` by the default public client, through `client`.
async fn refresh(
    server: &ReferenceServer,
    client: &reqwest::Client,
    refresh_token: &str,
) -> Result<(u16, Option<String>, String), reqwest::Error> {
    let form =
        [("grant_type", "refresh_token"), ("client_id", "reference-app"), ("refresh_token", refresh_token)];
    let response = client.post(server.token_url()).form(&form).send().await?;
    let status = response.status().as_u16();
    let retry_after = response.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned());
    Ok((status, retry_after, response.text().await?))
}

/// A server with rotation and the fault proxies, and the refresh token of its signed-in user.
async fn signed_in_with_faults() -> (ReferenceServer, String) {
    let server = ReferenceServer::builder()
        .companies(1)
        .refresh_token_rotation(true)
        .faults(crate::Faults::none())
        .start()
        .await;
    let first = sign_in(&server).await["refresh_token"].as_str().unwrap().to_owned();
    (server, first)
}

#[tokio::test]
async fn token_faults_answer_before_the_grant_and_never_rotate() {
    use crate::{Endpoint, Fault, Faults, RetryAfter};

    let (server, first) = signed_in_with_faults().await;
    server.set_faults(
        Faults::new()
            .on_every(Endpoint::Companies, 1, Fault::Status(500))
            .on_sequence(
                Endpoint::Token,
                [
                    Some(Fault::RateLimited(RetryAfter::Seconds(2))),
                    Some(Fault::Html(503)),
                    Some(Fault::Status(503)),
                    Some(Fault::Status(500)),
                    Some(Fault::Empty(502)),
                    Some(Fault::Html(504)),
                    Some(Fault::InvalidJson),
                    Some(Fault::DropConnection),
                ],
            )
            .on(Endpoint::Token, 9, Fault::EmptyPage),
    );
    let http = http();
    let mut answers = Vec::new();
    for _ in 0..7 {
        let (status, retry_after, body) = refresh(&server, &http, &first).await.unwrap();
        let kind = if body.starts_with("<html>") {
            "html".to_owned()
        } else if body.is_empty() {
            "empty".to_owned()
        } else {
            serde_json::from_str::<Value>(&body).unwrap()["error"].as_str().unwrap_or("none").to_owned()
        };
        answers.push((status, retry_after, kind));
    }
    let s = |status, retry_after: Option<&str>, kind: &str| {
        (status, retry_after.map(str::to_owned), kind.to_owned())
    };
    assert_eq!(
        answers,
        [
            s(429, Some("2"), "rate_limited"),
            s(503, None, "html"),
            s(503, None, "temporarily_unavailable"),
            s(500, None, "server_error"),
            s(502, None, "empty"),
            s(504, None, "html"),
            s(200, None, "html"),
        ]
    );
    let dropped = refresh(&server, &http, &first).await.expect_err("the connection is dropped");
    assert!(!dropped.is_status(), "{dropped:?}");
    // Not one of them reached the grant: the refresh token from sign-in is still the current one.
    assert_eq!(server.active_refresh_tokens(server.test_user()), std::slice::from_ref(&first));
    assert_eq!(server.refresh_token_reuses(), 0);
    // A list fault does nothing at the token endpoint: the 9th request rotates.
    let (status, _, body) = refresh(&server, &http, &first).await.unwrap();
    assert_eq!(status, 200, "{body}");
    let second: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(server.active_refresh_tokens(server.test_user()), [second["refresh_token"].as_str().unwrap()]);

    let counts = server.fault_counts(Endpoint::Token);
    assert_eq!((counts.requests, counts.total()), (9, 8));
    for name in
        ["rate_limited", "html_503", "status_503", "status_500", "empty_502", "html_504", "invalid_json"]
    {
        assert_eq!(counts.get(name), 1, "{name}");
    }
    assert_eq!(counts.get("drop_connection"), 1);
    assert_eq!(counts.early_retries, 1, "the request after the 429 came before its Retry-After");
    let companies = server.fault_counts(Endpoint::Companies);
    assert_eq!(
        (companies.requests, companies.get("status_500")),
        (0, 0),
        "the API schedule saw no token request"
    );
    assert_eq!(server.token_requests_for("refresh_token"), 9);
}

#[tokio::test]
async fn a_slow_token_answer_is_processed_only_for_a_client_still_waiting() {
    use std::time::Duration;

    use crate::{Endpoint, Fault, Faults};

    let (server, first) = signed_in_with_faults().await;
    server.set_faults(Faults::new().on_every(Endpoint::Token, 1, Fault::Slow(Duration::from_millis(400))));

    // The client gives up first: the held request is never processed.
    let impatient = reqwest::Client::builder().timeout(Duration::from_millis(100)).build().unwrap();
    let err = refresh(&server, &impatient, &first).await.expect_err("timed out");
    assert!(err.is_timeout(), "{err:?}");
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(
        server.active_refresh_tokens(server.test_user()),
        std::slice::from_ref(&first),
        "nothing rotated"
    );

    // A client that waits gets the real answer, processed after the delay.
    let (status, _, body) = refresh(&server, &http(), &first).await.unwrap();
    assert_eq!(status, 200, "{body}");
    let rotated: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        server.active_refresh_tokens(server.test_user()),
        [rotated["refresh_token"].as_str().unwrap()]
    );
    assert_eq!(server.refresh_token_reuses(), 0);
    // Each request counted once, the held one included.
    assert_eq!(
        (server.token_requests_for("refresh_token"), server.fault_counts(Endpoint::Token).get("slow")),
        (2, 2)
    );
    // The journal has the answered one, once, with its fault; the one given up on is not in it.
    let refreshes: Vec<_> =
        server.journal().into_iter().filter(|r| r.endpoint() == Some(Endpoint::Token)).skip(1).collect();
    assert_eq!(refreshes.len(), 1);
    assert_eq!(
        (refreshes[0].status(), refreshes[0].fault()),
        (200, Some(&Fault::Slow(Duration::from_millis(400))))
    );
    assert_eq!(refreshes[0].user(), Some(server.test_user()));
}

#[tokio::test]
async fn a_late_token_answer_rotates_at_once_whoever_waits_for_it() {
    use std::time::Duration;

    use crate::{Endpoint, Fault, Faults};

    let (server, first) = signed_in_with_faults().await;
    server.set_faults(Faults::new().on(Endpoint::Token, 1, Fault::Late(Duration::from_millis(400))));
    let impatient = reqwest::Client::builder().timeout(Duration::from_millis(100)).build().unwrap();
    let err = refresh(&server, &impatient, &first).await.expect_err("timed out");
    assert!(err.is_timeout(), "{err:?}");
    // Rotated though the client never saw the answer: the first token is retired.
    let active = server.active_refresh_tokens(server.test_user());
    assert!(active.len() == 1 && active[0] != first, "{active:?}");
    // Presented again, it is a reuse, and the sign-in is revoked.
    let (status, _, body) = refresh(&server, &http(), &first).await.unwrap();
    assert_eq!(status, 400, "{body}");
    assert_eq!(server.refresh_token_reuses(), 1);
    assert!(server.active_refresh_tokens(server.test_user()).is_empty());
    assert_eq!(server.fault_counts(Endpoint::Token).get("late"), 1);
}
