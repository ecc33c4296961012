//! `agmsg:host/lock`: the store's exclusive lock.
//!
//! The lock is a `flock` on the store directory itself, taken through a descriptor the host opens (a
//! new description of the store it holds open, never a path lookup). The
//! driver cannot reach that descriptor, and it cannot delete or replace its own preopened root, so it
//! cannot break the mutual exclusion. The kernel drops the lock when the descriptor closes: when the
//! guard is dropped, when the instance traps (the store and its resource table are dropped), and when
//! the process dies, so a crash never leaves a stale lock.

use std::fs::{File, TryLockError};
use std::time::{Duration, Instant};

use wasmtime::component::Resource;

use crate::runtime::sandbox::{HostState, StoreDir};
use crate::runtime::sandbox::bindings::storage::agmsg::host::lock::{Host, HostGuard, LockError};

/// The longest wait a driver may ask for (a call's deadline usually ends it sooner).
const MAX_WAIT: Duration = Duration::from_secs(60);

/// A held store lock (the guest's `guard` resource).
pub struct LockGuard {
    _dir: File,
}

/// Take the exclusive lock on `dir`, polling until `wait` runs out or `deadline` (the call's) passes.
pub fn lock_dir(dir: &StoreDir, wait: Duration, deadline: Instant) -> Result<LockGuard, LockError> {
    let file = dir.reopen().map_err(|_| LockError::Unavailable)?;
    let deadline = deadline.min(Instant::now() + wait.min(MAX_WAIT));
    let mut pause = Duration::from_micros(200);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(LockGuard { _dir: file }),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(5));
            }
            Err(TryLockError::WouldBlock) => return Err(LockError::Timeout),
            Err(TryLockError::Error(_)) => return Err(LockError::Unavailable),
        }
    }
}

impl Host for HostState {
    fn acquire(&mut self, timeout_ms: u32) -> Result<Resource<LockGuard>, LockError> {
        if self.lock_held {
            return Err(LockError::AlreadyHeld);
        }
        let dir = self.store_dir.as_ref().ok_or(LockError::Unavailable)?;
        let guard = lock_dir(dir, Duration::from_millis(u64::from(timeout_ms)), self.deadline)?;
        let resource = self.table.push(guard).map_err(|_| LockError::Unavailable)?;
        self.lock_held = true;
        Ok(resource)
    }
}

impl HostGuard for HostState {
    fn drop(&mut self, guard: Resource<LockGuard>) -> wasmtime::Result<()> {
        self.table.delete(guard)?;
        self.lock_held = false;
        Ok(())
    }
}
