//! The sign-in as an OpenID Connect relying party, against the reference server playing a
//! hostile provider (one `Hostile` switch per misbehaviour), in the spirit of the OpenID
//! Foundation's `rp-*` certification tests: ID tokens as OpenID Connect Core sections 2 and
//! 3.1.3.7 require, keys as section 10.1 allows and rotated, `iss` in callbacks (RFC 9207),
//! refreshed ID tokens that must name the same user (section 12.2), and the JWS attacks of
//! RFC 8725. Every refusal happens before the tokens reach the application.

use std::time::Duration;

use business_records::auth::{
    AuthServerMetadata, AuthorizationCodeFlow, AuthorizationRequest, LoopbackRedirect, MemoryTokenStore,
    TokenSet, TokenStore, VerifyError,
};
use business_records::error::{CallbackError, ErrorCode};
use business_records::{Auth, Client, Error};
use business_records_reference_server::{Hostile, ReferenceServer, ReferenceServerBuilder};

use crate::auth_user::browse;
use crate::support;
use crate::verifier::ROTATED_KEY_PEM;

crate::cases! {
    ServerControl:
        id_tokens_without_a_required_claim_are_refused,
        every_audience_must_be_trusted_and_azp_must_name_the_client,
        foreign_issuers_wrong_nonces_and_times_out_of_range_are_refused,
        unsigned_hs256_unknown_crit_and_bad_signatures_are_refused,
        a_token_without_kid_uses_the_only_signing_key_and_is_refused_among_several,
        keys_published_for_encryption_never_verify,
        a_sign_in_right_after_a_key_rotation_fetches_the_keys_once,
        made_up_key_ids_cost_one_jwks_fetch_per_refetch_interval,
        a_callback_without_iss_is_refused_when_the_server_advertises_rfc_9207,
        state_and_iss_mismatches_and_denials_fail_before_any_token_request,
        a_refresh_answering_for_another_user_is_refused_and_none_of_its_tokens_kept,
        a_refreshed_id_token_naming_another_authorized_party_is_refused;
}

/// Where the flows of this module say they return; the callback is read from the
/// authorization server's redirect instead of being received there.
const REDIRECT_URI: &str = "http://127.0.0.1:1/callback";

fn small() -> ReferenceServerBuilder {
    ReferenceServer::builder().companies(3).contacts_per_company(0)
}

fn flow(server: &ReferenceServer) -> AuthorizationCodeFlow {
    AuthorizationCodeFlow::new(server.auth_url(), server.public_client_id(), REDIRECT_URI)
        .expect("a valid flow")
        .scopes(["openid", "api/read"])
}

/// The callback the authorization server sends the browser to for `request`.
async fn callback(request: &AuthorizationRequest) -> String {
    let http =
        reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    let response = http.get(request.url()).send().await.expect("authorization request");
    assert_eq!(response.status(), 302, "the reference server redirects back at once");
    response.headers()["location"].to_str().expect("ascii").to_owned()
}

/// One whole sign-in through `flow`.
async fn sign_in(flow: &AuthorizationCodeFlow) -> Result<TokenSet, Error> {
    let request = flow.authorize_url();
    let callback = callback(&request).await;
    flow.exchange(request, &callback).await
}

/// The verification error of a sign-in that must fail on its ID token.
async fn refused(flow: &AuthorizationCodeFlow) -> std::sync::Arc<VerifyError> {
    match sign_in(flow).await {
        Err(Error::TokenVerification(error)) => error,
        other => panic!("expected the ID token to be refused, got {other:?}"),
    }
}

/// Turns exactly `modes` on.
fn only(server: &ReferenceServer, modes: &[Hostile]) {
    for mode in server.hostile_modes() {
        server.set_hostile(mode, false);
    }
    for mode in modes {
        server.set_hostile(*mode, true);
    }
    assert_eq!(server.hostile_modes().len(), modes.len());
}

/// With `modes` on (and nothing else), a sign-in with a fresh flow fails on its ID token;
/// returns why. Every refusal comes after a code exchange: the token endpoint answered.
async fn refused_with(server: &ReferenceServer, modes: &[Hostile]) -> std::sync::Arc<VerifyError> {
    only(server, modes);
    let before = server.token_requests_for("authorization_code");
    let error = refused(&flow(server)).await;
    assert_eq!(server.token_requests_for("authorization_code"), before + 1);
    error
}

fn missing(error: &VerifyError) -> Option<&str> {
    match error {
        VerifyError::MissingClaim { claim, .. } => Some(claim),
        _ => None,
    }
}

