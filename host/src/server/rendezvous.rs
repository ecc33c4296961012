//! Where a user's server of one build listens: `$XDG_RUNTIME_DIR/agmsg-host/`, else
//! `/tmp/agmsg-host-<uid>/`, a directory only the user can enter, checked every
//! time (owned by the user, mode 0700, not a link), and in it one socket per build. The build's identity
//! (the engine file's device, inode, size and modification time, with the protocol's version) is in the
//! socket's name, so a client never talks to a server of another build, and a rebuilt or reinstalled
//! engine gets a server of its own while the old one idles out.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use agmsg_runtime::private_dir::{self, ClosedTo};

/// The most a socket path may hold (`sun_path` is 108 bytes with its terminating NUL).
const SOCKET_PATH_MAX: usize = 107;

pub struct Rendezvous {
    /// The socket (in the private directory) the server listens on.
    pub socket: PathBuf,
    /// Held (`flock`) by the one server of this build: racing starters lose and leave.
    pub lock: PathBuf,
    /// Touched by a client that starts a server: no other client starts one for a while after.
    pub started: PathBuf,
}

impl Rendezvous {
    /// The rendezvous of the build whose engine is the file `engine` (a server passes its own,
    /// `/proc/self/exe`), for the user running this, the directory made if missing; an error says why
    /// there is none (a directory someone else owns, a link, too long a path, no engine there).
    pub fn locate(var: impl Fn(&str) -> Option<OsString>, engine: &Path) -> Result<Rendezvous, String> {
        let uid = rustix::process::geteuid().as_raw();
        let dir = match var("XDG_RUNTIME_DIR").map(PathBuf::from).filter(|p| p.is_absolute()) {
            Some(runtime) => {
                private_dir::check(&runtime, ClosedTo::Entering).map_err(|e| e.to_string())?;
                runtime.join("agmsg-host")
            }
            // Not $TMPDIR: a caller's temporary directory is often its own (a test's, a tool's), and one
            // server per user serves every caller.
            None => PathBuf::from(format!("/tmp/agmsg-host-{uid}")),
        };
        private_dir::ensure(&dir, ClosedTo::Entering).map_err(|e| e.to_string())?;
        let id = build_identity(engine)?;
        let socket = dir.join(format!("{id}.sock"));
        if socket.as_os_str().as_bytes().len() > SOCKET_PATH_MAX {
            return Err(format!("{} is too long for a socket path", socket.display()));
        }
        Ok(Rendezvous { lock: dir.join(format!("{id}.lock")), started: dir.join(format!("{id}.started")), socket })
    }
}

/// A build's identity: a hash of its engine file's device, inode, size and modification time (one
/// `stat`, cheap enough for every invocation), and of the version of what client and server say.
/// FNV-1a, a fixed function: the front and the engine compute it apart, and it only tells one user's
/// builds apart, in a directory only that user enters. (SHA-256's crate asks the CPU for its features
/// first, a trap to the hypervisor on a virtual machine, on every run of the front.)
fn build_identity(engine: &Path) -> Result<String, String> {
    use std::hash::Hasher;
    let meta = std::fs::metadata(engine).map_err(|e| format!("cannot stat {}: {e}", engine.display()))?;
    let mut hash = fnv::FnvHasher::default();
    hash.write(env!("CARGO_PKG_VERSION").as_bytes());
    hash.write(&[super::protocol::VERSION]);
    for n in [meta.dev(), meta.ino(), meta.size(), meta.mtime() as u64, meta.mtime_nsec() as u64] {
        hash.write(&n.to_le_bytes());
    }
    Ok(format!("{:016x}", hash.finish()))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    use std::path::Path;

    use super::*;

    fn locate_in(runtime: &Path) -> Result<Rendezvous, String> {
        let runtime = runtime.as_os_str().to_owned();
        Rendezvous::locate(|name| (name == "XDG_RUNTIME_DIR").then(|| runtime.clone()), Path::new(super::super::OWN_FILE))
    }

    #[test]
    fn a_private_directory_is_made_and_used() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let r = locate_in(tmp.path()).unwrap();
        let dir = tmp.path().join("agmsg-host");
        assert_eq!(r.socket.parent(), Some(dir.as_path()));
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        // The same build, the same socket.
        assert_eq!(locate_in(tmp.path()).unwrap().socket, r.socket);
    }

    #[test]
    fn a_directory_others_may_enter_or_a_link_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let e = locate_in(tmp.path()).err().unwrap();
        assert!(e.contains("others may enter"), "{e}");
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), tmp.path().join("agmsg-host")).unwrap();
        let e = locate_in(tmp.path()).err().unwrap();
        assert!(e.contains("link is not followed"), "{e}");
        std::fs::remove_file(tmp.path().join("agmsg-host")).unwrap();
        std::fs::DirBuilder::new().mode(0o750).create(tmp.path().join("agmsg-host")).unwrap();
        let e = locate_in(tmp.path()).err().unwrap();
        assert!(e.contains("others may enter"), "{e}");
    }
}
