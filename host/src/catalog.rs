//! The one enumeration of every axis: what `<axis> list` shows, what an unknown name's error lists,
//! the terminal drivers detection may pick, and what the agent-type registry is built from. Each
//! driver a user could select — bundled, one the axis finds installed elsewhere (agmsg's own agent
//! types), or a trusted plugin (which shadows an earlier row of its name) — and each plugin that would
//! run once trusted, with the command that trusts it. A plugin that cannot run at all is not offered
//! for trust (a warning says why).
//!
//! What comes before the plugins is the axis's to say ([`Sources::fixed`]: bundled drivers for
//! storage and terminal, `agent::registry` for types): this file names no axis.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::axis::Axis;
use crate::bundled;
use crate::plugin::registry::{self, Candidate};

/// Where a listed driver comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    Bundled,
    /// Installed by another program in a directory of its own, read there as it is and trusted as that
    /// program trusts it (agmsg's installed agent types); `by` names the program, and is the word
    /// listings show.
    Installed {
        dir: PathBuf,
        by: &'static str,
    },
    /// A trusted plugin, the one that runs under its name.
    Plugin {
        dir: PathBuf,
    },
    /// A plugin that runs only once the user trusts it.
    Untrusted {
        dir: PathBuf,
        problem: String,
        trust_command: String,
    },
    /// A driver named by its path (a component file, a driver directory): never listed, but what a
    /// resolved driver says it came from.
    Path {
        path: PathBuf,
    },
}