async fn id_tokens_without_a_required_claim_are_refused() {
    let server = small().start().await;
    let tokens = sign_in(&flow(&server)).await.expect("an honest provider passes every check");
    let claims = tokens.id_token_claims().expect("verified claims");
    assert!(claims.sub.is_some() && claims.iat.is_some());

    for claim in ["sub", "iat", "iss", "aud", "exp"] {
        let error = refused_with(&server, &[Hostile::OmitClaim(claim)]).await;
        assert_eq!(missing(&error), Some(claim), "without {claim}: {error:?}");
    }
    // The sign-in sent a nonce: an ID token without it could be a replayed one.
    let error = refused_with(&server, &[Hostile::OmitClaim("nonce")]).await;
    assert!(matches!(*error, VerifyError::InvalidNonce), "{error:?}");
}

async fn every_audience_must_be_trusted_and_azp_must_name_the_client() {
    let server = small().start().await;
    let error = refused_with(&server, &[Hostile::ForeignAudience]).await;
    assert!(matches!(*error, VerifyError::InvalidAudience), "{error:?}");
    let error = refused_with(&server, &[Hostile::ExtraAudience]).await;
    assert!(
        matches!(&*error, VerifyError::UntrustedAudience { audience, .. } if audience == "another-client"),
        "{error:?}"
    );
    let error = refused_with(&server, &[Hostile::ForeignAuthorizedParty]).await;
    assert!(matches!(*error, VerifyError::InvalidAuthorizedParty), "{error:?}");

    // A flow told to trust the other audience accepts both, with `azp` naming the client ...
    only(&server, &[Hostile::ExtraAudience]);
    let trusting = flow(&server).trusted_audiences(["another-client"]);
    let tokens = sign_in(&trusting).await.expect("a trusted second audience");
    let claims = tokens.id_token_claims().expect("claims");
    assert_eq!(claims.aud, [server.public_client_id(), "another-client"]);
    assert_eq!(claims.extra["azp"], server.public_client_id());
    // ... and only with it: several audiences and no `azp` is refused.
    server.set_hostile(Hostile::OmitClaim("azp"), true);
    let error = refused(&trusting).await;
    assert_eq!(missing(&error), Some("azp"), "{error:?}");
    // One audience needs no `azp`.
    server.set_hostile(Hostile::ExtraAudience, false);
    sign_in(&trusting).await.expect("a single audience without azp");
}

async fn foreign_issuers_wrong_nonces_and_times_out_of_range_are_refused() {
    let server = small().start().await;
    let error = refused_with(&server, &[Hostile::ForeignIssuer]).await;
    assert!(matches!(*error, VerifyError::InvalidIssuer), "{error:?}");
    let error = refused_with(&server, &[Hostile::WrongNonce]).await;
    assert!(matches!(*error, VerifyError::InvalidNonce), "{error:?}");
    // Five minutes out, well past the 60 s of clock-skew leeway.
    let error = refused_with(&server, &[Hostile::Expired]).await;
    assert!(matches!(*error, VerifyError::Expired), "{error:?}");
    let error = refused_with(&server, &[Hostile::NotYetValid]).await;
    assert!(matches!(*error, VerifyError::NotYetValid), "{error:?}");
    let error = refused_with(&server, &[Hostile::IssuedInTheFuture]).await;
    assert!(matches!(*error, VerifyError::NotYetValid), "{error:?}");
}

async fn unsigned_hs256_unknown_crit_and_bad_signatures_are_refused() {
    let server = small().start().await;
    let error = refused_with(&server, &[Hostile::AlgNone]).await;
    assert!(matches!(&*error, VerifyError::UnsupportedAlgorithm { alg, .. } if alg == "none"), "{error:?}");
    // RFC 8725 section 2.1: the algorithm is the one registered, never the token's choice.
    let error = refused_with(&server, &[Hostile::Hs256WithPublicKey]).await;
    assert!(matches!(&*error, VerifyError::UnsupportedAlgorithm { alg, .. } if alg == "HS256"), "{error:?}");
    let error = refused_with(&server, &[Hostile::UnknownCriticalHeader]).await;
    assert!(matches!(*error, VerifyError::Malformed), "{error:?}");
    let error = refused_with(&server, &[Hostile::BadSignature]).await;
    assert!(matches!(*error, VerifyError::InvalidSignature), "{error:?}");
    // The header alone refuses the first three: only the badly signed one needed a key.
    assert_eq!(server.jwks_requests(), 1);
}

