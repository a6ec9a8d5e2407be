//! Bad input (SYNC.md's table): a server that ignores `sort` or mixes timestamp formats,
//! records older than the stored ones, a mark ahead of the server, records without
//! `updatedAt` or without `id`, unknown fields.

use business_records_reference_server::{Endpoint, Fault, Faults, ReferenceServer};
use business_records_sync::{Disorder, Missing, Mode, Reconcile, Stream, SyncError};
use serde_json::{Value, json};

use crate::support::{Db, at, client, mark, run, served};

crate::cases!(
    a_server_that_ignores_sort_is_out_of_order_and_the_mark_does_not_move,
    mixed_timestamp_formats_are_out_of_order_or_read_as_a_full_scan,
    a_record_older_than_the_stored_one_is_stale_until_reconciled,
    a_mark_ahead_of_the_server_reconciles_and_is_reset,
    records_without_updated_at_are_stored_by_content_and_never_move_the_mark,
    records_without_an_id_are_skipped_and_counted,
    unknown_fields_are_kept_as_served,
    cursors_that_come_round_again_end_the_run_with_a_pagination_error,
);

fn page(data: Value) -> Fault {
    let total = data.as_array().map_or(0, Vec::len);
    Fault::Body(
        json!({"data": data, "pagination": {"hasMore": false, "totalCount": total}}).to_string().into_bytes(),
    )
}

async fn a_server_that_ignores_sort_is_out_of_order_and_the_mark_does_not_move(db: Db) {
    let mut builder = ReferenceServer::builder().faults(Faults::none());
    for n in 1..=12 {
        builder = builder.company(json!({"id": format!("c{n:02}"), "updatedAt": at(n)}));
    }
    let server = builder.start().await;
    let mirror = db.mirror(&client(&server)).stream(Stream::companies().limit(4));
    assert_eq!(run(&db, &mirror, "companies").await.inserted, 12);
    for n in 13..=20 {
        server.put("companies", json!({"id": format!("c{n:02}"), "updatedAt": at(n + 10)})).unwrap();
    }
    // The second page comes in ascending order, as from a server that ignores `sort`.
    let ascending = json!([{"id": "c13", "updatedAt": at(23)}, {"id": "c14", "updatedAt": at(24)}]);
    server.set_faults(Faults::new().on(Endpoint::Companies, 2, page(ascending)));
    let report = run(&db, &mirror, "companies").await;
    match &report.error {
        Some(SyncError::OutOfOrder { page, previous, next }) => {
            assert_eq!((*page, previous, next), (2, &at(23), &at(24)))
        }
        other => panic!("expected OutOfOrder, got {other:?}"),
    }
    assert_eq!(report.inserted, 4, "the first page's rows stay");
    assert_eq!(db.rows("companies").await.len(), 16);
    assert_eq!(db.state("companies").await.and_then(|s| s.mark), Some(mark(12)), "the mark did not move");
}

async fn mixed_timestamp_formats_are_out_of_order_or_read_as_a_full_scan(db: Db) {
    // Text order puts every `T` form before every space form: the newest records come last.
    let mut builder = ReferenceServer::builder();
    for n in 1..=6 {
        builder = builder
            .company(json!({"id": format!("t{n}"), "updatedAt": at(n)}))
            .company(json!({"id": format!("s{n}"), "updatedAt": format!("2024-05-01 11:00:0{n}")}));
    }
    let server = builder.start().await;
    let client = client(&server);
    let fail = run(&db, &db.mirror(&client).stream(Stream::companies().limit(4)), "companies").await;
    assert!(matches!(fail.error, Some(SyncError::OutOfOrder { page: 2, .. })), "{fail:?}");
    assert_eq!(fail.inserted, 4);
    let full = db.mirror(&client).stream(Stream::companies().limit(4).on_disorder(Disorder::FullScan));
    let report = run(&db, &full, "companies").await;
    assert!(report.error.is_none(), "{report:?}");
    assert_eq!((report.mode, report.inserted, report.mark.as_deref()), (Mode::Full, 8, None), "{report:?}");
    assert_eq!(db.live("companies").await, served(&server, "companies"));
    assert_eq!(db.state("companies").await.and_then(|s| s.mark), None, "the mark did not move");
}

async fn a_record_older_than_the_stored_one_is_stale_until_reconciled(db: Db) {
    let server = ReferenceServer::builder()
        .company(json!({"id": "a", "updatedAt": at(5), "name": "newer"}))
        .company(json!({"id": "b", "updatedAt": at(6)}))
        .start()
        .await;
    let client = client(&server);
    let incremental = db.mirror(&client).stream(Stream::companies()).reconcile(Reconcile::Never);
    run(&db, &incremental, "companies").await;
    server.put("companies", json!({"id": "a", "updatedAt": at(1), "name": "older"})).unwrap();
    server.put("companies", json!({"id": "b", "updatedAt": at(7)})).unwrap();
    let report = run(&db, &incremental, "companies").await;
    assert_eq!((report.stale, report.updated), (1, 1), "{report:?}");
    assert_eq!(db.live("companies").await["a"]["name"], "newer", "the stored row stays");
    let reconciled =
        run(&db, &db.mirror(&client).stream(Stream::companies()).reconcile(Reconcile::Always), "companies")
            .await;
    assert_eq!((reconciled.mode, reconciled.updated), (Mode::Reconcile, 1), "{reconciled:?}");
    assert_eq!(db.live("companies").await["a"]["name"], "older", "the server's version wins");
}

