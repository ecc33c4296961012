//! Published drivers as OCI artifacts, in the CNCF Wasm OCI artifact layout (`wkg oci push`, `oras`):
//! an image manifest whose config is `application/vnd.wasm.config.v0+json` and whose layers are the
//! component (`application/wasm`), the driver's `agmsg-driver.toml` and, when signed, its SSH signature
//! ([`super::signature`]). Read from a registry (the OCI distribution API) or, air-gapped, from an OCI
//! image layout (a directory, or a tar of one).
//!
//! A registry is a stranger: every answer is bounded in size (the manifest at 4 MiB, the component at
//! [`super::MAX_COMPONENT_BYTES`], its other blobs at 64 KiB) and every exchange in time; a redirect to
//! another host, or from HTTPS to HTTP, is refused unless the user named that host; every blob is
//! checked against the digest and size the manifest gives, and a manifest asked for by digest against
//! that digest; nothing an artifact names becomes a path (a layout's blobs are found by a digest checked
//! to be 64 hex digits). Plain HTTP only for a loopback registry. The HTTP client lives in this crate
//! only: no driver reaches it.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{MAX_COMPONENT_BYTES, registry_auth, sha256_hex, size_text};
use crate::display;
use crate::error::HostError;

pub const IMAGE_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const WASM_CONFIG: &str = "application/vnd.wasm.config.v0+json";
pub const WASM_LAYER: &str = "application/wasm";
pub const MANIFEST_LAYER: &str = "application/vnd.agmsg.driver.manifest.v1+toml";
pub const SIGNATURE_LAYER: &str = "application/vnd.agmsg.driver.signature.v1+sshsig";
/// A published agent type: its config (name and version), and its directory as one tar layer.
pub const TYPE_CONFIG: &str = "application/vnd.agmsg.type.config.v1+json";
pub const TYPE_LAYER: &str = "application/vnd.agmsg.type.v1.tar";
const TITLE: &str = "org.opencontainers.image.title";
const VERSION: &str = "org.opencontainers.image.version";
const REF_NAME: &str = "org.opencontainers.image.ref.name";

/// The largest image manifest read (the distribution spec's own limit).
pub const MAX_MANIFEST_BYTES: u64 = 4 << 20;
/// The largest blob other than the component (the config, the driver's manifest, the signature).
pub const MAX_SMALL_BLOB: u64 = 64 << 10;
/// How many redirects one request follows.
const MAX_HOPS: usize = 5;

fn refused(message: impl Into<String>) -> HostError {
    HostError::refused(message)
}

/// `sha256:<64 lowercase hex digits>`: the only digest accepted (it names blobs, and a layout's files).
pub fn check_digest(digest: &str) -> Result<&str, HostError> {
    digest
        .strip_prefix("sha256:")
        .filter(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
        .ok_or_else(|| refused(format!("{:?} is not a sha256 digest (sha256:<64 hex digits>)", display::line(digest))))
}

pub fn digest_of(bytes: &[u8]) -> String {
    format!("sha256:{}", sha256_hex(bytes))
}

/// `oci://<registry>/<repository>[:<tag>][@sha256:<digest>]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    /// `host[:port]`.
    pub registry: String,
    pub repository: String,
    pub tag: Option<String>,
    pub digest: Option<String>,
}

impl Reference {
    /// Whether `text` is meant as one (it starts with `oci://`).
    pub fn is_reference(text: &str) -> bool {
        text.starts_with("oci://")
    }

    pub fn parse(text: &str) -> Result<Reference, HostError> {
        let bad = |why: &str| {
            HostError::usage(format!(
                "{:?} is not an OCI reference (oci://<registry>/<repository>:<tag> or @sha256:<digest>): {why}",
                display::line(text)
            ))
        };
        let rest = text.strip_prefix("oci://").ok_or_else(|| bad("it starts with oci://"))?;
        let (registry, path) = rest.split_once('/').ok_or_else(|| bad("no repository"))?;
        if !valid_registry(registry) {
            return Err(bad("the registry is host[:port]"));
        }
        let (path, digest) = match path.split_once('@') {
            Some((path, digest)) => {
                check_digest(digest).map_err(|_| bad("the digest is sha256:<64 hex digits>"))?;
                (path, Some(digest.to_owned()))
            }
            None => (path, None),
        };
        let (repository, tag) = match path.rsplit_once(':') {
            Some((repository, tag)) => (repository, Some(tag.to_owned())),
            None => (path, None),
        };
        let component = |c: &str| {
            !c.is_empty()
                && c.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
                && c.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
                && c.bytes().last().is_some_and(|b| b.is_ascii_alphanumeric())
        };
        if repository.len() > 255 || !repository.split('/').all(component) {
            return Err(bad("the repository is lowercase path components ([a-z0-9] with . _ - inside)"));
        }
        if let Some(tag) = &tag {
            let valid = tag.len() <= 128
                && tag.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
                && tag.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
            if !valid {
                return Err(bad("a tag is [A-Za-z0-9_][A-Za-z0-9._-]{0,127}"));
            }
        }
        let tag = if tag.is_none() && digest.is_none() { Some("latest".to_owned()) } else { tag };
        Ok(Reference { registry: registry.to_owned(), repository: repository.to_owned(), tag, digest })
    }

    /// What the registry is asked for: the digest if there is one, else the tag.
    pub fn wanted(&self) -> &str {
        self.digest.as_deref().or(self.tag.as_deref()).expect("a tag or a digest")
    }

    /// The same repository, pinned to `digest`.
    pub fn at(&self, digest: &str) -> Reference {
        Reference { digest: Some(digest.to_owned()), ..self.clone() }
    }

