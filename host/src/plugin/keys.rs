//! The publisher keys the user pinned, `$AGMSG_HOME/publisher-keys.json`: an SSH public key (ed25519)
//! under a name the user chose. A published driver signed by one of them is shown to the user as that
//! publisher (the name and the key's fingerprint); one signed by a key not pinned here is refused
//! ([`super::signature`]). Kept as the trust file is: changed under a lock, written atomically.

use std::path::Path;

use serde::{Deserialize, Serialize};
use ssh_key::{HashAlg, PublicKey};

use super::user_file::UserFile;
use crate::display;
use crate::error::HostError;

/// One pinned key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinnedKey {
    /// What the user calls the publisher.
    pub name: String,
    /// `SHA256:...`, as `ssh-keygen -l` prints it.
    pub fingerprint: String,
    /// The public key, as OpenSSH writes it (`ssh-ed25519 AAAA...`), without its comment.
    pub key: String,
}

impl PinnedKey {
    /// The key itself.
    pub fn public_key(&self) -> Result<PublicKey, HostError> {
        PublicKey::from_openssh(&self.key).map_err(|e| HostError::refused(format!("the pinned key {:?} is damaged: {e}", self.name)))
    }

    /// `name (SHA256:...)`, for people.
    pub fn shown(&self) -> String {
        format!("{} ({})", display::line(&self.name), self.fingerprint)
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct KeyFile {
    pub version: u32,
    pub keys: Vec<PinnedKey>,
}

/// The longest publisher name.
const MAX_NAME_CHARS: usize = 64;

impl super::user_file::UserFile for KeyFile {
    const NAME: &'static str = "publisher-keys.json";
    const LOCK: &'static str = "publisher-keys.lock";
    fn empty() -> KeyFile {
        KeyFile { version: 1, keys: Vec::new() }
    }
}

impl KeyFile {
    /// The pinned key that is `key`, if any.
    pub fn find(&self, key: &PublicKey) -> Option<&PinnedKey> {
        let fingerprint = fingerprint(key);
        self.keys.iter().find(|k| k.fingerprint == fingerprint && k.public_key().is_ok_and(|p| p.key_data() == key.key_data()))
    }

    /// The pinned key with this fingerprint.
    pub fn by_fingerprint(&self, fingerprint: &str) -> Option<&PinnedKey> {
        self.keys.iter().find(|k| k.fingerprint == fingerprint)
    }
}

/// A key's SHA-256 fingerprint, as `ssh-keygen -l` prints it.
pub fn fingerprint(key: &PublicKey) -> String {
    key.fingerprint(HashAlg::Sha256).to_string()
}

/// An OpenSSH public key line (`ssh-ed25519 AAAA... comment`), or a file holding one. Only ed25519:
/// the algorithm publishers' keys have, and the one this host verifies.
pub fn parse_key(text_or_file: &str) -> Result<PublicKey, HostError> {
    let text = if Path::new(text_or_file).is_file() {
        let bytes = super::read_file(Path::new(text_or_file), 64 << 10)?;
        String::from_utf8(bytes).map_err(|_| HostError::refused(format!("{text_or_file} is not UTF-8")))?
    } else {
        text_or_file.to_owned()
    };
    let line = text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('#')).unwrap_or("");
    let key = PublicKey::from_openssh(line)
        .map_err(|e| HostError::usage(format!("not an OpenSSH public key (a line like `ssh-ed25519 AAAA...`, or a .pub file): {e}")))?;
    if key.algorithm() != ssh_key::Algorithm::Ed25519 {
        return Err(HostError::usage(format!("only ed25519 keys are pinned (ssh-keygen -t ed25519), not {}", key.algorithm())));
    }
    Ok(key)
}

/// Pin `key` as the publisher `name`. A name or a key already pinned is refused (remove it first).
pub fn add(home: &Path, name: &str, key: &PublicKey) -> Result<PinnedKey, HostError> {
    let valid = !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "._@-".contains(c))
        && !name.starts_with("SHA256:");
    if !valid {
        return Err(HostError::usage(format!(
            "a publisher's name is 1 to {MAX_NAME_CHARS} letters, digits, '.', '_', '@' or '-', not {:?}",
            display::line(name)
        )));
    }
    let mut bare = key.clone();
    bare.set_comment("");
    let pinned = PinnedKey {
        name: name.to_owned(),
        fingerprint: fingerprint(key),
        key: bare.to_openssh().map_err(|e| HostError::refused(format!("cannot write the key: {e}")))?.trim().to_owned(),
    };
    KeyFile::update(home, |file| {
        if let Some(same) = file.keys.iter().find(|k| k.name == pinned.name || k.fingerprint == pinned.fingerprint) {
            return Err(HostError::refused(format!(
                "already pinned: {} (remove it first: agmsg-host plugin keys remove {})",
                same.shown(),
                same.name
            )));
        }
        file.keys.push(pinned.clone());
        Ok(())
    })?;
    Ok(pinned)
}

/// Unpin the key named `which` (a name, or a fingerprint).
pub fn remove(home: &Path, which: &str) -> Result<PinnedKey, HostError> {
    KeyFile::update(home, |file| {
        let at = file.keys.iter().position(|k| k.name == which || k.fingerprint == which);
        let at = at.ok_or_else(|| HostError::refused(format!("no pinned key {:?} (agmsg-host plugin keys list)", display::line(which))))?;
        Ok(file.keys.remove(at))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIC0NPEDNcPKC4A5WaBTsqNy35nKOk/PXTTr7GuG/6LOr alice@example";

    #[test]
    fn pins_lists_and_unpins_keys() {
        let home = tempfile::tempdir().unwrap();
        let key = parse_key(KEY).unwrap();
        let pinned = add(home.path(), "alice", &key).unwrap();
        assert!(pinned.fingerprint.starts_with("SHA256:"), "{pinned:?}");
        assert!(!pinned.key.contains("alice@example"), "the comment is not kept: {pinned:?}");
        assert!(add(home.path(), "alice2", &key).unwrap_err().message.contains("already pinned"));
        assert!(add(home.path(), "../x", &key).is_err());
        let file = KeyFile::load(home.path()).unwrap();
        assert_eq!(file.find(&key), Some(&pinned));
        assert_eq!(remove(home.path(), &pinned.fingerprint).unwrap(), pinned);
        assert!(KeyFile::load(home.path()).unwrap().keys.is_empty());
        assert!(remove(home.path(), "alice").is_err());
        assert!(parse_key("ssh-rsa AAAA nope").is_err());
    }
}
