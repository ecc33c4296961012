//! The trust file, `$AGMSG_HOME/trusted-plugins.json`: which plugins the user opted into, pinned to
//! where they are, the sha256 of their component and of their manifest, the capabilities the user was
//! shown (consented) and the ones granted. A changed component, a move, or any change to the manifest
//! (one that asks for more than was consented to is told apart, to show what widened) makes the
//! plugin untrusted again.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::axis::Axis;
use crate::capabilities::{Capabilities, Capability};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustRecord {
    pub axis: Axis,
    pub name: String,
    /// The plugin's directory, absolute.
    pub path: PathBuf,
    pub sha256: String,
    /// The manifest file's sha256: its other keys (a terminal driver's priority, capabilities) matter
    /// too.
    #[serde(default)]
    pub manifest_sha256: String,
    /// What the manifest asked for when the user said yes.
    pub consented: Capabilities,
    /// What the user granted (the driver gets the declared items these cover).
    pub granted: Capabilities,
    /// Where it was installed from, when that was a registry or an artifact file (`plugin update`
    /// reads it there again), and who signed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
}

/// Where a published driver came from ([`super::published`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// `oci://<registry>/<repository>:<tag>` (or `@sha256:...`), or an artifact file, as given.
    pub source: String,
    /// The image manifest's digest installed.
    pub digest: String,
    /// The fingerprint of the pinned key that signed it; `None`: it was unsigned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publisher: Option<String>,
    /// The version published, for an agent type (whose files name none; a driver's is its manifest's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct TrustFile {
    pub version: u32,
    pub plugins: Vec<TrustRecord>,
}

/// Whether a found plugin may run, and with what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TrustState {
    /// Bundled in this binary.
    Builtin,
    /// Runs with these capabilities (declared AND granted).
    Trusted(Capabilities),
    Untrusted(Untrusted),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Untrusted {
    Never,
    ComponentChanged,
    ManifestChanged,
    /// An agent type's files other than `type.conf` (its template, plug, launchers) changed.
    TypeFilesChanged,
    /// An agent type's `type.conf` changed.
    TypeConfChanged,
    /// The manifest asks for these beyond what the user consented to.
    Widened(Vec<Capability>),
}

impl std::fmt::Display for Untrusted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Untrusted::Never => f.write_str("not trusted"),
            Untrusted::ComponentChanged => f.write_str("its component changed since it was trusted"),
            Untrusted::ManifestChanged => f.write_str("its manifest changed since it was trusted"),
            Untrusted::TypeFilesChanged => f.write_str("its files (template, plug, other code) changed since it was trusted"),
            Untrusted::TypeConfChanged => f.write_str("its type.conf changed since it was trusted"),
            Untrusted::Widened(more) => {
                let more: Vec<String> = more.iter().map(ToString::to_string).collect();
                write!(f, "it now asks for more than you consented to: {}", more.join(", "))
            }
        }
    }
}

impl super::user_file::UserFile for TrustFile {
    const NAME: &'static str = "trusted-plugins.json";
    const LOCK: &'static str = "trusted-plugins.lock";
    fn empty() -> TrustFile {
        TrustFile { version: 1, plugins: Vec::new() }
    }
}

impl TrustFile {
    /// The state of the plugin `axis/name` found in `dir` with these component and manifest hashes and
    /// the capabilities its manifest declares.
    pub fn state(&self, axis: Axis, name: &str, dir: &Path, hashes: (&str, &str), declared: &Capabilities) -> TrustState {
        let (sha256, manifest_sha256) = hashes;
        let Some(record) = self.record(axis, name, dir) else {
            return TrustState::Untrusted(Untrusted::Never);
        };
        if record.sha256 != sha256 {
            return TrustState::Untrusted(Untrusted::ComponentChanged);
        }
        let widened = declared.beyond(&record.consented);
        if !widened.is_empty() {
            return TrustState::Untrusted(Untrusted::Widened(widened));
        }
        if record.manifest_sha256 != manifest_sha256 {
            return TrustState::Untrusted(Untrusted::ManifestChanged);
        }
        TrustState::Trusted(declared.granted_by(&record.granted))
    }

    pub fn record(&self, axis: Axis, name: &str, dir: &Path) -> Option<&TrustRecord> {
        self.plugins.iter().find(|r| r.axis == axis && r.name == name && r.path == dir)
    }

    /// Trust (or re-trust) a plugin at its path, replacing an earlier record for that path.
    pub fn trust(&mut self, record: TrustRecord) {
        self.plugins.retain(|r| !(r.axis == record.axis && r.name == record.name && r.path == record.path));
        self.plugins.push(record);
    }

    /// Forget every record of `axis/name`; how many there were.
    pub fn untrust(&mut self, axis: Axis, name: &str) -> usize {
        let before = self.plugins.len();
        self.plugins.retain(|r| !(r.axis == axis && r.name == name));
        before - self.plugins.len()
    }
}
