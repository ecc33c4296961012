//! The store's exclusive lock, held by the host where the driver cannot tamper with it.

use std::time::Duration;

use crate::bindings::agmsg::host::lock::{self as host_lock, Guard, LockError};

/// How long [`StoreLock::acquire_default`] waits for another holder: writers wait rather than fail.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(10);

/// Holding the store lock. Dropping it releases the lock; the host also releases it if the driver traps.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct StoreLock {
    _guard: Guard,
}

impl StoreLock {
    /// Take the lock, waiting at most `wait`.
    pub fn acquire(wait: Duration) -> Result<StoreLock, LockFailure> {
        let ms = u32::try_from(wait.as_millis()).unwrap_or(u32::MAX);
        host_lock::acquire(ms).map(|guard| StoreLock { _guard: guard }).map_err(|e| match e {
            LockError::Timeout => LockFailure::Timeout(wait),
            LockError::AlreadyHeld => LockFailure::AlreadyHeld,
            LockError::Unavailable => LockFailure::Unavailable,
        })
    }

    /// Take the lock with [`DEFAULT_WAIT`].
    pub fn acquire_default() -> Result<StoreLock, LockFailure> {
        Self::acquire(DEFAULT_WAIT)
    }
}

/// Why the lock could not be taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockFailure {
    Timeout(Duration),
    AlreadyHeld,
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
