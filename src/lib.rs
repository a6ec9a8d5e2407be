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
//!         .scopes(["api/read"]))
//!     .build()?;
//!
//! let mut companies = client.companies().status("active").sort(CompanySort::CreatedAt.desc()).stream();
//! while let Some(company) = companies.try_next().await? {
//!     println!("{} {}", company.id, company.name);
//! }
//! # Ok(()) }
//! ```
//!
//! ## Tasks
//!
//! ### Authenticate
//!
//! | You are | Use |
//! |---|---|
//! | a backend (server to server) | [`Auth::client_credentials`]: HTTP Basic by default, `.credentials_in_body()` for the form |
//! | a desktop or mobile app whose users sign in | [`auth::AuthorizationCodeFlow`] (PKCE), [`auth::LoopbackRedirect`], then [`Auth::user`] |
//! | a web app whose users sign in | one [`auth::AuthorizationCodeFlow`] with a [`sealing_secret`](auth::AuthorizationCodeFlow::sealing_secret): [`seal_pending`](auth::AuthorizationCodeFlow::seal_pending) into a cookie, [`exchange_sealed`](auth::AuthorizationCodeFlow::exchange_sealed) at the callback; each user's client from one shared client with [`Client::with_auth`], tokens in an [`auth::KeyedTokenStore`], [`Client::sign_out`] |
//! | holding a token obtained elsewhere | [`Auth::static_token`] |
//! | a resource server receiving these tokens | [`auth::TokenVerifier`] |
//!
//! Tokens are cached per client (clones share them), refreshed ahead of expiry, and fetched by
//! one request however many tasks need one at the same moment. A token the API rejects with
//! `invalid_token` is replaced and the request sent once more. HTTPS is required everywhere
//! except loopback hosts, and no redirect is ever followed.
//!
//! A signed-in user's tokens come back from the code exchange as an [`auth::TokenSet`] (the ID
//! token verified); the client renews them with the refresh token and saves rotated ones
//! through an [`auth::TokenStore`] such as [`auth::FileTokenStore`]. A token request runs to
//! completion whoever stops waiting for it, and nothing the server answered is lost: see the
//! refresh guarantees in the [`auth`] module, and `examples/desktop_login.rs`.
//!
//! A web app serves every user from one process: one flow, one shared client and a client
//! derived from it per user ([`Client::with_auth`]: the connection pool and settings are
//! shared), the pending sign-in sealed into a cookie so that any instance finishes it, one
//! [`auth::KeyedTokenStore`] for every user, and [`Client::sign_out`] to revoke a user's tokens
//! (RFC 7009). See `examples/web_app.rs`.
//!
//! Many processes with the same credentials can share one token, and one user's refreshes, over
//! Redis: see `auth::RedisTokenCache` (feature `redis`).
//!
//! ### List
//!
//! [`Client::companies`] and [`Client::contacts`] return a [`List`] builder: [`limit`](List::limit)
//! (page size, 1 to 100), [`sort`](List::sort), filters ([`status`](List::status),
//! [`company_id`](List::company_id)), [`cursor`](List::cursor), [`max_items`](List::max_items).
//! Then:
//!
//! - [`send`](List::send): one [`Page`];
//! - [`pages`](List::pages): a [`PageStream`] of pages;
//! - [`stream`](List::stream): an [`ItemStream`] of items across pages.
//!
//! Streams follow `nextCursor` while `hasMore` is true, repeat the query on every page, request
//! the next page while you read the current one, and refuse to loop on a repeated cursor. They
//! are `Send + Sync + 'static` and implement [`futures::Stream`]; their inherent `try_next` and
//! `try_collect` need no trait import.
//!
//! ```no_run
//! # async fn run(client: business_records::Client) -> Result<(), business_records::Error> {
//! let page = client.contacts().company_id("cmp_1").limit(50).send().await?;
//! println!("{} of {:?} contacts", page.data.len(), page.total_count);
//! let first_thousand: Vec<_> = client.companies().max_items(1_000).stream().try_collect().await?;
//! # let _ = first_thousand;
//! # Ok(()) }
//! ```
//!
//! ### Reach any endpoint
//!
//! The API grows without a new version (API Part 9.3). [`Client::get`] and
//! [`Client::request`] reach any path below the version root ([`ApiPath`]: a literal, or
//! segments each encoded as one) and decode the answer into any type; [`Client::list`] is the
//! same [`List`] for any endpoint that answers with the page envelope. Every call goes through
//! the pipeline the listings use: tokens and the 401 resend, pacing, retries (a POST or PATCH
//! only with an [`idempotency_key`](Request::idempotency_key)), deprecation and sunset, limits,
//! spans. What a request carries passes one gate before anything is sent: a segment arrives as
//! given or is refused ([`ApiPath`]), and headers the client owns or that frame the request are
//! refused ([`Request::header`]).
//!
//! ```no_run
//! # async fn run(client: business_records::Client) -> Result<(), business_records::Error> {
//! use business_records::{Company, Method};
//! use serde_json::{Value, json};
//! let one: Company = client.get(["companies", "cmp_1"]).send().await?;
//! let note: Value = client.request(Method::POST, "notes").json(&json!({"text": "called"}))
//!     .idempotency_key("note-7f3a").send().await?;
//! let deals: Vec<Value> = client.list::<Value>("deals").sort("-amount").stream().try_collect().await?;
//! # let _ = (one, note, deals); Ok(()) }
//! ```
//!
//! ### Read what the server sends
//!
//! Where the API leaves types and formats open, records are read leniently: a company needs an
//! `id` and a `name`, every other field is optional, timestamps are read in RFC 3339 and the
//! common variants (a space for `T`, no offset, epoch numbers), and a value that cannot be
//! read is kept raw in [`Company::extra`] and listed by [`Company::fallbacks`]. An element of
//! a page that is not a record is reported in [`Page::undecodable`] and the listing goes on
//! (or fails, with [`List::on_undecodable`]). [`List::sort`] takes any field name and
//! [`List::filter`] any new parameter. What is read from a server is bounded: see [`limits`].
//!
//! ### Handle errors
//!
//! [`Error`] answers the usual questions: [`status`](Error::status), [`code`](Error::code),
//! [`description`](Error::description), [`retry_after`](Error::retry_after),
//! [`is_retryable`](Error::is_retryable), [`needs_reauthentication`](Error::needs_reauthentication).
//! Invalid arguments fail before any request is sent, naming the argument.
//!
//! Each variant holds its context, read through accessors; the context types, with
//! [`ErrorCode`](error::ErrorCode), are in the [`error`] module. A cause (the JSON parser's
//! error, an I/O error, the last attempt) is the [`source`](std::error::Error::source), never
//! repeated in the message. An `Error` is at most 24 bytes and cheap to clone.
//!
//! ### Retry, pace and resume
//!
//! Transient failures are retried under a [`RetryPolicy`] (exponential backoff with full
//! jitter, `Retry-After` honoured); a page is retried at its own cursor, never from the start.
//! [`ClientBuilder::page_delay`] paces page requests. [`ItemStream::retries`] counts the
//! requests a listing sent again; after a failure, [`ItemStream::resume_cursor`] tells where to
//! go on within the session.
//!
//! Every request of a client waits for one budget, [`ClientBuilder::rate_limit`], in order of
//! arrival: listings share it fairly, first pages included, and a 429's `Retry-After` pauses
//! the whole client. Without a setting the budget adapts ([`RateLimit::adaptive`]): a 429 slows
//! the client down, successes speed it up, and the IETF `RateLimit-Policy` field, when the
//! server sends it, sets the pace from the first answer. With a known rate,
//! [`RateLimit::per_second`]; for many processes, one budget in Redis (`RateLimit::shared`,
//! feature `redis`). While pacing, a 429 uses up no attempt of the [`RetryPolicy`], only its
//! time; [`ItemStream::rate_limit_wait`] says how long a listing waited.
//!
//! ### Follow API versions
//!
//! [`ClientBuilder::api_version`] picks the URL segment ([`ApiVersion::V1`] by default) and
//! [`ClientBuilder::preview`] sends `X-API-Preview`. Deprecated endpoints produce a
//! [`DeprecationNotice`] (with the `Deprecation` header read into a [`Deprecation`]) on every
//! [`Page`]; by default one `tracing` warning per endpoint, with
//! [`ClientBuilder::on_deprecation`] and [`DeprecationPolicy`] to do more. A version past its
//! sunset is [`Error::Sunset`], with the date and the successor.
//!
//! ### Test your code
//!
//! The crate `business-records-reference-server`, a dev-dependency, has `ReferenceServer`: the
//! API and its authorization server in process, over real HTTP, serving your own records (or
//! generated ones) with the real filter, sort and cursor rules, faults on one endpoint, a
//! journal of every request, token and cursor expiry on demand, and a sign-in without a browser
//! (`approve`); [`ClientBuilder::settings`] builds a client for it in one expression, and
//! [`Company::new`], [`Contact::new`] and [`Page::new`] build values for unit tests. It shares no
//! code with this crate.
//!
//! ```toml
//! [dev-dependencies]
//! business-records-reference-server = "0.1"
//! ```
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
//! ## Observe
//!
//! The client logs through `tracing` and never prints. Every HTTP request has a span
//! `http_request` with OpenTelemetry's HTTP client fields (`otel.kind = "client"`,
//! `http.request.method`, `url.full`, `http.route` (`/v1/companies/{}`), `server.address`, `server.port`,
//! `http.response.status_code`, `error.type`, `http.request.resend_count`); every page or item
//! stream has a span `listing`, a child of the span current where the stream was made, with
//! `pages`, `items`, `retries` and `rate_limit_wait_ms` recorded at its end, and every request of the listing
//! (prefetched ones too) is its child. [`ClientBuilder::middleware`] adds
//! [`reqwest_middleware`] layers to every request, for example to send W3C `traceparent`, and
//! [`RetryPolicy::retry_if`] chooses which failures are retried. No token or secret ever reaches
//! a log line or an error message.
//!
//! Spans, logs, `Debug` and errors follow one redaction rule and one length rule. URLs are shown
//! without user information or fragment; spans keep query values, except those of parameters
//! named like credentials in any case and spelling (`accessToken`, `client_secret`,
//! `refresh-token`, `api_key`, `code`, `X-Amz-Security-Token`, `X-Goog-Signature`, `sig`, ...),
//! which are `REDACTED`; errors and `Debug` show no query value at all. Text from a server or a
//! caller is cut to 1 KiB, and URLs, paths and routes to 256 bytes (`…` marks a cut), so an
//! error, `Debug` included, stays under 8 KiB.
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

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

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
