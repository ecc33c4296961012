//! Finding plugins (agmsg's ADR 0002 order) and deciding which candidate runs.
//!
//! Bases, in order: bundled drivers (always trusted), `$AGMSG_HOME/plugins`, then each `:`-separated
//! entry of `AGMSG_PLUGIN_DIRS`. Under a base, a plugin is the directory `<axis>/<name>/` holding
//! `agmsg-driver.toml`, or on the types axis `type.conf` (an agent type). Among candidates that may run (bundled or trusted), the later base wins, so a
//! trusted plugin may shadow a bundled driver; an untrusted one is ignored with a warning that prints
//! the exact command that trusts it.

use crate::plugin::user_file::UserFile;
use std::path::{Path, PathBuf};

use super::DirPackage;
use super::manifest::{MANIFEST_FILE, PluginManifest};
pub use super::sha256_hex;
use super::trust::{TrustFile, TrustState, Untrusted};
use crate::axis::Axis;
use crate::capabilities::Capabilities;
use crate::error::HostError;

/// `${AGMSG_HOME:-~/.agents/agmsg}`, made absolute (trust records are matched by absolute path).
pub fn agmsg_home() -> Result<PathBuf, HostError> {
    let home = match std::env::var_os("AGMSG_HOME").filter(|h| !h.is_empty()) {
        Some(home) => PathBuf::from(home),
        None => {
            let home = std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .ok_or_else(|| HostError::refused("cannot find agmsg's home: set AGMSG_HOME or HOME"))?;
            PathBuf::from(home).join(".agents/agmsg")
        }
    };
    std::path::absolute(&home).map_err(|e| HostError::refused(format!("{}: {e}", home.display())))
}

/// A plugin directory found under a base (bundled drivers are not candidates here: callers know
/// them). On every axis it is a driver component with its manifest (`agmsg-driver.toml`); on the types
/// axis it may instead be an agent type (`type.conf`, its template, and optionally a plug component).
#[derive(Debug)]
pub struct Candidate {
    pub axis: Axis,
    pub name: String,
    /// The plugin's directory (absolute).
    pub dir: PathBuf,
    /// Its component's manifest; `None` when it cannot be read ([`Candidate::broken`] says why) or for
    /// an agent type that ships no plug component.
    pub manifest: Option<PluginManifest>,
    /// Whether it is a package of its axis's own kind ([`super::DirPackage`]: an agent type's
    /// directory, which holds `type.conf`).
    pub is_type_dir: bool,
    /// That package's own manifest (`type.conf`), when it can be read.
    pub package_manifest: Option<super::conf::Manifest>,
    /// That type's files, as read with it (empty otherwise).
    pub type_files: Vec<TypeFile>,
    /// The component and its sha256, when it has one and it can be read (read once: what was hashed is
    /// what runs).
    pub wasm: Option<Vec<u8>>,
    pub sha256: Option<String>,
    /// What trust pins: the code's sha256 (a component: its bytes; an agent type: every file but
    /// `type.conf`) and the manifest's (`agmsg-driver.toml`; an agent type: `type.conf`).
    pub pinned: Option<(String, String)>,
    /// Why it cannot run, trusted or not.
    pub broken: Option<String>,
    pub state: TrustState,
}

impl Candidate {
    /// The plugin `axis/name` in `dir` before anything of it is read: nothing known, never trusted.
    fn unread(axis: Axis, name: &str, dir: &Path, is_type_dir: bool) -> Candidate {
        Candidate {
            axis,
            name: name.to_owned(),
            dir: dir.to_owned(),
            manifest: None,
            is_type_dir,
            package_manifest: None,
            type_files: Vec::new(),
            wasm: None,
            sha256: None,
            pinned: None,
            broken: None,
            state: TrustState::Untrusted(Untrusted::Never),
        }
    }

    /// The component's path (from the manifest).
    pub fn component(&self) -> Option<PathBuf> {
        self.manifest.as_ref().map(|m| self.dir.join(&m.component))
    }

    /// What it runs with: what it declared AND the user granted, when trusted; nothing otherwise.
    pub fn runs_with(&self) -> Capabilities {
        match &self.state {
            TrustState::Trusted(caps) => caps.clone(),
            _ => Capabilities::default(),
        }
    }

    /// What its manifest asks for (an agent type declares nothing, and its plug runs with nothing).
    pub fn declared(&self) -> Capabilities {
        match (self.is_type_dir, &self.manifest) {
            (false, Some(m)) => m.capabilities(),
            _ => Capabilities::default(),
        }
    }

