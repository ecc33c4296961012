//! A storage driver's view of its store: the store directory without the names at its root that are
//! not the driver's ([`super::store::HIDDEN_FROM_DRIVERS`]: agmsg's remote-sync engine's `remote-sync/`,
//! which holds the recipients it seals to, and the host's own `.agmsg-host/`). Inside the sandbox they
//! do not exist: no path that reaches them opens, lists, stats, renames, links or removes anything, and
//! none can be created.
//!
//! WASI has no preopen with holes, so the view is made where paths enter: every `wasi:filesystem`
//! method that takes a path is replaced by one that first walks the path as the host's filesystem
//! would, and answers `no-entry` (or `access` for a creation) when the walk passes through a hidden
//! name at the store's root. The walk starts only on a descriptor of the store's root itself (found by
//! device and inode, however it was opened); any other directory descriptor is a sandbox of its own,
//! out of which `..` never climbs (cap-std), so none reaches the root's names. The walk follows the
//! symlinks it meets as the call would (a driver cannot make one, `deny_symlinks`; the user may have),
//! and a listing of the root leaves the hidden names out.
//!
//! The view also gives what a driver creates or renames into place agmsg's modes, which a WASI guest
//! cannot set ([`UMASK_FILES`], [`keep_mode`]): a store agmsg-host writes stays the store agmsg makes.

use std::collections::HashSet;
use std::os::fd::AsFd;

use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::WasiView;
use wasmtime_wasi::filesystem::WasiFilesystemView;
use wasmtime_wasi::p2::FsResult;
use wasmtime_wasi::p2::bindings::sync::filesystem::types::{
    Descriptor, DescriptorFlags, DescriptorStat, DirectoryEntry, DirectoryEntryStream, ErrorCode, Host, HostDescriptor,
    HostDirectoryEntryStream, MetadataHashValue, NewTimestamp, OpenFlags, PathFlags,
};

use super::store::HIDDEN_FROM_DRIVERS;

/// The WASI filesystem version wasmtime-wasi 48 defines (guests built against any 0.2.x link to it).
const WASI_FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";

/// The most symlinks one walk follows (Linux's own bound), after which the call itself fails.
const MAX_LINKS: usize = 40;

/// One instance's view: which directory is the store's root, and which of its listings are open.
#[derive(Default, Debug)]
pub struct StoreViewCtx {
    /// The store root's device and inode, when a store is granted.
    root: Option<(u64, u64)>,
    /// The directory-entry streams reading the root (by resource rep; a rep is removed when a stream
    /// of another directory takes it over, so none is filtered by mistake).
    root_streams: HashSet<u32>,
}

impl StoreViewCtx {
    /// The view of the store `dir` (none: no store granted, nothing hidden).
    pub fn new(dir: Option<&super::store::StoreDir>) -> StoreViewCtx {
        StoreViewCtx { root: dir.and_then(|d| d.identity().ok()), root_streams: HashSet::new() }
    }
}

/// What the view says of a path.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Seen {
    Visible,
    Hidden,
}

/// Replace WASI's path-taking `descriptor` methods and the directory listing with the view's.
pub fn link<T: WasiView + 'static>(linker: &mut Linker<T>, project: fn(&mut T) -> &mut StoreViewCtx) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let result = link_view(linker, project);
    linker.allow_shadowing(false);
    result
}

type Ret<R> = wasmtime::Result<(Result<R, ErrorCode>,)>;

/// The call's answer: its value, or its error as WASI's error code (a trap stays a trap).
fn answer<T: WasiView, R>(data: &mut T, result: FsResult<R>) -> Ret<R> {
    match result {
        Ok(value) => Ok((Ok(value),)),
        Err(e) => Ok((Err(Host::convert_error_code(&mut data.filesystem(), e)?),)),
    }
}

