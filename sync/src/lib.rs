//! Incremental sync for the business-records API: a mirror of its lists in SQLite or
//! PostgreSQL, kept current at the cost of what changed.
//!
//! The API offers no change feed and no deletes; only lists sorted by `updatedAt`, cursors that
//! expire, and `totalCount`. A [`Mirror`] reads each list newest first (`sort=-updatedAt`) and
//! stops at the last committed mark minus a lookback window, so a run costs about one request
//! per hundred changes, whatever the size of the data. An update or insert during the scan
//! moves a record to the front: it may be read twice, never skipped. Each page is committed in
//! one transaction with its change rows; the new mark is committed last, so a run killed half
//! way leaves a mirror the next run completes without writing anything twice.
//!
//! ```no_run
//! use std::time::Duration;
//! use business_records::Client;
//! use business_records_sync::{Mirror, Reconcile, SqliteSink, Stream};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = Client::builder()
//!     .settings([("base_url", "https://api.example.com"), ("auth_url", "https://auth.example.com"),
//!                ("client_id", "my-client-id"), ("client_secret", "my-secret"), ("scopes", "api/read")])
//!     .build()?;
//! let sink = SqliteSink::open("mirror.sqlite").await?;         // WAL; schema created or migrated
//! let report = Mirror::new(client, sink)
//!     .stream(Stream::companies())                              // table "companies"
//!     .stream(Stream::contacts())                               // table "contacts"
//!     .stream(Stream::companies().status("active").table("active_companies"))
//!     .stream(Stream::list("deals"))                            // any list answering the envelope
//!     .lookback(Duration::from_secs(5))
//!     .reconcile(Reconcile::Every(Duration::from_secs(86_400)))
//!     .run()
//!     .await?;
//! for stream in &report.streams {
//!     println!("{}: {:?}, {} written in {} requests", stream.stream, stream.mode, stream.written(), stream.requests);
//! }
//! # Ok(()) }
//! ```
//!
//! # How a run proceeds
//!
//! 1. It takes the stream's lease ([`SyncError::Busy`] if another live holder has it). A lease
//!    lasts 30 s past its last renewal (at every commit, and every 10 s); a run that ends
//!    releases it, so a killed run blocks its stream for 30 s at most.
//! 2. It lists with `sort=-updatedAt`, checks that each page is in descending order, and
//!    commits each page's changes in one transaction while the next page is fetched.
//! 3. It stops at `hasMore: false`, or after the page holding a record older than the mark
//!    minus the lookback. The first run reads everything.
//! 4. When `totalCount` drops during the scan (a record read already was deleted, shifting
//!    the rest), it scans once more from the front.
//! 5. The last commit sets the mark to the newest `updatedAt` of the first page of the last
//!    pass: the server's data, never the local clock.
//! 6. An expired cursor starts the scan again from the first page; a fourth refusal in one run
//!    fails it with [`SyncError::CursorExpired`].
//! 7. Whether a record changed is decided by its content: the SHA-256 of its RFC 8785
//!    canonical JSON. A record identical to the stored one writes nothing.
//!
//! Deletes are found by [reconciliation](Reconcile) only, because the API shows none: a full
//! scan by `createdAt`, the server's version winning, and each id the mirror holds that the
//! scan did not see confirmed deleted by a `GET {list}/{id}` answering 404.
//!
//! # Sinks
//!
//! | Sink | Feature | For |
//! |---|---|---|
//! | [`SqliteSink`] | `sqlite` (default) | one file, read by other programs while it is written |
//! | [`PostgresSink`] | `postgres` | one mirror for many processes and machines |
//! | [`MemorySink`] | | tests |
//!
//! Every sink keeps the same tables: one per stream (`id`, `updated_at`, `updated_at_raw`,
//! `digest`, `body`, `deleted_at`, `first_run`, `changed_run`), `br_sync_state`,
//! `br_sync_changes` (one row per change written: the outbox a pipeline of your own follows)
//! and `br_sync_runs`.

#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod context;
mod error;
mod mirror;
mod reconcile;
mod record;
mod report;
mod run;
mod scan;
mod sink;
mod stream;
mod time;

pub use error::{SinkError, SyncError};
pub use mirror::{Mirror, Reconcile};
pub use report::{Mode, Phase, Progress, StreamReport, SyncReport};
#[cfg(feature = "postgres")]
pub use sink::PostgresSink;
#[cfg(feature = "sqlite")]
pub use sink::SqliteSink;
pub use sink::{
    Change, Commit, MemorySink, Op, Policy, Record, Row, Sink, SinkFuture, State, StreamStatus, Written,
};
pub use stream::{Disorder, Missing, Stream};