    /// [`Candidate::into_source`], its bytes copied.
    pub fn source(&self) -> Option<crate::runtime::DriverSource> {
        Some(crate::runtime::DriverSource {
            path: self.component(),
            capabilities: self.runs_with(),
            name: self.name.clone(),
            sha256: self.sha256.clone()?,
            wasm: std::borrow::Cow::Owned(self.wasm.clone()?),
            settings: Vec::new(),
        })
    }

    /// The component ready to load, with what it runs with (for a candidate the registry chose: trusted
    /// and readable); `None` for an agent type without a plug component.
    pub fn into_source(self) -> Option<crate::runtime::DriverSource> {
        let path = self.component();
        let capabilities = self.runs_with();
        Some(crate::runtime::DriverSource {
            path,
            capabilities,
            name: self.name,
            sha256: self.sha256?,
            wasm: std::borrow::Cow::Owned(self.wasm?),
            settings: Vec::new(),
        })
    }

    /// Whether trusting it would let it run (it is only untrusted, not broken).
    pub fn only_untrusted(&self) -> bool {
        self.broken.is_none() && matches!(self.state, TrustState::Untrusted(_))
    }

    /// Why this candidate cannot run, if it cannot.
    pub fn problem(&self) -> Option<String> {
        match (&self.broken, &self.state) {
            (Some(why), _) => Some(why.clone()),
            (None, TrustState::Untrusted(why)) => Some(why.to_string()),
            _ => None,
        }
    }
}

/// The plugin bases after the bundled drivers, in order.
/// Without a home (no `AGMSG_HOME` nor `HOME`) there is no `$AGMSG_HOME/plugins`: bundled drivers
/// still work.
pub fn bases() -> Vec<PathBuf> {
    let mut bases: Vec<PathBuf> = agmsg_home().ok().map(|home| home.join("plugins")).into_iter().collect();
    if let Some(dirs) = std::env::var_os("AGMSG_PLUGIN_DIRS") {
        bases.extend(std::env::split_paths(&dirs).filter(|p| !p.as_os_str().is_empty()));
    }
    bases.into_iter().map(|b| std::path::absolute(&b).unwrap_or(b)).collect()
}

/// Read one plugin directory: its manifest (checked against where it was found), its component's
/// hash, and its trust state. A directory holding its axis's own manifest ([`Axis::dir_manifest`]: an
/// agent type's `type.conf`) is a package of that kind, read through its [`DirPackage`] among `dirs`.
pub fn read_candidate(axis: Axis, name: &str, dir: &Path, trust: &TrustFile, dirs: &[&dyn DirPackage]) -> Candidate {
    if is_package_dir(axis, dir) {
        return match super::dir_package(dirs, axis) {
            Some(kind) => read_dir_package(kind, name, dir, trust),
            None => {
                let mut candidate = Candidate::unread(axis, name, dir, true);
                candidate.broken = Some(format!("this command cannot read {axis} packages (no reader given for the axis)"));
                candidate
            }
        };
    }
    let mut candidate = Candidate::unread(axis, name, dir, false);
    let read = PluginManifest::read(&dir.join(MANIFEST_FILE)).and_then(|(m, sha)| check_identity(&m, axis, name, dir).map(|()| (m, sha)));
    let (manifest, manifest_sha256) = match read {
        Ok(read) => read,
        Err(e) => {
            candidate.broken = Some(e.message);
            return candidate;
        }
    };
    match super::read_file(&dir.join(&manifest.component), super::MAX_COMPONENT_BYTES) {
        Ok(wasm) => {
            let sha256 = sha256_hex(&wasm);
            candidate.state = trust.state(axis, name, dir, (&sha256, &manifest_sha256), &manifest.capabilities());
            candidate.pinned = Some((sha256.clone(), manifest_sha256));
            candidate.sha256 = Some(sha256);
            candidate.wasm = Some(wasm);
        }
        Err(e) => candidate.broken = Some(e.message),
    }
    candidate.manifest = Some(manifest);
    candidate
}

/// A component manifest must name the axis and name it is installed as.
fn check_identity(m: &PluginManifest, axis: Axis, name: &str, dir: &Path) -> Result<(), HostError> {
    if m.axis != axis || m.name != name {
        return Err(HostError::refused(format!(
            "{}: declares {}/{} but is installed as {axis}/{name}",
            dir.join(MANIFEST_FILE).display(),
            m.axis,
            m.name
        )));
    }
    Ok(())
}

/// Whether `dir` is a package of `axis`'s own kind: it holds the axis's own manifest file (an agent
/// type's `type.conf`), whatever that is (a link or a FIFO there is then refused by the reader).
pub fn is_package_dir(axis: Axis, dir: &Path) -> bool {
    axis.dir_manifest().is_some_and(|file| dir.join(file).symlink_metadata().is_ok())
}

