//! `agmsg-host driver test <driver>`: the contract suite the bundled drivers pass, run against any
//! storage driver (a bundled name or a component file), one line per rule with the reason for each
//! failure; exit 1 if any rule fails.
//!
//! The rules are `agmsg-conformance`'s, the same ones `tests/storage_contract.rs` runs: each drives this
//! very binary against the driver in a fresh temporary store.

use std::process::ExitCode;

use agmsg_conformance::{Harness, run_rule, storage};

use crate::runtime::cache::CompileCache;
use crate::storage::DriverSource;

pub fn test(driver: &str) -> ExitCode {
    // A path is passed on absolute: the rules run in their own temporary directories.
    let source = match DriverSource::resolve(driver) {
        Ok(source) => source,
        Err(e) => {
            eprintln!("agmsg-host driver test: {e}");
            return ExitCode::from(2);
        }
    };
    let driver = match &source.path {
        Some(path) => match std::path::absolute(path) {
            Ok(path) => path.display().to_string(),
            Err(e) => {
                eprintln!("agmsg-host driver test: {}: {e}", path.display());
                return ExitCode::from(2);
            }
        },
        None => source.name.clone(),
    };
    let bin = match std::env::current_exe() {
        Ok(bin) => bin,
        Err(e) => {
            eprintln!("agmsg-host driver test: cannot locate agmsg-host itself: {e}");
            return ExitCode::from(2);
        }
    };
    // The rules' processes share one compile cache: the user's, else one for this run.
    let run_cache = tempfile::tempdir();
    let cache = match (CompileCache::from_env().dir(), &run_cache) {
        (Some(dir), _) => dir.to_owned(),
        (None, Ok(tmp)) => tmp.path().to_owned(),
        (None, Err(e)) => {
            eprintln!("agmsg-host driver test: cannot create a temporary directory: {e}");
            return ExitCode::from(2);
        }
    };
    let harness = Harness { bin, cache };
    println!("storage contract suite against '{driver}' (sha256 {})", &source.sha256[..16]);
    // Assertions are the rules' failure reports: print them in the table, not as panic noise.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut failed = 0;
    for rule in storage::RULES {
        let started = std::time::Instant::now();
        match run_rule(&harness, rule, &driver) {
            Ok(()) => println!("PASS  {:<44} {:>6.0} ms", rule.name, started.elapsed().as_secs_f64() * 1e3),
            Err(reason) => {
                failed += 1;
                println!("FAIL  {:<44} {:>6.0} ms", rule.name, started.elapsed().as_secs_f64() * 1e3);
                for line in reason.lines().take(12) {
                    println!("        {line}");
                }
            }
        }
    }
    std::panic::set_hook(default_hook);
    let total = storage::RULES.len();
    println!("{} of {total} rules passed", total - failed);
    if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) }
}
