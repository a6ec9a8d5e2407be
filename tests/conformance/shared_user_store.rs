//! A signed-in user's tokens shared by many processes over a real `redis-server`: a rotating
//! refresh token is presented once across all of them, and a lock whose holder died expires.

crate::redis_cases! {
    (ServerControl, Redis):
        a_rotating_refresh_token_is_presented_once_across_processes,
        without_the_fleet_lock_concurrent_refreshes_revoke_the_sign_in,
        a_user_signed_out_by_one_process_is_signed_out_in_every_one;
    Redis:
        a_refresh_lock_whose_holder_died_expires,
        a_live_holders_lock_outlasts_its_lifetime,
        a_user_store_without_a_user_secret_says_so,
        a_late_save_never_replaces_a_newer_set;
}

#[cfg(feature = "redis")]
mod imp;
#[cfg(feature = "redis")]
pub use imp::*;