/// What a package directory of its axis's own kind (an agent type's) holds, read as one snapshot with
/// no link followed ([`super::tree`]): its manifest (`type.conf`), and the plug component its
/// `agmsg-driver.toml` names, if it ships one.
pub struct AgentTypeFiles {
    pub tree: super::tree::Tree,
    /// Its entries, each file with its size and sha256 ([`super::tree::Tree::hashed`]: hashed once).
    pub hashed: Vec<(String, Option<(usize, String)>)>,
    /// Its own manifest's file name (`type.conf`).
    pub manifest_file: &'static str,
    pub conf: super::conf::Manifest,
    pub conf_sha256: String,
    /// The plug component's manifest and bytes.
    pub plug: Option<(PluginManifest, Vec<u8>)>,
}

impl AgentTypeFiles {
    /// Read the package directory `dir` of `kind`, to be known as `name`: refused when it is a link,
    /// holds a link or anything but files and directories, its manifest is not text or `kind` refuses
    /// it ([`DirPackage::check`]: for a type, its `template=` or `spawn=` absolute or climbing out, its
    /// `hooks_file=` not a runtime's delivery location or another type's), its plug manifest names
    /// another driver or asks for capabilities (a type's plug runs with none), or its plug component is
    /// missing. Each is [`crate::error::ExitClass::Refused`].
    pub fn read(kind: &dyn DirPackage, name: &str, dir: &Path) -> Result<AgentTypeFiles, HostError> {
        Self::from_tree(kind, name, dir, super::tree::read(dir)?)
    }

    /// [`AgentTypeFiles::read`] of a tree already read (a published type's, from its artifact), `dir`
    /// naming where it came from in messages.
    pub fn from_tree(kind: &dyn DirPackage, name: &str, dir: &Path, tree: super::tree::Tree) -> Result<AgentTypeFiles, HostError> {
        let axis = kind.axis();
        let manifest_file = axis.dir_manifest().expect("an axis with directory packages names their manifest");
        let conf_path = dir.join(manifest_file);
        let conf_bytes = tree
            .file(Path::new(manifest_file))
            .ok_or_else(|| HostError::refused(format!("{} is not a regular file", conf_path.display())))?;
        if conf_bytes.len() as u64 > super::conf::MAX_MANIFEST_BYTES {
            return Err(HostError::refused(format!(
                "{} is larger than {}",
                conf_path.display(),
                super::size_text(super::conf::MAX_MANIFEST_BYTES)
            )));
        }
        let conf = super::conf::Manifest::parse(conf_bytes, &conf_path.display().to_string())?;
        kind.check(name, &conf, &conf_path)?;
        let hashed = tree.hashed();
        let conf_sha256 = hashed
            .iter()
            .find(|(p, _)| p == manifest_file)
            .and_then(|(_, f)| f.as_ref())
            .map(|(_, sha)| sha.clone())
            .expect("the manifest is a file of the tree");
        let plug = match tree.file(Path::new(MANIFEST_FILE)) {
            None => None,
            Some(bytes) => {
                let path = dir.join(MANIFEST_FILE);
                let text = std::str::from_utf8(bytes).map_err(|_| HostError::refused(format!("{} is not UTF-8", path.display())))?;
                let m = PluginManifest::parse(text, &path)?;
                check_identity(&m, axis, name, dir)?;
                let asked = m.capabilities();
                if !asked.0.is_empty() {
                    return Err(HostError::refused(format!(
                        "{}: an agent type's plug component runs with no capabilities, but it asks for {}",
                        path.display(),
                        asked.summary()
                    )));
                }
                let wasm = tree.file(&m.component).ok_or_else(|| {
                    HostError::refused(format!("its plug component {} is not a file in {}", m.component.display(), dir.display()))
                })?;
                let wasm = wasm.to_vec();
                Some((m, wasm))
            }
        };
        Ok(AgentTypeFiles { manifest_file, conf, conf_sha256, plug, tree, hashed })
    }

    /// What trust pins: every file but the manifest (template, plug, launchers), and the manifest.
    pub fn pinned(&self) -> (String, String) {
        (super::tree::pin(&self.hashed, self.manifest_file), self.conf_sha256.clone())
    }

    /// Every file of the directory, with its size and sha256 (what consent and `inspect` list).
    pub fn listing(&self) -> Vec<TypeFile> {
        self.hashed
            .iter()
            .filter_map(|(path, file)| {
                file.as_ref().map(|(bytes, sha256)| TypeFile { path: path.clone(), bytes: *bytes, sha256: sha256.clone() })
            })
            .collect()
    }
}

