//! End-to-end checks of the reference server over HTTP.

use std::time::Duration;

use serde_json::Value;

use super::*;

mod journal;
mod kit;

pub(super) async fn get_token(server: &ReferenceServer, http: &reqwest::Client) -> String {
    let response = http
        .post(server.token_url())
        .basic_auth(server.client_id(), Some(server.client_secret()))
        .form(&[("grant_type", "client_credentials"), ("scope", "api/read")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "no-store");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["token_type"], "Bearer");
    assert_eq!(body["expires_in"], 3600);
    assert_eq!(body["scope"], "api/read");
    body["access_token"].as_str().unwrap().to_owned()
}

pub(super) async fn list(
    server: &ReferenceServer,
    http: &reqwest::Client,
    token: &str,
    path: &str,
    query: &[(&str, &str)],
) -> (u16, reqwest::header::HeaderMap, Value) {
    let response = http
        .get(format!("{}{path}", server.base_url()))
        .bearer_auth(token)
        .query(query)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    assert_eq!(headers["content-type"], "application/json");
    (status, headers, response.json().await.unwrap())
}

pub(super) fn ids(values: &Value) -> Vec<String> {
    values["data"].as_array().unwrap().iter().map(|v| v["id"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn pages_through_all_active_companies() {
    let server = ReferenceServer::start().await;
    assert!(server.base_url().starts_with("http://127.0.0.1:"));
    assert!(!server.base_url().ends_with('/'));
    let http = reqwest::Client::new();
    let token = get_token(&server, &http).await;

    let expected: Vec<String> = server
        .dataset()
        .companies_sorted("-createdAt", Some("active"))
        .iter()
        .map(|c| c.id().to_owned())
        .collect();
    assert!(expected.len() > 300, "the default data should span several pages");

    let mut received = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut query = vec![("sort", "-createdAt"), ("status", "active"), ("limit", "100")];
        if let Some(c) = &cursor {
            query.push(("cursor", c));
        }
        let (status, _, body) = list(&server, &http, &token, "/v1/companies", &query).await;
        assert_eq!(status, 200, "{body}");
        pages += 1;
        assert_eq!(body["pagination"]["totalCount"], expected.len());
        received.extend(ids(&body));
        if body["pagination"]["hasMore"] == false {
            assert!(body["pagination"].get("nextCursor").is_none());
            break;
        }
        cursor = Some(body["pagination"]["nextCursor"].as_str().unwrap().to_owned());
    }
    assert_eq!(received, expected);
    assert_eq!(pages, expected.len().div_ceil(100));
    assert_eq!(server.token_requests(), 1);
    let log: Vec<JournalEntry> = server.journal().into_iter().filter(JournalEntry::is_api).collect();
    assert_eq!(log.len(), pages);
    assert!(log.iter().all(|r| r.authorization_scheme() == Some("Bearer") && r.status() == 200));
    assert!(log.iter().all(|r| r.path() == "/v1/companies" && r.endpoint() == Some(Endpoint::Companies)));
    assert!(log.iter().all(|r| r.client_id() == Some(server.client_id()) && r.user().is_none()));
    assert_eq!(log[1].query("sort"), Some("-createdAt"));
    assert!(log[1].query("cursor").is_some());

    // Records carry the fields the specification does not name.
    let (_, _, body) = list(&server, &http, &token, "/v1/companies", &[("limit", "1")]).await;
    let first = &body["data"][0];
    assert_eq!(first["id"], "cmp_0001");
    assert!(first["industry"].is_string() && first["employeeCount"].is_u64());
    assert_eq!(server.dataset().companies()[0].to_json(), *first);

    server.reset_counters();
    assert_eq!((server.token_requests(), server.journal().len()), (0, 0));
}

#[tokio::test]
async fn token_without_read_scope_is_insufficient() {
    let server = ReferenceServer::builder().companies(5).start().await;
    let http = reqwest::Client::new();
    let token = server.mint_token(TokenSpec::new().scopes(["api/write"]));
    let (status, headers, body) = list(&server, &http, &token, "/v1/companies", &[]).await;
    assert_eq!(status, 401);
    assert_eq!(body["error"], "insufficient_scope");
    let challenge = headers["www-authenticate"].to_str().unwrap();
    assert!(challenge.starts_with("Bearer error=\"insufficient_scope\""), "{challenge}");
    assert!(challenge.contains("scope=\"api/read\""), "{challenge}");
    assert_eq!(server.token_requests(), 0);
}

#[tokio::test]
async fn invalid_tokens_are_rejected() {
    let server = ReferenceServer::builder().companies(5).start().await;
    let http = reqwest::Client::new();
    let cases = [
        ("expired", server.mint_token(TokenSpec::new().lifetime_secs(-5))),
        ("audience", server.mint_token(TokenSpec::new().audience("other-api"))),
        ("issuer", server.mint_token(TokenSpec::new().issuer("http://127.0.0.1:1"))),
        ("unknown key", server.mint_token(TokenSpec::new().unknown_key())),
        ("signature", server.mint_token(TokenSpec::new().bad_signature())),
        ("garbage", "not-a-jwt".to_owned()),
    ];
    for (what, token) in &cases {
        let (status, headers, body) = list(&server, &http, token, "/v1/contacts", &[]).await;
        assert_eq!((status, body["error"].as_str()), (401, Some("invalid_token")), "{what}");
        let description = body["error_description"].as_str().unwrap();
        assert!(!description.contains(token.as_str()), "{what}");
        let challenge = headers["www-authenticate"].to_str().unwrap();
        assert!(challenge.starts_with("Bearer error=\"invalid_token\""), "{what}: {challenge}");
    }
    let response = http.get(format!("{}/v1/companies", server.base_url())).send().await.unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(server.journal().last().unwrap().authorization_scheme(), None);
    let ok = server.mint_token(TokenSpec::new().scopes(["api/read"]).lifetime(Duration::from_secs(60)));
    assert_eq!(list(&server, &http, &ok, "/v1/contacts", &[]).await.0, 200);
}

#[tokio::test]
async fn token_endpoint_rules() {
    let server = ReferenceServer::builder()
        .companies(1)
        .client("reader", "p@ss:word", ["api/read"])
        .token_lifetime(Duration::from_secs(5))
        .start()
        .await;
    let http = reqwest::Client::new();
    let post = |form: Vec<(&'static str, &'static str)>, basic: Option<(&'static str, &'static str)>| {
        let mut request = http.post(server.token_url()).form(&form);
        if let Some((id, secret)) = basic {
            request = request.basic_auth(id, Some(secret));
        }
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let challenge =
                response.headers().get("www-authenticate").map(|v| v.to_str().unwrap().to_owned());
            let body: Value = response.json().await.unwrap();
            (status, body, challenge)
        }
    };
    let cc = ("grant_type", "client_credentials");

    // Credentials in the body; no scope requested means every client scope.
    let (status, body, _) =
        post(vec![cc, ("client_id", "reader"), ("client_secret", "p@ss:word")], None).await;
    assert_eq!(
        (status, body["scope"].as_str(), body["expires_in"].as_i64()),
        (200, Some("api/read"), Some(5))
    );
    // Basic with a secret that needs urlencoding (reqwest does not encode; a colon in the secret is fine).
    assert_eq!(post(vec![cc], Some(("reader", "p@ss:word"))).await.0, 200);

    let (status, body, challenge) = post(vec![cc], Some(("reader", "wrong"))).await;
    assert_eq!((status, body["error"].as_str()), (401, Some("invalid_client")));
    assert!(challenge.unwrap().starts_with("Basic"));
    let (status, body, challenge) =
        post(vec![cc, ("client_id", "reader"), ("client_secret", "wrong")], None).await;
    assert_eq!((status, body["error"].as_str(), challenge), (401, Some("invalid_client"), None));
    assert_eq!(post(vec![cc, ("client_id", "nobody"), ("client_secret", "x")], None).await.0, 401);
    assert_eq!(post(vec![cc], None).await.1["error"], "invalid_client");

    let both = post(vec![cc, ("client_secret", "p@ss:word")], Some(("reader", "p@ss:word"))).await;
    assert_eq!((both.0, both.1["error"].as_str()), (400, Some("invalid_request")));
    let scope = post(vec![cc, ("scope", "api/read api/write")], Some(("reader", "p@ss:word"))).await;
    assert_eq!((scope.0, scope.1["error"].as_str()), (400, Some("invalid_scope")));
    let grant = post(vec![("grant_type", "password")], Some(("reader", "p@ss:word"))).await;
    assert_eq!((grant.0, grant.1["error"].as_str()), (400, Some("unsupported_grant_type")));
    // A refresh names its client: a public one by `client_id`, a confidential one by its secret.
    let refresh = post(vec![("grant_type", "refresh_token"), ("refresh_token", "x")], None).await;
    assert_eq!(refresh.1["error"], "invalid_client");
    let missing = post(vec![("scope", "api/read")], Some(("reader", "p@ss:word"))).await;
    assert_eq!((missing.0, missing.1["error"].as_str()), (400, Some("invalid_request")));
    assert_eq!(server.token_requests(), 11);

    let jwks: Value = http.get(server.jwks_url()).send().await.unwrap().json().await.unwrap();
    let key = &jwks["keys"][0];
    assert_eq!((key["kty"].as_str(), key["kid"].as_str()), (Some("RSA"), Some("reference-key-1")));
    assert_eq!((key["alg"].as_str(), key["use"].as_str()), (Some("RS256"), Some("sig")));
    assert!(key["n"].is_string() && key["e"].is_string());
}

#[tokio::test]
async fn list_errors_and_cursor_rules() {
    let server = ReferenceServer::builder().companies(30).contacts_per_company(2).start().await;
    let http = reqwest::Client::new();
    let token = server.mint_token(TokenSpec::new());
    let err = |(status, _, body): (u16, reqwest::header::HeaderMap, Value)| {
        (status, body["error"].as_str().unwrap_or_default().to_owned())
    };

    assert_eq!(err(list(&server, &http, &token, "/v2/companies", &[]).await), (404, "not_found".into()));
    assert_eq!(err(list(&server, &http, &token, "/v1/orders", &[]).await), (404, "not_found".into()));
    for query in [[("limit", "0")], [("limit", "101")], [("sort", "id")], [("status", "")]] {
        let (status, _, body) = list(&server, &http, &token, "/v1/companies", &query).await;
        assert_eq!((status, body["error"].as_str()), (400, Some("invalid_request")), "{query:?}");
    }

    // The limit may change between pages; sort and filters may not.
    let (_, _, first) =
        list(&server, &http, &token, "/v1/contacts", &[("sort", "name"), ("limit", "7")]).await;
    assert_eq!(first["data"].as_array().unwrap().len(), 7);
    assert_eq!(first["pagination"]["totalCount"], 60);
    let cursor = first["pagination"]["nextCursor"].as_str().unwrap();
    let (status, _, second) = list(
        &server,
        &http,
        &token,
        "/v1/contacts",
        &[("sort", "name"), ("limit", "50"), ("cursor", cursor), ("unknown", "x")],
    )
    .await;
    assert_eq!(status, 200);
    let expected: Vec<String> =
        server.dataset().contacts_sorted("name", None).iter().map(|c| c.id().to_owned()).collect();
    assert_eq!(ids(&second), expected[7..57]);

    for other in [vec![("sort", "-name")], vec![("sort", "name"), ("companyId", "cmp_0001")], vec![]] {
        let mut query = other.clone();
        query.push(("cursor", cursor));
        assert_eq!(
            err(list(&server, &http, &token, "/v1/contacts", &query).await),
            (400, "invalid_cursor".into()),
            "{other:?}"
        );
    }
    let swapped = if cursor.as_bytes()[10] == b'A' { "B" } else { "A" };
    let tampered = format!("{}{swapped}{}", &cursor[..10], &cursor[11..]);
    let query = [("sort", "name"), ("cursor", tampered.as_str())];
    assert_eq!(err(list(&server, &http, &token, "/v1/contacts", &query).await).1, "invalid_cursor");
    let query = [("sort", "name"), ("cursor", cursor)];
    assert_eq!(err(list(&server, &http, &token, "/v1/companies", &query).await).1, "invalid_cursor");

    let (_, _, filtered) = list(&server, &http, &token, "/v1/contacts", &[("companyId", "cmp_0003")]).await;
    assert_eq!(ids(&filtered), ["cnt_00005", "cnt_00006"]);
    assert_eq!(filtered["pagination"]["hasMore"], false);
}

#[tokio::test]
async fn cursors_expire() {
    let server = ReferenceServer::builder().companies(10).cursor_ttl(Duration::from_millis(1)).start().await;
    let http = reqwest::Client::new();
    let token = server.mint_token(TokenSpec::new());
    let (_, _, first) = list(&server, &http, &token, "/v1/companies", &[("limit", "2")]).await;
    let cursor = first["pagination"]["nextCursor"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let (status, _, body) =
        list(&server, &http, &token, "/v1/companies", &[("limit", "2"), ("cursor", &cursor)]).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("cursor_expired")));
}

