//! Where a terminal driver comes from: a trusted plugin, bundled in this binary (component and
//! manifest), or a driver directory named on the command line holding `terminal.conf` and
//! `driver.wasm`; and the capabilities it runs with.

use std::borrow::Cow;
use std::path::Path;

use super::manifest::{DEFAULT_PRIORITY, TerminalManifest};
use crate::axis::Axis;
use crate::axis_module::Reference;
use crate::bundled;
use crate::capabilities::{Capabilities, Capability};
use crate::catalog::Origin;
use crate::plugin::registry::{self, Candidate, sha256_hex};
use crate::runtime::DriverSource;

/// A terminal driver ready to load: its manifest (agmsg's `terminal.conf` keys) and its component. The
/// component runs with, for bundled drivers and directories named on the command line, the programs and
/// variables their `terminal.conf` declares; for a plugin, what it declared AND the user granted.
#[derive(Clone)]
pub struct TerminalSource {
    pub manifest: TerminalManifest,
    pub driver: DriverSource,
    /// Where it comes from, as listings show it (bundled, a trusted plugin's directory, a path).
    pub origin: Origin,
}

impl TerminalSource {
    fn new(manifest: TerminalManifest, sha256: String, wasm: Cow<'static, [u8]>, capabilities: Capabilities, origin: Origin) -> Self {
        let path = match &origin {
            Origin::Path { path } => Some(path.join("driver.wasm")),
            _ => None,
        };
        let driver = DriverSource { name: manifest.name.clone(), sha256, wasm, path, capabilities, settings: Vec::new() };
        TerminalSource { manifest, driver, origin }
    }
}

/// The capabilities a `terminal.conf` declares (programs with any arguments).
fn conf_capabilities(manifest: &TerminalManifest) -> Capabilities {
    let programs = manifest.programs.iter().map(|name| Capability::Program { name: name.clone(), args: None });
    let env = manifest.env.iter().map(|name| Capability::Env { name: name.clone() });
    Capabilities(programs.chain(env).collect())
}

impl TerminalSource {
    /// The bundled drivers, their manifests (the binary's own) parsed once per process: a resident
    /// server's child resolves a driver op after op.
    fn bundled() -> &'static [TerminalSource] {
        static PARSED: std::sync::OnceLock<Vec<TerminalSource>> = std::sync::OnceLock::new();
        PARSED.get_or_init(|| bundled::of(Axis::Terminal).map(Self::of_bundled).collect())
    }

    fn of_bundled(d: &'static bundled::BundledDriver) -> TerminalSource {
        let manifest = TerminalManifest::parse(d.manifest.expect("terminal drivers are bundled with their manifest"))
            .expect("bundled manifests are valid (checked by the test suite)");
        let capabilities = conf_capabilities(&manifest);
        TerminalSource::new(manifest, d.sha256.to_owned(), Cow::Borrowed(d.wasm), capabilities, Origin::Bundled)
    }

    /// Every driver detection may pick, in resolution order (priority ascending, then name): the
    /// catalog's rows ([`crate::catalog::read`]: the bundled ones, each shadowed by a trusted plugin of
    /// the same name, and trusted plugins), every passed-over plugin warned about on the host log.
    pub fn available() -> Vec<TerminalSource> {
        Self::from_catalog().0
    }

    /// What `terminal list` shows, from one read of the plugin directories: [`TerminalSource::available`]
    /// and the plugins that would run once trusted (the catalog's untrusted rows); an error when the
    /// plugins cannot be read at all (the trust file cannot), as `storage list` fails then.
    pub fn listing() -> Result<(Vec<TerminalSource>, Vec<crate::catalog::Entry>), String> {
        match Self::from_catalog() {
            (_, _, Some(unread)) => Err(unread),
            (all, untrusted, None) => Ok((all, untrusted)),
        }
    }

    fn from_catalog() -> (Vec<TerminalSource>, Vec<crate::catalog::Entry>, Option<String>) {
        let catalog = crate::catalog::read(Axis::Terminal, crate::catalog::Sources::bundled_and_plugins(Axis::Terminal, &[]));
        for warning in catalog.plugins_unread.iter().chain(&catalog.warnings) {
            crate::log::host_log::warn(warning);
        }
        let mut all: Vec<TerminalSource> = catalog
            .rows
            .into_iter()
            .filter_map(|row| match row.plugin {
                Some(plugin) => Some(Self::from_plugin(plugin)),
                None => bundled::of(Axis::Terminal).find(|d| d.name == row.entry.name).map(Self::of_bundled),
            })
            .collect();
        all.sort_by(|a, b| (a.manifest.priority, &a.manifest.name).cmp(&(b.manifest.priority, &b.manifest.name)));
        (all, catalog.untrusted, catalog.plugins_unread)
    }

    /// The names of [`TerminalSource::available`] drivers.
    pub fn names(available: &[TerminalSource]) -> Vec<&str> {
        available.iter().map(|d| d.manifest.name.as_str()).collect()
    }

    /// A bundled driver by name (never a plugin).
    pub fn resolve_bundled(name: &str) -> Option<TerminalSource> {
        Self::bundled().iter().find(|d| d.manifest.name == name).cloned()
    }

    /// A trusted plugin (the registry has checked it can run): agmsg's manifest keys come from its
    /// `[terminal]` table.
    fn from_plugin(plugin: Candidate) -> TerminalSource {
        let declared = plugin.manifest.clone().expect("a plugin that can run has a manifest");
        let origin = Origin::Plugin { dir: plugin.dir.clone() };
        let driver = plugin.into_source().expect("a terminal plugin that can run has its component");
        let capabilities = &driver.capabilities;
        let keys = declared.terminal.clone().unwrap_or_default();
        let manifest = TerminalManifest {
            name: declared.name.clone(),
            priority: keys.priority.unwrap_or(DEFAULT_PRIORITY),
            backend: keys.backend,
            capabilities: keys.capabilities,
            programs: capabilities.programs().map(|(name, _)| name.to_owned()).collect(),
            env: capabilities.env().map(str::to_owned).collect(),
        };
        TerminalSource { manifest, driver, origin }
    }

    fn from_dir(dir: &Path) -> Result<TerminalSource, String> {
        let read = |file: &str, max: u64| crate::plugin::read_file(&dir.join(file), max).map_err(|e| e.message);
        let manifest = String::from_utf8(read("terminal.conf", crate::plugin::MAX_TEXT_BYTES)?)
            .map_err(|_| format!("{}/terminal.conf is not UTF-8", dir.display()))?;
        let manifest = TerminalManifest::parse(&manifest).map_err(|e| format!("{}/terminal.conf: {e}", dir.display()))?;
        let wasm = read("driver.wasm", crate::plugin::MAX_COMPONENT_BYTES)?;
        let capabilities = conf_capabilities(&manifest);
        Ok(TerminalSource::new(manifest, sha256_hex(&wasm), Cow::Owned(wasm), capabilities, Origin::Path { path: dir.to_owned() }))
    }
}