/// One file of an agent type's directory: what the user is shown of it before trusting it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeFile {
    /// Relative to the type's directory, `/`-separated.
    pub path: String,
    pub bytes: usize,
    pub sha256: String,
}

/// [`read_candidate`] of a package directory of its axis's own kind.
fn read_dir_package(kind: &dyn DirPackage, name: &str, dir: &Path, trust: &TrustFile) -> Candidate {
    let axis = kind.axis();
    let mut candidate = Candidate::unread(axis, name, dir, true);
    match AgentTypeFiles::read(kind, name, dir) {
        Ok(files) => {
            let pinned = files.pinned();
            // Said in a package's words: its manifest or its other files changed.
            candidate.state = match trust.state(axis, name, dir, (&pinned.0, &pinned.1), &Capabilities::default()) {
                TrustState::Untrusted(Untrusted::ComponentChanged) => TrustState::Untrusted(Untrusted::TypeFilesChanged),
                TrustState::Untrusted(Untrusted::ManifestChanged) => TrustState::Untrusted(Untrusted::TypeConfChanged),
                state => state,
            };
            candidate.pinned = Some(pinned);
            candidate.type_files = files.listing();
            candidate.package_manifest = Some(files.conf);
            if let Some((manifest, wasm)) = files.plug {
                // Hashed once with the tree: the plug is one of its files.
                let listed =
                    super::tree::normalize(&manifest.component).and_then(|rel| candidate.type_files.iter().find(|f| f.path == rel));
                candidate.sha256 = Some(listed.map_or_else(|| sha256_hex(&wasm), |f| f.sha256.clone()));
                candidate.wasm = Some(wasm);
                candidate.manifest = Some(manifest);
            }
        }
        Err(e) => candidate.broken = Some(e.message),
    }
    candidate
}

/// A name a driver can be selected by (and a safe path segment): the contract's rule.
pub use agmsg_contract::is_driver_name;

/// Every plugin directory of `axis` (or only those named `name`), in base order.
/// `dirs`: the readers of package directories of an axis's own kind the caller knows (an agent type's:
/// `agent::manifest::TypeDirs`); one of an axis read without its reader is a candidate that cannot run.
pub fn candidates(axis: Axis, name: Option<&str>, dirs: &[&dyn DirPackage]) -> Result<Vec<Candidate>, HostError> {
    candidates_in(&bases(), axis, name, &home_trust, dirs)
}

/// The trust file of `$AGMSG_HOME`; without a home nothing can have been trusted.
pub fn home_trust() -> Result<TrustFile, HostError> {
    match agmsg_home() {
        Ok(home) => TrustFile::load(&home),
        Err(_) => Ok(TrustFile::default()),
    }
}

/// [`candidates`] under `bases`, trust answered by `load_trust` (called once, only when a plugin
/// directory exists: the common case, bundled drivers only, costs a few stat calls).
pub fn candidates_in(
    bases: &[PathBuf],
    axis: Axis,
    name: Option<&str>,
    load_trust: &dyn Fn() -> Result<TrustFile, HostError>,
    dirs: &[&dyn DirPackage],
) -> Result<Vec<Candidate>, HostError> {
    if name.is_some_and(|n| !is_driver_name(n)) {
        return Ok(Vec::new());
    }
    let mut found = Vec::new();
    let mut trust: Option<TrustFile> = None;
    for base in bases {
        let axis_dir = base.join(axis.as_str());
        let names: Vec<String> = match name {
            Some(name) => vec![name.to_owned()],
            None => {
                let Ok(entries) = std::fs::read_dir(&axis_dir) else { continue };
                let mut names: Vec<String> =
                    entries.filter_map(|e| e.ok()?.file_name().into_string().ok()).filter(|n| is_driver_name(n)).collect();
                names.sort();
                names
            }
        };
        for name in names {
            let dir = axis_dir.join(&name);
            if !is_package_dir(axis, &dir) && !dir.join(MANIFEST_FILE).is_file() {
                continue;
            }
            if trust.is_none() {
                trust = Some(load_trust()?);
            }
            found.push(read_candidate(axis, &name, &dir, trust.as_ref().expect("just loaded"), dirs));
        }
    }
    Ok(found)
}

