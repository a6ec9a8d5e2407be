//! What a careless neighbour (or the user) leaves where a file store keeps its files: a FIFO at
//! the token or lock path, a token file of a gibibyte, a symbolic link at the lock path, a
//! folder open to everyone. And what held before and must hold: a lock holder killed with
//! SIGKILL frees the lock, a read-only folder keeps the sign-in, a truncated token file is
//! rewritten, racing saves leave one valid owner-only file. Each through a signed-in client of
//! the reference server where a refresh is involved.

use std::future::Future;
use std::io::BufRead as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use business_records::auth::{AuthorizationCodeFlow, FileTokenStore, TokenSet, TokenStore};
use business_records::{Auth, Client, Error};
use business_records_reference_server::ReferenceServer;
use futures::future::join_all;

use super::{Scratch, child_process};
use crate::auth_user::sign_in;
use crate::support::stored_user_client;

crate::cases! {
    ServerControl:
        a_fifo_at_the_token_or_lock_path_is_refused_at_once_never_waited_on,
        a_token_file_of_a_gibibyte_is_refused_unread,
        a_symbolic_link_at_the_lock_path_is_never_followed,
        a_folder_open_to_everyone_is_made_owner_only,
        a_folder_shared_by_all_users_is_refused_and_left_as_it_is,
        a_read_only_folder_keeps_the_sign_in,
        a_truncated_token_file_is_rewritten_by_the_next_refresh;
    Anywhere:
        a_lock_holder_killed_with_sigkill_frees_the_lock,
        racing_saves_leave_one_valid_owner_only_file [multi_thread(2)];
    ChildProcess:
        a_process_holding_the_refresh_lock,
        a_process_in_a_read_only_folder;
}

/// How a parent tells its child process where things are.
const SETTINGS: [&str; 4] = [
    "BUSINESS_RECORDS_STORE_FILE",
    "BUSINESS_RECORDS_STORE_BASE_URL",
    "BUSINESS_RECORDS_STORE_AUTH_URL",
    "BUSINESS_RECORDS_STORE_CLIENT_ID",
];

/// `err` and its causes, one after the other.
fn chain(err: &dyn std::error::Error) -> String {
    let causes = std::iter::successors(Some(err), |e| e.source()).map(ToString::to_string);
    causes.collect::<Vec<_>>().join(": ")
}

/// `future`'s output; a hang fails the case after five seconds.
async fn within<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(5), future).await.expect("answered, not hung")
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).expect("metadata").permissions().mode() & 0o777
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().expect("mkfifo").success());
}

/// A scratch folder, owner-only, and the token file's path in it.
fn folder(name: &str) -> (Scratch, std::path::PathBuf) {
    let scratch = Scratch::new(name);
    std::fs::create_dir_all(&scratch.0).expect("a folder");
    set_mode(&scratch.0, 0o700);
    let file = scratch.0.join("tokens.json");
    (scratch, file)
}

/// A signed-in user's client whose tokens are `tokens`, kept in the file at `path`.
fn user_client(
    server: &ReferenceServer,
    flow: &AuthorizationCodeFlow,
    tokens: TokenSet,
    path: &Path,
) -> Client {
    let auth = Auth::user(flow.clone(), tokens).store(FileTokenStore::new(path));
    Client::builder().base_url(server.base_url()).auth(auth).build().expect("client")
}

/// The refresh token saved at `path` is the one the server considers current.
async fn the_sign_in_lives_in(server: &ReferenceServer, path: &Path) {
    let saved = FileTokenStore::new(path).load().await.expect("load").expect("a set");
    let refresh = saved.refresh_token.expect("a refresh token").secret().to_owned();
    assert_eq!(server.active_refresh_tokens(server.test_user()), [refresh], "the sign-in lives on");
    assert_eq!((mode(path), server.refresh_token_reuses()), (0o600, 0));
}

