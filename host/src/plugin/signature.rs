//! Signed drivers: an SSH signature (OpenSSH's `sshsig` format, `ssh-keygen -Y sign -n agmsg-driver`)
//! over one statement that binds a publication together: the driver's axis, name and version, its
//! component's digest AND its manifest's digest. A component and a manifest from two publications, or
//! either changed, no longer match what was signed. Verified here natively (the RustCrypto `ssh-key`
//! crate, ed25519), against the keys the user pinned ([`super::keys`]).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use ssh_key::{PublicKey, SshSig};

use super::keys::{KeyFile, PinnedKey, fingerprint};
use crate::axis::Axis;
use crate::error::HostError;

/// The sshsig namespace: a signature made for anything else (a git commit, a file) is not one of these.
pub const NAMESPACE: &str = "agmsg-driver";

/// The largest signature read (an ed25519 sshsig is about 300 bytes).
pub const MAX_SIGNATURE_BYTES: u64 = 16 << 10;

/// What is signed: one line per fact, in this order.
pub fn statement(axis: Axis, name: &str, version: &str, component_digest: &str, manifest_digest: &str) -> String {
    format!(
        "agmsg-driver-signature-v1\naxis {axis}\nname {name}\nversion {version}\ncomponent {component_digest}\nmanifest {manifest_digest}\n"
    )
}

/// What is signed for a published agent type: its name, its version (the publication's tag) and the
/// digest of the tar of its directory. A first line of its own, so that a driver's signature can never
/// be taken for a type's.
pub fn type_statement(name: &str, version: &str, directory_digest: &str) -> String {
    format!("agmsg-type-signature-v1\naxis types\nname {name}\nversion {version}\ndirectory {directory_digest}\n")
}

/// Who published a driver, as the user is shown it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Publisher {
    /// Signed by this pinned key, and the signature holds.
    Signed(PinnedKey),
    /// No signature came with it.
    Unsigned,
}

impl Publisher {
    /// The fingerprint trust records (`None`: unsigned).
    pub fn fingerprint(&self) -> Option<&str> {
        match self {
            Publisher::Signed(key) => Some(&key.fingerprint),
            Publisher::Unsigned => None,
        }
    }

    /// One line for the consent.
    pub fn shown(&self) -> String {
        match self {
            Publisher::Signed(key) => format!("Publisher: {}, whose signature over what is installed holds", key.shown()),
            Publisher::Unsigned => "Publisher: UNSIGNED: nothing says who published it; you are trusting the registry and its path".into(),
        }
    }
}

/// Check `signature` (sshsig PEM) over `statement` against the pinned keys: the pinned key that
/// signed it, or why not. A signature by a key not pinned, for another namespace, or not over this
/// very statement is refused.
pub fn verify(signature: &[u8], statement: &str, keys: &KeyFile) -> Result<PinnedKey, HostError> {
    let sig = SshSig::from_pem(signature)
        .map_err(|e| HostError::refused(format!("its signature is not an SSH signature (ssh-keygen -Y sign): {e}")))?;
    let key = PublicKey::from(sig.public_key().clone());
    let Some(pinned) = keys.find(&key) else {
        return Err(HostError::refused(format!(
            "it is signed by a key you have not pinned ({}): if that is its publisher's key, pin it first with \
             `agmsg-host plugin keys add <name> <key>`",
            fingerprint(&key)
        )));
    };
    if sig.namespace() != NAMESPACE {
        return Err(HostError::refused(format!(
            "its signature by {} was made for {:?}, not for an agmsg driver ({NAMESPACE:?})",
            pinned.shown(),
            crate::display::line(sig.namespace())
        )));
    }
    key.verify(NAMESPACE, statement.as_bytes(), &sig).map_err(|e| {
        HostError::refused(format!(
            "its signature by {} does not cover this component and manifest ({e}): they were changed, or come from different publications",
            pinned.shown()
        ))
    })?;
    Ok(pinned.clone())
}

/// Sign `statement` with the private key at `key` by running `ssh-keygen -Y sign` (which asks for the
/// key's passphrase on the terminal, or uses the agent, as the publisher's other signatures do). The
/// signature (PEM) and the signing key's fingerprint, checked before it is returned.
pub fn sign(key: &Path, statement: &str) -> Result<(Vec<u8>, String), HostError> {
    let fail = |why: String| HostError::refused(format!("cannot sign with {}: {why}", key.display()));
    let mut child = Command::new("ssh-keygen")
        .args(["-q", "-Y", "sign", "-n", NAMESPACE, "-f"])
        .arg(key)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| fail(format!("ssh-keygen (OpenSSH's, from the openssh-client package) does not run: {e}")))?;
    child.stdin.take().expect("piped").write_all(statement.as_bytes()).map_err(|e| fail(e.to_string()))?;
    let out = child.wait_with_output().map_err(|e| fail(e.to_string()))?;
    if !out.status.success() {
        return Err(fail(format!("ssh-keygen -Y sign: {}", String::from_utf8_lossy(&out.stderr).trim())));
    }
    let sig = SshSig::from_pem(&out.stdout).map_err(|e| fail(format!("ssh-keygen wrote no SSH signature: {e}")))?;
    let signer = PublicKey::from(sig.public_key().clone());
    if signer.algorithm() != ssh_key::Algorithm::Ed25519 {
        return Err(fail(format!("agmsg-host verifies ed25519 signatures, and this key is {}", signer.algorithm())));
    }
    signer.verify(NAMESPACE, statement.as_bytes(), &sig).map_err(|e| fail(format!("the signature made does not verify: {e}")))?;
    Ok((out.stdout, fingerprint(&signer)))
}
