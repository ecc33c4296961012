//! Byte-range locks on store files that native processes see too (see `agmsg:host/file-lock`): what a
//! SQLite VFS needs to lock the bytes SQLite's own `unix` VFS locks, so that a component and a native
//! `sqlite3` exclude each other on one database.

pub use crate::bindings::agmsg::host::file_lock::{FileLockError, LockMode};
use crate::bindings::agmsg::host::file_lock as host;

/// Take or convert this instance's lock on `[start, start + len)` of the store file `name` (a plain file
/// name in the store). `Ok(false)`: someone else's lock conflicts.
pub fn try_lock(name: &str, start: u64, len: u64, mode: LockMode) -> Result<bool, FileLockError> {
    host::try_lock(name, start, len, mode)
}

/// Release this instance's lock on those bytes.
pub fn unlock(name: &str, start: u64, len: u64) -> Result<(), FileLockError> {
    host::unlock(name, start, len)
}

/// Whether someone else's lock on those bytes conflicts with `mode`.
pub fn conflicts(name: &str, start: u64, len: u64, mode: LockMode) -> Result<bool, FileLockError> {
    host::conflicts(name, start, len, mode)
}
