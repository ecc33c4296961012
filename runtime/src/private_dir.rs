//! A directory only its user controls: the compile cache (native code there is loaded as it is) and
//! the resident server's rendezvous (a socket there is trusted to be the user's own server). Both make
//! the directory if it is missing and check it on every use, one way: a directory (a link is never
//! followed), owned by this user, and closed to others for what the caller names.

use std::fmt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// What no one but the owner may do in the directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClosedTo {
    /// Write in it (group or others' write bit): enough for a directory whose files are what is trusted.
    Writing,
    /// Enter, read or write it (any group or others' bit): for a directory whose names must not be reached.
    Entering,
}

impl ClosedTo {
    fn forbidden_bits(self) -> u32 {
        match self {
            ClosedTo::Writing => 0o022,
            ClosedTo::Entering => 0o077,
        }
    }
}

/// Why a directory is not private to this user.
#[derive(Debug)]
pub enum NotPrivate {
    CannotCreate(PathBuf, std::io::Error),
    CannotRead(PathBuf, std::io::Error),
    NotADirectory(PathBuf),
    OtherOwner { dir: PathBuf, owner: u32, me: u32 },
    Open { dir: PathBuf, mode: u32, closed_to: ClosedTo },
}

impl fmt::Display for NotPrivate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotPrivate::CannotCreate(dir, e) => write!(f, "cannot create {}: {e}", dir.display()),
            NotPrivate::CannotRead(dir, e) => write!(f, "cannot read {}: {e}", dir.display()),
            NotPrivate::NotADirectory(dir) => write!(f, "{} is not a directory (a link is not followed)", dir.display()),
            NotPrivate::OtherOwner { dir, owner, me } => write!(f, "{} belongs to uid {owner}, not to this user ({me})", dir.display()),
            NotPrivate::Open { dir, mode, closed_to: ClosedTo::Writing } => {
                write!(f, "{} is writable by other users (mode {mode:o})", dir.display())
            }
            NotPrivate::Open { dir, mode, closed_to: ClosedTo::Entering } => {
                write!(f, "{} has mode {mode:o}: others may enter it", dir.display())
            }
        }
    }
}

impl std::error::Error for NotPrivate {}

/// `dir` exists, made with its missing parents at mode 0700 if it did not, and is private ([`check`]).
pub fn ensure(dir: &Path, closed_to: ClosedTo) -> Result<(), NotPrivate> {
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(|e| NotPrivate::CannotCreate(dir.to_owned(), e))?;
    check(dir, closed_to)
}

/// `dir` is a directory, not a link to one, owned by the effective user, and closed to others as asked.
pub fn check(dir: &Path, closed_to: ClosedTo) -> Result<(), NotPrivate> {
    let meta = std::fs::symlink_metadata(dir).map_err(|e| NotPrivate::CannotRead(dir.to_owned(), e))?;
    if !meta.file_type().is_dir() {
        return Err(NotPrivate::NotADirectory(dir.to_owned()));
    }
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Err(NotPrivate::OtherOwner { dir: dir.to_owned(), owner: meta.uid(), me });
    }
    if meta.mode() & closed_to.forbidden_bits() != 0 {
        return Err(NotPrivate::Open { dir: dir.to_owned(), mode: meta.mode() & 0o7777, closed_to });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn refusal(dir: &Path, closed_to: ClosedTo) -> String {
        ensure(dir, closed_to).expect_err("the directory was accepted").to_string()
    }

    #[test]
    fn a_missing_directory_is_made_private_with_its_parents() {
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("a/b/cache");
        ensure(&dir, ClosedTo::Entering).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        ensure(&dir, ClosedTo::Entering).unwrap();
    }

    /// A link, even to a private directory of this user: whoever can change the link chooses the place.
    #[test]
    fn a_link_or_a_file_is_not_a_directory() {
        let parent = tempfile::tempdir().unwrap();
        let real = parent.path().join("real");
        ensure(&real, ClosedTo::Writing).unwrap();
        let link = parent.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert_eq!(refusal(&link, ClosedTo::Writing), format!("{} is not a directory (a link is not followed)", link.display()));
        let file = parent.path().join("file");
        std::fs::write(&file, "not a directory").unwrap();
        assert!(refusal(&file, ClosedTo::Writing).starts_with(&format!("cannot create {}: ", file.display())));
        assert_eq!(
            check(&file, ClosedTo::Writing).unwrap_err().to_string(),
            format!("{} is not a directory (a link is not followed)", file.display())
        );
    }

    #[test]
    fn what_others_may_do_is_checked_as_asked() {
        let parent = tempfile::tempdir().unwrap();
        for mode in [0o720, 0o702, 0o777] {
            let dir = parent.path().join(format!("w-{mode:o}"));
            ensure(&dir, ClosedTo::Writing).unwrap();
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
            assert_eq!(refusal(&dir, ClosedTo::Writing), format!("{} is writable by other users (mode {mode:o})", dir.display()));
        }
        // Readable and enterable by others: fine for writing, not for entering.
        let dir = parent.path().join("r");
        ensure(&dir, ClosedTo::Entering).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        ensure(&dir, ClosedTo::Writing).unwrap();
        assert_eq!(refusal(&dir, ClosedTo::Entering), format!("{} has mode 755: others may enter it", dir.display()));
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o701)).unwrap();
        assert_eq!(refusal(&dir, ClosedTo::Entering), format!("{} has mode 701: others may enter it", dir.display()));
    }

    /// Owned by another user: as root, a directory given to `nobody`; as anyone else, `/` (root's).
    #[test]
    fn a_directory_of_another_user_is_refused() {
        let me = rustix::process::geteuid().as_raw();
        let parent = tempfile::tempdir().unwrap();
        let (dir, owner) = if me == 0 {
            let dir = parent.path().join("theirs");
            ensure(&dir, ClosedTo::Writing).unwrap();
            std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
            (dir, 65534)
        } else {
            (PathBuf::from("/"), 0)
        };
        assert_eq!(refusal(&dir, ClosedTo::Writing), format!("{} belongs to uid {owner}, not to this user ({me})", dir.display()));
    }
}
