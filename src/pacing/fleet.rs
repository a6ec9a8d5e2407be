//! What a budget shared by many processes offers the pacer (feature `redis`; the Redis budget
//! is `auth::redis::budget`, beside the connection it uses).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

/// One budget for every process that shares it.
pub(crate) trait FleetBudget: Send + Sync + fmt::Debug {
    /// Reserves the next request's slot at `rate` requests a second with `burst`, unless a
    /// pause longer than `patience` is in force. `None` when the store did not answer in time.
    fn reserve(&self, rate: f64, burst: u32, patience: Duration) -> BoxFuture<'_, Option<Reservation>>;

    /// Pauses every process for `pause` (a 429's `Retry-After`), best effort.
    fn pause(&self, pause: Duration) -> BoxFuture<'_, ()>;
}

/// The answer to [`FleetBudget::reserve`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reservation {
    /// The slot is `wait` from now; `processes` used the budget lately (this one included).
    Go { wait: Duration, processes: u32 },
    /// A pause of the fleet ends `remaining` from now, later than the caller would wait.
    Paused { remaining: Duration, processes: u32 },
}

/// Makes the budget of one API (its versioned root URL) and client id.
pub(crate) type MakeBudget = dyn Fn(&str, &str) -> Arc<dyn FleetBudget> + Send + Sync;

/// A [`MakeBudget`] to keep in a [`RateLimit`](super::RateLimit).
#[derive(Clone)]
pub(crate) struct FleetFactory(pub(crate) Arc<MakeBudget>);
