//! Unit tests of token verification that need no server.

use super::*;

fn assert_send<T: Send>(_: T) {}

fn b64url_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn token_with_header(header: &str) -> String {
    format!("{}.e30.c2ln", b64url_encode(header.as_bytes()))
}

#[test]
fn header_checks() {
    assert!(matches!(parse_header("abc"), Err(VerifyError::Malformed)));
    assert!(matches!(parse_header("a.b.c.d"), Err(VerifyError::Malformed)));
    assert!(matches!(parse_header("..c"), Err(VerifyError::Malformed)));
    // An unsigned token is named for its algorithm; an RS256 one without signature is malformed.
    let unsigned = format!("{}.e30.", b64url_encode(br#"{"alg":"none"}"#));
    assert!(
        matches!(parse_header(&unsigned), Err(VerifyError::UnsupportedAlgorithm { alg }) if alg == "none")
    );
    let unsigned = format!("{}.e30.", b64url_encode(br#"{"alg":"RS256","kid":"k"}"#));
    assert!(matches!(parse_header(&unsigned), Err(VerifyError::Malformed)));
    assert!(matches!(
        parse_header(&token_with_header(r#"{"alg":"HS256","kid":"k"}"#)),
        Err(VerifyError::UnsupportedAlgorithm { alg }) if alg == "HS256"
    ));
    assert!(matches!(
        parse_header(&token_with_header(r#"{"alg":"none"}"#)),
        Err(VerifyError::UnsupportedAlgorithm { .. })
    ));
    // No `kid` (or an empty one): the key set's only signing key will be used.
    assert!(matches!(parse_header(&token_with_header(r#"{"alg":"RS256"}"#)), Ok(None)));
    assert!(matches!(parse_header(&token_with_header(r#"{"alg":"RS256","kid":""}"#)), Ok(None)));
    assert_eq!(
        parse_header(&token_with_header(r#"{"alg":"RS256","kid":"k1","typ":"JWT"}"#)).ok(),
        Some(Some("k1".to_owned()))
    );
    assert!(matches!(
        parse_header(&token_with_header(r#"{"alg":"RS256","kid":"k","crit":["x"]}"#)),
        Err(VerifyError::Malformed)
    ));
}

#[test]
fn url_rules() {
    let new = |url: &str| TokenVerifier::new(url, "https://auth.example.com", "api").map(|_| ());
    assert!(new("https://auth.example.com/jwks").is_ok());
    assert!(new("http://127.0.0.1:8080/jwks").is_ok());
    assert!(new("http://[::1]:8080/jwks").is_ok());
    assert!(new("http://localhost/jwks").is_ok());
    for refused in ["http://auth.example.com/jwks", "not a url", "ftp://localhost/x"] {
        let err = new(refused).expect_err(refused);
        assert!(matches!(&err, Error::InvalidArgument(e) if e.argument() == "jwks_url"), "{err:?}");
    }
}

#[test]
fn a_document_that_is_not_a_jwks_is_named() {
    let err = TokenVerifier::from_jwks("[]", "i", "a").expect_err("not a JWKS");
    assert!(matches!(&err, Error::InvalidArgument(e) if e.argument() == "jwks_json"), "{err:?}");
}

#[test]
fn claims_accept_string_or_array_audience() {
    let one: Claims =
        serde_json::from_str(r#"{"iss":"i","aud":"a","exp":1,"scope":"x  y","k":true}"#).unwrap();
    assert_eq!(one.aud, vec!["a"]);
    assert_eq!(one.scopes().collect::<Vec<_>>(), vec!["x", "y"]);
    assert!(one.has_scope("y") && !one.has_scope("z"));
    assert_eq!(one.extra.get("k"), Some(&Value::Bool(true)));
    assert_eq!(one.expires_at().timestamp(), 1);
    let many: Claims = serde_json::from_str(r#"{"iss":"i","aud":["a","b"],"exp":1}"#).unwrap();
    assert_eq!(many.aud, vec!["a", "b"]);
}

#[test]
fn claims_times_are_read_within_bounds() {
    // RFC 7519 allows a fractional NumericDate; a time past the year 9999 counts as its end.
    let fraction: Claims = serde_json::from_str(r#"{"iss":"i","aud":"a","exp":1.9e9,"iat":1.5}"#).unwrap();
    assert_eq!((fraction.exp, fraction.iat), (1_900_000_000, Some(1)));
    let far: Claims = serde_json::from_str(r#"{"iss":"i","aud":"a","exp":18446744073709551615}"#).unwrap();
    assert_eq!(far.expires_at().timestamp(), 253_402_300_799);
}

#[test]
fn verifier_is_send_sync_clone_debug() {
    fn check<T: Send + Sync + Clone + std::fmt::Debug>() {}
    check::<TokenVerifier>();
    let v = TokenVerifier::from_jwks(r#"{"keys":[]}"#, "i", "a").unwrap();
    assert_send(v.verify("a.b.c"));
    assert!(format!("{v:?}").contains("TokenVerifier"));
    assert!(matches!(
        v.verify_cached(&token_with_header(r#"{"alg":"RS256","kid":"k"}"#)),
        Err(VerifyError::UnknownKey { kid }) if kid == "k"
    ));
    assert!(matches!(
        TokenVerifier::from_jwks(r#"{"keys":[]}"#, "", "a"),
        Err(Error::InvalidArgument(e)) if e.argument() == "issuer"
    ));
}
