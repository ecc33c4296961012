//! Installing and trusting a plugin, as a protocol any front end can drive: read the package, examine
//! the component against this host (refused before anything is written if it would not load), ask the
//! caller for the user's consent (shown what it asks for and, for an update, what widened), put it in
//! place as one step, and record the trust pinned to its hashes. The caller only asks and prints.

use std::path::{Path, PathBuf};

use super::manifest::{INSTALLED_COMPONENT, MANIFEST_FILE, PluginManifest};
use super::registry::{self, Candidate, agmsg_home};
use super::trust::{TrustFile, TrustRecord};
use super::{MAX_COMPONENT_BYTES, read_file, sha256_hex};
use crate::axis::Axis;
use crate::bundled;
use crate::capabilities::{Capabilities, Capability};
use crate::runtime::Runtime;
use crate::runtime::sandbox::{self, Grants};

/// A package read from where the user pointed: its manifest, component bytes and hash.
pub struct Package {
    pub manifest: PluginManifest,
    pub manifest_path: PathBuf,
    pub component_path: PathBuf,
    pub wasm: Vec<u8>,
    pub sha256: String,
}

impl Package {
    /// `source` is a package directory, its manifest, or its component (`.wasm`, with the manifest beside
    /// it or given as `manifest`).
    pub fn read(source: &Path, manifest: Option<&Path>) -> Result<Package, String> {
        let is_wasm = source.extension().is_some_and(|e| e == "wasm");
        let manifest_path = match manifest {
            Some(path) => path.to_owned(),
            None if source.is_dir() => source.join(MANIFEST_FILE),
            None if is_wasm => source.parent().unwrap_or(Path::new(".")).join(MANIFEST_FILE),
            None => source.to_owned(),
        };
        let (manifest, _) = PluginManifest::read(&manifest_path)?;
        let component_path = if is_wasm { source.to_owned() } else { manifest_path.parent().unwrap_or(Path::new(".")).join(&manifest.component) };
        let wasm = read_file(&component_path, MAX_COMPONENT_BYTES)
            .map_err(|e| format!("{e} (the component: build it first, or point at the .wasm with --manifest)"))?;
        let sha256 = sha256_hex(&wasm);
        Ok(Package { manifest, manifest_path, component_path, wasm, sha256 })
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

/// What the user is asked to consent to.
pub struct ConsentRequest<'a> {
    pub manifest: &'a PluginManifest,
    pub sha256: &'a str,
    /// Where its component is.
    pub from: &'a Path,
    /// For a plugin trusted before: what it asks for beyond what the user consented to then.
    pub widened: Option<Vec<Capability>>,
}

/// A plugin the user trusted: where, and what it runs with (declared AND granted).
pub struct Trusted {
    pub axis: Axis,
    pub name: String,
    pub dir: PathBuf,
    pub runs_with: Capabilities,
}

/// The request for the plugin that is (or will be) in `dir`.
fn request<'a>(home: &Path, dir: &Path, manifest: &'a PluginManifest, sha256: &'a str, from: &'a Path) -> Result<ConsentRequest<'a>, String> {
    let previous = TrustFile::load(home)?.record(manifest.axis, &manifest.name, dir).map(|r| r.consented.clone());
    let widened = previous.map(|consented| manifest.capabilities().beyond(&consented));
    Ok(ConsentRequest { manifest, sha256, from, widened })
}

/// Record the user's trust in the plugin in `dir` (pinned to its component's and manifest's hashes).
fn record_trust(home: &Path, dir: &Path, manifest: &PluginManifest, hashes: (String, String), granted: Capabilities) -> Result<Trusted, String> {
    let consented = manifest.capabilities();
    let runs_with = consented.granted_by(&granted);
    let (sha256, manifest_sha256) = hashes;
    let record = TrustRecord { axis: manifest.axis, name: manifest.name.clone(), path: dir.to_owned(), sha256, manifest_sha256, consented, granted };
    TrustFile::update(home, |trust| {
        trust.trust(record);
        Ok(())
    })?;
    Ok(Trusted { axis: manifest.axis, name: manifest.name.clone(), dir: dir.to_owned(), runs_with })
}