    /// Whether the registry is this machine (`localhost`, 127.0.0.0/8, `[::1]`): the only one spoken
    /// to in plain HTTP.
    pub fn is_loopback(&self) -> bool {
        is_loopback_host(host_of(&self.registry))
    }

    fn origin(&self) -> String {
        format!("{}://{}", if self.is_loopback() { "http" } else { "https" }, self.registry)
    }
}

impl std::fmt::Display for Reference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "oci://{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

fn valid_registry(registry: &str) -> bool {
    let (host, port) = match registry.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || host.starts_with('[') => {
            if host.contains(':') && !host.starts_with('[') {
                return false;
            }
            (host, Some(port))
        }
        _ => (registry, None),
    };
    let host_ok = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
        None => {
            !host.is_empty()
                && host.len() <= 253
                && host.split('.').all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
        }
    };
    host_ok && port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u16>().is_ok())
}

/// The host of `host[:port]`.
fn host_of(authority: &str) -> &str {
    if let Some(end) = authority.find(']') {
        return &authority[..=end];
    }
    authority.split(':').next().unwrap_or(authority)
}

fn is_loopback_host(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<std::net::Ipv4Addr>().is_ok_and(|a| a.is_loopback())
        || host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .is_some_and(|h| h.parse::<std::net::Ipv6Addr>().is_ok_and(|a| a.is_loopback()))
}

/// How far the user lets a download go.
#[derive(Clone, Debug)]
pub struct Options {
    /// Hosts a registry may redirect to (a registry serving blobs from a CDN): none unless the user
    /// names them.
    pub redirect_hosts: Vec<String>,
    /// The longest one exchange (its whole answer) may take.
    pub timeout: Duration,
}

impl Default for Options {
    fn default() -> Options {
        // AGMSG_OCI_TIMEOUT_SECS shortens it (the tests' stalling registry).
        let secs = std::env::var("AGMSG_OCI_TIMEOUT_SECS").ok().and_then(|s| s.parse::<u64>().ok()).filter(|s| *s > 0).unwrap_or(300);
        Options { redirect_hosts: Vec::new(), timeout: Duration::from_secs(secs) }
    }
}

/// An OCI descriptor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    pub media_type: String,
    pub digest: String,
    pub size: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// An OCI image manifest.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageManifest {
    pub schema_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    pub config: Descriptor,
    pub layers: Vec<Descriptor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// Where blobs come from (a registry, a layout): `get` reads at most `max` bytes (more is refused).
pub trait Blobs {
    fn get(&mut self, digest: &str, max: u64) -> Result<Vec<u8>, HostError>;
    /// Where it is, for messages.
    fn place(&self) -> String;
}

/// A published driver or agent type as read, every blob checked against its digest.
pub struct Pulled {
    /// The image manifest's digest.
    pub digest: String,
    pub content: Content,
    /// The SSH signature (PEM), when it was signed.
    pub signature: Option<Vec<u8>>,
}

/// What a publication carries.
pub enum Content {
    /// A driver: `agmsg-driver.toml` as published and its component, each with its digest.
    Driver { manifest_text: String, manifest_digest: String, wasm: Vec<u8>, wasm_digest: String },
    /// An agent type: its name and version (from the config) and its directory, a tar.
    Type { name: String, version: String, tar: Vec<u8>, tar_digest: String },
}

/// A descriptor's digest is a sha256 digest, and its size within `cap`.
fn check_descriptor(blob: &Descriptor, what: &str, cap: u64) -> Result<(), HostError> {
    check_digest(&blob.digest)?;
    if blob.size > cap {
        return Err(refused(format!(
            "its {what} is {} bytes, more than the {} allowed: refused before downloading",
            blob.size,
            size_text(cap)
        )));
    }
    Ok(())
}

/// Read `blob` from `blobs`: at most its declared size, which must be within `cap`, and it must be
/// exactly that size with that digest.
fn fetch_verified(blobs: &mut dyn Blobs, blob: &Descriptor, what: &str, cap: u64) -> Result<Vec<u8>, HostError> {
    check_descriptor(blob, what, cap)?;
    let bytes = blobs.get(&blob.digest, blob.size)?;
    if bytes.len() as u64 != blob.size || digest_of(&bytes) != blob.digest {
        return Err(refused(format!(
            "{} answered something else for its {what} {} ({} bytes with digest {}, not {} bytes): refused",
            blobs.place(),
            blob.digest,
            bytes.len(),
            digest_of(&bytes),
            blob.size
        )));
    }
    Ok(bytes)
}

