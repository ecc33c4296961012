//! Where a storage driver's component comes from: a trusted plugin, bundled in this binary, or a
//! `.wasm` file named on the command line; and the capabilities it runs with.

use std::borrow::Cow;
use std::path::Path;

use super::OpError;
use crate::runtime::DriverSource;
use crate::bundled;
use crate::capabilities::{Capabilities, Capability};
use crate::axis::Axis;
use crate::plugin::registry::{self, Candidate, sha256_hex};

/// `name` is the path of a component file (anything with a `/` or ending in `.wasm`), or a driver name: a
/// trusted plugin of that name (which shadows a bundled driver), else a bundled driver.
pub fn resolve(name: &str) -> Result<DriverSource, OpError> {
    if is_file_reference(name) {
        return from_file(Path::new(name));
    }
    if let Some(plugin) = registry::find(Axis::Storage, name).map_err(OpError::runtime)? {
        return Ok(from_plugin(plugin));
    }
    bundled_driver(name).ok_or_else(|| {
        let mut known: Vec<String> = bundled::of(Axis::Storage).map(|d| d.name.to_owned()).collect();
        if let Ok(plugins) = registry::candidates(Axis::Storage, None) {
            known.extend(plugins.into_iter().filter(|c| c.problem().is_none()).map(|c| c.name));
        }
        OpError::runtime(format!(
            "unknown storage driver '{name}' (available: {}; `agmsg-host plugin list` shows plugins)",
            known.join(", ")
        ))
    })
}

/// Whether `reference` names a component file (anything with a `/` or ending in `.wasm`), not a driver.
pub fn is_file_reference(reference: &str) -> bool {
    reference.contains('/') || reference.ends_with(".wasm")
}

/// The bundled driver `name`: it runs with its store, and nothing else.
pub fn bundled_driver(name: &str) -> Option<DriverSource> {
    bundled::of(Axis::Storage).find(|d| d.name == name).map(|d| DriverSource {
        name: d.name.to_owned(),
        sha256: d.sha256.to_owned(),
        wasm: Cow::Borrowed(d.wasm),
        path: None,
        capabilities: Capabilities(vec![Capability::Store]),
    })
}

/// A trusted plugin (the registry has checked it can run).
fn from_plugin(plugin: Candidate) -> DriverSource {
    let path = plugin.component();
    let capabilities = plugin.runs_with();
    DriverSource {
        name: plugin.name,
        sha256: plugin.sha256.unwrap_or_default(),
        wasm: Cow::Owned(plugin.wasm.unwrap_or_default()),
        path,
        capabilities,
    }
}

fn from_file(path: &Path) -> Result<DriverSource, OpError> {
    let wasm = crate::plugin::read_file(path, crate::plugin::MAX_COMPONENT_BYTES)
        .map_err(|e| OpError::runtime(format!("driver component: {e}")))?;
    let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "driver".into());
    Ok(DriverSource {
        name,
        sha256: sha256_hex(&wasm),
        wasm: Cow::Owned(wasm),
        path: Some(path.to_owned()),
        // A file the user named has no manifest to ask for more: its store, and sockets linked
        // but inert (so a language runtime that imports them, like CPython's, still loads).
        capabilities: Capabilities(vec![Capability::Store, Capability::InertSockets]),
    })
}
