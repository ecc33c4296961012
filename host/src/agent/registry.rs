//! Which agent types exist and where each one comes from: the types axis's rows of the one
//! enumeration ([`crate::catalog`]), each with its manifest. This file says what comes before the
//! plugins (bundled and agmsg's installed types) and reads the manifests; which candidate of a name
//! wins, what it shadows and what is warned about is the catalog's.
//!
//! Bases, in order (a later candidate of a name replaces an earlier one, as on the other axes and in
//! agmsg's `agmsg_type_dir`):
//!
//! 1. the types bundled in this binary ([`super::bundled`]);
//! 2. agmsg's own installed types, read unchanged: `<skill>/scripts/drivers/types/<name>/type.conf`,
//!    where `<skill>` is `AGMSG_SKILL_DIR`, else `~/.agents/skills/agmsg` (agmsg's builtins, always
//!    trusted, as agmsg trusts them: an installed agmsg newer than this binary's copy wins);
//! 3. external types: `$AGMSG_HOME/plugins/types/<name>/`, then each `AGMSG_PLUGIN_DIRS` base's
//!    `types/<name>/`: the plugin registry's candidates of the types axis
//!    ([`crate::plugin::registry`]), visible only once the plugin trust file pins them
//!    (`agmsg-host plugin trust types/<name>`), read with no link followed.
//!
//! A candidate whose manifest cannot be read (not a regular file, too large, not UTF-8 text) is
//! skipped with a warning, so the candidate before it serves. Only names the driver-name rule allows
//! (`[a-zA-Z0-9_-]+`) are types.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::bundled;
use super::manifest::{self, Manifest};
use super::plug::PlugInfo;
use crate::axis::Axis;
use crate::catalog::{self, Entry};
use crate::error::HostError;
use crate::plugin::registry;

/// Where a type comes from: the catalog's origin (`Bundled`; `Installed` by [`AGMSG`], agmsg's own
/// installed type; `Plugin`, a trusted external type), whose word listings show.
pub use crate::catalog::Origin;

/// The word for agmsg's own installed types ([`Origin::Installed`]'s `by`).
pub const AGMSG: &str = "agmsg";

/// An agent type: its manifest and where it came from.
#[derive(Clone, Debug)]
pub struct AgentType {
    pub name: String,
    pub origin: Origin,
    pub manifest: Manifest,
    /// The candidates of this name it replaced, in base order.
    pub shadows: Vec<Origin>,
    /// The bundled type it is, when it is one.
    bundled: Option<&'static str>,
    /// Where its name has trusted plugin candidates (`types/<name>`), the last one's plug component, as
    /// the registry read and hashed it: a type directory's own (`None`: it ships none), or a plug
    /// component alone. `None` here: no such candidate ([`AgentType::plug_component`]).
    plugin_plug: Option<Option<crate::runtime::DriverSource>>,
}

/// A type's command template.
#[derive(Clone, Debug)]
pub struct Template {
    /// The `template=` value (relative to the type dir).
    pub file: String,
    /// Where it is, for a type on disk.
    pub path: Option<PathBuf>,
    /// Its text, or why it cannot be read.
    pub text: Result<String, String>,
}

