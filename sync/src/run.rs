//! One stream's run: the lease, the run row, the scan, the reconciliation when due, the new
//! state, and the run's end.

use std::sync::Arc;

use chrono::Utc;
use tokio::task::JoinHandle;
use tracing::Instrument;

use crate::context::{Context, lease_until};
use crate::mirror::{Mirror, Reconcile};
use crate::reconcile::reconcile;
use crate::report::{Mode, Phase, StreamReport};
use crate::scan::{Pass, walk};
use crate::sink::{Policy, Sink, State};
use crate::{Stream, SyncError, time};

/// Runs `stream`: always a report, with the error when it failed.
pub(crate) async fn run_stream(mirror: &Mirror, stream: &Stream) -> StreamReport {
    let mut report =
        StreamReport { stream: stream.table.clone(), outcome: "failed", ..StreamReport::default() };
    if let Err(error) = stream.check() {
        report.error = Some(error);
        return report;
    }
    let (sink, name, holder) = (&mirror.sink, stream.table.as_str(), mirror.holder.as_str());
    let started = time::now();
    let run = match take(sink.as_ref(), name, holder, &started, mirror).await {
        Ok(run) => run,
        Err(error) => {
            report.error = Some(error);
            return report;
        }
    };
    let span = tracing::info_span!("business_records_sync.run", stream = name, run);
    let renewal =
        Renewal(tokio::spawn(renew(Arc::clone(sink), name.to_owned(), holder.to_owned(), mirror.lease)));
    let mut ctx = Context {
        client: &mirror.client,
        sink: Arc::clone(sink),
        stream,
        holder,
        lease: mirror.lease,
        run,
        progress: mirror.progress.as_deref(),
        phase: Phase::Scan,
        total: None,
        report: StreamReport { stream: name.to_owned(), run, ..report },
    };
    let outcome = proceed(&mut ctx, mirror).instrument(span.clone()).await;
    drop(renewal);
    ctx.phase = Phase::Done;
    ctx.tell();
    let mut report = ctx.report;
    report.outcome = if outcome.is_ok() { "ok" } else { "failed" };
    report.error = outcome.err();
    let _entered = span.enter();
    match &report.error {
        None => tracing::info!(requests = report.requests, written = report.written(), "stream synced"),
        Some(error) => tracing::warn!(%error, "stream sync failed"),
    }
    let json = serde_json::to_string(&report).unwrap_or_default();
    if let Err(error) = sink.finish_run(run, report.outcome, &time::now(), &json).await {
        tracing::warn!(%error, "the run's end was not recorded");
    }
    if let Err(error) = sink.lease(name, holder, &time::now(), None).await {
        tracing::warn!(%error, "the lease was not released; it lapses by itself");
    }
    report
}

/// Takes the stream's lease and records the run.
async fn take(
    sink: &dyn Sink,
    name: &str,
    holder: &str,
    now: &str,
    mirror: &Mirror,
) -> Result<i64, SyncError> {
    if !sink.lease(name, holder, now, Some(&lease_until(mirror.lease))).await? {
        return Err(SyncError::Busy { stream: name.to_owned() });
    }
    match sink.start_run(name, now).await {
        Ok(run) => Ok(run),
        Err(error) => {
            let _ = sink.lease(name, holder, now, None).await;
            Err(error.into())
        }
    }
}

/// The scan, the reconciliation when due, and the new state.
async fn proceed(ctx: &mut Context<'_>, mirror: &Mirror) -> Result<(), SyncError> {
    let started = Utc::now();
    let state = ctx.sink.load(&ctx.stream.table).await?.unwrap_or_default();
    let mark = state.mark.as_deref().and_then(time::read);
    let lookback = chrono::Duration::from_std(mirror.lookback).unwrap_or(chrono::Duration::MAX);
    let stop = mark.and_then(|mark| mark.checked_sub_signed(lookback));
    let sort = format!("-{}", ctx.stream.fields.updated);
    let pass = Pass { sort, incremental: true, stop, policy: Policy::Incremental };
    let walked = walk(ctx, &pass, None).await?;
    let ahead = mark.is_some_and(|mark| walked.known && walked.newest.is_none_or(|newest| newest < mark));
    let new_mark = match (walked.disordered, ahead) {
        (true, _) => mark,
        (false, true) => walked.newest,
        (false, false) => mark.max(walked.newest),
    };
    if ahead {
        tracing::warn!(stream = %ctx.stream.table, "the mark is ahead of the server's newest record");
    }
    let first = mark.is_none();
    let due = match mirror.reconcile {
        Reconcile::Never => false,
        Reconcile::Always => true,
        Reconcile::Every(every) => {
            let every = chrono::Duration::from_std(every).unwrap_or(chrono::Duration::MAX);
            let last = state.reconciled_at.as_deref().and_then(time::read);
            ahead
                || (!first
                    && last
                        .is_none_or(|last| last.checked_add_signed(every).is_none_or(|due| due <= started)))
        }
    };
    let mut next = State {
        mark: new_mark.map(time::format),
        reconciled_at: state.reconciled_at.clone().or_else(|| first.then(|| time::format(started))),
        missing: state.missing.clone(),
    };
    ctx.report.mode = if first || walked.disordered { Mode::Full } else { Mode::Incremental };
    if due {
        next.missing = reconcile(ctx, &state.missing).await?;
        next.reconciled_at = Some(time::format(started));
        ctx.report.mode = Mode::Reconcile;
    }
    let pending = ctx.commit(Vec::new(), Policy::Incremental, Vec::new(), Some(next.clone()));
    ctx.settle(Some(pending)).await?;
    ctx.report.mark = next.mark;
    Ok(())
}

/// Renews the lease every third of its length until aborted (commits renew it too).
async fn renew(sink: Arc<dyn Sink>, stream: String, holder: String, lease: std::time::Duration) {
    let mut ticks = tokio::time::interval(lease / 3);
    ticks.tick().await;
    loop {
        ticks.tick().await;
        match sink.lease(&stream, &holder, &time::now(), Some(&lease_until(lease))).await {
            Ok(true) => {}
            Ok(false) => tracing::warn!(%stream, "the lease was taken over by another holder"),
            Err(error) => tracing::warn!(%stream, %error, "the lease was not renewed"),
        }
    }
}

/// The renewal task, stopped when dropped.
struct Renewal(JoinHandle<()>);

impl Drop for Renewal {
    fn drop(&mut self) {
        self.0.abort();
    }
}
