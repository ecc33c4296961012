//! The store's exclusive lock, held by the host where the driver cannot tamper with it.
//!
//! For storage drivers. Every storage op should hold the lock for its whole span, reads
//! included, so that two processes running drivers on one store never interleave. The host takes it as
//! a `flock` on the store directory through a descriptor the driver cannot reach, and releases it when
//! the [`StoreLock`] is dropped, when the driver traps, or when the host process dies: a crash never
//! leaves a stale lock. The lock is not reentrant.
//!
//! ```no_run
//! use agmsg_guest_sdk::lock::StoreLock;
//! use agmsg_guest_sdk::storage::DriverError;
//!
//! fn init() -> Result<(), DriverError> {
//!     let _lock = StoreLock::acquire_default()?; // held until the end of the op
//!     // ... create the store's files ...
//!     Ok(())
//! }
//! ```

use std::time::Duration;

use crate::bindings::storage::agmsg::host::lock::{self as host_lock, Guard, LockError};

/// How long [`StoreLock::acquire_default`] waits for another holder: writers wait rather than fail.
///
/// ```
/// use std::time::Duration;
/// use agmsg_guest_sdk::lock::DEFAULT_WAIT;
///
/// assert_eq!(DEFAULT_WAIT, Duration::from_secs(10));
/// ```
pub const DEFAULT_WAIT: Duration = Duration::from_secs(10);

/// Holding the store lock. Dropping it releases the lock; the host also releases it if the driver traps.
///
/// Bind it to a named variable (`_lock`, not `_`, which drops it at once) for as long as the op runs.
/// An importer or a long-lived resource may keep it in a field to hold the lock across calls.
///
/// ```no_run
/// use agmsg_guest_sdk::lock::StoreLock;
/// use agmsg_guest_sdk::storage::DriverError;
///
/// /// An import holds the lock from its first page to its commit.
/// struct Import {
///     _lock: StoreLock,
///     staged: Vec<String>,
/// }
///
/// fn start_import() -> Result<Import, DriverError> {
///     Ok(Import { _lock: StoreLock::acquire_default()?, staged: Vec::new() })
/// }
/// ```
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct StoreLock {
    _guard: Guard,
}

impl StoreLock {
    /// Take the lock, waiting at most `wait` (rounded down to milliseconds, at most `u32::MAX` of them).
    ///
    /// It fails with [`LockFailure::Timeout`] when another holder kept it for the whole wait, with
    /// [`LockFailure::AlreadyHeld`] when this instance holds it already, and with
    /// [`LockFailure::Unavailable`] when the host could not take it. `?` turns each into a
    /// `runtime_error` [`DriverError`](crate::storage::DriverError).
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use agmsg_guest_sdk::lock::{LockFailure, StoreLock};
    ///
    /// match StoreLock::acquire(Duration::from_millis(500)) {
    ///     Ok(_lock) => { /* ... a short, optional job under the lock ... */ }
    ///     Err(LockFailure::Timeout(_)) => { /* busy: skip it this time */ }
    ///     Err(other) => panic!("{other}"),
    /// }
    /// ```
    pub fn acquire(wait: Duration) -> Result<StoreLock, LockFailure> {
        let ms = u32::try_from(wait.as_millis()).unwrap_or(u32::MAX);
        host_lock::acquire(ms).map(|guard| StoreLock { _guard: guard }).map_err(|e| match e {
            LockError::Timeout => LockFailure::Timeout(wait),
            LockError::AlreadyHeld => LockFailure::AlreadyHeld,
            LockError::Unavailable => LockFailure::Unavailable,
        })
    }

    /// Take the lock with [`DEFAULT_WAIT`]: what an ordinary op wants.
    ///
    /// ```no_run
    /// use agmsg_guest_sdk::lock::StoreLock;
    /// use agmsg_guest_sdk::storage::DriverError;
    ///
    /// fn compact() -> Result<(), DriverError> {
    ///     let _lock = StoreLock::acquire_default()?;
    ///     // ... rewrite the store ...
    ///     Ok(())
    /// }
    /// ```
    pub fn acquire_default() -> Result<StoreLock, LockFailure> {
        Self::acquire(DEFAULT_WAIT)
    }
}

/// Why the lock could not be taken.
///
/// Its `Display` text is what the user sees when it travels on as a
/// [`DriverError`](crate::storage::DriverError):
///
/// ```
/// use std::time::Duration;
/// use agmsg_guest_sdk::lock::LockFailure;
/// use agmsg_guest_sdk::storage::{DriverError, Status};
///
/// let busy = LockFailure::Timeout(Duration::from_secs(10));
/// assert_eq!(busy.to_string(), "the store lock was busy for 10000 ms");
///
/// let error = DriverError::from(busy);
/// assert_eq!(error.status, Status::RuntimeError);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockFailure {
    /// Another holder kept the lock for the whole wait, which this carries.
    Timeout(Duration),
    /// This instance already holds the lock: it is not reentrant, so take it once per op.
    AlreadyHeld,
    /// The host could not take the lock at all (for example, the store directory is gone).
    Unavailable,
}

impl std::fmt::Display for LockFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockFailure::Timeout(wait) => write!(f, "the store lock was busy for {} ms", wait.as_millis()),
            LockFailure::AlreadyHeld => write!(f, "the store lock is already held by this driver"),
            LockFailure::Unavailable => write!(f, "the host could not take the store lock"),
        }
    }
}

impl std::error::Error for LockFailure {}
