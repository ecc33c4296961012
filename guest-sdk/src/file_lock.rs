//! Byte-range locks on store files that native processes see too (see `agmsg:host/file-lock`): what a
//! SQLite VFS needs to lock the bytes SQLite's own `unix` VFS locks, so that a component and a native
//! `sqlite3` exclude each other on one database.
//!
//! For storage drivers. WASI has no `fcntl` locks; the host takes these on the real file as
//! Linux open-file-description locks, which conflict with the POSIX locks native programs take. Each
//! lock belongs to this instance and goes away with it (a trap, a dropped instance, a dead process).
//! No call waits: a conflicting lock is answered at once, and retrying is the caller's business.
//!
//! A file is named by its plain file name in the store (`"messages.db"`, not a path), and must exist.
//! `len` 0 means from `start` to the end of the file, however far it grows, as with `fcntl`.
//!
//! ```no_run
//! use agmsg_guest_sdk::file_lock::{self, FileLockError, LockMode};
//!
//! /// Take a write lock on byte 0 of `state.db`, do `work`, and release it.
//! fn exclusively(work: impl FnOnce()) -> Result<bool, FileLockError> {
//!     if !file_lock::try_lock("state.db", 0, 1, LockMode::Write)? {
//!         return Ok(false); // someone else holds it: try again later
//!     }
//!     work();
//!     file_lock::unlock("state.db", 0, 1)?;
//!     Ok(true)
//! }
//! ```

/// Whether a lock shares its bytes with other readers ([`LockMode::Read`]) or excludes every other
/// holder ([`LockMode::Write`]).
///
/// ```
/// use agmsg_guest_sdk::file_lock::LockMode;
///
/// fn mode_for(writing: bool) -> LockMode {
///     if writing { LockMode::Write } else { LockMode::Read }
/// }
/// assert_eq!(mode_for(true), LockMode::Write);
/// ```
pub use crate::bindings::storage::agmsg::host::file_lock::LockMode;

/// Why the host refused a file-lock call: the name is not a plain file in the store
/// ([`FileLockError::InvalidPath`]), or the file could not be opened or locked
/// ([`FileLockError::Unavailable`], also when it does not exist).
///
/// Besides matching on it, `name()` gives the case's contract name (`"invalid-path"`), `message()`
/// its description, and `Display` the name with the case's number.
///
/// ```
/// use agmsg_guest_sdk::file_lock::FileLockError;
///
/// fn explain(e: FileLockError) -> &'static str {
///     match e {
///         FileLockError::InvalidPath => "name a file in the store, not a path",
///         FileLockError::Unavailable => "the file could not be locked",
///     }
/// }
/// assert_eq!(explain(FileLockError::InvalidPath), "name a file in the store, not a path");
///
/// let e = FileLockError::Unavailable;
/// assert_eq!(e.name(), "unavailable");
/// assert!(!e.message().is_empty());
/// assert!(e.to_string().starts_with("unavailable"));
/// ```
pub use crate::bindings::storage::agmsg::host::file_lock::FileLockError;

use crate::bindings::storage::agmsg::host::file_lock as host;

/// Take or convert this instance's lock on `[start, start + len)` of the store file `name` (a plain file
/// name in the store). `Ok(false)`: someone else's lock conflicts.
///
/// Asking again for bytes this instance already holds converts the lock (read to write or back); a
/// refused request changes nothing.
///
/// ```no_run
/// use agmsg_guest_sdk::file_lock::{self, LockMode};
///
/// // A reader's lock on SQLite's shared range of `messages.db`.
/// const SHARED_FIRST: u64 = 0x4000_0002;
/// let shared = file_lock::try_lock("messages.db", SHARED_FIRST, 510, LockMode::Read)?;
/// if !shared {
///     // a writer holds it: report "busy" and let SQLite's busy handler retry
/// }
/// # Ok::<(), agmsg_guest_sdk::file_lock::FileLockError>(())
/// ```
pub fn try_lock(name: &str, start: u64, len: u64, mode: LockMode) -> Result<bool, FileLockError> {
    host::try_lock(name, start, len, mode)
}

/// Release this instance's lock on those bytes (nothing happens where it holds none).
///
/// ```no_run
/// use agmsg_guest_sdk::file_lock;
///
/// // Length 0: every lock this instance holds on the file, from byte 0 on.
/// file_lock::unlock("messages.db", 0, 0)?;
/// # Ok::<(), agmsg_guest_sdk::file_lock::FileLockError>(())
/// ```
pub fn unlock(name: &str, start: u64, len: u64) -> Result<(), FileLockError> {
    host::unlock(name, start, len)
}

/// Whether someone else's lock on those bytes conflicts with `mode`. It only asks: nothing is taken.
///
/// ```no_run
/// use agmsg_guest_sdk::file_lock::{self, LockMode};
///
/// // Does another connection hold SQLite's RESERVED byte (a pending write)?
/// const RESERVED_BYTE: u64 = 0x4000_0001;
/// let writer_waiting = file_lock::conflicts("messages.db", RESERVED_BYTE, 1, LockMode::Write)?;
/// # let _ = writer_waiting;
/// # Ok::<(), agmsg_guest_sdk::file_lock::FileLockError>(())
/// ```
pub fn conflicts(name: &str, start: u64, len: u64, mode: LockMode) -> Result<bool, FileLockError> {
    host::conflicts(name, start, len, mode)
}
