//! The VFS `agmsg-host-locks`: SQLite's `unix-none` VFS with real locks.
//!
//! WASI has no `fcntl` locks, so inside the component `unix-none` locks nothing, and a native `sqlite3`
//! on the same file could not see a component's transaction (measured: corruption within a second).
//! This shim passes every file call to `unix-none` but takes the main database file's locks through the
//! host (`agmsg:host/file-lock`), on the same bytes and with the same protocol as SQLite's own `unix`
//! VFS: a read lock on the PENDING byte while taking SHARED, a read lock over the SHARED range for
//! SHARED, a write lock on the RESERVED byte for RESERVED, write locks on PENDING and then the SHARED
//! range for EXCLUSIVE. The host takes them as open-file-description locks, which native processes'
//! POSIX locks conflict with, so components and native processes exclude each other exactly as two
//! native processes do, and a killed process's locks go with it.
//!
//! How the shim wraps a file: `szOsFile` is `unix-none`'s plus room for [`Shim`]; `unix-none` opens into
//! the start of the buffer, and the shim keeps its own state after it and swaps in [`SHIM_METHODS`],
//! which forward to the saved methods on the same pointer.
//!
//! Natively (the driver's unit tests) the same shim registers over the native `unix-none`; the host's
//! lock calls, which a native process cannot make, are replaced by `native_locks`: the OFD locks the
//! host takes, on a descriptor of the database file that each opened file keeps (as the host keeps one
//! per instance). So the sync tests' crashes also run through this VFS's locking (issue 39).
//! The fuzz target `sqlite_store` (built with `--cfg fuzzing`) opens its damaged stores the same way.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;

use agmsg_guest_sdk::file_lock::{FileLockError, LockMode};
use rusqlite::ffi;

#[cfg(not(any(test, fuzzing)))]
use host_locks::Owner;
#[cfg(any(test, fuzzing))]
use native_locks::Owner;

pub const VFS_NAME: &CStr = c"agmsg-host-locks";

/// SQLite's lock bytes (`os.h`): the same in every process that locks the file.
const PENDING_BYTE: u64 = 0x4000_0000;
const RESERVED_BYTE: u64 = PENDING_BYTE + 1;
const SHARED_FIRST: u64 = PENDING_BYTE + 2;
const SHARED_SIZE: u64 = 510;

/// What the shim keeps for a main database file, after `unix-none`'s own file struct.
#[repr(C)]
struct Shim {
    base: *const ffi::sqlite3_io_methods,
    level: c_int,
    /// Who holds this file's locks (the file's name in the store, which the host's lock calls take),
    /// owned: freed by `xClose`.
    owner: *mut Owner,
}

/// `unix-none`'s file struct size, rounded up so that [`Shim`] is aligned.
fn base_size() -> usize {
    BASE_SIZE.get().copied().expect("the VFS is registered before any file is opened")
}
static BASE_SIZE: OnceLock<usize> = OnceLock::new();

/// Register the VFS (once per instance); `unix-none` must exist, as it does in every wasi build.
pub fn register() -> Result<(), String> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            // SAFETY: `sqlite3_vfs_find` returns a pointer to a registered VFS that lives for the whole
            // process (or null); the copy we register is leaked, so it lives as long.
            unsafe {
                let base = ffi::sqlite3_vfs_find(c"unix-none".as_ptr());
                if base.is_null() {
                    return Err("SQLite has no unix-none VFS".into());
                }
                let aligned = ((*base).szOsFile as usize).next_multiple_of(align_of::<Shim>());
                BASE_SIZE.set(aligned).ok();
                let mut vfs = *base;
                vfs.zName = VFS_NAME.as_ptr();
                vfs.pNext = std::ptr::null_mut();
                vfs.pAppData = base.cast();
                vfs.szOsFile = (aligned + size_of::<Shim>()) as c_int;
                vfs.xOpen = Some(shim_open);
                match ffi::sqlite3_vfs_register(Box::leak(Box::new(vfs)), 0) {
                    ffi::SQLITE_OK => Ok(()),
                    rc => Err(format!("registering the SQLite VFS failed ({rc})")),
                }
            }
        })
        .clone()
}

