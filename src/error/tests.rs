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
    let sunset = SunsetError {
        sunset: chrono::DateTime::from_timestamp(1_767_225_600, 0),
        successor: url::Url::parse("https://api.example.com/v2/companies").ok(),
        response: ApiError::new(410, Some(ErrorCode::VersionSunset), "/v1/companies"),
    };
    assert_eq!(
        Error::Sunset(Arc::new(sunset)).to_string(),
        "api version has reached its sunset on 2026-01-01; successor: https://api.example.com/v2/companies"
    );
    let cursor = CursorRejected { code: ErrorCode::CursorExpired, delivered: 10, response: api };
    assert_eq!(
        Error::CursorRejected(Arc::new(cursor)).to_string(),
        "cursor rejected by the server (cursor_expired) after 10 items; restart the listing from the first page"
    );
    let redirect = Error::Http(HttpError::redirect("/oauth2/token", 307));
    assert_eq!(
        redirect.to_string(),
        "request to /oauth2/token answered with a redirect, which is not followed (status 307)"
    );
    assert_eq!(redirect.status(), Some(307));
    let too_large = ResponseTooLarge { endpoint: "/v1/companies".into(), body: "page", limit: 1024 };
    assert_eq!(
        Error::ResponseTooLarge(Arc::new(too_large)).to_string(),
        "the response of /v1/companies is larger than the page body limit of 1024 bytes"
    );
    let needs_sign_in = Error::ReauthenticationRequired("no refresh token");
    assert_eq!(needs_sign_in.to_string(), "sign-in required: no refresh token");
    assert!(needs_sign_in.needs_reauthentication());
}

#[test]
fn causes_are_sources_and_messages_do_not_repeat_them() {
    let parse = serde_json::from_str::<u32>("\"x\"").expect_err("not a number");
    let cause = parse.to_string();
    let decode = Error::Decode(DecodeError::new("/v1/companies", parse));
    assert_eq!(decode.to_string(), "could not decode the response of /v1/companies");
    let source = decode.source().expect("a source");
    assert!(source.downcast_ref::<serde_json::Error>().is_some(), "{source:?}");
    assert_eq!(source.to_string(), cause);

    let exhausted = Error::RetriesExhausted(Arc::new(RetriesExhausted { attempts: 3, last: decode.clone() }));
    assert_eq!(exhausted.to_string(), "gave up after 3 attempts");
    let last = exhausted.source().expect("the last error");
    assert_eq!(last.to_string(), decode.to_string());
    assert!(last.source().and_then(|e| e.downcast_ref::<serde_json::Error>()).is_some());

    let io = std::io::Error::new(std::io::ErrorKind::AddrInUse, "in use");
    let listener = Error::from(CallbackError::Listener { action: "bind 127.0.0.1", source: Some(io) });
    assert_eq!(listener.to_string(), "the loopback listener could not bind 127.0.0.1");
    let io = listener.source().and_then(|e| e.downcast_ref::<std::io::Error>()).expect("the io error");
    assert_eq!(io.kind(), std::io::ErrorKind::AddrInUse);

    let jwks =
        Error::from(VerifyError::Jwks(Error::Http(HttpError::new(HttpErrorKind::Timeout, "/jwks", None))));
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
