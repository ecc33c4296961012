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

use wasmtime::component::{HasData, Linker, Resource, ResourceTable};

use super::store::StoreDir;
use super::wit::lock::{Guard, Host, HostGuard, LockError, add_to_linker};

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

/// The store lock of one instance: the store it locks, and whether the instance holds the lock.
#[derive(Default)]
pub struct StoreLockCtx {
    dir: Option<StoreDir>,
    held: bool,
}

impl StoreLockCtx {
    /// `dir`: the driver's store (none: every acquire fails as unavailable).
    pub fn new(dir: Option<StoreDir>) -> StoreLockCtx {
        StoreLockCtx { dir, held: false }
    }

    /// Whether the instance holds the store lock (a guard it has not dropped).
    pub fn held(&self) -> bool {
        self.held
    }
}

/// What the lock interface sees of an instance's state: its lock, the resource table the guards live
/// in, and the call's deadline (no wait outlives it).
pub struct LockView<'a> {
    pub ctx: &'a mut StoreLockCtx,
    pub table: &'a mut ResourceTable,
    pub deadline: Instant,
}

struct LockData;

impl HasData for LockData {
    type Data<'a> = LockView<'a>;
}

/// Add `agmsg:host/lock` to a linker whose state projects a [`LockView`].
pub fn link<T: 'static>(linker: &mut Linker<T>, project: fn(&mut T) -> LockView<'_>) -> wasmtime::Result<()> {
    add_to_linker::<T, LockData>(linker, project)
}

impl Host for LockView<'_> {
    fn acquire(&mut self, timeout_ms: u32) -> Result<Resource<Guard>, LockError> {
        if self.ctx.held {
            return Err(LockError::AlreadyHeld);
        }
        let dir = self.ctx.dir.as_ref().ok_or(LockError::Unavailable)?;
        let guard = lock_dir(dir, Duration::from_millis(u64::from(timeout_ms)), self.deadline)?;
        let resource = self.table.push(guard).map_err(|_| LockError::Unavailable)?;
        self.ctx.held = true;
        // The guest's handle names the table entry, which holds the host's guard.
        Ok(Resource::new_own(resource.rep()))
    }
}

impl HostGuard for LockView<'_> {
    fn drop(&mut self, guard: Resource<Guard>) -> wasmtime::Result<()> {
        self.table.delete(Resource::<LockGuard>::new_own(guard.rep()))?;
        self.ctx.held = false;
        Ok(())
    }
}