#[tokio::test]
async fn custom_signing_key_and_audience() {
    let server = ReferenceServer::builder()
        .companies(2)
        .audience("custom-api")
        .signing_key_pem(jwt::DEFAULT_SIGNING_KEY_PEM, "rotated-key")
        .start()
        .await;
    let http = reqwest::Client::new();
    let jwks: Value = http.get(server.jwks_url()).send().await.unwrap().json().await.unwrap();
    assert_eq!(jwks["keys"][0]["kid"], "rotated-key");
    let token = get_token(&server, &http).await;
    let claims = server.keys.current().validator.validate(&token).unwrap();
    assert_eq!(claims.aud, ["custom-api"]);
    assert_eq!(list(&server, &http, &token, "/v1/companies", &[]).await.0, 200);
    assert!(format!("{server:?}").contains(&server.base_url()));
}

#[tokio::test]
async fn fixed_ports_and_preview_labels() {
    // Two ports that were free a moment ago.
    let (a, b) = (
        std::net::TcpListener::bind("127.0.0.1:0").unwrap(),
        std::net::TcpListener::bind("127.0.0.1:0").unwrap(),
    );
    let (api_port, auth_port) = (a.local_addr().unwrap().port(), b.local_addr().unwrap().port());
    drop((a, b));
    let server =
        ReferenceServer::builder().companies(3).api_port(api_port).auth_port(auth_port).start().await;
    assert_eq!(server.base_url(), format!("http://127.0.0.1:{api_port}"));
    assert_eq!(server.auth_url(), format!("http://127.0.0.1:{auth_port}"));
    assert_eq!(server.openapi_url(), format!("http://127.0.0.1:{api_port}/openapi.yaml"));

    let http = reqwest::Client::new();
    let token = server.mint_token(TokenSpec::new());
    for (label, status) in [("2026-03", 200), ("2026-13", 400), ("2026-3", 400), ("latest", 400), ("", 400)] {
        let response = http
            .get(format!("{}/v1/companies", server.base_url()))
            .bearer_auth(&token)
            .header("x-api-preview", label)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), status, "{label:?}");
        let body: Value = response.json().await.unwrap();
        if status == 400 {
            assert_eq!(body["error"], "invalid_request", "{label:?}");
            assert!(body["error_description"].as_str().unwrap().contains("X-API-Preview"));
        }
    }
}

