//! The catalogue's test runner: every case with what it needs to run, decided once before any
//! case starts, and run by `libtest-mimic` as `cargo test` runs its own tests (filters, `--exact`,
//! `--ignored`, `--list`, `--test-threads`, panics caught, cases in parallel threads).
//!
//! A case whose need is not met here is reported ignored with the reason, never passed. Without
//! `redis-server`, Node.js or Chromium on this machine, a case that needs them fails instead
//! when `CI=true`: CI must run them.

use std::cell::OnceCell;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::process::Command;

use libtest_mimic::{Completion, Failed, Trial};

/// Set in the process [`Need::ChildProcess`] cases run in.
pub const CHILD: &str = "BUSINESS_RECORDS_CONFORMANCE_CHILD";

/// Lists a module's cases as `pub const CASES`, in groups after what their cases need: one
/// [`Need`] variant, or several in parentheses. A case runs on a current-thread Tokio runtime of
/// its own, as under `#[tokio::test]`, unless marked `[sync]` (a plain function, as under
/// `#[test]`) or `[multi_thread(N)]` (N worker threads).
///
/// ```ignore
/// crate::cases! {
///     Anywhere: reads_a_page, parses_sorts [sync];
///     ServerControl: retries_a_503, survives_a_long_outage [multi_thread(2)];
///     (ServerControl, Redis): shares_one_token;
/// }
/// ```
#[macro_export]
macro_rules! cases {
    ($($needs:tt: $($case:ident $([$($runtime:tt)+])?),+ $(,)?;)+) => {
        pub const CASES: &[$crate::harness::Case] = &[$($($crate::harness::Case {
            module: module_path!(),
            name: stringify!($case),
            needs: $crate::cases!(@needs $needs),
            body: $crate::cases!(@body $case $($($runtime)+)?),
        },)+)+];
    };
    (@needs ($($need:ident),+)) => {
        &[$($crate::harness::Need::$need),+]
    };
    (@needs $need:ident) => {
        &[$crate::harness::Need::$need]
    };
    (@body $case:ident) => {
        $crate::harness::Body::Async($crate::harness::Runtime::CurrentThread, || Box::pin($case()))
    };
    (@body $case:ident multi_thread($threads:literal)) => {
        $crate::harness::Body::Async($crate::harness::Runtime::MultiThread($threads), || Box::pin($case()))
    };
    (@body $case:ident sync) => {
        $crate::harness::Body::Sync($case)
    };
}

/// [`cases!`] for a module whose cases need the `redis` feature: without it, the cases are still
/// listed, and the runner reports each one ignored for want of the feature. The module's
/// functions live in a child module compiled with the feature alone.
#[macro_export]
macro_rules! redis_cases {
    ($($needs:tt: $($case:ident $([$($runtime:tt)+])?),+ $(,)?;)+) => {
        #[cfg(feature = "redis")]
        $crate::cases! { $($needs: $($case $([$($runtime)+])?),+;)+ }
        #[cfg(not(feature = "redis"))]
        pub const CASES: &[$crate::harness::Case] = &[$($($crate::harness::Case {
            module: module_path!(),
            name: stringify!($case),
            needs: &[$crate::harness::Need::Redis],
            body: $crate::harness::Body::Sync(|| {}),
        },)+)+];
    };
}

crate::cases! {
    Anywhere: no_case_is_marked_the_libtest_way [sync];
}

/// `#[test]` and `#[tokio::test]` functions are compiled out of this binary (`harness = false`),
/// so a case marked that way would silently never run: every case is listed in `crate::cases!`.
fn no_case_is_marked_the_libtest_way() {
    let mut dirs = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance")];
    let mut marked = Vec::new();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("a directory of the catalogue") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                marked.extend(marked_the_libtest_way(&path));
            }
        }
    }
    assert!(marked.is_empty(), "cases that never run here; list them in `crate::cases!` instead: {marked:?}");
}

/// The lines of the module at `path` that mark a function `#[test]` or `#[tokio::test]`.
fn marked_the_libtest_way(path: &Path) -> Vec<String> {
    let source = std::fs::read_to_string(path).expect("a module of the catalogue");
    let marked = source.lines().enumerate().filter(|(_, line)| {
        let line = line.trim_start();
        line.starts_with("#[test]") || line.starts_with("#[tokio::test")
    });
    marked.map(|(number, _)| format!("{}:{}", path.display(), number + 1)).collect()
}

/// What a case needs besides this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Nothing: runs against the reference server, or against a live deployment when one is set.
    Anywhere,
    /// Control of the server (faults, datasets, its request log): the reference server only.
    ServerControl,
    /// A `redis-server` of its own, and the `redis` feature.
    Redis,
    /// Node.js, to run `oidc-provider`.
    Node,
    /// Chromium and chromedriver (Debian `chromium`, `chromium-driver`), driven over WebDriver.
    Chromium,
    /// Linux's `/proc`, to read the process's peak memory.
    Proc,
    /// Runs only in the process its parent case starts (with [`CHILD`] set and `--ignored`).
    ChildProcess,
}

