//! Where a storage driver's component comes from: a trusted plugin, bundled in this binary, or a
//! `.wasm` file named on the command line; and the capabilities it runs with.

use std::borrow::Cow;
use std::path::Path;

use super::{StorageError, bundled_drivers, location};
use crate::axis::Axis;
use crate::axis_module::Reference;
use crate::bundled;
use crate::capabilities::{Capabilities, Capability};
use crate::plugin::registry::{self, Candidate, sha256_hex};
use crate::runtime::DriverSource;

/// `name` is the path of a component file (anything but a driver name: [`Reference`]), or a driver name: a
/// trusted plugin of that name (which shadows a bundled driver), else a bundled driver. For the shared
/// store; see [`resolve_at`].
pub fn resolve(name: &str) -> Result<DriverSource, StorageError> {
    resolve_at(name, None, None)
}

/// [`resolve`] for the store of `partition` (a per-team partition's team, `None` for the shared store).
/// A bundled driver with host settings ([`bundled_drivers::settings`]: postgres, which has no store
/// directory) is configured by its hook for the partition, `location` (`storage switch --url`) else
/// its config table saying where its store is.
pub fn resolve_at(name: &str, partition: Option<&str>, location: Option<&str>) -> Result<DriverSource, StorageError> {
    if let Reference::File(path) | Reference::Dir(path) = Reference::of(name) {
        return from_file(path);
    }
    if let Some(plugin) = registry::find(Axis::Storage, name, &[]).map_err(|e| StorageError::runtime(e.message))? {
        return Ok(from_plugin(plugin));
    }
    if let Some(mut source) = bundled_source(name) {
        if let Some(settings) = bundled_drivers::settings(name) {
            (settings.configure)(&mut source, partition, location, &|| location::driver_config(name))?;
        }
        return Ok(source);
    }
    Err({
        // What `storage list` shows as selectable, from the same enumeration (a trusted plugin shadowing
        // a bundled driver named once).
        let known: Vec<String> = match crate::catalog::entries(Axis::Storage, &[]) {
            Ok(entries) => entries.into_iter().filter(|e| e.origin.runs()).map(|e| e.name).collect(),
            Err(_) => bundled::of(Axis::Storage).map(|d| d.name.to_owned()).collect(),
        };
        StorageError::runtime(format!(
            "unknown storage driver '{name}' (available: {}; `agmsg-host plugin list` shows plugins)",
            known.join(", ")
        ))
    })
}

/// What the contract suite's runs need beside a fresh home to reach `driver`'s store (`driver test`):
/// nothing for a store directory or a plugin; for a bundled driver with host settings, what its hook
/// says (postgres: the configured database and a namespace of its own per rule).
pub fn suite_env(driver: &str) -> Result<Vec<(String, String)>, StorageError> {
    let Some(settings) = bundled_drivers::settings(driver) else { return Ok(Vec::new()) };
    if registry::find(Axis::Storage, driver, &[]).map_err(|e| StorageError::runtime(e.message))?.is_some() {
        return Ok(Vec::new());
    }
    (settings.suite_env)(&|| location::driver_config(driver))
}

/// The bundled driver `name`, as it runs for the shared store: with its store, and nothing else; a
/// driver with host settings as they configure it (or, when they cannot, as they leave it: postgres
/// with a broken database has no network at all; [`resolve`] reports why).
pub fn bundled_driver(name: &str) -> Option<DriverSource> {
    let mut source = bundled_source(name)?;
    if let Some(settings) = bundled_drivers::settings(name)
        && (settings.configure)(&mut source, None, None, &|| location::driver_config(name)).is_err()
    {
        (settings.unconfigured)(&mut source);
    }
    Some(source)
}

fn bundled_source(name: &str) -> Option<DriverSource> {
    bundled::of(Axis::Storage).find(|d| d.name == name).map(|d| DriverSource {
        name: d.name.to_owned(),
        sha256: d.sha256.to_owned(),
        wasm: Cow::Borrowed(d.wasm),
        path: None,
        capabilities: Capabilities(vec![Capability::Store]),
        settings: Vec::new(),
    })
}

/// A trusted plugin (the registry has checked it can run).
fn from_plugin(plugin: Candidate) -> DriverSource {
    plugin.into_source().expect("a storage plugin that can run has its component")
}

fn from_file(path: &Path) -> Result<DriverSource, StorageError> {
    let wasm = crate::plugin::read_file(path, crate::plugin::MAX_COMPONENT_BYTES)
        .map_err(|e| StorageError::runtime(format!("driver component: {e}")))?;
    let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "driver".into());
    Ok(DriverSource {
        name,
        sha256: sha256_hex(&wasm),
        wasm: Cow::Owned(wasm),
        path: Some(path.to_owned()),
        // A file the user named has no manifest to ask for more: its store, and sockets linked
        // but inert (so a language runtime that imports them, like CPython's, still loads).
        capabilities: Capabilities(vec![Capability::Store, Capability::InertSockets]),
        settings: Vec::new(),
    })
}

/// One row of `storage list`: the catalog's entry and, for a driver that runs, what it says of itself
/// (`describe`'s backend and capabilities) or why it cannot say.
pub struct Listed {
    pub entry: crate::catalog::Entry,
    pub backend: Result<(String, Vec<String>), StorageError>,
}

/// Every storage driver the catalog lists, each that runs described against the shared store (a fresh
/// empty stand-in per driver where the store does not exist, so that listing never creates it), all in
/// one runtime. An entry that cannot be resolved or a store that cannot be opened fails the listing.
pub fn listed(store_flag: Option<std::path::PathBuf>) -> Result<Vec<Listed>, StorageError> {
    let entries = crate::catalog::entries(Axis::Storage, &[]).map_err(StorageError::runtime)?;
    let place = location::StorePlace::shared(location::store_dir(store_flag)?);
    let mut runtime = None;
    let mut rows = Vec::new();
    for entry in entries {
        if !entry.origin.runs() {
            rows.push(Listed { entry, backend: Ok((String::new(), Vec::new())) });
            continue;
        }
        let source = resolve(&entry.name)?;
        let runtime = match &runtime {
            Some(runtime) => runtime,
            None => runtime.insert(crate::runtime::Runtime::from_env().map_err(StorageError::runtime)?),
        };
        let (grant, _empty) = match place.open(false)? {
            Some(dir) => (dir, None),
            None => {
                let empty = tempfile::Builder::new()
                    .prefix("agmsg-host-empty-")
                    .tempdir()
                    .map_err(|e| StorageError::runtime(format!("cannot create an empty sandbox directory: {e}")))?;
                let dir = crate::runtime::sandbox::StoreDir::open(empty.path())
                    .map_err(|e| StorageError::runtime(format!("cannot open an empty sandbox directory: {e}")))?;
                (dir, Some(empty))
            }
        };
        let backend = super::Storage::open(runtime, &source, grant).and_then(|mut d| d.describe()).map(|d| (d.backend, d.capabilities));
        rows.push(Listed { entry, backend });
    }
    Ok(rows)
}
