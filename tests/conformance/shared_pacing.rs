//! One request budget for a fleet over a real `redis-server` (feature `redis`): processes that
//! share a client id keep to the server's rate together, a 429 seen by one pauses all, and
//! Redis stopped mid-run costs no listing. Each client here has its own Redis connection and
//! its own budget, as separate processes would.
//!
//! Without `redis-server` on `PATH` the runner reports the cases ignored, except with `CI=true`,
//! where they fail.

crate::redis_cases! {
    (ServerControl, Redis):
        processes_sharing_a_budget_in_redis_keep_to_the_servers_rate_together,
        a_429_seen_by_one_process_pauses_every_process,
        a_pause_of_the_fleet_refuses_the_impatient_request_of_another_process,
        redis_stopped_mid_run_costs_no_listing;
}

#[cfg(feature = "redis")]
mod imp;
#[cfg(feature = "redis")]
pub use imp::*;