/// One path-taking method, shadowed: each of its (descriptor, path) pairs walked first, and the error
/// given when one passes through a hidden name; else wasmtime-wasi's own method.
macro_rules! guarded {
    ($types:ident, $project:ident, $name:literal, ($($arg:ident: $ty:ty),*) -> $ret:ty,
     [$(($fd:ident, $path:ident, $follow:expr, $hidden:expr)),+], $method:ident) => {
        $types.func_wrap($name, move |mut store: StoreContextMut<'_, T>, ($($arg,)*): ($($ty,)*)| -> Ret<$ret> {
            let data = store.data_mut();
            $(
                if seen(data, $project, &$fd, &$path, $follow) == Seen::Hidden {
                    return Ok((Err($hidden),));
                }
            )+
            let result = HostDescriptor::$method(&mut data.filesystem(), $($arg),*);
            answer(data, result)
        })?;
    };
}

fn follows(flags: PathFlags) -> bool {
    flags.contains(PathFlags::SYMLINK_FOLLOW)
}

fn link_view<T: WasiView + 'static>(linker: &mut Linker<T>, project: fn(&mut T) -> &mut StoreViewCtx) -> wasmtime::Result<()> {
    use ErrorCode::{Access, NoEntry};
    let mut types = linker.instance(WASI_FILESYSTEM_TYPES)?;
    types.func_wrap(
        "[method]descriptor.open-at",
        move |mut store: StoreContextMut<'_, T>,
              (fd, path_flags, path, oflags, flags): (Resource<Descriptor>, PathFlags, String, OpenFlags, DescriptorFlags)|
              -> Ret<Resource<Descriptor>> {
            let data = store.data_mut();
            let create = oflags.contains(OpenFlags::CREATE);
            if seen(data, project, &fd, &path, follows(path_flags)) == Seen::Hidden {
                return Ok((Err(if create { Access } else { NoEntry }),));
            }
            // The directory a file is about to be created in, when the name is new (a file that exists
            // keeps its mode).
            let parent = if create { dir_fd(data, &fd).filter(|dir| is_missing(dir, &path)) } else { None };
            let result = HostDescriptor::open_at(&mut data.filesystem(), fd, path_flags, path.clone(), oflags, flags);
            if let (Ok(created), Some(parent)) = (&result, parent) {
                set_created_file_mode(data, created, &parent, &path);
            }
            answer(data, result)
        },
    )?;
    guarded!(types, project, "[method]descriptor.stat-at",
        (fd: Resource<Descriptor>, path_flags: PathFlags, path: String) -> DescriptorStat,
        [(fd, path, follows(path_flags), NoEntry)], stat_at);
    guarded!(types, project, "[method]descriptor.metadata-hash-at",
        (fd: Resource<Descriptor>, path_flags: PathFlags, path: String) -> MetadataHashValue,
        [(fd, path, follows(path_flags), NoEntry)], metadata_hash_at);
    guarded!(types, project, "[method]descriptor.set-times-at",
        (fd: Resource<Descriptor>, path_flags: PathFlags, path: String, atim: NewTimestamp, mtim: NewTimestamp) -> (),
        [(fd, path, follows(path_flags), NoEntry)], set_times_at);
    guarded!(types, project, "[method]descriptor.readlink-at",
        (fd: Resource<Descriptor>, path: String) -> String, [(fd, path, false, NoEntry)], readlink_at);
    types.func_wrap(
        "[method]descriptor.create-directory-at",
        move |mut store: StoreContextMut<'_, T>, (fd, path): (Resource<Descriptor>, String)| -> Ret<()> {
            let data = store.data_mut();
            if seen(data, project, &fd, &path, false) == Seen::Hidden {
                return Ok((Err(Access),));
            }
            let parent = dir_fd(data, &fd);
            let result = HostDescriptor::create_directory_at(&mut data.filesystem(), fd, path.clone());
            if let (Ok(()), Some(parent)) = (&result, parent) {
                set_created_dir_mode(&parent, &path);
            }
            answer(data, result)
        },
    )?;
    guarded!(types, project, "[method]descriptor.remove-directory-at",
        (fd: Resource<Descriptor>, path: String) -> (), [(fd, path, false, NoEntry)], remove_directory_at);
    guarded!(types, project, "[method]descriptor.unlink-file-at",
        (fd: Resource<Descriptor>, path: String) -> (), [(fd, path, false, NoEntry)], unlink_file_at);
    types.func_wrap(
        "[method]descriptor.rename-at",
        move |mut store: StoreContextMut<'_, T>,
              (fd, old, new_fd, new): (Resource<Descriptor>, String, Resource<Descriptor>, String)|
              -> Ret<()> {
            let data = store.data_mut();
            if seen(data, project, &fd, &old, false) == Seen::Hidden {
                return Ok((Err(NoEntry),));
            }
            if seen(data, project, &new_fd, &new, false) == Seen::Hidden {
                return Ok((Err(Access),));
            }
            keep_mode(data, &fd, &old, &new_fd, &new);
            let result = HostDescriptor::rename_at(&mut data.filesystem(), fd, old, new_fd, new);
            answer(data, result)
        },
    )?;
    guarded!(types, project, "[method]descriptor.link-at",
        (fd: Resource<Descriptor>, old_flags: PathFlags, old: String, new_fd: Resource<Descriptor>, new: String) -> (),
        [(fd, old, follows(old_flags), NoEntry), (new_fd, new, false, Access)], link_at);
    types.func_wrap(
        "[method]descriptor.read-directory",
        move |mut store: StoreContextMut<'_, T>, (fd,): (Resource<Descriptor>,)| -> Ret<Resource<DirectoryEntryStream>> {
            let data = store.data_mut();
            let of_root = root_dir(data, project, &fd).is_some();
            let result = HostDescriptor::read_directory(&mut data.filesystem(), fd);
            if let Ok(stream) = &result {
                let streams = &mut project(data).root_streams;
                if of_root {
                    streams.insert(stream.rep());
                } else {
                    streams.remove(&stream.rep());
                }
            }
            answer(data, result)
        },
    )?;
    types.func_wrap(
        "[method]directory-entry-stream.read-directory-entry",
        move |mut store: StoreContextMut<'_, T>, (stream,): (Resource<DirectoryEntryStream>,)| -> Ret<Option<DirectoryEntry>> {
            let data = store.data_mut();
            let of_root = project(data).root_streams.contains(&stream.rep());
            loop {
                let result = HostDirectoryEntryStream::read_directory_entry(&mut data.filesystem(), Resource::new_borrow(stream.rep()));
                match result {
                    Ok(Some(entry)) if of_root && HIDDEN_FROM_DRIVERS.contains(&entry.name.as_str()) => {
                        continue;
                    }
                    other => return answer(data, other),
                }
            }
        },
    )?;
    Ok(())
}

