//! What the client believes of the authorization server's answers, over real HTTP: a discovery
//! document's endpoints pass the one URL check (no plain http off loopback, no user
//! information), introspection's `exp`, `iat` and `nbf` are held to the years 1970 to 9999, and
//! the longest token lifetime believed is one year (31,536,000 seconds).

use business_records::Error;
use business_records::auth::{AuthServerMetadata, AuthorizationCodeFlow, TokenIntrospector, TokenSet};
use business_records_reference_server::{Endpoint, Fault, Faults, ReferenceServer};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

crate::cases! {
    ServerControl:
        a_discovered_endpoint_off_loopback_in_plain_http_or_with_a_password_is_refused_by_name,
        introspection_times_are_held_to_the_years_1970_to_9999,
        a_token_lifetime_is_believed_up_to_one_year_and_no_further;
}

/// One year of seconds, the longest token lifetime believed.
const ONE_YEAR: i64 = 365 * 24 * 60 * 60;
/// 9999-12-31T23:59:59Z, the latest time read from a server.
const LAST_SECOND: i64 = 253_402_300_799;

/// Each endpoint a discovery document names, in turn served as plain http on a host that is
/// not loopback, then with a password in it: `discover` refuses the document, naming the
/// member, and shows no password. The document as the server wrote it is accepted.
async fn a_discovered_endpoint_off_loopback_in_plain_http_or_with_a_password_is_refused_by_name() {
    let server = ReferenceServer::builder().companies(1).contacts_per_company(0).start().await;
    let url = format!("{}/.well-known/openid-configuration", server.auth_url());
    let document: Value = reqwest::get(url).await.expect("the document").json().await.expect("JSON");
    let serve = |document: &Value| {
        let body = document.to_string().into_bytes();
        server.set_faults(Faults::new().on_every(Endpoint::Discovery, 1, Fault::Body(body)));
    };
    serve(&document);
    let metadata = AuthServerMetadata::discover(server.auth_url()).await.expect("the document as written");
    assert_eq!(metadata.token_endpoint.map(String::from), Some(server.token_url()));

    let members = [
        "authorization_endpoint",
        "token_endpoint",
        "jwks_uri",
        "introspection_endpoint",
        "revocation_endpoint",
        "userinfo_endpoint",
    ];
    for member in members {
        for hostile in ["http://evil.example/endpoint", "https://user:PASSWORD@evil.example/endpoint"] {
            let mut tampered = document.clone();
            tampered[member] = json!(hostile);
            serve(&tampered);
            let refused = AuthServerMetadata::discover(server.auth_url())
                .await
                .map(|metadata| format!("{metadata:?}"))
                .expect_err(&format!("{member}: {hostile} accepted"));
            let message = refused.to_string();
            assert!(matches!(refused, Error::Decode(_)), "{member}, {hostile}: {refused:?}");
            assert!(message.contains(&format!("{member}: expected ")), "{member}, {hostile}: {message}");
            assert!(!message.contains("PASSWORD"), "{message}");
        }
    }
}

/// Introspection answers whose times are past the year 9999, negative, fractions or numeric
/// strings, one field at a time: each answer is read, `exp` and `iat` held to their range (the
/// last second of 9999 as it is and one second past it alike), and an `nbf` out of range does
/// not fail the answer.
async fn introspection_times_are_held_to_the_years_1970_to_9999() {
    let server = ReferenceServer::builder().companies(1).contacts_per_company(0).start().await;
    let introspector = TokenIntrospector::new(server.auth_url(), server.client_id(), server.client_secret())
        .expect("introspector");
    let at = |seconds: i64| DateTime::<Utc>::from_timestamp(seconds, 0);
    let last = at(LAST_SECOND);
    // The answer's time fields, and the expiry and issue time read.
    let cases = [
        (json!({"exp": LAST_SECOND}), last, None),
        (json!({"exp": LAST_SECOND + 1}), last, None),
        (json!({"exp": LAST_SECOND - 1}), at(LAST_SECOND - 1), None),
        (json!({"exp": u64::MAX}), last, None),
        (json!({"exp": 1e30}), last, None),
        (json!({"exp": "1700000000.9"}), at(1_700_000_000), None),
        (json!({"exp": -1}), None, None),
        (json!({"iat": LAST_SECOND + 1}), None, last),
        (json!({"iat": 1e300}), None, last),
        (json!({"iat": 1_700_000_000.5}), None, at(1_700_000_000)),
        (json!({"iat": -5}), None, None),
        (json!({"nbf": LAST_SECOND + 1}), None, None),
        (json!({"nbf": 1e30}), None, None),
        (json!({"nbf": -1}), None, None),
    ];
    for (times, expires_at, issued_at) in cases {
        let mut answer = json!({"active": true, "scope": "api/read"});
        answer.as_object_mut().expect("an object").extend(times.as_object().expect("an object").clone());
        let body = answer.to_string().into_bytes();
        server.set_faults(Faults::new().on_every(Endpoint::Introspect, 1, Fault::Body(body)));
        let read = introspector.introspect("a-token").await.unwrap_or_else(|e| panic!("{times}: {e:?}"));
        assert!(read.active, "{times}");
        assert_eq!((read.expires_at, read.issued_at), (expires_at, issued_at), "{times}");
    }
}

/// A refresh answered with an `expires_in` a minute short of a year, exactly a year, a minute
/// past it and past any clock: the new set's expiry is that long after the request was sent,
/// and never more than a year.
async fn a_token_lifetime_is_believed_up_to_one_year_and_no_further() {
    let server = ReferenceServer::builder().companies(1).contacts_per_company(0).start().await;
    let flow =
        AuthorizationCodeFlow::for_refresh(server.auth_url(), server.public_client_id()).expect("flow");
    let signed_in = TokenSet::new("access").with_refresh_token("refresh");
    let cases = [
        (json!(ONE_YEAR - 60), ONE_YEAR - 60),
        (json!(ONE_YEAR), ONE_YEAR),
        (json!(ONE_YEAR + 60), ONE_YEAR),
        (json!(u64::MAX), ONE_YEAR),
    ];
    for (expires_in, believed) in cases {
        let answer = json!({"access_token": "new", "token_type": "Bearer", "expires_in": expires_in});
        let body = answer.to_string().into_bytes();
        server.set_faults(Faults::new().on_every(Endpoint::Token, 1, Fault::Body(body)));
        let before = Utc::now();
        let tokens = flow.refresh(&signed_in).await.unwrap_or_else(|e| panic!("{expires_in}: {e:?}"));
        let after = Utc::now();
        let sent_at = tokens.expires_at.expect("an expiry") - chrono::Duration::seconds(believed);
        assert!(before <= sent_at && sent_at <= after, "expires_in {expires_in}: {:?}", tokens.expires_at);
    }
}