impl AgentType {
    /// `key`'s value (agmsg's reader); `None` when missing.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.manifest.get(key)
    }

    /// `key`'s value, `""` when missing.
    pub fn value(&self, key: &str) -> &str {
        self.manifest.value(key)
    }

    /// The type's directory, for a type on disk.
    pub fn dir(&self) -> Option<&Path> {
        self.origin.dir()
    }

    /// Whether spawn may launch it: `spawnable=yes` or a non-empty `spawn=` (agmsg's gate).
    pub fn spawnable(&self) -> bool {
        super::manifest::spawnable(&self.manifest)
    }

    /// Whether `detect=explicit` (or no `detect`): never selected from the environment.
    pub fn explicit_only(&self) -> bool {
        let detect = self.value("detect");
        detect.is_empty() || detect == "explicit"
    }

    /// Its command template: `None` when the manifest names none (agmsg-app); an error when the name
    /// is absolute or contains `..` (agmsg's `agmsg_type_template_path` guard).
    pub fn template(&self) -> Result<Option<Template>, String> {
        let file = self.value("template");
        if file.is_empty() {
            return Ok(None);
        }
        manifest::check_relative("template", file).map_err(|e| format!("type {}: {e}", self.name))?;
        Ok(Some(Template { file: file.to_owned(), path: self.dir().map(|d| d.join(file)), text: self.file_text(file) }))
    }

    /// A file of the type's directory (relative, already checked), as text.
    pub fn file_text(&self, file: &str) -> Result<String, String> {
        if let Some(t) = self.bundled.and_then(bundled::get) {
            return t
                .files
                .iter()
                .find(|(f, _)| *f == file)
                .map(|(_, text)| (*text).to_owned())
                .ok_or_else(|| format!("bundled type {} has no file {file}", self.name));
        }
        // Below the type's directory no link is followed: a template cannot name a file elsewhere.
        let dir = self.dir().expect("a type on disk");
        let bytes = crate::plugin::tree::read_below(dir, file, crate::plugin::MAX_TEXT_BYTES).map_err(|e| e.message)?;
        String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text", dir.join(file).display()))
    }

    /// The plug component that answers for it: the last trusted plugin candidate of its name's (its
    /// own directory's, or a plug component alone), else the bundled plug of its name, if any; `None`:
    /// none (the host's behaviour for the type answers). What runs is what trust was checked against
    /// when the registry was read.
    pub fn plug_component(&self) -> Option<crate::runtime::DriverSource> {
        match &self.plugin_plug {
            Some(plug) => plug.clone(),
            None => super::bundled::plug(&self.name),
        }
    }

    /// Its code plug: built-in facts for a bundled type, scanned (never run) for a type on disk.
    pub fn plug(&self) -> PlugInfo {
        match (self.bundled.and_then(bundled::get), self.dir()) {
            (Some(t), _) => PlugInfo::of_bundled(&t.plug),
            (None, Some(dir)) => PlugInfo::scan(dir),
            (None, None) => PlugInfo::default(),
        }
    }
}

/// `AGMSG_SKILL_DIR`, else `~/.agents/skills/agmsg` (agmsg's install directory); `None` without a
/// home.
pub fn skill_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("AGMSG_SKILL_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty())?;
    Some(PathBuf::from(home).join(".agents/skills/agmsg"))
}

/// [`skill_dir`], for a command that cannot work without it: a refusal saying how to name it.
pub fn require_skill_dir() -> Result<PathBuf, HostError> {
    skill_dir().ok_or_else(|| HostError::refused("agmsg's directory is unknown: set AGMSG_SKILL_DIR (or HOME)"))
}

/// The installed command's name: the skill directory's basename (`agmsg`, or a custom install name),
/// as agmsg's actas prompt uses it.
pub fn skill_name() -> String {
    skill_dir()
        .and_then(|d| d.file_name().and_then(|n| n.to_str()).map(str::to_owned))
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "agmsg".to_owned())
}

/// Where types are looked for besides the bundled ones.
#[derive(Clone, Debug, Default)]
pub struct TypeLocations {
    /// agmsg's install directory (its types: `scripts/drivers/types/`).
    pub skill_dir: Option<PathBuf>,
    /// External plugin bases, in order (their types: `types/<name>/`).
    pub plugin_bases: Vec<PathBuf>,
}

impl TypeLocations {
    /// From the environment: [`skill_dir`] and the plugin bases every axis uses
    /// ([`crate::plugin::registry::bases`]).
    pub fn from_env() -> TypeLocations {
        TypeLocations { skill_dir: skill_dir(), plugin_bases: crate::plugin::registry::bases() }
    }
}