/// Read the driver or agent type an image manifest describes: a driver is a Wasm config, one component,
/// one `agmsg-driver.toml` and at most one signature; a type its own config, one tar of its directory
/// and at most one signature. Nothing else.
pub fn read_artifact(manifest: &[u8], digest: &str, blobs: &mut dyn Blobs) -> Result<Pulled, HostError> {
    let place = blobs.place();
    let not_ours = |why: String| refused(format!("{place} does not hold an agmsg driver or agent type: {why}"));
    let image: ImageManifest =
        serde_json::from_slice(manifest).map_err(|e| not_ours(format!("its manifest is not an OCI image manifest: {e}")))?;
    if image.schema_version != 2 || image.media_type.as_deref().is_some_and(|m| m != IMAGE_MANIFEST) {
        return Err(not_ours(format!("its manifest is not an OCI image manifest ({IMAGE_MANIFEST}, schema version 2)")));
    }
    let is_type = match image.config.media_type.as_str() {
        WASM_CONFIG => false,
        TYPE_CONFIG => true,
        other => {
            return Err(not_ours(format!(
                "its config is {:?}, not a WebAssembly component's ({WASM_CONFIG}) or an agent type's ({TYPE_CONFIG})",
                display::line(other)
            )));
        }
    };
    let one = |media_type: &str| -> Result<Option<&Descriptor>, HostError> {
        let mut found = image.layers.iter().filter(|l| l.media_type == media_type);
        let first = found.next();
        if found.next().is_some() {
            return Err(not_ours(format!("it has more than one {media_type} layer")));
        }
        Ok(first)
    };
    let kinds: &[&str] = if is_type { &[TYPE_LAYER, SIGNATURE_LAYER] } else { &[WASM_LAYER, MANIFEST_LAYER, SIGNATURE_LAYER] };
    if let Some(other) = image.layers.iter().find(|l| !kinds.contains(&l.media_type.as_str())) {
        return Err(not_ours(format!("it has a layer of an unknown kind ({:?})", display::line(&other.media_type))));
    }
    let signature_layer = one(SIGNATURE_LAYER)?;
    if let Some(layer) = signature_layer {
        check_descriptor(layer, "signature", super::signature::MAX_SIGNATURE_BYTES)?;
    }
    if is_type {
        let tar_layer = one(TYPE_LAYER)?.ok_or_else(|| not_ours(format!("it has no directory ({TYPE_LAYER} layer)")))?;
        // Every digest and size is checked before anything is downloaded.
        check_descriptor(&image.config, "config", MAX_SMALL_BLOB)?;
        check_descriptor(tar_layer, "directory", super::tree::MAX_TOTAL_BYTES * 2)?;
        let config = fetch_verified(blobs, &image.config, "config", MAX_SMALL_BLOB)?;
        let config: serde_json::Value = serde_json::from_slice(&config).map_err(|e| not_ours(format!("its config is not JSON ({e})")))?;
        let field = |key: &str| config[key].as_str().map(str::to_owned).ok_or_else(|| not_ours(format!("its config has no {key}")));
        let (name, version) = (field("name")?, field("version")?);
        crate::semver::semver_parts(&version)
            .ok_or_else(|| not_ours(format!("its version {:?} is not a semantic version", display::line(&version))))?;
        let signature =
            signature_layer.map(|l| fetch_verified(blobs, l, "signature", super::signature::MAX_SIGNATURE_BYTES)).transpose()?;
        let tar = fetch_verified(blobs, tar_layer, "directory", super::tree::MAX_TOTAL_BYTES * 2)?;
        let tar_digest = tar_layer.digest.clone();
        return Ok(Pulled { digest: digest.to_owned(), content: Content::Type { name, version, tar, tar_digest }, signature });
    }
    let wasm_layer = one(WASM_LAYER)?.ok_or_else(|| not_ours(format!("it has no component ({WASM_LAYER} layer)")))?;
    let manifest_layer = one(MANIFEST_LAYER)?.ok_or_else(|| {
        not_ours(format!("it has no agmsg-driver.toml ({MANIFEST_LAYER} layer): publish it with `agmsg-host plugin publish`"))
    })?;
    // Every digest and size is checked before anything is downloaded.
    check_descriptor(manifest_layer, "agmsg-driver.toml", MAX_SMALL_BLOB)?;
    check_descriptor(wasm_layer, "component", MAX_COMPONENT_BYTES)?;
    let manifest_bytes = fetch_verified(blobs, manifest_layer, "agmsg-driver.toml", MAX_SMALL_BLOB)?;
    let manifest_text = String::from_utf8(manifest_bytes).map_err(|_| not_ours("its agmsg-driver.toml is not UTF-8".into()))?;
    let signature = signature_layer.map(|l| fetch_verified(blobs, l, "signature", super::signature::MAX_SIGNATURE_BYTES)).transpose()?;
    let wasm = fetch_verified(blobs, wasm_layer, "component", MAX_COMPONENT_BYTES)?;
    let content =
        Content::Driver { manifest_text, manifest_digest: manifest_layer.digest.clone(), wasm, wasm_digest: wasm_layer.digest.clone() };
    Ok(Pulled { digest: digest.to_owned(), content, signature })
}

/// What a publication uploads: its blobs and the image manifest that lists them.
pub struct Publication {
    pub manifest: Vec<u8>,
    pub digest: String,
    /// The config, then each layer: (digest, bytes).
    pub blobs: Vec<(String, Vec<u8>)>,
}

impl Publication {
    /// The artifact of a driver: its component, its `agmsg-driver.toml` (`manifest_text`, as it will
    /// be installed) and, when signed, the signature.
    pub fn new(name: &str, version: &str, wasm: &[u8], manifest_text: &str, signature: Option<&[u8]>) -> Publication {
        let wasm_digest = digest_of(wasm);
        let config = serde_json::to_vec(&serde_json::json!({
            "architecture": "wasm", "os": "wasip2", "layerDigests": [wasm_digest],
        }))
        .expect("json");
        let layer = |media_type: &str, bytes: &[u8], title: &str| Descriptor {
            media_type: media_type.to_owned(),
            digest: digest_of(bytes),
            size: bytes.len() as u64,
            annotations: Some(BTreeMap::from([(TITLE.to_owned(), title.to_owned())])),
        };
        let mut blobs = vec![(digest_of(&config), config.clone())];
        let mut layers = vec![layer(WASM_LAYER, wasm, "driver.wasm"), layer(MANIFEST_LAYER, manifest_text.as_bytes(), "agmsg-driver.toml")];
        blobs.push((digest_of(wasm), wasm.to_vec()));
        blobs.push((digest_of(manifest_text.as_bytes()), manifest_text.as_bytes().to_vec()));
        if let Some(signature) = signature {
            layers.push(layer(SIGNATURE_LAYER, signature, "agmsg-driver.sig"));
            blobs.push((digest_of(signature), signature.to_vec()));
        }
        let config =
            Descriptor { media_type: WASM_CONFIG.to_owned(), digest: digest_of(&config), size: config.len() as u64, annotations: None };
        Publication::of_image(name, version, config, layers, blobs)
    }

