//! Unit tests of the web-app parts of the flow: extra authorization parameters, sealed pending
//! sign-ins, callbacks as frameworks give them, the revocation endpoint.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::request::CallbackParams;
use super::*;

const SECRET: &str = "0123456789abcdef0123456789abcdef-web-tests";

fn flow() -> AuthorizationCodeFlow {
    AuthorizationCodeFlow::new("http://127.0.0.1:9", "my-app", "http://127.0.0.1:8400/callback")
        .expect("valid flow")
        .scopes(["openid", "api/read"])
        .sealing_secret(SECRET)
}

fn callback_kind(err: Error) -> String {
    match err {
        Error::Callback(kind) => format!("{kind:?}"),
        other => panic!("expected a callback error, got {other:?}"),
    }
}

fn argument(err: Error) -> &'static str {
    match err {
        Error::InvalidArgument(e) => e.argument(),
        other => panic!("expected an invalid argument, got {other:?}"),
    }
}

#[test]
fn extra_parameters_join_the_url_but_never_replace_the_flows_own() {
    let request = flow().authorize_url_with([("prompt", "login"), ("login_hint", "alice")]).expect("extra");
    let url = Url::parse(request.url()).expect("url");
    let query: Vec<(String, String)> = url.query_pairs().into_owned().collect();
    assert!(query.contains(&("prompt".into(), "login".into())), "{query:?}");
    assert!(query.contains(&("login_hint".into(), "alice".into())), "{query:?}");
    assert!(query.contains(&("state".into(), request.state().into())));
    for owned in [
        "state",
        "nonce",
        "code_challenge",
        "redirect_uri",
        "client_id",
        "scope",
        "Response_Type",
        " request_uri",
    ] {
        let err = flow().authorize_url_with([(owned, "x")]).expect_err(owned);
        assert_eq!(argument(err), "params", "{owned}");
    }
    assert_eq!(argument(flow().authorize_url_with([("", "x")]).expect_err("empty")), "params");
}

#[test]
fn a_sealed_sign_in_is_compact_and_opens_to_the_same_request() {
    let flow = flow();
    let request = flow.authorize_url();
    let sealed = flow.seal_pending(&request).expect("seal");
    assert!(sealed.len() < 300, "{} characters", sealed.len());
    assert!(sealed.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "cookie-safe");
    for secret in [request.state(), request.pkce_verifier().secret(), request.nonce().expect("nonce")] {
        assert!(!sealed.contains(secret));
    }
    let opened = flow.open_pending(&sealed).expect("open");
    assert_eq!(opened.state(), request.state());
    assert_eq!(opened.pkce_verifier(), request.pkce_verifier());
    assert_eq!(opened.nonce(), request.nonce());
    assert_eq!(opened.url(), "", "the authorize URL is not kept");
    // Another instance with the same settings opens it too.
    assert_eq!(flow.clone().open_pending(&sealed).expect("a clone").state(), request.state());
    let twin = AuthorizationCodeFlow::new("http://127.0.0.1:9", "my-app", "http://127.0.0.1:8400/callback")
        .expect("flow")
        .sealing_secret(SECRET);
    assert_eq!(twin.open_pending(&sealed).expect("another instance").state(), request.state());
    // Without openid there is no nonce, and none comes back.
    let plain = flow.clone().scopes(["api/read"]);
    let no_nonce =
        plain.open_pending(&plain.seal_pending(&plain.authorize_url()).expect("seal")).expect("open");
    assert_eq!(no_nonce.nonce(), None);
}

