//! One store object for every signed-in user of an app: [`KeyedTokenStore`] hands out each
//! user's [`TokenStore`], kept in memory ([`MemoryKeyedStore`]), in a directory of files
//! ([`DirectoryTokenStore`]) or in Redis (`RedisTokenCache`, feature `redis`).

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use aws_lc_rs::digest;
use futures::future::BoxFuture;

use super::{FileTokenStore, TokenSet, TokenStore, TokenStoreError};

/// Token stores for many users, kept by one object: [`for_user`](Self::for_user) gives the
/// store of the user the app knows as `user_key` (a user id, a session id), to hand to
/// [`UserAuth::store`](super::UserAuth::store).
///
/// ```no_run
/// # async fn run(app: business_records::Client, flow: business_records::auth::AuthorizationCodeFlow)
/// #     -> Result<(), Box<dyn std::error::Error>> {
/// use business_records::Auth;
/// use business_records::auth::{DirectoryTokenStore, KeyedTokenStore, TokenStore};
///
/// let stores = DirectoryTokenStore::new("/var/lib/my-app/tokens");
/// // A request of the user with session id `sid`, on any instance that shares the directory:
/// let store = stores.for_user("sid-4f1c");
/// if let Some(tokens) = store.load().await? {
///     let user = app.with_auth(Auth::user(flow.clone(), tokens).store(store))?;
///     # let _ = user;
/// }
/// # Ok(()) }
/// ```
pub trait KeyedTokenStore: Send + Sync + 'static {
    /// The store of the user known as `user_key`; stores for the same key share what they keep.
    fn for_user(&self, user_key: &str) -> Arc<dyn TokenStore>;
}

impl<T: KeyedTokenStore + ?Sized> KeyedTokenStore for Arc<T> {
    fn for_user(&self, user_key: &str) -> Arc<dyn TokenStore> {
        (**self).for_user(user_key)
    }
}

/// Every user's tokens in this process's memory, for tests and for apps that sign users in
/// again after a restart. Clones share the users.
///
/// An entry is made only when a set is saved, and removed when the user's store is cleared
/// (sign-out): looking up a key nobody saved under (a session cookie the app never issued)
/// keeps nothing, however many such lookups arrive.
///
/// ```
/// # async fn run() -> Result<(), business_records::auth::TokenStoreError> {
/// use business_records::auth::{KeyedTokenStore, MemoryKeyedStore, TokenSet, TokenStore};
/// let stores = MemoryKeyedStore::new();
/// assert!(stores.for_user("bob").load().await?.is_none());
/// stores.for_user("alice").save(&TokenSet::new("t")).await?;
/// assert!(stores.get("alice").is_some() && stores.get("bob").is_none());
/// assert_eq!(stores.len(), 1);
/// # Ok(()) }
/// ```
#[derive(Clone, Default)]
pub struct MemoryKeyedStore {
    users: Arc<Mutex<HashMap<String, TokenSet>>>,
}

impl fmt::Debug for MemoryKeyedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryKeyedStore").field("users", &self.len()).finish()
    }
}

impl MemoryKeyedStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn users(&self) -> MutexGuard<'_, HashMap<String, TokenSet>> {
        self.users.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The set stored for `user_key`, without waiting.
    pub fn get(&self, user_key: &str) -> Option<TokenSet> {
        self.users().get(user_key).cloned()
    }

    /// How many users have a stored set.
    pub fn len(&self) -> usize {
        self.users().len()
    }

    /// True when no user has a stored set.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl KeyedTokenStore for MemoryKeyedStore {
    fn for_user(&self, user_key: &str) -> Arc<dyn TokenStore> {
        Arc::new(MemoryUserStore { users: self.clone(), key: user_key.to_owned() })
    }
}

/// One user's entry of a [`MemoryKeyedStore`], which holds it only once a set is saved.
struct MemoryUserStore {
    users: MemoryKeyedStore,
    key: String,
}

impl TokenStore for MemoryUserStore {
    fn load(&self) -> BoxFuture<'_, Result<Option<TokenSet>, TokenStoreError>> {
        Box::pin(async move { Ok(self.users.get(&self.key)) })
    }

    fn save<'a>(&'a self, tokens: &'a TokenSet) -> BoxFuture<'a, Result<(), TokenStoreError>> {
        Box::pin(async move {
            self.users.users().insert(self.key.clone(), tokens.clone());
            Ok(())
        })
    }

    fn clear(&self) -> BoxFuture<'_, Result<(), TokenStoreError>> {
        Box::pin(async move {
            self.users.users().remove(&self.key);
            Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_object_keeps_every_user_apart() {
        let dir = std::env::temp_dir().join(format!("business-records-keyed-{}", std::process::id()));
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
        std::fs::remove_dir_all(&dir).expect("cleanup");
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
        assert_eq!(stores.len(), 1);
        assert_eq!(format!("{stores:?}"), "MemoryKeyedStore { users: 1 }", "no session key in Debug");
        alice.clear().await.expect("clear");
        assert!(stores.is_empty());
    }
}
