//! The mirror: a client, a sink, the streams, and how often deletes are looked for.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use business_records::Client;

use crate::context::ProgressFn;
use crate::report::{Progress, SyncReport};
use crate::run::run_stream;
use crate::sink::Sink;
use crate::{Stream, SyncError};

/// When a run also reconciles (finds deletes, which the API does not show).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reconcile {
    /// When this long has passed since the last reconciliation; a stream's first run counts
    /// as one. The default is every 24 hours.
    Every(Duration),
    /// On every run.
    Always,
    /// Never: deletes are not found. A mark ahead of the server's newest record is reset to
    /// it.
    Never,
}

impl Default for Reconcile {
    fn default() -> Self {
        Reconcile::Every(Duration::from_secs(86_400))
    }
}

/// A mirror of one or more lists in a [`Sink`], kept current by [`run`](Mirror::run).
///
/// ```no_run
/// # async fn run(client: business_records::Client) -> Result<(), business_records_sync::SyncError> {
/// use std::time::Duration;
/// use business_records_sync::{Mirror, Reconcile, SqliteSink, Stream};
///
/// let sink = SqliteSink::open("mirror.sqlite").await?;
/// let report = Mirror::new(client, sink)
///     .stream(Stream::companies())
///     .stream(Stream::contacts())
///     .lookback(Duration::from_secs(5))
///     .reconcile(Reconcile::Every(Duration::from_secs(86_400)))
///     .on_progress(|p| eprintln!("{}: {} pages", p.stream, p.pages))
///     .run()
///     .await?;
/// for stream in &report.streams {
///     println!("{}: {} inserted, {} updated", stream.stream, stream.inserted, stream.updated);
/// }
/// # Ok(()) }
/// ```
#[must_use]
pub struct Mirror {
    pub(crate) client: Client,
    pub(crate) sink: Arc<dyn Sink>,
    pub(crate) streams: Vec<Stream>,
    pub(crate) lookback: Duration,
    pub(crate) reconcile: Reconcile,
    pub(crate) progress: Option<Arc<ProgressFn>>,
    pub(crate) lease: Duration,
    pub(crate) holder: String,
}

impl fmt::Debug for Mirror {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mirror")
            .field("streams", &self.streams)
            .field("lookback", &self.lookback)
            .field("reconcile", &self.reconcile)
            .field("lease", &self.lease)
            .field("holder", &self.holder)
            .finish_non_exhaustive()
    }
}

impl Mirror {
    /// A mirror of no stream yet, with `client`, into `sink`.
    pub fn new(client: Client, sink: impl Sink) -> Self {
        Mirror {
            client,
            sink: Arc::new(sink),
            streams: Vec::new(),
            lookback: Duration::from_secs(5),
            reconcile: Reconcile::default(),
            progress: None,
            lease: Duration::from_secs(30),
            holder: holder(),
        }
    }

    /// Adds a stream; streams run one after the other, in this order.
    pub fn stream(mut self, stream: Stream) -> Self {
        self.streams.push(stream);
        self
    }

    /// How far behind the mark a scan still reads, for clock skew between the server's
    /// machines and writes committed late. Default: 5 s.
    pub fn lookback(mut self, lookback: Duration) -> Self {
        self.lookback = lookback;
        self
    }

    /// When a run reconciles. Default: [`Reconcile::Every`] 24 hours.
    pub fn reconcile(mut self, reconcile: Reconcile) -> Self {
        self.reconcile = reconcile;
        self
    }

    /// Called after every page arrives (before the next is requested), and when a stream's run
    /// ends.
    pub fn on_progress(mut self, progress: impl Fn(&Progress) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(progress));
        self
    }

    /// How long a stream's lease lasts past its last renewal (renewed at every commit and
    /// every third of this): the longest a killed run blocks its stream. Default: 30 s.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease.max(Duration::from_millis(30));
        self
    }

    /// The name this mirror holds leases under: host, process and a random part.
    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// Runs every stream, one after the other, and returns their reports.
    ///
    /// # Errors
    ///
    /// The first failed stream's [`SyncError`]; the others still ran (see
    /// [`run_all`](Mirror::run_all) for every report).
    pub async fn run(&self) -> Result<SyncReport, SyncError> {
        self.run_all().await.into_result()
    }

    /// Runs every stream, one after the other: every report, a failed stream's with its
    /// [`error`](crate::StreamReport::error).
    pub async fn run_all(&self) -> SyncReport {
        let mut report = SyncReport::default();
        for stream in &self.streams {
            report.streams.push(run_stream(self, stream).await);
        }
        report
    }
}

/// A holder name unique to this mirror: host, process id, and time and a counter.
fn holder() -> String {
    static MADE: AtomicU64 = AtomicU64::new(0);
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|host| host.trim().to_owned())
        .filter(|host| !host.is_empty())
        .unwrap_or_else(|| "host".to_owned());
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    format!("{host}:{}:{nanos:08x}{:x}", std::process::id(), MADE.fetch_add(1, Ordering::Relaxed))
}
