//! [`FileTokenStore`] and [`DirectoryTokenStore`]: tokens in owner-only files, safe to share
//! between processes.

use std::io::Write as _;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use aws_lc_rs::digest;

use super::{
    KeyedTokenStore, RefreshLock, RefreshTurn, StoreFuture, TokenSet, TokenStore, TokenStoreError,
    shared_turn, wait_for_lock,
};

/// How long a refresh waits for the lock another process holds on the same file before it goes
/// on without it (with a warning): longer than a refresh and its save take (a token request
/// times out after 30 seconds, a save after 10).
pub(super) const LOCK_WAIT: Duration = Duration::from_secs(60);

/// Keeps the tokens in a JSON file that only the owner can read (mode `0600` on Unix).
///
/// Every save writes a new file next to the old one and renames it over it, so a reader (or a
/// crash) sees the old set or the new one, never half of either. Missing parent directories are
/// created (mode `0700` on Unix).
///
/// Safe to share between processes, and between clients of one process that each have their
/// own store object for the file: before a refresh, the client takes an exclusive lock on
/// `.<file name>.lock` beside the file (`flock` on Unix, `LockFileEx` on Windows, through the
/// standard library's `File::try_lock`), reads the file again under it and, when another
/// process saved a newer set meanwhile, uses that set instead of presenting a refresh token the
/// server has already replaced; the lock is released once the new set is saved. So a rotating
/// refresh token is presented once, whichever process refreshes, and no process loses the
/// sign-in.
/// The lock is advisory: it holds between processes that use this store (or take the same
/// lock), on a local file system or one whose locks reach every machine (NFSv4). A process
/// that waits for it more than 60 seconds (a holder that hangs) refreshes without it, with a
/// warning. The lock file stays beside the token file, empty, until
/// [`remove`](Self::remove) (sign-out) deletes both.
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
            if let Err(e) = tokio::fs::remove_file(path).await
                && e.kind() != std::io::ErrorKind::NotFound
            {
                return Err(io_error("cannot remove", path, e));
            }
        }
        Ok(())
    }

    /// The lock file of `tokens.json`: `.tokens.json.lock`, beside it.
    fn lock_path(&self) -> PathBuf {
        let name = self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        self.path.with_file_name(format!(".{name}.lock"))
    }

    /// Takes the refresh lock, waiting at most [`LOCK_WAIT`] while another store holds it;
    /// `None` (and a warning) when the lock file cannot be opened or locked, or the wait ran out.
    async fn lock(&self) -> Option<RefreshLock> {
        let path = self.lock_path();
        let warn = |error: &std::io::Error| {
            tracing::warn!(error = %error, path = %path.display(), "cannot take the refresh lock file; refreshing without the lock");
        };
        let opened = tokio::task::spawn_blocking({
            let path = path.clone();
            move || open_lock(&path)
        });
        let file = opened.await.unwrap_or_else(|stopped| Err(std::io::Error::other(stopped)));
        let file = file.inspect_err(warn).ok()?;
        let try_lock = || {
            std::future::ready(match file.try_lock() {
                Ok(()) => ControlFlow::Break(Some(())),
                Err(std::fs::TryLockError::WouldBlock) => ControlFlow::Continue(()),
                Err(std::fs::TryLockError::Error(error)) => {
                    warn(&error);
                    ControlFlow::Break(None)
                }
            })
        };
        wait_for_lock(LOCK_WAIT, try_lock).await?;
        // Closing the file releases the lock too, should the release never run.
        Some(RefreshLock::new(async move {
            let _ = file.unlock();
        }))
    }
}

impl TokenStore for FileTokenStore {
    fn load(&self) -> StoreFuture<'_, Option<TokenSet>> {
        Box::pin(async move {
            let bytes = match tokio::fs::read(&self.path).await {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(io_error("cannot read", &self.path, e)),
            };
            // serde_json's messages give a position, never the content.
            serde_json::from_slice(&bytes).map(Some).map_err(|e| {
                TokenStoreError::with_source(
                    format!("the token file {} is not a token set", self.path.display()),
                    e,
                )
            })
        })
    }

    fn save<'a>(&'a self, tokens: &'a TokenSet) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let json = serde_json::to_vec_pretty(tokens)
                .map_err(|e| TokenStoreError::with_source("cannot serialise the token set", e))?;
            let path = self.path.clone();
            let written = tokio::task::spawn_blocking(move || write_atomically(&path, &json)).await;
            written
                .unwrap_or_else(|stopped| Err(std::io::Error::other(stopped)))
                .map_err(|e| io_error("cannot write", &self.path, e))
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
        Box::pin(async move {
            // Saved since `current` was: other tokens, expiring no earlier. (A set this process
            // failed to save, and holds in memory, is newer than the file.)
            let saved_since = |stored: &TokenSet| {
                stored.access_token != current.access_token
                    && current.expires_at.is_none_or(|now| stored.expires_at.is_none_or(|then| then >= now))
            };
            Ok(shared_turn(self.lock(), || async move { Ok(self.load().await?.filter(saved_since)) }).await)
        })
    }
}

/// Every user's tokens as a JSON file of their own in one directory, as
/// [`FileTokenStore`] writes them (mode `0600`, replaced atomically). A file's name is a hash
/// of the user key (`<32 hex digits>.json`): safe on every file system whatever the key holds,
/// and saying nothing of it. A file is written only when a set is saved: looking up an unknown
/// key creates nothing.
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
        let digest = digest::digest(&digest::SHA256, format!("business-records user\n{user_key}").as_bytes());
        let name: String = digest.as_ref()[..16].iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{name}.json"))
    }
}

impl KeyedTokenStore for DirectoryTokenStore {
    fn for_user(&self, user_key: &str) -> Arc<dyn TokenStore> {
        Arc::new(FileTokenStore::new(self.path_for(user_key)))
    }
}

fn io_error(action: &str, path: &Path, error: std::io::Error) -> TokenStoreError {
    TokenStoreError::with_source(format!("{action} the token file {}", path.display()), error)
}

/// Writes `contents` to a new owner-only file beside `path` (mode `0600` on Unix, a name no
/// other writer picks), flushes it to disk and renames it over `path`. On any failure the
/// temporary file is removed and `path` is untouched.
fn write_atomically(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new(""));
    create_private_dir(dir)?;
    let temporary = dir.join(format!(".tokens-{:032x}.tmp", fastrand::u128(..)));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options.open(&temporary).and_then(|mut file| {
        file.write_all(contents)?;
        file.sync_all()
    });
    if let Err(error) = written.and_then(|()| std::fs::rename(&temporary, path)) {
        let _ = std::fs::remove_file(&temporary);
        return Err(error);
    }
    // Makes the rename durable (best effort: not every platform can open a directory).
    if let Ok(dir) = std::fs::File::open(dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Opens (or creates) the lock file at `path` as an owner-only file, and its directory.
fn open_lock(path: &Path) -> std::io::Result<std::fs::File> {
    create_private_dir(path.parent().unwrap_or(Path::new("")))?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// Creates `dir` and its missing parents, owner-only (`0700` on Unix).
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.recursive(true).create(dir)
}