/// A FIFO at the token path is refused at once by `load` (the path and the reason named), and a
/// refresh goes on and saves a token file in its place; a FIFO at the lock path fails the
/// refresh at once, naming the lock, before any refresh token is sent.
async fn a_fifo_at_the_token_or_lock_path_is_refused_at_once_never_waited_on() {
    let server = ReferenceServer::builder().companies(3).refresh_token_rotation(true).start().await;
    let (scratch, file) = folder("fifo");
    mkfifo(&file);
    let err = within(FileTokenStore::new(&file).load()).await.expect_err("a FIFO");
    let text = chain(&err);
    assert!(text.contains(&file.display().to_string()) && text.ends_with("not a regular file"), "{text}");
    let (flow, tokens) = sign_in(&server).await;
    let client = user_client(&server, &flow, tokens, &file);
    server.expire_tokens();
    within(client.companies().limit(1).send()).await.expect("the refresh goes on");
    the_sign_in_lives_in(&server, &file).await;

    let other = scratch.0.join("other.json");
    let (flow, tokens) = sign_in(&server).await;
    FileTokenStore::new(&other).save(&tokens).await.expect("save");
    let lock = scratch.0.join(".other.json.lock");
    mkfifo(&lock);
    let client = stored_user_client(&server, &flow, FileTokenStore::new(&other)).await;
    let before = server.token_requests_for("refresh_token");
    server.expire_tokens();
    let err = within(client.companies().limit(1).send()).await.expect_err("no lock to take");
    let text = chain(&err);
    assert!(matches!(err, Error::TokenStore(_)), "{err:?}");
    assert!(text.contains(&lock.display().to_string()) && text.ends_with("not a regular file"), "{text}");
    assert_eq!(server.token_requests_for("refresh_token"), before, "no refresh token sent");
}