impl Origin {
    /// The word listings show (`bundled`, the installing program's, `plugin`, `untrusted`, `path`).
    pub fn word(&self) -> &'static str {
        match self {
            Origin::Bundled => "bundled",
            Origin::Installed { by, .. } => by,
            Origin::Plugin { .. } => "plugin",
            Origin::Untrusted { .. } => "untrusted",
            Origin::Path { .. } => "path",
        }
    }

    /// Whether the driver can be selected now.
    pub fn runs(&self) -> bool {
        !matches!(self, Origin::Untrusted { .. })
    }

    /// Where it is on disk: `None` for a bundled driver.
    pub fn dir(&self) -> Option<&Path> {
        match self {
            Origin::Bundled => None,
            Origin::Installed { dir, .. } | Origin::Plugin { dir } | Origin::Untrusted { dir, .. } => Some(dir),
            Origin::Path { path } => Some(path),
        }
    }

    /// One line for people: the word, then the place if it has one (`plugin /path`).
    pub fn describe(&self) -> String {
        match self.dir() {
            None => self.word().to_owned(),
            Some(dir) => format!("{} {}", self.word(), dir.display()),
        }
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
            Origin::Installed { dir, .. } | Origin::Plugin { dir } => {
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

/// Where an axis's rows come from, in order of precedence (a later row of a name replaces an earlier
/// one, which it then shadows).
pub struct Sources {
    /// The rows before any plugin, in order: the axis's bundled drivers, then what it finds installed
    /// elsewhere.
    pub fixed: Vec<Entry>,
    /// The axis's plugin candidates, in base order ([`registry::candidates_in`]), or why they cannot
    /// be read (the trust file cannot).
    pub plugins: Result<Vec<Candidate>, String>,
}

impl Sources {
    /// `axis`'s bundled drivers, then its plugins under the environment's bases, trusted as
    /// `$AGMSG_HOME`'s trust file says. `dirs`: how to read the axis's own packages, if it has them
    /// (`AxisModule::dir_package`).
    pub fn bundled_and_plugins(axis: Axis, dirs: &[&dyn crate::plugin::DirPackage]) -> Sources {
        let fixed = bundled::of(axis).map(|d| Entry { name: d.name.to_owned(), origin: Origin::Bundled }).collect();
        Sources { fixed, plugins: registry::candidates(axis, None, dirs).map_err(|e| e.to_string()) }
    }
}

/// A row that can be selected, with what the enumeration read for it.
#[derive(Debug)]
pub struct Row {
    pub entry: Entry,
    /// The rows of its name it replaced, in order of precedence.
    pub shadows: Vec<Origin>,
    /// The plugin candidate the row is ([`Origin::Plugin`]), as read: manifests, component, trust.
    pub plugin: Option<Candidate>,
    /// On an axis with packages of its own kind, a bare component of the name that may run and comes
    /// after every package of the name that may (it answers for the name: [`Row::into_plugin_component`]).
    pub bare: Option<Candidate>,
}

impl Row {
    /// The component that answers for the name among its plugins: the last candidate that may run, of
    /// either kind (`Some(None)`: a package without one); `None`: no plugin of the name may run. Moved
    /// out, not copied.
    pub fn into_plugin_component(self) -> Option<Option<crate::runtime::DriverSource>> {
        self.bare.or(self.plugin).map(Candidate::into_source)
    }
}

/// An axis's enumeration.
#[derive(Debug, Default)]
pub struct Catalog {
    /// The rows that can be selected: the fixed ones in their order (each replaced in place by a later
    /// row of its name), then plugins of new names, by name.
    pub rows: Vec<Row>,
    /// The plugins that would run once trusted, by name.
    pub untrusted: Vec<Entry>,
    /// Every plugin candidate that was passed over, one message each, by name.
    pub warnings: Vec<String>,
    /// The same messages, by name: why a name that is no row is not one.
    pub ignored: BTreeMap<String, Vec<String>>,
    /// Why no plugin was read at all (the trust file cannot be read), if so: the fixed rows stand.
    pub plugins_unread: Option<String>,
}

/// The enumeration of `axis` from `sources`. On an axis whose plugins may be packages of its own kind
/// (an agent type's directory), only such a package is a row; a bare component of a name only stands
/// beside it ([`Row::into_plugin_component`]) and is chosen where it runs.
pub fn read(axis: Axis, sources: Sources) -> Catalog {
    let mut catalog = Catalog::default();
    for entry in sources.fixed {
        match catalog.rows.iter_mut().find(|r| r.entry.name == entry.name) {
            Some(row) => row.shadows.push(std::mem::replace(&mut row.entry, entry).origin),
            None => catalog.rows.push(Row { entry, shadows: Vec::new(), plugin: None, bare: None }),
        }
    }
    let candidates = match sources.plugins {
        Ok(candidates) => candidates,
        Err(e) => {
            catalog.plugins_unread = Some(e);
            return catalog;
        }
    };
    let mut by_name: BTreeMap<String, Vec<Candidate>> = BTreeMap::new();
    for candidate in candidates {
        by_name.entry(candidate.name.clone()).or_default().push(candidate);
    }
    let packages_only = axis.dir_manifest().is_some();
    for (name, candidates) in by_name {
        let makes_row = |c: &Candidate| c.is_type_dir || !packages_only;
        // Whether the last candidate that may run is a bare component (else it is the chosen package).
        let bare_answers = candidates.iter().rev().find(|c| c.problem().is_none()).is_some_and(|c| !makes_row(c));
        let (rows, bare): (Vec<Candidate>, Vec<Candidate>) = candidates.into_iter().partition(|c| makes_row(c));
        let several = rows.len() > 1;
        for candidate in rows.iter().filter(|c| c.problem().is_some() && c.only_untrusted()) {
            catalog.untrusted.push(Entry {
                name: name.clone(),
                origin: Origin::Untrusted {
                    dir: candidate.dir.clone(),
                    problem: candidate.problem().unwrap_or_default(),
                    trust_command: registry::trust_command(axis, &name, several.then_some(candidate.dir.as_path())),
                },
            });
        }
        let runnable: Vec<PathBuf> = rows.iter().filter(|c| c.problem().is_none()).map(|c| c.dir.clone()).collect();
        // Bare components are warned about first, then the packages: each kind's `--path` hint counts
        // its own kind.
        let (bare, mut warnings) = registry::choose(axis, &name, bare);
        let bare = bare.filter(|_| bare_answers);
        let (chosen, row_warnings) = registry::choose(axis, &name, rows);
        warnings.extend(row_warnings);
        if !warnings.is_empty() {
            catalog.warnings.extend(warnings.iter().cloned());
            catalog.ignored.insert(name.clone(), warnings);
        }
        let existing = catalog.rows.iter_mut().position(|r| r.entry.name == name);
        match (chosen, existing) {
            (Some(plugin), existing) => {
                let entry = Entry { name: name.clone(), origin: Origin::Plugin { dir: plugin.dir.clone() } };
                // The other plugin packages of the name that could run, in base order.
                let earlier = runnable.into_iter().filter(|d| *d != plugin.dir).map(|dir| Origin::Plugin { dir });
                let row = match existing {
                    Some(i) => {
                        let row = &mut catalog.rows[i];
                        row.shadows.push(std::mem::replace(&mut row.entry, entry).origin);
                        row
                    }
                    None => {
                        catalog.rows.push(Row { entry, shadows: Vec::new(), plugin: None, bare: None });
                        catalog.rows.last_mut().expect("just pushed")
                    }
                };
                row.shadows.extend(earlier);
                row.plugin = Some(plugin);
                row.bare = bare;
            }
            (None, Some(i)) => catalog.rows[i].bare = bare,
            (None, None) => {}
        }
    }
    catalog
}

/// Every driver of `axis` as `<axis> list` shows it: the bundled ones in their order (each replaced by
/// a trusted plugin of its name), then trusted plugins of new names, then the untrusted plugins, by
/// name. `dirs`: how to read the axis's own packages, if it has them (`AxisModule::dir_package`).
/// An axis whose rows are packages of its own kind rather than its bundled components (agent types)
/// builds its [`Sources`] itself and calls [`read`] (`agent::registry`).
pub fn entries(axis: Axis, dirs: &[&dyn crate::plugin::DirPackage]) -> Result<Vec<Entry>, String> {
    let catalog = read(axis, Sources::bundled_and_plugins(axis, dirs));
    if let Some(e) = catalog.plugins_unread {
        return Err(e);
    }
    let mut all: Vec<Entry> = catalog.rows.into_iter().map(|r| r.entry).collect();
    all.extend(catalog.untrusted);
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rows an axis has before its plugins keep their order; a later one of a name replaces the
    /// earlier in place and lists it as shadowed, saying its own word (the installing program's).
    #[test]
    fn a_later_fixed_row_replaces_an_earlier_one_in_place() {
        let row = |name: &str, origin: Origin| Entry { name: name.to_owned(), origin };
        let installed = Origin::Installed { dir: PathBuf::from("/skill/types/a"), by: "agmsg" };
        let fixed = vec![row("a", Origin::Bundled), row("b", Origin::Bundled), row("a", installed.clone())];
        let catalog = read(Axis::Types, Sources { fixed, plugins: Ok(Vec::new()) });
        let rows: Vec<(&str, &str, &[Origin])> =
            catalog.rows.iter().map(|r| (r.entry.name.as_str(), r.entry.origin.word(), r.shadows.as_slice())).collect();
        assert_eq!(rows, [("a", "agmsg", &[Origin::Bundled][..]), ("b", "bundled", &[][..])]);
        assert_eq!(installed.describe(), "agmsg /skill/types/a");
        assert!(catalog.warnings.is_empty() && catalog.untrusted.is_empty() && catalog.plugins_unread.is_none());

        // Plugins that cannot be read leave the fixed rows standing, and say why.
        let catalog =
            read(Axis::Storage, Sources { fixed: vec![row("sqlite", Origin::Bundled)], plugins: Err("trust file unreadable".into()) });
        assert_eq!(catalog.rows.len(), 1);
        assert_eq!(catalog.plugins_unread.as_deref(), Some("trust file unreadable"));
    }
}
