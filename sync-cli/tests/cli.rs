//! The command line as users run it: the released binary, its credentials from the
//! environment, against the reference server over real HTTP.

use std::path::PathBuf;
use std::process::{Command, Output};

use business_records_reference_server::{Endpoint, Fault, Faults, ReferenceServer};
use business_records_sync::{Sink, SqliteSink};
use serde_json::{Value, json};

/// The binary, with the server's credentials in the four variables.
fn sync(server: &ReferenceServer, args: &[&str]) -> Output {
    let setting =
        |name: &str| server.settings().into_iter().find(|(k, _)| *k == name).map(|(_, v)| v).unwrap();
    Command::new(env!("CARGO_BIN_EXE_business-records-sync"))
        .args(args)
        .env("BUSINESS_RECORDS_BASE_URL", setting("base_url"))
        .env("BUSINESS_RECORDS_AUTH_URL", setting("auth_url"))
        .env("BUSINESS_RECORDS_CLIENT_ID", setting("client_id"))
        .env("BUSINESS_RECORDS_CLIENT_SECRET", setting("client_secret"))
        .env_remove("BUSINESS_RECORDS_SCOPES")
        .output()
        .expect("the binary runs")
}

fn json_lines(output: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

fn db(name: &str) -> (PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("br-sync-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.sqlite"));
    let text = path.to_str().unwrap().to_owned();
    (path, text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_twice_then_status_as_json() {
    let server = ReferenceServer::builder().companies(120).contacts_per_company(1).start().await;
    let (_, db) = db("twice");
    let first = sync(&server, &["sync", "--db", &db, "--json"]);
    assert_eq!(first.status.code(), Some(0), "{}", String::from_utf8_lossy(&first.stderr));
    assert!(first.stderr.is_empty(), "no progress bars when stderr is not a terminal");
    let reports = json_lines(&first);
    let summary: Vec<_> = reports
        .iter()
        .map(|r| (r["stream"].clone(), r["outcome"].clone(), r["inserted"].clone(), r["mode"].clone()))
        .collect();
    assert_eq!(
        summary,
        [
            (json!("companies"), json!("ok"), json!(120), json!("full")),
            (json!("contacts"), json!("ok"), json!(120), json!("full")),
        ]
    );
    for field in [
        "run",
        "requests",
        "pages",
        "seen",
        "updated",
        "unchanged",
        "deleted",
        "stale",
        "without_id",
        "restarts",
        "mark",
    ] {
        assert!(reports[0].get(field).is_some(), "{field} in {}", reports[0]);
    }
    let before = server.requests(Endpoint::Companies);
    let second = sync(&server, &["sync", "--db", &db, "--json"]);
    assert_eq!(second.status.code(), Some(0));
    assert!(
        json_lines(&second).iter().all(|r| r["requests"] == 1 && r["inserted"] == 0 && r["updated"] == 0)
    );
    assert_eq!(server.requests(Endpoint::Companies) - before, 1);

    let status = Command::new(env!("CARGO_BIN_EXE_business-records-sync"))
        .args(["status", "--db", &db, "--json"])
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(0));
    let statuses = json_lines(&status);
    assert_eq!(statuses.len(), 2);
    assert_eq!(
        (statuses[0]["stream"].as_str(), statuses[0]["last_outcome"].as_str()),
        (Some("companies"), Some("ok"))
    );
    assert!(
        statuses[0]["mark"].is_string()
            && statuses[0]["lease_holder"].is_null()
            && statuses[0]["last_run"].is_number()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_resource_with_a_filter_into_its_own_table() {
    let server = ReferenceServer::builder().companies(50).start().await;
    let (_, db) = db("filtered");
    let output = sync(
        &server,
        &[
            "sync",
            "--db",
            &db,
            "--resource",
            "companies",
            "--filter",
            "status=active",
            "--table",
            "active",
            "--limit",
            "10",
            "--json",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let reports = json_lines(&output);
    let active = server.dataset().companies_sorted("", Some("active")).len();
    assert_eq!(
        (reports.len(), reports[0]["stream"].as_str(), reports[0]["inserted"].as_u64()),
        (1, Some("active"), Some(active as u64))
    );
    let asked = server.journal();
    let pages: Vec<_> = asked.iter().filter(|r| r.endpoint() == Some(Endpoint::Companies)).collect();
    assert!(pages.iter().all(|r| r.query("status") == Some("active")
        && r.query("limit") == Some("10")
        && r.query("sort") == Some("-updatedAt")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_codes_busy_out_of_order_and_usage() {
    let server =
        ReferenceServer::builder().companies(10).contacts_per_company(1).faults(Faults::none()).start().await;
    let (path, db) = db("codes");
    // Another holder has the companies' lease: 3, and contacts still synced and reported.
    let sink = SqliteSink::open(&path).await.unwrap();
    assert!(
        sink.lease(
            "companies",
            "another-process",
            "2000-01-01T00:00:00.000000000Z",
            Some("2999-01-01T00:00:00.000000000Z")
        )
        .await
        .unwrap()
    );
    let busy = sync(&server, &["sync", "--db", &db, "--json"]);
    assert_eq!(busy.status.code(), Some(3), "{}", String::from_utf8_lossy(&busy.stderr));
    let outcomes: Vec<_> =
        json_lines(&busy).iter().map(|r| (r["stream"].clone(), r["outcome"].clone())).collect();
    assert_eq!(outcomes, [(json!("companies"), json!("failed")), (json!("contacts"), json!("ok"))]);
    assert!(String::from_utf8_lossy(&busy.stderr).contains("busy"));
    sink.lease("companies", "another-process", "2000-01-01T00:00:00.000000000Z", None).await.unwrap();

    // A page in ascending order: 4.
    let page = json!({"data": [{"id": "a", "updatedAt": "2024-01-01T00:00:00Z"}, {"id": "b", "updatedAt": "2024-01-02T00:00:00Z"}],
        "pagination": {"hasMore": false, "totalCount": 2}});
    server.set_faults(Faults::new().on(Endpoint::Companies, 1, Fault::Body(page.to_string().into_bytes())));
    let disorder = sync(&server, &["sync", "--db", &db, "--resource", "companies"]);
    assert_eq!(disorder.status.code(), Some(4), "{}", String::from_utf8_lossy(&disorder.stderr));
    assert!(String::from_utf8_lossy(&disorder.stdout).starts_with("companies: failed"));

    // Usage: 2, before anything is sent.
    let sent = server.journal().len();
    for args in [
        &["sync"][..],
        &["sync", "--db", &db, "--table", "t"],
        &["sync", "--db", &db, "--limit", "101"],
        &["nothing"],
    ] {
        assert_eq!(sync(&server, args).status.code(), Some(2), "{args:?}");
    }
    let unset = Command::new(env!("CARGO_BIN_EXE_business-records-sync"))
        .args(["sync", "--db", &db])
        .env_remove("BUSINESS_RECORDS_BASE_URL")
        .output()
        .unwrap();
    assert_eq!(unset.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unset.stderr).contains("BUSINESS_RECORDS_BASE_URL"));
    assert_eq!(server.journal().len(), sent);
}
