//! [`FileTokenStore`]: a user's tokens in a file, safe to share between processes.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use std::ops::ControlFlow;

use futures::future::BoxFuture;

use super::{TokenSet, TokenStore};
use crate::auth::refresh_turn::wait_for_lock;
use crate::auth::{RefreshLock, RefreshTurn, TokenStoreError};

/// How long a refresh waits for the lock another process holds on the same file before it goes
/// on without it (with a warning): longer than a refresh and its save take (a token request
/// times out after 30 seconds, a save after 10).
pub(super) const LOCK_WAIT: Duration = Duration::from_secs(60);
/// The lock file of `tokens.json` is `.tokens.json.lock`, beside it.
const LOCK_SUFFIX: &str = ".lock";

/// Keeps the tokens in a JSON file that only the owner can read (mode `0600` on Unix).
///
/// Every save writes a new file next to the old one and renames it over it, so a reader (or a
/// crash) sees the old set or the new one, never half of either. Missing parent directories are
/// created (mode `0700` on Unix).
///
/// Safe to share between processes, and between clients of one process that each have their
/// own store object for the file: before a refresh, the client takes an exclusive lock on
/// `.<file name>.lock` beside the file (`flock` on Unix, `LockFileEx` on Windows, through
/// [`fs4`](https://docs.rs/fs4)), reads the file again under it and, when another process
/// saved a newer set meanwhile, uses that set instead of presenting a refresh token the server
/// has already replaced; the lock is released once the new set is saved. So a rotating refresh
/// token is presented once, whichever process refreshes, and no process loses the sign-in.
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
        for path in [self.path.clone(), beside(&self.path, LOCK_SUFFIX)] {
            match tokio::fs::remove_file(&path).await {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_error("cannot remove", &path, e)),
            }
        }
        Ok(())
    }
}

impl TokenStore for FileTokenStore {
    fn load(&self) -> BoxFuture<'_, Result<Option<TokenSet>, TokenStoreError>> {
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

    fn save<'a>(&'a self, tokens: &'a TokenSet) -> BoxFuture<'a, Result<(), TokenStoreError>> {
        Box::pin(async move {
            let json = serde_json::to_vec_pretty(tokens)
                .map_err(|e| TokenStoreError::with_source("cannot serialise the token set", e))?;
            let path = self.path.clone();
            tokio::task::spawn_blocking(move || write_atomically(&path, &json))
                .await
                .map_err(|e| TokenStoreError::with_source("the token file writer stopped", e))?
        })
    }

    /// Deletes the file, as [`remove`](FileTokenStore::remove) does.
    fn clear(&self) -> BoxFuture<'_, Result<(), TokenStoreError>> {
        Box::pin(self.remove())
    }

    /// Takes the lock file beside the token file, waiting while another process refreshes,
    /// then reads the file: a set saved since `current` comes back with the turn.
    fn begin_refresh<'a>(
        &'a self,
        current: &'a TokenSet,
    ) -> BoxFuture<'a, Result<RefreshTurn, TokenStoreError>> {
        Box::pin(async move {
            let Some(lock) = self.lock().await else {
                return Ok(RefreshTurn::proceed());
            };
            let turn = RefreshTurn::locked(lock);
            Ok(match self.load().await {
                Ok(Some(stored)) if saved_since(&stored, current) => turn.with_newer(stored),
                Ok(_) => turn,
                Err(error) => {
                    tracing::debug!(error = %error, "the token file is unreadable; refreshing with the current tokens");
                    turn
                }
            })
        })
    }
}

impl FileTokenStore {
    /// Takes the refresh lock, waiting at most [`LOCK_WAIT`] while another store holds it;
    /// `None` (and a warning) when the lock file cannot be opened or the wait ran out.
    async fn lock(&self) -> Option<RefreshLock> {
        let path = beside(&self.path, LOCK_SUFFIX);
        let opened = tokio::task::spawn_blocking({
            let path = path.clone();
            move || {
                create_private_dir(&dir_of(&path))?;
                open_private(&path, false)
            }
        })
        .await
        .unwrap_or_else(|stopped| Err(std::io::Error::other(stopped)));
        let file = match opened {
            Ok(file) => file,
            Err(error) => {
                tracing::warn!(error = %error, path = %path.display(), "cannot open the refresh lock file; refreshing without the lock");
                return None;
            }
        };
        let try_lock = || {
            std::future::ready(match fs4::FileExt::try_lock(&file) {
                Ok(()) => ControlFlow::Break(Some(())),
                Err(fs4::TryLockError::WouldBlock) => ControlFlow::Continue(()),
                Err(fs4::TryLockError::Error(error)) => {
                    tracing::warn!(error = %error, path = %path.display(), "cannot lock the refresh lock file; refreshing without the lock");
                    ControlFlow::Break(None)
                }
            })
        };
        wait_for_lock(LOCK_WAIT, try_lock).await?;
        // Closing the file releases the lock too, should the release never run.
        Some(RefreshLock::new(async move {
            let _ = fs4::FileExt::unlock(&file);
        }))
    }
}

/// Whether `stored`, read under the lock, was saved after `current` was: other tokens, expiring
/// no earlier. (A set this process failed to save, and holds in memory, is newer than the file.)
fn saved_since(stored: &TokenSet, current: &TokenSet) -> bool {
    stored.access_token != current.access_token
        && match (stored.expires_at, current.expires_at) {
            (Some(stored), Some(current)) => stored >= current,
            _ => true,
        }
}

fn io_error(action: &str, path: &Path, error: std::io::Error) -> TokenStoreError {
    TokenStoreError::with_source(format!("{action} the token file {}", path.display()), error)
}

/// Writes `contents` to a new owner-only file beside `path`, flushes it to disk and renames it
/// over `path`. On any failure the temporary file is removed and `path` is untouched.
fn write_atomically(path: &Path, contents: &[u8]) -> Result<(), TokenStoreError> {
    use std::io::Write as _;

    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = dir_of(path);
    create_private_dir(&dir).map_err(|e| io_error("cannot create the directory of", path, e))?;
    let temp =
        beside(path, &format!(".{}.{}.tmp", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed)));

    let result = open_private(&temp, true).and_then(|mut file| {
        file.write_all(contents)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temp, path)
    });
    if let Err(e) = result {
        let _ = std::fs::remove_file(&temp);
        return Err(io_error("cannot write", path, e));
    }
    sync_dir(&dir);
    Ok(())
}

/// The directory of `path` (`.` for a bare file name).
fn dir_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// A hidden file beside `path`: `.<file name><suffix>` in the same directory.
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    dir_of(path).join(format!(".{name}{suffix}"))
}

/// Opens `path` for writing as an owner-only file (`0600` on Unix, whatever the umask allowed):
/// a new one with `create_new`, else the one there or a new one.
fn open_private(path: &Path, create_new: bool) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true);
    if create_new {
        options.create_new(true);
    } else {
        options.create(true).truncate(false);
    }
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options.open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(file)
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Makes the rename durable (best effort: not every platform can open a directory).
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(dir) = std::fs::File::open(dir) {
        let _ = dir.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}
