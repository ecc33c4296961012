//! `terminal list [--json]`: the drivers detection may pick, in resolution order, then the plugins that
//! run once trusted, with the command that trusts them (the catalog's rows, as `storage list` shows
//! them). What to print.

use crate::catalog::{Entry, Origin};
use crate::display;

use super::TerminalSource;

/// The listing (`json`: one JSON array), or why the plugin directories cannot be read.
pub fn list(json: bool) -> Result<String, String> {
    // One read of the plugin directories for both parts of the list.
    let (candidates, untrusted) = TerminalSource::listing()?;
    let untrusted = untrusted.iter();
    if json {
        let mut rows: Vec<_> = candidates
            .iter()
            .map(|c| {
                // Each row says where its driver came from (TerminalSource::origin), as resolved.
                let entry = Entry { name: c.manifest.name.clone(), origin: c.origin.clone() };
                let mut row = entry.json_fields();
                row.insert("priority".into(), c.manifest.priority.into());
                row.insert("backend".into(), c.manifest.backend.clone().into());
                row.insert("capabilities".into(), c.manifest.capabilities.clone().into());
                row.insert("programs".into(), c.manifest.programs.clone().into());
                row.insert("env".into(), c.manifest.env.clone().into());
                row.insert("bundled".into(), (entry.origin == Origin::Bundled).into());
                serde_json::Value::Object(row)
            })
            .collect();
        rows.extend(untrusted.map(|e| serde_json::Value::Object(e.json_fields())));
        return Ok(format!("{}\n", serde_json::Value::Array(rows)));
    }
    let mut text = format!("{:<10} {:>8}  {:<44} {:<24} {}\n", "DRIVER", "PRIORITY", "CAPABILITIES", "RUNS", "SOURCE");
    for c in candidates {
        let origin = c.origin.word();
        // Manifest text (a plugin's, a driver directory's): shown, never sent to the terminal.
        text.push_str(&format!(
            "{:<10} {:>8}  {:<44} {:<24} {origin}\n",
            display::line(&c.manifest.name),
            c.manifest.priority,
            display::line(&c.manifest.capabilities.join(" ")),
            display::line(&c.manifest.programs.join(" "))
        ));
    }
    for e in untrusted {
        if let Origin::Untrusted { trust_command, .. } = &e.origin {
            text.push_str(&format!("{:<10} {:>8}  {:<44} {:<24} untrusted: {trust_command}\n", display::line(&e.name), "-", "-", "-"));
        }
    }
    Ok(text)
}
