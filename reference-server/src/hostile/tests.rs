//! What each switch makes the server send, read from the wire with plain requests and no
//! verification code of the client.

use base64::Engine as _;
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;

use super::*;
use crate::auth::tests::{authorize, sign_in, token, valid_params};

fn decode(segment: &str) -> Value {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(segment).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// The header, claims and signature of the ID token of a sign-in.
async fn id_token(server: &ReferenceServer) -> (Value, Value, String) {
    let body = sign_in(server).await;
    let token = body["id_token"].as_str().unwrap().to_owned();
    let parts: Vec<&str> = token.split('.').collect();
    assert_eq!(parts.len(), 3, "{token}");
    (decode(parts[0]), decode(parts[1]), parts[2].to_owned())
}

async fn jwks(server: &ReferenceServer) -> Vec<Value> {
    let body: Value = reqwest::get(server.jwks_url()).await.unwrap().json().await.unwrap();
    body["keys"].as_array().unwrap().clone()
}

fn server() -> ReferenceServerBuilder {
    ReferenceServer::builder().companies(1).contacts_per_company(0)
}

#[tokio::test]
async fn honest_id_tokens_carry_every_claim_and_switches_change_one_thing_each() {
    let server = server().start().await;
    let (header, claims, _) = id_token(&server).await;
    assert_eq!((header["alg"].as_str(), header["kid"].as_str()), (Some("RS256"), Some("reference-key-1")));
    for claim in ["iss", "sub", "aud", "azp", "iat", "exp", "nonce"] {
        assert!(claims.get(claim).is_some(), "{claim} in {claims}");
    }
    assert_eq!(claims["aud"], ReferenceServer::DEFAULT_PUBLIC_CLIENT_ID);

    server.set_hostile(Hostile::OmitClaim("sub"), true);
    server.set_hostile(Hostile::ExtraAudience, true);
    server.set_hostile(Hostile::IssuedInTheFuture, true);
    let (_, altered, _) = id_token(&server).await;
    assert!(altered.get("sub").is_none());
    assert_eq!(
        altered["aud"],
        serde_json::json!([ReferenceServer::DEFAULT_PUBLIC_CLIENT_ID, ANOTHER_CLIENT])
    );
    assert!(altered["iat"].as_i64().unwrap() >= claims["iat"].as_i64().unwrap() + 300);
    assert_eq!(altered["iss"], claims["iss"], "what no switch names stays");
    assert_eq!(
        server.hostile_modes(),
        [Hostile::OmitClaim("sub"), Hostile::ExtraAudience, Hostile::IssuedInTheFuture]
    );
}

#[tokio::test]
async fn unsigned_and_hs256_tokens_are_what_they_claim_to_be() {
    let server = server().hostile(Hostile::AlgNone).hostile(Hostile::NoKeyId).start().await;
    let (header, _, signature) = id_token(&server).await;
    assert_eq!(header["alg"], "none");
    assert!(header.get("kid").is_none());
    assert!(signature.is_empty());

    server.set_hostile(Hostile::AlgNone, false);
    server.set_hostile(Hostile::Hs256WithPublicKey, true);
    let token = sign_in(&server).await["id_token"].as_str().unwrap().to_owned();
    let (input, signature) = token.rsplit_once('.').unwrap();
    assert_eq!(decode(input.split('.').next().unwrap())["alg"], "HS256");
    // An HMAC over the signing input, keyed with the published modulus.
    let modulus = jwks(&server).await[0]["n"].as_str().unwrap().to_owned();
    let key = DecodingKey::from_secret(modulus.as_bytes());
    assert!(jsonwebtoken::crypto::verify(signature, input.as_bytes(), &key, Algorithm::HS256).unwrap());
}

#[tokio::test]
async fn jwks_switches_reshape_the_published_keys() {
    let server = server().start().await;
    let honest = jwks(&server).await;
    assert_eq!(honest.len(), 1);
    server.set_hostile(Hostile::SecondSigningKey, true);
    let two = jwks(&server).await;
    assert_eq!(two.len(), 2);
    assert_eq!(two[0]["n"], two[1]["n"]);
    assert_ne!(two[0]["kid"], two[1]["kid"]);
    server.set_hostile(Hostile::KeysWithoutId, true);
    server.set_hostile(Hostile::SigningKeyForEncryption, true);
    for key in jwks(&server).await {
        assert!(key.get("kid").is_none(), "{key}");
        assert_eq!(key["use"], "enc");
    }
}

#[tokio::test]
async fn callback_switches_change_state_and_iss() {
    let server =
        server().hostile(Hostile::CallbackWithoutIss).hostile(Hostile::CallbackWrongState).start().await;
    let (status, query) = authorize(&server, &valid_params()).await;
    let query = query.unwrap();
    assert_eq!(status, 302);
    assert!(!query.contains_key("iss"));
    assert_ne!(query["state"], "s1");
    server.set_hostile(Hostile::CallbackWithoutIss, false);
    server.set_hostile(Hostile::CallbackForeignIssuer, true);
    server.set_hostile(Hostile::AccessDenied, true);
    let query = authorize(&server, &valid_params()).await.1.unwrap();
    assert_eq!((query["iss"].as_str(), query["error"].as_str()), (ANOTHER_ISSUER, "access_denied"));
}

#[tokio::test]
async fn a_hostile_refresh_answers_for_another_user() {
    let server = server().start().await;
    let refresh_token = sign_in(&server).await["refresh_token"].as_str().unwrap().to_owned();
    server.set_hostile(Hostile::RefreshForAnotherUser, true);
    server.set_hostile(Hostile::RefreshForeignAuthorizedParty, true);
    let form = [
        ("grant_type", "refresh_token"),
        ("client_id", ReferenceServer::DEFAULT_PUBLIC_CLIENT_ID),
        ("refresh_token", refresh_token.as_str()),
    ];
    let (status, body) = token(&server, &form).await;
    assert_eq!(status, 200, "{body}");
    let claims = |field: &str| decode(body[field].as_str().unwrap().split('.').nth(1).unwrap());
    assert_eq!(claims("id_token")["sub"], ANOTHER_USER);
    assert_eq!(claims("id_token")["azp"], ANOTHER_CLIENT);
    assert_eq!(claims("access_token")["sub"], ANOTHER_USER);
    // A sign-in is not a refresh: its ID token names the client in `azp`.
    let (_, signed_in, _) = id_token(&server).await;
    assert_eq!(signed_in["azp"], ReferenceServer::DEFAULT_PUBLIC_CLIENT_ID);
}