async fn a_mark_ahead_of_the_server_reconciles_and_is_reset(db: Db) {
    let server = ReferenceServer::builder()
        .company(json!({"id": "a", "updatedAt": "2099-01-01T00:00:00Z"}))
        .company(json!({"id": "b", "updatedAt": at(5)}))
        .start()
        .await;
    let client = client(&server);
    let auto = db.mirror(&client).stream(Stream::companies());
    let never = db.mirror(&client).stream(Stream::companies().table("never")).reconcile(Reconcile::Never);
    run(&db, &auto, "companies").await;
    run(&db, &never, "never").await;
    // A restore, or a server whose clock ran ahead: the newest record is older than the mark.
    server.put("companies", json!({"id": "a", "updatedAt": at(6)})).unwrap();
    let report = run(&db, &auto, "companies").await;
    assert_eq!(
        (report.mode, report.updated, report.mark.clone()),
        (Mode::Reconcile, 1, Some(mark(6))),
        "{report:?}"
    );
    assert_eq!(db.live("companies").await, served(&server, "companies"));
    let reset = run(&db, &never, "never").await;
    assert_eq!(
        (reset.mode, reset.stale, reset.mark.clone()),
        (Mode::Incremental, 1, Some(mark(6))),
        "{reset:?}"
    );
}

async fn records_without_updated_at_are_stored_by_content_and_never_move_the_mark(db: Db) {
    let server = ReferenceServer::builder()
        .company(json!({"id": "x", "name": "no timestamp"}))
        .company(json!({"id": "y", "updatedAt": null}))
        .company(json!({"id": "z", "updatedAt": at(3)}))
        .start()
        .await;
    let mirror = db.mirror(&client(&server)).stream(Stream::companies());
    let first = run(&db, &mirror, "companies").await;
    assert_eq!((first.inserted, first.mark.clone()), (3, Some(mark(3))), "{first:?}");
    let rows = db.rows("companies").await;
    assert_eq!(
        (rows["x"].record.updated_at.as_deref(), rows["x"].record.updated_at_raw.as_deref()),
        (None, None)
    );
    assert_eq!(rows["y"].record.updated_at, None);
    server.put("companies", json!({"id": "x", "name": "changed, still no timestamp"})).unwrap();
    let second = run(&db, &mirror, "companies").await;
    assert_eq!(
        (second.updated, second.mark.clone()),
        (1, Some(mark(3))),
        "compared by content; the mark stays"
    );
    assert_eq!(db.live("companies").await, served(&server, "companies"));
}

async fn records_without_an_id_are_skipped_and_counted(db: Db) {
    let server = ReferenceServer::builder()
        .company(json!({"id": "a", "updatedAt": at(2)}))
        .faults(Faults::none())
        .start()
        .await;
    let odd =
        json!([{"name": "no id", "updatedAt": at(3)}, "a bare string", {"id": "a", "updatedAt": at(2)}]);
    server.set_faults(Faults::new().on_every(Endpoint::Companies, 1, page(odd)));
    let client = client(&server);
    let report = run(&db, &db.mirror(&client).stream(Stream::companies()), "companies").await;
    assert!(report.error.is_none(), "{report:?}");
    assert_eq!((report.without_id, report.seen, report.inserted), (2, 1, 1), "{report:?}");
    let strict = db.mirror(&client).stream(Stream::companies().table("strict").on_missing_id(Missing::Fail));
    let failed = run(&db, &strict, "strict").await;
    assert!(matches!(failed.error, Some(SyncError::MissingId { page: 1, position: 0 })), "{failed:?}");
    assert!(db.rows("strict").await.is_empty());
}

async fn unknown_fields_are_kept_as_served(db: Db) {
    let record = json!({
        "id": "a", "updatedAt": at(1), "extra": {"nested": [1, 2.5, {"x": null}], "big": 12345678901234_i64},
        "ünïcode": "é ✓", "flag": true
    });
    let server = ReferenceServer::builder().company(record.clone()).start().await;
    run(&db, &db.mirror(&client(&server)).stream(Stream::companies()), "companies").await;
    assert_eq!(db.live("companies").await["a"], record);
}

/// A server whose cursors come round again (A, B, then A) ends the run with a pagination error
/// on the page that repeats one, instead of walking the circle for ever.
async fn cursors_that_come_round_again_end_the_run_with_a_pagination_error(db: Db) {
    let server = ReferenceServer::builder().faults(Faults::none()).start().await;
    let page = |n: u32, next: Option<&str>| {
        let data = json!([{"id": format!("c{n}"), "updatedAt": at(10 - n)}]);
        let pagination = json!({"hasMore": next.is_some(), "nextCursor": next});
        Fault::Body(json!({"data": data, "pagination": pagination}).to_string().into_bytes())
    };
    let faults = Faults::new().on(Endpoint::Companies, 1, page(1, Some("A"))).on(
        Endpoint::Companies,
        2,
        page(2, Some("B")),
    );
    server.set_faults(faults.on(Endpoint::Companies, 3, page(3, Some("A"))).on(
        Endpoint::Companies,
        4,
        page(4, None),
    ));
    let mirror = db.mirror(&client(&server)).stream(Stream::companies());
    let report = run(&db, &mirror, "companies").await;
    assert!(matches!(&report.error, Some(SyncError::Pagination { page: 3, .. })), "{:?}", report.error);
}