/// The terminal drivers an op may run on, read only as far as the op needs: a driver named (`--driver`,
/// the override variable, a placement reference's scheme) is looked up alone, reading and hashing only
/// the plugin directories of its name; every driver ([`TerminalSource::available`]: each plugin read,
/// hashed and its trust checked) only when detection must try them in turn, or a listing or an error
/// shows them. So an op's cost does not grow with the plugins installed, and a broken plugin of another
/// name is never read by it.
#[derive(Default)]
pub struct Candidates {
    all: std::cell::OnceCell<Vec<TerminalSource>>,
    /// The names, as [`Candidates::names`] first found them: an op resolves its driver and its id from
    /// one listing of the plugin directories.
    names: std::cell::OnceCell<Vec<String>>,
}

impl Candidates {
    pub fn new() -> Self {
        Self::default()
    }

    /// Every driver detection may pick, in resolution order (read on first use).
    pub fn all(&self) -> &[TerminalSource] {
        self.all.get_or_init(TerminalSource::available)
    }

    /// The names a placement reference may start with: the bundled drivers' and those of the plugin
    /// directories (found, not read: one that turns out untrusted is refused when resolved, with the
    /// command that trusts it).
    pub fn names(&self) -> Vec<String> {
        if let Some(all) = self.all.get() {
            return all.iter().map(|d| d.manifest.name.clone()).collect();
        }
        let listed = self.names.get_or_init(|| {
            let mut names: Vec<String> = bundled::of(Axis::Terminal).map(|d| d.name.to_owned()).collect();
            for name in registry::names(Axis::Terminal) {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
            names
        });
        listed.clone()
    }

    /// `name` is a driver name (a trusted plugin of that name, else the bundled driver), or else the
    /// path of a driver directory (`./mine`, `.`, `/abs/dir`). A directory that merely has a driver's
    /// name in the current directory is never picked up: that would let any checkout run as `tmux`.
    pub fn resolve(&self, name: &str) -> Result<TerminalSource, String> {
        if let Reference::Dir(dir) | Reference::File(dir) = Reference::of(name) {
            return TerminalSource::from_dir(dir);
        }
        if let Some(all) = self.all.get() {
            return all.iter().find(|d| d.manifest.name == name).cloned().ok_or_else(|| unknown(name, all));
        }
        let plugin = registry::find(Axis::Terminal, name, &[]).unwrap_or_else(|e| {
            crate::log::host_log::warn(&e.message);
            None
        });
        match plugin {
            Some(plugin) => Ok(TerminalSource::from_plugin(plugin)),
            None => TerminalSource::resolve_bundled(name).ok_or_else(|| unknown(name, self.all())),
        }
    }
}

fn unknown(name: &str, available: &[TerminalSource]) -> String {
    format!(
        "unknown terminal driver '{name}' (available: {}; `agmsg-host plugin list` shows plugins)",
        TerminalSource::names(available).join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::{Origin, TerminalSource};

    /// A resolved driver says where it came from, as `terminal list` shows it: bundled, or the
    /// directory it was named by (a trusted plugin's is its plugin directory: tests/plugin.rs).
    #[test]
    fn a_resolved_driver_carries_its_origin() {
        assert_eq!(TerminalSource::resolve_bundled("tmux").map(|s| s.origin), Some(Origin::Bundled));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("terminal.conf"), "name=mine\npriority=50\nbackend=mine\ncapabilities=\nprograms=\nenv=\n").unwrap();
        std::fs::write(dir.path().join("driver.wasm"), b"\0asm").unwrap();
        let source = super::Candidates::new().resolve(dir.path().to_str().unwrap()).unwrap();
        assert_eq!(source.origin, Origin::Path { path: dir.path().to_owned() });
        assert_eq!(source.origin.word(), "path");
        assert_eq!(source.driver.path, Some(dir.path().join("driver.wasm")));
    }
}