#[tokio::test]
async fn jwks_faults_and_signing_key_rotation() {
    let server = ReferenceServer::builder().companies(1).faults(Faults::none()).start().await;
    let http = reqwest::Client::new();
    server.set_faults(
        Faults::new().on_sequence(Endpoint::Jwks, [Some(Fault::Status(503)), Some(Fault::Html(502))]),
    );
    let mut statuses = Vec::new();
    for _ in 0..3 {
        statuses.push(http.get(server.jwks_url()).send().await.unwrap().status().as_u16());
    }
    assert_eq!(statuses, [503, 502, 200]);
    let counts = server.fault_counts(Endpoint::Jwks);
    assert_eq!((counts.requests, counts.get("status_503"), counts.get("html_502")), (3, 1, 1));
    let others =
        (server.fault_counts(Endpoint::Companies).requests, server.fault_counts(Endpoint::Token).requests);
    assert_eq!(others, (0, 0));

    let old = get_token(&server, &http).await;
    assert_eq!(list(&server, &http, &old, "/v1/companies", &[]).await.0, 200);
    server.rotate_signing_key(jwt::DEFAULT_SIGNING_KEY_PEM, "reference-key-2");
    assert_eq!(server.signing_key_id(), "reference-key-2");
    let jwks: Value = http.get(server.jwks_url()).send().await.unwrap().json().await.unwrap();
    let kids: Vec<&str> =
        jwks["keys"].as_array().unwrap().iter().map(|k| k["kid"].as_str().unwrap()).collect();
    assert_eq!(kids, ["reference-key-2"], "the old key is withdrawn");
    let (status, _, body) = list(&server, &http, &old, "/v1/companies", &[]).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (401, Some("invalid_token")),
        "signed with the withdrawn key"
    );
    let new = get_token(&server, &http).await;
    assert_eq!(list(&server, &http, &new, "/v1/companies", &[]).await.0, 200);
    assert_eq!(list(&server, &http, &server.mint_token(TokenSpec::new()), "/v1/companies", &[]).await.0, 200);
}

