//! Drivers as their authors publish them: `plugin publish` (an OCI artifact in a registry, or its
//! air-gapped form, an OCI image layout tar), `plugin install` of one (`oci://...` or the file), `plugin
//! update`, and `plugin keys` (the publishers the user pinned). Each returns what the command line
//! prints.
//!
//! What is verified before anything is written: every blob against the digest the artifact's manifest
//! gives (and the manifest against the digest asked for); the signature, when there is one, against the
//! pinned keys, over a statement binding the component's digest AND `agmsg-driver.toml`'s; then what a
//! directory install checks (the manifest, the component against this host). The consent names the
//! publisher, or says the driver is unsigned. An update from the same source signed by the same key and
//! asking for nothing more installs without asking; otherwise the user is asked again and shown what
//! changed.

use crate::plugin::user_file::UserFile;
use std::path::{Path, PathBuf};

use super::commands::{self, Axes, Consent, Prompt};
use super::keys::{self, KeyFile};
use super::manifest::PluginManifest;
use super::oci::{self, Layout, Options, Publication, Reference, Registry, digest_of};
use super::registry::agmsg_home;
use super::signature::{self, Publisher};
use super::trust::{Provenance, TrustFile};
use super::workflow::{self, Package, Trusted};
use super::{sha256_hex, size_text};
use crate::display;
use crate::error::HostError;
use crate::runtime::Runtime;

fn runtime() -> Result<Runtime, HostError> {
    Runtime::from_env().map_err(HostError::refused)
}

/// Where a published driver is read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Registry(Reference),
    /// An OCI image layout (a `.tar` file, or a directory holding `oci-layout`), and which manifest in
    /// it (a tag, or a digest; `None`: its only one).
    Layout {
        path: PathBuf,
        wanted: Option<String>,
    },
}

impl Source {
    /// `oci://...`, or an OCI image layout optionally followed by `:<tag>` or `@sha256:<digest>`;
    /// `None` when `text` is neither (a package directory, a manifest, a component).
    pub fn parse(text: &str) -> Result<Option<Source>, HostError> {
        if Reference::is_reference(text) {
            return Ok(Some(Source::Registry(Reference::parse(text)?)));
        }
        let layout = |path: &str, wanted: Option<&str>| {
            let path = Path::new(path);
            Layout::is_layout(path).then(|| Source::Layout { path: path.to_owned(), wanted: wanted.map(str::to_owned) })
        };
        if let Some(found) = layout(text, None) {
            return Ok(Some(found));
        }
        if let Some((path, digest)) = text.rsplit_once('@')
            && let Some(found) = layout(path, Some(digest))
        {
            oci::check_digest(digest).map_err(|e| HostError::usage(e.message))?;
            return Ok(Some(found));
        }
        Ok(text.rsplit_once(':').and_then(|(path, tag)| layout(path, Some(tag))))
    }

    /// As the trust record keeps it (a layout's path made absolute).
    fn recorded(&self) -> String {
        match self {
            Source::Registry(reference) => reference.to_string(),
            Source::Layout { path, wanted } => {
                let path = std::path::absolute(path).unwrap_or_else(|_| path.clone()).display().to_string();
                match wanted {
                    Some(digest) if digest.starts_with("sha256:") => format!("{path}@{digest}"),
                    Some(tag) => format!("{path}:{tag}"),
                    None => path,
                }
            }
        }
    }
}

/// A published driver read and verified, ready for the install workflow.
pub struct Fetched {
    pub package: Package,
    pub publisher: Publisher,
    /// Where it was read, pinned to the digest read (for people).
    pub origin: String,
}

