//! How a run proceeds (SYNC.md): the lease, the scan newest first and its stop, the rescan
//! when `totalCount` drops, the mark, cursor expiry, a run killed between pages, identity by
//! content, streams named by their tables.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use business_records_reference_server::{Endpoint, Fault, Faults, ReferenceServer};
use business_records_sync::{Mode, Phase, Reconcile, Stream, SyncError};
use serde_json::json;

use crate::support::{Db, at, client, run, served};

crate::cases!(
    a_first_run_mirrors_everything_and_a_second_makes_one_request_and_writes_nothing,
    ties_on_updated_at_across_page_boundaries_are_all_read,
    records_changed_during_a_scan_are_never_skipped,
    a_record_deleted_during_a_scan_makes_it_scan_once_more,
    a_cursor_expiring_mid_run_starts_again_from_the_first_page,
    a_fourth_cursor_refusal_fails_the_run_and_keeps_the_mark,
    a_run_killed_between_pages_is_completed_by_the_next_without_writing_twice,
    a_record_changed_twice_between_runs_is_written_once,
    an_update_without_a_new_timestamp_is_caught_by_content,
    two_processes_on_one_stream_one_holds_the_lease,
    each_table_is_a_stream_with_its_own_state,
);

async fn a_first_run_mirrors_everything_and_a_second_makes_one_request_and_writes_nothing(db: Db) {
    let server = ReferenceServer::builder().companies(250).start().await;
    let mirror = db.mirror(&client(&server)).stream(Stream::companies());
    let first = run(&db, &mirror, "companies").await;
    assert!(first.error.is_none(), "{first:?}");
    assert_eq!((first.mode, first.inserted, first.pages, first.seen), (Mode::Full, 250, 3, 250));
    assert_eq!(db.live("companies").await, served(&server, "companies"), "the mirror holds what is served");
    let newest =
        server.dataset().companies_sorted("-updatedAt", None)[0]["updatedAt"].as_str().map(str::to_owned);
    let mark = first.mark.clone().expect("a mark");
    assert_eq!(business_records_sync_time(&mark), newest, "the mark is the server's newest updatedAt");

    let before = server.requests(Endpoint::Companies);
    let second = run(&db, &mirror, "companies").await;
    assert!(second.error.is_none(), "{second:?}");
    assert_eq!(server.requests(Endpoint::Companies) - before, 1, "one list request");
    assert_eq!((second.requests, second.written(), second.mode), (1, 0, Mode::Incremental));
    assert_eq!(second.mark, first.mark);
    assert_eq!(db.changes().await.len(), 250, "one change row per insert, none since");
}

/// The mark, stored as `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`, in the server's whole-second form.
fn business_records_sync_time(mark: &str) -> Option<String> {
    mark.strip_suffix(".000000000Z").map(|seconds| format!("{seconds}Z"))
}

async fn ties_on_updated_at_across_page_boundaries_are_all_read(db: Db) {
    // Seven records share one updatedAt; pages of two split the tie three times.
    let mut builder = ReferenceServer::builder();
    for n in 0..7 {
        builder = builder.company(json!({"id": format!("c{n}"), "updatedAt": at(0), "name": "first"}));
    }
    let server = builder.start().await;
    // No lookback at all: ties at the mark itself must be read again.
    let mirror = db.mirror(&client(&server)).stream(Stream::companies().limit(2)).lookback(Duration::ZERO);
    assert_eq!(run(&db, &mirror, "companies").await.inserted, 7);

    // Five new records and two changed ones tie on a newer updatedAt...
    for n in 7..12 {
        server.put("companies", json!({"id": format!("c{n}"), "updatedAt": at(9), "name": "new"})).unwrap();
    }
    for n in [0, 6] {
        server
            .put("companies", json!({"id": format!("c{n}"), "updatedAt": at(9), "name": "changed"}))
            .unwrap();
    }
    let second = run(&db, &mirror, "companies").await;
    assert_eq!((second.inserted, second.updated), (5, 2), "{second:?}");

    // ...and two more arrive later within the same second as the mark.
    server.put("companies", json!({"id": "c12", "updatedAt": at(9), "name": "late"})).unwrap();
    server.put("companies", json!({"id": "c3", "updatedAt": at(9), "name": "late"})).unwrap();
    let third = run(&db, &mirror, "companies").await;
    assert_eq!((third.inserted, third.updated), (1, 1), "{third:?}");
    assert_eq!(db.live("companies").await, served(&server, "companies"));
    assert_eq!(run(&db, &mirror, "companies").await.written(), 0);
}