/// Install `package` into `$AGMSG_HOME/plugins/<axis>/<name>/` and trust it with what `consent` grants
/// (an `Err` from it stops everything, and nothing is written). Also the bundled driver it shadows, if
/// any.
pub fn install(
    runtime: &Runtime,
    package: &Package,
    consent: impl FnOnce(&ConsentRequest) -> Result<Capabilities, String>,
) -> Result<(Trusted, Option<&'static str>), String> {
    let report = examine(runtime, &package.manifest, &package.wasm, &package.sha256);
    report.verdict.map_err(|e| format!("refusing to install {}/{}: {e}", package.manifest.axis, package.manifest.name))?;
    let home = agmsg_home()?;
    let (axis, name) = (package.manifest.axis, package.manifest.name.clone());
    let axis_dir = home.join("plugins").join(axis.as_str());
    let dir = axis_dir.join(&name);
    let granted = consent(&request(&home, &dir, &package.manifest, &package.sha256, &package.component_path)?)?;
    let manifest_text = package.manifest.installed_text();
    put_in_place(&axis_dir, &name, &[(INSTALLED_COMPONENT, &package.wasm), (MANIFEST_FILE, manifest_text.as_bytes())])?;
    let hashes = (package.sha256.clone(), sha256_hex(manifest_text.as_bytes()));
    let trusted = record_trust(&home, &dir, &package.manifest, hashes, granted)?;
    let shadowed = bundled::of(axis).map(|d| d.name).find(|b| *b == name);
    Ok((trusted, shadowed))
}

