//! The terminal axis's descriptor for the host's shared commands (see [`crate::axis_module`]).

use std::path::Path;

use super::source::{Candidates, TerminalSource};
use crate::axis_module::{AxisModule, Reference, ShimFile, Suite, absolute};
use crate::error::HostError;
use crate::runtime::DriverSource;

pub struct TerminalModule;

/// `driver new terminal`: a driver that answers "unsupported" to every op.
const TEMPLATE: &[(&str, &str)] = &[
    ("Cargo.toml", include_str!("template/Cargo.toml")),
    ("README.md", include_str!("template/README.md")),
    ("terminal.conf", include_str!("template/terminal.conf")),
    ("agmsg-driver.toml", include_str!("template/agmsg-driver.toml")),
    ("src/lib.rs", include_str!("template/src/lib.rs")),
];

/// Whether `reference` is a driver directory (it holds a `terminal.conf`).
fn is_driver_dir(reference: &str) -> bool {
    matches!(Reference::of(reference), Reference::Dir(dir) if dir.join("terminal.conf").is_file())
}

impl AxisModule for TerminalModule {
    /// A driver directory, or the name of a bundled or trusted terminal driver.
    fn claims(&self, reference: &str) -> bool {
        is_driver_dir(reference) || Candidates::new().names().iter().any(|n| n == reference)
    }

    /// The rules that need no terminal; for a driver that may run tmux (tmux-like), also the pane rules,
    /// against a private tmux server.
    fn suite(&self, reference: &str) -> Result<Suite, HostError> {
        let source = Candidates::new().resolve(reference).map_err(HostError::refused)?;
        let driver = if is_driver_dir(reference) { absolute(Path::new(reference))? } else { reference.to_owned() };
        let runs_tmux = source.driver.capabilities.programs().any(|(program, _)| program == "tmux");
        let pane_rules: &[agmsg_conformance::Rule] = if runs_tmux { agmsg_conformance::tmux::PANE_RULES } else { &[] };
        let rules = super::suite::RULES.iter().chain(pane_rules).collect();
        Ok(Suite { rules, driver, sha256: source.driver.sha256, env: Vec::new() })
    }

    fn template(&self) -> &'static [(&'static str, &'static str)] {
        TEMPLATE
    }

    fn bundled_source(&self, name: &str) -> Option<DriverSource> {
        TerminalSource::resolve_bundled(name).map(|source| source.driver)
    }

    fn shim_files(&self, _agmsg_dir: &Path, bin: &str) -> Result<Vec<ShimFile>, HostError> {
        super::shim::install_files(bin)
    }
}
