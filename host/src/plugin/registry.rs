//! Finding plugins (agmsg's ADR 0002 order) and deciding which candidate runs.
//!
//! Bases, in order: bundled drivers (always trusted), `$AGMSG_HOME/plugins`, then each `:`-separated
//! entry of `AGMSG_PLUGIN_DIRS`. Under a base, a plugin is the directory `<axis>/<name>/` holding
//! `agmsg-driver.toml`. Among candidates that may run (bundled or trusted), the later base wins, so a
//! trusted plugin may shadow a bundled driver; an untrusted one is ignored with a warning that prints
//! the exact command that trusts it.

use std::path::{Path, PathBuf};


use super::manifest::{MANIFEST_FILE, PluginManifest};
pub use super::sha256_hex;
use crate::axis::Axis;
use super::trust::{TrustFile, TrustState};
use crate::capabilities::Capabilities;

/// `${AGMSG_HOME:-~/.agents/agmsg}`, made absolute (trust records are matched by absolute path).
pub fn agmsg_home() -> Result<PathBuf, String> {
    let home = match std::env::var_os("AGMSG_HOME").filter(|h| !h.is_empty()) {
        Some(home) => PathBuf::from(home),
        None => {
            let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).ok_or("cannot find agmsg's home: set AGMSG_HOME or HOME")?;
            PathBuf::from(home).join(".agents/agmsg")
        }
    };
    std::path::absolute(&home).map_err(|e| format!("{}: {e}", home.display()))
}

/// A plugin directory found under a base (bundled drivers are not candidates here: callers know
/// them).
#[derive(Debug)]
pub struct Candidate {
    pub axis: Axis,
    pub name: String,
    /// The plugin's directory (absolute).
    pub dir: PathBuf,
    /// Its manifest, or why it cannot be read.
    pub manifest: Result<PluginManifest, String>,
    /// The component and its sha256, when the manifest could be read and the component exists (read
    /// once: what was hashed is what runs).
    pub wasm: Option<Vec<u8>>,
    pub sha256: Option<String>,
    /// Why the component cannot be read, when it cannot.
    pub wasm_error: Option<String>,
    /// The manifest file's sha256.
    pub manifest_sha256: Option<String>,
    pub state: TrustState,
}

impl Candidate {
    /// The component's path (from the manifest).
    pub fn component(&self) -> Option<PathBuf> {
        self.manifest.as_ref().ok().map(|m| self.dir.join(&m.component))
    }

    /// What it runs with: what it declared AND the user granted, when trusted; nothing otherwise.
    pub fn runs_with(&self) -> Capabilities {
        match &self.state {
            TrustState::Trusted(caps) => caps.clone(),
            _ => Capabilities::default(),
        }
    }

    /// The component ready to load, with what it runs with (for a candidate the registry chose: trusted
    /// and readable).
    pub fn into_source(self) -> crate::runtime::DriverSource {
        crate::runtime::DriverSource {
            path: self.component(),
            capabilities: self.runs_with(),
            name: self.name,
            sha256: self.sha256.unwrap_or_default(),
            wasm: std::borrow::Cow::Owned(self.wasm.unwrap_or_default()),
            settings: Vec::new(),
        }
    }

    /// Whether trusting it would let it run (it is only untrusted, not broken).
    pub fn only_untrusted(&self) -> bool {
        self.manifest.is_ok() && self.sha256.is_some() && matches!(self.state, TrustState::Untrusted(_))
    }