#[tokio::test]
async fn wiremock_routes_each_endpoint_and_refuses_the_rest() {
    let server = ReferenceServer::builder().companies(3).serve_version(2).start().await;
    let http = reqwest::Client::new();
    let token = server.mint_token(TokenSpec::new());
    let send = |method: reqwest::Method, url: String| {
        let request = http.request(method, url).bearer_auth(&token);
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let allow = response.headers().get("allow").map(|v| v.to_str().unwrap().to_owned());
            let body: Value = response.json().await.unwrap_or_default();
            (status, allow, body["error"].as_str().map(str::to_owned))
        }
    };
    let (api, auth) = (server.base_url(), server.auth_url());
    let refused =
        |status, allow: Option<&str>, error: &str| (status, allow.map(str::to_owned), Some(error.to_owned()));
    use reqwest::Method;

    for path in ["/v1/companies", "/v1/contacts", "/v2/companies", "/v2/contacts"] {
        assert_eq!(send(Method::GET, format!("{api}{path}")).await.0, 200, "{path}");
        let other = send(Method::POST, format!("{api}{path}")).await;
        assert_eq!(other, refused(405, Some("GET"), "method_not_allowed"), "{path}");
    }
    for path in ["/v3/companies", "/v1/orders", "/v1/companies/", "/companies", "/"] {
        let answer = send(Method::GET, format!("{api}{path}")).await;
        assert_eq!(answer, refused(404, None, "not_found"), "{path}");
    }
    assert_eq!(
        send(Method::DELETE, server.openapi_url()).await,
        refused(405, Some("GET"), "method_not_allowed")
    );
    // Every request the API received is journalled, refusals and the document included.
    let journal = server.journal();
    let statuses: Vec<u16> = journal.iter().map(JournalEntry::status).collect();
    assert_eq!(statuses, [200, 405, 200, 405, 200, 405, 200, 405, 404, 404, 404, 404, 404, 405]);
    let endpoints: Vec<Option<Endpoint>> = journal.iter().map(JournalEntry::endpoint).take(3).collect();
    assert_eq!(endpoints, [Some(Endpoint::Companies), None, Some(Endpoint::Contacts)]);

    for (method, path, allow) in [
        (Method::GET, "/oauth2/token", "POST"),
        (Method::POST, "/oauth2/authorize", "GET"),
        (Method::PUT, "/.well-known/jwks.json", "GET"),
        (Method::POST, "/.well-known/openid-configuration", "GET"),
        (Method::GET, "/oauth2/introspect", "POST"),
        (Method::GET, "/oauth2/revoke", "POST"),
    ] {
        assert_eq!(
            send(method, format!("{auth}{path}")).await,
            refused(405, Some(allow), "method_not_allowed"),
            "{path}"
        );
    }
    assert_eq!(send(Method::GET, format!("{auth}/oauth2/userinfo")).await, refused(404, None, "not_found"));
    assert_eq!(server.token_requests() + server.jwks_requests() + server.requests(Endpoint::Authorize), 0);
    assert!(server.journal()[14..].iter().all(|r| !r.is_api() && r.status() >= 404));
}
