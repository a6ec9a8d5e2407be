use std::collections::HashMap;

use super::*;
use crate::auth::pkce::s256_challenge;

/// A flow whose server does not exist: any request it sends fails with a connection error.
fn flow() -> AuthorizationCodeFlow {
    AuthorizationCodeFlow::new("http://127.0.0.1:9", "my-app", "http://127.0.0.1:8400/callback")
        .expect("valid flow")
        .scopes(["openid", "api/read"])
}

fn query_of(url: &str) -> HashMap<String, String> {
    Url::parse(url).expect("url").query_pairs().into_owned().collect()
}

#[test]
fn the_authorize_url_carries_every_parameter_of_the_spec() {
    let request = flow().authorize_url();
    assert!(request.url().starts_with("http://127.0.0.1:9/oauth2/authorize?"), "{}", request.url());
    let query = query_of(request.url());
    assert_eq!(query["response_type"], "code");
    assert_eq!(query["client_id"], "my-app");
    assert_eq!(query["redirect_uri"], "http://127.0.0.1:8400/callback");
    assert_eq!(query["scope"], "openid api/read");
    assert_eq!(query["state"], request.state());
    assert_eq!(query["code_challenge_method"], "S256");
    assert_eq!(Some(query["code_challenge"].clone()), s256_challenge(request.pkce_verifier().secret()));
    assert_eq!(query.get("nonce").map(String::as_str), request.nonce());
    assert!(request.nonce().is_some());
    assert!(!query.contains_key("code_verifier"), "the verifier never leaves in the URL");
    // 256 random bits in base64url.
    assert_eq!(request.state().len(), 43);

    let other = flow().authorize_url();
    assert_ne!(other.state(), request.state());
    assert_ne!(other.pkce_verifier(), request.pkce_verifier());
}

#[test]
fn without_openid_there_is_no_nonce() {
    let request = flow().scopes(["api/read"]).authorize_url();
    assert_eq!(request.nonce(), None);
    assert!(!query_of(request.url()).contains_key("nonce"));
}

#[test]
fn debug_never_shows_the_verifier_or_state() {
    let request = flow().authorize_url();
    let debug = format!("{request:?} {:?}", flow());
    assert!(!debug.contains(request.pkce_verifier().secret()));
    assert!(!debug.contains(request.state()));
    assert!(debug.contains("http://127.0.0.1:9/oauth2/authorize"));
}

#[test]
fn requests_survive_a_round_trip_through_a_session_store() {
    let request = flow().authorize_url();
    let json = serde_json::to_string(&request).expect("serialise");
    let back: AuthorizationRequest = serde_json::from_str(&json).expect("deserialise");
    assert_eq!(back.state(), request.state());
    assert_eq!(back.pkce_verifier(), request.pkce_verifier());
    assert_eq!(back.url(), request.url());
}

fn check(
    flow: &AuthorizationCodeFlow,
    request: &AuthorizationRequest,
    callback: &str,
) -> Result<String, Error> {
    let params = CallbackParams::parse(callback)?;
    flow.check_callback(&params, request).map(str::to_owned)
}

fn callback_error(result: Result<String, Error>) -> String {
    match result {
        Err(Error::Callback(kind)) => format!("{kind:?}"),
        other => panic!("expected a callback error, got {other:?}"),
    }
}

