//! Which agent types exist and where each one comes from.
//!
//! Bases, in order (a later candidate of a name replaces an earlier one, as on the other axes and in
//! agmsg's `agmsg_type_dir`):
//!
//! 1. the types bundled in this binary ([`super::bundled`]);
//! 2. agmsg's own installed types, read unchanged: `<skill>/scripts/drivers/types/<name>/type.conf`,
//!    where `<skill>` is `AGMSG_SKILL_DIR`, else `~/.agents/skills/agmsg` (agmsg's builtins, always
//!    trusted, as agmsg trusts them: an installed agmsg newer than this binary's copy wins);
//! 3. external types: `$AGMSG_HOME/plugins/types/<name>/`, then each `AGMSG_PLUGIN_DIRS` base's
//!    `types/<name>/`, visible only once trusted ([`Trust`]).
//!
//! A candidate whose manifest cannot be read (not a regular file, too large, not UTF-8 text) is
//! skipped with a warning, so the candidate before it serves. Only names the driver-name rule allows
//! (`[a-zA-Z0-9_-]+`) are types.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::bundled::{self, BundledType};
use super::manifest::{self, Manifest};
use super::plug::PlugInfo;

/// Where a type comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Built into this binary (agmsg 1.2.1's types).
    Bundled,
    /// agmsg's own installed type, in this directory.
    Agmsg(PathBuf),
    /// A trusted external type, in this directory.
    Plugin(PathBuf),
}

impl Origin {
    /// `bundled`, `agmsg` or `plugin`.
    pub fn label(&self) -> &'static str {
        match self {
            Origin::Bundled => "bundled",
            Origin::Agmsg(_) => "agmsg",
            Origin::Plugin(_) => "plugin",
        }
    }

    /// The type's directory, for a type on disk.
    pub fn dir(&self) -> Option<&Path> {
        match self {
            Origin::Bundled => None,
            Origin::Agmsg(dir) | Origin::Plugin(dir) => Some(dir),
        }
    }

    /// One line for people: `bundled` or `agmsg /path` / `plugin /path`.
    pub fn describe(&self) -> String {
        match self.dir() {
            None => self.label().to_owned(),
            Some(dir) => format!("{} {}", self.label(), dir.display()),
        }
    }
}

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
    fn bundled(t: &'static BundledType) -> AgentType {
        let manifest = Manifest::parse(t.conf.as_bytes(), t.name).expect("bundled manifests are text");
        AgentType { name: t.name.to_owned(), origin: Origin::Bundled, manifest, shadows: Vec::new(), bundled: Some(t.name) }
    }

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
        self.value("spawnable") == "yes" || !self.value("spawn").is_empty()
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
            return t.files.iter().find(|(f, _)| *f == file).map(|(_, text)| (*text).to_owned()).ok_or_else(|| format!("bundled type {} has no file {file}", self.name));
        }
        let path = self.dir().expect("a type on disk").join(file);
        let bytes = crate::plugin::read_file(&path, crate::plugin::MAX_TEXT_BYTES)?;
        String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text", path.display()))
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

/// The installed command's name: the skill directory's basename (`agmsg`, or a custom install name),
/// as agmsg's actas prompt uses it.
pub fn skill_name() -> String {
    skill_dir().and_then(|d| d.file_name().and_then(|n| n.to_str()).map(str::to_owned)).filter(|n| !n.is_empty()).unwrap_or_else(|| "agmsg".to_owned())
}

/// Where types are looked for besides the bundled ones.
#[derive(Clone, Debug, Default)]
pub struct Sources {
    /// agmsg's install directory (its types: `scripts/drivers/types/`).
    pub skill_dir: Option<PathBuf>,
    /// External plugin bases, in order (their types: `types/<name>/`).
    pub plugin_bases: Vec<PathBuf>,
}

impl Sources {
    /// From the environment: [`skill_dir`] and the plugin bases every axis uses
    /// ([`crate::plugin::registry::bases`]).
    pub fn from_env() -> Sources {
        Sources { skill_dir: skill_dir(), plugin_bases: crate::plugin::registry::bases() }
    }
}

/// An external type found under a plugin base, before trust decides whether it is visible.
#[derive(Debug)]
pub struct ExternalType {
    pub name: String,
    /// Its directory (absolute when the base is).
    pub dir: PathBuf,
    /// Its manifest, or why it cannot be read.
    pub manifest: Result<Manifest, String>,
    /// sha256 of `type.conf` (what trust pins as the manifest).
    pub manifest_sha256: Option<String>,
    /// sha256 over every other file of the directory (paths and contents; links by their target),
    /// what trust pins as the code: its template, plugs and launcher.
    pub content_sha256: Option<String>,
}