/// How a case runs.
#[derive(Clone, Copy)]
pub enum Body {
    Sync(fn()),
    Async(Runtime, fn() -> Pin<Box<dyn Future<Output = ()>>>),
}

/// The Tokio runtime of an async case, as `#[tokio::test]` would build it.
#[derive(Clone, Copy)]
pub enum Runtime {
    CurrentThread,
    MultiThread(usize),
}

/// One case of the catalogue.
#[derive(Clone, Copy)]
pub struct Case {
    /// `module_path!()` of the module that lists it.
    pub module: &'static str,
    pub name: &'static str,
    pub needs: &'static [Need],
    pub body: Body,
}

/// Why a case does not run: ignored, or (where CI must run it) failed.
enum Unmet {
    Ignore(String),
    Fail(String),
}

/// What this machine and process offer, each looked up at most once.
pub struct Host {
    live: bool,
    ci: bool,
    child: bool,
    redis: OnceCell<Result<(), String>>,
    node: OnceCell<Result<(), String>>,
    chromium: OnceCell<Result<(), String>>,
    chromedriver: OnceCell<Result<(), String>>,
}

impl Host {
    pub fn new() -> Host {
        Host {
            live: crate::support::live().is_some(),
            ci: std::env::var("CI").as_deref() == Ok("true"),
            child: std::env::var(CHILD).as_deref() == Ok("1"),
            redis: OnceCell::new(),
            node: OnceCell::new(),
            chromium: OnceCell::new(),
            chromedriver: OnceCell::new(),
        }
    }

    /// `program --version` runs; without it the case is ignored, or failed when `CI=true`.
    fn program(&self, cell: &OnceCell<Result<(), String>>, program: &str) -> Result<(), Unmet> {
        let found = cell.get_or_init(|| match Command::new(program).arg("--version").output() {
            Ok(output) if output.status.success() => Ok(()),
            Ok(output) => Err(format!("`{program} --version` failed ({})", output.status)),
            Err(e) => Err(format!("no {program} on PATH: {e}")),
        });
        match found {
            Ok(()) => Ok(()),
            Err(reason) if self.ci => Err(Unmet::Fail(format!("{reason}; CI=true requires it"))),
            Err(reason) => Err(Unmet::Ignore(reason.clone())),
        }
    }

    fn check(&self, need: Need) -> Result<(), Unmet> {
        let unmet = |reason: &str| Err(Unmet::Ignore(reason.to_owned()));
        match need {
            Need::Anywhere => Ok(()),
            Need::ServerControl if self.live => {
                unmet("needs control of the server, not available against a live deployment")
            }
            Need::ServerControl => Ok(()),
            Need::Redis if cfg!(not(feature = "redis")) => {
                unmet("needs the `redis` feature: cargo test --features redis")
            }
            Need::Redis => self.program(&self.redis, "redis-server"),
            Need::Node => self.program(&self.node, "node"),
            Need::Chromium => {
                self.program(&self.chromium, "chromium")?;
                self.program(&self.chromedriver, "chromedriver")
            }
            Need::Proc if !std::path::Path::new("/proc/self/status").exists() => {
                unmet("peak memory is read from /proc (Linux only)")
            }
            Need::Proc => Ok(()),
            Need::ChildProcess if !self.child => unmet("runs only in the process its parent case starts"),
            Need::ChildProcess => Ok(()),
        }
    }
}

impl Case {
    /// `module::case`, as libtest names a `#[test]` function.
    fn full_name(&self) -> String {
        let module = self.module.split_once("::").map_or(self.module, |(_, module)| module);
        format!("{module}::{}", self.name)
    }

    /// The trial libtest-mimic runs: the case, or its reason not to run.
    pub fn trial(self, host: &Host) -> Trial {
        let name = self.full_name();
        match self.needs.iter().try_for_each(|&need| host.check(need)) {
            // A child case is selected only by its parent's explicit `--ignored`.
            Ok(()) => Trial::test(name.clone(), move || {
                // As under libtest: a thread of its own named after the case, so that nothing a
                // case leaves in thread-local state (a tracing default, a runtime context)
                // reaches the next one, and a panic message names its case.
                let thread = std::thread::Builder::new().name(name).spawn(move || self.body.run());
                let outcome =
                    thread.map_err(|e| Failed::from(format!("no thread for the case: {e}")))?.join();
                outcome.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                Ok(())
            })
            .with_ignored_flag(self.needs.contains(&Need::ChildProcess)),
            Err(Unmet::Ignore(reason)) => {
                Trial::ignorable_test(name, move || Ok(Completion::ignored_with(reason)))
            }
            Err(Unmet::Fail(reason)) => Trial::test(name, move || Err(Failed::from(reason))),
        }
    }
}

impl Body {
    fn run(self) {
        match self {
            Body::Sync(case) => case(),
            Body::Async(runtime, case) => {
                let mut builder = match runtime {
                    Runtime::CurrentThread => tokio::runtime::Builder::new_current_thread(),
                    Runtime::MultiThread(threads) => {
                        let mut builder = tokio::runtime::Builder::new_multi_thread();
                        builder.worker_threads(threads);
                        builder
                    }
                };
                builder.enable_all().build().expect("a Tokio runtime").block_on(case());
            }
        }
    }
}