/// Read the driver `source` names and verify it: every digest, the signature against the keys
/// pinned under `home`, the manifest. Nothing is written.
pub fn fetch(source: &Source, options: &Options, home: &Path) -> Result<Fetched, HostError> {
    let pulled = match source {
        Source::Registry(reference) => {
            let mut registry = Registry::new(reference, options);
            let (manifest, digest) = registry.manifest()?;
            oci::read_artifact(&manifest, &digest, &mut registry)?
        }
        Source::Layout { path, wanted } => {
            let mut layout = Layout::open(path)?;
            let (manifest, digest) = layout.manifest(wanted.as_deref())?;
            oci::read_artifact(&manifest, &digest, &mut layout)?
        }
    };
    let origin = match source {
        Source::Registry(reference) => reference.at(&pulled.digest).to_string(),
        Source::Layout { path, .. } => format!("{}@{}", path.display(), pulled.digest),
    };
    let refusing = |e: HostError| e.context(format!("refusing {}", display::line(&origin)));
    let manifest = PluginManifest::parse(&pulled.manifest_text, Path::new(&format!("{origin} agmsg-driver.toml"))).map_err(refusing)?;
    let publisher = match &pulled.signature {
        None => Publisher::Unsigned,
        Some(sig) => {
            let statement =
                signature::statement(manifest.axis, &manifest.name, &manifest.version, &pulled.wasm_digest, &pulled.manifest_digest);
            Publisher::Signed(signature::verify(sig, &statement, &KeyFile::load(home)?).map_err(refusing)?)
        }
    };
    let provenance =
        Provenance { source: source.recorded(), digest: pulled.digest.clone(), publisher: publisher.fingerprint().map(str::to_owned) };
    let package = Package {
        manifest,
        manifest_path: PathBuf::from(format!("{origin} agmsg-driver.toml")),
        component_path: PathBuf::from(&origin),
        sha256: sha256_hex(&pulled.wasm),
        wasm: pulled.wasm,
        provenance: Some(provenance),
    };
    Ok(Fetched { package, publisher, origin })
}

fn installed_text(trusted: &Trusted, version: &str, origin: &str, publisher: &Publisher, shadowed: Option<&str>) -> String {
    let Trusted { axis, name, dir, runs_with } = trusted;
    let mut out = format!("installed {axis}/{name} {} in {}\n", display::line(version), dir.display());
    out.push_str(&format!("from {}\n", display::line(origin)));
    out.push_str(&match publisher {
        Publisher::Signed(key) => format!("signed by {}\n", key.shown()),
        Publisher::Unsigned => "unsigned\n".to_owned(),
    });
    out.push_str(&format!("trusted; it runs with: {}\n", display::line(&runs_with.summary())));
    if let Some(shadowed) = shadowed {
        out.push_str(&format!("note: it shadows the bundled {axis} driver '{shadowed}'\n"));
    }
    out
}

/// `plugin install oci://...` (or an artifact file): verified, then the consent (naming the publisher,
/// or saying it is unsigned) and the install a directory gets.
pub fn install(axes: &Axes, source: &Source, options: &Options, consent: &Consent, prompt: &mut dyn Prompt) -> Result<String, HostError> {
    let home = agmsg_home()?;
    let fetched = fetch(source, options, &home)?;
    let shown = format!("{}\n", fetched.publisher.shown());
    let (trusted, shadowed) = workflow::install(&runtime()?, &fetched.package, |request| {
        prompt.show(&shown);
        commands::answer(axes, request, consent, prompt)
    })?;
    Ok(installed_text(&trusted, &fetched.package.manifest.version, &fetched.origin, &fetched.publisher, shadowed))
}

/// What changed of who signed it, for the question asked again.
fn publisher_change(keys: &KeyFile, before: Option<&str>, now: &Publisher) -> Option<String> {
    let was =
        |fingerprint: &str| keys.by_fingerprint(fingerprint).map_or_else(|| format!("{fingerprint} (no longer pinned)"), |k| k.shown());
    match (before, now) {
        (Some(before), Publisher::Signed(key)) if key.fingerprint == before => None,
        (Some(before), Publisher::Signed(key)) => {
            Some(format!("It is signed by a DIFFERENT key: {} (it was {}).", key.shown(), was(before)))
        }
        (Some(before), Publisher::Unsigned) => Some(format!("It is UNSIGNED now (it was signed by {}).", was(before))),
        (None, Publisher::Signed(key)) => Some(format!("It is signed now, by {} (it was unsigned).", key.shown())),
        (None, Publisher::Unsigned) => Some("It is unsigned, as it was.".to_owned()),
    }
}

