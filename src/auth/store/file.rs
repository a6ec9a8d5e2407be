//! [`FileTokenStore`] and [`DirectoryTokenStore`]: tokens in owner-only files, safe to share
//! between processes, opened as a careful daemon opens them.

use std::fs::{File, OpenOptions};
use std::io::{self, Read as _, Write as _};
use std::ops::ControlFlow;
#[cfg(unix)]
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::{
    KeyedTokenStore, LOCK_WAIT, RefreshLock, RefreshTurn, StoreFuture, TokenSet, TokenStore, TokenStoreError,
    shared_turn, wait_for_lock,
};

/// The largest token file read: a set takes a few KiB (a token answer at most 64 KiB).
const MAX_FILE: u64 = 256 * 1024;
/// How long one load, save, lock-file opening or removal may take.
const STORE_TIMEOUT: Duration = Duration::from_secs(10);

/// Keeps the tokens in a JSON file that only the owner can read (mode `0600` on Unix).
///
/// Every save writes a new file next to the old one and renames it over it, so a reader (or a
/// crash) sees the old set or the new one, never half of either. Missing folders are created
/// owner-only (mode `0700` on Unix).
///
/// Files are opened as a careful daemon opens them, and each refusal is a [`TokenStoreError`]
/// naming the path, its reason the error's source: a symbolic link at the file or lock path is
/// never followed, a FIFO or device is never opened for good (nor waited on), only a regular
/// file of at most 256 KiB is read, every load, save and removal gives up after 10 seconds (one
/// given up on does not replace or delete the file afterwards, unless its rename or removal had
/// already begun), and a folder others may write to is made owner-only, or refused when it is
/// not the user's; a folder shared by design (others may write, sticky bit set, as `/tmp`) is
/// refused and left as it is.
///
/// Safe to share between processes, and between clients of one process that each have their
/// own store object for the file: before a refresh, the client takes an exclusive lock on
/// `.<file name>.lock` beside the file (`flock` on Unix, `LockFileEx` on Windows, through the
/// standard library's `File::try_lock`), reads the file again under it and, when another
/// process saved a newer set meanwhile (another refresh token or expiry), uses that set instead
/// of presenting a refresh token the server has already replaced; the lock is released once
/// the new set is saved. So a rotating refresh token is presented once, whichever process
/// refreshes, and no process loses the sign-in. The lock is advisory: it holds between
/// processes that use this store (or take the same lock), on a local file system or one whose
/// locks reach every machine (NFSv4). The lock of a process that dies is freed at once. A
/// process waits for it up to six minutes, longer than a refresh holds it, and then fails its
/// refresh (it never refreshes without the lock while a holder lives); in a folder no process
/// may write to, where none can take the lock, the refresh goes on without it. The lock file
/// stays beside the token file, empty, until [`remove`](Self::remove) (sign-out) deletes both.
///
/// ```no_run
/// # async fn run() -> Result<(), business_records::auth::TokenStoreError> {
/// use business_records::auth::{FileTokenStore, TokenStore};
/// let store = FileTokenStore::new("/home/me/.config/my-app/tokens.json");
/// if let Some(tokens) = store.load().await? {
///     println!("signed in, expires at {:?}", tokens.expires_at);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct FileTokenStore {
    path: PathBuf,
}

impl FileTokenStore {
    /// A store backed by the file at `path` (it need not exist yet).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileTokenStore { path: path.into() }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Deletes the file (signing out), and its refresh lock file; a missing file is not an
    /// error.
    pub async fn remove(&self) -> Result<(), TokenStoreError> {
        for path in [&self.path, &self.lock_path()] {
            let removed = blocking(path, |path, caller| {
                match still_wanted(caller).and_then(|()| std::fs::remove_file(path)) {
                    Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                    removed => removed,
                }
            });
            removed.await.map_err(|e| failed("cannot remove the token file", path, e))?;
        }
        Ok(())
    }

    /// The lock file of `tokens.json`: `.tokens.json.lock`, beside it.
    fn lock_path(&self) -> PathBuf {
        let name = self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        self.path.with_file_name(format!(".{name}.lock"))
    }

