//! A PostgreSQL server of the suite's own: `initdb` and `pg_ctl` in a temporary folder, on a
//! free loopback port, as an unprivileged user when the suite runs as root; stopped at the end.

#![cfg_attr(
    not(feature = "postgres"),
    allow(dead_code, reason = "the server is started only with the `postgres` feature")
)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The running server.
pub struct PgServer {
    root: PathBuf,
    bin: PathBuf,
    port: u16,
    user: Option<&'static str>,
}

static SERVER: OnceLock<Result<PgServer, String>> = OnceLock::new();

/// The suite's server, started on first use; the reason when there is none.
pub fn server() -> Result<&'static PgServer, String> {
    SERVER.get_or_init(PgServer::start).as_ref().map_err(Clone::clone)
}

/// Whether this machine has PostgreSQL's server programs.
pub fn available() -> Result<(), String> {
    bin_dir().map(|_| ()).ok_or_else(|| {
        "no PostgreSQL server programs (initdb, pg_ctl): apt-get install postgresql".to_owned()
    })
}

/// Stops the server if it was started.
pub fn stop() {
    if let Some(Ok(server)) = SERVER.get() {
        let data = server.root.join("data");
        let _ = server.run("pg_ctl", &["-D", path(&data), "-m", "immediate", "-w", "stop"]);
        let _ = std::fs::remove_dir_all(&server.root);
    }
}

/// The highest version's `bin` folder under `/usr/lib/postgresql` (Debian's layout), or the
/// folder of an `initdb` on `PATH`.
fn bin_dir() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| Some((entry.file_name().to_str()?.parse().ok()?, entry.path().join("bin"))))
        .filter(|(_, bin)| bin.join("initdb").exists())
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin).or_else(|| {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .find(|dir| dir.join("initdb").exists() && dir.join("pg_ctl").exists())
    })
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temporary path")
}

impl PgServer {
    fn start() -> Result<PgServer, String> {
        let bin = bin_dir().ok_or("no PostgreSQL server programs")?;
        let root = std::env::temp_dir().join(format!("br-sync-pg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).map_err(|e| format!("creating {}: {e}", root.display()))?;
        // initdb and postgres refuse to run as root.
        let root_user =
            Command::new("id").arg("-u").output().is_ok_and(|out| out.stdout.trim_ascii() == b"0");
        let user = root_user.then(|| {
            if Command::new("id").arg("postgres").output().is_ok_and(|out| out.status.success()) {
                "postgres"
            } else {
                "nobody"
            }
        });
        if let Some(user) = user {
            let chown = Command::new("chown").args(["-R", user, path(&root)]).status();
            if !chown.is_ok_and(|status| status.success()) {
                return Err(format!("chown of {} to {user} failed", root.display()));
            }
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map_err(|e| format!("no free port: {e}"))?
            .port();
        let server = PgServer { root, bin, port, user };
        let data = server.root.join("data");
        server.run(
            "initdb",
            &["-D", path(&data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync"],
        )?;
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300",
            path(&server.root)
        );
        let log = server.root.join("postgres.log");
        server.run(
            "pg_ctl",
            &["-D", path(&data), "-l", path(&log), "-o", &options, "-w", "-t", "60", "start"],
        )?;
        Ok(server)
    }

    /// Runs one of the server's programs, as the unprivileged user when there is one.
    fn run(&self, program: &str, args: &[&str]) -> Result<(), String> {
        let program_path = self.bin.join(program);
        let mut command = match self.user {
            Some(user) => {
                let mut command = Command::new("runuser");
                command.args(["-u", user, "--"]).arg(&program_path);
                command
            }
            None => Command::new(&program_path),
        };
        let output = command.args(args).output().map_err(|e| format!("{program}: {e}"))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{program} failed: {}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ))
        }
    }

    /// The connection string of database `name`.
    pub fn url(&self, name: &str) -> String {
        format!("host=127.0.0.1 port={} user=postgres dbname={name}", self.port)
    }

    /// Creates database `name` and returns its connection string.
    pub async fn database(&self, name: &str) -> String {
        let (client, connection) = tokio_postgres::connect(&self.url("postgres"), tokio_postgres::NoTls)
            .await
            .expect("a connection to the suite's server");
        tokio::spawn(connection);
        client
            .batch_execute(&format!("CREATE DATABASE \"{name}\""))
            .await
            .expect("a database of the case's own");
        self.url(name)
    }
}