    /// The artifact of an agent type: its directory as a tar, its name and version in the config and,
    /// when signed, the signature.
    pub fn new_type(name: &str, version: &str, tar: &[u8], signature: Option<&[u8]>) -> Publication {
        let config = serde_json::to_vec(&serde_json::json!({ "name": name, "version": version })).expect("json");
        let mut layers = vec![Descriptor {
            media_type: TYPE_LAYER.to_owned(),
            digest: digest_of(tar),
            size: tar.len() as u64,
            annotations: Some(BTreeMap::from([(TITLE.to_owned(), format!("{name}.tar"))])),
        }];
        let mut blobs = vec![(digest_of(&config), config.clone()), (digest_of(tar), tar.to_vec())];
        if let Some(signature) = signature {
            layers.push(Descriptor {
                media_type: SIGNATURE_LAYER.to_owned(),
                digest: digest_of(signature),
                size: signature.len() as u64,
                annotations: Some(BTreeMap::from([(TITLE.to_owned(), "agmsg-type.sig".to_owned())])),
            });
            blobs.push((digest_of(signature), signature.to_vec()));
        }
        let config =
            Descriptor { media_type: TYPE_CONFIG.to_owned(), digest: digest_of(&config), size: config.len() as u64, annotations: None };
        Publication::of_image(name, version, config, layers, blobs)
    }

    fn of_image(name: &str, version: &str, config: Descriptor, layers: Vec<Descriptor>, blobs: Vec<(String, Vec<u8>)>) -> Publication {
        let image = ImageManifest {
            schema_version: 2,
            media_type: Some(IMAGE_MANIFEST.to_owned()),
            artifact_type: None,
            config,
            layers,
            annotations: Some(BTreeMap::from([(TITLE.to_owned(), name.to_owned()), (VERSION.to_owned(), version.to_owned())])),
        };
        let manifest = serde_json::to_vec_pretty(&image).expect("json");
        Publication { digest: digest_of(&manifest), manifest, blobs }
    }

    /// Write it as an OCI image layout in one tar file at `path` (replacing it as one step), its
    /// manifest tagged `tag`.
    pub fn write_layout(&self, path: &Path, tag: &str) -> Result<(), HostError> {
        let index = serde_json::json!({
            "schemaVersion": 2,
            "manifests": [{
                "mediaType": IMAGE_MANIFEST, "digest": self.digest, "size": self.manifest.len(),
                "annotations": { REF_NAME: tag },
            }],
        });
        let mut files: Vec<(String, &[u8])> = Vec::with_capacity(3 + self.blobs.len());
        let layout_version = br#"{"imageLayoutVersion":"1.0.0"}"#;
        let index = serde_json::to_vec(&index).expect("json");
        files.push(("oci-layout".into(), layout_version));
        files.push(("index.json".into(), &index));
        files.push((format!("blobs/sha256/{}", check_digest(&self.digest)?), &self.manifest));
        for (digest, bytes) in &self.blobs {
            files.push((format!("blobs/sha256/{}", check_digest(digest)?), bytes));
        }
        let failed = |e: std::io::Error| refused(format!("cannot write {}: {e}", path.display()));
        crate::atomic_file::write_atomically(path, failed, |out| {
            let mut tar = tar::Builder::new(out);
            for (name, bytes) in files {
                let mut header = tar::Header::new_ustar();
                header.set_size(bytes.len() as u64);
                header.set_mode(0o644);
                header.set_mtime(0);
                header.set_entry_type(tar::EntryType::Regular);
                tar.append_data(&mut header, &name, bytes).map_err(failed)?;
            }
            tar.finish().map_err(failed)
        })
    }
}

/// An OCI image layout read whole (a tar file: only `oci-layout`, `index.json` and `blobs/sha256/*`
/// are kept, in memory; nothing in it is written anywhere) or a directory (its blobs read by checked
/// digest, no link followed).
pub struct Layout {
    place: PathBuf,
    files: Option<BTreeMap<String, Vec<u8>>>,
}

/// The most a layout tar may hold in all.
const MAX_LAYOUT_BYTES: u64 = MAX_COMPONENT_BYTES + (8 << 20);

impl Layout {
    /// Whether `path` is one: a directory holding `oci-layout`, or a `.tar` file.
    pub fn is_layout(path: &Path) -> bool {
        path.join("oci-layout").is_file() || (path.is_file() && path.extension().is_some_and(|e| e == "tar"))
    }

