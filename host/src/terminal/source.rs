//! Where a terminal driver comes from: bundled in this binary (component and manifest), or a driver
//! directory holding `terminal.conf` and `driver.wasm`.

use std::borrow::Cow;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::manifest::TerminalManifest;
use crate::bundled::BUNDLED_TERMINAL;

/// A terminal driver ready to load: its manifest (and so its grants) and its component.
pub struct TerminalSource {
    pub manifest: TerminalManifest,
    pub sha256: String,
    pub wasm: Cow<'static, [u8]>,
}

impl TerminalSource {
    /// Every bundled driver, in resolution order: priority ascending, then name.
    pub fn bundled() -> Vec<TerminalSource> {
        let mut all: Vec<TerminalSource> = BUNDLED_TERMINAL
            .iter()
            .map(|d| TerminalSource {
                manifest: TerminalManifest::parse(d.manifest.expect("terminal drivers are bundled with their manifest"))
                    .expect("bundled manifests are valid (checked by the test suite)"),
                sha256: d.sha256.to_owned(),
                wasm: Cow::Borrowed(d.wasm),
            })
            .collect();
        all.sort_by(|a, b| (a.manifest.priority, &a.manifest.name).cmp(&(b.manifest.priority, &b.manifest.name)));
        all
    }

    pub fn bundled_names() -> Vec<&'static str> {
        BUNDLED_TERMINAL.iter().map(|d| d.name).collect()
    }

    /// `name` is a bundled driver's name, or a driver directory (anything with a `/`, or a directory
    /// holding `terminal.conf`, such as `.`).
    pub fn resolve(name: &str) -> Result<TerminalSource, String> {
        if name.contains('/') || Path::new(name).join("terminal.conf").is_file() {
            return Self::from_dir(Path::new(name));
        }
        Self::bundled().into_iter().find(|d| d.manifest.name == name).ok_or_else(|| {
            format!("unknown terminal driver '{name}' (available: {})", Self::bundled_names().join(", "))
        })
    }

    fn from_dir(dir: &Path) -> Result<TerminalSource, String> {
        let read = |file: &str| std::fs::read(dir.join(file)).map_err(|e| format!("cannot read {}: {e}", dir.join(file).display()));
        let manifest = String::from_utf8(read("terminal.conf")?).map_err(|_| format!("{}/terminal.conf is not UTF-8", dir.display()))?;
        let manifest = TerminalManifest::parse(&manifest).map_err(|e| format!("{}/terminal.conf: {e}", dir.display()))?;
        let wasm = read("driver.wasm")?;
        let sha256 = Sha256::digest(&wasm).iter().map(|b| format!("{b:02x}")).collect();
        Ok(TerminalSource { manifest, sha256, wasm: Cow::Owned(wasm) })
    }
}
