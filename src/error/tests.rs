use std::error::Error as _;

use super::*;

#[test]
fn codes_round_trip() {
    for code in ErrorCode::KNOWN {
        assert_eq!(ErrorCode::parse(code).as_str(), *code);
        assert!(!matches!(ErrorCode::parse(code), ErrorCode::Other(_)));
    }
    assert_eq!(ErrorCode::parse("teapot"), ErrorCode::Other("teapot".into()));
}

#[test]
fn messages_are_lowercase_without_trailing_punctuation() {
    let err = Error::invalid("limit", "expected 1..=100, got 0");
    let text = err.to_string();
    assert_eq!(text, "invalid argument `limit`: expected 1..=100, got 0");
    assert!(!text.ends_with('.'));
    let Error::InvalidArgument(invalid) = &err else { panic!("{err:?}") };
    assert_eq!((invalid.argument(), invalid.message()), ("limit", "expected 1..=100, got 0"));
}

#[test]
fn display_of_the_variants() {
    let api = ApiError::new(401, Some(ErrorCode::InvalidToken), "/v1/companies")
        .with_description(Some("token expired".into()));
    assert_eq!(
        Error::Api(api.clone()).to_string(),
        "/v1/companies answered 401 (invalid_token): token expired"
    );
    assert_eq!(Error::Api(ApiError::new(502, None, "/v1/contacts")).to_string(), "/v1/contacts answered 502");
    let mut headers = ::http::HeaderMap::new();
    headers.insert("sunset", ::http::HeaderValue::from_static("Thu, 01 Jan 2026 00:00:00 GMT"));
    let url = url::Url::parse("https://api.example.com/v1/companies?secret=1").expect("a url");
    let notice = DeprecationNotice::from_headers(&::http::Method::GET, &url, &headers);
    let successor = url::Url::parse("https://user:pw@api.example.com/v2/companies?key=k").ok();
    let response =
        ApiError::new(410, Some(ErrorCode::VersionSunset), "/v1/companies").with_deprecation(notice);
    let sunset = Error::Sunset(Arc::new(SunsetError { successor, response }));
    assert_eq!(
        sunset.to_string(),
        "api version has reached its sunset on 2026-01-01; successor: https://api.example.com/v2/companies?key=…"
    );
    let debug = format!("{sunset:?}");
    assert!(debug.contains("successor: Some(\"https://api.example.com/v2/companies?key=…\")"), "{debug}");
    assert!(!debug.contains("pw") && !debug.contains("key=k"), "{debug}");
    let cursor = CursorRejected { code: ErrorCode::CursorExpired, delivered: 10, response: api };
    assert_eq!(
        Error::CursorRejected(Arc::new(cursor)).to_string(),
        "cursor rejected by the server (cursor_expired) after 10 items; restart the listing from the first page"
    );
    let redirect = Error::http(HttpErrorKind::Redirect(Some(307)), "/oauth2/token", None);
    assert_eq!(
        redirect.to_string(),
        "request to /oauth2/token answered with a redirect, which is not followed (status 307)"
    );
    assert_eq!(redirect.status(), Some(307));
    let limit = crate::limits::BodyLimit { body: "page", bytes: 1024 };
    let too_large = Error::too_large("/v1/companies", limit);
    assert_eq!(
        too_large.to_string(),
        "the response of /v1/companies is larger than the page body limit of 1024 bytes"
    );
    let Error::ResponseTooLarge(context) = &too_large else { panic!("{too_large:?}") };
    assert_eq!((context.endpoint(), context.body(), context.limit()), ("/v1/companies", "page", 1024));
    let Error::Http(context) = &redirect else { panic!("{redirect:?}") };
    assert_eq!((context.body(), context.limit(), context.is_redirect()), ("", 0, true));
    let needs_sign_in = Error::ReauthenticationRequired("no refresh token");
    assert_eq!(needs_sign_in.to_string(), "sign-in required: no refresh token");
    assert!(needs_sign_in.needs_reauthentication());
}

#[test]
fn causes_are_sources_and_messages_do_not_repeat_them() {
    let timeout = Error::http(HttpErrorKind::Timeout, "/v1/companies", Some(Box::new(io_error())));
    assert_eq!(timeout.to_string(), "request to /v1/companies timed out");
    assert!(timeout.source().and_then(|e| e.downcast_ref::<std::io::Error>()).is_some());

    let exhausted =
        Error::RetriesExhausted(Arc::new(RetriesExhausted { attempts: 3, last: timeout.clone() }));
    assert_eq!(exhausted.to_string(), "gave up after 3 attempts");
    let last = exhausted.source().expect("the last error");
    assert_eq!(last.to_string(), timeout.to_string());
    assert!(last.source().and_then(|e| e.downcast_ref::<std::io::Error>()).is_some());

    let io = std::io::Error::new(std::io::ErrorKind::AddrInUse, "in use");
    let listener = Error::from(CallbackError::Listener { action: "bind 127.0.0.1", source: Some(io) });
    assert_eq!(listener.to_string(), "the loopback listener could not bind 127.0.0.1");
    let io = listener.source().and_then(|e| e.downcast_ref::<std::io::Error>()).expect("the io error");
    assert_eq!(io.kind(), std::io::ErrorKind::AddrInUse);

    let jwks = Error::from(VerifyError::Jwks(Error::http(HttpErrorKind::Timeout, "/jwks", None)));
    assert_eq!(jwks.to_string(), "token verification failed");
    let verify = jwks.source().expect("the verify error");
    assert_eq!(verify.to_string(), "jwks unavailable");
    let fetch = verify.source().expect("the fetch failure");
    assert_eq!(fetch.to_string(), "request to /jwks timed out");

    let store = Error::TokenStore(TokenStoreError::with_source("cannot save", io_error()));
    assert_eq!(store.to_string(), "token store failed");
    let store_error = store.source().expect("the store error");
    assert_eq!(store_error.to_string(), "cannot save");
    assert!(store_error.source().and_then(|e| e.downcast_ref::<std::io::Error>()).is_some());
}

