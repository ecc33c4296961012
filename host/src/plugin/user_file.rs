//! The user's own JSON files in agmsg-host's home (the trust file, the pinned publisher keys), kept one
//! way: read whole and bounded, none yet is an empty one, a damaged one an error (never silently
//! "nothing", which the next write would make true), and changed under an exclusive lock (two commands
//! changing one at once lose neither's records), written atomically and private to the user (0600).

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::HostError;

/// A file of this kind: its name in the home, the lock beside it, and its empty form.
pub trait UserFile: Serialize + DeserializeOwned {
    /// The file's name in the home (`trusted-plugins.json`).
    const NAME: &'static str;
    /// The lock file's name beside it.
    const LOCK: &'static str;
    /// The file before anything is in it.
    fn empty() -> Self;

    fn path(home: &Path) -> PathBuf {
        home.join(Self::NAME)
    }

    /// The file under `home`; none yet is [`UserFile::empty`]; a damaged one is refused.
    fn load(home: &Path) -> Result<Self, HostError> {
        let path = Self::path(home);
        if !path.exists() {
            return Ok(Self::empty());
        }
        let bytes = super::read_file(&path, super::MAX_TEXT_BYTES)?;
        serde_json::from_slice(&bytes).map_err(|e| HostError::refused(format!("{} is damaged: {e} (fix or delete it)", path.display())))
    }

    /// Change the file under `home`: under the exclusive lock, load it afresh, apply `change`, save it.
    /// Failing to read, lock or write it is refused; `change`'s error keeps its own class.
    fn update<T>(home: &Path, change: impl FnOnce(&mut Self) -> Result<T, HostError>) -> Result<T, HostError> {
        let refused = |what: &str, path: &Path, e: std::io::Error| HostError::refused(format!("cannot {what} {}: {e}", path.display()));
        std::fs::create_dir_all(home).map_err(|e| refused("create", home, e))?;
        let lock_path = home.join(Self::LOCK);
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| refused("open", &lock_path, e))?;
        lock.lock().map_err(|e| refused("lock", &lock_path, e))?;
        let mut file = Self::load(home)?;
        let result = change(&mut file)?;
        save(&file, &Self::path(home))?;
        Ok(result)
    }
}

/// Write `file` to `path` atomically ([`crate::atomic_file`]), private to the user (0600).
fn save(file: &impl Serialize, path: &Path) -> Result<(), HostError> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let text = serde_json::to_string_pretty(file).expect("a user file serializes");
    let failed = |e: std::io::Error| HostError::refused(format!("cannot write {}: {e}", path.display()));
    crate::atomic_file::write_atomically(path, failed, |out| {
        out.get_ref().set_permissions(std::fs::Permissions::from_mode(0o600)).map_err(failed)?;
        out.write_all(text.as_bytes()).map_err(failed)
    })
}