/// # Safety
/// `file` must be a file opened by [`shim_open`] as a main database (its methods are [`SHIM_METHODS`]).
unsafe fn shim(file: *mut ffi::sqlite3_file) -> *mut Shim {
    unsafe { file.cast::<u8>().add(base_size()).cast::<Shim>() }
}

unsafe extern "C" fn shim_open(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    // SAFETY: SQLite calls xOpen with a buffer of our szOsFile bytes; `pAppData` is the base VFS.
    unsafe {
        let base = (*vfs).pAppData.cast::<ffi::sqlite3_vfs>();
        let rc = ((*base).xOpen.expect("unix-none has xOpen"))(base, name, file, flags, out_flags);
        if rc != ffi::SQLITE_OK || flags & ffi::SQLITE_OPEN_MAIN_DB == 0 || (*file).pMethods.is_null() || name.is_null() {
            return rc;
        }
        let owner = Owner::open(&CStr::from_ptr(name).to_string_lossy());
        shim(file).write(Shim { base: (*file).pMethods, level: ffi::SQLITE_LOCK_NONE, owner: Box::into_raw(Box::new(owner)) });
        (*file).pMethods = &SHIM_METHODS;
        rc
    }
}

/// Move from lock level `held` towards `wanted`; returns the level now held (`held` when a conflicting
/// lock is in the way, which SQLite reports as busy and retries).
fn lock(owner: &Owner, held: c_int, wanted: c_int) -> Result<c_int, FileLockError> {
    use LockMode::{Read, Write};
    match wanted {
        ffi::SQLITE_LOCK_SHARED => {
            // The PENDING byte keeps new readers out while a writer waits for EXCLUSIVE.
            if !owner.try_lock(PENDING_BYTE, 1, Read)? {
                return Ok(held);
            }
            let shared = owner.try_lock(SHARED_FIRST, SHARED_SIZE, Read);
            owner.unlock(PENDING_BYTE, 1)?;
            Ok(if shared? { ffi::SQLITE_LOCK_SHARED } else { held })
        }
        ffi::SQLITE_LOCK_RESERVED => Ok(if owner.try_lock(RESERVED_BYTE, 1, Write)? { ffi::SQLITE_LOCK_RESERVED } else { held }),
        ffi::SQLITE_LOCK_EXCLUSIVE => {
            let mut now = held;
            if now < ffi::SQLITE_LOCK_PENDING {
                if !owner.try_lock(PENDING_BYTE, 1, Write)? {
                    return Ok(held);
                }
                now = ffi::SQLITE_LOCK_PENDING;
            }
            // Held as PENDING until the last reader leaves; SQLite retries.
            Ok(if owner.try_lock(SHARED_FIRST, SHARED_SIZE, Write)? { ffi::SQLITE_LOCK_EXCLUSIVE } else { now })
        }
        _ => Ok(held),
    }
}

/// Move down to `wanted` (SHARED or NONE).
fn unlock(owner: &Owner, held: c_int, wanted: c_int) -> Result<(), FileLockError> {
    if held > ffi::SQLITE_LOCK_SHARED && wanted == ffi::SQLITE_LOCK_SHARED {
        // Converting our own write lock to a read lock cannot conflict with anyone.
        if !owner.try_lock(SHARED_FIRST, SHARED_SIZE, LockMode::Read)? {
            return Err(FileLockError::Unavailable);
        }
        owner.unlock(PENDING_BYTE, 2)?;
    }
    if wanted == ffi::SQLITE_LOCK_NONE {
        // Length 0: everything this instance holds on the file.
        owner.unlock(0, 0)?;
    }
    Ok(())
}

unsafe extern "C" fn shim_lock(file: *mut ffi::sqlite3_file, wanted: c_int) -> c_int {
    // SAFETY: SQLite passes a file it opened through us as a main database.
    let shim = unsafe { &mut *shim(file) };
    if shim.level >= wanted {
        return ffi::SQLITE_OK;
    }
    // SAFETY: `owner` was boxed in xOpen and lives until xClose.
    let owner = unsafe { &*shim.owner };
    match lock(owner, shim.level, wanted) {
        Ok(now) => {
            shim.level = now;
            if now >= wanted { ffi::SQLITE_OK } else { ffi::SQLITE_BUSY }
        }
        Err(_) => ffi::SQLITE_IOERR_LOCK,
    }
}

