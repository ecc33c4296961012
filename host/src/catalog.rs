//! What `<axis> list` shows, for every axis from the same code: each driver a user could select —
//! bundled, or a trusted plugin (which shadows a bundled driver of its name) — and each plugin that
//! would run once trusted, with the command that trusts it. A plugin that cannot run at all is not
//! offered for trust (the registry warns about it).

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::axis::Axis;
use crate::bundled;
use crate::plugin::registry;

/// Where a listed driver comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    Bundled,
    /// A trusted plugin, the one that runs under its name.
    Plugin { dir: PathBuf },
    /// A plugin that runs only once the user trusts it.
    Untrusted { dir: PathBuf, problem: String, trust_command: String },
    /// A driver named by its path (a component file, a driver directory): never listed, but what a
    /// resolved driver says it came from.
    Path { path: PathBuf },
}

impl Origin {
    /// The word listings show (`bundled`, `plugin`, `untrusted`, `path`).
    pub fn word(&self) -> &'static str {
        match self {
            Origin::Bundled => "bundled",
            Origin::Plugin { .. } => "plugin",
            Origin::Untrusted { .. } => "untrusted",
            Origin::Path { .. } => "path",
        }
    }

    /// Whether the driver can be selected now.
    pub fn runs(&self) -> bool {
        !matches!(self, Origin::Untrusted { .. })
    }
}

/// One row of a listing.
#[derive(Clone, Debug)]
pub struct Entry {
    pub name: String,
    pub origin: Origin,
}

impl Entry {
    /// The fields every axis's `list --json` rows carry.
    pub fn json_fields(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut row = serde_json::Map::new();
        row.insert("name".into(), self.name.clone().into());
        row.insert("source".into(), self.origin.word().into());
        match &self.origin {
            Origin::Bundled => {}
            Origin::Plugin { dir } => {
                row.insert("path".into(), dir.display().to_string().into());
            }
            Origin::Untrusted { dir, problem, trust_command } => {
                row.insert("path".into(), dir.display().to_string().into());
                row.insert("problem".into(), problem.clone().into());
                row.insert("trust_command".into(), trust_command.clone().into());
            }
            Origin::Path { path } => {
                row.insert("path".into(), path.display().to_string().into());
            }
        }
        row
    }
}

/// Every driver of `axis`: the bundled ones in their order (each replaced by a trusted plugin of its
/// name), then trusted plugins of new names, then the untrusted plugins, by name. `dirs`: how to read
/// the axis's own packages, if it has them (`AxisModule::dir_package`).
pub fn entries(axis: Axis, dirs: &[&dyn crate::plugin::DirPackage]) -> Result<Vec<Entry>, String> {
    let mut all: Vec<Entry> = bundled::of(axis).map(|d| Entry { name: d.name.to_owned(), origin: Origin::Bundled }).collect();
    let mut untrusted = Vec::new();
    let mut by_name: BTreeMap<String, Vec<registry::Candidate>> = BTreeMap::new();
    for candidate in registry::candidates(axis, None, dirs)? {
        by_name.entry(candidate.name.clone()).or_default().push(candidate);
    }
    for (name, candidates) in by_name {
        let several = candidates.len() > 1;
        for candidate in candidates.iter().filter(|c| c.problem().is_some() && c.only_untrusted()) {
            let path = if several { format!(" --path {}", crate::shell::word(&candidate.dir.to_string_lossy())) } else { String::new() };
            untrusted.push(Entry {
                name: name.clone(),
                origin: Origin::Untrusted {
                    dir: candidate.dir.clone(),
                    problem: candidate.problem().unwrap_or_default(),
                    trust_command: format!("agmsg-host plugin trust {axis}/{name}{path}"),
                },
            });
        }
        if let (Some(chosen), _) = registry::choose(axis, &name, candidates) {
            let plugin = Entry { name, origin: Origin::Plugin { dir: chosen.dir } };
            match all.iter_mut().find(|e| e.name == plugin.name) {
                Some(shadowed) => *shadowed = plugin,
                None => all.push(plugin),
            }
        }
    }
    all.extend(untrusted);
    Ok(all)
}
