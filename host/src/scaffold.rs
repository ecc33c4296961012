//! `driver new`'s workflow: a ready cargo project for a driver of an axis, written from the axis's
//! template (`host/src/<axis>/template/`, compiled into the binary). The binary parses and prints; the
//! classes are chosen here: a bad argument (the name, `--sdk`, a `--path` that is not empty) is a usage
//! error, a directory or file that cannot be written is a failure of the command, not of its line.

use std::path::{Path, PathBuf};

use crate::axis::Axis;
use crate::error::HostError;

/// An agmsg driver name (the contract's rule) that is also a conventional cargo package name: cargo
/// refuses a leading digit, '-' or '_', and rustc warns about an uppercase crate name.
pub fn valid_name(name: &str) -> bool {
    agmsg_contract::is_driver_name(name)
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.contains(|c: char| c.is_ascii_uppercase())
}

/// The SDK this binary was built with, when its source is still where it was built.
fn default_sdk() -> Option<PathBuf> {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../guest-sdk")).canonicalize().ok()
}

/// Write the project for the `axis` driver `name` into `path` (default: `./<name>`), depending on the
/// guest SDK at `sdk` (default: the one this binary was built with); the directory written.
pub fn create(axis: Axis, name: &str, path: Option<PathBuf>, sdk: Option<PathBuf>) -> Result<PathBuf, HostError> {
    if !valid_name(name) {
        return Err(HostError::usage(format!(
            "the name must be lowercase letters, digits, '-' and '_', starting with a letter, not {name:?}"
        )));
    }
    let sdk = match sdk {
        Some(sdk) => sdk.canonicalize().map_err(|e| HostError::usage(format!("--sdk {}: {e}", sdk.display())))?,
        None => default_sdk().ok_or_else(|| HostError::usage("cannot find agmsg-host's guest-sdk: pass --sdk <path to guest-sdk>"))?,
    };
    if !sdk.join("Cargo.toml").is_file() {
        return Err(HostError::usage(format!("{} is not the guest-sdk crate (no Cargo.toml)", sdk.display())));
    }
    let dir = path.unwrap_or_else(|| PathBuf::from(name));
    if dir.read_dir().is_ok_and(|mut entries| entries.next().is_some()) {
        return Err(HostError::usage(format!("{} exists and is not empty", dir.display())));
    }
    let sdk_text = sdk.to_str().ok_or_else(|| HostError::usage("the SDK's path is not UTF-8"))?;
    let fill = |text: &str| {
        text.replace("{{crate_file}}", &name.replace('-', "_"))
            .replace("{{crate}}", name)
            .replace("{{name}}", name)
            .replace("{{sdk}}", &sdk_text.replace('\\', "\\\\").replace('"', "\\\""))
    };
    for (relative, template) in crate::module(axis).template() {
        let target = dir.join(relative);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| HostError::refused(format!("cannot create {}: {e}", parent.display())))?;
        }
        std::fs::write(&target, fill(template)).map_err(|e| HostError::refused(format!("cannot write {}: {e}", target.display())))?;
    }
    Ok(dir)
}