#[test]
fn callbacks_are_checked_issuer_first_then_state_then_error() {
    let flow = flow();
    let request = flow.authorize_url();
    let state = request.state().to_owned();
    let base = "http://127.0.0.1:8400/callback";
    let iss = "http%3A%2F%2F127.0.0.1%3A9";

    let ok = check(&flow, &request, &format!("{base}?code=c1&state={state}&iss={iss}"));
    assert_eq!(ok.expect("a valid callback"), "c1");
    // `iss` is optional (servers without RFC 9207), and the query alone is enough.
    assert_eq!(check(&flow, &request, &format!("?code=c2&state={state}")).expect("query only"), "c2");
    assert_eq!(check(&flow, &request, &format!("code=c3&state={state}")).expect("bare query"), "c3");

    let foreign = format!("{base}?error=access_denied&state=nope&iss=https%3A%2F%2Fevil.example");
    assert_eq!(
        callback_error(check(&flow, &request, &foreign)),
        format!("{:?}", CallbackError::IssuerMismatch)
    );
    let missing = format!("{base}?code=c1");
    assert_eq!(
        callback_error(check(&flow, &request, &missing)),
        format!("{:?}", CallbackError::MissingState)
    );
    let forged = format!("{base}?code=c1&state={}x", &state[..state.len() - 1]);
    assert_eq!(
        callback_error(check(&flow, &request, &forged)),
        format!("{:?}", CallbackError::StateMismatch)
    );
    // An injected error without the right state is a forgery, not a denial.
    let injected = format!("{base}?error=access_denied&state=other");
    assert_eq!(
        callback_error(check(&flow, &request, &injected)),
        format!("{:?}", CallbackError::StateMismatch)
    );
    let no_code = format!("{base}?state={state}");
    assert_eq!(callback_error(check(&flow, &request, &no_code)), format!("{:?}", CallbackError::MissingCode));
    let twice = format!("{base}?code=a&code=b&state={state}");
    assert_eq!(
        callback_error(check(&flow, &request, &twice)),
        format!("{:?}", CallbackError::RepeatedParameter("code"))
    );
    assert_eq!(
        callback_error(check(&flow, &request, "not a callback")),
        format!("{:?}", CallbackError::Malformed)
    );

    // RFC 9207 required: a callback without `iss` is refused before anything else, a denial too.
    let strict = flow.clone().require_iss_parameter(true);
    for without in
        [format!("{base}?code=c1&state={state}"), format!("{base}?error=access_denied&state={state}")]
    {
        assert_eq!(
            callback_error(check(&strict, &request, &without)),
            format!("{:?}", CallbackError::MissingIssuer)
        );
    }
    let with = format!("{base}?code=c1&state={state}&iss={iss}");
    assert_eq!(check(&strict, &request, &with).expect("iss present"), "c1");

    let denied = format!("{base}?error=access_denied&error_description=The%20user%0Asaid%20no&state={state}");
    let err = check(&flow, &request, &denied).expect_err("a denial");
    assert!(matches!(err, Error::Authorization(_)), "{err:?}");
    assert_eq!(err.code(), Some(&ErrorCode::AccessDenied));
    assert_eq!(err.description(), Some("The user\\nsaid no"));
    assert_eq!(
        err.to_string(),
        "the authorization server refused the sign-in (access_denied): The user\\nsaid no"
    );
}

#[tokio::test]
async fn a_refused_callback_never_reaches_the_token_endpoint() {
    // The token endpoint does not exist: reaching it would be an `Error::Http`.
    let flow = flow();
    let request = flow.authorize_url();
    let err = flow.exchange(request.clone(), "http://127.0.0.1:8400/callback?code=c&state=forged").await;
    assert!(
        matches!(err, Err(Error::Callback(ref e)) if matches!(**e, CallbackError::StateMismatch)),
        "{err:?}"
    );
    let denied = format!("http://127.0.0.1:8400/callback?error=access_denied&state={}", request.state());
    let err = flow.exchange(request.clone(), &denied).await;
    assert!(matches!(err, Err(Error::Authorization(_))), "{err:?}");
    // A valid callback does try the token endpoint (and retries the failed connection).
    let valid = format!("http://127.0.0.1:8400/callback?code=c&state={}", request.state());
    let err = flow.exchange(request, &valid).await;
    assert!(matches!(&err, Err(Error::RetriesExhausted(e)) if matches!(e.last(), Error::Http(_))), "{err:?}");
}

#[tokio::test]
async fn refreshing_without_a_refresh_token_asks_for_a_new_sign_in() {
    let err = flow().refresh(&TokenSet::new("t")).await.expect_err("no refresh token");
    assert!(err.needs_reauthentication(), "{err:?}");
    assert_eq!(
        err.to_string(),
        "sign-in required: no refresh token: none was issued, or a refresh that lost its answer spent it"
    );
}

#[test]
fn bad_settings_are_named() {
    let argument = |result: Result<AuthorizationCodeFlow, Error>| match result {
        Err(Error::InvalidArgument(e)) => e.argument(),
        other => panic!("expected an invalid argument, got {other:?}"),
    };
    let new = AuthorizationCodeFlow::new;
    assert_eq!(argument(new("http://auth.example.com", "app", "http://127.0.0.1/cb")), "auth_url");
    assert_eq!(argument(new("https://auth.example.com", " ", "http://127.0.0.1/cb")), "client_id");
    assert_eq!(argument(new("https://auth.example.com", "app", "http://app.example.com/cb")), "redirect_uri");
    assert_eq!(
        argument(new("https://auth.example.com", "app", "https://app.example.com/cb#x")),
        "redirect_uri"
    );
    assert_eq!(argument(new("https://auth.example.com", "app", "/callback")), "redirect_uri");
    for ok in [
        "https://app.example.com/cb",
        "com.example.app:/callback",
        "com.example.app:callback",
        "http://[::1]:9/cb",
        "http://localhost:1/cb",
    ] {
        assert!(new("https://auth.example.com", "app", ok).is_ok(), "{ok}");
    }
    // RFC 8252 section 7.1: a private-use scheme is a reverse domain name, so it has a period.
    for refused in ["myapp:callback", "myapp:/callback", "myapp://callback"] {
        let err = new("https://auth.example.com", "app", refused).expect_err(refused);
        assert!(matches!(&err, Error::InvalidArgument(e) if e.argument() == "redirect_uri"), "{err:?}");
        assert!(err.to_string().contains("RFC 8252"), "{err}");
    }
    let err =
        new("https://user:s3cret@auth.example.com", "app", "http://127.0.0.1/cb").expect_err("a credential");
    assert!(matches!(&err, Error::InvalidArgument(e) if e.argument() == "auth_url"), "{err:?}");
    assert!(!err.to_string().contains("s3cret"), "{err}");
    let bad_audience = flow().trusted_audiences(["api", " "]);
    assert!(
        matches!(bad_audience.check(), Err(Error::InvalidArgument(ref e)) if e.argument() == "trusted_audiences")
    );
    let bad_scope = flow().scopes(["api read"]);
    assert!(matches!(bad_scope.check(), Err(Error::InvalidArgument(ref e)) if e.argument() == "scopes"));
}

