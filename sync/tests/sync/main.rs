//! The sync suite: every rule of the sync's contract (SYNC.md: how a run proceeds,
//! reconciliation, bad input), each over real HTTP against the reference server, against
//! every sink: in memory, SQLite, and a real PostgreSQL.
//!
//! Each case runs once per sink, named `{sink}::{module}::{case}`. The PostgreSQL cases start a
//! server of their own (see [`postgres`]); without PostgreSQL on this machine, or without the
//! `postgres` feature, they are reported ignored with the reason, and fail when `CI=true`
//! (unless the feature is off).

#![allow(
    unreachable_pub,
    reason = "a binary of its own: its modules share items with `pub`, and nothing is reachable from outside"
)]

mod postgres;
mod support;

mod bad_input;
mod reconcile;
mod run;

use libtest_mimic::{Completion, Failed, Trial};

use support::{Case, Kind};

fn main() {
    let mut args = libtest_mimic::Arguments::from_args();
    if args.test_threads.is_none() {
        args.test_threads = std::env::var("RUST_TEST_THREADS").ok().and_then(|n| n.parse().ok());
    }
    let cases: Vec<Case> = [run::CASES, reconcile::CASES, bad_input::CASES].concat();
    let ci = std::env::var("CI").as_deref() == Ok("true");
    let mut trials = Vec::new();
    for kind in [Kind::Memory, Kind::Sqlite, Kind::Postgres] {
        for case in &cases {
            let module = case.module.split_once("::").map_or(case.module, |(_, module)| module);
            let name = format!("{}::{module}::{}", kind.name(), case.name);
            trials.push(match kind.unmet() {
                None => {
                    let case = *case;
                    Trial::test(name, move || run_case(kind, case))
                }
                Some(reason) if ci && cfg!(feature = "postgres") => {
                    Trial::test(name, move || Err(Failed::from(format!("{reason}; CI=true requires it"))))
                }
                Some(reason) => {
                    Trial::ignorable_test(name, move || Ok(Completion::ignored_with(reason.clone())))
                }
            });
        }
    }
    let conclusion = libtest_mimic::run(&args, trials);
    postgres::stop();
    conclusion.exit();
}

/// Runs `case` against a new mirror of `kind`, on a runtime of its own.
fn run_case(kind: Kind, case: Case) -> Result<(), Failed> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failed::from(format!("no runtime: {e}")))?;
    runtime.block_on(async move {
        let db = support::Db::open(kind, case.name).await;
        (case.body)(db).await;
    });
    Ok(())
}
