//! `agmsg-host driver test <driver>`: the contract suite the bundled drivers pass, run against any
//! driver, one line per rule with the reason for each failure; exit 1 if any rule fails. A storage
//! driver is a bundled name or a `.wasm` component; a terminal driver a bundled name or a directory
//! with `terminal.conf` and `driver.wasm`, or an installed plugin: the terminal rules that need no
//! terminal, and for a driver granted `tmux` the pane rules, against a private tmux server. On the
//! types axis, an agent type (a name, or a directory with `type.conf`): its manifest rules, and the plug
//! rules for its delivery plug component; a plug package directory or a plug's `.wasm`: the plug rules.
//! A component file names its own axis: the one whose driver interface it exports.
//!
//! The rules are each axis's (`host/src/<axis>/suite.rs`), the same ones `tests/storage_contract.rs` and
//! `tests/terminal_contract.rs` run: each drives this very binary against the driver in a fresh
//! temporary home.

use std::process::ExitCode;

use super::exit;
use agmsg_host::error::HostError;

use agmsg_conformance::{Harness, Verdict, run_rule};

use agmsg_host::axis::Axis;
use agmsg_host::axis_module::Suite;
use agmsg_host::runtime::cache::CompileCache;

/// The axis whose driver `reference` names, and that driver's suite. A component file names its own
/// axis (the driver interface it exports); anything else is the first axis that claims it. A reference
/// that names no driver is a usage error; a driver named that cannot be read or set up is a failure.
fn suite_for(reference: &str) -> Result<(Axis, Suite), HostError> {
    if let agmsg_host::axis_module::Reference::File(path) = agmsg_host::axis_module::Reference::of(reference)
        && path.is_file()
    {
        let wasm = agmsg_host::plugin::read_file(path, agmsg_host::plugin::MAX_COMPONENT_BYTES)?;
        if let Some(axis) = agmsg_host::axis_module::component_axis(&wasm) {
            return Ok((axis, agmsg_host::compose::module(axis).suite(reference)?));
        }
    }
    for axis in Axis::ALL {
        let module = agmsg_host::compose::module(axis);
        if module.claims(reference) {
            return Ok((axis, module.suite(reference)?));
        }
    }
    Err(HostError::usage(format!(
        "'{reference}' names no driver: not a bundled or trusted plugin's name, an agent type, a component file (.wasm) or a \
         driver directory (with terminal.conf and driver.wasm, type.conf, or a delivery plug's agmsg-driver.toml); \
         `agmsg-host plugin list` shows the drivers"
    )))
}

pub fn test(driver: &str) -> ExitCode {
    let (axis, Suite { rules, driver, sha256, env }) = match suite_for(driver) {
        Ok(suite) => suite,
        Err(e) => return exit::fail("driver test", &e),
    };
    let bin = match std::env::current_exe() {
        Ok(bin) => bin,
        Err(e) => return exit::fail("driver test", &HostError::refused(format!("cannot locate agmsg-host itself: {e}"))),
    };
    // The rules' processes share one compile cache: the user's, else one for this run.
    let run_cache = tempfile::tempdir();
    let cache = match (CompileCache::from_env().dir(), &run_cache) {
        (Some(dir), _) => dir.to_owned(),
        (None, Ok(tmp)) => tmp.path().to_owned(),
        (None, Err(e)) => return exit::fail("driver test", &HostError::refused(format!("cannot create a temporary directory: {e}"))),
    };
    let mut harness = Harness { bin, cache, env, cleanup: None };
    println!("{axis} contract suite against '{driver}' (sha256 {})", &sha256[..16.min(sha256.len())]);
    // A store outside the rules' temporary homes (the suite needs variables to reach it: postgres's
    // database) is purged after each rule when the driver offers `purge`; a probe on a store of its own
    // says whether it does.
    if axis == Axis::Storage && !harness.env.is_empty() {
        let purge = ["storage", "purge-store", "--yes"];
        let probe = agmsg_conformance::Env::new(&harness).env("AGMSG_STORAGE_DRIVER", &driver).run(&purge);
        if probe.code == 0 {
            harness.cleanup = Some(purge.map(str::to_owned).to_vec());
        } else {
            println!(
                "note: '{driver}' does not purge its stores (no optional agmsg:storage/purge interface, or it failed: {}): \
                 each rule's store stays where the driver keeps it",
                agmsg_host::display::line(probe.stderr.trim_end())
            );
        }
    }
    // Assertions are the rules' failure reports: print them in the table, not as panic noise.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let (mut failed, mut skipped) = (0, 0);
    for rule in &rules {
        let started = std::time::Instant::now();
        match run_rule(&harness, rule, &driver) {
            Ok(Verdict::Passed) => println!("PASS  {:<44} {:>6.0} ms", rule.name, started.elapsed().as_secs_f64() * 1e3),
            Ok(Verdict::Skipped(why)) => {
                skipped += 1;
                println!("SKIP  {:<44} {:>6.0} ms", rule.name, started.elapsed().as_secs_f64() * 1e3);
                println!("        {}", agmsg_host::display::line(&why));
            }
            Err(reason) => {
                failed += 1;
                println!("FAIL  {:<44} {:>6.0} ms", rule.name, started.elapsed().as_secs_f64() * 1e3);
                // A report may quote what the driver printed: shown, never sent to the terminal.
                for line in reason.lines().take(12) {
                    println!("        {}", agmsg_host::display::line(line));
                }
            }
        }
    }
    std::panic::set_hook(default_hook);
    let total = rules.len();
    let passed = total - failed - skipped;
    if skipped == 0 {
        println!("{passed} of {total} rules passed");
    } else {
        println!("{passed} of {total} rules passed, {skipped} skipped (not applicable to this driver)");
    }
    if failed == 0 { ExitCode::SUCCESS } else { exit::no() }
}