    pub fn open(path: &Path) -> Result<Layout, HostError> {
        let place = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
        if path.is_dir() {
            return Ok(Layout { place, files: None });
        }
        let fail = |why: String| refused(format!("{}: not an OCI image layout tar: {why}", path.display()));
        let file = std::fs::File::open(path).map_err(|e| fail(e.to_string()))?;
        let mut archive = tar::Archive::new(file.take(MAX_LAYOUT_BYTES + 1));
        let mut files = BTreeMap::new();
        let mut total = 0u64;
        for entry in archive.entries().map_err(|e| fail(e.to_string()))? {
            let mut entry = entry.map_err(|e| fail(e.to_string()))?;
            if !entry.header().entry_type().is_file() {
                continue;
            }
            let name = entry.path().map_err(|e| fail(e.to_string()))?.to_string_lossy().trim_start_matches("./").to_owned();
            let kept = name == "oci-layout"
                || name == "index.json"
                || name.strip_prefix("blobs/sha256/").is_some_and(|hex| check_digest(&format!("sha256:{hex}")).is_ok());
            if !kept {
                continue;
            }
            total += entry.size();
            if total > MAX_LAYOUT_BYTES {
                return Err(fail(format!("it holds more than {}", size_text(MAX_LAYOUT_BYTES))));
            }
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).map_err(|e| fail(e.to_string()))?;
            files.insert(name, bytes);
        }
        if !files.contains_key("oci-layout") {
            return Err(fail("it has no oci-layout file".into()));
        }
        Ok(Layout { place, files: Some(files) })
    }

    fn read(&self, name: &str, max: u64) -> Result<Vec<u8>, HostError> {
        match &self.files {
            Some(files) => {
                let bytes = files.get(name).ok_or_else(|| refused(format!("{} holds no {name}", self.place.display())))?;
                if bytes.len() as u64 > max {
                    return Err(refused(format!("{}: {name} is larger than {}", self.place.display(), size_text(max))));
                }
                Ok(bytes.clone())
            }
            None => super::tree::read_below(&self.place, name, max),
        }
    }

    /// The image manifest `wanted` names (a tag, or a digest; `None`: the only one), its bytes checked
    /// against the digest the index gives, and that digest.
    pub fn manifest(&self, wanted: Option<&str>) -> Result<(Vec<u8>, String), HostError> {
        let index: serde_json::Value = serde_json::from_slice(&self.read("index.json", MAX_SMALL_BLOB)?)
            .map_err(|e| refused(format!("{}: index.json: {e}", self.place.display())))?;
        let entries = index["manifests"].as_array().cloned().unwrap_or_default();
        let descriptors: Vec<Descriptor> = entries.into_iter().filter_map(|e| serde_json::from_value(e).ok()).collect();
        let ref_name = |d: &Descriptor| d.annotations.as_ref().and_then(|a| a.get(REF_NAME)).cloned();
        let chosen: Vec<&Descriptor> = match wanted {
            Some(w) if w.starts_with("sha256:") => descriptors.iter().filter(|d| d.digest == w).collect(),
            Some(tag) => descriptors.iter().filter(|d| ref_name(d).as_deref() == Some(tag)).collect(),
            None => descriptors.iter().collect(),
        };
        let [descriptor] = chosen.as_slice() else {
            let tags: Vec<String> = descriptors.iter().filter_map(ref_name).map(|t| display::line(&t).into_owned()).collect();
            return Err(refused(format!(
                "{} holds {} manifest(s) named {}: say which with <file>:<tag> or <file>@sha256:<digest> (it has: {})",
                self.place.display(),
                chosen.len(),
                wanted.unwrap_or("(any)"),
                tags.join(", ")
            )));
        };
        if descriptor.media_type != IMAGE_MANIFEST {
            return Err(refused(format!("{}: {} is not an image manifest", self.place.display(), descriptor.digest)));
        }
        let bytes = fetch_verified(&mut LayoutBlobs(self), descriptor, "manifest", MAX_MANIFEST_BYTES)?;
        Ok((bytes, descriptor.digest.clone()))
    }
}

struct LayoutBlobs<'a>(&'a Layout);

impl Blobs for LayoutBlobs<'_> {
    fn get(&mut self, digest: &str, max: u64) -> Result<Vec<u8>, HostError> {
        let hex = check_digest(digest)?;
        self.0.read(&format!("blobs/sha256/{hex}"), max)
    }

    fn place(&self) -> String {
        self.0.place.display().to_string()
    }
}

impl Blobs for Layout {
    fn get(&mut self, digest: &str, max: u64) -> Result<Vec<u8>, HostError> {
        LayoutBlobs(self).get(digest, max)
    }

    fn place(&self) -> String {
        self.place.display().to_string()
    }
}

/// One HTTP answer, read whole (within its bound).
struct Answer {
    status: u16,
    headers: ureq::http::HeaderMap,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// A registry, spoken to in the OCI distribution API for one repository.
pub struct Registry {
    agent: ureq::Agent,
    reference: Reference,
    origin: String,
    options: Options,
    /// `Authorization` for the registry's own host, once it asked.
    authorization: Option<String>,
    /// The user's credentials for it, looked up when it first asks for some (`None`: not yet).
    credentials: Option<registry_auth::Lookup>,
}

/// `scheme://authority` and the rest of an absolute URL.
fn split_url(url: &str) -> Option<(&str, &str, &str)> {
    let (scheme, rest) = url.split_once("://")?;
    let (authority, path) = rest.find('/').map_or((rest, ""), |at| rest.split_at(at));
    Some((scheme, authority, path))
}

/// Percent-encode a query value.
fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

impl Registry {
    pub fn new(reference: &Reference, options: &Options) -> Registry {
        let loopback = reference.is_loopback();
        let mut config = ureq::Agent::config_builder()
            .max_redirects(0)
            .max_redirects_will_error(false)
            .http_status_as_error(false)
            .https_only(!loopback)
            .timeout_connect(Some(Duration::from_secs(30).min(options.timeout)))
            .timeout_per_call(Some(options.timeout))
            .user_agent(concat!("agmsg-host/", env!("CARGO_PKG_VERSION")));
        if loopback {
            // This machine is never reached through a proxy.
            config = config.proxy(None);
        }
        Registry {
            agent: config.build().new_agent(),
            reference: reference.clone(),
            origin: reference.origin(),
            options: options.clone(),
            authorization: None,
            credentials: None,
        }
    }

    fn url(&self, rest: &str) -> String {
        format!("{}/v2/{}/{rest}", self.origin, self.reference.repository)
    }

