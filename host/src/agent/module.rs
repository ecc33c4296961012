//! The types axis's descriptor for the host's shared commands (see [`crate::axis_module`]): its
//! contract suite (`suite.rs`: the manifest rules for a type, the plug rules for a delivery plug: a
//! type's, a package directory's or a component file's), its bundled plugs and its `driver new`
//! template.

use std::path::{Path, PathBuf};

use super::manifest::TYPE_CONF;
use super::registry::Registry;
use super::suite::{MANIFEST_RULES, PLUG_RULES, PLUG_VAR, TYPE_VAR};
use crate::axis::Axis;
use crate::axis_module::{AxisModule, Reference, ShimFile, Suite, absolute};
use crate::error::HostError;
use crate::plugin::manifest::{MANIFEST_FILE, PluginManifest};
use crate::plugin::registry::sha256_hex;
use crate::runtime::DriverSource;

pub struct AgentModule;

/// `driver new types`: a plug that overrides nothing (every op falls back to agmsg's default).
const TEMPLATE: &[(&str, &str)] = &[
    ("Cargo.toml", include_str!("template/Cargo.toml")),
    ("README.md", include_str!("template/README.md")),
    ("agmsg-driver.toml", include_str!("template/agmsg-driver.toml")),
    ("src/lib.rs", include_str!("template/src/lib.rs")),
];

/// The plug package a directory holds (its `agmsg-driver.toml` of the types axis): its name and its
/// component's absolute path.
fn plug_package(dir: &Path) -> Result<Option<(String, PathBuf)>, HostError> {
    let path = dir.join(MANIFEST_FILE);
    if path.symlink_metadata().is_err() {
        return Ok(None);
    }
    let (manifest, _) = PluginManifest::read(&path)?;
    if manifest.axis != Axis::Types {
        return Err(HostError::refused(format!("{} declares a {} driver, not a delivery plug", path.display(), manifest.axis)));
    }
    let component = dir.join(&manifest.component);
    Ok(Some((manifest.name, PathBuf::from(absolute(&component)?))))
}

/// A delivery plug component file: a type name made from its file name, and its sha256.
fn plug_file(reference: &str) -> Option<(String, String)> {
    let path = Path::new(reference);
    let wasm = crate::plugin::read_file(path, crate::plugin::MAX_COMPONENT_BYTES).ok()?;
    if crate::axis_module::component_axis(&wasm) != Some(Axis::Types) {
        return None;
    }
    let stem = path.file_stem()?.to_string_lossy();
    let name: String = stem.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' }).collect();
    Some((name, sha256_hex(&wasm)))
}

/// How the suite names a type of the registry ([`TYPE_VAR`]).
fn type_var(t: &super::AgentType) -> String {
    match t.origin.dir() {
        None => format!("bundled:{}", t.name),
        Some(dir) => format!("dir:{}", dir.display()),
    }
}

/// The plug of `source` as `--driver` takes it: a bundled plug by name, anything else by its path.
fn plug_var(source: &DriverSource) -> Result<String, HostError> {
    match &source.path {
        Some(path) => absolute(path),
        None => Ok(source.name.clone()),
    }
}

impl AxisModule for AgentModule {
    /// A type directory (it holds `type.conf`) or a plug package directory (an `agmsg-driver.toml` of
    /// this axis), named as a path; or the name of a type, a trusted plug plugin or a bundled plug.
    fn claims(&self, reference: &str) -> bool {
        match Reference::of(reference) {
            Reference::Dir(dir) => dir.join(TYPE_CONF).is_file() || plug_package(dir).is_ok_and(|p| p.is_some()),
            Reference::File(_) => plug_file(reference).is_some(),
            Reference::Name(name) => Registry::from_env().get(name).is_some() || super::delivery::component::source_named(name).is_ok(),
        }
    }

    /// A type's manifest rules, and the plug rules for the plug component that answers for it (its own,
    /// or the one its directory ships); a plug package alone: the plug rules, for the type of its name
    /// (one the user has, else a made-up one with a JSON hooks file); a plug component file: the plug
    /// rules, for a made-up type named after the file.
    fn suite(&self, reference: &str) -> Result<Suite, HostError> {
        let registry = Registry::from_env();
        let (type_ref, plug): (String, Option<(String, String)>) = if let Reference::File(path) = Reference::of(reference) {
            let (name, sha256) = plug_file(reference).ok_or_else(|| {
                HostError::refused(format!("{reference} is not a delivery plug component (it exports no agmsg:agent/driver)"))
            })?;
            (format!("new:{name}"), Some((absolute(path)?, sha256)))
        } else if let Reference::Dir(dir) = Reference::of(reference) {
            let dir = PathBuf::from(absolute(dir)?);
            let package = plug_package(&dir)?;
            let plug = match &package {
                Some((_, component)) => {
                    let wasm = crate::plugin::read_file(component, crate::plugin::MAX_COMPONENT_BYTES)?;
                    Some((component.display().to_string(), sha256_hex(&wasm)))
                }
                None => None,
            };
            if dir.join(TYPE_CONF).is_file() {
                (format!("dir:{}", dir.display()), plug)
            } else {
                let name = package.map(|(name, _)| name).expect("claimed: a type or a plug package");
                (registry.get(&name).map_or_else(|| format!("new:{name}"), type_var), plug)
            }
        } else if let Some(t) = registry.get(reference) {
            let plug = t.plug_component().map(|s| plug_var(&s).map(|p| (p, s.sha256))).transpose()?;
            (type_var(t), plug)
        } else {
            let source = super::delivery::component::source_named(reference)?;
            (format!("new:{reference}"), Some((plug_var(&source)?, source.sha256)))
        };
        let has_manifest = !type_ref.starts_with("new:");
        let rules = MANIFEST_RULES.iter().filter(|_| has_manifest).chain(PLUG_RULES.iter().filter(|_| plug.is_some())).collect();
        let sha256 = match &plug {
            Some((_, sha256)) => sha256.clone(),
            None => match type_ref.strip_prefix("dir:") {
                Some(dir) => sha256_hex(&super::suite::type_conf(Path::new(dir))?),
                None => super::bundled::get(&type_ref["bundled:".len()..]).map(|t| sha256_hex(t.conf.as_bytes())).unwrap_or_default(),
            },
        };
        let driver = if Reference::of(reference).is_path() { absolute(Path::new(reference))? } else { reference.to_owned() };
        let env = vec![(TYPE_VAR.to_owned(), type_ref), (PLUG_VAR.to_owned(), plug.map(|(p, _)| p).unwrap_or_default())];
        Ok(Suite { rules, driver, sha256, env })
    }

    fn template(&self) -> &'static [(&'static str, &'static str)] {
        TEMPLATE
    }

    fn bundled_source(&self, name: &str) -> Option<DriverSource> {
        super::bundled::plug(name)
    }

    fn shim_files(&self, agmsg_dir: &Path, bin: &str) -> Result<Vec<ShimFile>, HostError> {
        Ok(super::delivery::shim::install_files(agmsg_dir, bin))
    }

    fn dir_package(&self) -> Option<&'static dyn crate::plugin::DirPackage> {
        Some(&super::manifest::TypeDirs)
    }

    fn dir_report(&self) -> Option<&'static dyn crate::plugin::commands::DirReport> {
        Some(&super::offer::TypeReport)
    }
}
