//! The `store` capability: a storage driver's store directory, opened once by the host and used only
//! through that handle.
//!
//! The store is driver-writable territory, so nothing below its root is ever resolved by path with
//! symlinks followed: it is an [`fsroot::Dir`] (the host's one directory capability), a per-team
//! partition (`teams/<team>`) is opened component by component through it without following a link,
//! the preopen the guest sees is the handle itself (`/proc/self/fd/N`, which names that exact
//! directory, not a path that could be swapped), and the store lock and byte-range locks open their
//! files relative to it. The root itself is the user's choice of path (`--store`,
//! `AGMSG_STORAGE_PATH`, ...), outside the driver's reach, and is opened as given.
//!
//! The guest, for its part, cannot create symlinks at all (`deny_symlinks`), so it cannot plant one
//! for the host, for agmsg's native `sqlite3`, or for itself.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::path::{Path, PathBuf};

use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::p2::bindings::sync::filesystem::types::{Descriptor, ErrorCode};

use crate::fsroot::{self, Why};

/// A store directory the host holds open.
#[derive(Clone, Debug)]
pub struct StoreDir {
    dir: fsroot::Dir,
}

/// The store's wording for a refusal below its root.
fn store_error(e: fsroot::Error) -> io::Error {
    match e.why {
        Why::Link | Why::NotDir => io::Error::other(format!(
            "{} is not a directory (a symlink or another file where the store expects a directory); \
             refusing to follow it",
            e.path.display()
        )),
        Why::BadPath => {
            io::Error::new(io::ErrorKind::InvalidInput, format!("{:?} is not a directory name", e.path.file_name().unwrap_or_default()))
        }
        Why::Io(inner) => io::Error::other(format!("{}: {inner}", e.path.display())),
        _ => e.into(),
    }
}

impl StoreDir {
    /// Open the store root (an existing directory; symlinks in the user's path are the user's).
    pub fn open(root: &Path) -> io::Result<StoreDir> {
        match fsroot::Dir::open_ambient(root) {
            Ok(dir) => Ok(StoreDir { dir }),
            Err(fsroot::Error { why: Why::Io(e), .. }) => Err(e),
            Err(e) => Err(e.into()),
        }
    }

