//! `agmsg:host/file-lock`: byte-range locks on files in a storage driver's store, taken as Linux
//! open-file-description (OFD) locks on a descriptor the host opens.
//!
//! OFD locks conflict with the POSIX `fcntl` locks native SQLite takes, so a component's SQLite and a
//! native `sqlite3` on one `messages.db` exclude each other exactly as two native processes do. Unlike
//! POSIX locks they belong to the descriptor, not the process: nothing the guest opens or closes (its
//! own descriptors on the same file) can drop them. The descriptors live in the instance's state, so
//! dropping the instance (after a trap too) or the process releases every lock: none goes stale.

use std::collections::HashMap;
use std::fs::File;
use std::os::fd::AsRawFd;

use wasmtime::component::{HasSelf, Linker};

use super::store::StoreDir;
use super::wit::file_lock::{FileLockError, Host, LockMode, add_to_linker};

/// One instance's byte-range locks: its store, and the store files it has locked, by name.
#[derive(Default)]
pub struct FileLockCtx {
    dir: Option<StoreDir>,
    files: HashMap<String, File>,
}

/// Add `agmsg:host/file-lock` to a linker whose state projects a [`FileLockCtx`].
pub fn link<T: 'static>(linker: &mut Linker<T>, project: fn(&mut T) -> &mut FileLockCtx) -> wasmtime::Result<()> {
    add_to_linker::<T, HasSelf<FileLockCtx>>(linker, project)
}

/// A plain file name in the store: no directories, no `.`/`..`, nothing empty.
fn valid_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains('/') && !name.contains('\0')
}

impl FileLockCtx {
    /// `dir`: the driver's store (none: every lock fails as unavailable).
    pub fn new(dir: Option<StoreDir>) -> FileLockCtx {
        FileLockCtx { dir, files: HashMap::new() }
    }

    /// Release every byte-range lock the instance holds (an instance kept between ops holds none: its
    /// driver between transactions holds none either, and one that does is not to block other
    /// processes while it waits).
    pub fn release_all(&mut self) {
        for file in self.files.values() {
            if let Ok(mut unlock) = flock(libc::F_UNLCK, 0, 0) {
                // SAFETY: fcntl on a file this context owns, with a valid flock.
                unsafe { libc::fcntl(std::os::fd::AsRawFd::as_raw_fd(file), libc::F_OFD_SETLK, &mut unlock) };
            }
        }
    }

    fn locked_file(&mut self, name: &str) -> Result<&File, FileLockError> {
        if !valid_name(name) {
            return Err(FileLockError::InvalidPath);
        }
        let store = self.dir.as_ref().ok_or(FileLockError::Unavailable)?;
        if !self.files.contains_key(name) {
            // Relative to the store's handle, never through a symlink.
            let file = store.open_file(name).map_err(|e| {
                if matches!(e.why, crate::fsroot::Why::Link) { FileLockError::InvalidPath } else { FileLockError::Unavailable }
            })?;
            self.files.insert(name.to_owned(), file);
        }
        Ok(&self.files[name])
    }
}

fn flock(kind: i32, start: u64, len: u64) -> Result<libc::flock, FileLockError> {
    // SAFETY: `flock` is plain data; all-zero is a valid value, and every field that matters is set.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = kind as _;
    lock.l_whence = libc::SEEK_SET as _;
    lock.l_start = i64::try_from(start).map_err(|_| FileLockError::Unavailable)?;
    lock.l_len = i64::try_from(len).map_err(|_| FileLockError::Unavailable)?;
    Ok(lock)
}

fn lock_type(mode: LockMode) -> i32 {
    match mode {
        LockMode::Read => libc::F_RDLCK,
        LockMode::Write => libc::F_WRLCK,
    }
}

/// `fcntl(fd, command, lock)`; `Ok(false)` when another holder's lock is in the way.
fn fcntl(file: &File, command: i32, lock: &mut libc::flock) -> Result<bool, FileLockError> {
    // SAFETY: a valid open descriptor and a pointer to an initialized `flock`, as the OFD commands take.
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), command, lock as *mut libc::flock) };
    if rc == 0 {
        return Ok(true);
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::EAGAIN | libc::EACCES) => Ok(false),
        _ => Err(FileLockError::Unavailable),
    }
}

impl Host for FileLockCtx {
    fn try_lock(&mut self, path: String, start: u64, len: u64, mode: LockMode) -> Result<bool, FileLockError> {
        let mut lock = flock(lock_type(mode), start, len)?;
        fcntl(self.locked_file(&path)?, libc::F_OFD_SETLK, &mut lock)
    }

    fn unlock(&mut self, path: String, start: u64, len: u64) -> Result<(), FileLockError> {
        if !self.files.contains_key(&path) {
            return if valid_name(&path) { Ok(()) } else { Err(FileLockError::InvalidPath) };
        }
        let mut lock = flock(libc::F_UNLCK, start, len)?;
        fcntl(self.locked_file(&path)?, libc::F_OFD_SETLK, &mut lock).map(drop)
    }

    fn conflicts(&mut self, path: String, start: u64, len: u64, mode: LockMode) -> Result<bool, FileLockError> {
        let mut lock = flock(lock_type(mode), start, len)?;
        fcntl(self.locked_file(&path)?, libc::F_OFD_GETLK, &mut lock)?;
        // F_OFD_GETLK leaves F_UNLCK when nothing (held by another descriptor) would conflict.
        Ok(lock.l_type != libc::F_UNLCK as libc::c_short)
    }
}
