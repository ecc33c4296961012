//! Installing and trusting a plugin, as a protocol any front end can drive: read the package, examine
//! the component against this host (refused before anything is written if it would not load), ask the
//! caller for the user's consent (shown what it asks for and, for an update, what widened), put it in
//! place as one step, and record the trust pinned to its hashes. The caller only asks and prints.

use crate::plugin::user_file::UserFile;
use std::path::{Path, PathBuf};

use super::DirPackage;
use super::manifest::{INSTALLED_COMPONENT, MANIFEST_FILE, PluginManifest};
use super::registry::{self, AgentTypeFiles, Candidate, agmsg_home};
use super::trust::{Provenance, TrustFile, TrustRecord};
use super::{MAX_COMPONENT_BYTES, read_file, sha256_hex};
use crate::axis::Axis;
use crate::bundled;
use crate::capabilities::{Capabilities, Capability};
use crate::error::HostError;
use crate::runtime::Runtime;
use crate::runtime::sandbox::{self, Grants};

/// A package read from where the user pointed: its manifest, component bytes and hash.
pub struct Package {
    pub manifest: PluginManifest,
    pub manifest_path: PathBuf,
    pub component_path: PathBuf,
    pub wasm: Vec<u8>,
    pub sha256: String,
    /// Where it was published, when it was read from a registry or an artifact file.
    pub provenance: Option<Provenance>,
}

impl Package {
    /// `source` is a package directory, its manifest, or its component (`.wasm`, with the manifest beside
    /// it or given as `manifest`).
    pub fn read(source: &Path, manifest: Option<&Path>) -> Result<Package, HostError> {
        let is_wasm = source.extension().is_some_and(|e| e == "wasm");
        let manifest_path = match manifest {
            Some(path) => path.to_owned(),
            None if source.is_dir() => source.join(MANIFEST_FILE),
            None if is_wasm => source.parent().unwrap_or(Path::new(".")).join(MANIFEST_FILE),
            None => source.to_owned(),
        };
        let (manifest, _) = PluginManifest::read(&manifest_path)?;
        let component_path =
            if is_wasm { source.to_owned() } else { manifest_path.parent().unwrap_or(Path::new(".")).join(&manifest.component) };
        let wasm = read_file(&component_path, MAX_COMPONENT_BYTES)
            .map_err(|e| HostError::refused(format!("{e} (the component: build it first, or point at the .wasm with --manifest)")))?;
        let sha256 = sha256_hex(&wasm);
        Ok(Package { manifest, manifest_path, component_path, wasm, sha256, provenance: None })
    }
}

/// What a component really is, against this host.
pub struct Report {
    pub imports: Vec<String>,
    pub exports: Vec<String>,
    /// `Ok` when this host would load it with everything its manifest asks for granted.
    pub verdict: Result<(), String>,
}

/// Compile the component and check it as it would be checked at load, granted all it declares; also
/// check the manifest's own contract version.
pub fn examine(runtime: &Runtime, manifest: &PluginManifest, wasm: &[u8], sha256: &str) -> Report {
    let component = match runtime.load(wasm, sha256) {
        Ok(component) => component,
        Err(e) => return Report { imports: vec![], exports: vec![], verdict: Err(format!("not a valid component: {e:#}")) },
    };
    let (imports, exports) = sandbox::interfaces(&runtime.engine, &component);
    // Admission reads the grants' kinds, never the store: no directory is opened for it.
    let grants = Grants::new(manifest.axis, &manifest.capabilities(), None, runtime.limits);
    let verdict = sandbox::check_api(manifest.axis, &manifest.api)
        .map_err(|e| format!("its manifest says it was {e}"))
        .and_then(|()| sandbox::admit(&runtime.engine, &component, &grants));
    Report { imports, exports, verdict }
}