async fn a_token_without_kid_uses_the_only_signing_key_and_is_refused_among_several() {
    let server = small().hostile(Hostile::NoKeyId).start().await;
    let tokens = sign_in(&flow(&server)).await.expect("the JWKS's only key");
    assert_eq!(tokens.id_token_claims().and_then(|c| c.sub.as_deref()), Some(server.test_user()));
    // Keys published without `kid` are kept.
    server.set_hostile(Hostile::KeysWithoutId, true);
    sign_in(&flow(&server)).await.expect("the only key, which has no kid");
    // Two keys: which one is meant is not known, so neither is tried.
    let error = refused_with(&server, &[Hostile::NoKeyId, Hostile::SecondSigningKey]).await;
    assert!(matches!(*error, VerifyError::MissingKeyId), "{error:?}");
    // A token that names its key is fine among several.
    server.set_hostile(Hostile::NoKeyId, false);
    sign_in(&flow(&server)).await.expect("a kid selects one of two keys");
}

async fn keys_published_for_encryption_never_verify() {
    let server = small().hostile(Hostile::SigningKeyForEncryption).start().await;
    let error = refused(&flow(&server)).await;
    assert!(matches!(*error, VerifyError::UnknownKey { .. }), "{error:?}");
    let error = refused_with(&server, &[Hostile::SigningKeyForEncryption, Hostile::NoKeyId]).await;
    assert!(matches!(*error, VerifyError::MissingKeyId), "no signing key to fall back on: {error:?}");
}

async fn a_sign_in_right_after_a_key_rotation_fetches_the_keys_once() {
    let server = small().start().await;
    let flow = flow(&server);
    sign_in(&flow).await.expect("a first sign-in");
    assert_eq!(server.jwks_requests(), 1);

    server.rotate_signing_key(ROTATED_KEY_PEM, "rotated-key");
    // Eight users sign in at once right after the rotation: one fetch finds the new key.
    let sign_ins = futures::future::join_all((0..8).map(|_| sign_in(&flow))).await;
    for tokens in sign_ins {
        tokens.expect("a sign-in right after the rotation");
    }
    assert_eq!(server.jwks_requests(), 2, "one fetch for eight ID tokens signed with the new key");
}

async fn made_up_key_ids_cost_one_jwks_fetch_per_refetch_interval() {
    let server = small().start().await;
    let interval = Duration::from_millis(500);
    let flow = flow(&server).jwks_refetch_interval(interval);
    sign_in(&flow).await.expect("a first sign-in");
    assert_eq!(server.jwks_requests(), 1);

    server.set_hostile(Hostile::UnknownKeyId, true);
    let sign_ins = futures::future::join_all((0..8).map(|_| sign_in(&flow))).await;
    for result in sign_ins {
        let error = match result {
            Err(Error::TokenVerification(error)) => error,
            other => panic!("expected an unknown key, got {other:?}"),
        };
        assert!(matches!(*error, VerifyError::UnknownKey { .. }), "{error:?}");
    }
    assert_eq!(server.jwks_requests(), 2, "eight made-up key ids, one refetch");
    refused(&flow).await;
    assert_eq!(server.jwks_requests(), 2, "none more within the interval");
    tokio::time::sleep(interval).await;
    refused(&flow).await;
    assert_eq!(server.jwks_requests(), 3, "one more once the interval has passed");
}

async fn a_callback_without_iss_is_refused_when_the_server_advertises_rfc_9207() {
    let server = small().hostile(Hostile::CallbackWithoutIss).start().await;
    let metadata = AuthServerMetadata::discover(server.auth_url()).await.expect("discovery");
    assert!(metadata.authorization_response_iss_parameter_supported, "the server advertises RFC 9207");
    let discovered = AuthorizationCodeFlow::from_metadata(&metadata, server.public_client_id(), REDIRECT_URI)
        .expect("a flow")
        .scopes(["openid", "api/read"]);
    let request = discovered.authorize_url();
    let callback = callback(&request).await;
    assert!(!callback.contains("iss="), "{callback}");
    let err = discovered.exchange(request, &callback).await.expect_err("no iss");
    assert!(matches!(err, Error::Callback(ref e) if matches!(**e, CallbackError::MissingIssuer)), "{err:?}");
    let err = sign_in(&flow(&server).require_iss_parameter(true)).await.expect_err("no iss");
    assert!(matches!(err, Error::Callback(ref e) if matches!(**e, CallbackError::MissingIssuer)), "{err:?}");
    assert_eq!(server.token_requests(), 0, "refused before any token request");

    // A flow that was not told the server sends `iss` accepts a callback without it.
    sign_in(&flow(&server)).await.expect("iss not required");
    server.set_hostile(Hostile::CallbackWithoutIss, false);
    sign_in(&discovered).await.expect("with iss");
}

