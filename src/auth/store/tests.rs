use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;

/// A fresh directory under the system's temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "business-records-{name}-{}-{}",
            std::process::id(),
            crate::auth::pkce::random_value()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn sample(n: u32) -> TokenSet {
    TokenSet::new(format!("access-{n}"))
        .with_refresh_token(format!("refresh-{n}"))
        .with_expires_at(DateTime::from_timestamp(1_900_000_000 + i64::from(n), 0).unwrap_or_default())
        .with_scopes(["openid", "api/read"])
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn token_sets_serialise_in_full_and_debug_redacted() {
    let mut tokens = sample(1);
    tokens.id_token = Some(IdToken::new("id-1"));
    let json = serde_json::to_value(&tokens).expect("serialise");
    assert_eq!(json["access_token"], "access-1");
    assert_eq!(json["refresh_token"], "refresh-1");
    assert_eq!(json["id_token"], "id-1");
    assert_eq!(json["scopes"], serde_json::json!(["openid", "api/read"]));
    let back: TokenSet = serde_json::from_value(json).expect("deserialise");
    assert_eq!(back.refresh_token, tokens.refresh_token);
    assert_eq!(back.expires_at, tokens.expires_at);
    assert!(back.id_token_claims().is_none(), "claims are never read from storage");

    let debug = format!("{tokens:?}");
    for secret in ["access-1", "refresh-1", "id-1"] {
        assert!(!debug.contains(secret), "{debug}");
    }
    assert!(debug.contains("[redacted]"));
    // A minimal document is enough.
    let minimal: TokenSet = serde_json::from_str(r#"{"access_token":"a"}"#).expect("minimal");
    assert!(minimal.refresh_token.is_none() && !minimal.is_expired());
}

#[tokio::test]
async fn memory_store_round_trip() {
    let store = MemoryTokenStore::new();
    assert!(store.load().await.expect("load").is_none());
    let clone = store.clone();
    clone.save(&sample(2)).await.expect("save");
    assert_eq!(store.saves(), 1);
    let loaded = store.load().await.expect("load").expect("stored");
    assert_eq!(loaded.access_token.secret(), "access-2");
}

#[tokio::test]
async fn file_store_round_trip_and_missing_file() {
    let dir = TempDir::new("round-trip");
    let store = FileTokenStore::new(dir.0.join("nested/deeper/tokens.json"));
    assert!(store.load().await.expect("a missing file is no tokens").is_none());
    store.save(&sample(3)).await.expect("save");
    let loaded = store.load().await.expect("load").expect("stored");
    assert_eq!(loaded.refresh_token.as_ref().map(|t| t.secret()), Some("refresh-3"));
    assert_eq!(entries(&dir.0.join("nested/deeper")), ["tokens.json"], "no temporary file is left");
    store.remove().await.expect("remove");
    store.remove().await.expect("removing twice is fine");
    assert!(store.load().await.expect("load").is_none());
    std::fs::create_dir(store.path()).expect("a folder at the token path");
    let err = store.remove().await.expect_err("a folder is not removed as a file");
    assert!(err.to_string().contains(&store.path().display().to_string()), "{err}");
}

/// A token file is read up to 256 KiB, and refused one byte past it.
#[tokio::test]
async fn a_token_file_is_read_up_to_256_kib() {
    let dir = TempDir::new("largest");
    let store = FileTokenStore::new(dir.0.join("tokens.json"));
    let json = serde_json::to_string(&sample(1)).expect("json");
    let padded = |len: usize| format!("{json}{}", " ".repeat(len - json.len()));
    std::fs::write(store.path(), padded(256 * 1024)).expect("write");
    assert!(store.load().await.expect("256 KiB is read").is_some());
    std::fs::write(store.path(), padded(256 * 1024 + 1)).expect("write");
    let err = store.load().await.expect_err("one byte more");
    assert!(
        std::error::Error::source(&err).is_some_and(|e| e.to_string() == "larger than 256 KiB"),
        "{err:?}"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn file_store_is_owner_only() {
    use std::os::unix::fs::PermissionsExt as _;

    let dir = TempDir::new("permissions");
    let path = dir.0.join("private/tokens.json");
    let store = FileTokenStore::new(&path);
    store.save(&sample(4)).await.expect("save");
    let mode = |p: &Path| std::fs::metadata(p).expect("metadata").permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&dir.0.join("private")), 0o700);

    // A world-readable file left by something else is replaced by an owner-only one.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    store.save(&sample(5)).await.expect("save");
    assert_eq!(mode(&path), 0o600);
}

#[tokio::test]
async fn file_store_corrupt_file_is_an_error_without_its_content() {
    let dir = TempDir::new("corrupt");
    let path = dir.0.join("tokens.json");
    std::fs::write(&path, "{\"access_token\": \"leaked-secret\", ").expect("write");
    let err = FileTokenStore::new(&path).load().await.expect_err("corrupt");
    let text = format!("{err} {err:?}");
    let text = format!("{text} {}", crate::Error::TokenStore(err));
    assert!(!text.contains("leaked-secret"), "{text}");
    assert!(text.contains("no token set in the token file"), "{text}");
}

#[tokio::test]
async fn file_store_failed_write_leaves_the_old_file_and_no_temporary() {
    let dir = TempDir::new("failed-write");
    let path = dir.0.join("tokens.json");
    // The rename cannot replace a directory: the save fails after writing the temporary file.
    std::fs::create_dir(&path).expect("a directory in the way");
    std::fs::write(path.join("keep"), "old").expect("write");
    let err = FileTokenStore::new(&path).save(&sample(6)).await.expect_err("cannot replace a directory");
    assert!(err.to_string().starts_with("cannot write the token file"), "{err}");
    assert_eq!(entries(&dir.0), ["tokens.json"], "the temporary file is removed");
    assert_eq!(std::fs::read_to_string(path.join("keep")).expect("read"), "old");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_never_see_a_partial_file() {
    let dir = TempDir::new("atomic");
    let path = dir.0.join("tokens.json");
    let store = FileTokenStore::new(&path);
    store.save(&sample(0)).await.expect("first save");

    let writer = {
        let store = store.clone();
        tokio::spawn(async move {
            for n in 1..=150 {
                store.save(&sample(n)).await.expect("save");
            }
        })
    };
    let reader = {
        let path = path.clone();
        tokio::task::spawn_blocking(move || {
            let mut reads = 0;
            let mut last = 0;
            while last < 150 {
                let bytes = std::fs::read(&path).expect("the file always exists");
                let tokens: TokenSet = serde_json::from_slice(&bytes).expect("always a whole token set");
                let n: u32 =
                    tokens.access_token.secret().trim_start_matches("access-").parse().expect("number");
                assert!(n >= last, "saves arrive in order");
                assert_eq!(
                    tokens.refresh_token.as_ref().map(|t| t.secret().to_owned()),
                    Some(format!("refresh-{n}"))
                );
                last = n;
                reads += 1;
            }
            reads
        })
    };
    writer.await.expect("writer");
    let reads = reader.await.expect("reader");
    assert!(reads > 0);
    assert_eq!(entries(&dir.0), ["tokens.json"]);
}

#[tokio::test]
async fn verified_claims_survive_a_store_and_old_sets_still_load() {
    let claims: Claims = serde_json::from_value(serde_json::json!({
        "iss": "https://auth.example.com", "sub": "alice", "aud": "my-app", "exp": 2_000_000_000, "email": "a@example.com"
    }))
    .expect("claims");
    let mut tokens = sample(1);
    tokens.id_claims = Some(claims);
    let dir = TempDir::new("claims");
    let store = FileTokenStore::new(dir.0.join("tokens.json"));
    store.save(&tokens).await.expect("save");
    let loaded = store.load().await.expect("load").expect("stored");
    let claims = loaded.id_token_claims().expect("claims kept");
    assert_eq!(claims.sub.as_deref(), Some("alice"));
    assert_eq!(claims.extra["email"], "a@example.com");
    // A set saved before claims were kept has none, and loads.
    let legacy: TokenSet =
        serde_json::from_str(r#"{"access_token":"a","refresh_token":"r","scopes":["openid"]}"#)
            .expect("old set");
    assert!(legacy.id_token_claims().is_none());
    // Cleared: the file is gone, and clearing again is no error.
    store.clear().await.expect("clear");
    assert!(store.load().await.expect("load").is_none());
    store.clear().await.expect("clear again");
    let memory = MemoryTokenStore::new();
    memory.save(&tokens).await.expect("save");
    memory.clear().await.expect("clear");
    assert!(memory.get().is_none());
}

/// Two stores over one file, as two processes have: the second refresh waits for the first
/// one's lock, then gets the set the first saved instead of refreshing with a replaced token.
#[tokio::test(start_paused = true)]
async fn a_refresh_waits_for_the_lock_of_another_store_and_takes_what_it_saved() {
    let dir = TempDir::new("refresh-lock");
    let path = dir.0.join("tokens.json");
    let (first, second) = (FileTokenStore::new(&path), FileTokenStore::new(&path));
    first.save(&sample(1)).await.expect("save");

    let held = first.begin_refresh(&sample(1)).await.expect("lock");
    assert!(held.is_locked() && held.newer().is_none(), "{held:?}");
    let waiting = tokio::spawn(async move { second.begin_refresh(&sample(1)).await });
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(!waiting.is_finished(), "the second refresh waits while the first holds the lock");

    first.save(&sample(2)).await.expect("the new set, saved under the lock");
    held.lock.expect("held").release().await;
    let turn = waiting.await.expect("task").expect("turn");
    assert!(turn.is_locked());
    let newer = turn.newer().expect("the set the first store saved");
    assert_eq!(newer.refresh_token.as_ref().map(|t| t.secret()), Some("refresh-2"));
    assert_eq!(entries(&dir.0), [".tokens.json.lock", "tokens.json"], "the lock file stays beside");
    FileTokenStore::new(&path).clear().await.expect("sign-out");
    assert!(entries(&dir.0).is_empty(), "sign-out deletes both");
}

/// What a store hands back is only a set saved after the caller's: not the caller's own, and
/// not an older one (a save of the caller's newest set that failed). One that still works needs
/// no lock; one that has expired comes with the lock, to be refreshed under it.
#[tokio::test]
async fn only_a_set_saved_since_is_handed_back() {
    let dir = TempDir::new("saved-since");
    let store = FileTokenStore::new(dir.0.join("tokens.json"));
    assert!(store.begin_refresh(&sample(1)).await.expect("no file").newer().is_none());
    store.save(&sample(1)).await.expect("save");
    for (current, handed_back) in [(1, false), (2, false), (0, true)] {
        let turn = store.begin_refresh(&sample(current)).await.expect("turn");
        assert_eq!(turn.newer().is_some(), handed_back, "the caller holds set {current}");
        assert_eq!(turn.is_locked(), !handed_back, "the caller holds set {current}");
    }
    let no_expiry = TokenSet::new("another");
    assert!(store.begin_refresh(&no_expiry).await.expect("turn").newer().is_some());
    let an_hour_ago = Utc::now() - chrono::Duration::hours(1);
    store.save(&TokenSet::new("expired").with_expires_at(an_hour_ago)).await.expect("save");
    let older = TokenSet::new("older").with_expires_at(an_hour_ago - chrono::Duration::hours(1));
    let turn = store.begin_refresh(&older).await.expect("turn");
    assert!(turn.is_locked() && turn.newer().is_some_and(TokenSet::is_expired), "{turn:?}");
}

/// A live holder keeps the lock for as long as a refresh may hold it (a deadline of up to five
/// minutes, then a save): a waiter gets it when it is released at 5 min 59 s, and never goes
/// on without it; a holder that keeps it past six minutes fails the waiter's turn, at six
/// minutes exactly (and the next poll), with an error naming the lock.
#[tokio::test(start_paused = true)]
async fn a_lock_is_waited_for_six_minutes_then_refused_never_taken_around() {
    let dir = TempDir::new("lock-wait");
    let path = dir.0.join("tokens.json");
    let waiter = |path: PathBuf| {
        tokio::spawn(async move { FileTokenStore::new(path).begin_refresh(&sample(1)).await })
    };

    let held = FileTokenStore::new(&path).begin_refresh(&sample(1)).await.expect("lock");
    let waiting = waiter(path.clone());
    tokio::time::sleep(Duration::from_secs(359)).await;
    assert!(!waiting.is_finished(), "still waiting at 5 min 59 s");
    held.lock.expect("held").release().await;
    let turn = waiting.await.expect("task").expect("the lock, once released");
    assert!(turn.is_locked());

    let started = tokio::time::Instant::now();
    let waiting = waiter(path);
    tokio::time::sleep(Duration::from_secs(320)).await;
    assert!(!waiting.is_finished(), "a holder may refresh for five minutes and save");
    let err = waiting.await.expect("task").expect_err("held past six minutes");
    let waited = started.elapsed();
    assert!(waited >= Duration::from_secs(360) && waited <= Duration::from_millis(360_100), "{waited:?}");
    let message = err.to_string();
    assert!(
        message.contains(".tokens.json.lock") && message.contains("held by another process"),
        "{message}"
    );
    drop(turn);
}

#[tokio::test]
async fn one_object_keeps_every_user_apart() {
    let temp = TempDir::new("keyed");
    let dir = temp.0.join("users");
    let stores: [Arc<dyn KeyedTokenStore>; 2] =
        [Arc::new(MemoryKeyedStore::new()), Arc::new(DirectoryTokenStore::new(&dir))];
    for stores in stores {
        for user in ["alice", "bob", "../../etc/passwd", "a/b\\c:d*?\"<>|", ""] {
            stores.for_user(user).save(&TokenSet::new(format!("token of {user}"))).await.expect("save");
        }
        for user in ["alice", "bob", "../../etc/passwd", "a/b\\c:d*?\"<>|", ""] {
            let loaded = stores.for_user(user).load().await.expect("load").expect("stored");
            assert_eq!(loaded.access_token.secret(), format!("token of {user}"));
        }
        stores.for_user("alice").clear().await.expect("clear");
        assert!(stores.for_user("alice").load().await.expect("load").is_none());
        assert!(stores.for_user("bob").load().await.expect("load").is_some(), "others stay");
    }
    let files = DirectoryTokenStore::new(&dir);
    let name = files.path_for("../../etc/passwd");
    assert_eq!(name.parent(), Some(dir.as_path()), "file names never leave the directory");
    assert_ne!(files.path_for("Alice"), files.path_for("alice"), "case-insensitive file systems too");
    assert_eq!(std::fs::read_dir(&dir).expect("dir").count(), 4, "one file per stored user");
}

#[tokio::test]
async fn only_a_save_makes_an_entry_and_a_clear_removes_it() {
    let stores = MemoryKeyedStore::new();
    for n in 0..1_000 {
        assert!(stores.for_user(&format!("unknown-{n}")).load().await.expect("load").is_none());
        stores.for_user(&format!("unknown-{n}")).clear().await.expect("clear");
    }
    assert!(stores.is_empty(), "{stores:?}");
    let alice = stores.for_user("alice");
    alice.save(&TokenSet::new("t")).await.expect("save");
    assert_eq!((stores.len(), stores.is_empty()), (1, false));
    assert_eq!(format!("{stores:?}"), "MemoryKeyedStore { users: 1 }", "no session key in Debug");
    alice.clear().await.expect("clear");
    assert!(stores.is_empty());
}

/// `release` runs the store's release before it returns; a lock dropped unreleased (a
/// cancelled refresh) is released on the runtime.
#[tokio::test]
async fn a_lock_is_released_when_awaited_or_dropped() {
    let released = Arc::new(AtomicUsize::new(0));
    let lock = || {
        let released = released.clone();
        RefreshLock::new(async move {
            released.fetch_add(1, Ordering::SeqCst);
        })
    };
    lock().release().await;
    assert_eq!(released.load(Ordering::SeqCst), 1, "released before release() returned");
    let turn = RefreshTurn::locked(lock());
    assert_eq!(format!("{turn:?}"), "RefreshTurn { newer: None, lock: Some(RefreshLock { held: true }) }");
    drop(turn);
    tokio::task::yield_now().await;
    assert_eq!(released.load(Ordering::SeqCst), 2, "a dropped lock is released on the runtime");
}

/// Directory file names and Redis key names come from the crate's one hash, and are the names
/// earlier releases wrote: a store written by them is read as it was.
#[test]
fn names_come_from_one_hash_and_are_unchanged() {
    let file = DirectoryTokenStore::new("users").path_for("alice");
    assert_eq!(file, Path::new("users").join("884b04f63212f5169af9afc3f50bc860.json"));
    let key = crate::fleet::key_name("app", "rate-limit", &[], &["api", "client"]);
    assert_eq!(key, "app:rate-limit:d853ba7ec5bc3cd2397073037b17b45f8ff5f6cf");
}

/// Runs `late` on `path` while the one blocking thread is busy, so that its blocking step waits
/// (as behind a busy pool or a slow disk) for `wait` seconds; `late` fails, another process
/// saves set 2 meanwhile, and then the late step runs. What the file holds after.
fn after_a_late_operation<F>(
    path: &Path,
    wait: u64,
    late: impl FnOnce(FileTokenStore) -> F,
) -> Option<TokenSet>
where
    F: Future<Output = Result<(), TokenStoreError>> + Send + 'static,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .max_blocking_threads(1)
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let (free, busy) = std::sync::mpsc::channel::<()>();
        let busy = tokio::task::spawn_blocking(move || busy.recv());
        let late = tokio::spawn(late(FileTokenStore::new(path)));
        tokio::task::yield_now().await;
        tokio::time::advance(Duration::from_secs(wait)).await;
        late.await.expect("task").expect_err("no answer in time");

        let newer = FileTokenStore::new(path);
        std::thread::spawn(move || {
            let runtime =
                tokio::runtime::Builder::new_current_thread().enable_time().build().expect("runtime");
            runtime.block_on(newer.save(&sample(2))).expect("the newer save");
        })
        .join()
        .expect("the other process");

        // The late step runs now; a blocking step queued after it ends once it has.
        free.send(()).expect("free the pool");
        busy.await.expect("busy").expect("freed");
        tokio::task::spawn_blocking(|| ()).await.expect("after the late step");
    });
    let stored = std::fs::read(path).ok()?;
    Some(serde_json::from_slice(&stored).expect("a whole set"))
}

/// A save or a removal given up on (after the store's timeout or the caller's) never replaces or
/// deletes the file: a newer set saved after it stays.
#[test]
fn a_store_operation_that_timed_out_never_changes_the_file_afterwards() {
    let dir = TempDir::new("late-save");
    let path = dir.0.join("tokens.json");
    let stored = after_a_late_operation(&path, 11, |store| async move { store.save(&sample(1)).await });
    assert_eq!(
        stored.map(|set| set.access_token.secret().to_owned()).as_deref(),
        Some("access-2"),
        "the newer set stays"
    );
    assert_eq!(entries(&dir.0), ["tokens.json"], "no temporary file left");

    // A caller that stops waiting sooner, by its own timeout (as the token manager's on a save).
    let stored = after_a_late_operation(&path, 6, |store| async move {
        let given_up = tokio::time::timeout(Duration::from_secs(5), store.save(&sample(3))).await;
        given_up.unwrap_or_else(|_| Err(TokenStoreError::new("the caller's own timeout")))
    });
    assert_eq!(stored.map(|set| set.access_token.secret().to_owned()).as_deref(), Some("access-2"));

    let stored = after_a_late_operation(&path, 11, |store| async move { store.remove().await });
    assert_eq!(
        stored.map(|set| set.access_token.secret().to_owned()).as_deref(),
        Some("access-2"),
        "the newer set stays"
    );
}