/// A directory descriptor's directory, borrowed as a file descriptor (`None`: not a directory).
fn dir_fd<T: WasiView>(data: &mut T, fd: &Resource<Descriptor>) -> Option<std::os::fd::OwnedFd> {
    let fs = data.filesystem();
    let Ok(wasmtime_wasi::filesystem::Descriptor::Dir(dir)) = fs.table.get(fd) else {
        return None;
    };
    dir.dir.as_fd().try_clone_to_owned().ok()
}

/// The mode a regular file `old` gets before a driver renames it to `new` (agmsg's stores are kept
/// as agmsg makes them; a WASI guest cannot set a mode, so the host does): the mode of the regular
/// file `new` replaces, so a file keeps the mode its owner gave it (agmsg's `read-cursors.tsv` is
/// 0600); a new name gets the driver's file without group and other bits, as agmsg's `mktemp` and
/// `mv` make every file it renames into place. Best effort: a rename the host cannot look at is left
/// to the call. Neither name is followed if it is a symlink (a driver cannot make one).
fn keep_mode<T: WasiView>(data: &mut T, fd: &Resource<Descriptor>, old: &str, new_fd: &Resource<Descriptor>, new: &str) {
    use rustix::fs::{AtFlags, FileType, Mode};
    let (Some(from), Some(to)) = (dir_fd(data, fd), dir_fd(data, new_fd)) else { return };
    let Ok(source) = rustix::fs::statat(&from, old, AtFlags::SYMLINK_NOFOLLOW) else { return };
    if FileType::from_raw_mode(source.st_mode) != FileType::RegularFile {
        return;
    }
    let mode = match rustix::fs::statat(&to, new, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(target) if FileType::from_raw_mode(target.st_mode) == FileType::RegularFile => target.st_mode & 0o7777,
        Ok(_) => return,
        Err(_) => source.st_mode & 0o7700,
    };
    if mode != source.st_mode & 0o7777 {
        let _ = rustix::fs::chmodat(&from, old, Mode::from_raw_mode(mode), AtFlags::empty());
    }
}