/// The plugin trust file's answer for external types: the one of `$AGMSG_HOME`
/// ([`crate::plugin::registry::home_trust`]); tests give their own.
pub type TrustLoader<'a> = &'a dyn Fn() -> Result<crate::plugin::trust::TrustFile, crate::error::HostError>;

/// A trust answer under which no external type is trusted (for callers, tests among them, that must
/// see bundled and agmsg's types only).
pub fn trust_none() -> Result<crate::plugin::trust::TrustFile, crate::error::HostError> {
    Ok(crate::plugin::trust::TrustFile::default())
}

/// The `<name>/` directories under `types_dir` that hold a `type.conf`, sorted by name.
fn type_dirs(types_dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(types_dir) else { return Vec::new() };
    let mut dirs: Vec<(String, PathBuf)> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| agmsg_contract::is_driver_name(n))
        .map(|n| {
            let dir = types_dir.join(&n);
            (n, dir)
        })
        .filter(|(_, dir)| dir.join("type.conf").exists())
        .collect();
    dirs.sort();
    dirs
}

/// The types that exist, each the last eligible candidate of its name.
#[derive(Debug, Default)]
pub struct Registry {
    types: BTreeMap<String, AgentType>,
    /// Candidates that were skipped (untrusted, unreadable), one message each.
    pub warnings: Vec<String>,
    /// The same messages of external candidates, by type name: why a name that is not a type is not
    /// one ([`Registry::require`]).
    ignored: BTreeMap<String, Vec<String>>,
}

impl Registry {
    /// The registry from `sources`. External types are the plugin registry's candidates of the types
    /// axis, trust answered by `trust` (the plugin trust file, pinned to the directory, `type.conf`'s
    /// sha256 and the other files' hash); of a name, the last trusted type directory is the type
    /// (shadowing bundled, agmsg's and earlier ones). A plug component alone (`agmsg-driver.toml`, no
    /// `type.conf`) is no type: it replaces a type's plug ([`AgentType::plug_component`]).
    pub fn load(sources: &TypeLocations, trust: TrustLoader<'_>) -> Registry {
        let mut reg = Registry::default();
        let mut fixed: Vec<Entry> = bundled::TYPES.iter().map(|t| Entry { name: t.name.to_owned(), origin: Origin::Bundled }).collect();
        // agmsg's installed types' manifests, read once here: a row the catalog keeps takes its own.
        let mut installed: BTreeMap<PathBuf, Manifest> = BTreeMap::new();
        if let Some(skill) = &sources.skill_dir {
            for (name, dir) in type_dirs(&skill.join("scripts/drivers/types")) {
                match Manifest::read(&dir.join("type.conf")) {
                    Ok(manifest) => {
                        installed.insert(dir.clone(), manifest);
                        fixed.push(Entry { name, origin: Origin::Installed { dir, by: AGMSG } });
                    }
                    Err(e) => reg.warnings.push(format!("agmsg's type '{name}' cannot be read (ignored): {e}")),
                }
            }
        }
        let plugins = registry::candidates_in(&sources.plugin_bases, Axis::Types, None, trust, &[&super::manifest::TypeDirs])
            .map_err(|e| e.to_string());
        let catalog = catalog::read(Axis::Types, catalog::Sources { fixed, plugins });
        if let Some(e) = &catalog.plugins_unread {
            reg.warnings.push(format!("external types are ignored: {e}"));
        }
        reg.warnings.extend(catalog.warnings);
        reg.ignored = catalog.ignored;
        for mut row in catalog.rows {
            let name = row.entry.name.clone();
            let (manifest, bundled) = match &row.entry.origin {
                Origin::Bundled => match bundled::get(&name) {
                    Some(t) => (Manifest::parse(t.conf.as_bytes(), t.name).expect("bundled manifests are text"), Some(t.name)),
                    None => continue,
                },
                Origin::Installed { dir, .. } => match installed.remove(dir) {
                    Some(manifest) => (manifest, None),
                    None => continue,
                },
                // A row's plugin was read with its manifest (a type directory that can run has one).
                _ => match row.plugin.as_mut().and_then(|c| c.package_manifest.take()) {
                    Some(manifest) => (manifest, None),
                    None => continue,
                },
            };
            let (origin, shadows) = (row.entry.origin.clone(), std::mem::take(&mut row.shadows));
            let plugin_plug = row.into_plugin_component();
            reg.types.insert(name.clone(), AgentType { name, origin, manifest, shadows, bundled, plugin_plug });
        }
        reg
    }

