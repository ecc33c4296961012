//! Where a storage driver's component comes from: bundled in this binary, or a `.wasm` file.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::OpError;
use crate::bundled::BUNDLED_STORAGE;

/// A driver component ready to load.
pub struct DriverSource {
    pub name: String,
    pub sha256: String,
    pub wasm: Cow<'static, [u8]>,
    pub path: Option<PathBuf>,
}

impl DriverSource {
    /// `name` is a bundled driver's name, or the path of a component file (anything with a `/` or
    /// ending in `.wasm`), which runs with the same sandbox as a bundled driver.
    pub fn resolve(name: &str) -> Result<DriverSource, OpError> {
        if name.contains('/') || name.ends_with(".wasm") {
            return Self::from_file(Path::new(name));
        }
        BUNDLED_STORAGE
            .iter()
            .find(|d| d.name == name)
            .map(|d| DriverSource { name: d.name.to_owned(), sha256: d.sha256.to_owned(), wasm: Cow::Borrowed(d.wasm), path: None })
            .ok_or_else(|| {
                let known: Vec<_> = BUNDLED_STORAGE.iter().map(|d| d.name).collect();
                OpError::runtime(format!("unknown storage driver '{name}' (available: {})", known.join(", ")))
            })
    }

    fn from_file(path: &Path) -> Result<DriverSource, OpError> {
        let wasm = std::fs::read(path)
            .map_err(|e| OpError::runtime(format!("cannot read driver component {}: {e}", path.display())))?;
        let sha256 = Sha256::digest(&wasm).iter().map(|b| format!("{b:02x}")).collect();
        let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "driver".into());
        Ok(DriverSource { name, sha256, wasm: Cow::Owned(wasm), path: Some(path.to_owned()) })
    }
}