    /// Open `root`, then each of `below` inside it without following a symlink, creating missing
    /// directories (mode 0700) when `create`. `Ok(None)`: a directory is missing and `create` is off.
    /// A symlink, or anything but a directory, where a directory belongs is an error.
    pub fn open_beneath(root: &Path, below: &[&str], create: bool) -> io::Result<Option<StoreDir>> {
        let root = match StoreDir::open(root) {
            Ok(dir) => dir.dir,
            Err(e) if e.kind() == io::ErrorKind::NotFound && !create => return Ok(None),
            Err(e) => return Err(e),
        };
        // Each name one component: `a/b` or `..` is not a partition's name.
        if let Some(name) = below.iter().find(|name| name.is_empty() || **name == "." || **name == ".." || name.contains('/')) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{name:?} is not a directory name")));
        }
        let rel: PathBuf = below.iter().collect();
        let opened = if create { root.create_dir_all(&rel, 0o700) } else { root.open_dir(&rel) };
        match opened {
            Ok(dir) => Ok(Some(StoreDir { dir })),
            Err(fsroot::Error { why: Why::Missing, .. }) if !create => Ok(None),
            Err(e) => Err(store_error(e)),
        }
    }

    /// Where the store is (for messages).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The path that names this very directory for the preopen: the handle's `/proc` entry, so the
    /// directory cannot be swapped between the host's checks and the preopen. Where `/proc` is not
    /// mounted (some sandboxes), the store's own path, if it still names the same directory (the
    /// window left is the one between this check and the preopen).
    pub fn preopen_path(&self) -> io::Result<PathBuf> {
        let proc_path = PathBuf::from(format!("/proc/self/fd/{}", self.dir.as_fd().as_raw_fd()));
        if std::fs::metadata(&proc_path).is_ok_and(|m| m.is_dir()) {
            return Ok(proc_path);
        }
        let (ours, named) = (rustix::fs::fstat(self.dir.as_fd())?, rustix::fs::stat(self.path())?);
        if (ours.st_dev, ours.st_ino) != (named.st_dev, named.st_ino) {
            return Err(io::Error::other(format!("{} changed while it was being opened; refusing it", self.path().display())));
        }
        Ok(self.path().to_owned())
    }

    /// The directory's device and inode (what a driver's view of the store knows its root by).
    pub fn identity(&self) -> io::Result<(u64, u64)> {
        let st = rustix::fs::fstat(self.dir.as_fd())?;
        Ok((st.st_dev as u64, st.st_ino as u64))
    }

    /// Each name at the top of the store with its inode, sorted: a file replaced under its name (a new
    /// inode) tells an instance made earlier, which may hold the old file open, from one made now.
    pub fn entries(&self) -> io::Result<Vec<(std::ffi::OsString, u64)>> {
        let mut all = self.dir.list_inodes().map_err(store_error)?;
        all.sort();
        Ok(all)
    }

    /// A new open file description of the directory itself (for `flock`: the lock must belong to a
    /// description of its own, released when this file is closed).
    pub fn reopen(&self) -> io::Result<File> {
        self.dir.reopen()
    }

    /// The host's own directory `sub` of this store (`.agmsg-host/<sub>`, created mode 0700 when
    /// `create`), which no driver sees ([`HIDDEN_FROM_DRIVERS`]). `Ok(None)`: missing, not created.
    pub fn host_dir(&self, sub: &str, create: bool) -> fsroot::Result<Option<fsroot::Dir>> {
        let rel = Path::new(HOST_DIR).join(sub);
        match if create { self.dir.create_dir_all(&rel, 0o700) } else { self.dir.open_dir(&rel) } {
            Ok(dir) => Ok(Some(dir)),
            Err(fsroot::Error { why: Why::Missing, .. }) if !create => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Open the plain file `name` of the store read-write, never through a symlink.
    pub fn open_file(&self, name: &str) -> fsroot::Result<File> {
        self.dir.open_read_write(name)
    }
}

/// The host's own directory in a store: what it keeps about a store that no driver may read or change
/// (the envelopes it sealed for a driver's remote-sync reservations).
pub const HOST_DIR: &str = ".agmsg-host";

/// The names at a store's root that belong to others than its driver, and that a storage driver's view
/// of the store leaves out: agmsg's remote-sync engine keeps each team's binding (the recipients it
/// seals to, its identity files' paths) in `remote-sync/` (`remote-sync.mjs`'s `configPath`, `remote.sh`,
/// `rename-team.sh`), and the host keeps [`HOST_DIR`].
pub const HIDDEN_FROM_DRIVERS: &[&str] = &["remote-sync", HOST_DIR];

/// The WASI filesystem version wasmtime-wasi 48 defines (guests built against any 0.2.x link to it).
const WASI_FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";

/// Replace WASI's `symlink-at` so that no driver can create a symlink: a relative one may point out of
/// the store (wasmtime refuses only absolute targets), and the host, agmsg's native `sqlite3` or a later
/// op would follow it. No driver needs one; the guest gets `not-permitted`.
pub fn deny_symlinks<T: 'static>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let result = linker.instance(WASI_FILESYSTEM_TYPES).and_then(|mut types| {
        types.func_wrap(
            "[method]descriptor.symlink-at",
            |_store, (_dir, _target, _link): (Resource<Descriptor>, String, String)| -> wasmtime::Result<(Result<(), ErrorCode>,)> {
                Ok((Err(ErrorCode::NotPermitted),))
            },
        )
    });
    linker.allow_shadowing(false);
    result
}