async fn records_changed_during_a_scan_are_never_skipped(db: Db) {
    let server = Arc::new(ReferenceServer::builder().companies(40).start().await);
    let client = client(&server);
    assert_eq!(run(&db, &db.mirror(&client).stream(Stream::companies()), "companies").await.inserted, 40);
    // Ten changes before the run...
    let ids: Vec<String> = server.dataset().companies().iter().map(|c| c.id().to_owned()).collect();
    for id in &ids[..10] {
        server
            .put(
                "companies",
                json!({"id": id, "updatedAt": "2030-01-01T00:00:00Z", "name": "changed before"}),
            )
            .unwrap();
    }
    // ...and, once the first page is read, three unread records and a new one move to the
    // front, shifting the records not read yet back by four.
    let hook = Arc::clone(&server);
    let moved: Vec<String> = ids[30..33].iter().cloned().chain(["cmp_new".to_owned()]).collect();
    let once = AtomicBool::new(true);
    let mirror = db.mirror(&client).stream(Stream::companies().limit(5)).on_progress(move |p| {
        if p.phase == Phase::Scan && p.pages == 1 && once.swap(false, Ordering::SeqCst) {
            for id in &moved {
                let record = json!({"id": id, "updatedAt": "2030-01-01T00:00:01Z", "name": "changed during"});
                hook.put("companies", record).unwrap();
            }
        }
    });
    let second = run(&db, &mirror, "companies").await;
    assert!(second.error.is_none(), "{second:?}");
    let live = db.live("companies").await;
    for id in &ids[..10] {
        assert_eq!(live[id]["name"], "changed before", "{id} was skipped: {second:?}");
    }
    // What moved in front of the scan is read by the next run, which its mark still covers.
    let third = run(&db, &mirror, "companies").await;
    assert_eq!((third.updated, third.inserted), (3, 1), "{third:?}");
    assert_eq!(db.live("companies").await, served(&server, "companies"));
}

async fn a_record_deleted_during_a_scan_makes_it_scan_once_more(db: Db) {
    let server = Arc::new(ReferenceServer::builder().companies(20).start().await);
    let client = client(&server);
    assert_eq!(run(&db, &db.mirror(&client).stream(Stream::companies()), "companies").await.inserted, 20);
    let ids: Vec<String> = server.dataset().companies().iter().map(|c| c.id().to_owned()).collect();
    // Ten changes, all in one second, read in pages of five (ties in id order): c0..c4, c5..c9.
    for id in &ids[..10] {
        server
            .put("companies", json!({"id": id, "updatedAt": "2030-01-01T00:00:00Z", "name": "changed"}))
            .unwrap();
    }
    // Once the first page is read, its first record is deleted: the sixth record moves onto
    // the first page, and a scan that went on would skip it.
    let (hook, gone) = (Arc::clone(&server), ids[0].clone());
    let mirror =
        db.mirror(&client).stream(Stream::companies().limit(5)).reconcile(Reconcile::Never).on_progress(
            move |p| {
                if p.pages == 1 {
                    hook.remove_company(&gone);
                }
            },
        );
    let second = run(&db, &mirror, "companies").await;
    assert!(second.error.is_none(), "{second:?}");
    assert_eq!(
        db.live("companies").await[&ids[5]]["name"],
        "changed",
        "the shifted record was read: {second:?}"
    );
    assert_eq!(second.updated, 10, "each change written once, the deleted record's included");
    assert!(second.pages >= 4, "a second pass from the front: {second:?}");
}

