//! Reconciliation: the whole list by creation time (which updates do not move), the server's
//! version winning, and the ids the mirror holds that the list no longer has, deleted once
//! confirmed.

use std::collections::HashSet;

use serde_json::Value;

use crate::SyncError;
use crate::context::Context;
use crate::record::element;
use crate::report::Phase;
use crate::scan::{Pass, walk};
use crate::sink::Policy;

/// Reconciles the stream. `missing` are the ids the last reconciliation missed (kept where no
/// read-one endpoint confirms deletes); returns the ids to keep as missing now.
pub(crate) async fn reconcile(ctx: &mut Context<'_>, missing: &[String]) -> Result<Vec<String>, SyncError> {
    ctx.phase = Phase::Reconcile;
    let pass = Pass {
        sort: ctx.stream.fields.created.clone(),
        incremental: false,
        stop: None,
        policy: Policy::Authoritative,
    };
    let mut seen = HashSet::new();
    let walked = walk(ctx, &pass, Some(&mut seen)).await?;
    if walked.total_changed {
        tracing::info!(stream = %ctx.stream.table, "totalCount changed during reconciliation; nothing deleted");
        return Ok(missing.to_vec());
    }
    let live = ctx.sink.live_ids(&ctx.stream.table).await?;
    let suspects: Vec<String> = live.into_iter().filter(|id| !seen.contains(id)).collect();
    if suspects.is_empty() {
        return Ok(Vec::new());
    }
    ctx.phase = Phase::Confirm;
    ctx.tell();
    let witness = seen.iter().next().cloned();
    let confirms = match witness {
        Some(id) => read_one(ctx, &id).await?.is_some(),
        None => false,
    };
    let (deletes, still_missing) = if confirms {
        let mut deletes = Vec::new();
        for id in suspects {
            match read_one(ctx, &id).await? {
                Some(value) => write_back(ctx, value).await?,
                None => deletes.push(id),
            }
        }
        (deletes, Vec::new())
    } else {
        suspects.into_iter().partition(|id| missing.contains(id))
    };
    let pending = ctx.commit(Vec::new(), Policy::Authoritative, deletes, None);
    ctx.settle(Some(pending)).await?;
    Ok(still_missing)
}

/// `GET {list path}/{id}`: the record, or `None` for a 404 (or a 405: no such endpoint).
async fn read_one(ctx: &mut Context<'_>, id: &str) -> Result<Option<Value>, SyncError> {
    let mut path: Vec<&str> = ctx.stream.path.split('/').collect();
    path.push(id);
    ctx.report.requests += 1;
    match ctx.client.get(path).send::<Value>().await {
        Ok(value) => Ok(Some(value)),
        Err(error) if matches!(error.status(), Some(404 | 405)) => Ok(None),
        Err(error) => Err(error.into()),
    }
}

/// A suspect the server still serves: its version is written (the server's wins).
async fn write_back(ctx: &mut Context<'_>, value: Value) -> Result<(), SyncError> {
    let Some(record) = element(value, &ctx.stream.fields) else { return Ok(()) };
    let pending = ctx.commit(vec![record], Policy::Authoritative, Vec::new(), None);
    ctx.settle(Some(pending)).await
}