/// The files agmsg 1.2.1's own storage drivers create in place, with the user's umask (the jsonl log
/// by `>>`, its migration marker by `printf >`, sqlite's database by `sqlite3`): one that a driver
/// creates gets the same. Every other file or directory a driver creates is private, as agmsg makes
/// its other store files (`read-cursors.tsv` by `mktemp` + `mv`, its team files under `umask 077`).
pub const UMASK_FILES: &[&str] = &["events.jsonl", ".read-cursor-v1", "messages.db"];

/// Whether `path` names nothing below `dir` (a dangling symlink is something).
fn is_missing(dir: &std::os::fd::OwnedFd, path: &str) -> bool {
    matches!(rustix::fs::statat(dir, path, rustix::fs::AtFlags::SYMLINK_NOFOLLOW), Err(rustix::io::Errno::NOENT))
}

/// The mode a file a driver has just created as `path` below `parent` gets (a WASI guest cannot set a
/// mode, so the host does): sqlite's journals (`<db>-journal`, `-wal`, `-shm`) the database's, as
/// sqlite's own VFS gives them (it opens them with that mode, which WASI's open cannot carry); one of
/// agmsg's [`UMASK_FILES`] the umask's, as it was created; anything else the created mode without
/// group and other bits. `None`: leave it.
fn created_file_mode(parent: &std::os::fd::OwnedFd, path: &str, created: u32) -> Option<u32> {
    use rustix::fs::{AtFlags, FileType};
    for suffix in ["-journal", "-wal", "-shm"] {
        if let Some(db) = path.strip_suffix(suffix).filter(|db| !db.is_empty())
            && let Ok(st) = rustix::fs::statat(parent, db, AtFlags::SYMLINK_NOFOLLOW)
            && FileType::from_raw_mode(st.st_mode) == FileType::RegularFile
        {
            return Some(st.st_mode & 0o777);
        }
    }
    let name = path.rsplit('/').next().unwrap_or(path);
    if UMASK_FILES.contains(&name) { None } else { Some(created & 0o700) }
}

/// Give a file a driver has just created (the descriptor `created`, opened as `path` below `parent`)
/// its mode ([`created_file_mode`]). Best effort, like [`keep_mode`].
fn set_created_file_mode<T: WasiView>(data: &mut T, created: &Resource<Descriptor>, parent: &std::os::fd::OwnedFd, path: &str) {
    let fs = data.filesystem();
    let Ok(wasmtime_wasi::filesystem::Descriptor::File(file)) = fs.table.get(created) else {
        return;
    };
    let Ok(st) = rustix::fs::fstat(&*file.file) else { return };
    let current = st.st_mode & 0o7777;
    if let Some(mode) = created_file_mode(parent, path, current).filter(|mode| *mode != current) {
        let _ = rustix::fs::fchmod(&*file.file, rustix::fs::Mode::from_raw_mode(mode));
    }
}

/// Give a directory a driver has just created as `path` below `parent` no group or other bits (the
/// jsonl index `.events-index/`, a lock directory), not following a symlink. Best effort.
fn set_created_dir_mode(parent: &std::os::fd::OwnedFd, path: &str) {
    use rustix::fs::{AtFlags, FileType, Mode};
    let Ok(st) = rustix::fs::statat(parent, path, AtFlags::SYMLINK_NOFOLLOW) else { return };
    if FileType::from_raw_mode(st.st_mode) == FileType::Directory && st.st_mode & 0o077 != 0 {
        let _ = rustix::fs::chmodat(parent, path, Mode::from_raw_mode(st.st_mode & 0o7700), AtFlags::empty());
    }
}

