//! `agmsg-host shim install | uninstall <agmsg dir>`: the workflow is the library's
//! ([`agmsg_host::shim::install`]); this file prints its report, as text or `--json`.

use std::path::Path;
use std::process::ExitCode;

use serde_json::json;

use super::exit;
pub use agmsg_host::shim::install::Action;

/// `shim install | uninstall`: exit 0 done (or a dry run), 1 refused (the report's failure).
pub fn run(action: Action, dir: &Path, dry_run: bool, json: bool) -> ExitCode {
    let verb = action.verb();
    let report = agmsg_host::shim::install::run(action, dir, dry_run, agmsg_host::compose::module);
    if json {
        let mut out = json!({
            "command": verb, "dir": dir.display().to_string(), "dry_run": dry_run, "items": report.items, "ok": report.result.is_ok()
        });
        if let Err(e) = &report.result {
            out["error"] = e.message.clone().into();
        }
        println!("{out}");
    } else {
        for item in &report.items {
            // Paths are ours (driver and type names); details may carry an OS error: one line each.
            let detail = item.detail.as_deref().map(|d| format!(" ({})", agmsg_host::display::line(d))).unwrap_or_default();
            println!("{:<9} {}{detail}", item.action, agmsg_host::display::line(&item.path));
            for w in &item.warnings {
                println!("  warning: {}", agmsg_host::display::line(w));
            }
        }
        if dry_run && report.result.is_ok() {
            println!("(dry run: nothing was changed)");
        }
    }
    exit::report(&format!("shim {verb}"), report.result)
}