/// What the user is asked to trust.
pub enum Offer<'a> {
    /// A driver component: what its manifest asks for.
    Component(&'a PluginManifest),
    /// An agent type: it declares no capabilities, and its plug component, if it ships one, runs with
    /// none. Its files are what the user is shown of the texts it gives agents and the code it ships;
    /// `runs_from` is the directory it is used from once trusted (where spawn finds its launcher).
    AgentType {
        name: &'a str,
        conf_sha256: &'a str,
        conf: Option<&'a super::conf::Manifest>,
        plug: Option<&'a PluginManifest>,
        files: &'a [super::registry::TypeFile],
        runs_from: &'a Path,
    },
}

/// What the user is asked to consent to.
pub struct ConsentRequest<'a> {
    pub offer: Offer<'a>,
    /// The component's sha256; for an agent type, the hash of its files other than `type.conf`.
    pub sha256: &'a str,
    /// Where its component (an agent type: its directory) is.
    pub from: &'a Path,
    /// For a plugin trusted before: what it asks for beyond what the user consented to then.
    pub widened: Option<Vec<Capability>>,
    /// For a plugin trusted before at this directory with these very files, asking for exactly what the
    /// user consented to then: what the user granted then. Trusting it again changes nothing, so a
    /// caller may answer with it without asking (`plugin trust` of an unchanged plugin is a no-op).
    pub unchanged: Option<Capabilities>,
}

impl ConsentRequest<'_> {
    /// What it asks for.
    pub fn asks_for(&self) -> Capabilities {
        match &self.offer {
            Offer::Component(m) => m.capabilities(),
            Offer::AgentType { .. } => Capabilities::default(),
        }
    }
}

/// A plugin the user trusted: where, and what it runs with (declared AND granted).
pub struct Trusted {
    pub axis: Axis,
    pub name: String,
    pub dir: PathBuf,
    pub runs_with: Capabilities,
}

/// What an earlier trust of the plugin in `dir` consented to, against what it asks for now.
fn widened(home: &Path, axis: Axis, name: &str, dir: &Path, asks_for: &Capabilities) -> Result<Option<Vec<Capability>>, HostError> {
    let previous = TrustFile::load(home)?.record(axis, name, dir).map(|r| r.consented.clone());
    Ok(previous.map(|consented| asks_for.beyond(&consented)))
}

/// Record the user's trust in the plugin `axis/name` in `dir`, pinned to `hashes` (code, manifest), and
/// where it was published (`provenance`), if it was.
#[allow(clippy::too_many_arguments)]
fn record_trust(
    home: &Path,
    axis: Axis,
    name: &str,
    dir: &Path,
    consented: Capabilities,
    hashes: (String, String),
    granted: Capabilities,
    provenance: Option<Provenance>,
) -> Result<Trusted, HostError> {
    let runs_with = consented.granted_by(&granted);
    let (sha256, manifest_sha256) = hashes;
    let record = TrustRecord { axis, name: name.to_owned(), path: dir.to_owned(), sha256, manifest_sha256, consented, granted, provenance };
    TrustFile::update(home, |trust| {
        trust.trust(record);
        Ok(())
    })?;
    Ok(Trusted { axis, name: name.to_owned(), dir: dir.to_owned(), runs_with })
}