unsafe extern "C" fn shim_unlock(file: *mut ffi::sqlite3_file, wanted: c_int) -> c_int {
    // SAFETY: as in `shim_lock`.
    let shim = unsafe { &mut *shim(file) };
    if shim.level <= wanted {
        return ffi::SQLITE_OK;
    }
    let owner = unsafe { &*shim.owner };
    match unlock(owner, shim.level, wanted) {
        Ok(()) => {
            shim.level = wanted;
            ffi::SQLITE_OK
        }
        Err(_) => ffi::SQLITE_IOERR_UNLOCK,
    }
}

unsafe extern "C" fn shim_check_reserved(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    // SAFETY: as in `shim_lock`; `out` is a valid pointer from SQLite.
    let shim = unsafe { &mut *shim(file) };
    let reserved = if shim.level >= ffi::SQLITE_LOCK_RESERVED {
        Ok(true)
    } else {
        unsafe { &*shim.owner }.conflicts(RESERVED_BYTE, 1, LockMode::Write)
    };
    match reserved {
        Ok(reserved) => {
            unsafe { *out = c_int::from(reserved) };
            ffi::SQLITE_OK
        }
        Err(_) => ffi::SQLITE_IOERR_CHECKRESERVEDLOCK,
    }
}

unsafe extern "C" fn shim_close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: as in `shim_lock`; after this the shim state is dropped and the base closes the file.
    unsafe {
        let shim = &mut *shim(file);
        let owner = Box::from_raw(shim.owner);
        let _ = owner.unlock(0, 0);
        let base = shim.base;
        ((*base).xClose.expect("unix-none has xClose"))(file)
    }
}

/// The saved `unix-none` methods of a shimmed file.
///
/// # Safety
/// As [`shim`].
unsafe fn base(file: *mut ffi::sqlite3_file) -> &'static ffi::sqlite3_io_methods {
    unsafe { &*(*shim(file)).base }
}

unsafe extern "C" fn fwd_read(file: *mut ffi::sqlite3_file, buf: *mut c_void, amount: c_int, offset: ffi::sqlite3_int64) -> c_int {
    unsafe { (base(file).xRead.expect("xRead"))(file, buf, amount, offset) }
}
unsafe extern "C" fn fwd_write(file: *mut ffi::sqlite3_file, buf: *const c_void, amount: c_int, offset: ffi::sqlite3_int64) -> c_int {
    let rc = unsafe { (base(file).xWrite.expect("xWrite"))(file, buf, amount, offset) };
    // The native tests' kill inside a commit, the database file part written (nothing in a component).
    crate::sync::crash_point("vfs:main-write");
    rc
}
unsafe extern "C" fn fwd_truncate(file: *mut ffi::sqlite3_file, size: ffi::sqlite3_int64) -> c_int {
    unsafe { (base(file).xTruncate.expect("xTruncate"))(file, size) }
}
unsafe extern "C" fn fwd_sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    let rc = unsafe { (base(file).xSync.expect("xSync"))(file, flags) };
    crate::sync::crash_point("vfs:main-sync");
    rc
}
unsafe extern "C" fn fwd_file_size(file: *mut ffi::sqlite3_file, size: *mut ffi::sqlite3_int64) -> c_int {
    unsafe { (base(file).xFileSize.expect("xFileSize"))(file, size) }
}
unsafe extern "C" fn fwd_file_control(file: *mut ffi::sqlite3_file, op: c_int, arg: *mut c_void) -> c_int {
    unsafe { (base(file).xFileControl.expect("xFileControl"))(file, op, arg) }
}
unsafe extern "C" fn fwd_sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    unsafe { (base(file).xSectorSize.expect("xSectorSize"))(file) }
}
unsafe extern "C" fn fwd_device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    unsafe { (base(file).xDeviceCharacteristics.expect("xDeviceCharacteristics"))(file) }
}

/// Version 1: no shared memory, so SQLite uses WAL only with `locking_mode=EXCLUSIVE` (as before).
static SHIM_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 1,
    xClose: Some(shim_close),
    xRead: Some(fwd_read),
    xWrite: Some(fwd_write),
    xTruncate: Some(fwd_truncate),
    xSync: Some(fwd_sync),
    xFileSize: Some(fwd_file_size),
    xLock: Some(shim_lock),
    xUnlock: Some(shim_unlock),
    xCheckReservedLock: Some(shim_check_reserved),
    xFileControl: Some(fwd_file_control),
    xSectorSize: Some(fwd_sector_size),
    xDeviceCharacteristics: Some(fwd_device_characteristics),
    xShmMap: None,
    xShmLock: None,
    xShmBarrier: None,
    xShmUnmap: None,
    xFetch: None,
    xUnfetch: None,
};

