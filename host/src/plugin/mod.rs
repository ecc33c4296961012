//! Third-party drivers ("plugins"): a component plus its manifest (`agmsg-driver.toml`), or an agent
//! type's directory (`type.conf`, its template, optionally a plug component), found under agmsg's
//! plugin directories, run (or, for a type, seen) only once the user trusts them, with what they
//! declared AND the user granted (a type: nothing).
//!
//! - [`manifest`]: the manifest format (identity, contract version, requested capabilities).
//! - [`registry`]: discovery in agmsg's base order, and which candidate runs.
//! - [`tree`]: a plugin directory read as one snapshot, no link followed (agent types).
//! - [`trust`]: the trust file (pinned to path, component and manifest hashes, consented and granted
//!   capabilities).
//! - [`workflow`]: install, trust, untrust and remove, as one protocol with the user's consent asked by
//!   the caller.

pub mod manifest;
pub mod registry;
pub mod tree;
pub mod trust;
pub mod workflow;

use std::io::Read;
use std::path::Path;

/// The largest component file read (the CPython-based Python driver is about 18 MB).
pub const MAX_COMPONENT_BYTES: u64 = 256 << 20;
/// The largest manifest or trust file read.
pub const MAX_TEXT_BYTES: u64 = 4 << 20;

/// Read a file a plugin directory (or a user) provides, which may be anything: only a regular file
/// (a FIFO or a device is refused without blocking on its open), and at most `max_bytes`. The error
/// names the file.
pub fn read_file(path: &Path, max_bytes: u64) -> Result<Vec<u8>, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let fail = |why: String| format!("cannot read {}: {why}", path.display());
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).map_err(|e| fail(e.to_string()))?;
    let meta = file.metadata().map_err(|e| fail(e.to_string()))?;
    if !meta.is_file() {
        return Err(fail("not a regular file".into()));
    }
    let too_large = || fail(format!("larger than {} MiB", max_bytes >> 20));
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

/// A component's or a manifest's identity, as trust pins it.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// `s` as one shell word: as is when it is plain, else single-quoted (for commands users paste).
pub fn shell_word(s: &str) -> String {
    let plain = !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+:,=@%".contains(&b));
    if plain { s.to_owned() } else { format!("'{}'", s.replace('\'', r"'\''")) }
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
        assert!(read_file(&file, 4).unwrap_err().contains("larger than"));
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        assert!(read_file(&fifo, 5).unwrap_err().contains("not a regular file"));
        assert!(read_file(Path::new("/dev/zero"), 5).unwrap_err().contains("not a regular file"));
        assert!(read_file(dir.path(), 5).is_err());
    }

    #[test]
    fn shell_words() {
        assert_eq!(shell_word("/tmp/plugins/storage/x"), "/tmp/plugins/storage/x");
        assert_eq!(shell_word("/tmp/my plugins/it's"), r"'/tmp/my plugins/it'\''s'");
    }
}
