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

use super::DirPackage;
use super::commands::{self, Axes, Consent, Prompt};
use super::conf;
use super::keys::{self, KeyFile};
use super::manifest::PluginManifest;
use super::oci::{self, Content, Layout, Options, Publication, Reference, Registry, digest_of};
use super::registry::agmsg_home;
use super::signature::{self, Publisher};
use super::tree::Tree;
use super::trust::{Provenance, TrustFile};
use super::workflow::{self, Package, Trusted, TypePackage};
use super::{sha256_hex, size_text};
use crate::axis::Axis;
use crate::capabilities::Capabilities;
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

/// A published driver or agent type read and verified, ready for the install workflow.
pub struct Fetched {
    pub package: Published,
    pub publisher: Publisher,
    /// Where it was read, pinned to the digest read (for people).
    pub origin: String,
}

/// What a publication held.
pub enum Published {
    Driver(Package),
    Type(TypePackage),
}

impl Published {
    fn axis_name_version(&self) -> (Axis, &str, &str) {
        match self {
            Published::Driver(p) => (p.manifest.axis, &p.manifest.name, &p.manifest.version),
            Published::Type(t) => (Axis::Types, &t.name, t.provenance.as_ref().and_then(|p| p.version.as_deref()).unwrap_or("")),
        }
    }

    /// The install a directory of it gets, with `consent` deciding the grants.
    fn install(
        &self,
        axes: &Axes,
        consent: impl FnOnce(&workflow::ConsentRequest) -> Result<Capabilities, HostError>,
    ) -> Result<(Trusted, Option<&'static str>), HostError> {
        match self {
            Published::Driver(package) => workflow::install(&runtime()?, package, consent),
            Published::Type(package) => workflow::install_type(&runtime()?, axes.types_dirs(), package, consent),
        }
    }
}

/// Read the driver or agent type `source` names and verify it: every digest, the signature against the
/// keys pinned under `home`, the manifest (`types`: what an agent type's directory must be). Nothing is
/// written.
pub fn fetch(source: &Source, options: &Options, home: &Path, types: &dyn DirPackage) -> Result<Fetched, HostError> {
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
    let verify = |statement: &str| -> Result<Publisher, HostError> {
        match &pulled.signature {
            None => Ok(Publisher::Unsigned),
            Some(sig) => Ok(Publisher::Signed(signature::verify(sig, statement, &KeyFile::load(home)?).map_err(refusing)?)),
        }
    };
    let provenance = |publisher: &Publisher, version: Option<&str>| Provenance {
        source: source.recorded(),
        digest: pulled.digest.clone(),
        publisher: publisher.fingerprint().map(str::to_owned),
        version: version.map(str::to_owned),
    };
    let (package, publisher) = match pulled.content {
        Content::Driver { ref manifest_text, ref manifest_digest, ref wasm, ref wasm_digest } => {
            let manifest = PluginManifest::parse(manifest_text, Path::new(&format!("{origin} agmsg-driver.toml"))).map_err(refusing)?;
            let publisher = verify(&signature::statement(manifest.axis, &manifest.name, &manifest.version, wasm_digest, manifest_digest))?;
            let package = Package {
                manifest,
                manifest_path: PathBuf::from(format!("{origin} agmsg-driver.toml")),
                component_path: PathBuf::from(&origin),
                sha256: sha256_hex(wasm),
                wasm: wasm.clone(),
                provenance: Some(provenance(&publisher, None)),
            };
            (Published::Driver(package), publisher)
        }
        Content::Type { ref name, ref version, ref tar, ref tar_digest } => {
            // The signature first: a stranger's tar is read only once its publisher is known (or it
            // is known to be unsigned).
            let publisher = verify(&signature::type_statement(name, version, tar_digest))?;
            let tree = Tree::from_tar(tar, &origin).map_err(refusing)?;
            let package = TypePackage::from_tree(types, name, &origin, tree, provenance(&publisher, Some(version))).map_err(refusing)?;
            (Published::Type(package), publisher)
        }
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
        out.push_str(&match axis {
            Axis::Types => format!("note: it shadows the bundled type '{shadowed}'\n"),
            axis => format!("note: it shadows the bundled {axis} driver '{shadowed}'\n"),
        });
    }
    out
}