async fn a_cursor_expiring_mid_run_starts_again_from_the_first_page(db: Db) {
    let faults = Faults::new().on(Endpoint::Companies, 3, Fault::ExpireCursor);
    let server = ReferenceServer::builder().companies(50).faults(faults).start().await;
    let mirror = db.mirror(&client(&server)).stream(Stream::companies().limit(10));
    let report = run(&db, &mirror, "companies").await;
    assert!(report.error.is_none(), "{report:?}");
    assert_eq!((report.restarts, report.inserted, report.unchanged), (1, 50, 20), "{report:?}");
    assert_eq!(report.pages, 7, "two pages, refused, then five from the first");
    assert_eq!(db.changes().await.len(), 50, "what was written is not written again");
    assert!(report.mark.is_some());
}

async fn a_fourth_cursor_refusal_fails_the_run_and_keeps_the_mark(db: Db) {
    let server = ReferenceServer::builder().companies(30).faults(Faults::none()).start().await;
    let mirror = db.mirror(&client(&server)).stream(Stream::companies().limit(10));
    let first = run(&db, &mirror, "companies").await;
    let mark = db.state("companies").await.and_then(|s| s.mark);
    assert_eq!((first.inserted, mark.is_some()), (30, true));
    // Twelve changes: more than a page.
    for n in 1..=12 {
        server
            .put("companies", json!({"id": format!("cmp_{n:04}"), "updatedAt": "2030-01-01T00:00:00Z"}))
            .unwrap();
    }
    // Every request that carries a cursor is refused.
    server.set_faults(Faults::new().on_every(Endpoint::Companies, 1, Fault::ExpireCursor));
    let second = run(&db, &mirror.reconcile(Reconcile::Never), "companies").await;
    assert!(matches!(second.error, Some(SyncError::CursorExpired { restarts: 3 })), "{second:?}");
    assert_eq!((second.restarts, second.updated, second.unchanged), (3, 10, 30), "{second:?}");
    assert_eq!(db.state("companies").await.and_then(|s| s.mark), mark, "the mark did not move");
}

async fn a_run_killed_between_pages_is_completed_by_the_next_without_writing_twice(db: Db) {
    // The third page never comes in time: the run is killed after two pages, however fast the
    // machine, and not a page later.
    let stall = Faults::new().on(Endpoint::Companies, 3, Fault::Slow(Duration::from_secs(5)));
    let server = ReferenceServer::builder().companies(50).faults(stall).start().await;
    let client = client(&server);
    let (kill, killed) = tokio::sync::oneshot::channel();
    let kill = Mutex::new(Some(kill));
    let mirror =
        db.mirror(&client).stream(Stream::companies().limit(10)).lease(Duration::from_secs(2)).on_progress(
            move |p| {
                if p.pages == 2
                    && let Some(kill) = kill.lock().unwrap().take()
                {
                    let _ = kill.send(());
                }
            },
        );
    tokio::select! {
        report = mirror.run_all() => panic!("the run was not killed: {report:?}"),
        _ = killed => {}
    }
    // Give a commit already handed to the sink the time to land.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let kept = db.rows("companies").await.len();
    assert!((10..=20).contains(&kept), "committed pages stay: {kept}");
    assert_eq!(db.state("companies").await.and_then(|s| s.mark), None, "the mark is unchanged");

    let busy = run(&db, &db.mirror(&client).stream(Stream::companies().limit(10)), "companies").await;
    assert!(
        matches!(busy.error, Some(SyncError::Busy { .. })),
        "the killed run's lease still holds: {busy:?}"
    );
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    let next = run(&db, &db.mirror(&client).stream(Stream::companies().limit(10)), "companies").await;
    assert!(next.error.is_none(), "{next:?}");
    assert_eq!((next.inserted as usize, next.unchanged as usize), (50 - kept, kept), "{next:?}");
    assert_eq!(db.changes().await.len(), 50, "each record written once");
    assert_eq!(db.live("companies").await, served(&server, "companies"));
    if let Some(outcomes) = db.outcomes("companies").await {
        assert_eq!(outcomes, ["abandoned", "ok"], "the killed run is recorded abandoned");
    }
}