    /// Takes the refresh lock, waiting at most [`LOCK_WAIT`] while another process holds it;
    /// `None` (and a warning) when no process can take it: the folder is read-only, or the
    /// file system has no locks.
    async fn lock(&self) -> Result<Option<RefreshLock>, TokenStoreError> {
        use io::ErrorKind::{PermissionDenied, ReadOnlyFilesystem};
        let path = self.lock_path();
        let without = |e: &io::Error| {
            tracing::warn!(error = %e, path = %path.display(), "no refresh lock can be taken here; refreshing without it");
        };
        let file = match blocking(&path, |path, _| open_lock(path)).await {
            Err(e) if matches!(e.kind(), PermissionDenied | ReadOnlyFilesystem) => {
                without(&e);
                return Ok(None);
            }
            opened => opened.map_err(|e| failed("cannot open the refresh lock", &path, e))?,
        };
        let try_lock = || {
            std::future::ready(match file.try_lock() {
                Ok(()) => ControlFlow::Break(true),
                Err(std::fs::TryLockError::WouldBlock) => ControlFlow::Continue(()),
                Err(std::fs::TryLockError::Error(e)) => {
                    without(&e);
                    ControlFlow::Break(false)
                }
            })
        };
        let what = format!("the refresh lock {}", path.display());
        Ok(wait_for_lock(&what, LOCK_WAIT, try_lock).await?.then(|| {
            // Closing the file releases the lock too, should the release never run.
            RefreshLock::new(async move {
                let _ = file.unlock();
            })
        }))
    }
}

impl TokenStore for FileTokenStore {
    fn load(&self) -> StoreFuture<'_, Option<TokenSet>> {
        Box::pin(async move {
            let bytes = match blocking(&self.path, |path, _| read_private(path)).await {
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                read => read.map_err(|e| failed("cannot read the token file", &self.path, e))?,
            };
            // serde_json's messages give a position, never the content.
            serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| failed("no token set in the token file", &self.path, e.into()))
        })
    }

    fn save<'a>(&'a self, tokens: &'a TokenSet) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let json = serde_json::to_vec_pretty(tokens)
                .map_err(|e| TokenStoreError::with_source("cannot serialise the token set", e))?;
            let written =
                blocking(&self.path, move |path, caller| write_atomically(path, &json, caller)).await;
            written.map_err(|e| failed("cannot write the token file", &self.path, e))
        })
    }

    /// Deletes the file, as [`remove`](FileTokenStore::remove) does.
    fn clear(&self) -> StoreFuture<'_, ()> {
        Box::pin(self.remove())
    }

    /// Takes the lock file beside the token file, waiting while another process refreshes,
    /// then reads the file: a set saved since `current` comes back with the turn (without the
    /// lock when it still works).
    fn begin_refresh<'a>(&'a self, current: &'a TokenSet) -> StoreFuture<'a, RefreshTurn> {
        let read = move || async move { Ok(self.load().await?.filter(|set| set.replaces(current))) };
        Box::pin(shared_turn(self.lock(), read))
    }
}

/// Every user's tokens as a JSON file of their own in one directory, as
/// [`FileTokenStore`] writes them (mode `0600`, replaced atomically, opened with the same
/// care). A file's name is a hash of the user key (`<32 hex digits>.json`): safe on every file
/// system whatever the key holds, and saying nothing of it. A file is written only when a set
/// is saved: looking up an unknown key creates nothing.
///
/// Instances of an app that share the directory share the users, and each user's refresh is
/// locked across them as [`FileTokenStore`] describes: a rotating refresh token is presented
/// once, whichever instance refreshes, and the others take the new set from the file.
#[derive(Debug, Clone)]
pub struct DirectoryTokenStore {
    dir: PathBuf,
}

impl DirectoryTokenStore {
    /// Users' files in `dir` (created with mode `0700` on the first save).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        DirectoryTokenStore { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file that holds `user_key`'s tokens.
    pub fn path_for(&self, user_key: &str) -> PathBuf {
        let hash = crate::fleet::key_hash(format!("business-records user\n{user_key}").as_bytes(), &[]);
        self.dir.join(format!("{}.json", &hash[..32]))
    }
}

impl KeyedTokenStore for DirectoryTokenStore {
    fn for_user(&self, user_key: &str) -> Arc<dyn TokenStore> {
        Arc::new(FileTokenStore::new(self.path_for(user_key)))
    }
}

/// What went wrong with the file at `path`: `action` and the path, the reason its source.
fn failed(action: &str, path: &Path, reason: io::Error) -> TokenStoreError {
    TokenStoreError::with_source(format!("{action} {}", path.display()), reason)
}

/// Runs `op` on `path` on the blocking pool, for at most [`STORE_TIMEOUT`]. A thread cannot be
/// stopped: an operation its caller stopped waiting for (at the timeout, or by dropping the
/// future) goes on, so `op` gets the caller, to check with [`still_wanted`] just before the
/// step that changes the file; an operation reported failed then never replaces or deletes a
/// file saved after it.
async fn blocking<T, F>(path: &Path, op: F) -> io::Result<T>
where
    T: Send + 'static,
    F: FnOnce(&Path, &Weak<()>) -> io::Result<T> + Send + 'static,
{
    let waiting = Arc::new(());
    let (path, caller) = (path.to_owned(), Arc::downgrade(&waiting));
    match tokio::time::timeout(STORE_TIMEOUT, tokio::task::spawn_blocking(move || op(&path, &caller))).await {
        Ok(done) => done.unwrap_or_else(|stopped| Err(io::Error::other(stopped))),
        Err(_) => Err(io::Error::new(io::ErrorKind::TimedOut, format!("no answer within {STORE_TIMEOUT:?}"))),
    }
}