/// Install `package` into `$AGMSG_HOME/plugins/<axis>/<name>/` and trust it with what `consent` grants
/// (an `Err` from it stops everything, and nothing is written). Also the bundled driver it shadows, if
/// any.
pub fn install(
    runtime: &Runtime,
    package: &Package,
    consent: impl FnOnce(&ConsentRequest) -> Result<Capabilities, HostError>,
) -> Result<(Trusted, Option<&'static str>), HostError> {
    let report = examine(runtime, &package.manifest, &package.wasm, &package.sha256);
    report
        .verdict
        .map_err(|e| HostError::refused(format!("refusing to install {}/{}: {e}", package.manifest.axis, package.manifest.name)))?;
    let home = agmsg_home()?;
    let (axis, name) = (package.manifest.axis, package.manifest.name.clone());
    let axis_dir = home.join("plugins").join(axis.as_str());
    let dir = axis_dir.join(&name);
    let asks_for = package.manifest.capabilities();
    let request = ConsentRequest {
        offer: Offer::Component(&package.manifest),
        sha256: &package.sha256,
        from: &package.component_path,
        widened: widened(&home, axis, &name, &dir, &asks_for)?,
        unchanged: None,
    };
    let granted = consent(&request)?;
    let manifest_text = package.manifest.installed_text();
    put_in_place(&axis_dir, &name, &[(INSTALLED_COMPONENT, Some(&package.wasm)), (MANIFEST_FILE, Some(manifest_text.as_bytes()))])?;
    let hashes = (package.sha256.clone(), sha256_hex(manifest_text.as_bytes()));
    let trusted = record_trust(&home, axis, &name, &dir, asks_for, hashes, granted, package.provenance.clone())?;
    let shadowed = bundled::of(axis).map(|d| d.name).find(|b| *b == name);
    Ok((trusted, shadowed))
}

/// An agent type's directory read from where the user pointed (`type.conf`, its template, optionally
/// a plug component: `agmsg-driver.toml` and its component), as one snapshot with no link followed.
pub struct TypePackage {
    /// `type.conf`'s `name=`, else the directory's name.
    pub name: String,
    pub dir: PathBuf,
    pub files: AgentTypeFiles,
    /// Where it was published, when it was read from a registry or an artifact file.
    pub provenance: Option<Provenance>,
}

impl TypePackage {
    /// Whether `source` is a package directory of `kind` (an agent type's: it holds `type.conf`).
    pub fn is_type_dir(kind: &dyn DirPackage, source: &Path) -> bool {
        source.is_dir() && registry::is_package_dir(kind.axis(), source)
    }

    pub fn read(kind: &dyn DirPackage, source: &Path) -> Result<TypePackage, HostError> {
        let dir = std::path::absolute(source).map_err(|e| HostError::refused(format!("{}: {e}", source.display())))?;
        let file = kind.axis().dir_manifest().expect("an axis with directory packages names their manifest");
        let conf = super::tree::read_below(&dir, file, super::conf::MAX_MANIFEST_BYTES)?;
        let conf = super::conf::Manifest::parse(&conf, &dir.join(file).display().to_string())?;
        let name = match conf.value("name") {
            "" => dir.file_name().and_then(|n| n.to_str()).unwrap_or("").to_owned(),
            name => name.to_owned(),
        };
        agmsg_contract::check_driver_name(&name)
            .map_err(|e| HostError::refused(format!("{}: the type's name: {e}", dir.join(file).display())))?;
        let files = AgentTypeFiles::read(kind, &name, &dir)?;
        Self::checked(kind, name, dir, files, None)
    }

    /// A published type: its directory as its artifact carries it (`origin` names where it was read),
    /// named `name` (the publication's: `type.conf`'s `name=`, when it has one, must agree).
    pub fn from_tree(
        kind: &dyn DirPackage,
        name: &str,
        origin: &str,
        tree: super::tree::Tree,
        provenance: Provenance,
    ) -> Result<TypePackage, HostError> {
        let dir = PathBuf::from(origin);
        agmsg_contract::check_driver_name(name).map_err(|e| HostError::refused(format!("{origin}: the type's name: {e}")))?;
        let files = AgentTypeFiles::from_tree(kind, name, &dir, tree)?;
        if !files.conf.value("name").is_empty() && files.conf.value("name") != name {
            return Err(HostError::refused(format!(
                "{origin}: published as {name}, but its type.conf says name={}",
                crate::display::line(files.conf.value("name"))
            )));
        }
        Self::checked(kind, name.to_owned(), dir, files, Some(provenance))
    }