    /// Where a redirect from `from` to `location` leads, if the user lets it: the same scheme and
    /// host, or a host they named (over HTTPS).
    fn follow(&self, from: &str, location: &str) -> Result<String, HostError> {
        let (scheme, authority, _) = split_url(from).expect("an absolute URL");
        let to = if location.starts_with("http://") || location.starts_with("https://") {
            location.to_owned()
        } else if let Some(rest) = location.strip_prefix("//") {
            format!("{scheme}://{rest}")
        } else if location.starts_with('/') {
            format!("{scheme}://{authority}{location}")
        } else {
            return Err(refused(format!("{} redirected to {:?}, which is not a URL", self.reference.registry, display::line(location))));
        };
        let (to_scheme, to_authority, _) = split_url(&to).ok_or_else(|| refused("a redirect to nowhere"))?;
        let same = to_authority.eq_ignore_ascii_case(authority) && to_scheme == scheme;
        let named = to_scheme == "https" && self.options.redirect_hosts.iter().any(|h| h.eq_ignore_ascii_case(host_of(to_authority)));
        if !(same || named) {
            return Err(refused(format!(
                "{} redirected to {to_scheme}://{}: another host, refused (if you trust that host to serve this registry's blobs, \
                 allow it with --allow-redirect {})",
                self.reference.registry,
                display::line(to_authority),
                display::line(host_of(to_authority))
            )));
        }
        Ok(to)
    }

    /// One request, its redirects followed as far as allowed and the registry's authentication
    /// answered once; the answer read up to `max` bytes (more is refused).
    fn exchange(&mut self, method: &str, url: &str, headers: &[(&str, &str)], body: Option<&[u8]>, max: u64) -> Result<Answer, HostError> {
        let mut url = url.to_owned();
        let mut authenticated = false;
        for _ in 0..=MAX_HOPS {
            let own_host = split_url(&url).is_some_and(|(_, a, _)| a.eq_ignore_ascii_case(&self.reference.registry));
            let mut request = ureq::http::Request::builder().method(method).uri(&url);
            for (name, value) in headers {
                request = request.header(*name, *value);
            }
            if let (true, Some(auth)) = (own_host, &self.authorization) {
                request = request.header("Authorization", auth.as_str());
            }
            let fail = |e: &dyn std::fmt::Display| refused(format!("{}: {method} {url}: {e}", self.reference.registry));
            let sent = match body {
                Some(body) => self.agent.run(request.body(body.to_vec()).map_err(|e| fail(&e))?),
                None => self.agent.run(request.body(()).map_err(|e| fail(&e))?),
            };
            let mut response = sent.map_err(|e| match e {
                ureq::Error::Timeout(_) => HostError::new(
                    crate::error::ExitClass::TimedOut,
                    format!("{}: {method} {url}: no answer in time ({e})", self.reference.registry),
                ),
                e => fail(&e),
            })?;
            let status = response.status().as_u16();
            if (300..400).contains(&status) && status != 304 {
                let location = response.headers().get("location").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
                if !matches!(method, "GET" | "HEAD") {
                    return Err(refused(format!("{} redirected a {method}: refused", self.reference.registry)));
                }
                url = self.follow(&url, &location)?;
                continue;
            }
            if status == 401 && own_host && !authenticated {
                let challenge = response.headers().get("www-authenticate").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
                self.authenticate(&challenge)?;
                authenticated = true;
                continue;
            }
            let headers = response.headers().clone();
            let body = if method == "HEAD" {
                Vec::new()
            } else {
                response.body_mut().with_config().limit(max).read_to_vec().map_err(|e| match e {
                    ureq::Error::BodyExceedsLimit(_) => refused(format!(
                        "{}: {method} {url}: the answer is larger than the {} expected: refused",
                        self.reference.registry,
                        size_text(max)
                    )),
                    ureq::Error::Timeout(_) => HostError::new(
                        crate::error::ExitClass::TimedOut,
                        format!("{}: {method} {url}: the answer did not arrive in time ({e})", self.reference.registry),
                    ),
                    e => fail(&e),
                })?
            };
            return Ok(Answer { status, headers, body });
        }
        Err(refused(format!("{}: more than {MAX_HOPS} redirects", self.reference.registry)))
    }