/// A token file of 1 GiB (sparse) is refused before it is read, naming the limit; a refresh
/// goes on and puts the new set in its place.
async fn a_token_file_of_a_gibibyte_is_refused_unread() {
    let server = ReferenceServer::builder().companies(3).refresh_token_rotation(true).start().await;
    let (_scratch, file) = folder("gibibyte");
    std::fs::File::create(&file).expect("create").set_len(1 << 30).expect("1 GiB");
    let started = Instant::now();
    let err = within(FileTokenStore::new(&file).load()).await.expect_err("too large");
    let text = chain(&err);
    assert!(text.contains(&file.display().to_string()) && text.ends_with("larger than 256 KiB"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
    let (flow, tokens) = sign_in(&server).await;
    let client = user_client(&server, &flow, tokens, &file);
    server.expire_tokens();
    within(client.companies().limit(1).send()).await.expect("the refresh goes on");
    assert!(std::fs::metadata(&file).expect("metadata").len() < 64 * 1024);
    the_sign_in_lives_in(&server, &file).await;
}

/// A symbolic link at the lock path is not followed: nothing is created at its target, and
/// the refresh fails at once, naming the lock and the reason, before a refresh token is sent.
async fn a_symbolic_link_at_the_lock_path_is_never_followed() {
    let server = ReferenceServer::builder().companies(3).refresh_token_rotation(true).start().await;
    let (scratch, file) = folder("symlink");
    let (flow, tokens) = sign_in(&server).await;
    FileTokenStore::new(&file).save(&tokens).await.expect("save");
    let target = scratch.0.join("elsewhere");
    let lock = scratch.0.join(".tokens.json.lock");
    std::os::unix::fs::symlink(&target, &lock).expect("symlink");
    let client = stored_user_client(&server, &flow, FileTokenStore::new(&file)).await;
    server.expire_tokens();
    let err = within(client.companies().limit(1).send()).await.expect_err("a link at the lock path");
    let text = chain(&err);
    assert!(text.contains(&lock.display().to_string()) && text.ends_with("never followed"), "{text}");
    assert!(!target.exists(), "nothing created through the link");
    assert_eq!(server.token_requests_for("refresh_token"), 0, "no refresh token sent");
}

/// A folder anyone may write to (0777) is made owner-only (0700) by the next store operation,
/// and the sign-in goes on.
async fn a_folder_open_to_everyone_is_made_owner_only() {
    let server = ReferenceServer::builder().companies(3).refresh_token_rotation(true).start().await;
    let (scratch, file) = folder("open-folder");
    let (flow, tokens) = sign_in(&server).await;
    FileTokenStore::new(&file).save(&tokens).await.expect("save");
    set_mode(&scratch.0, 0o777);
    let client = stored_user_client(&server, &flow, FileTokenStore::new(&file)).await;
    assert_eq!(mode(&scratch.0), 0o700, "loading made it owner-only");
    set_mode(&scratch.0, 0o777);
    server.expire_tokens();
    client.companies().limit(1).send().await.expect("the refresh");
    assert_eq!(mode(&scratch.0), 0o700, "the refresh made it owner-only");
    the_sign_in_lives_in(&server, &file).await;
}

/// A folder others may write to by design (sticky, as `/tmp`) is never made owner-only: loads,
/// saves and refreshes there are refused, naming the folder's reason, and its mode stays. A
/// sticky folder only its owner may write to is the owner's own.
async fn a_folder_shared_by_all_users_is_refused_and_left_as_it_is() {
    let server = ReferenceServer::builder().companies(3).start().await;
    let (scratch, file) = folder("sticky");
    let (flow, tokens) = sign_in(&server).await;
    set_mode(&scratch.0, 0o1777);
    let refused = |err: &dyn std::error::Error| {
        let text = chain(err);
        assert!(text.contains(&file.display().to_string()) && text.contains("shared by all users"), "{text}");
    };
    refused(&FileTokenStore::new(&file).save(&tokens).await.expect_err("a save"));
    refused(&FileTokenStore::new(&file).load().await.expect_err("a load"));
    let client = user_client(&server, &flow, tokens, &file);
    server.expire_tokens();
    let err = client.companies().limit(1).send().await.expect_err("the refresh's save");
    assert!(matches!(err, Error::TokenStore(_)), "{err:?}");
    let meta = std::fs::metadata(&scratch.0).expect("metadata");
    assert_eq!(
        (meta.permissions().mode() & 0o7777, std::fs::read_dir(&scratch.0).expect("dir").count()),
        (0o1777, 0)
    );
    set_mode(&scratch.0, 0o1700);
    let kept = TokenSet::new("a").with_refresh_token("r");
    FileTokenStore::new(&file).save(&kept).await.expect("sticky but owner-only: a folder of its own");
    set_mode(&scratch.0, 0o700);
}

/// A process holds the refresh lock of a file; another waits for it; the holder is killed with
/// SIGKILL, and the waiter gets the lock at once.
async fn a_lock_holder_killed_with_sigkill_frees_the_lock() {
    let (_scratch, file) = folder("sigkill");
    let tokens = TokenSet::new("a").with_refresh_token("r");
    FileTokenStore::new(&file).save(&tokens).await.expect("save");
    let settings = [(SETTINGS[0], file.display().to_string())];
    let mut holder = child_process("hostile::stores::a_process_holding_the_refresh_lock", &settings)
        .stdout(Stdio::piped())
        .spawn()
        .expect("the holder");
    let stdout = holder.stdout.take().expect("its output");
    let locked = tokio::task::spawn_blocking(move || {
        std::io::BufReader::new(stdout).lines().map_while(Result::ok).any(|line| line == "locked")
    });
    assert!(within(locked).await.expect("the reader"), "the holder took the lock");
    let waiting = tokio::spawn(async move { FileTokenStore::new(&file).begin_refresh(&tokens).await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiting.is_finished(), "the lock is held");
    holder.kill().expect("SIGKILL");
    holder.wait().expect("the holder ended");
    let started = Instant::now();
    let turn = within(waiting).await.expect("task").expect("the turn");
    assert!(turn.is_locked() && started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
}

/// The holder of [`a_lock_holder_killed_with_sigkill_frees_the_lock`]: takes the lock, says so,
/// and waits to be killed.
async fn a_process_holding_the_refresh_lock() {
    let store = FileTokenStore::new(std::env::var(SETTINGS[0]).expect("the file"));
    let tokens = store.load().await.expect("load").expect("a set");
    let turn = store.begin_refresh(&tokens).await.expect("the turn");
    assert!(turn.is_locked());
    println!("locked");
    tokio::time::sleep(Duration::from_secs(60)).await;
    drop(turn);
}

/// A folder the process may not write to (0500, and when the case runs as root, the child runs
/// as another user): the lock file and the new set cannot be written, and the sign-in goes on,
/// its refresh made once.
async fn a_read_only_folder_keeps_the_sign_in() {
    let server = ReferenceServer::builder().companies(3).refresh_token_rotation(true).start().await;
    let (scratch, file) = folder("read-only");
    let (_, mut tokens) = sign_in(&server).await;
    tokens.expires_at = Some(chrono::Utc::now() - chrono::Duration::seconds(1));
    FileTokenStore::new(&file).save(&tokens).await.expect("save");
    set_mode(&scratch.0, 0o500);
    let probe = scratch.0.join("probe");
    let privileged = std::fs::File::create(&probe).is_ok();
    let values =
        [file.display().to_string(), server.base_url(), server.auth_url(), server.public_client_id().into()];
    let settings: Vec<(&str, String)> = SETTINGS.into_iter().zip(values).collect();
    let mut child = child_process("hostile::stores::a_process_in_a_read_only_folder", &settings);
    if privileged {
        std::fs::remove_file(&probe).expect("remove the probe");
        for path in [&scratch.0, &file] {
            std::os::unix::fs::chown(path, Some(65534), Some(65534)).expect("chown");
        }
        std::os::unix::process::CommandExt::uid(&mut child, 65534);
        std::os::unix::process::CommandExt::gid(&mut child, 65534);
    }
    let output =
        tokio::task::spawn_blocking(move || child.output()).await.expect("task").expect("the child ran");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("pages=1"), "{stdout}");
    assert_eq!(server.token_requests_for("refresh_token"), 1);
    assert_eq!(server.refresh_token_reuses(), 0);
    let entries: Vec<_> =
        std::fs::read_dir(&scratch.0).expect("dir").map(|e| e.expect("entry").file_name()).collect();
    assert_eq!(entries, ["tokens.json"], "nothing written");
    set_mode(&scratch.0, 0o700);
}

/// The child of [`a_read_only_folder_keeps_the_sign_in`]: a page as the stored user, whose
/// access token has expired.
async fn a_process_in_a_read_only_folder() {
    let [file, base_url, auth_url, client_id] = SETTINGS.map(|name| std::env::var(name).expect(name));
    let store = FileTokenStore::new(file);
    let tokens = store.load().await.expect("load").expect("a stored set");
    let flow = AuthorizationCodeFlow::new(auth_url, client_id, "http://127.0.0.1:9/callback").expect("flow");
    let auth = Auth::user(flow.scopes(["openid", "profile", "api/read"]), tokens).store(store);
    let client = Client::builder().base_url(base_url).auth(auth).build().expect("client");
    client.companies().limit(1).send().await.expect("the sign-in goes on");
    println!("pages=1");
}

/// A token file cut in half (a crash of another writer, a full disk) is not a set: the next
/// refresh goes on and rewrites it whole.
async fn a_truncated_token_file_is_rewritten_by_the_next_refresh() {
    let server = ReferenceServer::builder().companies(3).refresh_token_rotation(true).start().await;
    let (_scratch, file) = folder("truncated");
    let (flow, tokens) = sign_in(&server).await;
    FileTokenStore::new(&file).save(&tokens).await.expect("save");
    let length = std::fs::metadata(&file).expect("metadata").len();
    std::fs::OpenOptions::new().write(true).open(&file).expect("open").set_len(length / 2).expect("cut");
    assert!(FileTokenStore::new(&file).load().await.is_err(), "half a set is no set");
    let client = user_client(&server, &flow, tokens, &file);
    server.expire_tokens();
    client.companies().limit(1).send().await.expect("the refresh");
    the_sign_in_lives_in(&server, &file).await;
}

/// Eight store objects over one file save 25 sets each at once: one whole set is left, owner-
/// only, and no temporary file.
async fn racing_saves_leave_one_valid_owner_only_file() {
    let (scratch, file) = folder("racing");
    let writers = (0..8).map(|writer| {
        let store = FileTokenStore::new(&file);
        tokio::spawn(async move {
            for n in 0..25 {
                let tokens =
                    TokenSet::new(format!("a-{writer}-{n}")).with_refresh_token(format!("r-{writer}-{n}"));
                store.save(&tokens).await.expect("save");
            }
        })
    });
    for writer in join_all(writers).await {
        writer.expect("writer");
    }
    let saved = FileTokenStore::new(&file).load().await.expect("a whole set").expect("a set");
    let access = saved.access_token.secret().trim_start_matches("a-").to_owned();
    assert_eq!(saved.refresh_token.map(|t| t.secret().to_owned()), Some(format!("r-{access}")));
    assert_eq!(mode(&file), 0o600);
    let entries: Vec<_> =
        std::fs::read_dir(&scratch.0).expect("dir").map(|e| e.expect("entry").file_name()).collect();
    assert_eq!(entries, ["tokens.json"], "no temporary file left");
}