/// Write `files` into `<axis_dir>/<name>/`, replacing what is there as one step: staged beside it,
/// the old directory moved aside, the new one renamed in (the old one put back if that fails), then
/// the old one deleted.
fn put_in_place(axis_dir: &Path, name: &str, files: &[(&str, &[u8])]) -> Result<(), String> {
    let dir = axis_dir.join(name);
    std::fs::create_dir_all(axis_dir).map_err(|e| format!("cannot create {}: {e}", axis_dir.display()))?;
    let scratch = |what: &str| {
        tempfile::Builder::new()
            .prefix(&format!(".{name}.{what}-"))
            .tempdir_in(axis_dir)
            .map_err(|e| format!("cannot write in {}: {e}", axis_dir.display()))
    };
    let staging = scratch("installing")?;
    for (file, bytes) in files {
        let path = staging.path().join(file);
        std::fs::write(&path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    // `old` is an empty directory that a rename may replace; dropped, it deletes what it then holds.
    let old = scratch("replaced")?;
    let had_old = dir.exists();
    if had_old {
        std::fs::rename(&dir, old.path()).map_err(|e| format!("cannot move {} aside: {e}", dir.display()))?;
    }
    if let Err(e) = std::fs::rename(staging.path(), &dir) {
        if had_old {
            let _ = std::fs::rename(old.path(), &dir);
        }
        return Err(format!("cannot move the package into {}: {e}", dir.display()));
    }
    // Renamed away: nothing left for the staging guard to delete.
    let _ = staging.keep();
    Ok(())
}

/// `axis/name` or a bare name: its candidates (a bare name must be unambiguous across axes).
pub fn find_ref(reference: &str) -> Result<(Axis, String, Vec<Candidate>), String> {
    let (axis, name) = match reference.split_once('/') {
        Some((axis, name)) => {
            let known: Vec<&str> = Axis::ALL.iter().map(|a| a.as_str()).collect();
            let axis = Axis::parse(axis).ok_or_else(|| format!("unknown axis {axis:?} in {reference:?} ({})", known.join(" or ")))?;
            (Some(axis), name)
        }
        None => (None, reference),
    };
    if !registry::is_driver_name(name) {
        return Err(format!("{name:?} is not a driver name"));
    }
    let mut found: Vec<(Axis, Vec<Candidate>)> = Vec::new();
    for candidate_axis in Axis::ALL.into_iter().filter(|a| axis.is_none_or(|x| x == *a)) {
        let candidates = registry::candidates(candidate_axis, Some(name))?;
        if !candidates.is_empty() {
            found.push((candidate_axis, candidates));
        }
    }
    match found.len() {
        0 => Err(format!("no plugin {reference:?} in the plugin directories (`agmsg-host plugin list` shows them)")),
        1 => {
            let (axis, candidates) = found.pop().expect("one");
            Ok((axis, name.to_owned(), candidates))
        }
        _ => {
            let refs: Vec<String> = found.iter().map(|(a, _)| format!("{a}/{name}")).collect();
            Err(format!("{name:?} is ambiguous: say which, {}", refs.join(" or ")))
        }
    }
}

/// Trust the plugin `reference` names (the one at `path`, when several directories hold it) with what
/// `consent` grants.
pub fn trust(
    runtime: &Runtime,
    reference: &str,
    path: Option<&Path>,
    consent: impl FnOnce(&ConsentRequest) -> Result<Capabilities, String>,
) -> Result<Trusted, String> {
    let (axis, name, mut candidates) = find_ref(reference)?;
    let candidate = match path {
        Some(path) => {
            let path = std::path::absolute(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let at = candidates.iter().position(|c| c.dir == path);
            let at = at.ok_or_else(|| format!("{axis}/{name} is not found at {}", path.display()))?;
            candidates.swap_remove(at)
        }
        None => candidates.pop().expect("find_ref returns at least one"),
    };
    let manifest = candidate.manifest.clone()?;
    let (Some(wasm), Some(sha256)) = (&candidate.wasm, &candidate.sha256) else {
        return Err(candidate.problem().unwrap_or_else(|| "its component cannot be read".into()));
    };
    let report = examine(runtime, &manifest, wasm, sha256);
    report.verdict.map_err(|e| format!("refusing to trust {axis}/{name}: {e}"))?;
    let home = agmsg_home()?;
    let component = candidate.component().unwrap_or_default();
    let granted = consent(&request(&home, &candidate.dir, &manifest, sha256, &component)?)?;
    let hashes = (sha256.clone(), candidate.manifest_sha256.clone().unwrap_or_default());
    record_trust(&home, &candidate.dir, &manifest, hashes, granted)
}

/// Forget the user's trust in `reference` (a record may outlive its plugin directory).
pub fn untrust(reference: &str) -> Result<(Axis, String), String> {
    let home = agmsg_home()?;
    let (axis, name) = match find_ref(reference) {
        Ok((axis, name, _)) => (axis, name),
        Err(e) => match reference.split_once('/').and_then(|(a, n)| Some((Axis::parse(a)?, n))) {
            Some((axis, name)) => (axis, name.to_owned()),
            None => return Err(e),
        },
    };
    TrustFile::update(&home, |trust| match trust.untrust(axis, &name) {
        0 => Err(format!("{axis}/{name} was not trusted")),
        _ => Ok(()),
    })?;
    Ok((axis, name))
}

/// Delete the copy of `reference` that `install` put in `$AGMSG_HOME/plugins` (never one found
/// elsewhere), and its trust.
pub fn remove(reference: &str) -> Result<(Axis, String, PathBuf), String> {
    let (axis, name, candidates) = find_ref(reference)?;
    let home = agmsg_home()?;
    let installed = home.join("plugins").join(axis.as_str()).join(&name);
    let installed = std::path::absolute(&installed).unwrap_or(installed);
    if !candidates.iter().any(|c| c.dir == installed) {
        let elsewhere: Vec<String> = candidates.iter().map(|c| c.dir.display().to_string()).collect();
        return Err(format!(
            "{axis}/{name} is not installed in {}; it is found at {} (not ours to delete: remove it yourself, or `plugin untrust` it)",
            home.join("plugins").display(),
            elsewhere.join(", ")
        ));
    }
    std::fs::remove_dir_all(&installed).map_err(|e| format!("cannot remove {}: {e}", installed.display()))?;
    TrustFile::update(&home, |trust| {
        trust.plugins.retain(|r| !(r.axis == axis && r.name == name && r.path == installed));
        Ok(())
    })?;
    Ok((axis, name, installed))
}