async fn state_and_iss_mismatches_and_denials_fail_before_any_token_request() {
    let server = small().start().await;
    let flow = flow(&server);
    server.set_hostile(Hostile::CallbackWrongState, true);
    let err = sign_in(&flow).await.expect_err("another state");
    assert!(matches!(err, Error::Callback(ref e) if matches!(**e, CallbackError::StateMismatch)), "{err:?}");
    server.set_hostile(Hostile::CallbackWrongState, false);
    server.set_hostile(Hostile::CallbackForeignIssuer, true);
    let err = sign_in(&flow).await.expect_err("another issuer");
    assert!(matches!(err, Error::Callback(ref e) if matches!(**e, CallbackError::IssuerMismatch)), "{err:?}");
    server.set_hostile(Hostile::CallbackForeignIssuer, false);

    // The user declines: the callback goes to the app, which shows the user a failure page.
    server.set_hostile(Hostile::AccessDenied, true);
    let redirect = LoopbackRedirect::bind().await.expect("bind");
    let denied =
        AuthorizationCodeFlow::new(server.auth_url(), server.public_client_id(), redirect.redirect_uri())
            .expect("flow");
    let request = denied.authorize_url();
    let (callback, page) = tokio::join!(redirect.wait_for_callback_of(&request), browse(request.url()));
    assert!(page.contains("not completed"), "{page}");
    let err = denied.exchange(request, &callback.expect("callback")).await.expect_err("denied");
    assert!(matches!(err, Error::Authorization(_)), "{err:?}");
    assert_eq!(err.code(), Some(&ErrorCode::AccessDenied));
    assert!(!err.needs_reauthentication());
    assert_eq!(server.token_requests(), 0, "no callback reached the token endpoint");

    server.set_hostile(Hostile::AccessDenied, false);
    sign_in(&flow).await.expect("an honest callback");
}

async fn a_refresh_answering_for_another_user_is_refused_and_none_of_its_tokens_kept() {
    let server = small().start().await;
    let flow = flow(&server);
    let tokens = sign_in(&flow).await.expect("sign-in");
    let store = MemoryTokenStore::new();
    store.save(&tokens).await.expect("saved");
    let client = Client::builder()
        .base_url(server.base_url())
        .auth(Auth::user(flow.clone(), tokens.clone()).store(store.clone()))
        .build()
        .expect("client");
    client.companies().send().await.expect("the user's own tokens");

    server.set_hostile(Hostile::RefreshForAnotherUser, true);
    // The API refuses the access token, so the client refreshes: the answer is another user's.
    server.expire_tokens();
    let err = client.companies().send().await.expect_err("a refresh for another user");
    assert!(err.needs_reauthentication(), "{err:?}");
    assert!(err.to_string().contains("another user (sub)"), "{err}");
    assert_eq!(server.token_requests_for("refresh_token"), 1);
    // The refresh token it presented may be spent: the store keeps the previous set without it,
    // so that no process presents it again.
    let kept = store.get().expect("the previous set");
    assert_eq!(
        (&kept.access_token, &kept.refresh_token, &kept.id_token),
        (&tokens.access_token, &None, &tokens.id_token)
    );
    let statuses: Vec<u16> = support::api_requests(&server).iter().map(|r| r.status()).collect();
    assert_eq!(statuses, [200, 401], "the other user's access token was never sent");

    // The same from `refresh`, and from a set saved without its verified claims (as sets saved
    // by earlier releases are), where the previous ID token's own payload is compared.
    let err = flow.refresh(&tokens).await.expect_err("another user");
    assert!(err.needs_reauthentication(), "{err:?}");
    let mut json = serde_json::to_value(&tokens).expect("json");
    json.as_object_mut().expect("a set is an object").remove("id_token_claims");
    let stored: TokenSet = serde_json::from_value(json).expect("set");
    assert!(stored.id_token_claims().is_none());
    let err = flow.refresh(&stored).await.expect_err("another user, from the stored ID token");
    assert!(err.needs_reauthentication(), "{err:?}");

    server.set_hostile(Hostile::RefreshForAnotherUser, false);
    let renewed = flow.refresh(&stored).await.expect("the same user again");
    assert_eq!(renewed.id_token_claims().and_then(|c| c.sub.as_deref()), Some(server.test_user()));
}

async fn a_refreshed_id_token_naming_another_authorized_party_is_refused() {
    let server = small().start().await;
    let flow = flow(&server);
    let tokens = sign_in(&flow).await.expect("sign-in");
    server.set_hostile(Hostile::RefreshForeignAuthorizedParty, true);
    let err = flow.refresh(&tokens).await.expect_err("another azp");
    assert!(matches!(err, Error::ReauthenticationRequired(_)), "{err:?}");
    assert!(err.to_string().contains("(azp)"), "{err}");
    server.set_hostile(Hostile::RefreshForeignAuthorizedParty, false);
    flow.refresh(&tokens).await.expect("the same authorized party");
}
