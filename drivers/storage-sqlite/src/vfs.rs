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

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;

use agmsg_guest_sdk::file_lock::{self, FileLockError, LockMode};
use rusqlite::ffi;

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
    /// The file's name in the store (what the host's lock calls take), owned: freed by `xClose`.
    name: *mut String,
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
        // The host locks files by their name in the store: the last path component.
        let path = CStr::from_ptr(name).to_string_lossy();
        let store_name = path.rsplit('/').next().unwrap_or_default().to_owned();
        shim(file).write(Shim { base: (*file).pMethods, level: ffi::SQLITE_LOCK_NONE, name: Box::into_raw(Box::new(store_name)) });
        (*file).pMethods = &SHIM_METHODS;
        rc
    }
}

/// Move from lock level `held` towards `wanted`; returns the level now held (`held` when a conflicting
/// lock is in the way, which SQLite reports as busy and retries).
fn lock(name: &str, held: c_int, wanted: c_int) -> Result<c_int, FileLockError> {
    use LockMode::{Read, Write};
    match wanted {
        ffi::SQLITE_LOCK_SHARED => {
            // The PENDING byte keeps new readers out while a writer waits for EXCLUSIVE.
            if !file_lock::try_lock(name, PENDING_BYTE, 1, Read)? {
                return Ok(held);
            }
            let shared = file_lock::try_lock(name, SHARED_FIRST, SHARED_SIZE, Read);
            file_lock::unlock(name, PENDING_BYTE, 1)?;
            Ok(if shared? { ffi::SQLITE_LOCK_SHARED } else { held })
        }
        ffi::SQLITE_LOCK_RESERVED => Ok(if file_lock::try_lock(name, RESERVED_BYTE, 1, Write)? { ffi::SQLITE_LOCK_RESERVED } else { held }),
        ffi::SQLITE_LOCK_EXCLUSIVE => {
            let mut now = held;
            if now < ffi::SQLITE_LOCK_PENDING {
                if !file_lock::try_lock(name, PENDING_BYTE, 1, Write)? {
                    return Ok(held);
                }
                now = ffi::SQLITE_LOCK_PENDING;
            }
            // Held as PENDING until the last reader leaves; SQLite retries.
            Ok(if file_lock::try_lock(name, SHARED_FIRST, SHARED_SIZE, Write)? { ffi::SQLITE_LOCK_EXCLUSIVE } else { now })
        }
        _ => Ok(held),
    }
}

/// Move down to `wanted` (SHARED or NONE).
fn unlock(name: &str, held: c_int, wanted: c_int) -> Result<(), FileLockError> {
    if held > ffi::SQLITE_LOCK_SHARED && wanted == ffi::SQLITE_LOCK_SHARED {
        // Converting our own write lock to a read lock cannot conflict with anyone.
        if !file_lock::try_lock(name, SHARED_FIRST, SHARED_SIZE, LockMode::Read)? {
            return Err(FileLockError::Unavailable);
        }
        file_lock::unlock(name, PENDING_BYTE, 2)?;
    }
    if wanted == ffi::SQLITE_LOCK_NONE {
        // Length 0: everything this instance holds on the file.
        file_lock::unlock(name, 0, 0)?;
    }
    Ok(())
}

unsafe extern "C" fn shim_lock(file: *mut ffi::sqlite3_file, wanted: c_int) -> c_int {
    // SAFETY: SQLite passes a file it opened through us as a main database.
    let shim = unsafe { &mut *shim(file) };
    if shim.level >= wanted {
        return ffi::SQLITE_OK;
    }
    // SAFETY: `name` was boxed in xOpen and lives until xClose.
    let name = unsafe { &*shim.name };
    match lock(name, shim.level, wanted) {
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
    let name = unsafe { &*shim.name };
    match unlock(name, shim.level, wanted) {
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
        file_lock::conflicts(unsafe { &*shim.name }, RESERVED_BYTE, 1, LockMode::Write)
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
        let name = Box::from_raw(shim.name);
        let _ = file_lock::unlock(&name, 0, 0);
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
    unsafe { (base(file).xWrite.expect("xWrite"))(file, buf, amount, offset) }
}
unsafe extern "C" fn fwd_truncate(file: *mut ffi::sqlite3_file, size: ffi::sqlite3_int64) -> c_int {
    unsafe { (base(file).xTruncate.expect("xTruncate"))(file, size) }
}
unsafe extern "C" fn fwd_sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    unsafe { (base(file).xSync.expect("xSync"))(file, flags) }
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
