//! Reconciliation (SYNC.md): deletes confirmed by the read-one endpoint, or by two
//! reconciliations in a row without one; nothing deleted when `totalCount` changes; the
//! server's version wins; its schedule.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use business_records_reference_server::{Endpoint, Fault, Faults, ReferenceServer};
use business_records_sync::{Mode, Op, Phase, Reconcile, Stream};
use serde_json::json;

use crate::support::{Db, client, run, served};

crate::cases!(
    reconciliation_deletes_what_the_read_one_endpoint_confirms,
    a_record_served_again_is_undeleted,
    without_a_read_one_endpoint_a_record_missing_twice_is_deleted,
    nothing_is_deleted_when_total_count_changes_during_reconciliation,
    reconciliation_runs_on_its_schedule,
);

async fn reconciliation_deletes_what_the_read_one_endpoint_confirms(db: Db) {
    let server = ReferenceServer::builder().companies(30).start().await;
    let client = client(&server);
    let filtered = Stream::companies().status("active").table("active");
    assert!(run(&db, &db.mirror(&client).stream(filtered.clone()), "active").await.inserted > 2);
    let active: Vec<String> =
        server.dataset().companies_sorted("", Some("active")).iter().map(|c| c.id().to_owned()).collect();
    server.remove_company(&active[0]);
    server.remove_company(&active[1]);
    // A record leaving the filter is not served by the list, but its read-one answers 200.
    let left = server.upsert_company(json!({"id": active[2], "status": "churned"})).unwrap();
    let incremental = run(&db, &db.mirror(&client).stream(filtered.clone()), "active").await;
    assert_eq!(incremental.deleted, 0, "an incremental run never deletes");
    let before = server.requests(Endpoint::Company);
    let report = run(&db, &db.mirror(&client).stream(filtered).reconcile(Reconcile::Always), "active").await;
    assert!(report.error.is_none(), "{report:?}");
    assert_eq!((report.mode, report.deleted, report.updated), (Mode::Reconcile, 2, 1), "{report:?}");
    assert_eq!(
        server.requests(Endpoint::Company) - before,
        4,
        "one witness, then each of the three suspects"
    );
    let rows = db.rows("active").await;
    assert!(
        rows[&active[0]].deleted_at.is_some() && rows[&active[1]].deleted_at.is_some(),
        "rows stay, marked"
    );
    assert_eq!(rows[&active[2]].deleted_at, None, "a 200 clears the suspicion");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&rows[&active[2]].record.body).unwrap(),
        left.to_json()
    );
    let mut deletes: Vec<_> =
        db.changes().await.into_iter().filter(|c| c.op == Op::Delete).map(|c| c.id).collect();
    deletes.sort();
    assert_eq!(deletes, [active[0].clone(), active[1].clone()]);
}

async fn a_record_served_again_is_undeleted(db: Db) {
    let server = ReferenceServer::builder().companies(5).start().await;
    let mirror = db.mirror(&client(&server)).stream(Stream::companies()).reconcile(Reconcile::Always);
    run(&db, &mirror, "companies").await;
    let gone = server.remove_company("cmp_0003").unwrap();
    assert_eq!(run(&db, &mirror, "companies").await.deleted, 1);
    server.put("companies", gone.to_json()).unwrap();
    let report = run(&db, &mirror, "companies").await;
    assert_eq!((report.updated, report.deleted), (1, 0), "{report:?}");
    let last = db.changes().await.pop().unwrap();
    assert_eq!((last.id.as_str(), last.op), ("cmp_0003", Op::Undelete));
    assert_eq!(db.live("companies").await, served(&server, "companies"));
}

async fn without_a_read_one_endpoint_a_record_missing_twice_is_deleted(db: Db) {
    // Every read-one request is answered 404, the witness's too: no read-one endpoint.
    let faults = Faults::new().on_every(Endpoint::Company, 1, Fault::Status(404));
    let server = ReferenceServer::builder().companies(10).faults(faults).start().await;
    let mirror = db.mirror(&client(&server)).stream(Stream::companies()).reconcile(Reconcile::Always);
    run(&db, &mirror, "companies").await;
    server.remove_company("cmp_0004");
    let once = run(&db, &mirror, "companies").await;
    assert_eq!(once.deleted, 0, "missing once is not enough: {once:?}");
    assert_eq!(db.state("companies").await.unwrap().missing, ["cmp_0004"]);
    let twice = run(&db, &mirror, "companies").await;
    assert_eq!(twice.deleted, 1, "missing from two reconciliations in a row: {twice:?}");
    assert!(db.rows("companies").await["cmp_0004"].deleted_at.is_some());
    assert!(db.state("companies").await.unwrap().missing.is_empty());
}

async fn nothing_is_deleted_when_total_count_changes_during_reconciliation(db: Db) {
    let server = Arc::new(ReferenceServer::builder().companies(30).start().await);
    let client = client(&server);
    run(&db, &db.mirror(&client).stream(Stream::companies()), "companies").await;
    server.remove_company("cmp_0007");
    let (hook, once) = (Arc::clone(&server), AtomicBool::new(true));
    let mirror =
        db.mirror(&client).stream(Stream::companies().limit(10)).reconcile(Reconcile::Always).on_progress(
            move |p| {
                if p.phase == Phase::Reconcile && once.swap(false, Ordering::SeqCst) {
                    hook.upsert_company(json!({"id": "cmp_new"})).unwrap();
                }
            },
        );
    let report = run(&db, &mirror, "companies").await;
    assert!(report.error.is_none(), "{report:?}");
    assert_eq!((report.deleted, report.inserted), (0, 1), "{report:?}");
    let next = run(&db, &mirror, "companies").await;
    assert_eq!((next.deleted, next.inserted), (1, 0), "the next reconciliation finds it: {next:?}");
}

async fn reconciliation_runs_on_its_schedule(db: Db) {
    let server = ReferenceServer::builder().companies(10).start().await;
    let client = client(&server);
    let every = |d| db.mirror(&client).stream(Stream::companies()).reconcile(Reconcile::Every(d));
    let day = Duration::from_secs(86_400);
    assert_eq!(run(&db, &every(day), "companies").await.mode, Mode::Full, "the first run counts as one");
    server.remove_company("cmp_0001");
    let soon = run(&db, &every(day), "companies").await;
    assert_eq!((soon.mode, soon.deleted), (Mode::Incremental, 0));
    let due = run(&db, &every(Duration::ZERO), "companies").await;
    assert_eq!((due.mode, due.deleted), (Mode::Reconcile, 1), "{due:?}");
    let never = db.mirror(&client).stream(Stream::companies()).reconcile(Reconcile::Never);
    assert_eq!(run(&db, &never, "companies").await.mode, Mode::Incremental);
}