/// The locks of a component: the host's (`agmsg:host/file-lock`), held by this instance, on the file
/// named by its last path component in the store.
#[cfg(not(any(test, fuzzing)))]
mod host_locks {
    use agmsg_guest_sdk::file_lock::{self, FileLockError, LockMode};

    pub struct Owner {
        name: String,
    }

    impl Owner {
        pub fn open(path: &str) -> Owner {
            Owner { name: path.rsplit('/').next().unwrap_or_default().to_owned() }
        }

        pub fn try_lock(&self, start: u64, len: u64, mode: LockMode) -> Result<bool, FileLockError> {
            file_lock::try_lock(&self.name, start, len, mode)
        }

        pub fn unlock(&self, start: u64, len: u64) -> Result<(), FileLockError> {
            file_lock::unlock(&self.name, start, len)
        }

        pub fn conflicts(&self, start: u64, len: u64, mode: LockMode) -> Result<bool, FileLockError> {
            file_lock::conflicts(&self.name, start, len, mode)
        }
    }
}

/// The locks in a native unit test: what the host does for an instance, done here on a descriptor of
/// the file's own (Linux open-file-description locks, which conflict with each other's descriptors and
/// with native SQLite's POSIX locks, and go with the process). Also the fuzz build's (`--cfg fuzzing`,
/// [`crate::fuzz_check`]), which runs the driver natively too.
#[cfg(any(test, fuzzing))]
mod native_locks {
    use std::os::fd::AsRawFd;

    use agmsg_guest_sdk::file_lock::{FileLockError, LockMode};

    pub struct Owner {
        file: std::fs::File,
    }

    impl Owner {
        pub fn open(path: &str) -> Owner {
            Owner { file: std::fs::OpenOptions::new().read(true).write(true).open(path).expect("the database file SQLite opened") }
        }

        /// `fcntl(cmd)` with a lock of `kind` on `[start, start + len)`; answers the lock as the call left it.
        fn fcntl(&self, cmd: libc::c_int, kind: libc::c_int, start: u64, len: u64) -> std::io::Result<libc::flock> {
            // SAFETY: a zeroed `flock` is a valid value (l_pid must be 0 for the OFD commands).
            let mut lock: libc::flock = unsafe { std::mem::zeroed() };
            lock.l_type = kind as libc::c_short;
            lock.l_whence = libc::SEEK_SET as libc::c_short;
            lock.l_start = start as libc::off_t;
            lock.l_len = len as libc::off_t;
            // SAFETY: an open descriptor and a pointer to a valid `flock`, as F_OFD_SETLK/GETLK take.
            if unsafe { libc::fcntl(self.file.as_raw_fd(), cmd, &mut lock) } == 0 { Ok(lock) } else { Err(std::io::Error::last_os_error()) }
        }

        fn kind(mode: LockMode) -> libc::c_int {
            match mode {
                LockMode::Read => libc::F_RDLCK,
                LockMode::Write => libc::F_WRLCK,
            }
        }

        pub fn try_lock(&self, start: u64, len: u64, mode: LockMode) -> Result<bool, FileLockError> {
            match self.fcntl(libc::F_OFD_SETLK, Self::kind(mode), start, len) {
                Ok(_) => Ok(true),
                Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EACCES)) => Ok(false),
                Err(_) => Err(FileLockError::Unavailable),
            }
        }

        pub fn unlock(&self, start: u64, len: u64) -> Result<(), FileLockError> {
            self.fcntl(libc::F_OFD_SETLK, libc::F_UNLCK, start, len).map(drop).map_err(|_| FileLockError::Unavailable)
        }

        pub fn conflicts(&self, start: u64, len: u64, mode: LockMode) -> Result<bool, FileLockError> {
            let lock = self.fcntl(libc::F_OFD_GETLK, Self::kind(mode), start, len).map_err(|_| FileLockError::Unavailable)?;
            Ok(lock.l_type != libc::F_UNLCK as libc::c_short)
        }
    }
}