/// The names of `axis`'s plugin directories under every base, found but not read (no manifest parsed,
/// no component hashed): what a caller that resolves one name at a time may be asked for.
pub fn names(axis: Axis) -> Vec<String> {
    let mut names = Vec::new();
    for base in bases() {
        let axis_dir = base.join(axis.as_str());
        let Ok(entries) = std::fs::read_dir(&axis_dir) else { continue };
        for name in entries.filter_map(|e| e.ok()?.file_name().into_string().ok()).filter(|n| is_driver_name(n)) {
            let dir = axis_dir.join(&name);
            if (is_package_dir(axis, &dir) || dir.join(MANIFEST_FILE).is_file()) && !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names.sort();
    names
}

/// The plugin that runs as `axis/name`, if a trusted one is found (it shadows a bundled driver of that
/// name); every ignored candidate is warned about on the host log.
pub fn find(axis: Axis, name: &str, dirs: &[&dyn DirPackage]) -> Result<Option<Candidate>, HostError> {
    Ok(pick(axis, name, candidates(axis, Some(name), dirs)?))
}

/// [`choose`], with each warning on the host log.
pub fn pick(axis: Axis, name: &str, candidates: Vec<Candidate>) -> Option<Candidate> {
    let (chosen, warnings) = choose(axis, name, candidates);
    for warning in warnings {
        crate::log::host_log::warn(&warning);
    }
    chosen
}

/// The command that trusts the plugin `axis/name` (with `--path`, when `dir` is given: which of several
/// directories), as every listing, warning and report shows it.
pub fn trust_command(axis: Axis, name: &str, dir: Option<&Path>) -> String {
    let path = dir.map(|d| format!(" --path {}", crate::shell::word(&d.to_string_lossy()))).unwrap_or_default();
    format!("agmsg-host plugin trust {axis}/{name}{path}")
}

/// Which of `axis/name`'s candidates runs (the last that may), and a warning for each that is ignored.
pub fn choose(axis: Axis, name: &str, candidates: Vec<Candidate>) -> (Option<Candidate>, Vec<String>) {
    let several = candidates.len() > 1;
    let mut chosen = None;
    let mut warnings = Vec::new();
    for candidate in candidates {
        match candidate.problem() {
            None => chosen = Some(candidate),
            Some(problem) if candidate.only_untrusted() => {
                warnings.push(format!(
                    "external plugin '{axis}/{name}' found at {} but {problem} (ignored).\n       \
                     Opt in if you put it there intentionally: {}",
                    candidate.dir.display(),
                    trust_command(axis, name, several.then_some(candidate.dir.as_path()))
                ));
            }
            Some(problem) => {
                warnings
                    .push(format!("external plugin '{axis}/{name}' found at {} cannot run (ignored): {problem}", candidate.dir.display()));
            }
        }
    }
    (chosen, warnings)
}

#[cfg(test)]
mod dir_package_tests {
    use super::*;

    /// plugin/ reads an axis's own package directory only through the reader its axis module gives;
    /// without it the candidate cannot run (never read half-checked).
    #[test]
    fn a_package_directory_is_read_only_through_its_axis_reader() {
        struct Accepts;
        impl DirPackage for Accepts {
            fn axis(&self) -> Axis {
                Axis::Types
            }
            fn check(&self, name: &str, conf: &super::super::conf::Manifest, _: &Path) -> Result<(), HostError> {
                if conf.value("refuse") == "yes" { Err(HostError::refused(format!("{name} refused"))) } else { Ok(()) }
            }
            fn named_files<'m>(&self, _: &'m super::super::conf::Manifest) -> Vec<(&'static str, &'m str)> {
                Vec::new()
            }
            fn shadows(&self, _: &str) -> Option<&'static str> {
                None
            }
        }
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("types/kiro");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("type.conf"), "name=kiro\n").unwrap();
        let trust = TrustFile::default();
        let unread = read_candidate(Axis::Types, "kiro", &dir, &trust, &[]);
        assert!(unread.is_type_dir && unread.package_manifest.is_none());
        assert!(unread.broken.as_deref().is_some_and(|b| b.contains("no reader given")), "{:?}", unread.broken);
        let read = read_candidate(Axis::Types, "kiro", &dir, &trust, &[&Accepts]);
        assert_eq!(read.broken, None);
        assert_eq!(read.package_manifest.as_ref().map(|m| m.value("name")), Some("kiro"));
        assert!(read.pinned.is_some());
        std::fs::write(dir.join("type.conf"), "name=kiro\nrefuse=yes\n").unwrap();
        let refused = read_candidate(Axis::Types, "kiro", &dir, &trust, &[&Accepts]);
        assert_eq!(refused.broken.as_deref(), Some("kiro refused"));
        // Another axis has no package directories: a type.conf there is no package.
        assert!(!is_package_dir(Axis::Storage, &dir) && is_package_dir(Axis::Types, &dir));
    }
}