/// Whether an external type may be seen: `Ok` when trusted, else why not (ending the sentence
/// "external plugin 'types/NAME' found at DIR but ...") and how to opt in.
pub type Trust<'a> = &'a dyn Fn(&ExternalType) -> Result<(), String>;

/// The trust answer until the plugin trust file knows a types axis: no external type is trusted.
pub fn trust_none(_: &ExternalType) -> Result<(), String> {
    Err("not trusted (ignored): this agmsg-host cannot trust external types yet".to_owned())
}

/// The trust answer of the plugin trust file for external types registered under `axis` (the types
/// axis, once `Axis` has one): trusted when a record pins this directory, its `type.conf`
/// (`manifest_sha256`) and the rest of its files (`sha256` = [`ExternalType::content_sha256`]). A type
/// declares no capabilities. Untrusted: why, and the command that trusts it.
pub fn trust_file_answer(trust: &crate::plugin::trust::TrustFile, axis: crate::axis::Axis) -> impl Fn(&ExternalType) -> Result<(), String> + '_ {
    move |ext: &ExternalType| {
        let (Some(content), Some(manifest)) = (&ext.content_sha256, &ext.manifest_sha256) else {
            return Err("cannot be read".to_owned());
        };
        let declared = crate::capabilities::Capabilities::default();
        match trust.state(axis, &ext.name, &ext.dir, (content, manifest), &declared) {
            crate::plugin::trust::TrustState::Untrusted(why) => Err(format!(
                "{why} (ignored).\n       Opt in if you put it there intentionally: agmsg-host plugin trust {axis}/{}",
                ext.name
            )),
            _ => Ok(()),
        }
    }
}

/// Every external type under `bases` (or only those named `name`), in base order.
pub fn external_types(bases: &[PathBuf], name: Option<&str>) -> Vec<ExternalType> {
    let mut found = Vec::new();
    for base in bases {
        for (name, dir) in type_dirs(&base.join("types"), name) {
            let conf = dir.join("type.conf");
            let bytes = crate::plugin::read_file(&conf, manifest::MAX_MANIFEST_BYTES);
            let manifest_sha256 = bytes.as_ref().ok().map(|b| crate::plugin::sha256_hex(b));
            let manifest = bytes.and_then(|b| Manifest::parse(&b, &conf.display().to_string()));
            let content_sha256 = content_sha256(&dir).ok();
            found.push(ExternalType { name, dir, manifest, manifest_sha256, content_sha256 });
        }
    }
    found
}

