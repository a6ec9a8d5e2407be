//! # business-records
//!
//! The Rust client for the business-records HTTP API: OAuth 2.0 bearer tokens, URL-versioned
//! endpoints (`{base_url}/v1/...`) and cursor-paginated lists of companies and contacts.
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
//! Users of desktop, mobile and web apps sign in with the authorization code flow and PKCE
//! ([`auth::AuthorizationCodeFlow`], [`auth::LoopbackRedirect`]) and the client then works as
//! them with [`Auth::user`]; see the [`auth`] module.
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod auth;
mod client;
pub mod deprecation;
mod error;
mod pagination;
pub mod resources;
mod retry;
mod transport;
mod urls;
mod version;

#[cfg(feature = "reference-server")]
#[cfg_attr(docsrs, doc(cfg(feature = "reference-server")))]
pub mod reference_server;

pub use auth::Auth;
pub use client::{Client, ClientBuilder, DEFAULT_TIMEOUT};
pub use deprecation::{DeprecationNotice, DeprecationPolicy};
pub use error::{ApiError, CallbackError, Error, ErrorCode, HttpError, PaginationError};
pub use pagination::{Cursor, ItemStream, Page, PageStream};
pub use resources::companies::{Company, CompanySort, CompanyStatus, ListCompanies};
pub use resources::contacts::{Contact, ContactSort, ListContacts};
pub use resources::{IntoSort, List, Resource, Sort};
pub use retry::RetryPolicy;
pub use version::{ApiVersion, Preview};

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