/// `plugin update <name>`: the driver installed from a registry or an artifact file, read again from
/// there. Signed by the same key and asking for nothing more, it is installed without asking (with
/// what was granted before); otherwise the user is asked again, shown what changed.
pub fn update(axes: &Axes, reference: &str, options: &Options, consent: &Consent, prompt: &mut dyn Prompt) -> Result<String, HostError> {
    let home = agmsg_home()?;
    let (axis, name, _) = workflow::find_ref(reference, &axes.dirs)?;
    let dir = home.join("plugins").join(axis.as_str()).join(&name);
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    let record = TrustFile::load(&home)?.record(axis, &name, &dir).cloned().ok_or_else(|| {
        HostError::refused(format!(
            "{axis}/{name} is not installed and trusted in {} (agmsg-host plugin list)",
            home.join("plugins").display()
        ))
    })?;
    let before = record.provenance.clone().ok_or_else(|| {
        HostError::refused(format!(
            "{axis}/{name} was not installed from a registry or an artifact file: install the new version with `agmsg-host plugin install`"
        ))
    })?;
    let source = Source::parse(&before.source)?
        .ok_or_else(|| HostError::refused(format!("{axis}/{name} was installed from {}, which is gone", display::line(&before.source))))?;
    let fetched = fetch(&source, options, &home)?;
    let m = &fetched.package.manifest;
    if (m.axis, m.name.as_str()) != (axis, name.as_str()) {
        return Err(HostError::refused(format!(
            "{} now holds {}/{}, not {axis}/{name}: refused",
            display::line(&fetched.origin),
            m.axis,
            display::line(&m.name)
        )));
    }
    if fetched.package.sha256 == record.sha256 && sha256_hex(m.installed_text().as_bytes()) == record.manifest_sha256 {
        return Ok(format!("{axis}/{name} {} is up to date ({})\n", display::line(&m.version), display::line(&fetched.origin)));
    }
    let keys = KeyFile::load(&home)?;
    let change = publisher_change(&keys, before.publisher.as_deref(), &fetched.publisher);
    // A registry may serve an older publication under the tag (a rollback to a known flaw): only a
    // newer version goes in without a question.
    let installed = PluginManifest::read(&dir.join(super::manifest::MANIFEST_FILE)).ok().map(|(m, _)| m.version);
    let parts = |v: &str| crate::semver::semver_parts(v);
    let newer = installed.as_deref().and_then(|old| Some((parts(old)?, parts(&m.version)?))).is_some_and(|(old, new)| new > old);
    let older = (!newer).then(|| {
        format!(
            "It is version {}, not newer than the installed {}.",
            display::line(&m.version),
            display::line(installed.as_deref().unwrap_or("?"))
        )
    });
    let shown = format!("{}\n", fetched.publisher.shown());
    let mut asked = true;
    let (trusted, shadowed) = workflow::install(&runtime()?, &fetched.package, |request| {
        let widened = request.widened.clone().unwrap_or_else(|| request.asks_for().0);
        if change.is_none() && older.is_none() && widened.is_empty() && consent.grants.is_empty() {
            asked = false;
            return Ok(record.granted.clone());
        }
        prompt.show(&shown);
        for change in change.iter().chain(older.iter()) {
            prompt.show(&format!("{change}\n"));
        }
        commands::answer(axes, request, consent, prompt)
    })?;
    let mut out = if asked {
        String::new()
    } else {
        format!("same publisher ({}), asking for nothing more than before: updated without asking\n", fetched.publisher.shown())
    };
    out.push_str(&installed_text(&trusted, &fetched.package.manifest.version, &fetched.origin, &fetched.publisher, shadowed));
    Ok(out)
}