    /// Every file its `type.conf` names is one of its files.
    fn checked(
        kind: &dyn DirPackage,
        name: String,
        dir: PathBuf,
        files: AgentTypeFiles,
        provenance: Option<Provenance>,
    ) -> Result<TypePackage, HostError> {
        for (key, named) in kind.named_files(&files.conf) {
            if files.tree.file(Path::new(named)).is_none() {
                return Err(HostError::refused(format!("{}: its {key} {named:?} is not a file of the directory", dir.display())));
            }
        }
        Ok(TypePackage { name, dir, files, provenance })
    }

    /// Its plug component, if it ships one, checked as it would be at load (with no capabilities).
    pub fn examine_plug(&self, runtime: &Runtime) -> Option<Report> {
        self.files.plug.as_ref().map(|(m, wasm)| examine(runtime, m, wasm, &sha256_hex(wasm)))
    }
}

/// Install the agent type `package` into `$AGMSG_HOME/plugins/types/<name>/` (every file of its
/// directory, as read) and trust it, pinned to its directory, `type.conf`'s sha256 and its other
/// files' hash, once `consent` agrees (a type is granted nothing, whatever is answered). A plug
/// component this host would refuse stops it before anything is written. Also the bundled type it
/// shadows, if any.
pub fn install_type(
    runtime: &Runtime,
    kind: &dyn DirPackage,
    package: &TypePackage,
    consent: impl FnOnce(&ConsentRequest) -> Result<Capabilities, HostError>,
) -> Result<(Trusted, Option<&'static str>), HostError> {
    let name = package.name.as_str();
    let axis = kind.axis();
    if let Some(report) = package.examine_plug(runtime) {
        report.verdict.map_err(|e| HostError::refused(format!("refusing to install types/{name}: its plug component: {e}")))?;
    }
    let home = agmsg_home()?;
    let axis_dir = home.join("plugins").join(axis.as_str());
    let dir = axis_dir.join(name);
    let (files_sha256, conf_sha256) = package.files.pinned();
    let listing = package.files.listing();
    let request = ConsentRequest {
        offer: Offer::AgentType {
            name,
            conf_sha256: &conf_sha256,
            conf: Some(&package.files.conf),
            plug: package.files.plug.as_ref().map(|(m, _)| m),
            files: &listing,
            runs_from: &dir,
        },
        sha256: &files_sha256,
        from: &package.dir,
        widened: widened(&home, axis, name, &dir, &Capabilities::default())?,
        unchanged: None,
    };
    consent(&request)?;
    let entries: Vec<(&str, Option<&[u8]>)> = package.files.tree.entries.iter().map(|(p, bytes)| (p.as_str(), bytes.as_deref())).collect();
    put_in_place(&axis_dir, name, &entries)?;
    let hashes = (files_sha256.clone(), conf_sha256.clone());
    let trusted =
        record_trust(&home, axis, name, &dir, Capabilities::default(), hashes, Capabilities::default(), package.provenance.clone())?;
    let shadowed = kind.shadows(name);
    Ok((trusted, shadowed))
}

/// Write `files` (paths relative to the directory, `/`-separated; `None`: a directory, listed before
/// what it holds) into `<axis_dir>/<name>/`, replacing what is there as one step: staged beside it,
/// the old directory moved aside, the new one renamed in (the old one put back if that fails), then
/// the old one deleted.
fn put_in_place(axis_dir: &Path, name: &str, files: &[(&str, Option<&[u8]>)]) -> Result<(), HostError> {
    let dir = axis_dir.join(name);
    std::fs::create_dir_all(axis_dir).map_err(|e| HostError::refused(format!("cannot create {}: {e}", axis_dir.display())))?;
    let scratch = |what: &str| {
        tempfile::Builder::new()
            .prefix(&format!(".{name}.{what}-"))
            .tempdir_in(axis_dir)
            .map_err(|e| HostError::refused(format!("cannot write in {}: {e}", axis_dir.display())))
    };
    let staging = scratch("installing")?;
    for (file, bytes) in files {
        let rel = super::tree::normalize(Path::new(file))
            .ok_or_else(|| HostError::refused(format!("{file:?} is not a path inside the package")))?;
        let path = staging.path().join(rel);
        match bytes {
            Some(bytes) => std::fs::write(&path, bytes),
            None => std::fs::create_dir(&path),
        }
        .map_err(|e| HostError::refused(format!("cannot write {}: {e}", path.display())))?;
    }
    // `old` is an empty directory that a rename may replace; dropped, it deletes what it then holds.
    let old = scratch("replaced")?;
    let had_old = dir.exists();
    if had_old {
        std::fs::rename(&dir, old.path()).map_err(|e| HostError::refused(format!("cannot move {} aside: {e}", dir.display())))?;
    }
    if let Err(e) = std::fs::rename(staging.path(), &dir) {
        if had_old {
            let _ = std::fs::rename(old.path(), &dir);
        }
        return Err(HostError::refused(format!("cannot move the package into {}: {e}", dir.display())));
    }
    // Renamed away: nothing left for the staging guard to delete.
    let _ = staging.keep();
    Ok(())
}

