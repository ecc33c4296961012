//! The host's one directory capability: a root directory held open (`cap_std::fs::Dir`) and the few
//! operations the host performs below it, none of which follows a symbolic link.
//!
//! The root itself is opened by a path the user chose (a store, a project, a plugin directory), so the
//! links in that path are the user's. Below it, every path is relative, made of plain components (no
//! `..`, nothing absolute), and walked one component at a time with `open_dir_nofollow`; the final
//! component is opened with `FollowSymlinks::No` and, for a read, `O_NONBLOCK` and a check that it is a
//! regular file, so a FIFO answers at once instead of blocking the host. cap-std adds its own guarantee
//! under ours: a `Dir` resolves nothing outside itself. A refusal names the path and the reason
//! ([`Error`]), so each caller keeps its own wording.
//!
//! An atomic write is a temporary file in the directory, relative to the held handle: anonymous
//! (`O_TMPFILE`) until it is complete, so a failure, a Ctrl-C or a kill leaves nothing behind (where the
//! filesystem has none, a named `.<name>.tmp.<pid>`, removed on failure); written, flushed and
//! `fsync`ed, then linked under that name and renamed over the target, and the directory `fsync`ed. A
//! symlink at the target is replaced, never written through. (Not `cap-tempfile`: its procfs check
//! before each link made a one-file op such as `delivery set` measurably slower, and its names are bare
//! UUIDs that nothing recognises as temporary.)
//!
//! WASI's preopen (`runtime/sandbox.rs`) is the same mechanism: wasmtime-wasi resolves every guest path
//! through its own copy of cap-primitives' sandboxed lookup, starting from the `Dir` of the preopened
//! directory.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt, OpenOptionsMaybeDirExt};
use cap_std::fs::{DirBuilder, DirBuilderExt, Metadata, OpenOptions, OpenOptionsExt};
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

/// Why an operation below a root was refused or failed.
#[derive(Debug)]
pub enum Why {
    /// Nothing is there.
    Missing,
    /// A symbolic link (dangling or not) where a directory or a file was to be opened.
    Link,
    /// Something other than a directory where a directory belongs.
    NotDir,
    /// Something other than a regular file (a FIFO, device, socket or directory) where a file belongs.
    NotRegular,
    /// The relative path is absolute, climbs (`..`) or is empty.
    BadPath,
    /// Any other failure of the operation.
    Io(io::Error),
}

/// A refused or failed operation: the full path (for messages) and why.
#[derive(Debug)]
pub struct Error {
    pub path: PathBuf,
    pub why: Why,
}

pub type Result<T> = std::result::Result<T, Error>;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        match &self.why {
            Why::Missing => write!(f, "{path} does not exist"),
            Why::Link => write!(f, "{path} is a symbolic link; refusing to follow it"),
            Why::NotDir => write!(f, "{path} is not a directory; refusing it"),
            Why::NotRegular => write!(f, "{path} is not a regular file; refusing to open it"),
            Why::BadPath => write!(f, "{path} is not a path below its directory (absolute, `..` or empty); refusing it"),
            Why::Io(e) => write!(f, "{path}: {e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        let kind = match &e.why {
            Why::Missing => io::ErrorKind::NotFound,
            Why::BadPath => io::ErrorKind::InvalidInput,
            Why::Io(inner) => inner.kind(),
            _ => io::ErrorKind::Other,
        };
        io::Error::new(kind, e.to_string())
    }
}

impl Error {
    fn new(path: PathBuf, why: Why) -> Error {
        Error { path, why }
    }
}

/// A directory held open, the root of every path given to its methods.
#[derive(Clone, Debug)]
pub struct Dir {
    dir: Arc<cap_std::fs::Dir>,
    /// Where it is, for messages only: never reopened by this path.
    path: PathBuf,
}

impl AsFd for Dir {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.dir.as_fd()
    }
}

/// `rel`'s plain components (`./a//b` is `a`, `b`); an absolute path or one with `..` is refused.
fn components(rel: &Path) -> Option<Vec<&OsStr>> {
    let mut parts = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(p) => parts.push(p),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts)
}

impl Dir {
    fn wrap(dir: cap_std::fs::Dir, path: PathBuf) -> Dir {
        Dir { dir: Arc::new(dir), path }
    }

