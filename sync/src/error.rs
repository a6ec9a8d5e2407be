//! What can go wrong in a run, and in a sink.

use std::fmt;
use std::sync::Arc;

/// Why a stream's run failed.
///
/// ```
/// use business_records_sync::SyncError;
///
/// fn exit_code(error: &SyncError) -> u8 {
///     match error {
///         e if e.is_busy() => 3,
///         e if e.is_out_of_order() => 4,
///         _ => 1,
///     }
/// }
/// # let _ = exit_code;
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SyncError {
    /// Another live holder has the stream's lease: another process is syncing it.
    #[error("stream {stream:?} is busy: another holder has its lease")]
    Busy {
        /// The stream (its table).
        stream: String,
    },
    /// The lease was taken over by another holder while this run went on (it was not renewed
    /// in time); nothing more was written.
    #[error("stream {stream:?}: the lease was lost to another holder")]
    LeaseLost {
        /// The stream (its table).
        stream: String,
    },
    /// A page is not in descending order of the updated field: the server ignores `sort`, or
    /// mixes timestamp formats. Rows already written stay; the mark does not move.
    #[error("page {page} is out of order: {next} follows {previous}")]
    OutOfOrder {
        /// The page, from 1 in its pass.
        page: u64,
        /// The updated field of the record before.
        previous: String,
        /// The updated field of the record after it, newer.
        next: String,
    },
    /// The listing's cursor was refused once more after three restarts from the first page.
    #[error("the cursor expired {} times in one run", restarts + 1)]
    CursorExpired {
        /// Restarts from the first page before the run gave up (3).
        restarts: u32,
    },
    /// The server broke the pagination contract (API Part 4.1): `hasMore` without a cursor,
    /// a cursor it had given before in the same pass, or too many empty pages in a row.
    #[error("page {page} breaks the pagination contract: {message}")]
    Pagination {
        /// The page, from 1 in its pass.
        page: u64,
        /// What it did.
        message: &'static str,
    },
    /// A record without the key field, with [`Missing::Fail`](crate::Missing::Fail).
    #[error("the record at position {position} of page {page} has no id")]
    MissingId {
        /// The page, from 1 in its pass.
        page: u64,
        /// The position in the page, from 0.
        position: usize,
    },
    /// An argument of a [`Stream`](crate::Stream), [`Mirror`](crate::Mirror) or sink was
    /// refused before anything was sent.
    #[error("invalid argument `{argument}`: {message}")]
    InvalidArgument {
        /// The argument.
        argument: &'static str,
        /// What was expected.
        message: String,
    },
    /// The API refused or failed a request, after the client's own retries.
    #[error("the API request failed")]
    Client(#[source] business_records::Error),
    /// The sink failed.
    #[error("the sink failed")]
    Sink(#[source] SinkError),
}

impl SyncError {
    /// Whether another holder has the stream's lease.
    pub fn is_busy(&self) -> bool {
        matches!(self, SyncError::Busy { .. })
    }

    /// Whether the server sent a page out of order.
    pub fn is_out_of_order(&self) -> bool {
        matches!(self, SyncError::OutOfOrder { .. })
    }

    /// The client's error, for a failed request.
    pub fn client_error(&self) -> Option<&business_records::Error> {
        match self {
            SyncError::Client(error) => Some(error),
            _ => None,
        }
    }

    pub(crate) fn invalid(argument: &'static str, message: impl Into<String>) -> Self {
        SyncError::InvalidArgument { argument, message: message.into() }
    }
}

impl From<business_records::Error> for SyncError {
    fn from(error: business_records::Error) -> Self {
        SyncError::Client(error)
    }
}

impl From<SinkError> for SyncError {
    fn from(error: SinkError) -> Self {
        SyncError::Sink(error)
    }
}

/// A sink's failure: what it was doing, and the database's error as the
/// [`source`](std::error::Error::source).
#[derive(Clone)]
pub struct SinkError {
    doing: &'static str,
    lease_lost: bool,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl SinkError {
    /// A failure while `doing` (e.g. `committing a page`), caused by `source`.
    pub fn new(doing: &'static str, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        SinkError { doing, lease_lost: false, source: Some(Arc::new(source)) }
    }

    /// A commit refused because the lease of its stream is another holder's: nothing written.
    pub fn lease_lost() -> Self {
        SinkError { doing: "committing: the lease is another holder's", lease_lost: true, source: None }
    }

    /// Whether this is [`SinkError::lease_lost`].
    pub fn is_lease_lost(&self) -> bool {
        self.lease_lost
    }

    /// A failure while `doing`, with no cause to show.
    pub fn plain(doing: &'static str) -> Self {
        SinkError { doing, lease_lost: false, source: None }
    }

    /// What the sink was doing.
    pub fn doing(&self) -> &'static str {
        self.doing
    }
}

impl fmt::Debug for SinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SinkError").field("doing", &self.doing).field("source", &self.source).finish()
    }
}

impl fmt::Display for SinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sink failed {}", self.doing)
    }
}

impl std::error::Error for SinkError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}
