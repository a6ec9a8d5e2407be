//! The journal, `approve`, `settings` and the strict client authentication, over HTTP.

use serde_json::Value;
use url::Url;

use super::{get_token, list};
use crate::auth::tests::valid_params;
use crate::{ClientAuthMethod, Endpoint, Error, Fault, Faults, REDACTED, ReferenceServer};

/// RFC 7636 appendix B: the verifier of `valid_params`' challenge.
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";

/// An authorization URL of the default public client, with `login_hint` when given.
fn authorize_url(server: &ReferenceServer, login_hint: Option<&str>) -> String {
    let mut params = valid_params();
    if let Some(hint) = login_hint {
        params.push(("login_hint", hint.to_owned()));
    }
    Url::parse_with_params(&server.authorize_url(), &params).unwrap().to_string()
}

fn query(callback: &str, name: &str) -> Option<String> {
    Url::parse(callback).unwrap().query_pairs().find(|(n, _)| n == name).map(|(_, v)| v.into_owned())
}

#[tokio::test]
async fn the_journal_says_who_sent_what_and_never_a_secret() {
    let server = ReferenceServer::builder().companies(3).users(["alice"]).start().await;
    let http = reqwest::Client::new();
    let basic = get_token(&server, &http).await;
    let body_creds = [
        ("grant_type", "client_credentials"),
        ("client_id", server.client_id()),
        ("client_secret", server.client_secret()),
    ];
    let in_body: Value =
        http.post(server.token_url()).form(&body_creds).send().await.unwrap().json().await.unwrap();
    let lowercase = http
        .get(format!("{}/v1/companies?client_secret=leaked&code=leaked-too&limit=2", server.base_url()))
        .header("authorization", format!("bearer {basic}"))
        .header("x-api-preview", "2026-03")
        .send()
        .await
        .unwrap();
    assert_eq!(lowercase.status(), 200);

    // Alice signs in, lists, refreshes.
    let callback = server.approve(&authorize_url(&server, Some("alice"))).await.unwrap();
    let code = query(&callback, "code").unwrap();
    let exchange = [
        ("grant_type", "authorization_code"),
        ("client_id", ReferenceServer::DEFAULT_PUBLIC_CLIENT_ID),
        ("code", &code),
        ("redirect_uri", "http://127.0.0.1:8400/callback"),
        ("code_verifier", VERIFIER),
    ];
    let tokens: Value =
        http.post(server.token_url()).form(&exchange).send().await.unwrap().json().await.unwrap();
    let (access, refresh) =
        (tokens["access_token"].as_str().unwrap(), tokens["refresh_token"].as_str().unwrap());
    assert_eq!(list(&server, &http, access, "/v1/contacts", &[]).await.0, 200);
    let renew = [
        ("grant_type", "refresh_token"),
        ("client_id", ReferenceServer::DEFAULT_PUBLIC_CLIENT_ID),
        ("refresh_token", refresh),
    ];
    assert_eq!(http.post(server.token_url()).form(&renew).send().await.unwrap().status(), 200);

    let journal = server.journal();
    let seen: Vec<_> = journal
        .iter()
        .map(|r| (r.endpoint(), r.method(), r.status(), r.client_id(), r.user(), r.authorization_scheme()))
        .collect();
    let (client, app) = (Some(server.client_id()), Some(ReferenceServer::DEFAULT_PUBLIC_CLIENT_ID));
    assert_eq!(
        seen,
        [
            (Some(Endpoint::Token), "POST", 200, client, None, Some("Basic")),
            (Some(Endpoint::Token), "POST", 200, client, None, None),
            (Some(Endpoint::Companies), "GET", 200, client, None, Some("bearer")),
            (Some(Endpoint::Authorize), "GET", 302, app, Some("alice"), None),
            (Some(Endpoint::Token), "POST", 200, app, Some("alice"), None),
            (Some(Endpoint::Contacts), "GET", 200, app, Some("alice"), Some("Bearer")),
            (Some(Endpoint::Token), "POST", 200, app, Some("alice"), None),
        ]
    );
    let listing = &journal[2];
    assert!(listing.is_api() && !journal[0].is_api());
    assert_eq!(
        (listing.path(), listing.query("limit"), listing.header("X-API-Preview")),
        ("/v1/companies", Some("2"), Some("2026-03"))
    );
    assert_eq!((listing.query("client_secret"), listing.query("code")), (Some(REDACTED), Some(REDACTED)));
    assert_eq!(journal[3].query("login_hint"), Some("alice"));
    assert!(journal.iter().all(|r| r.header("authorization").is_none()));
    let everything = format!("{journal:?}");
    let in_body = in_body["access_token"].as_str().unwrap();
    for secret in
        [server.client_secret(), basic.as_str(), in_body, access, refresh, &code, VERIFIER, "leaked"]
    {
        assert!(!everything.contains(secret), "a secret in the journal: {secret}");
    }
    server.reset_counters();
    assert!(server.journal().is_empty());
}