fn io_error() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::PermissionDenied, "read-only")
}

#[test]
fn clones_share_their_context_and_keep_every_answer() {
    let api = ApiError::new(503, Some(ErrorCode::TemporarilyUnavailable), "/oauth2/token")
        .with_retry_after(Some(std::time::Duration::from_secs(2)));
    let last = Error::Api(api.with_origin(Origin::AuthorizationServer));
    let original = Error::RetriesExhausted(Arc::new(RetriesExhausted { attempts: 3, last }));
    let copy = original.clone();
    assert_eq!(copy.status(), Some(503));
    assert_eq!(copy.code(), Some(&ErrorCode::TemporarilyUnavailable));
    assert_eq!(copy.retry_after(), Some(std::time::Duration::from_secs(2)));
    assert!(copy.is_retryable());
    assert_eq!(copy.to_string(), original.to_string());
    // Every context is one pointer or a `&'static str`: the enum is a tag and at most two words.
    assert_eq!(std::mem::size_of::<Error>(), 3 * std::mem::size_of::<usize>());
}

#[test]
fn a_response_without_a_code_has_none() {
    let err = Error::Api(ApiError::new(500, None, "/v1/companies"));
    assert_eq!(err.code(), None);
    assert!(!err.is_retryable());
    assert!(Error::Api(ApiError::new(502, None, "/v1/companies")).is_retryable());
}

#[test]
fn a_decoding_failure_says_why_in_its_message_and_has_no_source() {
    #[derive(Debug, serde::Deserialize)]
    struct Company {
        #[serde(rename = "id")]
        _id: String,
    }
    let parse = serde_json::from_str::<Company>(r#"{"name": "Acme"}"#).expect_err("no id");
    let decode = Error::decode("/v1/companies", &parse);
    let text = decode.to_string();
    assert_eq!(
        text,
        "could not decode the response of /v1/companies: missing field `id` at line 1 column 16"
    );
    assert!(decode.source().is_none(), "the reason is in the message, not repeated as a source");

    // A reason that quotes the body is cut to 1 KiB.
    let quoted = serde_json::from_str::<u32>(&format!("\"{}\"", "y".repeat(20_000))).expect_err("a string");
    let text = Error::decode("/v1/companies", quoted).to_string();
    assert!(text.starts_with("could not decode the response of /v1/companies: invalid type: string \"yyy"));
    assert!(text.len() < 1200 && text.ends_with('…'), "{} bytes", text.len());
}

#[test]
fn an_answer_from_another_server_than_the_api_names_its_address() {
    let url = url::Url::parse("http://user:pw@127.0.0.1:8400/oauth2/token?grant=x").expect("a url");
    let endpoint = Endpoint::of(&url, Origin::AuthorizationServer);
    let refused =
        ApiError::new(404, Some(ErrorCode::NotFound), endpoint).with_origin(Origin::AuthorizationServer);
    assert_eq!(refused.to_string(), "http://127.0.0.1:8400/oauth2/token answered 404 (not_found)");
    assert_eq!(refused.endpoint(), "/oauth2/token");
    let api = ApiError::new(404, None, Endpoint::of(&url, Origin::Api));
    assert_eq!(api.to_string(), "/oauth2/token answered 404");
    let lost = Error::http(HttpErrorKind::Connect, Endpoint::of(&url, Origin::AuthorizationServer), None);
    assert_eq!(lost.to_string(), "request to http://127.0.0.1:8400/oauth2/token could not connect");
}

#[test]
fn a_refused_sign_in_reads_as_the_answer_it_was() {
    let authorize = url::Url::parse("https://auth.example.com/oauth2/authorize").expect("a url");
    let refused =
        AuthorizationError::new(ErrorCode::AccessDenied, Some("the user said no".into()), &authorize);
    let err = Error::Authorization(refused);
    assert_eq!(
        err.to_string(),
        "the authorization server refused the sign-in (access_denied): the user said no"
    );
    assert_eq!((err.code(), err.description()), (Some(&ErrorCode::AccessDenied), Some("the user said no")));
    assert_eq!((err.status(), err.response().is_none(), err.is_retryable()), (None, true, false));
}
