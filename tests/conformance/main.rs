//! The conformance catalogue: the behaviour rules of the spec, checked over real HTTP.
//!
//! By default every case runs against the embedded reference server. With
//! `BUSINESS_RECORDS_CONFORMANCE_BASE_URL`, `..._AUTH_URL`, `..._CLIENT_ID` and
//! `..._CLIENT_SECRET` set, the read-only cases that need no server control run against that
//! deployment instead, and the others report themselves skipped with the reason.

mod support;

mod auth_client_credentials;
mod auth_refresh;
mod auth_token_endpoint;
mod auth_user;
mod contract;
mod errors;
mod interop_oidc;
mod leniency;
mod limits;
mod models;
mod openapi;
mod pagination;
mod pagination_guards;
mod resilience;
mod secrets;
#[cfg(feature = "redis")]
mod shared_cache;
#[cfg(feature = "redis")]
mod shared_user_store;
mod telemetry;
mod token_chaos;
mod verifier;
mod version_signals;
mod versioning;
