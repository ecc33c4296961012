//! `agmsg-host driver new <axis> <name>`: a ready cargo project for a driver, from the axis's template
//! (`host/src/<axis>/template/`, compiled into the binary). As generated, the storage driver is a small working
//! store, the terminal driver answers "unsupported" to every op, and the delivery plug (types) overrides
//! nothing (agmsg's defaults); each passes `driver test`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::exit;
use agmsg_host::axis::Axis;
use agmsg_host::error::HostError;

/// An agmsg driver name (the contract's rule) that is also a conventional cargo package name: cargo
/// refuses a leading digit, '-' or '_', and rustc warns about an uppercase crate name.
fn valid_name(name: &str) -> bool {
    agmsg_contract::is_driver_name(name) && name.starts_with(|c: char| c.is_ascii_lowercase()) && !name.contains(|c: char| c.is_ascii_uppercase())
}

/// The SDK this binary was built with, when its source is still where it was built.
fn default_sdk() -> Option<PathBuf> {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../guest-sdk")).canonicalize().ok()
}

pub fn new(axis: Axis, name: &str, path: Option<PathBuf>, sdk: Option<PathBuf>) -> ExitCode {
    match create(axis, name, path, sdk) {
        Ok(dir) => {
            println!("created the {axis} driver '{name}' in {}", dir.display());
            println!("next: cd {} && cargo build --release --target wasm32-wasip2  (then see README.md)", dir.display());
            ExitCode::SUCCESS
        }
        Err(e) => exit::fail("driver new", &e),
    }
}

/// Bad arguments (the name, `--sdk`, a `--path` that is not empty) are usage errors; a directory or
/// file that cannot be written is a failure of the command, not of its line.
fn create(axis: Axis, name: &str, path: Option<PathBuf>, sdk: Option<PathBuf>) -> Result<PathBuf, HostError> {
    if !valid_name(name) {
        return Err(HostError::usage(format!("the name must be lowercase letters, digits, '-' and '_', starting with a letter, not {name:?}")));
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
    for (relative, template) in agmsg_host::module(axis).template() {
        let target = dir.join(relative);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| HostError::refused(format!("cannot create {}: {e}", parent.display())))?;
        }
        std::fs::write(&target, fill(template)).map_err(|e| HostError::refused(format!("cannot write {}: {e}", target.display())))?;
    }
    Ok(dir)
}
