//! What an axis's host module provides to the parts of the host that serve every axis: `driver test`
//! (its contract suite), `driver new` (its project template), and `plugin list` / `inspect` (what a
//! bundled driver runs with). Each axis implements [`AxisModule`] in its own folder; [`crate::compose::module`]
//! maps an [`crate::axis::Axis`] to it, with one exhaustive `match`.

use agmsg_conformance::Rule;

use crate::error::HostError;
use crate::runtime::DriverSource;

/// A driver's contract suite, ready to run.
pub struct Suite {
    /// The rules it must pass.
    pub rules: Vec<&'static Rule>,
    /// The driver as the rules pass it to `--driver` (a path made absolute: rules run in their own
    /// directories).
    pub driver: String,
    /// Its component's sha256.
    pub sha256: String,
    /// Variables every rule's runs get (see [`agmsg_conformance::Harness::env`]): what the axis's rules
    /// need beside a fresh home to reach the driver (postgres: its database; types: the type and plug
    /// under test).
    pub env: Vec<(String, String)>,
}

/// A file `shim install` puts into agmsg's install directory for an axis's driver (or leaves out):
/// agmsg sources it in place of its own driver and it forwards to agmsg-host (`crate::shim`).
#[derive(Debug)]
pub struct ShimFile {
    /// Relative to agmsg's directory: below `scripts/drivers/`, where agmsg's loaders look.
    pub path: String,
    /// Its text, or why it is left out (agmsg-host cannot answer for that driver).
    pub text: Result<String, String>,
    /// What agmsg loses with it in place, said beside it.
    pub warnings: Vec<String>,
    /// Written only where agmsg already has the file's directory (a type's: agmsg reads no type it
    /// does not have), else left out saying this.
    pub only_in_existing_dir: Option<&'static str>,
}

/// An axis's host-side descriptor.
pub trait AxisModule: Sync {
    /// Whether `reference` (a driver name, a component file, a driver directory) names a driver of this
    /// axis, without loading it.
    fn claims(&self, reference: &str) -> bool;

    /// The contract suite for the driver `reference` names; a driver that cannot be read or set up for
    /// it is refused (`driver test`'s failure), whatever class the same failure has in an op.
    fn suite(&self, reference: &str) -> Result<Suite, HostError>;

    /// The cargo project `driver new` writes: (path relative to the project, template text), where the
    /// text's `{{name}}`, `{{crate}}` and `{{sdk}}` are filled in.
    fn template(&self) -> &'static [(&'static str, &'static str)];

    /// The bundled driver `name` as it runs (its fixed capabilities), if this binary has one.
    fn bundled_source(&self, name: &str) -> Option<DriverSource>;

    /// The shims `shim install` writes for this axis's drivers into the agmsg install `agmsg_dir`, each
    /// running the agmsg-host at `bin` (`crate::shim::install`).
    fn shim_files(&self, agmsg_dir: &std::path::Path, bin: &str) -> Result<Vec<ShimFile>, HostError>;

    /// How plugin/ reads a plugin directory that is a package of this axis's own kind (an agent type),
    /// if the axis has such packages ([`crate::axis::Axis::dir_manifest`]).
    fn dir_package(&self) -> Option<&'static dyn crate::plugin::DirPackage> {
        None
    }

    /// What `plugin install | trust | inspect` show of such a package (an agent type's description).
    fn dir_report(&self) -> Option<&'static dyn crate::plugin::commands::DirReport> {
        None
    }
}

/// What a driver reference on the command line (`--driver`, `driver test`, a configured driver) is:
/// the one rule every axis applies. A driver name (the contract's alphabet, `[a-zA-Z0-9_-]+`) is a
/// name, looked up among the axis's drivers, never in the current directory (a checkout that merely
/// has a driver's name must not run as it); anything else is a path: a directory (a terminal driver's,
/// an agent type's, a plug package's) or else a file (a component).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reference<'a> {
    Name(&'a str),
    Dir(&'a std::path::Path),
    File(&'a std::path::Path),
}

impl<'a> Reference<'a> {
    pub fn of(reference: &'a str) -> Reference<'a> {
        let path = std::path::Path::new(reference);
        if agmsg_contract::is_driver_name(reference) {
            Reference::Name(reference)
        } else if path.is_dir() {
            Reference::Dir(path)
        } else {
            Reference::File(path)
        }
    }

    /// Whether it names a path rather than a driver.
    pub fn is_path(self) -> bool {
        !matches!(self, Reference::Name(_))
    }
}

/// A path made absolute, for a rule that runs in its own directory.
pub fn absolute(path: &std::path::Path) -> Result<String, HostError> {
    std::path::absolute(path).map(|p| p.display().to_string()).map_err(|e| HostError::refused(format!("{}: {e}", path.display())))
}

/// The axis a component is a driver of: the one whose driver interface (`<package>/driver@<version>`)
/// it exports, read from the component's own export section without compiling it. `None` for bytes
/// that are no component, or export no axis's driver interface.
pub fn component_axis(wasm: &[u8]) -> Option<crate::axis::Axis> {
    let mut exports = Vec::new();
    // Nested modules and components come inline between their section and their `End`: only the
    // outermost component's exports count.
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(wasm) {
        match payload.ok()? {
            wasmparser::Payload::ModuleSection { .. } | wasmparser::Payload::ComponentSection { .. } => depth += 1,
            wasmparser::Payload::End(_) => depth = depth.saturating_sub(1),
            wasmparser::Payload::ComponentExportSection(reader) if depth == 0 => {
                for export in reader {
                    exports.push(export.ok()?.name.name.to_owned());
                }
            }
            _ => {}
        }
    }
    crate::axis::Axis::ALL.into_iter().find(|axis| {
        let driver = format!("{}/{}@", axis.package(), axis.contract_interfaces().exported);
        exports.iter().any(|name| name.starts_with(&driver))
    })
}

#[cfg(test)]
mod tests {
    use super::component_axis;
    use crate::axis::Axis;

    #[test]
    fn a_component_names_its_axis_by_the_driver_interface_it_exports() {
        for axis in Axis::ALL {
            for driver in crate::bundled::of(axis) {
                assert_eq!(component_axis(driver.wasm), Some(axis), "{}", driver.name);
            }
        }
        assert_eq!(component_axis(b"not a component"), None);
        assert_eq!(component_axis(&wat::parse_str("(module)").unwrap()), None, "a core module exports no interface");
    }

    /// One rule on every axis: a driver name is a name even where a directory of that name exists; any
    /// other text is a path, a directory if it is one, else a file.
    #[test]
    fn a_reference_is_a_name_a_directory_or_a_file() {
        use super::Reference;
        use std::path::Path;
        let dir = tempfile::tempdir().unwrap();
        let named = dir.path().join("tmux");
        std::fs::create_dir(&named).unwrap();
        let here = std::env::current_dir().unwrap();
        assert_eq!(Reference::of("tmux"), Reference::Name("tmux"));
        assert_eq!(Reference::of("my_driver-2"), Reference::Name("my_driver-2"));
        let path = named.to_str().unwrap();
        assert_eq!(Reference::of(path), Reference::Dir(Path::new(path)));
        assert_eq!(Reference::of("."), Reference::Dir(Path::new(".")), "{}", here.display());
        assert_eq!(Reference::of("driver.wasm"), Reference::File(Path::new("driver.wasm")));
        assert_eq!(Reference::of("./nowhere"), Reference::File(Path::new("./nowhere")));
        assert!(Reference::of("x.y").is_path() && !Reference::of("sqlite").is_path());
    }
}
