//! # business-records
//!
//! The Rust client for the business-records HTTP API: OAuth 2.0 bearer tokens from a separate
//! authorization server, URL-versioned endpoints (`{base_url}/v1/...`) and cursor-paginated
//! lists of companies and contacts. The client deals with tokens, cursors, retries and API
//! versions; you get typed items. "API Part N" in these docs is a part of the API's
//! specification, summarised part by part in the repository's `docs/api.md`.
//!
//! ```no_run
//! use business_records::{Auth, Client, CompanySort};
//!
//! # async fn run() -> Result<(), business_records::Error> {
//! let client = Client::builder()
//!     .base_url("https://api.example.com")
//!     .auth(Auth::client_credentials("https://auth.example.com", "my-client-id", "my-secret")
//!         .scopes(["api/read"])) // and "api/write" to create, change or delete
//!     .build()?;
//!
//! let mut companies = client.companies().status("active").sort(CompanySort::CreatedAt.desc()).stream();
//! while let Some(company) = companies.try_next().await? {
//!     println!("{} {}", company.id, company.name);
//! }
//! # Ok(()) }
//! ```
//!
//! ## Guide
//!
//! The [`guide`] shows how to do each thing, by task, and links to the items whose
//! documentation holds the rules:
//!
//! | To | Start with | Guide |
//! |---|---|---|
//! | build a client and choose scopes (`api/read`, `api/write`) | [`Client::builder`], [`Auth`] | [Set up](guide#set-up) |
//! | list companies, contacts or any list | [`List`]: [`send`](List::send), [`pages`](List::pages), [`stream`](List::stream) | [List](guide#list) |
//! | call an endpoint the client does not model | [`Client::get`], [`Client::request`], [`Client::list`] | [Reach any endpoint](guide#reach-any-endpoint) |
//! | sign users in | [`auth::AuthorizationCodeFlow`], [`Auth::user`], [`auth::TokenStore`] | [Sign users in](guide#sign-users-in) |
//! | handle and print errors | [`Error`] | [Handle errors](guide#handle-errors) |
//! | retry, pace, resume | [`RetryPolicy`], [`RateLimit`], [`ItemStream::resume_cursor`] | [Retry, pace and resume](guide#retry-pace-and-resume) |
//! | follow API versions | [`ApiVersion`], [`DeprecationNotice`], [`DeprecationPolicy`] | [Follow API versions](guide#follow-api-versions) |
//! | test your own code | `business-records-reference-server`, [`ClientBuilder::settings`] | [Test your own code](guide#test-your-own-code) |
//! | trace, configure HTTP, run many processes | [`ClientBuilder::middleware`], [`ClientBuilder::http_config`] | [Run in production](guide#run-in-production) |
//!
//! What a server sends is read leniently and bounded: see [`Company`], [`Page::undecodable`]
//! and the [`limits`] module.
//!
//! ## Features
//!
//! | Feature | Default | Adds |
//! |---|---|---|
//! | `rustls` | on | TLS through rustls with the aws-lc crypto provider (reqwest's default) |
//! | `native-tls` | off | TLS through the platform's library, as reqwest's `native-tls`; with `default-features = false` it replaces rustls |
//! | `redis` | off | `auth::RedisTokenCache`: token state shared by many processes over Redis or Valkey |
//!
//! The default crypto, aws-lc (rustls's provider, and JWT verification whatever the TLS
//! feature), is C code: building it needs a C compiler, not CMake.
//!
//! ## Runtime
//!
//! The client runs on Tokio: token requests and prefetched pages run in tasks of their own
//! (`tokio::spawn`), so requests and streams must be polled inside a Tokio runtime (the
//! multi-threaded one, as `#[tokio::main]` starts it, or the current-thread one). Polling them
//! elsewhere panics, as `tokio::spawn` does.
//!
//! ## Public dependencies
//!
//! Types of these crates appear in the API and are re-exported at the versions this crate
//! uses: [`reqwest`] (the `http_config` closure, `TokenVerifier::http`), [`reqwest_middleware`]
//! ([`ClientBuilder::middleware`]), [`url`] and [`Url`], [`chrono`] (dates) and [`serde_json`]
//! ([`Company::extra`]). Naming them through `business_records::` keeps one copy in your build.
#![deny(missing_docs)]
// Library code never unwraps: what comes from the network or the caller gets an error instead.
// (Tests may; the lint table in Cargo.toml holds the rest of the crate's lints.)
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod auth;
mod bounds;
mod client;
mod deprecation;
pub mod error;
mod fleet;
// Testing the docs, the README's snippets are doc tests of the guide's page too.
#[cfg_attr(doctest, doc = include_str!("../README.md"))]
pub mod guide;
pub mod limits;
mod list;
mod model;
mod pacing;
mod pagination;
mod pipeline;
mod request;
mod retry;
mod telemetry;
mod text;
mod timestamp;
mod urls;
mod version;
mod wire;

pub use auth::Auth;
pub use client::{Client, ClientBuilder};
pub use deprecation::{Deprecation, DeprecationNotice, DeprecationPolicy};
pub use error::{Error, Undecodable};
pub use http::Method;
pub use list::List;
pub use model::{Company, CompanySort, CompanyStatus, Contact, ContactSort, Sort};
pub use pacing::RateLimit;
pub use pagination::{Cursor, ItemStream, OnUndecodable, Page, PageStream};
pub use request::Request;
pub use retry::RetryPolicy;
pub use urls::ApiPath;
pub use version::ApiVersion;

// The crates whose types appear in this crate's signatures, at the versions it uses: name them
// through these paths and a version bump here never leaves two copies in your build.
/// Dates and times: [`Company::created_at`], [`auth::TokenSet::expires_at`], sunset dates.
pub use chrono;
/// The HTTP client: [`ClientBuilder::http_config`] configures a [`reqwest::ClientBuilder`], and
/// [`auth::TokenVerifier::http`] takes a [`reqwest::Client`].
pub use reqwest;
/// The middleware crate whose layers [`ClientBuilder::middleware`] takes.
pub use reqwest_middleware;
/// JSON values: the fields the API does not name, in [`Company::extra`].
pub use serde_json;
/// URLs: [`Client::api_root`], [`DeprecationNotice`] links, sunset successors.
pub use url::{self, Url};

// The types users move across tasks are `Send + Sync`; this fails to compile if one stops being.
const _: () = {
    const fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<Client>();
    assert_send_sync::<Error>();
    assert_send_sync::<ItemStream<Company>>();
    assert_send_sync::<PageStream<Contact>>();
    assert_send_sync::<Page<Company>>();
    assert_send_sync::<auth::TokenVerifier>();
    assert_send_sync::<auth::AuthorizationCodeFlow>();
    assert_send_sync::<auth::AuthorizationRequest>();
    assert_send_sync::<auth::LoopbackRedirect>();
    assert_send_sync::<auth::TokenSet>();
    assert_send_sync::<auth::UserAuth>();
    assert_send_sync::<auth::FileTokenStore>();
    assert_send_sync::<auth::MemoryTokenStore>();
    assert_send_sync::<auth::MemoryKeyedStore>();
    assert_send_sync::<auth::DirectoryTokenStore>();
    assert_send_sync::<auth::TokenIntrospector>();
    assert_send_sync::<RateLimit>();
};

// An `Error` stays small: every context lives behind an `Arc`, so results stay cheap to move.
const _: () = assert!(std::mem::size_of::<Error>() <= 24);