/// An error once the `caller` of [`blocking`] has stopped waiting. What stays open: a rename or
/// removal already under way when it stopped (one that hangs, on a network file system) still
/// lands after the caller was told that it failed.
fn still_wanted(caller: &Weak<()>) -> io::Result<()> {
    if caller.strong_count() == 0 {
        return Err(io::Error::new(io::ErrorKind::TimedOut, "given up by its caller; nothing changed"));
    }
    Ok(())
}

/// Opens `path` as a careful daemon does: a symbolic link is not followed and a FIFO not
/// waited on (`O_NOFOLLOW | O_NONBLOCK` on Unix), only a regular file is kept, and a file it
/// creates is owner-only (`0600`).
fn open_careful(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    #[cfg(unix)]
    options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).mode(0o600);
    let regular =
        |file: File| if file.metadata()?.is_file() { Ok(file) } else { Err(io::ErrorKind::Other.into()) };
    options.open(path).and_then(regular).map_err(|error| match std::fs::symlink_metadata(path) {
        Ok(found) if found.is_symlink() => io::Error::other("a symbolic link, which is never followed"),
        Ok(found) if !found.is_file() => io::Error::other("not a regular file"),
        _ => error,
    })
}

/// The bytes of the token file at `path`: a regular file of at most [`MAX_FILE`] bytes, in a
/// folder others may not write to.
fn read_private(path: &Path) -> io::Result<Vec<u8>> {
    private_dir(folder(path), false)?;
    let file = open_careful(path, OpenOptions::new().read(true))?;
    if file.metadata()?.len() > MAX_FILE {
        return Err(io::Error::other(format!("larger than {} KiB", MAX_FILE / 1024)));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Writes `contents` to a new owner-only file beside `path` (mode `0600` on Unix, a name no
/// other writer picks), flushes it to disk and, while its `caller` still waits, renames it over
/// `path`. On any failure the temporary file is removed and `path` is untouched.
fn write_atomically(path: &Path, contents: &[u8], caller: &Weak<()>) -> io::Result<()> {
    let dir = folder(path);
    private_dir(dir, true)?;
    let temporary = dir.join(format!(".tokens-{:032x}.tmp", fastrand::u128(..)));
    let written =
        open_careful(&temporary, OpenOptions::new().write(true).create_new(true)).and_then(|mut file| {
            file.write_all(contents)?;
            file.sync_all()?;
            still_wanted(caller)
        });
    if let Err(error) = written.and_then(|()| std::fs::rename(&temporary, path)) {
        let _ = std::fs::remove_file(&temporary);
        return Err(error);
    }
    // Makes the rename durable (best effort: not every platform can open a directory).
    let _ = File::open(dir).and_then(|dir| dir.sync_all());
    Ok(())
}

/// Opens (or creates) the lock file at `path`, owner-only, in a private folder.
fn open_lock(path: &Path) -> io::Result<File> {
    private_dir(folder(path), true)?;
    open_careful(path, OpenOptions::new().write(true).create(true).truncate(false))
}

/// The folder of the file at `path`.
fn folder(path: &Path) -> &Path {
    path.parent().filter(|dir| !dir.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// Makes sure no one but the user may write to `dir`: created owner-only (`0700` on Unix) when
/// `create` and missing; one others may write to is made owner-only, or refused when that
/// fails (it is not the user's) or when it is shared by design (sticky, as `/tmp` is).
fn private_dir(dir: &Path, create: bool) -> io::Result<()> {
    if create {
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        builder.mode(0o700);
        builder.recursive(true).create(dir)?;
    }
    #[cfg(unix)]
    {
        let mode = std::fs::metadata(dir)?.permissions().mode();
        if mode & 0o022 != 0 && mode & 0o1000 != 0 {
            return Err(io::Error::other(
                "its folder is shared by all users (sticky, as /tmp is): use one of its own",
            ));
        }
        if mode & 0o022 != 0 {
            let refused = |_| io::Error::other("others may write to its folder, which is not the user's");
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(refused)?;
            tracing::warn!(dir = %dir.display(), "others could write to the token folder; it is now owner-only");
        }
    }
    Ok(())
}