/// `plugin install oci://...` (or an artifact file): verified, then the consent (naming the publisher,
/// or saying it is unsigned) and the install a directory gets.
pub fn install(axes: &Axes, source: &Source, options: &Options, consent: &Consent, prompt: &mut dyn Prompt) -> Result<String, HostError> {
    let home = agmsg_home()?;
    let fetched = fetch(source, options, &home, axes.types_dirs())?;
    let shown = format!("{}\n", fetched.publisher.shown());
    let (_, _, version) = fetched.package.axis_name_version();
    let ask = |request: &workflow::ConsentRequest| {
        prompt.show(&shown);
        commands::answer(axes, request, consent, prompt)
    };
    let (trusted, shadowed) = fetched.package.install(axes, ask)?;
    Ok(installed_text(&trusted, version, &fetched.origin, &fetched.publisher, shadowed))
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
    let fetched = fetch(&source, options, &home, axes.types_dirs())?;
    let (new_axis, new_name, version) = fetched.package.axis_name_version();
    if (new_axis, new_name) != (axis, name.as_str()) {
        return Err(HostError::refused(format!(
            "{} now holds {new_axis}/{}, not {axis}/{name}: refused",
            display::line(&fetched.origin),
            display::line(new_name)
        )));
    }
    // What trust pins, as the fetched publication would be pinned; and the version installed.
    let (pinned, installed) = match &fetched.package {
        Published::Driver(p) => (
            (p.sha256.clone(), sha256_hex(p.manifest.installed_text().as_bytes())),
            PluginManifest::read(&dir.join(super::manifest::MANIFEST_FILE)).ok().map(|(m, _)| m.version),
        ),
        Published::Type(t) => (t.files.pinned(), before.version.clone()),
    };
    if pinned == (record.sha256.clone(), record.manifest_sha256.clone()) {
        return Ok(format!("{axis}/{name} {} is up to date ({})\n", display::line(version), display::line(&fetched.origin)));
    }
    let keys = KeyFile::load(&home)?;
    let change = publisher_change(&keys, before.publisher.as_deref(), &fetched.publisher);
    // A registry may serve an older publication under the tag (a rollback to a known flaw): only a
    // newer version goes in without a question.
    let parts = |v: &str| crate::semver::semver_parts(v);
    let newer = installed.as_deref().and_then(|old| Some((parts(old)?, parts(version)?))).is_some_and(|(old, new)| new > old);
    let older = (!newer).then(|| {
        format!(
            "It is version {}, not newer than the installed {}.",
            display::line(version),
            display::line(installed.as_deref().unwrap_or("?"))
        )
    });
    // A type is granted nothing, but its type.conf says where it delivers and how it launches (a new
    // hooks file, a new launch word): any change to it is shown and asked about.
    let conf_changed = match &fetched.package {
        Published::Type(t) if t.files.conf_sha256 != record.manifest_sha256 => Some(conf_changes(&dir, &t.files.conf)),
        _ => None,
    };
    let shown = format!("{}\n", fetched.publisher.shown());
    let mut asked = true;
    let ask = |request: &workflow::ConsentRequest| {
        let widened = request.widened.clone().unwrap_or_else(|| request.asks_for().0);
        if change.is_none() && older.is_none() && widened.is_empty() && conf_changed.is_none() && consent.grants.is_empty() {
            asked = false;
            return Ok(record.granted.clone());
        }
        prompt.show(&shown);
        for change in change.iter().chain(older.iter()).chain(conf_changed.iter()) {
            prompt.show(&format!("{change}\n"));
        }
        commands::answer(axes, request, consent, prompt)
    };
    let (trusted, shadowed) = fetched.package.install(axes, ask)?;
    let mut out = if asked {
        String::new()
    } else {
        format!("same publisher ({}), asking for nothing more than before: updated without asking\n", fetched.publisher.shown())
    };
    out.push_str(&installed_text(&trusted, version, &fetched.origin, &fetched.publisher, shadowed));
    Ok(out)
}

/// How the installed type's `type.conf` (in `dir`) and the new one differ, line by line: what it
/// set that is gone (`-`), what is new or different (`+`).
fn conf_changes(dir: &Path, now: &conf::Manifest) -> String {
    let before = conf::Manifest::read(&dir.join("type.conf")).ok();
    let lines = |m: &conf::Manifest| -> Vec<String> {
        m.entries().iter().filter(|l| !l.ignored).map(|l| format!("{}={}", l.key, display::line(l.value))).collect()
    };
    let (old, new) = (before.as_ref().map(lines).unwrap_or_default(), lines(now));
    let mut out = String::from("Its type.conf changed:\n");
    for line in old.iter().filter(|l| !new.contains(l)) {
        out.push_str(&format!("  - {line}\n"));
    }
    for line in new.iter().filter(|l| !old.contains(l)) {
        out.push_str(&format!("  + {line}\n"));
    }
    out.pop();
    out
}

/// How `plugin publish` was asked to publish: a driver's manifest kept elsewhere, the key to sign with,
/// an agent type's version.
pub struct Publishing<'a> {
    pub manifest: Option<&'a Path>,
    pub sign_key: Option<&'a Path>,
    pub version: Option<&'a str>,
}

/// Where a publication goes: a registry's tag, or an OCI image layout tar file.
enum Destination {
    Registry(Reference, String),
    Layout(PathBuf),
}

impl Destination {
    fn parse(destination: &str) -> Result<Destination, HostError> {
        if Reference::is_reference(destination) {
            let reference = Reference::parse(destination)?;
            if reference.digest.is_some() {
                return Err(HostError::usage(
                    "publish to a tag (oci://<registry>/<repository>:<tag>): a digest names what is already there",
                ));
            }
            let tag = reference.tag.clone().expect("a reference without a digest has a tag");
            Ok(Destination::Registry(reference, tag))
        } else if destination.ends_with(".tar") {
            Ok(Destination::Layout(PathBuf::from(destination)))
        } else {
            Err(HostError::usage(format!(
                "publish to oci://<registry>/<repository>:<tag>, or to a file ending in .tar (an OCI image layout), not {:?}",
                display::line(destination)
            )))
        }
    }

