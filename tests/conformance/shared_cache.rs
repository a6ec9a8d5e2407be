//! Token state shared by many processes over a real `redis-server` (feature `redis`): one
//! client-credentials token for every client, compare-and-delete of a rejected token, sealed
//! values, and the fallback while Redis is down. Each client here has its own token manager and
//! its own Redis connection, as separate processes would.
//!
//! Without `redis-server` on `PATH` the runner reports the cases ignored, except with `CI=true`,
//! where they fail.

crate::redis_cases! {
    (ServerControl, Redis):
        a_fleet_makes_one_token_request_per_credentials_and_scopes,
        the_fleet_renews_an_expiring_token_once,
        a_rejected_token_is_removed_only_while_redis_still_holds_it,
        what_redis_holds_is_sealed_and_named_by_hashes,
        without_redis_each_process_goes_its_own_way_and_shares_again_when_it_is_back,
        a_redis_that_hangs_costs_a_timeout_not_a_failure,
        no_token_reaches_the_logs_and_an_outage_warns_once;
}

#[cfg(feature = "redis")]
mod imp;
#[cfg(feature = "redis")]
pub use imp::*;
