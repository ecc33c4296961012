//! `agmsg-host shim storage`: the bash storage driver agmsg's core sources, forwarding every
//! `storage_*` function to this binary; `agmsg-host shim types <type>`: the `_delivery.sh` agmsg's
//! delivery engine sources for a type, forwarding its functions to `agmsg-host delivery`
//! (`agent::delivery::shim`); `agmsg-host shim terminal <name>`: a terminal driver directory
//! (`terminal.conf` + `ops.sh`, `terminal::shim`) forwarding every `terminal_*` function to
//! `agmsg-host terminal`; `shim install | uninstall` (`shim_install.rs`, the library's
//! `agmsg_host::shim::install`): all of them in an agmsg install, agmsg's originals kept.
//!
//! The shims' text and what they name are the library's (`agmsg_host::storage::shim`,
//! `agmsg_host::terminal::shim`, `agmsg_host::agent::delivery::shim`, `agmsg_host::shim`); this file
//! parses, writes and prints.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use super::exit;
use agmsg_host::error::{ExitClass, HostError};
use agmsg_host::storage::shim as storage_shim;

/// `agmsg-host shim storage [--name N] [--output FILE]`, with the global `--driver`.
pub fn run(driver_flag: Option<String>, name: Option<String>, output: Option<PathBuf>) -> ExitCode {
    exit::report("shim storage", write_shim(driver_flag, name, output))
}

fn write_shim(driver_flag: Option<String>, name: Option<String>, output: Option<PathBuf>) -> Result<(), HostError> {
    let shim = storage_shim::requested(driver_flag, name.as_deref(), output.as_deref())?;
    match output {
        None => std::io::stdout()
            .write_all(shim.text.as_bytes())
            .map_err(|e| HostError::new(ExitClass::RUNTIME, format!("cannot write to stdout: {e}"))),
        Some(path) => {
            storage_shim::write(&shim, &path)?;
            eprintln!("wrote {} ({})", path.display(), storage_shim::hint(&path, &shim.selector));
            Ok(())
        }
    }
}

/// This binary's path as a shim names it: the path the user ran it by, a link kept
/// ([`agmsg_host::shim::invoked_binary`]); not found is refused.
fn this_binary() -> Result<String, HostError> {
    agmsg_host::shim::invoked_binary()
}

/// `text` to stdout, or to `output` atomically (agmsg may be sourcing the old file right now), then
/// `hint` on stderr. Not written is refused (`shim storage` says its own class).
fn write(text: &str, output: Option<PathBuf>, hint: &str) -> Result<(), HostError> {
    match output {
        None => std::io::stdout().write_all(text.as_bytes()).map_err(|e| HostError::refused(format!("cannot write to stdout: {e}"))),
        Some(path) => {
            let failed = |e: std::io::Error| HostError::refused(format!("cannot write {}: {e}", path.display()));
            agmsg_host::atomic_file::write_atomically(&path, failed, |w| w.write_all(text.as_bytes()).map_err(failed))?;
            eprintln!("wrote {} ({hint})", path.display());
            Ok(())
        }
    }
}

/// `agmsg-host shim terminal <name> [--output DIR]`: `DIR/<name>/terminal.conf` and `ops.sh` (DIR:
/// the current directory). Exit 0 written, 1 refused (an unknown driver) or not written.
pub fn run_terminal(name: &str, output: Option<PathBuf>) -> ExitCode {
    match write_terminal(name, output) {
        Ok(dir) => {
            eprintln!(
                "wrote {} (terminal.conf, ops.sh): agmsg finds it as a driver directory scripts/drivers/terminals/{name}/",
                dir.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => exit::fail("shim terminal", &e),
    }
}

/// Every failure here is refused: an unknown driver, a directory that cannot be written.
fn write_terminal(name: &str, output: Option<PathBuf>) -> Result<PathBuf, HostError> {
    agmsg_host::terminal::shim::write_dir(name, &output.unwrap_or_else(|| PathBuf::from(".")), &this_binary()?)
}

/// `agmsg-host shim types <type> [--output FILE]` (the library's
/// [`agmsg_host::agent::delivery::shim::requested`]): exit 0 written, 1 refused (an unknown type, one
/// whose delivery agmsg-host cannot answer) or not written (2 is left to usage errors).
pub fn run_types(agent_type: &str, output: Option<PathBuf>) -> ExitCode {
    let written = agmsg_host::agent::delivery::shim::requested(agent_type).and_then(|shim| {
        write(&shim.text, output, &shim.hint())?;
        Ok(shim.warnings)
    });
    match written {
        Ok(warnings) => {
            for warning in &warnings {
                eprintln!("warning: {}", agmsg_host::display::line(warning));
            }
            ExitCode::SUCCESS
        }
        Err(e) => exit::fail("shim types", &e),
    }
}
