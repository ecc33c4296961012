//! Shims, the bash files agmsg sources in place of its own drivers, forwarding to agmsg-host: what
//! every shim shares (which agmsg-host a shim runs, and what it says when that agmsg-host cannot run)
//! and `shim install | uninstall` ([`install`]), which puts every axis's shims into an agmsg install.
//! Each axis says its own files and their text ([`crate::axis_module::AxisModule::shim_files`]): the
//! storage shim, `storage::shim`; a terminal driver's `ops.sh`, `terminal::shim`; a type's
//! `_delivery.sh`, `agent::delivery::shim`.
//!
//! A shim names agmsg-host by the path the user invoked it by, not by where a link led
//! ([`invoked_binary`]): a link on `PATH` that an upgrade re-points keeps every shim working. A shim
//! names its driver by name, never by the component's path, so every call resolves the driver and
//! checks its trust as `agmsg-host --driver <name>` does.
//!
//! When agmsg-host is gone from that path (moved, removed) or cannot be run there, every shim function
//! fails as agmsg's drivers fail at run time, 13 (`runtime_error`), with one line on stderr that names
//! agmsg-host and says what to do ([`GONE_ADVICE`]): never a silent empty answer agmsg would read as
//! "no messages".

pub mod install;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::error::HostError;

/// What every shim's "cannot run agmsg-host" line tells the user to do (after naming the path).
pub const GONE_ADVICE: &str =
    "put agmsg-host back there, or re-run `agmsg-host shim install <agmsg's directory>` with the agmsg-host you have now";

/// The path this agmsg-host was run by, as the user named it: `argv[0]` made absolute when it holds a
/// `/`, else the first `PATH` entry holding it (what a shell ran); links in it are kept, not resolved.
/// When that path is not the program shims run (`argv[0]` is the caller's to set), that program's own
/// resolved path. The program shims run is the small `agmsg-host` beside this engine (the one that
/// gets an op to the resident server at the least cost), else this program itself (an engine run
/// alone). Refused when neither can be found or the path is not UTF-8 (a shim is bash text).
pub fn invoked_binary() -> Result<String, HostError> {
    let own = std::env::current_exe().map_err(|e| HostError::refused(format!("cannot locate agmsg-host itself: {e}")))?;
    let front = own.with_file_name(crate::server::FRONT);
    let exe = if front.is_file() { front } else { own };
    let invoked = crate::server::invoked_as().and_then(|arg0| invoked_path(Path::new(&arg0), std::env::var_os("PATH").as_deref()));
    let path = match invoked {
        Some(path) if same_file(&path, &exe) => path,
        _ => exe.canonicalize().map_err(|e| HostError::refused(format!("cannot locate agmsg-host itself: {e}")))?,
    };
    path.into_os_string().into_string().map_err(|_| HostError::refused("the path of agmsg-host is not UTF-8"))
}

/// Where `arg0` leads as a shell runs it: a path with a `/` (made absolute, not resolved), else the
/// first executable of that name on `path`.
pub fn invoked_path(arg0: &Path, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    if arg0.as_os_str().is_empty() {
        return None;
    }
    if arg0.as_os_str().as_encoded_bytes().contains(&b'/') {
        return std::path::absolute(arg0).ok();
    }
    std::env::split_paths(path?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(arg0))
        .find(|candidate| candidate.metadata().is_ok_and(|m| m.is_file() && m.mode() & 0o111 != 0))
}

/// Whether `a` and `b` are one file (links followed).
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.metadata(), b.metadata()) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_invoked_path_keeps_links_and_follows_path() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::write(&real, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&real, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::os::unix::fs::symlink(&real, bin.join("agmsg-host")).unwrap();
        let search = std::env::join_paths([Path::new("/nonexistent"), bin.as_path()]).unwrap();
        assert_eq!(invoked_path(Path::new("agmsg-host"), Some(&search)), Some(bin.join("agmsg-host")));
        assert_eq!(invoked_path(&bin.join("agmsg-host"), None), Some(bin.join("agmsg-host")));
        assert_eq!(invoked_path(Path::new("nosuch"), Some(&search)), None);
        assert!(same_file(&bin.join("agmsg-host"), &real) && !same_file(&bin, &real));
    }
}
