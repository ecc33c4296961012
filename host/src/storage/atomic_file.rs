//! Writing a file the user named (an export) so that it appears whole or not at all.
//!
//! The content goes to an anonymous file in the target's directory (`O_TMPFILE`): until it is complete
//! it has no name, so a failure, a Ctrl-C or a `kill -9` mid-write leaves nothing behind. Only then is it
//! linked under a temporary name and renamed over the target, so readers never see a partial file and
//! a symlink at the target is replaced, never written through. Where the filesystem has no `O_TMPFILE`,
//! a named temporary file is used instead (and removed on failure).

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::path::Path;

use rustix::fs::{AtFlags, Mode, OFlags};

/// Write `target` atomically with what `fill` writes. `fill`'s own error is returned as it is; an I/O
/// error of the file itself goes through `io_error`.
pub fn write_atomically<E>(
    target: &Path,
    io_error: impl Fn(io::Error) -> E,
    fill: impl FnOnce(&mut BufWriter<File>) -> Result<(), E>,
) -> Result<(), E> {
    publish(target, fill, &io_error)
}

/// Write `name` in the open directory `dir` atomically, as [`write_atomically`] does (for a caller
/// that opened the directory itself, without following symlinks).
pub fn write_atomically_at<E>(
    dir: &File,
    name: &OsStr,
    io_error: impl Fn(io::Error) -> E,
    fill: impl FnOnce(&mut BufWriter<File>) -> Result<(), E>,
) -> Result<(), E> {
    publish_at(dir, name, fill, &io_error)
}

fn publish<E>(target: &Path, fill: impl FnOnce(&mut BufWriter<File>) -> Result<(), E>, io_error: &impl Fn(io::Error) -> E) -> Result<(), E> {
    let target = std::path::absolute(target).map_err(io_error)?;
    if target.is_dir() {
        return Err(io_error(io::Error::other("it is a directory")));
    }
    let (Some(dir), Some(name)) = (target.parent(), target.file_name()) else {
        return Err(io_error(io::Error::other("it has no parent directory")));
    };
    let dir = File::from(
        rustix::fs::open(dir, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).map_err(|e| io_error(e.into()))?,
    );
    publish_at(&dir, name, fill, io_error)
}

fn publish_at<E>(dir: &File, name: &OsStr, fill: impl FnOnce(&mut BufWriter<File>) -> Result<(), E>, io_error: &impl Fn(io::Error) -> E) -> Result<(), E> {
    let temp_name = format!(".{}.tmp.{}", name.to_string_lossy(), std::process::id());
    let anonymous = rustix::fs::openat(dir.as_fd(), ".", OFlags::TMPFILE | OFlags::WRONLY | OFlags::CLOEXEC, Mode::from_raw_mode(0o666));
    let (file, named) = match anonymous {
        Ok(fd) => (File::from(fd), false),
        // No O_TMPFILE on this filesystem (or kernel): a named temporary file, cleaned up on failure.
        Err(rustix::io::Errno::OPNOTSUPP | rustix::io::Errno::ISDIR | rustix::io::Errno::INVAL) => {
            let flags = OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC;
            let fd = rustix::fs::openat(dir.as_fd(), temp_name.as_str(), flags, Mode::from_raw_mode(0o666)).map_err(|e| io_error(e.into()))?;
            (File::from(fd), true)
        }
        Err(e) => return Err(io_error(e.into())),
    };
    let mut writer = BufWriter::new(file);
    let mut has_temp_name = named;
    let written = fill(&mut writer);
    let published = written.and_then(|()| {
        let flushed: io::Result<()> = writer.flush().and_then(|()| writer.get_ref().sync_all());
        flushed.map_err(io_error)?;
        if !named {
            // Give the finished file a name: its /proc entry, linked into the directory.
            let proc_path = format!("/proc/self/fd/{}", writer.get_ref().as_raw_fd());
            rustix::fs::linkat(rustix::fs::CWD, proc_path.as_str(), dir.as_fd(), temp_name.as_str(), AtFlags::SYMLINK_FOLLOW)
                .map_err(|e| io_error(e.into()))?;
            has_temp_name = true;
        }
        rustix::fs::renameat(dir.as_fd(), temp_name.as_str(), dir.as_fd(), name).map_err(|e| io_error(e.into()))?;
        has_temp_name = false;
        dir.sync_all().map_err(io_error)
    });
    if has_temp_name {
        let _ = rustix::fs::unlinkat(dir.as_fd(), temp_name.as_str(), AtFlags::empty());
    }
    published
}