    /// Answer a `WWW-Authenticate` challenge: a bearer token from the realm it names (with the user's
    /// credentials, if they have some for this registry), or their credentials as basic auth.
    fn authenticate(&mut self, challenge: &str) -> Result<(), HostError> {
        let registry = self.reference.registry.clone();
        let (scheme, params) = challenge.split_once(' ').unwrap_or((challenge, ""));
        let params = parse_params(params);
        let lookup = self.credentials.get_or_insert_with(|| {
            registry_auth::find(&self.reference.registry, &self.reference.repository, &|name| std::env::var_os(name))
        });
        let basic = lookup.found.as_ref().map(|(c, _)| {
            use base64::Engine;
            format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(c.basic()))
        });
        let none_here =
            || format!("no credentials for it in {}; log in with podman login or docker login {registry}", lookup.looked.join(", "));
        if scheme.eq_ignore_ascii_case("basic") {
            let basic = basic.ok_or_else(|| refused(format!("{registry} asks for credentials, and there are {}", none_here())))?;
            self.authorization = Some(basic);
            return Ok(());
        }
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(refused(format!("{registry} asks for an authentication this host does not speak ({:?})", display::line(scheme))));
        }
        let realm = params.get("realm").cloned().unwrap_or_default();
        let Some((realm_scheme, realm_authority, _)) = split_url(&realm) else {
            return Err(refused(format!("{registry}'s token service is not a URL ({:?})", display::line(&realm))));
        };
        if realm_scheme != "https"
            && !(realm_scheme == "http" && is_loopback_host(host_of(realm_authority)) && self.reference.is_loopback())
        {
            return Err(refused(format!("{registry}'s token service is not HTTPS ({:?}): refused", display::line(&realm))));
        }
        let mut query = Vec::new();
        for key in ["service", "scope"] {
            if let Some(value) = params.get(key) {
                query.push(format!("{key}={}", encode(value)));
            }
        }
        let url = if query.is_empty() {
            realm.clone()
        } else {
            format!("{realm}{}{}", if realm.contains('?') { '&' } else { '?' }, query.join("&"))
        };
        let mut request = self.agent.get(&url);
        if let Some(basic) = &basic {
            request = request.header("Authorization", basic.as_str());
        }
        let mut response = request.call().map_err(|e| refused(format!("{registry}'s token service: {e}")))?;
        if response.status().as_u16() != 200 {
            let credentials = match &lookup.found {
                Some((_, place)) => format!("with the credentials from {place}"),
                None => none_here(),
            };
            return Err(refused(format!("{registry}'s token service answered {} ({credentials})", response.status())));
        }
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_SMALL_BLOB)
            .read_to_vec()
            .map_err(|e| refused(format!("{registry}'s token service: {e}")))?;
        let answer: serde_json::Value = serde_json::from_slice(&body).map_err(|e| refused(format!("{registry}'s token service: {e}")))?;
        let token = answer["token"].as_str().or(answer["access_token"].as_str()).filter(|t| !t.is_empty() && t.is_ascii());
        let token = token.ok_or_else(|| refused(format!("{registry}'s token service gave no token")))?;
        self.authorization = Some(format!("Bearer {token}"));
        Ok(())
    }

    /// The image manifest the reference names, and its digest: checked against the digest asked for,
    /// and against the digest the registry says it has.
    pub fn manifest(&mut self) -> Result<(Vec<u8>, String), HostError> {
        let wanted = self.reference.wanted().to_owned();
        let url = self.url(&format!("manifests/{wanted}"));
        let answer = self.exchange("GET", &url, &[("Accept", IMAGE_MANIFEST)], None, MAX_MANIFEST_BYTES)?;
        let registry = &self.reference.registry;
        match answer.status {
            200 => {}
            404 => return Err(refused(format!("{} is not in {registry} (no such repository or tag)", self.reference))),
            status => {
                return Err(refused(format!(
                    "{registry} answered {status} for {}: {}",
                    self.reference,
                    display::line(&String::from_utf8_lossy(&answer.body[..answer.body.len().min(300)]))
                )));
            }
        }
        let digest = digest_of(&answer.body);
        if let Some(asked) = &self.reference.digest
            && *asked != digest
        {
            return Err(refused(format!("{registry} answered a manifest whose digest is {digest}, not the {asked} asked for: refused")));
        }
        if let Some(said) = answer.header("docker-content-digest")
            && said != digest
        {
            return Err(refused(format!("{registry} says the manifest is {}, but what it sent is {digest}: refused", display::line(said))));
        }
        Ok((answer.body, digest))
    }

    /// Whether the registry has the blob `digest`.
    fn has_blob(&mut self, digest: &str) -> Result<bool, HostError> {
        let url = self.url(&format!("blobs/{digest}"));
        Ok(self.exchange("HEAD", &url, &[], None, 0)?.status == 200)
    }

    fn push_blob(&mut self, digest: &str, bytes: &[u8]) -> Result<(), HostError> {
        if self.has_blob(digest)? {
            return Ok(());
        }
        let registry = self.reference.registry.clone();
        let url = self.url("blobs/uploads/");
        let started = self.exchange("POST", &url, &[], Some(&[]), MAX_SMALL_BLOB)?;
        if started.status != 202 {
            return Err(refused(format!("{registry} refused an upload ({}): {}", started.status, String::from_utf8_lossy(&started.body))));
        }
        let location = started.header("location").unwrap_or("").to_owned();
        let upload = self.follow(&url, &location)?;
        let upload = format!("{upload}{}digest={}", if upload.contains('?') { '&' } else { '?' }, encode(digest));
        let put = self.exchange("PUT", &upload, &[("Content-Type", "application/octet-stream")], Some(bytes), MAX_SMALL_BLOB)?;
        if put.status != 201 {
            return Err(refused(format!("{registry} refused the blob {digest} ({}): {}", put.status, String::from_utf8_lossy(&put.body))));
        }
        Ok(())
    }

    /// Upload `publication` and tag it `tag`; the digest the registry keeps it under.
    pub fn push(&mut self, publication: &Publication, tag: &str) -> Result<String, HostError> {
        for (digest, bytes) in &publication.blobs {
            self.push_blob(digest, bytes)?;
        }
        let url = self.url(&format!("manifests/{tag}"));
        let put = self.exchange("PUT", &url, &[("Content-Type", IMAGE_MANIFEST)], Some(&publication.manifest), MAX_SMALL_BLOB)?;
        if put.status != 201 {
            return Err(refused(format!(
                "{} refused the manifest ({}): {}",
                self.reference.registry,
                put.status,
                String::from_utf8_lossy(&put.body)
            )));
        }
        Ok(publication.digest.clone())
    }
}

impl Blobs for Registry {
    fn get(&mut self, digest: &str, max: u64) -> Result<Vec<u8>, HostError> {
        check_digest(digest)?;
        let url = self.url(&format!("blobs/{digest}"));
        let answer = self.exchange("GET", &url, &[], None, max)?;
        if answer.status != 200 {
            return Err(refused(format!("{} answered {} for the blob {digest}", self.reference.registry, answer.status)));
        }
        Ok(answer.body)
    }

    fn place(&self) -> String {
        self.reference.to_string()
    }
}