    /// Open the directory at `path` as a root, following the links of the user's path.
    pub fn open_ambient(path: &Path) -> Result<Dir> {
        match cap_std::fs::Dir::open_ambient_dir(path, cap_std::ambient_authority()) {
            Ok(dir) => Ok(Dir::wrap(dir, path.to_owned())),
            // The user's path: its error as the system gave it.
            Err(e) => Err(Error::new(path.to_owned(), Why::Io(e))),
        }
    }

    /// Open the directory at `path` as a root; its last component may not be a symlink (the links in
    /// the path above it are the user's).
    pub fn open_ambient_nofollow(path: &Path) -> Result<Dir> {
        let (parent, name) = match (path.parent(), path.file_name()) {
            (Some(parent), Some(name)) => (if parent.as_os_str().is_empty() { Path::new(".") } else { parent }, name),
            _ => return Dir::open_ambient(path),
        };
        let parent = Dir::open_ambient(parent).map_err(|e| Error::new(path.to_owned(), e.why))?;
        let dir = parent.child_dir(name)?;
        Ok(Dir { dir: dir.dir, path: path.to_owned() })
    }

    /// Where it is (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The full path of `rel` below this directory (for messages).
    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.path.join(rel)
    }

    fn parts<'a>(&self, rel: &'a Path) -> Result<Vec<&'a OsStr>> {
        components(rel).ok_or_else(|| Error::new(self.path.join(rel), Why::BadPath))
    }

    /// `rel` split into its directories and its final name; an empty path is refused.
    fn split<'a>(&self, rel: &'a Path) -> Result<(Vec<&'a OsStr>, &'a OsStr)> {
        let mut parts = self.parts(rel)?;
        let name = parts.pop().ok_or_else(|| Error::new(self.path.join(rel), Why::BadPath))?;
        Ok((parts, name))
    }

    /// What is at `name` (one component), for an error opening it: a link, not a directory, missing.
    fn classify(&self, name: &OsStr, e: io::Error, want_dir: bool) -> Error {
        let path = self.path.join(name);
        let why = match self.dir.symlink_metadata(name) {
            Ok(m) if m.file_type().is_symlink() => Why::Link,
            Ok(m) if want_dir && !m.is_dir() => Why::NotDir,
            Ok(m) if !want_dir && !m.is_file() => Why::NotRegular,
            Err(stat) if stat.kind() == io::ErrorKind::NotFound => Why::Missing,
            _ => Why::Io(e),
        };
        Error::new(path, why)
    }

    /// The directory `name` (one plain component), never through a symlink.
    fn child_dir(&self, name: &OsStr) -> Result<Dir> {
        match self.dir.open_dir_nofollow(name) {
            Ok(dir) => Ok(Dir::wrap(dir, self.path.join(name))),
            Err(e) => Err(self.classify(name, e, true)),
        }
    }

    /// The directory `rel` below this one (empty: this one), each component opened without following
    /// a symlink.
    pub fn open_dir(&self, rel: impl AsRef<Path>) -> Result<Dir> {
        let mut dir = self.clone();
        for part in self.parts(rel.as_ref())? {
            dir = dir.child_dir(part)?;
        }
        Ok(dir)
    }

    /// The directory `rel`, the missing components created (with `mode`, less the umask) as
    /// `mkdir -p` does; one made meanwhile by someone else is opened, never followed if it is a link.
    pub fn create_dir_all(&self, rel: impl AsRef<Path>, mode: u32) -> Result<Dir> {
        let mut dir = self.clone();
        for part in self.parts(rel.as_ref())? {
            dir = match dir.child_dir(part) {
                Err(Error { why: Why::Missing, .. }) => {
                    match dir.dir.create_dir_with(part, DirBuilder::new().mode(mode)) {
                        Ok(()) => {}
                        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                        Err(e) => return Err(Error::new(dir.path.join(part), Why::Io(e))),
                    }
                    dir.child_dir(part)?
                }
                other => other?,
            };
        }
        Ok(dir)
    }

    /// The directory holding `rel`'s final component, and that component.
    fn parent_of<'a>(&self, rel: &'a Path) -> Result<(Dir, &'a OsStr)> {
        let (dirs, name) = self.split(rel)?;
        let mut dir = self.clone();
        for part in dirs {
            dir = dir.child_dir(part)?;
        }
        Ok((dir, name))
    }

    /// Open the regular file `rel` for reading: never through a symlink, and without blocking (a FIFO
    /// or anything else that is not a regular file is refused, not waited on).
    pub fn open_regular(&self, rel: impl AsRef<Path>) -> Result<File> {
        let (dir, name) = self.parent_of(rel.as_ref())?;
        let mut options = OpenOptions::new();
        options.read(true).follow(FollowSymlinks::No).custom_flags(libc::O_NONBLOCK);
        let file = dir.dir.open_with(name, &options).map_err(|e| dir.classify(name, e, false))?.into_std();
        let regular = file.metadata().map_err(|e| Error::new(dir.path.join(name), Why::Io(e)))?.is_file();
        if !regular {
            return Err(Error::new(dir.path.join(name), Why::NotRegular));
        }
        Ok(file)
    }

    /// Read the regular file `rel` whole, refusing one larger than `max_bytes`.
    pub fn read(&self, rel: impl AsRef<Path>, max_bytes: u64) -> Result<Vec<u8>> {
        use std::io::Read;
        let path = self.path.join(rel.as_ref());
        let file = self.open_regular(rel)?;
        let mut bytes = Vec::new();
        file.take(max_bytes + 1).read_to_end(&mut bytes).map_err(|e| Error::new(path.clone(), Why::Io(e)))?;
        if bytes.len() as u64 > max_bytes {
            return Err(Error::new(path, Why::Io(io::Error::new(io::ErrorKind::FileTooLarge, format!("larger than {max_bytes} bytes")))));
        }
        Ok(bytes)
    }

    /// Open the existing file `rel` read-write, never through a symlink (for byte-range locks).
    pub fn open_read_write(&self, rel: impl AsRef<Path>) -> Result<File> {
        let (dir, name) = self.parent_of(rel.as_ref())?;
        let mut options = OpenOptions::new();
        options.read(true).write(true).follow(FollowSymlinks::No);
        dir.dir.open_with(name, &options).map(|f| f.into_std()).map_err(|e| dir.classify(name, e, false))
    }

    /// Open the regular file `rel` for appending, created (with `mode`, less the umask) when missing;
    /// never through a symlink.
    pub fn open_append(&self, rel: impl AsRef<Path>, mode: u32) -> Result<File> {
        let (dir, name) = self.parent_of(rel.as_ref())?;
        let mut options = OpenOptions::new();
        options.append(true).create(true).follow(FollowSymlinks::No).mode(mode).custom_flags(libc::O_NONBLOCK);
        let file = dir.dir.open_with(name, &options).map_err(|e| dir.classify(name, e, false))?.into_std();
        let regular = file.metadata().map_err(|e| Error::new(dir.path.join(name), Why::Io(e)))?.is_file();
        if !regular {
            return Err(Error::new(dir.path.join(name), Why::NotRegular));
        }
        Ok(file)
    }

    /// A new open file description of this directory itself, readable (for `flock`, and `fsync`: the
    /// held one is an `O_PATH` handle, which allows neither).
    pub fn reopen(&self) -> io::Result<File> {
        let mut options = OpenOptions::new();
        options.read(true).maybe_dir(true).follow(FollowSymlinks::No).custom_flags(libc::O_DIRECTORY);
        self.dir.open_with(".", &options).map(|f| f.into_std())
    }

    /// What is at `rel`, the final component not followed; `None` when nothing is.
    pub fn symlink_metadata(&self, rel: impl AsRef<Path>) -> Result<Option<Metadata>> {
        let (dir, name) = self.parent_of(rel.as_ref())?;
        match dir.dir.symlink_metadata(name) {
            Ok(m) => Ok(Some(m)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::new(dir.path.join(name), Why::Io(e))),
        }
    }

    /// The permission bits of the regular file `rel`; `None` when it is missing or not a regular file.
    pub fn file_mode(&self, rel: impl AsRef<Path>) -> Option<u32> {
        use cap_std::fs::MetadataExt as _;
        self.symlink_metadata(rel).ok().flatten().filter(Metadata::is_file).map(|m| m.mode() & 0o7777)
    }

    /// The names in this directory (`.` and `..` left out), unsorted.
    pub fn list(&self) -> Result<Vec<OsString>> {
        let io_error = |e| Error::new(self.path.clone(), Why::Io(e));
        let mut names = Vec::new();
        for entry in self.dir.entries().map_err(io_error)? {
            names.push(entry.map_err(io_error)?.file_name());
        }
        Ok(names)
    }

    /// The names in this directory (`.` and `..` left out), unsorted, each with its inode number as the
    /// directory entry gives it (no name is looked up: a file replaced under its name has another).
    pub fn list_inodes(&self) -> Result<Vec<(OsString, u64)>> {
        use std::os::unix::fs::DirEntryExt as _;
        let io_error = |e| Error::new(self.path.clone(), Why::Io(e));
        let mut names = Vec::new();
        for entry in self.dir.entries().map_err(io_error)? {
            let entry = entry.map_err(io_error)?;
            names.push((entry.file_name(), entry.ino()));
        }
        Ok(names)
    }

    /// Remove the file (or link) `rel`; `false` when it was not there.
    pub fn remove_file(&self, rel: impl AsRef<Path>) -> Result<bool> {
        let (dir, name) = self.parent_of(rel.as_ref())?;
        match dir.dir.remove_file(name) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::new(dir.path.join(name), Why::Io(e))),
        }
    }

    /// Remove the empty directory `rel` (a link there is not removed: it is no directory); `false` when
    /// it was not there.
    pub fn remove_dir(&self, rel: impl AsRef<Path>) -> Result<bool> {
        let (dir, name) = self.parent_of(rel.as_ref())?;
        match dir.dir.remove_dir(name) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::new(dir.path.join(name), Why::Io(e))),
        }
    }

    /// Write `name` (one component of this directory) so that it appears whole or not at all, with what
    /// `fill` writes: `fill`'s own error is returned as it is, a failure of the file goes through
    /// `io_error`. A new file gets mode 0666 less the umask (`fill` may `fchmod` it).
    pub fn write_atomically<E>(
        &self,
        name: impl AsRef<Path>,
        io_error: impl Fn(io::Error) -> E,
        fill: impl FnOnce(&mut BufWriter<File>) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let name = name.as_ref();
        let target = match self.split(name) {
            Ok((dirs, target)) if dirs.is_empty() => target,
            Ok(_) | Err(_) => {
                return Err(io_error(Error::new(self.path.join(name), Why::BadPath).into()));
            }
        };
        let temp_name = format!(".{}.tmp.{}", target.to_string_lossy(), std::process::id());
        let anonymous = rustix::fs::openat(&*self.dir, ".", OFlags::TMPFILE | OFlags::WRONLY | OFlags::CLOEXEC, Mode::from_raw_mode(0o666));
        let (file, named) = match anonymous {
            Ok(fd) => (File::from(fd), false),
            // No O_TMPFILE on this filesystem (or kernel): a named temporary file, removed on failure.
            Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL) => {
                let mut options = OpenOptions::new();
                options.write(true).create_new(true).follow(FollowSymlinks::No).mode(0o666);
                (self.dir.open_with(&temp_name, &options).map_err(&io_error)?.into_std(), true)
            }
            Err(e) => return Err(io_error(e.into())),
        };
        let mut writer = BufWriter::new(file);
        let mut has_temp_name = named;
        let written = fill(&mut writer);
        let published = written.and_then(|()| {
            writer.flush().and_then(|()| writer.get_ref().sync_all()).map_err(&io_error)?;
            if !named {
                // Give the finished file a name: its /proc entry, linked into the directory.
                let proc_path = format!("/proc/self/fd/{}", writer.get_ref().as_raw_fd());
                rustix::fs::linkat(rustix::fs::CWD, proc_path.as_str(), &*self.dir, temp_name.as_str(), AtFlags::SYMLINK_FOLLOW)
                    .map_err(|e| io_error(e.into()))?;
                has_temp_name = true;
            }
            self.dir.rename(&temp_name, &self.dir, target).map_err(&io_error)?;
            has_temp_name = false;
            self.reopen().and_then(|d| d.sync_all()).map_err(&io_error)
        });
        if has_temp_name {
            let _ = self.dir.remove_file(&temp_name);
        }
        published
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{PermissionsExt, symlink};
    use std::time::{Duration, Instant};

    fn setup() -> (tempfile::TempDir, Dir) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/f"), "inside").unwrap();
        std::fs::write(tmp.path().join("secret"), "outside").unwrap();
        std::fs::create_dir(tmp.path().join("elsewhere")).unwrap();
        std::fs::write(tmp.path().join("elsewhere/f"), "outside").unwrap();
        let dir = Dir::open_ambient(&root).unwrap();
        (tmp, dir)
    }

    fn why<T: fmt::Debug>(r: Result<T>) -> (Why, String) {
        let e = r.unwrap_err();
        let text = e.to_string();
        (e.why, text)
    }

    #[test]
    fn reads_creates_lists_and_removes_below_the_root() {
        let (tmp, dir) = setup();
        assert_eq!(dir.read("a/b/f", 100).unwrap(), b"inside");
        assert_eq!(dir.read("./a//b/f", 100).unwrap(), b"inside");
        assert!(why(dir.read("a/b/f", 3)).1.ends_with("larger than 3 bytes"));
        let made = dir.create_dir_all("a/c/d", 0o700).unwrap();
        assert_eq!(made.path(), tmp.path().join("root/a/c/d"));
        assert_eq!(std::fs::metadata(tmp.path().join("root/a/c/d")).unwrap().permissions().mode() & 0o777, 0o700);
        dir.open_dir("a/c").unwrap().write_atomically("new", |e| e, |w| w.write_all(b"v1")).unwrap();
        assert_eq!(std::fs::read(tmp.path().join("root/a/c/new")).unwrap(), b"v1");
        std::fs::set_permissions(tmp.path().join("root/a/c/new"), std::fs::Permissions::from_mode(0o640)).unwrap();
        assert_eq!(dir.file_mode("a/c/new"), Some(0o640));
        let mut names = dir.open_dir("a/c").unwrap().list().unwrap();
        names.sort();
        assert_eq!(names, ["d", "new"]);
        assert!(dir.remove_file("a/c/new").unwrap());
        assert!(!dir.remove_file("a/c/new").unwrap());
        assert!(dir.remove_dir("a/c/d").unwrap());
        assert!(!dir.remove_dir("a/c/d").unwrap());
        assert!(dir.remove_dir("a").is_err(), "not empty");
        assert!(matches!(why(dir.read("a/c/new", 10)).0, Why::Missing));
        // The held handle is `O_PATH`; `reopen` is a real description, for `flock` and `fsync`.
        let reopened = dir.reopen().unwrap();
        rustix::fs::flock(&reopened, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
        reopened.sync_all().unwrap();
    }

    #[test]
    fn a_symlink_at_the_roots_child_is_refused() {
        let (tmp, dir) = setup();
        symlink(tmp.path().join("elsewhere"), tmp.path().join("root/out")).unwrap();
        let (w, text) = why(dir.open_dir("out"));
        assert!(matches!(w, Why::Link), "{text}");
        assert!(text.contains("root/out is a symbolic link"), "{text}");
        assert!(matches!(why(dir.read("out/f", 100)).0, Why::Link));
        assert!(matches!(why(dir.create_dir_all("out/x", 0o700)).0, Why::Link));
        assert!(!tmp.path().join("elsewhere/x").exists());
    }

    #[test]
    fn a_symlink_at_a_middle_component_is_refused_even_inside_the_root() {
        let (tmp, dir) = setup();
        // A link that stays inside the root: cap-std alone would follow it; the walk does not.
        symlink("b", tmp.path().join("root/a/inner")).unwrap();
        symlink(tmp.path().join("elsewhere"), tmp.path().join("root/a/outer")).unwrap();
        for rel in ["a/inner/f", "a/outer/f"] {
            let (w, text) = why(dir.read(rel, 100));
            assert!(matches!(w, Why::Link), "{rel}: {text}");
        }
        assert!(matches!(why(dir.open_dir("a/outer")).0, Why::Link));
        assert!(matches!(why(dir.create_dir_all("a/outer/new", 0o700)).0, Why::Link));
        assert!(matches!(why(dir.remove_file("a/outer/f")).0, Why::Link));
        assert!(tmp.path().join("elsewhere/f").exists());
    }

    #[test]
    fn a_symlink_at_the_final_component_is_refused_and_replaced_not_written_through() {
        let (tmp, dir) = setup();
        symlink(tmp.path().join("secret"), tmp.path().join("root/a/b/link")).unwrap();
        let (w, text) = why(dir.read("a/b/link", 100));
        assert!(matches!(w, Why::Link), "{text}");
        assert!(matches!(why(dir.open_read_write("a/b/link")).0, Why::Link));
        assert_eq!(dir.file_mode("a/b/link"), None);
        dir.open_dir("a/b").unwrap().write_atomically("link", |e| e, |w| w.write_all(b"new")).unwrap();
        assert_eq!(std::fs::read_to_string(tmp.path().join("secret")).unwrap(), "outside");
        assert!(std::fs::symlink_metadata(tmp.path().join("root/a/b/link")).unwrap().is_file());
        // A directory's last component as a link: refused by the no-follow root open too.
        symlink(tmp.path().join("root/a"), tmp.path().join("linked")).unwrap();
        assert!(matches!(why(Dir::open_ambient_nofollow(&tmp.path().join("linked"))).0, Why::Link));
        assert!(Dir::open_ambient_nofollow(&tmp.path().join("root/a")).is_ok());
    }

    #[test]
    fn a_dangling_symlink_is_refused() {
        let (tmp, dir) = setup();
        symlink(tmp.path().join("nowhere"), tmp.path().join("root/a/dangling")).unwrap();
        assert!(matches!(why(dir.read("a/dangling", 100)).0, Why::Link));
        assert!(matches!(why(dir.open_dir("a/dangling")).0, Why::Link));
        assert!(matches!(why(dir.create_dir_all("a/dangling", 0o700)).0, Why::Link));
        assert!(matches!(why(dir.open_read_write("a/dangling")).0, Why::Link));
        assert!(!tmp.path().join("nowhere").exists(), "nothing is created through it");
    }

    #[test]
    fn a_fifo_where_a_file_belongs_is_refused_at_once() {
        let (tmp, dir) = setup();
        let fifo = tmp.path().join("root/a/fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let started = Instant::now();
        let (w, text) = why(dir.read("a/fifo", 100));
        assert!(matches!(w, Why::NotRegular), "{text}");
        assert!(text.contains("a/fifo is not a regular file"), "{text}");
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(matches!(why(dir.read("a/b", 100)).0, Why::NotRegular), "a directory is not a file");
        assert!(matches!(why(dir.open_dir("a/b/f")).0, Why::NotDir));
    }

    #[test]
    fn a_path_that_climbs_or_is_absolute_or_empty_is_refused() {
        let (tmp, dir) = setup();
        for rel in ["../secret", "a/../../secret", "a/b/../f"] {
            let (w, text) = why(dir.read(rel, 100));
            assert!(matches!(w, Why::BadPath), "{rel}: {text}");
        }
        let absolute = tmp.path().join("secret");
        assert!(matches!(why(dir.read(&absolute, 100)).0, Why::BadPath));
        assert!(matches!(why(dir.open_dir("..")).0, Why::BadPath));
        assert!(matches!(why(dir.read("", 100)).0, Why::BadPath));
        assert!(matches!(why(dir.read(".", 100)).0, Why::BadPath));
        let refused = dir.write_atomically("../escaped", |e| e, |w| w.write_all(b"x")).unwrap_err();
        assert_eq!(refused.kind(), io::ErrorKind::InvalidInput);
        assert!(!tmp.path().join("escaped").exists());
        assert_eq!(dir.open_dir("").unwrap().path(), dir.path(), "empty: the root itself");
    }

    #[test]
    fn an_atomic_write_that_fails_leaves_nothing() {
        let (tmp, dir) = setup();
        let b = dir.open_dir("a/b").unwrap();
        let failed: std::result::Result<(), String> = b.write_atomically(
            "f",
            |e| e.to_string(),
            |w| {
                w.write_all(b"partial").map_err(|e| e.to_string())?;
                Err("stopped".to_owned())
            },
        );
        assert_eq!(failed.unwrap_err(), "stopped");
        assert_eq!(std::fs::read_to_string(tmp.path().join("root/a/b/f")).unwrap(), "inside");
        let mut names = b.list().unwrap();
        names.sort();
        assert_eq!(names, ["f"]);
    }
}