    /// Why this candidate cannot run, if it cannot.
    pub fn problem(&self) -> Option<String> {
        match (&self.manifest, &self.sha256, &self.state) {
            (Err(e), _, _) => Some(e.clone()),
            (Ok(m), None, _) => Some(self.wasm_error.clone().unwrap_or_else(|| format!("cannot read {}", self.dir.join(&m.component).display()))),
            (_, _, TrustState::Untrusted(why)) => Some(why.to_string()),
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
/// hash, and its trust state.
pub fn read_candidate(axis: Axis, name: &str, dir: &Path, trust: &TrustFile) -> Candidate {
    let read = PluginManifest::read(&dir.join(MANIFEST_FILE)).and_then(|(m, sha)| {
        if m.axis != axis || m.name != name {
            Err(format!("{}: declares {}/{} but is installed as {axis}/{name}", dir.join(MANIFEST_FILE).display(), m.axis, m.name))
        } else {
            Ok((m, sha))
        }
    });
    let (manifest, manifest_sha256) = match read {
        Ok((m, sha)) => (Ok(m), Some(sha)),
        Err(e) => (Err(e), None),
    };
    let component = manifest.as_ref().ok().map(|m| super::read_file(&dir.join(&m.component), super::MAX_COMPONENT_BYTES));
    let (wasm, wasm_error) = match component {
        Some(Ok(wasm)) => (Some(wasm), None),
        Some(Err(e)) => (None, Some(e)),
        None => (None, None),
    };
    let sha256 = wasm.as_deref().map(sha256_hex);
    let state = match (&manifest, &sha256, &manifest_sha256) {
        (Ok(m), Some(sha), Some(manifest_sha)) => trust.state(axis, name, dir, (sha, manifest_sha), &m.capabilities()),
        _ => TrustState::Untrusted(super::trust::Untrusted::Never),
    };
    Candidate { axis, name: name.to_owned(), dir: dir.to_owned(), manifest, wasm, sha256, wasm_error, manifest_sha256, state }
}

/// A name a driver can be selected by (and a safe path segment): the contract's rule.
pub use agmsg_contract::is_driver_name;

/// Every plugin directory of `axis` (or only those named `name`), in base order.
pub fn candidates(axis: Axis, name: Option<&str>) -> Result<Vec<Candidate>, String> {
    if name.is_some_and(|n| !is_driver_name(n)) {
        return Ok(Vec::new());
    }
    let mut found = Vec::new();
    let mut trust: Option<TrustFile> = None;
    for base in bases() {
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
            if !dir.join(MANIFEST_FILE).is_file() {
                continue;
            }
            // The trust file is read only once a plugin directory exists: the common case (bundled
            // drivers only) costs a few stat calls.
            if trust.is_none() {
                // No home: nothing can have been trusted.
                trust = Some(match agmsg_home() {
                    Ok(home) => TrustFile::load(&home)?,
                    Err(_) => TrustFile::default(),
                });
            }
            found.push(read_candidate(axis, &name, &dir, trust.as_ref().expect("just loaded")));
        }
    }
    Ok(found)
}

/// The plugin that runs as `axis/name`, if a trusted one is found (it shadows a bundled driver of that
/// name); every ignored candidate is warned about on the host log.
pub fn find(axis: Axis, name: &str) -> Result<Option<Candidate>, String> {
    Ok(pick(axis, name, candidates(axis, Some(name))?))
}

/// [`choose`], with each warning on the host log.
pub fn pick(axis: Axis, name: &str, candidates: Vec<Candidate>) -> Option<Candidate> {
    let (chosen, warnings) = choose(axis, name, candidates);
    for warning in warnings {
        crate::log::host_log::warn(&warning);
    }
    chosen
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
                let path = if several { format!(" --path {}", super::shell_word(&candidate.dir.to_string_lossy())) } else { String::new() };
                warnings.push(format!(
                    "external plugin '{axis}/{name}' found at {} but {problem} (ignored).\n       \
                     Opt in if you put it there intentionally: agmsg-host plugin trust {axis}/{name}{path}",
                    candidate.dir.display()
                ));
            }
            Some(problem) => {
                warnings.push(format!("external plugin '{axis}/{name}' found at {} cannot run (ignored): {problem}", candidate.dir.display()));
            }
        }
    }
    (chosen, warnings)
}
