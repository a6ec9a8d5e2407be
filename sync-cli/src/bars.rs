//! Progress bars on stderr, one per stream, when stderr is a terminal.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};

use business_records_sync::{Phase, Progress};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The bars of a run; drawing nothing when stderr is not a terminal.
#[derive(Clone)]
pub(crate) struct Bars {
    shown: Option<Arc<Shown>>,
}

/// The bars drawn, by stream.
struct Shown {
    multi: MultiProgress,
    bars: Mutex<HashMap<String, ProgressBar>>,
}

impl Bars {
    pub(crate) fn new() -> Bars {
        let shown = std::io::stderr().is_terminal().then(|| {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
            Arc::new(Shown { multi, bars: Mutex::new(HashMap::new()) })
        });
        Bars { shown }
    }

    /// Shows where a stream's run is.
    pub(crate) fn show(&self, progress: &Progress) {
        let Some(shown) = &self.shown else { return };
        let mut bars = shown.bars.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let bar = bars.entry(progress.stream.clone()).or_insert_with(|| {
            let bar = shown.multi.add(ProgressBar::no_length());
            if let Ok(style) = ProgressStyle::with_template("{prefix:>16} {bar:30} {pos}/{len} {msg}") {
                bar.set_style(style);
            }
            bar.set_prefix(progress.stream.clone());
            bar
        });
        let phase = match progress.phase {
            Phase::Scan => "scanning",
            Phase::Reconcile => "reconciling",
            Phase::Confirm => "confirming deletes",
            Phase::Done => "done",
            _ => "",
        };
        if let Some(total) = progress.total {
            bar.set_length(total);
        }
        bar.set_position(progress.seen);
        bar.set_message(format!("{phase}, {} pages, {} written", progress.pages, progress.written));
        if progress.phase == Phase::Done {
            bar.finish();
        }
    }
}
