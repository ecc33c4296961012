//! The storage axis's descriptor for the host's shared commands (see [`crate::axis_module`]).

use crate::axis_module::{AxisModule, Reference, ShimFile, Suite, absolute};
use crate::error::HostError;
use crate::runtime::DriverSource;

pub struct StorageModule;

/// `driver new storage`: a small working store.
const TEMPLATE: &[(&str, &str)] = &[
    ("Cargo.toml", include_str!("template/Cargo.toml")),
    ("README.md", include_str!("template/README.md")),
    ("agmsg-driver.toml", include_str!("template/agmsg-driver.toml")),
    ("src/lib.rs", include_str!("template/src/lib.rs")),
];

impl AxisModule for StorageModule {
    /// A component file, or the name of a bundled or trusted storage driver.
    fn claims(&self, reference: &str) -> bool {
        match Reference::of(reference) {
            Reference::File(path) => path.is_file(),
            Reference::Dir(_) => false,
            Reference::Name(_) => super::source::resolve(reference).is_ok(),
        }
    }

    fn suite(&self, reference: &str) -> Result<Suite, HostError> {
        let source = super::source::resolve(reference).map_err(|e| HostError::refused(e.message))?;
        let driver = match &source.path {
            Some(path) => absolute(path)?,
            None => source.name.clone(),
        };
        let env = super::source::suite_env(&driver).map_err(|e| HostError::refused(e.message))?;
        Ok(Suite { rules: super::suite::RULES.iter().collect(), driver, sha256: source.sha256, env })
    }

    fn template(&self) -> &'static [(&'static str, &'static str)] {
        TEMPLATE
    }

    fn bundled_source(&self, name: &str) -> Option<DriverSource> {
        super::source::bundled_driver(name)
    }

    fn shim_files(&self, _agmsg_dir: &std::path::Path, bin: &str) -> Result<Vec<ShimFile>, HostError> {
        super::shim::install_files(bin)
    }
}