/// `plugin publish <dir> <destination>`: the driver package at `source` (checked to load on this
/// host), signed with the private key at `sign_key` if given, pushed to `destination` (`oci://...:tag`)
/// or written as an OCI image layout tar (a path ending in `.tar`, tagged with its version).
pub fn publish(
    source: &Path,
    manifest: Option<&Path>,
    destination: &str,
    sign_key: Option<&Path>,
    options: &Options,
) -> Result<String, HostError> {
    let package = Package::read(source, manifest)?;
    let m = &package.manifest;
    let report = workflow::examine(&runtime()?, m, &package.wasm, &package.sha256);
    report.verdict.map_err(|e| HostError::refused(format!("refusing to publish {}/{}: {e}", m.axis, m.name)))?;
    let text = m.installed_text();
    let statement = signature::statement(m.axis, &m.name, &m.version, &digest_of(&package.wasm), &digest_of(text.as_bytes()));
    let signed = sign_key.map(|key| signature::sign(key, &statement)).transpose()?;
    let publication = Publication::new(&m.name, &m.version, &package.wasm, &text, signed.as_ref().map(|(sig, _)| sig.as_slice()));
    let published = if Reference::is_reference(destination) {
        let reference = Reference::parse(destination)?;
        if reference.digest.is_some() {
            return Err(HostError::usage("publish to a tag (oci://<registry>/<repository>:<tag>): a digest names what is already there"));
        }
        let tag = reference.tag.clone().expect("a reference without a digest has a tag");
        let digest = Registry::new(&reference, options).push(&publication, &tag)?;
        format!("{reference} (digest {digest})")
    } else if destination.ends_with(".tar") {
        publication.write_layout(Path::new(destination), &m.version)?;
        format!("{destination} (an OCI image layout; tag {}, digest {})", display::line(&m.version), publication.digest)
    } else {
        return Err(HostError::usage(format!(
            "publish to oci://<registry>/<repository>:<tag>, or to a file ending in .tar (an OCI image layout), not {:?}",
            display::line(destination)
        )));
    };
    let mut out = format!(
        "published {}/{} {} ({}) to {published}\n",
        m.axis,
        display::line(&m.name),
        display::line(&m.version),
        size_text(package.wasm.len() as u64)
    );
    out.push_str(&match &signed {
        Some((_, fingerprint)) => {
            format!("signed by {fingerprint}: users pin your public key with `agmsg-host plugin keys add <name> <your key>.pub`\n")
        }
        None => "unsigned: users are told so (--sign-key <your ed25519 private key> signs it)\n".to_owned(),
    });
    Ok(out)
}

/// `plugin keys add <name> <key>`: `key` is an OpenSSH public key line or a `.pub` file.
pub fn keys_add(name: &str, key: &str) -> Result<String, HostError> {
    let key = keys::parse_key(key)?;
    let pinned = keys::add(&agmsg_home()?, name, &key)?;
    Ok(format!("pinned {}: drivers it signs are shown as its\n", pinned.shown()))
}

/// `plugin keys list`: name, fingerprint, key (one JSON object per line with `json`).
pub fn keys_list(json: bool) -> Result<String, HostError> {
    let file = KeyFile::load(&agmsg_home()?)?;
    let mut out = String::new();
    for key in &file.keys {
        if json {
            let value = serde_json::json!({ "name": key.name, "fingerprint": key.fingerprint, "key": key.key });
            out.push_str(&format!("{value}\n"));
        } else {
            out.push_str(&format!("{:<20} {} {}\n", display::line(&key.name), key.fingerprint, display::line(&key.key)));
        }
    }
    if file.keys.is_empty() && !json {
        out.push_str("no publisher keys pinned (agmsg-host plugin keys add <name> <key>)\n");
    }
    Ok(out)
}

/// `plugin keys remove <name or fingerprint>`. Drivers it signed stay installed and trusted; an update
/// of one is asked about again.
pub fn keys_remove(which: &str) -> Result<String, HostError> {
    let removed = keys::remove(&agmsg_home()?, which)?;
    Ok(format!("unpinned {}\n", removed.shown()))
}