/// `axis/name` or a bare name: its candidates (a bare name must be unambiguous across axes).
pub fn find_ref(reference: &str, dirs: &[&dyn DirPackage]) -> Result<(Axis, String, Vec<Candidate>), HostError> {
    let (axis, name) = match reference.split_once('/') {
        Some((axis, name)) => {
            let known: Vec<&str> = Axis::ALL.iter().map(|a| a.as_str()).collect();
            let axis = Axis::parse(axis)
                .ok_or_else(|| HostError::refused(format!("unknown axis {axis:?} in {reference:?} ({})", known.join(" or "))))?;
            (Some(axis), name)
        }
        None => (None, reference),
    };
    if !registry::is_driver_name(name) {
        return Err(HostError::refused(format!("{name:?} is not a driver name")));
    }
    let mut found: Vec<(Axis, Vec<Candidate>)> = Vec::new();
    for candidate_axis in Axis::ALL.into_iter().filter(|a| axis.is_none_or(|x| x == *a)) {
        let candidates = registry::candidates(candidate_axis, Some(name), dirs)?;
        if !candidates.is_empty() {
            found.push((candidate_axis, candidates));
        }
    }
    match found.len() {
        0 => Err(HostError::refused(format!("no plugin {reference:?} in the plugin directories (`agmsg-host plugin list` shows them)"))),
        1 => {
            let (axis, candidates) = found.pop().expect("one");
            Ok((axis, name.to_owned(), candidates))
        }
        _ => {
            let refs: Vec<String> = found.iter().map(|(a, _)| format!("{a}/{name}")).collect();
            Err(HostError::refused(format!("{name:?} is ambiguous: say which, {}", refs.join(" or "))))
        }
    }
}