#[tokio::test]
async fn approve_plays_the_browser_of_a_sign_in() {
    let server = ReferenceServer::builder().companies(1).users(["bob"]).start().await;
    let callback = server.approve(&authorize_url(&server, Some("bob"))).await.unwrap();
    assert!(callback.starts_with("http://127.0.0.1:8400/callback?"), "{callback}");
    assert_eq!(
        (query(&callback, "state").as_deref(), query(&callback, "iss")),
        (Some("s1"), Some(server.auth_url()))
    );
    assert_eq!(query(&callback, "code").map(|c| c.len() >= 32), Some(true));
    assert_eq!(server.journal()[0].user(), Some("bob"));
    let default = server.approve(&authorize_url(&server, None)).await.unwrap();
    assert!(query(&default, "code").is_some());
    assert_eq!(server.journal()[1].user(), Some(server.test_user()));

    // Wrong past the client and redirect URI: back to the client with `error`, as a browser is.
    let mut no_scope = Url::parse(&authorize_url(&server, None)).unwrap();
    let kept: Vec<(String, String)> =
        no_scope.query_pairs().into_owned().filter(|(n, _)| n != "scope").collect();
    no_scope.query_pairs_mut().clear().extend_pairs(kept);
    let denied = server.approve(no_scope.as_str()).await.unwrap();
    assert_eq!(query(&denied, "error").as_deref(), Some("invalid_request"));

    // What cannot be redirected, and what is not this server's endpoint, is an error that says why.
    let mut params = valid_params();
    params.retain(|(name, _)| *name != "redirect_uri");
    params.push(("redirect_uri", "https://evil.example/cb".to_owned()));
    let foreign = Url::parse_with_params(&server.authorize_url(), &params).unwrap();
    match server.approve(foreign.as_str()).await {
        Err(Error::Refused { status: 400, description }) => {
            assert_eq!(description, "the redirect_uri is not registered for this client")
        }
        other => panic!("{other:?}"),
    }
    let elsewhere = authorize_url(&server, None).replace("/oauth2/authorize", "/oauth2/other");
    for bad in ["not a url", "https://example.com/oauth2/authorize", elsewhere.as_str()] {
        let error = server.approve(bad).await.unwrap_err();
        assert!(matches!(error, Error::InvalidArgument { argument: "authorize_url", .. }), "{bad}: {error}");
        assert!(error.to_string().starts_with("invalid argument `authorize_url`"), "{error}");
    }

    let faulty = ReferenceServer::builder()
        .companies(1)
        .faults(Faults::new().on(Endpoint::Authorize, 1, Fault::Status(503)))
        .start()
        .await;
    let error = faulty.approve(&authorize_url(&faulty, None)).await.unwrap_err();
    assert!(matches!(error, Error::Refused { status: 503, .. }), "{error:?}");
    assert!(faulty.approve(&authorize_url(&faulty, None)).await.is_ok(), "the first request only");
}

