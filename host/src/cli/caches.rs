//! After `shim uninstall`: what agmsg-host keeps in agmsg's store that is only a cache
//! ([`agmsg_host::storage::caches`]) is removed with `--remove-caches`, or when the user says so on a
//! terminal; elsewhere it is kept, and the line says how to remove it.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use agmsg_host::display;
use agmsg_host::error::HostError;
use agmsg_host::storage::caches;

use super::exit;

pub fn after_uninstall(agmsg_dir: &Path, remove: bool, json: bool) -> ExitCode {
    let found = caches::find(&caches::store_of(agmsg_dir));
    if found.is_empty() {
        return ExitCode::SUCCESS;
    }
    let asked = !remove && !json && std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let remove = remove || (asked && ask(&found));
    if !remove {
        if !json {
            for dir in &found {
                println!(
                    "{:<9} {} (agmsg-host's cache: `shim uninstall --remove-caches` removes it)",
                    "keep",
                    display::line(&dir.display().to_string())
                );
            }
        }
        return ExitCode::SUCCESS;
    }
    let failed = caches::remove(&found);
    if !json {
        for dir in found.iter().filter(|d| !failed.iter().any(|(f, _)| f == *d)) {
            println!("{:<9} {} (agmsg-host's cache)", "remove", display::line(&dir.display().to_string()));
        }
    }
    match failed.first() {
        None => ExitCode::SUCCESS,
        Some((dir, e)) => exit::fail("shim uninstall", &HostError::refused(format!("cannot remove the cache {}: {e}", dir.display()))),
    }
}

/// Whether the user wants the caches removed (anything but yes keeps them).
fn ask(found: &[std::path::PathBuf]) -> bool {
    let mut err = std::io::stderr();
    let _ = writeln!(err, "agmsg-host's caches in agmsg's store (rebuilt when needed; agmsg never reads them):");
    for dir in found {
        let _ = writeln!(err, "  {}", display::line(&dir.display().to_string()));
    }
    let _ = write!(err, "Remove them? [y/N] ");
    let _ = err.flush();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).is_ok() && matches!(line.trim(), "y" | "Y" | "yes")
}
