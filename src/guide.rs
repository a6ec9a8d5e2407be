//! The guide: how to do each thing with the client, by task.
//!
//! Each section shows the common case and links to the items whose documentation holds the
//! rules. Every snippet is compiled by `cargo test`, and CI checks that it needs no dependency
//! beyond those of [the setup](#set-up).
//!
//! | To | Read |
//! |---|---|
//! | add the crate, choose scopes, build a client | [Set up](#set-up) |
//! | read companies, contacts or any list, page by page or item by item | [List](#list) |
//! | call an endpoint the client does not model | [Reach any endpoint](#reach-any-endpoint) |
//! | sign users in: desktop, mobile and web apps | [Sign users in](#sign-users-in) |
//! | report what went wrong | [Handle errors](#handle-errors) |
//! | survive failures, rate limits and long listings | [Retry, pace and resume](#retry-pace-and-resume) |
//! | move between API versions | [Follow API versions](#follow-api-versions) |
//! | test your own code without a real API | [Test your own code](#test-your-own-code) |
//! | trace requests, set proxies, run many processes | [Run in production](#run-in-production) |
//!
//! # Set up
//!
//! ```toml
//! [dependencies]
//! business-records = "0.1"
//! serde_json = "1"
//! tokio = { version = "1", features = ["macros", "rt-multi-thread"] }
//! ```
//!
//! A client is the API's base URL and a way to get tokens ([`Auth`](crate::Auth)). Each call needs a scope:
//! **`api/read`** for every read (listings, [`get`](crate::Client::get), read one),
//! **`api/write`** for every write (`POST`, `PUT`, `PATCH`, `DELETE`). A token without the scope
//! a call needs is refused with `insufficient_scope`
//! ([`ErrorCode::InsufficientScope`](crate::error::ErrorCode::InsufficientScope)), and the
//! error's description names the scope. Ask for what the app does:
//!
//! ```no_run
//! use business_records::{Auth, Client};
//!
//! # fn main() -> Result<(), business_records::Error> {
//! let client = Client::builder()
//!     .base_url("https://api.example.com") // the version segment (`/v1`) is added for you
//!     .auth(
//!         Auth::client_credentials("https://auth.example.com", "my-client-id", "my-secret")
//!             .scopes(["api/read", "api/write"]), // reads and writes
//!     )
//!     .build()?;
//! # let _ = client; Ok(()) }
//! ```
//!
//! | You are | Use |
//! |---|---|
//! | a backend (server to server) | [`Auth::client_credentials`](crate::Auth::client_credentials): HTTP Basic by default, [`credentials_in_body`](crate::auth::ClientCredentials::credentials_in_body) for the form |
//! | a desktop or mobile app whose users sign in | [`AuthorizationCodeFlow`](crate::auth::AuthorizationCodeFlow) (PKCE) and [`LoopbackRedirect`](crate::auth::LoopbackRedirect), then [`Auth::user`](crate::Auth::user) |
//! | a web app whose users sign in | one flow, one shared client, a client per user from [`Client::with_auth`](crate::Client::with_auth) |
//! | holding a token obtained elsewhere | [`Auth::static_token`](crate::Auth::static_token) |
//! | a resource server receiving these tokens | [`TokenVerifier`](crate::auth::TokenVerifier) |
//!
//! [`Client`](crate::Client) is cheap to clone (clones share tokens, connections and the
//! request budget) and `Send + Sync`. Tokens are cached and renewed ahead of expiry, one token
//! request however many tasks need one. HTTPS is required except on loopback hosts, and no
//! redirect is ever followed. Fallible setters keep their error for
//! [`build`](crate::ClientBuilder::build), which names the argument.
//!
//! # List
//!
//! [`Client::companies`](crate::Client::companies), [`contacts`](crate::Client::contacts) and
//! [`list`](crate::Client::list) return a [`List`](crate::List):
//! [`limit`](crate::List::limit) (page size, 1 to 100), [`sort`](crate::List::sort), filters,
//! [`cursor`](crate::List::cursor), [`max_items`](crate::List::max_items) (a cap on the
//! total). Then [`send`](crate::List::send) for one [`Page`](crate::Page),
//! [`pages`](crate::List::pages) for a [`PageStream`](crate::PageStream), or
//! [`stream`](crate::List::stream) for an [`ItemStream`](crate::ItemStream) of every item.
//!
//! ```no_run
//! use business_records::{Client, CompanySort};
//!
//! # async fn run(client: Client) -> Result<(), business_records::Error> {
//! let mut companies = client.companies().status("active").sort(CompanySort::CreatedAt.desc()).stream();
//! while let Some(company) = companies.try_next().await? {
//!     println!("{} {}", company.id, company.name);
//! }
//!
//! let page = client.contacts().company_id("cmp_1").limit(50).send().await?; // one page
//! println!("{} of {:?} contacts", page.data.len(), page.total_count);
//! let first_thousand: Vec<_> = client.companies().max_items(1_000).stream().try_collect().await?;
//! # let _ = first_thousand; Ok(()) }
//! ```
//!
//! - A listing ends only on `hasMore: false`. Empty pages in the middle are followed (up to
//!   [`max_empty_pages`](crate::List::max_empty_pages) in a row); a missing or repeated cursor
//!   is an error, never a silent stop or an endless loop.
//! - Every page request repeats `limit`, `sort` and the filters. Streams ask for 100 items a
//!   page; `max_items` never requests past the cap.
//! - The next page is requested while you read the current one
//!   ([`prefetch(false)`](crate::ClientBuilder::prefetch) turns it off).
//! - Streams are `Send + Sync + 'static` and implement `futures::Stream`; their inherent
//!   `try_next` and `try_collect` need no trait import.
//!
//! **What the server sends is read leniently.** A [`Company`](crate::Company) needs a string
//! `id` and `name`; every other field is optional. Timestamps are read in RFC 3339 and the
//! common variants. A value that cannot be read leaves its field `None`, keeps the raw value in
//! [`extra`](crate::Company::extra) and is listed by
//! [`fallbacks`](crate::Company::fallbacks). An element of a page that is not a record is left
//! out of `data` and reported in [`Page::undecodable`](crate::Page::undecodable); the listing
//! goes on, or fails with [`OnUndecodable::Fail`](crate::OnUndecodable::Fail). `sort` takes a
//! typed field ([`CompanySort`](crate::CompanySort) for companies only) or any field name as a
//! string (`"-employeeCount"`); [`filter`](crate::List::filter) sends a parameter the API
//! added later.
//!
//! **What the server sends is bounded** before it is used: nothing it sends panics the client,
//! fails a page for one field out of range, or holds the client longer than its longest
//! configured wait. Bodies are limited by kind and checked as they arrive (the
//! [`limits`](crate::limits) module); the rest:
//!
//! | What | Bound | Past it |
//! |---|---|---|
//! | cursor | 8 KiB ([`MAX_CURSOR_BYTES`](crate::limits::MAX_CURSOR_BYTES)) | from the server: a pagination error; from you: `InvalidArgument` |
//! | server text in errors and logs (`error_description`, unknown codes, key ids, raw elements, an unrecognised `Deprecation` value) | 1 KiB, counted as `Debug` writes it | cut, with `…`; control characters always escaped |
//! | a URL, path or route in errors, `Debug`, spans and logs | 256 bytes, without user information or fragment; errors and `Debug` show no query value, spans show them except for parameters named like credentials (`REDACTED`) | cut, with `…` |
//! | a `Link` target (successor, latest version, deprecation, sunset policy) | 256 bytes | left out, as if not sent |
//! | an error, `Debug` included | under 8 KiB | — |
//! | a token file (`FileTokenStore`, `DirectoryTokenStore`) | 256 KiB, a regular file: no symbolic link followed, no FIFO or device waited on | `TokenStoreError` naming the path and the reason; not read |
//! | each token-store operation (load, save, lock-file open, removal) | 10 s | `TokenStoreError` |
//! | the wait for another process's refresh lock | 6 min, longer than a refresh holds it | the refresh fails naming the lock; it never goes on without it |
//! | a refresh's wait for its answer | twice the request timeout, 1 to 5 min | the refresh token is dropped; `needs_reauthentication()` |
//! | `Retry-After` (seconds or HTTP-date), as [`retry_after`](crate::Error::retry_after) reports it | 0 to 1 day | 1 day; unreadable: no `Retry-After` |
//! | the client's pause after a 429, or after `RateLimit` says the quota is spent | the retry policy's `max_delay` (a listing's own when longer), at most 1 day | requests are sent again; one that would wait longer ends at once with the 429 |
//! | `RateLimit` `t`, `RateLimit-Reset`, `X-RateLimit-Reset` (seconds, or a Unix time from 10^9 on, in milliseconds from 10^12 on) | 0 to 1 day | ignored |
//! | `RateLimit-Policy` `q` / `w` | at least 0.5 requests a second | 0.5 a second; a window of 0: ignored |
//! | `expires_in` of a token response | 0 to 1 year, whole seconds | 1 year; negative or not a number: absent |
//! | `exp`, `iat`, `nbf` of JWTs and introspection answers | 1970 to the end of 9999 | the end of 9999; negative or not a number: absent |
//! | `Sunset`, and `Deprecation` as an HTTP-date | 1970 to 9999 | unreadable: the notice's diagnostic says so |
//! | `totalCount` | 0 to 2^53 | `None`; the page is read |
//! | record timestamps (`createdAt`, `updatedAt`) | years −262,000 to 262,000 | the field is `None`, the raw value kept |
//!
//! # Reach any endpoint
//!
//! The API grows without a new version (API Part 9.3). [`Client::get`](crate::Client::get) and
//! [`Client::request`](crate::Client::request) reach any path below the version root and decode
//! the answer into any type; [`Client::list`](crate::Client::list) is the same `List` for any
//! endpoint that answers with the page envelope. Every call goes through the pipeline the
//! listings use: the token and the 401 resend, pacing, retries, deprecation and sunset, body
//! limits, spans. Reads need `api/read`, writes `api/write`. What a request carries passes one
//! gate before anything is sent: a segment arrives as given or is refused (control characters,
//! `..` in any encoding in a literal; `;` is encoded, see [`ApiPath`](crate::ApiPath)), and
//! [`header`](crate::Request::header) refuses the headers the client owns or that frame the
//! request (`Authorization`, `Host`, `Content-Length`, `Transfer-Encoding`, `Connection`, ...).
//!
//! The type of the answer goes on `send`, not on `get`: annotate the variable, or write
//! `send::<T>()`.
//!
//! ```no_run
//! use business_records::serde_json::{Value, json};
//! use business_records::{Client, Company, Method};
//!
//! # async fn run(client: Client, id: &str) -> Result<(), business_records::Error> {
//! // A path below the version root: a literal, or segments each encoded as one ("a/b" stays one).
//! let one: Company = client.get(["companies", id]).send().await?;
//! let raw = client.get("companies/cmp_1").query("expand", "owner").send::<Value>().await?;
//!
//! // POST and PATCH are retried only with an idempotency key, the same on every attempt.
//! let note: Value = client
//!     .request(Method::POST, "notes")
//!     .json(&json!({"companyId": one.id, "text": "called"}))
//!     .idempotency_key("note-7f3a")
//!     .send()
//!     .await?;
//! client.request(Method::DELETE, ["notes", "n_1"]).send_empty().await?;
//!
//! // Any endpoint that answers with the page envelope: the same List, pages and streams.
//! let mut deals = client.list::<Value>("deals").filter("stage", "won").sort("-amount").stream();
//! while let Some(deal) = deals.try_next().await? {
//!     println!("{deal}");
//! }
//! # let _ = (raw, note); Ok(()) }
//! ```
//!
//! See [`ApiPath`](crate::ApiPath) for the paths accepted and
//! [`Request`](crate::Request) for what is retried.
//!
//! # Sign users in
//!
//! Desktop, mobile and web apps use the authorization code flow with PKCE; the client then
//! renews the user's tokens by itself. The rules (what the callback and the ID token must pass,
//! how a refresh is kept and saved, how processes share a sign-in) are in the [`auth`](crate::auth)
//! module: [Refresh guarantees](crate::auth#refresh-guarantees),
//! [Signing a user in](crate::auth#signing-a-user-in), [Web apps](crate::auth#web-apps),
//! [Many processes](crate::auth#many-processes).
//!
//! **A desktop app** listens on loopback for the redirect (RFC 8252) and keeps the tokens in a
//! file, in a folder of the app's own (one others may write to is made owner-only; one shared by
//! design, as `/tmp`, is refused):
//!
//! ```no_run
//! use business_records::auth::{AuthorizationCodeFlow, FileTokenStore, LoopbackRedirect, TokenStore};
//! use business_records::{Auth, Client, Error};
//!
//! # async fn run() -> Result<(), Error> {
//! let redirect = LoopbackRedirect::bind().await?; // 127.0.0.1:<free port>
//! let flow = AuthorizationCodeFlow::new("https://auth.example.com", "my-app", redirect.redirect_uri())?
//!     .scopes(["openid", "profile", "email", "api/read"]);
//! let request = flow.authorize_url(); // PKCE (S256), state, nonce
//! println!("open {}", request.url());
//! let callback = redirect.wait_for_callback_of(&request).await?; // this sign-in's own callback
//! let tokens = flow.exchange(request, &callback).await?; // checks iss and state first
//! let store = FileTokenStore::new("tokens.json"); // mode 0600, atomic rename
//! store.save(&tokens).await.map_err(Error::TokenStore)?;
//! let client = Client::builder()
//!     .base_url("https://api.example.com")
//!     .auth(Auth::user(flow, tokens).store(store))
//!     .build()?;
//! # let _ = client; Ok(()) }
//! ```
//!
//! A later run starts from the saved sign-in, with a flow made for refreshing (it needs no
//! redirect URI):
//!
//! ```no_run
//! use business_records::auth::{AuthorizationCodeFlow, FileTokenStore, TokenStore};
//! use business_records::{Auth, Client, Error};
//!
//! # async fn run() -> Result<(), Error> {
//! let store = FileTokenStore::new("tokens.json");
//! if let Some(tokens) = store.load().await.map_err(Error::TokenStore)? {
//!     let flow = AuthorizationCodeFlow::for_refresh("https://auth.example.com", "my-app")?
//!         .scopes(["openid", "profile", "email", "api/read"]);
//!     let client = Client::builder()
//!         .base_url("https://api.example.com")
//!         .auth(Auth::user(flow, tokens).store(store))
//!         .build()?;
//!     # let _ = client;
//! }
//! # Ok(()) }
//! ```
//!
//! **A web app** serves all its users from one process: one flow, one shared client, and for
//! each signed-in user a client derived from the shared one (a few microseconds and a few KiB:
//! it shares the connection pool and settings). The pending sign-in travels sealed in a cookie,
//! so any instance with the same secret finishes it.
//!
//! ```no_run
//! use business_records::auth::{AuthorizationCodeFlow, KeyedTokenStore, MemoryKeyedStore, TokenStore};
//! use business_records::{Auth, Client, Error};
//!
//! # async fn run(cookie: &str, uri: &str) -> Result<(), Error> {
//! let app = Client::builder()
//!     .base_url("https://api.example.com")
//!     .auth(Auth::client_credentials("https://auth.example.com", "my-web-app-backend", "backend-secret"))
//!     .build()?;
//! let flow = AuthorizationCodeFlow::new("https://auth.example.com", "my-web-app", "https://app.example.com/callback")?
//!     .scopes(["openid", "profile", "api/read"])
//!     .sealing_secret("32 bytes or more, the same on every instance");
//! let stores = MemoryKeyedStore::new(); // DirectoryTokenStore or RedisTokenCache across instances
//!
//! // GET /login: the pending sign-in goes into a cookie (HttpOnly; Secure; SameSite=Lax).
//! let request = flow.authorize_url_with([("login_hint", "alice@example.com")])?;
//! let sealed = flow.seal_pending(&request)?;
//! // ... 303 to request.url()
//!
//! // GET /callback, on any instance: the cookie, and the URI as the framework hands it over.
//! let tokens = flow.exchange_sealed(cookie, uri).await?;
//! let store = stores.for_user("a random session id"); // the session cookie holds this id
//! store.save(&tokens).await.map_err(Error::TokenStore)?;
//! let user = app.with_auth(Auth::user(flow.clone(), tokens).store(store))?;
//! let page = user.companies().send().await?;
//!
//! // GET /logout: revokes the tokens (RFC 7009), forgets them, clears the store.
//! user.sign_out().await?;
//! # let _ = (sealed, page); Ok(()) }
//! ```
//!
//! | What | Where | Why |
//! |---|---|---|
//! | the pending sign-in (PKCE verifier, `state`, `nonce`) | a cookie, sealed by [`seal_pending`](crate::auth::AuthorizationCodeFlow::seal_pending) | no server state; any instance with the secret finishes the sign-in |
//! | the sealing secret | the app's secret manager, the same on every instance | 32 bytes or more; a shorter one is refused |
//! | the user's tokens | a [`KeyedTokenStore`](crate::auth::KeyedTokenStore), keyed by a random session id | refresh tokens never reach the browser |
//! | the session id | an `HttpOnly`, `Secure`, `SameSite=Lax` cookie | it names the user's store entry and says nothing else |
//! | the user's client | memory, per instance (rebuilt from the store on a miss) | derived in a few microseconds |
//!
//! `examples/desktop_login.rs` and `examples/web_app.rs` (axum, several users at once) run
//! these against the reference server.
//!
//! # Handle errors
//!
//! [`Error`](crate::Error) is one `#[non_exhaustive]` enum; ask it questions rather than
//! matching every variant: [`status`](crate::Error::status), [`code`](crate::Error::code),
//! [`description`](crate::Error::description), [`retry_after`](crate::Error::retry_after),
//! [`is_retryable`](crate::Error::is_retryable),
//! [`needs_reauthentication`](crate::Error::needs_reauthentication). Bad arguments
//! (`limit(0)`, a sort field with spaces, a plain-http URL) fail before anything is sent and
//! name the argument.
//!
//! An error's message is its `Display`; its cause (the JSON parser's error, an I/O error, the
//! last attempt) is its [`source`](std::error::Error::source), never repeated in the message.
//! Print both, the message first; the `Debug` form, which `main` prints for an `Err`, is for
//! developers:
//!
//! ```no_run
//! use std::error::Error as _;
//! use std::process::ExitCode;
//!
//! #[tokio::main]
//! async fn main() -> ExitCode {
//!     let Err(error) = run().await else { return ExitCode::SUCCESS };
//!     eprintln!("error: {error}"); // `/v1/notes answered 404 (not_found): ...`
//!     for cause in std::iter::successors(error.source(), |&cause| cause.source()) {
//!         eprintln!("  caused by: {cause}");
//!     }
//!     ExitCode::FAILURE
//! }
//!
//! async fn run() -> Result<(), business_records::Error> {
//!     // ...
//! # Ok(())
//! }
//! ```
//!
//! # Retry, pace and resume
//!
//! Failures that may pass are retried under a [`RetryPolicy`](crate::RetryPolicy) (by default
//! 4 attempts, exponential backoff with full jitter from 200 ms up to 10 s, 60 s of waiting in
//! all; a `Retry-After` honoured): 429, 502, 503 and 504, connections that fail or close early,
//! bodies cut short, timeouts. A page is retried at its own cursor, never from the start. Set a
//! policy on the client, or on one listing with [`retry`](crate::List::retry). A listing that
//! failed anyway can go on within the session from
//! [`resume_cursor`](crate::ItemStream::resume_cursor); an expired cursor
//! ([`Error::CursorRejected`](crate::Error::CursorRejected)) means starting again:
//!
//! ```no_run
//! use std::time::Duration;
//! use business_records::{Client, Error, RetryPolicy};
//!
//! # async fn run(client: Client) -> Result<(), Error> {
//! let patient = RetryPolicy::default().max_attempts(6).max_elapsed(Duration::from_secs(120));
//! let mut companies = client.companies().sort("name").retry(patient.clone()).stream();
//! let mut names = Vec::new();
//! loop {
//!     match companies.try_next().await {
//!         Ok(Some(company)) => names.push(company.name),
//!         Ok(None) => break,
//!         Err(err @ Error::CursorRejected(_)) => return Err(err), // start again from the first page
//!         Err(err) => {
//!             eprintln!("{err}; resuming after {} companies", companies.items_delivered());
//!             let Some(cursor) = companies.resume_cursor().cloned() else { return Err(err) };
//!             companies = client.companies().sort("name").retry(patient.clone()).cursor(cursor).stream();
//!         }
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! Every request of a client waits for one request budget, in order of arrival, and a 429's
//! `Retry-After` pauses the whole client. Without a setting the budget adapts to what the
//! server accepts; with a known limit, give it: its rules are in [`RateLimit`](crate::RateLimit).
//!
//! ```no_run
//! use business_records::{Auth, Client, RateLimit};
//!
//! # fn main() -> Result<(), business_records::Error> {
//! let client = Client::builder()
//!     .base_url("https://api.example.com")
//!     .auth(Auth::client_credentials("https://auth.example.com", "my-client-id", "my-secret"))
//!     .rate_limit(RateLimit::per_second(20).burst(5)) // the API's limit for this client id
//!     .build()?;
//! # let _ = client; Ok(()) }
//! ```
//!
//! [`page_delay`](crate::ClientBuilder::page_delay) sets a minimum pause between the pages of
//! one listing, as API Part 8 advises for large datasets. A stream's
//! [`retries`](crate::ItemStream::retries) and
//! [`rate_limit_wait`](crate::ItemStream::rate_limit_wait) say what a listing cost.
//!
//! # Follow API versions
//!
//! [`api_version`](crate::ClientBuilder::api_version) picks the URL segment (`/v2/...`) and
//! [`preview`](crate::ClientBuilder::preview) sends `X-API-Preview`. Every page carries a
//! [`DeprecationNotice`](crate::DeprecationNotice) when the endpoint is deprecated (since when,
//! until when, the successor); by default one `tracing` warning per endpoint,
//! [`on_deprecation`](crate::ClientBuilder::on_deprecation) to be called with every notice,
//! and [`DeprecationPolicy::Fail`](crate::DeprecationPolicy::Fail) to fail in CI. A retired
//! version is [`Error::Sunset`](crate::Error::Sunset), with the date and the successor.
//! `examples/deprecation.rs` shows each of them.
//!
//! # Test your own code
//!
//! The workspace's other crate, `business-records-reference-server`, is the API and its
//! authorization server in process, over real HTTP: your records, faults on one endpoint, a
//! journal of what your code sent, tokens and cursors that expire on demand, a sign-in without
//! a browser. Its README names each fault with an example.
//!
//! ```toml
//! [dev-dependencies]
//! business-records-reference-server = "0.1"
//! ```
//!
//! ```
//! use business_records::{Client, Contact};
//! use business_records_reference_server::{Endpoint, Fault, Faults, ReferenceServer};
//! use serde_json::json;
//!
//! # #[tokio::main]
//! # async fn main() {
//! // #[tokio::test] async fn ...
//! let server = ReferenceServer::builder()
//!     .company(json!({"id": "cmp_1", "name": "Acme", "status": "active"}))
//!     .contact(json!({"id": "ct_1", "companyId": "cmp_1", "name": "Ada"}))
//!     .contact(json!({"id": "ct_2", "companyId": "cmp_1", "name": "Grace"}))
//!     .faults(Faults::new().on(Endpoint::Contacts, 2, Fault::ExpireTokens)) // the 2nd page's
//!     .start()
//!     .await;
//! let client = Client::builder().settings(server.settings()).build().unwrap();
//!
//! // The code under test: two pages, the tokens expiring between them.
//! let contacts: Vec<Contact> =
//!     client.contacts().company_id("cmp_1").limit(1).stream().try_collect().await.unwrap();
//! assert_eq!(contacts.len(), 2);
//!
//! let sent: Vec<String> = server.journal().iter().filter(|r| r.is_api()).map(ToString::to_string).collect();
//! assert_eq!(sent[0], "GET /v1/contacts?limit=1&companyId=cmp_1 → 200");
//! assert_eq!(server.token_requests(), 2, "a new token for the second page");
//! # }
//! ```
//!
//! - [`Client::builder().settings(..)`](crate::ClientBuilder::settings) makes a client for
//!   the server in one expression.
//! - A fault acts on the request of one endpoint it is numbered for, so `Fault::ExpireTokens`
//!   on the second page request expires the tokens in the middle of one call of your code, and
//!   `Fault::RateLimited(RetryAfter::Seconds(0))` tests a retry in milliseconds.
//! - A journal entry prints as one line. The client sends a listing's `limit`, `sort`, its
//!   filters in the order set, then `cursor`; compare by name with `JournalEntry::query` to
//!   leave the order out.
//! - Without a server, [`Company::new`](crate::Company::new),
//!   [`Contact::new`](crate::Contact::new) and [`Page::new`](crate::Page::new) (a last page)
//!   build values for unit tests.
//!
//! `tests/test_kit.rs` in the repository is a complete example: an app's code and ten tests of
//! it.
//!
//! # Run in production
//!
//! **Tracing.** The client logs through `tracing` and never prints. Every HTTP request, to the
//! API or the authorization server, has a span `http_request` with OpenTelemetry's HTTP client
//! fields (`otel.kind = "client"`, `http.request.method`, `url.full`, `http.route` such as
//! `/v1/companies/{}`, `server.address`, `server.port`, `http.response.status_code`,
//! `error.type`, `http.request.resend_count`). A page or item stream has one `listing` span, a
//! child of the span current where the stream was made, with `pages`, `items`, `retries` and
//! `rate_limit_wait_ms` recorded at its end; its requests, prefetched ones too, are its
//! children. No token or secret reaches a span, a log line or an error message: one redaction
//! rule hides the values of query parameters and headers named like credentials, in any case
//! and spelling (`accessToken`, `client_secret`, `refresh-token`, `api_key`, `code`,
//! `X-Amz-Security-Token`, `sig`, ...).
//!
//! **Middleware.** [`middleware`](crate::ClientBuilder::middleware) adds
//! `reqwest_middleware` layers that run inside each request's span,
//! API calls and token requests alike: to send W3C `traceparent`, to sign requests. Retries
//! stay the client's own ([`RetryPolicy::retry_if`](crate::RetryPolicy::retry_if)): add no
//! retrying layer.
//!
//! **HTTP settings.** [`http_config`](crate::ClientBuilder::http_config) hands you reqwest's
//! builder for proxies, root certificates, default headers and pool settings; redirects stay
//! off whatever you set. Proxies from the environment (`HTTP_PROXY`, `HTTPS_PROXY`,
//! `ALL_PROXY`, lower-case forms, `NO_PROXY`) are read as reqwest reads them, but never serve a
//! loopback host; proxies you set come after them (call `no_proxy()` first to drop them).
//!
//! ```no_run
//! use business_records::{Auth, Client};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let proxy = business_records::reqwest::Proxy::https("http://proxy.internal:3128")?;
//! let client = Client::builder()
//!     .base_url("https://api.example.com")
//!     .auth(Auth::client_credentials("https://auth.example.com", "my-client-id", "my-secret"))
//!     .http_config(move |http| http.proxy(proxy).pool_max_idle_per_host(8))
//!     .build()?;
//! # let _ = client; Ok(()) }
//! ```
//!
//! **Many processes.** Each process caches its own tokens: 50 replicas ask for 50 tokens on a
//! cold start, and two processes holding one user's tokens would present a rotating refresh
//! token twice. A [`FileTokenStore`](crate::auth::FileTokenStore) or
//! [`DirectoryTokenStore`](crate::auth::DirectoryTokenStore) on shared storage prevents the
//! latter. With the `redis` feature, `RedisTokenCache` shares one client-credentials token, each
//! user's refresh, and one request budget (`RateLimit::shared`) among every process over the
//! Redis or Valkey they already run:
//!
//! ```no_run
//! # #[cfg(feature = "redis")]
//! # async fn run(flow: business_records::auth::AuthorizationCodeFlow, user_secret: &str)
//! #     -> Result<(), Box<dyn std::error::Error>> {
//! use business_records::auth::{RedisTokenCache, TokenStore};
//! use business_records::{Auth, Client, RateLimit};
//!
//! let shared = RedisTokenCache::connect("redis://127.0.0.1:6379").await?;
//! let client = Client::builder()
//!     .base_url("https://api.example.com")
//!     .auth(Auth::client_credentials("https://auth.example.com", "my-client-id", "my-secret")
//!         .scopes(["api/read"])
//!         .shared_cache(shared.clone())) // one token for every process with these credentials
//!     .rate_limit(RateLimit::per_second(20).burst(5).shared(&shared)) // one budget for all
//!     .build()?;
//!
//! // Users: every process holds the same user secret (32 bytes or more); one store per user.
//! let store = shared.user_secret(user_secret).user_store("user-42");
//! let tokens = store.load().await?.ok_or("not signed in")?;
//! let user = Client::builder()
//!     .base_url("https://api.example.com")
//!     .auth(Auth::user(flow, tokens).store(store)) // refreshes single-flight across processes
//!     .build()?;
//! # let _ = (client, user); Ok(()) }
//! ```
//!
//! A refresh lock is a lease its holder renews while it works, and expires `lock_ttl` (30 s by
//! default) after a holder that dies; no process refreshes without it while the holder lives.
//! When Redis is slow or gone, each process fetches its own tokens and paces itself at its
//! share of the rate, with a warning at most every 30 s, and shares again once Redis is back.
//! `examples/fleet.rs` runs five processes against one Redis; `benches/README.md` has what it
//! saves.