#[tokio::test]
async fn settings_are_what_a_client_of_the_default_client_needs() {
    let server = ReferenceServer::start().await;
    let settings = server.settings();
    let names: Vec<&str> = settings.iter().map(|(name, _)| *name).collect();
    assert_eq!(names, ["base_url", "auth_url", "client_id", "client_secret", "scopes"]);
    let value = |name: &str| settings.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone()).unwrap();
    assert_eq!((value("base_url"), value("auth_url")), (server.base_url(), server.auth_url()));
    let form = [("grant_type", "client_credentials".to_owned()), ("scope", value("scopes"))];
    let http = reqwest::Client::new();
    let response = http
        .post(format!("{}/oauth2/token", value("auth_url")))
        .basic_auth(value("client_id"), Some(value("client_secret")))
        .form(&form)
        .send()
        .await
        .unwrap();
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["scope"], "api/read api/write", "the client is registered for every scope named");
}

#[tokio::test]
async fn one_client_authentication_method_can_be_required() {
    let http = reqwest::Client::new();
    for only in [ClientAuthMethod::Body, ClientAuthMethod::Basic] {
        let server = ReferenceServer::builder().companies(1).client_authentication(only).start().await;
        let basic = http
            .post(server.token_url())
            .basic_auth(server.client_id(), Some(server.client_secret()))
            .form(&[("grant_type", "client_credentials")]);
        let body = http.post(server.token_url()).form(&[
            ("grant_type", "client_credentials"),
            ("client_id", server.client_id()),
            ("client_secret", server.client_secret()),
        ]);
        let (accepted, refused) = match only {
            ClientAuthMethod::Body => (body, basic),
            _ => (basic, body),
        };
        assert_eq!(accepted.send().await.unwrap().status(), 200, "{only:?}");
        let refused = refused.send().await.unwrap();
        assert_eq!(refused.status(), 401, "{only:?}");
        // RFC 6749 section 5.2: a client that tried Basic is challenged for Basic.
        let challenge = refused.headers().get("www-authenticate").map(|v| v.to_str().unwrap().to_owned());
        assert_eq!(
            challenge.is_some_and(|c| c.starts_with("Basic")),
            only == ClientAuthMethod::Body,
            "{only:?}"
        );
        let error: Value = refused.json().await.unwrap();
        assert_eq!(error["error"], "invalid_client", "{only:?}");
        let discovery: Value = http.get(server.discovery_url()).send().await.unwrap().json().await.unwrap();
        let expected = match only {
            ClientAuthMethod::Body => ["client_secret_post", "none"],
            _ => ["client_secret_basic", "none"],
        };
        assert_eq!(discovery["token_endpoint_auth_methods_supported"], serde_json::json!(expected));
    }
}

#[tokio::test]
async fn a_journal_entry_reads_as_one_line() {
    let faults = Faults::new().on(Endpoint::Companies, 2, Fault::Status(503));
    let server = ReferenceServer::builder().companies(3).faults(faults).start().await;
    let http = reqwest::Client::new();
    let token = get_token(&server, &http).await;
    let query = [("limit", "1"), ("q", "a&b=c d+e#f%g\n"), ("client_secret", "s3cret"), ("née", "ü")];
    for _ in 0..2 {
        list(&server, &http, &token, "/v1/companies", &query).await;
    }
    let lines: Vec<String> = server.journal().iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "POST /oauth2/token → 200".to_owned(),
            format!(
                "GET /v1/companies?limit=1&q=a%26b%3Dc%20d%2Be%23f%25g%0A&client_secret={REDACTED}&née=ü → 200"
            ),
            format!(
                "GET /v1/companies?limit=1&q=a%26b%3Dc%20d%2Be%23f%25g%0A&client_secret={REDACTED}&née=ü → 503 \
                 (fault status)"
            ),
        ]
    );
}