    /// The registry from the environment: external types as the plugin trust file allows.
    pub fn from_env() -> Registry {
        Registry::load(&TypeLocations::from_env(), &registry::home_trust)
    }

    /// The type `name`, if it exists.
    pub fn get(&self, name: &str) -> Option<&AgentType> {
        self.types.get(name)
    }

    /// Every type, sorted by name (agmsg's `agmsg_known_types | sort -u`).
    pub fn types(&self) -> impl Iterator<Item = &AgentType> {
        self.types.values()
    }

    /// Why plugin candidates named `name` were skipped (untrusted, broken), one message each.
    pub fn ignored(&self, name: &str) -> &[String] {
        self.ignored.get(name).map_or(&[], Vec::as_slice)
    }

    /// The type `name`, or an error naming the types that exist and, for a type directory of that name
    /// that was skipped, why (not trusted: the command that trusts it).
    pub fn require(&self, name: &str) -> Result<&AgentType, HostError> {
        self.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.types.keys().map(String::as_str).collect();
            let mut message = format!("unknown agent type {name:?} (known: {})", known.join(", "));
            // On one line: an error is printed as one.
            for why in self.ignored.get(name).into_iter().flatten() {
                message.push_str("; ");
                message.push_str(&why.lines().map(str::trim).collect::<Vec<_>>().join(" "));
            }
            HostError::refused(message)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::trust::{TrustFile, TrustRecord};

    use trust_none as no_trust;

    fn write(dir: &Path, conf: &str) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("type.conf"), conf).unwrap();
    }

    #[test]
    fn bundled_alone() {
        let reg = Registry::load(&TypeLocations::default(), &no_trust);
        assert_eq!(reg.types().count(), 10);
        let codex = reg.get("codex").unwrap();
        assert_eq!(codex.origin, Origin::Bundled);
        assert_eq!(codex.value("model_arg"), "-m");
        assert!(codex.spawnable());
        assert!(!reg.get("hermes").unwrap().spawnable());
        assert!(!reg.get("agmsg-app").unwrap().spawnable());
        assert!(reg.get("copilot").unwrap().explicit_only());
        assert!(reg.get("cursor").unwrap().explicit_only(), "no detect= at all");
        assert!(!reg.get("gemini").unwrap().explicit_only());
        assert!(reg.get("agmsg-app").unwrap().template().unwrap().is_none());
        let t = reg.get("gemini").unwrap().template().unwrap().unwrap();
        assert_eq!(t.file, "template.md");
        assert!(t.text.unwrap().contains("whoami.sh \"$(pwd)\" gemini"));
        assert!(reg.require("nope").unwrap_err().message.contains("known: agmsg-app, antigravity"));
        assert!(reg.warnings.is_empty());
    }

    #[test]
    fn agmsg_installed_types_shadow_bundled_and_add() {
        let skill = tempfile::tempdir().unwrap();
        let types = skill.path().join("scripts/drivers/types");
        write(&types.join("codex"), "name=codex\ncli=codex-next\ntemplate=template.md\n");
        std::fs::write(types.join("codex/template.md"), "installed template\n").unwrap();
        write(&types.join("devin"), "name=devin\ncli=devin\nspawnable=yes\n");
        write(&types.join("bad name!"), "name=x\n");
        std::fs::create_dir_all(types.join("broken/type.conf")).unwrap();
        let reg = Registry::load(&TypeLocations { skill_dir: Some(skill.path().to_owned()), plugin_bases: vec![] }, &no_trust);
        let codex = reg.get("codex").unwrap();
        assert_eq!(codex.origin, Origin::Installed { dir: types.join("codex"), by: AGMSG });
        assert_eq!(codex.shadows, [Origin::Bundled]);
        assert_eq!(codex.value("cli"), "codex-next");
        assert_eq!(codex.value("model_arg"), "", "read unchanged: nothing merged from the bundled copy");
        assert_eq!(codex.template().unwrap().unwrap().text.unwrap(), "installed template\n");
        assert!(reg.get("devin").unwrap().spawnable());
        assert!(reg.get("bad name!").is_none());
        assert!(reg.get("broken").is_none());
        assert_eq!(reg.warnings.len(), 1, "{:?}", reg.warnings);
        assert!(reg.warnings[0].contains("'broken'"));
    }

    /// A trust file that pins the type directories `dirs` as they are now.
    fn trusting(dirs: &[&Path]) -> TrustFile {
        let mut trust = TrustFile::default();
        for dir in dirs {
            let name = dir.file_name().unwrap().to_str().unwrap();
            let (sha256, manifest_sha256) =
                registry::read_candidate(Axis::Types, name, dir, &TrustFile::default(), &[&crate::agent::manifest::TypeDirs])
                    .pinned
                    .unwrap();
            trust.trust(TrustRecord {
                axis: Axis::Types,
                name: name.into(),
                path: dir.to_path_buf(),
                sha256,
                manifest_sha256,
                consented: Default::default(),
                granted: Default::default(),
                provenance: None,
            });
        }
        trust
    }

    #[test]
    fn external_types_need_trust_and_later_bases_win() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let (a_kiro, b_kiro, b_codex) = (a.path().join("types/kiro"), b.path().join("types/kiro"), b.path().join("types/codex"));
        write(&a_kiro, "name=kiro\ncli=kiro-a\n");
        write(&b_kiro, "name=kiro\ncli=kiro-b\n");
        write(&b_codex, "name=codex\ncli=evil\n");
        let sources = TypeLocations { skill_dir: None, plugin_bases: vec![a.path().to_owned(), b.path().to_owned()] };

        let reg = Registry::load(&sources, &no_trust);
        assert!(reg.get("kiro").is_none());
        let unknown = reg.require("kiro").unwrap_err().message;
        assert!(
            unknown.starts_with("unknown agent type \"kiro\"") && unknown.contains("agmsg-host plugin trust types/kiro --path"),
            "says why, and how to trust it: {unknown}"
        );
        assert_eq!(reg.get("codex").unwrap().value("cli"), "codex", "an untrusted type never shadows");
        assert_eq!(reg.warnings.len(), 3);
        assert!(
            reg.warnings
                .iter()
                .all(|w| w.contains("not trusted") && w.contains("(ignored)") && w.contains("agmsg-host plugin trust types/")),
            "{:?}",
            reg.warnings
        );

        let all = trusting(&[&a_kiro, &b_kiro, &b_codex]);
        let reg = Registry::load(&sources, &|| Ok(TrustFile { version: 1, plugins: all.plugins.clone() }));
        let kiro = reg.get("kiro").unwrap();
        assert_eq!(kiro.value("cli"), "kiro-b");
        assert_eq!(kiro.origin, Origin::Plugin { dir: b_kiro.clone() });
        assert_eq!(kiro.shadows, [Origin::Plugin { dir: a_kiro.clone() }]);
        let codex = reg.get("codex").unwrap();
        assert_eq!(codex.value("cli"), "evil");
        assert_eq!(codex.shadows, [Origin::Bundled]);
        assert!(reg.warnings.is_empty(), "{:?}", reg.warnings);

        // Trust can pick one candidate: the earlier one then serves.
        let only_a = trusting(&[&a_kiro]);
        let reg = Registry::load(&sources, &|| Ok(TrustFile { version: 1, plugins: only_a.plugins.clone() }));
        assert_eq!(reg.get("kiro").unwrap().value("cli"), "kiro-a");
    }

    /// A plug component's package in `dir`: its manifest and `bytes` as the component.
    fn plug_package(dir: &Path, name: &str, bytes: &[u8]) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(
            dir.join("agmsg-driver.toml"),
            format!("name = \"{name}\"\naxis = \"types\"\nversion = \"0.1.0\"\napi = \"1.0.0\"\ncomponent = \"plug.wasm\"\n"),
        )
        .unwrap();
        std::fs::write(dir.join("plug.wasm"), bytes).unwrap();
    }

    #[test]
    fn the_plug_component_is_the_one_read_with_the_type() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let kiro = a.path().join("types/kiro");
        write(&kiro, "name=kiro\ncli=kiro\n");
        plug_package(&kiro, "kiro", b"kiro's plug");
        let codex_plug = b.path().join("types/codex");
        plug_package(&codex_plug, "codex", b"another codex plug");
        let sources = TypeLocations { skill_dir: None, plugin_bases: vec![a.path().to_owned(), b.path().to_owned()] };
        let trust = trusting(&[&kiro, &codex_plug]);
        let reg = Registry::load(&sources, &|| Ok(TrustFile { version: 1, plugins: trust.plugins.clone() }));

        // What runs is what was read and checked against trust, even if the file changes afterwards.
        std::fs::write(kiro.join("plug.wasm"), b"changed after the check").unwrap();
        let plug = reg.get("kiro").unwrap().plug_component().expect("its own plug");
        assert_eq!(&*plug.wasm, b"kiro's plug");
        assert_eq!(plug.sha256, registry::sha256_hex(b"kiro's plug"));
        assert!(plug.capabilities.0.is_empty());
        // A trusted plug component alone replaces a bundled type's plug; untrusted, the bundled one serves.
        assert_eq!(&*reg.get("codex").unwrap().plug_component().unwrap().wasm, b"another codex plug");
        let reg = Registry::load(&sources, &no_trust);
        let bundled = crate::agent::bundled::plug("codex").map(|p| p.sha256);
        assert_eq!(reg.get("codex").unwrap().plug_component().map(|p| p.sha256), bundled);
        assert!(reg.ignored("codex")[0].contains("agmsg-host plugin trust types/codex"), "{:?}", reg.warnings);
    }

    /// Of a name's trusted candidates, the last one answers for the plug, whichever its kind: a plug
    /// package after the type directory replaces the directory's (absent) plug; a type directory after
    /// the plug package answers with its own, here none (not the bundled plug either).
    #[test]
    fn the_last_trusted_candidate_answers_for_the_plug() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let codex_dir = a.path().join("types/codex");
        write(&codex_dir, "name=codex\ncli=codex-fork\n");
        let codex_plug = b.path().join("types/codex");
        plug_package(&codex_plug, "codex", b"a later codex plug");
        let trust = trusting(&[&codex_dir, &codex_plug]);
        let load = |bases: Vec<PathBuf>| {
            let sources = TypeLocations { skill_dir: None, plugin_bases: bases };
            Registry::load(&sources, &|| Ok(TrustFile { version: 1, plugins: trust.plugins.clone() }))
        };
        let reg = load(vec![a.path().to_owned(), b.path().to_owned()]);
        let codex = reg.get("codex").unwrap();
        assert_eq!((codex.value("cli"), &codex.origin), ("codex-fork", &Origin::Plugin { dir: codex_dir.clone() }));
        assert_eq!(codex.plug_component().map(|p| p.wasm.into_owned()), Some(b"a later codex plug".to_vec()));
        let reg = load(vec![b.path().to_owned(), a.path().to_owned()]);
        let codex = reg.get("codex").unwrap();
        assert_eq!(codex.origin, Origin::Plugin { dir: codex_dir.clone() });
        assert!(codex.plug_component().is_none(), "the type directory, last, ships no plug");
        assert!(reg.warnings.is_empty(), "{:?}", reg.warnings);
    }

    #[test]
    fn a_changed_type_is_untrusted_again() {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("types/kiro");
        write(&dir, "name=kiro\ncli=kiro\ntemplate=template.md\n");
        std::fs::write(dir.join("template.md"), "hello\n").unwrap();
        let trust = trusting(&[&dir]);
        let sources = TypeLocations { skill_dir: None, plugin_bases: vec![base.path().to_owned()] };
        let load = || Registry::load(&sources, &|| Ok(TrustFile { version: 1, plugins: trust.plugins.clone() }));
        assert_eq!(load().get("kiro").unwrap().template().unwrap().unwrap().text.unwrap(), "hello\n");

        std::fs::write(dir.join("launch.mjs"), "new code").unwrap();
        let reg = load();
        assert!(reg.get("kiro").is_none());
        assert!(reg.warnings[0].contains("its files (template, plug, other code) changed since it was trusted"), "{:?}", reg.warnings);
        std::fs::remove_file(dir.join("launch.mjs")).unwrap();
        assert!(load().get("kiro").is_some(), "back as trusted");

        std::fs::write(dir.join("type.conf"), "name=kiro\ncli=other\n").unwrap();
        let reg = load();
        assert!(reg.get("kiro").is_none());
        assert!(reg.warnings[0].contains("its type.conf changed since it was trusted"), "{:?}", reg.warnings);
    }

    #[test]
    fn a_hostile_type_dir_is_refused() {
        let base = tempfile::tempdir().unwrap();
        let secret = base.path().join("secret.txt");
        std::fs::write(&secret, "secret").unwrap();
        let types = base.path().join("types");
        // A template that is a link out of the directory.
        write(&types.join("linky"), "name=linky\ntemplate=template.md\n");
        std::os::unix::fs::symlink(&secret, types.join("linky/template.md")).unwrap();
        // A template that climbs out.
        write(&types.join("climb"), "name=climb\ntemplate=../../secret.txt\n");
        // The type directory itself a link.
        write(&base.path().join("elsewhere/real"), "name=real\n");
        std::os::unix::fs::symlink(base.path().join("elsewhere/real"), types.join("real")).unwrap();
        let dirs: Vec<PathBuf> = ["linky", "climb", "real"].iter().map(|n| types.join(n)).collect();
        // Even a trust record for each (as if trusted before the change) lets none of them through.
        let mut trust = TrustFile::default();
        for dir in &dirs {
            let name = dir.file_name().unwrap().to_str().unwrap();
            trust.trust(TrustRecord {
                axis: Axis::Types,
                name: name.into(),
                path: dir.clone(),
                sha256: "x".into(),
                manifest_sha256: "y".into(),
                consented: Default::default(),
                granted: Default::default(),
                provenance: None,
            });
        }
        let sources = TypeLocations { skill_dir: None, plugin_bases: vec![base.path().to_owned()] };
        let reg = Registry::load(&sources, &|| Ok(TrustFile { version: 1, plugins: trust.plugins.clone() }));
        for name in ["linky", "climb", "real"] {
            assert!(reg.get(name).is_none(), "{name}");
        }
        let all = reg.warnings.join("\n");
        assert!(all.contains("linky/template.md is a symbolic link (refused"), "{all}");
        assert!(all.contains("invalid template \"../../secret.txt\": must be relative, without '..'"), "{all}");
        assert!(
            all.contains("types/real is not a directory (or is a symbolic link; refused)") || all.contains("types/real is a symbolic link"),
            "{all}"
        );
        assert!(all.matches("cannot run (ignored)").count() == 3, "{all}");
    }
}