    /// Push `publication` there (a layout tagged `tag`); how it is named for people.
    fn put(&self, publication: &Publication, tag: &str, options: &Options) -> Result<String, HostError> {
        match self {
            Destination::Registry(reference, tag) => {
                let digest = Registry::new(reference, options).push(publication, tag)?;
                Ok(format!("{reference} (digest {digest})"))
            }
            Destination::Layout(path) => {
                publication.write_layout(path, tag)?;
                Ok(format!("{} (an OCI image layout; tag {}, digest {})", path.display(), display::line(tag), publication.digest))
            }
        }
    }
}

/// `plugin publish <dir> <destination>`: the driver package at `source` (checked to load on this
/// host), or the agent type's directory (checked as an install checks it), signed with the private key
/// `how.sign_key` if given, pushed to `destination` (`oci://...:tag`) or written as an OCI image layout
/// tar (a path ending in `.tar`, tagged with its version).
pub fn publish(axes: &Axes, source: &Path, destination: &str, how: &Publishing, options: &Options) -> Result<String, HostError> {
    let destination = Destination::parse(destination)?;
    if how.manifest.is_none() && TypePackage::is_type_dir(axes.types_dirs(), source) {
        return publish_type(axes, source, &destination, how, options);
    }
    if how.version.is_some() {
        return Err(HostError::usage("--version is for an agent type: a driver's version is its agmsg-driver.toml's"));
    }
    let package = Package::read(source, how.manifest)?;
    let m = &package.manifest;
    let report = workflow::examine(&runtime()?, m, &package.wasm, &package.sha256);
    report.verdict.map_err(|e| HostError::refused(format!("refusing to publish {}/{}: {e}", m.axis, m.name)))?;
    let text = m.installed_text();
    let statement = signature::statement(m.axis, &m.name, &m.version, &digest_of(&package.wasm), &digest_of(text.as_bytes()));
    let signed = how.sign_key.map(|key| signature::sign(key, &statement)).transpose()?;
    let publication = Publication::new(&m.name, &m.version, &package.wasm, &text, signed.as_ref().map(|(sig, _)| sig.as_slice()));
    let published = destination.put(&publication, &m.version, options)?;
    let mut out = format!(
        "published {}/{} {} ({}) to {published}\n",
        m.axis,
        display::line(&m.name),
        display::line(&m.version),
        size_text(package.wasm.len() as u64)
    );
    out.push_str(&signed_text(signed.as_ref().map(|(_, fingerprint)| fingerprint.as_str())));
    Ok(out)
}

/// `plugin publish` of an agent type's directory: its files as one tar layer, its version the
/// `--version` given, else the tag.
fn publish_type(axes: &Axes, source: &Path, destination: &Destination, how: &Publishing, options: &Options) -> Result<String, HostError> {
    let package = TypePackage::read(axes.types_dirs(), source)?;
    if let Some(report) = package.examine_plug(&runtime()?) {
        report.verdict.map_err(|e| HostError::refused(format!("refusing to publish types/{}: its plug component: {e}", package.name)))?;
    }
    let version = match (how.version, destination) {
        (Some(version), _) => version.to_owned(),
        (None, Destination::Registry(_, tag)) => tag.clone(),
        (None, Destination::Layout(_)) => {
            return Err(HostError::usage("an agent type's files name no version: give one with --version <semver>"));
        }
    };
    if crate::semver::semver_parts(&version).is_none() {
        return Err(HostError::usage(format!(
            "an agent type is published with a semantic version (--version, else the tag), not {:?}",
            display::line(&version)
        )));
    }
    let tar = package.files.tree.to_tar();
    let statement = signature::type_statement(&package.name, &version, &digest_of(&tar));
    let signed = how.sign_key.map(|key| signature::sign(key, &statement)).transpose()?;
    let publication = Publication::new_type(&package.name, &version, &tar, signed.as_ref().map(|(sig, _)| sig.as_slice()));
    let published = destination.put(&publication, &version, options)?;
    let mut out =
        format!("published types/{} {} ({}) to {published}\n", package.name, display::line(&version), size_text(tar.len() as u64));
    out.push_str(&signed_text(signed.as_ref().map(|(_, fingerprint)| fingerprint.as_str())));
    Ok(out)
}

fn signed_text(fingerprint: Option<&str>) -> String {
    match fingerprint {
        Some(fingerprint) => {
            format!("signed by {fingerprint}: users pin your public key with `agmsg-host plugin keys add <name> <your key>.pub`\n")
        }
        None => "unsigned: users are told so (--sign-key <your ed25519 private key> signs it)\n".to_owned(),
    }
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