/// The `<name>/` directories under `types_dir` that hold a `type.conf` (only `name`, when given),
/// sorted by name.
fn type_dirs(types_dir: &Path, name: Option<&str>) -> Vec<(String, PathBuf)> {
    let names: Vec<String> = match name {
        Some(name) => vec![name.to_owned()],
        None => {
            let Ok(entries) = std::fs::read_dir(types_dir) else { return Vec::new() };
            entries.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect()
        }
    };
    let mut dirs: Vec<(String, PathBuf)> = names
        .into_iter()
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

/// sha256 over a type directory's files other than `type.conf`: each entry's relative path and
/// content hash (a symlink: its target text, never followed), sorted; at most 4 levels and 4096
/// entries.
pub fn content_sha256(dir: &Path) -> Result<String, String> {
    fn walk(root: &Path, rel: &Path, depth: usize, out: &mut Vec<String>) -> Result<(), String> {
        let here = root.join(rel);
        let entries = std::fs::read_dir(&here).map_err(|e| format!("{}: {e}", here.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("{}: {e}", here.display()))?;
            let rel = rel.join(entry.file_name());
            if rel == Path::new("type.conf") {
                continue;
            }
            if out.len() >= 4096 {
                return Err(format!("{}: too many files", root.display()));
            }
            let kind = entry.file_type().map_err(|e| format!("{}: {e}", rel.display()))?;
            let shown = rel.to_string_lossy().into_owned();
            if kind.is_symlink() {
                let target = std::fs::read_link(root.join(&rel)).map_err(|e| format!("{}: {e}", rel.display()))?;
                out.push(format!("{shown}\0link\0{}", target.to_string_lossy()));
            } else if kind.is_dir() {
                if depth >= 4 {
                    return Err(format!("{}: nested too deep", root.join(&rel).display()));
                }
                out.push(format!("{shown}\0dir"));
                walk(root, &rel, depth + 1, out)?;
            } else {
                let bytes = crate::plugin::read_file(&root.join(&rel), crate::plugin::MAX_COMPONENT_BYTES)?;
                out.push(format!("{shown}\0file\0{}", crate::plugin::sha256_hex(&bytes)));
            }
        }
        Ok(())
    }
    let mut lines = Vec::new();
    walk(dir, Path::new(""), 0, &mut lines)?;
    lines.sort();
    Ok(crate::plugin::sha256_hex(lines.join("\n").as_bytes()))
}

/// The types that exist, each the last eligible candidate of its name.
#[derive(Debug, Default)]
pub struct Registry {
    types: BTreeMap<String, AgentType>,
    /// Candidates that were skipped (untrusted, unreadable), one message each.
    pub warnings: Vec<String>,
}

impl Registry {
    /// The registry from `sources`, external types shown only when `trusted` says so.
    pub fn load(sources: &Sources, trusted: Trust<'_>) -> Registry {
        let mut reg = Registry::default();
        for t in bundled::TYPES {
            reg.types.insert(t.name.to_owned(), AgentType::bundled(t));
        }
        if let Some(skill) = &sources.skill_dir {
            for (name, dir) in type_dirs(&skill.join("scripts/drivers/types"), None) {
                match Manifest::read(&dir.join("type.conf")) {
                    Ok(manifest) => reg.add(name, Origin::Agmsg(dir), manifest),
                    Err(e) => reg.warnings.push(format!("agmsg's type '{name}' cannot be read (ignored): {e}")),
                }
            }
        }
        for ext in external_types(&sources.plugin_bases, None) {
            let dir = ext.dir.display();
            match (&ext.manifest, trusted(&ext)) {
                (Err(e), _) => reg.warnings.push(format!("external plugin 'types/{}' found at {dir} cannot be read (ignored): {e}", ext.name)),
                (Ok(_), Err(why)) => reg.warnings.push(format!("external plugin 'types/{}' found at {dir} but {why}", ext.name)),
                (Ok(_), Ok(())) => {
                    let ExternalType { name, dir, manifest, .. } = ext;
                    reg.add(name, Origin::Plugin(dir), manifest.expect("checked"));
                }
            }
        }
        reg
    }

    /// The registry from the environment. External types stay invisible until trust for types is
    /// wired ([`trust_none`]).
    pub fn from_env() -> Registry {
        Registry::load(&Sources::from_env(), &trust_none)
    }

    fn add(&mut self, name: String, origin: Origin, manifest: Manifest) {
        let shadows = match self.types.remove(&name) {
            Some(old) => {
                let mut shadows = old.shadows;
                shadows.push(old.origin);
                shadows
            }
            None => Vec::new(),
        };
        self.types.insert(name.clone(), AgentType { name, origin, manifest, shadows, bundled: None });
    }

    /// The type `name`, if it exists.
    pub fn get(&self, name: &str) -> Option<&AgentType> {
        self.types.get(name)
    }

    /// Every type, sorted by name (agmsg's `agmsg_known_types | sort -u`).
    pub fn types(&self) -> impl Iterator<Item = &AgentType> {
        self.types.values()
    }

    /// The type `name`, or an error naming the types that exist.
    pub fn require(&self, name: &str) -> Result<&AgentType, String> {
        self.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.types.keys().map(String::as_str).collect();
            format!("unknown agent type {name:?} (known: {})", known.join(", "))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, conf: &str) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("type.conf"), conf).unwrap();
    }

    #[test]
    fn bundled_alone() {
        let reg = Registry::load(&Sources::default(), &trust_none);
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
        assert!(reg.require("nope").unwrap_err().contains("known: agmsg-app, antigravity"));
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
        let reg = Registry::load(&Sources { skill_dir: Some(skill.path().to_owned()), plugin_bases: vec![] }, &trust_none);
        let codex = reg.get("codex").unwrap();
        assert_eq!(codex.origin, Origin::Agmsg(types.join("codex")));
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

    #[test]
    fn external_types_need_trust_and_later_bases_win() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        write(&a.path().join("types/kiro"), "name=kiro\ncli=kiro-a\n");
        write(&b.path().join("types/kiro"), "name=kiro\ncli=kiro-b\n");
        write(&b.path().join("types/codex"), "name=codex\ncli=evil\n");
        let sources = Sources { skill_dir: None, plugin_bases: vec![a.path().to_owned(), b.path().to_owned()] };

        let reg = Registry::load(&sources, &trust_none);
        assert!(reg.get("kiro").is_none());
        assert_eq!(reg.get("codex").unwrap().value("cli"), "codex", "an untrusted type never shadows");
        assert_eq!(reg.warnings.len(), 3);
        assert!(reg.warnings.iter().all(|w| w.contains("not trusted") && w.contains("(ignored)")));

        let all = |_: &ExternalType| Ok(());
        let reg = Registry::load(&sources, &all);
        let kiro = reg.get("kiro").unwrap();
        assert_eq!(kiro.value("cli"), "kiro-b");
        assert_eq!(kiro.origin, Origin::Plugin(b.path().join("types/kiro")));
        assert_eq!(kiro.shadows, [Origin::Plugin(a.path().join("types/kiro"))]);
        assert_eq!(reg.get("codex").unwrap().value("cli"), "evil");

        // Trust can pick one candidate: the earlier one then serves.
        let only_a = |e: &ExternalType| if e.dir.starts_with(a.path()) { Ok(()) } else { Err("not trusted".into()) };
        let reg = Registry::load(&sources, &only_a);
        assert_eq!(reg.get("kiro").unwrap().value("cli"), "kiro-a");
    }

    #[test]
    fn the_trust_file_answers_for_external_types() {
        use crate::axis::Axis;
        use crate::plugin::trust::{TrustFile, TrustRecord};
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("types/kiro");
        write(&dir, "name=kiro\ncli=kiro\n");
        let ext = external_types(&[base.path().to_owned()], Some("kiro")).pop().unwrap();
        // Any axis value stands in for the types axis here.
        let axis = Axis::Terminal;
        let mut trust = TrustFile::default();
        assert!(trust_file_answer(&trust, axis)(&ext).unwrap_err().contains("agmsg-host plugin trust terminal/kiro"));
        trust.trust(TrustRecord {
            axis,
            name: "kiro".into(),
            path: dir.clone(),
            sha256: ext.content_sha256.clone().unwrap(),
            manifest_sha256: ext.manifest_sha256.clone().unwrap(),
            consented: Default::default(),
            granted: Default::default(),
        });
        let answer = trust_file_answer(&trust, axis);
        assert!(answer(&ext).is_ok());
        let sources = Sources { skill_dir: None, plugin_bases: vec![base.path().to_owned()] };
        assert_eq!(Registry::load(&sources, &answer).get("kiro").unwrap().value("cli"), "kiro");
        // A changed manifest or file is untrusted again.
        std::fs::write(dir.join("launch.mjs"), "new code").unwrap();
        let changed = external_types(&[base.path().to_owned()], Some("kiro")).pop().unwrap();
        assert!(answer(&changed).unwrap_err().contains("changed"));
        std::fs::remove_file(dir.join("launch.mjs")).unwrap();
        std::fs::write(dir.join("type.conf"), "name=kiro\ncli=other\n").unwrap();
        let changed = external_types(&[base.path().to_owned()], Some("kiro")).pop().unwrap();
        assert!(answer(&changed).unwrap_err().contains("changed"));
    }

    #[test]
    fn external_hashes_pin_manifest_and_code() {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("types/kiro");
        write(&dir, "name=kiro\n");
        std::fs::write(dir.join("launch.mjs"), "a").unwrap();
        let first = &external_types(&[base.path().to_owned()], Some("kiro"))[0];
        let (m1, c1) = (first.manifest_sha256.clone().unwrap(), first.content_sha256.clone().unwrap());
        std::fs::write(dir.join("launch.mjs"), "b").unwrap();
        let second = &external_types(&[base.path().to_owned()], Some("kiro"))[0];
        assert_eq!(second.manifest_sha256.as_ref(), Some(&m1));
        assert_ne!(second.content_sha256.as_ref(), Some(&c1));
        std::fs::write(dir.join("type.conf"), "name=kiro\ncli=x\n").unwrap();
        let third = &external_types(&[base.path().to_owned()], Some("kiro"))[0];
        assert_ne!(third.manifest_sha256.as_ref(), Some(&m1));
        assert!(external_types(&[base.path().to_owned()], Some("../x")).is_empty());
    }
}