/// Trust the plugin `reference` names (the one at `path`, when several directories hold it) with what
/// `consent` grants.
pub fn trust(
    runtime: &Runtime,
    reference: &str,
    path: Option<&Path>,
    dirs: &[&dyn DirPackage],
    consent: impl FnOnce(&ConsentRequest) -> Result<Capabilities, HostError>,
) -> Result<Trusted, HostError> {
    let (axis, name, mut candidates) = find_ref(reference, dirs)?;
    let candidate = match path {
        Some(path) => {
            let path = std::path::absolute(path).map_err(|e| HostError::refused(format!("{}: {e}", path.display())))?;
            let at = candidates.iter().position(|c| c.dir == path);
            let at = at.ok_or_else(|| HostError::refused(format!("{axis}/{name} is not found at {}", path.display())))?;
            candidates.swap_remove(at)
        }
        None => candidates.pop().expect("find_ref returns at least one"),
    };
    if let Some(broken) = &candidate.broken {
        return Err(HostError::refused(format!("refusing to trust {axis}/{name}: {broken}")));
    }
    let pinned = candidate.pinned.clone().ok_or_else(|| HostError::refused(format!("{axis}/{name} cannot be read")))?;
    // The component, if any (an agent type may ship none), checked as it would be at load.
    if let (Some(manifest), Some(wasm), Some(sha256)) = (&candidate.manifest, &candidate.wasm, &candidate.sha256) {
        let report = examine(runtime, manifest, wasm, sha256);
        report.verdict.map_err(|e| HostError::refused(format!("refusing to trust {axis}/{name}: {e}")))?;
    }
    let home = agmsg_home()?;
    let asks_for = candidate.declared();
    let offer = match (&candidate.manifest, candidate.is_type_dir) {
        (plug, true) => Offer::AgentType {
            name: &name,
            conf_sha256: &pinned.1,
            conf: candidate.package_manifest.as_ref(),
            plug: plug.as_ref(),
            files: &candidate.type_files,
            runs_from: &candidate.dir,
        },
        (Some(manifest), false) => Offer::Component(manifest),
        (None, false) => return Err(HostError::refused(format!("{axis}/{name} has no manifest"))),
    };
    let from = if candidate.is_type_dir { candidate.dir.clone() } else { candidate.component().unwrap_or_default() };
    let previous = TrustFile::load(&home)?.record(axis, &name, &candidate.dir).cloned();
    let unchanged = previous
        .as_ref()
        .filter(|r| r.sha256 == pinned.0 && r.manifest_sha256 == pinned.1 && r.consented == asks_for)
        .map(|r| r.granted.clone());
    // Where these very files were published, kept when they are trusted again.
    let provenance = previous.filter(|r| r.sha256 == pinned.0 && r.manifest_sha256 == pinned.1).and_then(|r| r.provenance);
    let request = ConsentRequest {
        offer,
        sha256: &pinned.0,
        from: &from,
        widened: widened(&home, axis, &name, &candidate.dir, &asks_for)?,
        unchanged,
    };
    let granted = consent(&request)?;
    record_trust(&home, axis, &name, &candidate.dir, asks_for, pinned, granted, provenance)
}

/// Forget the user's trust in `reference` (a record may outlive its plugin directory).
pub fn untrust(reference: &str, dirs: &[&dyn DirPackage]) -> Result<(Axis, String), HostError> {
    let home = agmsg_home()?;
    let (axis, name) = match find_ref(reference, dirs) {
        Ok((axis, name, _)) => (axis, name),
        Err(e) => match reference.split_once('/').and_then(|(a, n)| Some((Axis::parse(a)?, n))) {
            Some((axis, name)) => (axis, name.to_owned()),
            None => return Err(e),
        },
    };
    TrustFile::update(&home, |trust| match trust.untrust(axis, &name) {
        0 => Err(HostError::refused(format!("{axis}/{name} was not trusted"))),
        _ => Ok(()),
    })?;
    Ok((axis, name))
}

/// Delete the copy of `reference` that `install` put in `$AGMSG_HOME/plugins` (never one found
/// elsewhere), and its trust.
pub fn remove(reference: &str, dirs: &[&dyn DirPackage]) -> Result<(Axis, String, PathBuf), HostError> {
    let (axis, name, candidates) = find_ref(reference, dirs)?;
    let home = agmsg_home()?;
    let installed = home.join("plugins").join(axis.as_str()).join(&name);
    let installed = std::path::absolute(&installed).unwrap_or(installed);
    if !candidates.iter().any(|c| c.dir == installed) {
        let elsewhere: Vec<String> = candidates.iter().map(|c| c.dir.display().to_string()).collect();
        return Err(HostError::refused(format!(
            "{axis}/{name} is not installed in {}; it is found at {} (not ours to delete: remove it yourself, or `plugin untrust` it)",
            home.join("plugins").display(),
            elsewhere.join(", ")
        )));
    }
    std::fs::remove_dir_all(&installed).map_err(|e| HostError::refused(format!("cannot remove {}: {e}", installed.display())))?;
    TrustFile::update(&home, |trust| {
        trust.plugins.retain(|r| !(r.axis == axis && r.name == name && r.path == installed));
        Ok(())
    })?;
    Ok((axis, name, installed))
}
