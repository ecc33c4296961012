//! `agmsg-host driver test <driver>`: the contract suite the bundled drivers pass, run against any
//! driver, one line per rule with the reason for each failure; exit 1 if any rule fails. A storage
//! driver is a bundled name or a `.wasm` component; a terminal driver a bundled name or a directory
//! with `terminal.conf` and `driver.wasm`, or an installed plugin: the terminal rules that need no
//! terminal, and for a driver granted `tmux` the pane rules, against a private tmux server.
//!
//! The rules are `agmsg-conformance`'s, the same ones `tests/storage_contract.rs` and
//! `tests/terminal_contract.rs` run: each drives this very binary against the driver in a fresh
//! temporary home.

use std::process::ExitCode;

use agmsg_conformance::{Harness, Rule, run_rule, storage, terminal, tmux};

use agmsg_host::runtime::cache::CompileCache;
use agmsg_host::terminal::TerminalSource;

/// Which suite, the driver as the rules pass it (a path made absolute: the rules run in their own
/// directories), and the component's hash.
fn suite_for(driver: &str) -> Result<(&'static str, Vec<&'static Rule>, String, String), String> {
    let absolute = |p: &std::path::Path| std::path::absolute(p).map(|p| p.display().to_string()).map_err(|e| format!("{}: {e}", p.display()));
    let is_terminal_dir = TerminalSource::is_dir_reference(driver) && std::path::Path::new(driver).join("terminal.conf").is_file();
    let available = TerminalSource::available();
    if is_terminal_dir || TerminalSource::names(&available).contains(&driver) {
        let source = TerminalSource::resolve(driver, &available)?;
        let name = if is_terminal_dir { absolute(std::path::Path::new(driver))? } else { driver.to_owned() };
        // A driver that may run tmux is tmux-like: its panes are checked against a real tmux server.
        let runs_tmux = source.driver.capabilities.programs().any(|(program, _)| program == "tmux");
        let rules = terminal::RULES.iter().chain(if runs_tmux { tmux::PANE_RULES } else { &[] }).collect();
        return Ok(("terminal", rules, name, source.driver.sha256));
    }
    let source = agmsg_host::storage::source::resolve(driver).map_err(|e| e.to_string())?;
    let name = match &source.path {
        Some(path) => absolute(path)?,
        None => source.name.clone(),
    };
    Ok(("storage", storage::RULES.iter().collect(), name, source.sha256))
}

pub fn test(driver: &str) -> ExitCode {
    let (axis, rules, driver, sha256) = match suite_for(driver) {
        Ok(suite) => suite,
        Err(e) => {
            eprintln!("agmsg-host driver test: {}", agmsg_host::display::line(&e.to_string()));
            return ExitCode::from(2);
        }
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
    println!("{axis} contract suite against '{driver}' (sha256 {})", &sha256[..16.min(sha256.len())]);
    // Assertions are the rules' failure reports: print them in the table, not as panic noise.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut failed = 0;
    for rule in &rules {
        let started = std::time::Instant::now();
        match run_rule(&harness, rule, &driver) {
            Ok(()) => println!("PASS  {:<44} {:>6.0} ms", rule.name, started.elapsed().as_secs_f64() * 1e3),
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
    println!("{} of {total} rules passed", total - failed);
    if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) }
}