/// The store's root, as a directory the walk can read, if `fd` is a descriptor of it.
fn root_dir<T: WasiView>(data: &mut T, project: fn(&mut T) -> &mut StoreViewCtx, fd: &Resource<Descriptor>) -> Option<cap_std::fs::Dir> {
    let root = project(data).root?;
    let fs = data.filesystem();
    let Ok(wasmtime_wasi::filesystem::Descriptor::Dir(dir)) = fs.table.get(fd) else {
        return None;
    };
    let st = rustix::fs::fstat(dir.dir.as_fd()).ok()?;
    if (st.st_dev as u64, st.st_ino as u64) != root {
        return None;
    }
    dir.dir.try_clone().ok().map(cap_std::fs::Dir::from_std_file)
}

/// Whether `path` from descriptor `fd` passes through a hidden name at the store's root. `follow`:
/// whether the call follows a symlink in the final component.
fn seen<T: WasiView>(data: &mut T, project: fn(&mut T) -> &mut StoreViewCtx, fd: &Resource<Descriptor>, path: &str, follow: bool) -> Seen {
    match root_dir(data, project, fd) {
        Some(root) => walk(&root, path, follow),
        None => Seen::Visible,
    }
}

/// Walk `path` from the root as the kernel would (`.`, `..`, symlinks expanded), saying whether it
/// enters a hidden name at the root. A walk that would fail anyway (climbing out, an absolute link,
/// too many links) is left to the call, which refuses it.
fn walk(root: &cap_std::fs::Dir, path: &str, follow: bool) -> Seen {
    let mut todo: std::collections::VecDeque<String> = path.split('/').map(str::to_owned).collect();
    let mut at: Vec<String> = Vec::new();
    let mut links = 0;
    while let Some(part) = todo.pop_front() {
        match part.as_str() {
            "" | "." => continue,
            ".." => {
                if at.pop().is_none() {
                    return Seen::Visible;
                }
                continue;
            }
            name if at.is_empty() && HIDDEN_FROM_DRIVERS.contains(&name) => return Seen::Hidden,
            _ => {}
        }
        let last = todo.iter().all(|p| p.is_empty() || p == ".");
        let here: std::path::PathBuf = at.iter().chain(std::iter::once(&part)).collect();
        let is_link = root.symlink_metadata(&here).is_ok_and(|m| m.file_type().is_symlink());
        if is_link && (!last || follow) {
            links += 1;
            let Ok(target) = root.read_link(&here) else {
                return Seen::Visible;
            };
            let target = target.to_string_lossy().into_owned();
            if links > MAX_LINKS || target.starts_with('/') {
                return Seen::Visible;
            }
            for piece in target.split('/').rev() {
                todo.push_front(piece.to_owned());
            }
            continue;
        }
        at.push(part);
    }
    Seen::Visible
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_walk_through_a_hidden_root_name_is_hidden_however_it_is_spelled() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("remote-sync")).unwrap();
        std::fs::create_dir_all(tmp.path().join("teams/t1")).unwrap();
        std::os::unix::fs::symlink("remote-sync", tmp.path().join("via-link")).unwrap();
        std::os::unix::fs::symlink("../../remote-sync/a.json", tmp.path().join("teams/t1/deep")).unwrap();
        let root = cap_std::fs::Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        for hidden in [
            "remote-sync",
            "remote-sync/t.json",
            "./remote-sync",
            "teams/../remote-sync/x",
            ".agmsg-host/sealed",
            "via-link/t.json",
            "teams/t1/deep",
        ] {
            assert!(walk(&root, hidden, true) == Seen::Hidden, "{hidden}");
        }
        for visible in ["messages.db", "teams/t1/messages.db", "teams/remote-sync", "remote-syncx", "via-link"] {
            assert!(walk(&root, visible, false) == Seen::Visible, "{visible}");
        }
        // Following the link in the final component reaches the hidden directory.
        assert!(walk(&root, "via-link", true) == Seen::Hidden);
    }
}