/// `key="value", key2=value2` (a `WWW-Authenticate` challenge's parameters).
fn parse_params(text: &str) -> BTreeMap<String, String> {
    let mut params = BTreeMap::new();
    let mut rest = text.trim();
    while let Some((key, after)) = rest.split_once('=') {
        let key = key.trim().trim_start_matches(',').trim().to_ascii_lowercase();
        let after = after.trim_start();
        let (value, next) = match after.strip_prefix('"') {
            Some(quoted) => match quoted.find('"') {
                Some(end) => (&quoted[..end], &quoted[end + 1..]),
                None => (quoted, ""),
            },
            None => after.split_once(',').map_or((after, ""), |(v, n)| (v, n)),
        };
        params.insert(key, value.trim().to_owned());
        rest = next.trim_start().trim_start_matches(',');
    }
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_references_and_refuses_what_could_escape() {
        let r = Reference::parse("oci://127.0.0.1:5000/drivers/notes:1.0").unwrap();
        assert_eq!(
            (r.registry.as_str(), r.repository.as_str(), r.tag.as_deref(), r.digest.as_deref()),
            ("127.0.0.1:5000", "drivers/notes", Some("1.0"), None)
        );
        assert!(r.is_loopback());
        assert_eq!(r.to_string(), "oci://127.0.0.1:5000/drivers/notes:1.0");
        let d = format!("sha256:{}", "a".repeat(64));
        let r = Reference::parse(&format!("oci://ghcr.io/x/y@{d}")).unwrap();
        assert_eq!((r.tag.clone(), r.digest.as_deref(), r.is_loopback()), (None, Some(d.as_str()), false));
        assert_eq!(Reference::parse("oci://ghcr.io/x/y").unwrap().tag.as_deref(), Some("latest"));
        assert!(Reference::parse("oci://[::1]:5000/x:1").unwrap().is_loopback());
        assert!(!Reference::parse("oci://localhost.evil.example/x:1").unwrap().is_loopback());
        for bad in [
            "ghcr.io/x:1",
            "oci://ghcr.io",
            "oci://ghcr.io/../x:1",
            "oci://ghcr.io/X:1",
            "oci://ghcr.io/x:../1",
            "oci://ghcr.io/x@sha256:abc",
            "oci://gh cr.io/x:1",
            "oci://ghcr.io:99999/x:1",
            "oci://user@ghcr.io/x:1",
        ] {
            assert!(Reference::parse(bad).is_err(), "{bad}");
        }
        assert!(check_digest(&format!("sha256:{}", "A".repeat(64))).is_err());
        assert!(check_digest(&format!("sha256:{}/..", "a".repeat(61))).is_err());
    }

    #[test]
    fn follows_redirects_only_where_the_user_lets_it() {
        let reference = Reference::parse("oci://registry.example/a/b:1").unwrap();
        let options = Options { redirect_hosts: vec!["cdn.example".into()], ..Options::default() };
        let registry = Registry::new(&reference, &options);
        let from = "https://registry.example/v2/a/b/blobs/sha256:x";
        assert_eq!(registry.follow(from, "/v2/a/b/blobs/y").unwrap(), "https://registry.example/v2/a/b/blobs/y");
        assert_eq!(registry.follow(from, "https://cdn.example/blob?sig=1").unwrap(), "https://cdn.example/blob?sig=1");
        for refused in ["https://evil.example/blob", "http://cdn.example/blob", "http://registry.example/v2/x", "//evil.example/x", "blob"]
        {
            assert!(registry.follow(from, refused).is_err(), "{refused}");
        }
    }

    #[test]
    fn parses_challenges() {
        let p = parse_params(r#"realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push""#);
        assert_eq!(p["realm"], "https://auth.example/token");
        assert_eq!(p["scope"], "repository:a/b:pull,push");
        assert_eq!(encode("repository:a/b:pull"), "repository%3Aa%2Fb%3Apull");
    }

    #[test]
    fn a_publication_reads_back_from_its_layout() {
        let dir = tempfile::tempdir().unwrap();
        let publication = Publication::new("notes", "1.0.0", b"\0asm", "name = \"notes\"\n", Some(b"sig"));
        let file = dir.path().join("notes.tar");
        publication.write_layout(&file, "1.0.0").unwrap();
        let mut layout = Layout::open(&file).unwrap();
        let (manifest, digest) = layout.manifest(Some("1.0.0")).unwrap();
        assert_eq!(digest, publication.digest);
        assert!(layout.manifest(Some("2.0.0")).is_err());
        let pulled = read_artifact(&manifest, &digest, &mut layout).unwrap();
        let Content::Driver { wasm, manifest_text, .. } = &pulled.content else { panic!("a driver was published") };
        assert_eq!(
            (wasm.as_slice(), manifest_text.as_str(), pulled.signature.as_deref()),
            (&b"\0asm"[..], "name = \"notes\"\n", Some(&b"sig"[..]))
        );

        // An agent type: its name and version from the config, its directory's tar as published.
        let typed = Publication::new_type("kiro", "1.2.0", b"a tar", None);
        typed.write_layout(&file, "1.2.0").unwrap();
        let mut layout = Layout::open(&file).unwrap();
        let (manifest, digest) = layout.manifest(None).unwrap();
        let pulled = read_artifact(&manifest, &digest, &mut layout).unwrap();
        let Content::Type { name, version, tar, tar_digest } = &pulled.content else { panic!("a type was published") };
        assert_eq!(
            (name.as_str(), version.as_str(), tar.as_slice(), tar_digest.clone()),
            ("kiro", "1.2.0", &b"a tar"[..], digest_of(b"a tar"))
        );
        assert!(pulled.signature.is_none());
    }
}
