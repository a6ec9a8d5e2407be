//! The conformance catalogue: the behaviour rules of the API (docs/api.md), checked over real HTTP.
//!
//! By default every case runs against the embedded reference server. With
//! `BUSINESS_RECORDS_CONFORMANCE_BASE_URL`, `..._AUTH_URL`, `..._CLIENT_ID` and
//! `..._CLIENT_SECRET` set, the read-only cases that need no server control run against that
//! deployment instead, and the others are reported ignored with the reason.
//!
//! Each module lists its cases with what they need in `crate::cases!` (see [`harness`]); this
//! binary runs them with `libtest-mimic` (`harness = false`), so a case that cannot run here is
//! reported ignored by the test runner, not passed. A new module gets a `mod` line below and its
//! `CASES` in [`catalogue`]; `#[test]` and `#[tokio::test]` do not work here (a case checks).

#![allow(
    unreachable_pub,
    reason = "a binary of its own: its modules share items with `pub`, and nothing is reachable from outside"
)]

mod harness;
mod support;

mod auth_answers;
mod auth_client_credentials;
mod auth_refresh;
mod auth_token_endpoint;
mod auth_user;
mod body_limits;
mod contract;
mod endpoints;
mod errors;
mod hostile;
mod interop_oidc;
mod leniency;
mod limits;
mod models;
mod openapi;
mod pacing;
mod pagination;
mod pagination_guards;
mod relying_party;
mod resilience;
mod secrets;
mod shared_cache;
mod shared_pacing;
mod shared_user_store;
mod telemetry;
mod token_chaos;
mod verifier;
mod version_signals;
mod versioning;
mod web_app;
mod web_sign_in;

/// Every case of every module, in the order they start: `resilience` first, whose first case
/// waits out Retry-After for a minute and a half while the others run beside it.
fn catalogue() -> Vec<harness::Case> {
    [
        resilience::CASES,
        harness::CASES,
        auth_client_credentials::CASES,
        auth_answers::CASES,
        auth_refresh::CASES,
        auth_token_endpoint::CASES,
        auth_user::CASES,
        body_limits::CASES,
        contract::CASES,
        endpoints::CASES,
        errors::CASES,
        hostile::CASES,
        hostile::gate::CASES,
        hostile::numbers::CASES,
        hostile::pages::CASES,
        hostile::refresh::CASES,
        hostile::stores::CASES,
        hostile::shown::CASES,
        interop_oidc::CASES,
        leniency::CASES,
        limits::CASES,
        models::CASES,
        openapi::CASES,
        pacing::CASES,
        pagination::CASES,
        pagination_guards::CASES,
        relying_party::CASES,
        secrets::CASES,
        shared_cache::CASES,
        shared_pacing::CASES,
        shared_user_store::CASES,
        telemetry::CASES,
        token_chaos::CASES,
        verifier::CASES,
        version_signals::CASES,
        versioning::CASES,
        web_app::CASES,
        web_sign_in::CASES,
    ]
    .concat()
}

fn main() {
    let mut args = libtest_mimic::Arguments::from_args();
    // libtest reads RUST_TEST_THREADS when `--test-threads` is not given; so does this runner.
    if args.test_threads.is_none() {
        args.test_threads = std::env::var("RUST_TEST_THREADS").ok().and_then(|n| n.parse().ok());
    }
    // While only one dispatcher is registered, tracing-core 0.1 caches a callsite's interest
    // from the default of whichever thread reaches it first (tokio-rs/tracing#3611): a case that
    // captures traces on its own thread would lose the events of a callsite another case's
    // thread reached first. A second dispatcher, alive for the whole run, avoids that path.
    let _second_dispatcher = tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default());
    let host = harness::Host::new();
    let trials = catalogue().into_iter().map(|case| case.trial(&host)).collect();
    libtest_mimic::run(&args, trials).exit();
}
