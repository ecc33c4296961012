//! Third-party drivers ("plugins"): a component plus its manifest (`agmsg-driver.toml`), or an agent
//! type's directory (`type.conf`, its template, optionally a plug component), found under agmsg's
//! plugin directories, run (or, for a type, seen) only once the user trusts them, with what they
//! declared AND the user granted (a type: nothing).
//!
//! - [`manifest`]: the manifest format (identity, contract version, requested capabilities).
//! - [`conf`]: the `KEY=value` format of a directory package's own manifest (an agent type's
//!   `type.conf`); what its keys mean the axis says, through [`DirPackage`].
//! - [`registry`]: discovery in agmsg's base order, and which candidate runs.
//! - [`tree`]: a plugin directory read as one snapshot, no link followed (agent types).
//! - [`trust`]: the trust file (pinned to path, component and manifest hashes, consented and granted
//!   capabilities).
//! - [`workflow`]: install, trust, untrust and remove, as one protocol with the user's consent asked by
//!   the caller.
//! - [`oci`]: published drivers as OCI artifacts (the CNCF Wasm layout), read from a registry or an
//!   OCI image layout file, every answer bounded and checked against its digest.
//! - [`registry_auth`]: the user's credentials for a registry, where podman and Docker keep them.
//! - [`signature`]: SSH signatures binding a component and its manifest; [`keys`]: the publisher
//!   keys the user pinned.
//! - [`published`]: `plugin publish | install oci://... | update | keys`, each returning what the
//!   command line prints.
//! - [`commands`]: `plugin install | list | inspect | trust | untrust | remove`, each returning what the
//!   command line prints (what only an axis knows comes through [`commands::Axes`]).

pub mod commands;
pub mod conf;
pub mod keys;
pub mod manifest;
pub mod oci;
pub mod published;
pub mod registry;
pub mod registry_auth;
pub mod signature;
pub mod tree;
pub mod trust;
pub mod user_file;
pub mod workflow;

use std::io::Read;
use std::path::Path;

use crate::axis::Axis;
use crate::error::HostError;

/// What an axis knows of a plugin directory that is a package of its own kind rather than a component
/// with `agmsg-driver.toml`: on the types axis, an agent type (`type.conf`, its template, optionally a
/// plug component). plugin/ finds, reads (one snapshot, no link followed), pins, lists, installs and
/// trusts such a directory; the axis's module implements this for what only the axis knows, so plugin/
/// names no axis module. Which file makes a directory such a package is the axis's fact
/// ([`Axis::dir_manifest`]). Callers that may meet such an axis pass its implementation (`dirs`); the
/// registry refuses to read a package of an axis whose implementation it was not given.
pub trait DirPackage: Sync {
    /// The axis whose plugin directories hold these packages.
    fn axis(&self) -> Axis;
    /// Refuse the manifest (read at `path`) of the package to be known as `name` if the axis cannot use
    /// it: `Err` says why.
    fn check(&self, name: &str, manifest: &conf::Manifest, path: &Path) -> Result<(), HostError>;
    /// The files its manifest names that an installed package must hold (a type's `template=`).
    /// (its key, the file) for each; an empty value names nothing.
    fn named_files<'m>(&self, manifest: &'m conf::Manifest) -> Vec<(&'static str, &'m str)>;
    /// The bundled driver of this axis the package `name` replaces, if there is one.
    fn shadows(&self, name: &str) -> Option<&'static str>;
}

/// The [`DirPackage`] of `axis` among `dirs`.
pub fn dir_package<'a>(dirs: &[&'a dyn DirPackage], axis: Axis) -> Option<&'a dyn DirPackage> {
    dirs.iter().copied().find(|d| d.axis() == axis)
}

/// The largest component file read (the CPython-based Python driver is about 18 MB).
pub const MAX_COMPONENT_BYTES: u64 = 256 << 20;
/// The largest manifest or trust file read.
pub const MAX_TEXT_BYTES: u64 = 4 << 20;

/// Read a file a plugin directory (or a user) provides, which may be anything: only a regular file
/// (a FIFO or a device is refused without blocking on its open), and at most `max_bytes`. The error
/// names the file; its class is [`crate::error::ExitClass::Refused`] (a caller that reads a driver for
/// an op says its own).
pub fn read_file(path: &Path, max_bytes: u64) -> Result<Vec<u8>, HostError> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| HostError::refused(format!("cannot read {}: {e}", path.display())))?;
    read_opened(file, path, max_bytes)
}

/// The rest of [`read_file`] for a file already opened (without blocking) as `path`: only a regular
/// file, and at most `max_bytes`.
pub fn read_opened(file: std::fs::File, path: &Path, max_bytes: u64) -> Result<Vec<u8>, HostError> {
    let fail = |why: String| HostError::refused(format!("cannot read {}: {why}", path.display()));
    let meta = file.metadata().map_err(|e| fail(e.to_string()))?;
    if !meta.is_file() {
        return Err(fail("not a regular file".into()));
    }
    let too_large = || fail(format!("larger than {}", size_text(max_bytes)));
    if meta.len() > max_bytes {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(max_bytes + 1).read_to_end(&mut bytes).map_err(|e| fail(e.to_string()))?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_large());
    }
    Ok(bytes)
}

/// A size limit for people: whole MiB or KiB where it is one, else bytes.
pub fn size_text(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// A component's or a manifest's identity, as trust pins it.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_only_regular_files_within_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"12345").unwrap();
        assert_eq!(read_file(&file, 5).unwrap(), b"12345");
        let too_large = read_file(&file, 4).unwrap_err();
        assert!(too_large.message.ends_with("larger than 4 bytes"));
        assert_eq!(too_large.class, crate::error::ExitClass::Refused);
        assert_eq!(size_text(256 << 10), "256 KiB", "not '0 MiB'");
        assert_eq!(size_text(256 << 20), "256 MiB");
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        assert!(read_file(&fifo, 5).unwrap_err().message.contains("not a regular file"));
        assert!(read_file(Path::new("/dev/zero"), 5).unwrap_err().message.contains("not a regular file"));
        assert!(read_file(dir.path(), 5).is_err());
    }
}