#[test]
fn tampered_foreign_expired_and_other_secret_values_are_refused_distinctly() {
    let flow = flow();
    let sealed = flow.seal_pending(&flow.authorize_url()).expect("seal");
    let mut bytes = URL_SAFE_NO_PAD.decode(&sealed).expect("base64url");
    for at in [9, 20, bytes.len() - 1] {
        bytes[at] ^= 1;
        let tampered = URL_SAFE_NO_PAD.encode(&bytes);
        assert_eq!(
            callback_kind(flow.open_pending(&tampered).expect_err("tampered")),
            "SealedSignInTampered"
        );
        bytes[at] ^= 1;
    }
    for junk in ["", "!!!", "abc", &sealed[..20]] {
        assert_eq!(callback_kind(flow.open_pending(junk).expect_err(junk)), "SealedSignInTampered", "{junk}");
    }
    let other_secret = flow.clone().sealing_secret("another secret of at least thirty-two bytes");
    assert_eq!(
        callback_kind(other_secret.open_pending(&sealed).expect_err("secret")),
        "SealedSignInTampered"
    );
    for other in [
        AuthorizationCodeFlow::new("http://127.0.0.1:9", "other-app", "http://127.0.0.1:8400/callback"),
        AuthorizationCodeFlow::new("http://127.0.0.1:9", "my-app", "http://127.0.0.1:8400/other"),
    ] {
        let other = other.expect("flow").sealing_secret(SECRET);
        assert_eq!(callback_kind(other.open_pending(&sealed).expect_err("foreign")), "SealedSignInForeign");
    }
    let brief = flow.clone().pending_max_age(Duration::from_millis(30));
    let young = brief.seal_pending(&brief.authorize_url()).expect("seal");
    brief.open_pending(&young).expect("young enough");
    std::thread::sleep(Duration::from_millis(60));
    let err = brief.open_pending(&young).expect_err("expired");
    assert_eq!(
        callback_kind(err.clone()),
        format!("{:?}", CallbackError::SealedSignInExpired(Duration::from_millis(30)))
    );
    assert_eq!(err.to_string(), "the sealed pending sign-in is older than 30ms");
}

#[test]
fn sealing_needs_a_secret_of_32_bytes() {
    let bare = AuthorizationCodeFlow::new("http://127.0.0.1:9", "my-app", "http://127.0.0.1:8400/callback")
        .expect("flow");
    assert_eq!(argument(bare.seal_pending(&bare.authorize_url()).expect_err("no secret")), "sealing_secret");
    assert_eq!(argument(bare.open_pending("x").expect_err("no secret")), "sealing_secret");
    let short = bare.clone().sealing_secret("only thirty-one bytes long.....");
    assert_eq!(argument(short.check().expect_err("short")), "sealing_secret");
    assert!(bare.clone().sealing_secret([7u8; 32]).check().is_ok());
    assert_eq!(argument(bare.pending_max_age(Duration::ZERO).check().expect_err("zero")), "pending_max_age");
}

#[test]
fn callbacks_are_read_in_every_form_frameworks_hand_over() {
    let query = "code=c1&state=s1&iss=http://127.0.0.1:9";
    for form in [
        format!("http://127.0.0.1:8400/callback?{query}"),
        format!("/callback?{query}"),
        format!("?{query}"),
        query.to_owned(),
        format!("  /callback?{query}#fragment  "),
        format!("com.example.app:/callback?{query}"),
        "/callback?code=c1&state=s1&iss=http%3A%2F%2F127.0.0.1%3A9".to_owned(),
    ] {
        let params = CallbackParams::parse(&form).unwrap_or_else(|e| panic!("{form}: {e}"));
        assert_eq!(params.code.as_deref(), Some("c1"), "{form}");
        assert_eq!(params.state.as_deref(), Some("s1"), "{form}");
        assert_eq!(params.iss.as_deref(), Some("http://127.0.0.1:9"), "{form}");
    }
    assert!(CallbackParams::parse("/callback").expect("a path without a query").code.is_none());
    for bad in ["", "not a callback", "code"] {
        assert!(matches!(CallbackParams::parse(bad), Err(CallbackError::Malformed)), "{bad:?}");
    }
}

#[tokio::test]
async fn a_flow_without_a_revocation_endpoint_cannot_sign_out() {
    assert_eq!(flow().revocation_endpoint().map(Url::as_str), Some("http://127.0.0.1:9/oauth2/revoke"));
    let metadata: AuthServerMetadata = serde_json::from_value(serde_json::json!({
        "issuer": "http://127.0.0.1:9",
        "authorization_endpoint": "http://127.0.0.1:9/authorize",
        "token_endpoint": "http://127.0.0.1:9/token",
        "jwks_uri": "http://127.0.0.1:9/jwks",
    }))
    .expect("a document");
    let flow = AuthorizationCodeFlow::from_metadata(&metadata, "app", "http://127.0.0.1/cb").expect("flow");
    assert_eq!(flow.revocation_endpoint(), None);
    let err = flow.revoke(&TokenSet::new("t").with_refresh_token("r")).await.expect_err("no endpoint");
    assert_eq!(argument(err), "revocation_url");
    let set = flow.revocation_url("http://127.0.0.1:9/revoke");
    assert_eq!(set.revocation_endpoint().map(Url::as_str), Some("http://127.0.0.1:9/revoke"));
    assert_eq!(
        argument(set.revocation_url("http://auth.example.com/revoke").check().expect_err("http")),
        "revocation_url"
    );
}
