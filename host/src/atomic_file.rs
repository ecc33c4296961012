//! Writing a file the user named (an export, a shim) so that it appears whole or not at all.
//!
//! The target's directory is opened as an [`fsroot::Dir`] and the file written through its
//! [`fsroot::Dir::write_atomically`]: an anonymous file (`O_TMPFILE`) until it is complete, so a failure,
//! a Ctrl-C or a `kill -9` mid-write leaves nothing behind; then linked under a temporary name and
//! renamed over the target, so readers never see a partial file and a symlink at the target is
//! replaced, never written through. Where the filesystem has no `O_TMPFILE`, a named temporary file is
//! used instead (and removed on failure).

use std::fs::File;
use std::io::{self, BufWriter};
use std::path::Path;

use crate::fsroot::{self, Why};

/// Write `target` atomically with what `fill` writes. `fill`'s own error is returned as it is; an I/O
/// error of the file itself goes through `io_error`.
pub fn write_atomically<E>(
    target: &Path,
    io_error: impl Fn(io::Error) -> E,
    fill: impl FnOnce(&mut BufWriter<File>) -> Result<(), E>,
) -> Result<(), E> {
    let target = std::path::absolute(target).map_err(&io_error)?;
    if target.is_dir() {
        return Err(io_error(io::Error::other("it is a directory")));
    }
    let (Some(dir), Some(name)) = (target.parent(), target.file_name()) else {
        return Err(io_error(io::Error::other("it has no parent directory")));
    };
    // The directory is the user's path, links and all; the target's own name is never followed.
    let dir = match fsroot::Dir::open_ambient(dir) {
        Ok(dir) => dir,
        Err(fsroot::Error { why: Why::Io(e), .. }) => return Err(io_error(e)),
        Err(e) => return Err(io_error(e.into())),
    };
    dir.write_atomically(name, io_error, fill)
}