#[test]
fn issuer_defaults_to_the_auth_url_without_a_trailing_slash() {
    let flow =
        AuthorizationCodeFlow::new("https://auth.example.com/", "app", "http://127.0.0.1/cb").expect("flow");
    assert_eq!(flow.issuer_url(), "https://auth.example.com");
    assert_eq!(flow.issuer("https://auth.example.com/").issuer_url(), "https://auth.example.com/");
}

#[test]
fn a_discovery_document_without_a_needed_endpoint_is_a_bad_document() {
    let metadata: AuthServerMetadata = serde_json::from_value(serde_json::json!({
        "issuer": "https://auth.example.com",
        "authorization_endpoint": "https://auth.example.com/authorize",
        "token_endpoint": "http://auth.example.com/token",
        "jwks_uri": "https://auth.example.com/jwks",
    }))
    .expect("a document");
    let err = AuthorizationCodeFlow::from_metadata(&metadata, "app", "http://127.0.0.1/cb")
        .expect_err("a plain-http token endpoint");
    assert!(matches!(&err, Error::InvalidArgument(e) if e.argument() == "token_endpoint"), "{err:?}");
    let mut metadata = metadata;
    metadata.token_endpoint = Some(Url::parse("https://auth.example.com/token").expect("url"));
    assert!(AuthorizationCodeFlow::from_metadata(&metadata, "app", "http://127.0.0.1/cb").is_ok());
    let introspection = crate::auth::TokenIntrospector::from_metadata(&metadata, "api", "secret")
        .expect_err("no introspection endpoint");
    assert!(introspection.to_string().contains("introspection_endpoint"), "{introspection}");
    assert!(matches!(introspection, Error::Decode(_)), "{introspection:?}");
}

#[test]
fn a_server_that_advertises_rfc_9207_gets_callbacks_without_iss_refused() {
    let metadata = |advertised: bool| -> AuthServerMetadata {
        serde_json::from_value(serde_json::json!({
            "issuer": "https://auth.example.com",
            "authorization_endpoint": "https://auth.example.com/authorize",
            "token_endpoint": "https://auth.example.com/token",
            "jwks_uri": "https://auth.example.com/jwks",
            "authorization_response_iss_parameter_supported": advertised,
        }))
        .expect("a document")
    };
    let without_iss = |advertised: bool| {
        let flow = AuthorizationCodeFlow::from_metadata(&metadata(advertised), "app", "http://127.0.0.1/cb")
            .expect("a flow");
        let request = flow.authorize_url();
        check(&flow, &request, &format!("?code=c&state={}", request.state()))
    };
    assert_eq!(callback_error(without_iss(true)), format!("{:?}", CallbackError::MissingIssuer));
    assert_eq!(without_iss(false).expect("not advertised: accepted"), "c");
}

#[test]
fn callbacks_are_read_in_every_form_a_framework_or_listener_hands_over() {
    for (callback, code) in [
        ("https://app.example.com/cb?code=c1&state=s", "c1"),
        ("com.example.app:/cb?code=c2&state=s#fragment", "c2"),
        ("/callback?code=c3&state=s", "c3"),
        ("?code=c4&state=s", "c4"),
        // A bare query whose values hold what a browser leaves unencoded, `?` included.
        ("code=c5&state=s&iss=https://auth.example.com/a?b", "c5"),
    ] {
        let params = CallbackParams::parse(callback).expect(callback);
        assert_eq!(params.code.as_deref(), Some(code), "{callback}");
    }
    let bare = CallbackParams::parse("code=c5&state=s&iss=https://auth.example.com/a?b").expect("bare");
    assert_eq!(bare.iss.as_deref(), Some("https://auth.example.com/a?b"));
    for without_query in ["/callback", "https://app.example.com/cb"] {
        assert!(CallbackParams::parse(without_query).expect(without_query).state.is_none());
    }
    assert!(matches!(CallbackParams::parse("not a callback"), Err(CallbackError::Malformed)));
}