async fn a_record_changed_twice_between_runs_is_written_once(db: Db) {
    let server = ReferenceServer::builder().companies(10).start().await;
    let mirror = db.mirror(&client(&server)).stream(Stream::companies());
    run(&db, &mirror, "companies").await;
    server.upsert_company(json!({"id": "cmp_0005", "name": "once"})).unwrap();
    let last = server.upsert_company(json!({"id": "cmp_0005", "name": "twice"})).unwrap();
    let report = run(&db, &mirror, "companies").await;
    assert_eq!((report.updated, report.inserted), (1, 0), "{report:?}");
    let changes: Vec<_> = db.changes().await.into_iter().filter(|c| c.run == report.run).collect();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(db.live("companies").await["cmp_0005"], last.to_json());
}

async fn an_update_without_a_new_timestamp_is_caught_by_content(db: Db) {
    let server = ReferenceServer::builder()
        .company(json!({"id": "a", "updatedAt": at(1), "name": "one"}))
        .company(json!({"id": "b", "updatedAt": at(2), "name": "two"}))
        .start()
        .await;
    let mirror = db.mirror(&client(&server)).stream(Stream::companies());
    assert_eq!(run(&db, &mirror, "companies").await.inserted, 2);
    // Two updates within one second: the second keeps the first's updatedAt.
    server.put("companies", json!({"id": "b", "updatedAt": at(2), "name": "two, again"})).unwrap();
    let report = run(&db, &mirror, "companies").await;
    assert_eq!((report.updated, report.unchanged), (1, 1), "{report:?}");
    assert_eq!(db.live("companies").await["b"]["name"], "two, again");
}

async fn two_processes_on_one_stream_one_holds_the_lease(db: Db) {
    let faults = Faults::new().on(Endpoint::Companies, 2, Fault::Slow(Duration::from_millis(700)));
    let server = ReferenceServer::builder().companies(30).faults(faults).start().await;
    let client = client(&server);
    let other = db.reopen().await;
    let first = db.mirror(&client).stream(Stream::companies().limit(10));
    let second = other.mirror(&client).stream(Stream::companies().limit(10));
    let (a, b) = tokio::join!(first.run_all(), async {
        // The first process holds the lease once its first page is in.
        for _ in 0..200 {
            if db.rows("companies").await.len() >= 10 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        second.run_all().await
    });
    let (a, b) = (&a.streams[0], &b.streams[0]);
    assert!(a.error.is_none() && a.inserted == 30, "{a:?}");
    assert!(matches!(b.error, Some(SyncError::Busy { .. })), "{b:?}");
    assert_eq!(b.requests, 0, "a busy stream sends nothing");
    // Released at the end: the other process syncs it now, and finds nothing to write.
    let after = second.run_all().await.streams.remove(0);
    assert!(after.error.is_none() && after.written() == 0, "{after:?}");
    assert_eq!(db.changes().await.len(), 30);
}

async fn each_table_is_a_stream_with_its_own_state(db: Db) {
    let server = ReferenceServer::builder().companies(60).start().await;
    let mirror = db
        .mirror(&client(&server))
        .stream(Stream::companies())
        .stream(Stream::companies().status("active").table("active_companies"));
    let report = mirror.run().await.expect("both streams");
    let active = server.dataset().companies_sorted("", Some("active")).len() as u64;
    assert_eq!(report.stream("companies").map(|r| r.inserted), Some(60));
    assert_eq!(report.stream("active_companies").map(|r| r.inserted), Some(active));
    assert!(db.state("companies").await.is_some() && db.state("active_companies").await.is_some());
    assert_eq!(db.live("active_companies").await.len() as u64, active);
    let statuses = db.sink().status().await.unwrap();
    let names: Vec<_> = statuses.iter().map(|s| (s.stream.as_str(), s.last_outcome.as_deref())).collect();
    assert_eq!(names, [("active_companies", Some("ok")), ("companies", Some("ok"))]);
}
