//! `plugin install | list | inspect | trust | untrust | remove` as workflows returning what to print:
//! the command line parses, hands over the user's consent ([`Consent`], [`Prompt`]) and prints the
//! text these return.
//!
//! Install and trust show the capabilities a driver asks for (and, for an update, what widened) and ask
//! on a terminal; without one they need `--yes` (grant what it asks for) or `--grant` flags (grant
//! those; the driver gets what it declared AND was granted). A component whose imports go beyond its
//! own manifest, or that targets an incompatible contract version, is refused before anything is
//! written.
//!
//! plugin/ sits below the axes: what only an axis knows reaches it through [`Axes`], which the crate
//! root fills in from every axis's module.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::DirPackage;
use super::conf::Manifest;
use super::manifest::{MANIFEST_FILE, PluginManifest};
use super::registry::{self, AgentTypeFiles, TypeFile};
use super::trust::TrustState;
use super::workflow::{self, ConsentRequest, Offer, Package, Trusted, TypePackage, examine};
use crate::axis::{Axis, offered_packages};
use crate::bundled;
use crate::capabilities::{Capabilities, Capability};
use crate::display;
use crate::error::HostError;
use crate::runtime::Runtime;
use crate::runtime::sandbox::{self, Grants};

/// What the plugin commands need of the axes above plugin/ (the crate root gathers it from every
/// axis's module: `crate::plugin_axes`).
pub struct Axes {
    /// How to read a plugin directory that is a package of an axis's own kind (an agent type).
    pub dirs: Vec<&'static dyn DirPackage>,
    /// What is shown of such a package.
    pub reports: Vec<&'static dyn DirReport>,
    /// What a bundled driver of an axis runs with (storage: its store; terminal: what its
    /// terminal.conf declares); `None` when the axis bundles no driver of that name.
    pub bundled_runs_with: fn(Axis, &str) -> Option<Capabilities>,
}

impl Axes {
    /// The types axis's reader of its package directories (agent types).
    pub(crate) fn types_dirs(&self) -> &'static dyn DirPackage {
        *self.dirs.iter().find(|d| d.axis() == Axis::Types).expect("the types axis has package directories")
    }

    fn report(&self, axis: Axis) -> &'static dyn DirReport {
        *self.reports.iter().find(|r| r.axis() == axis).expect("an axis with package directories describes them")
    }
}

/// A package of an axis's own kind (an agent type's directory), as the user is shown it before
/// consenting and by `inspect`.
pub struct DirOffer<'a> {
    pub name: &'a str,
    pub conf_sha256: &'a str,
    pub files_sha256: &'a str,
    pub from: &'a Path,
    pub conf: Option<&'a Manifest>,
    pub plug: Option<&'a PluginManifest>,
    pub files: &'a [TypeFile],
    /// Where it is used from once trusted (spawn's launcher path).
    pub runs_from: &'a Path,
}

/// What an axis with package directories says of one of them (the types axis: `agent::offer`).
pub trait DirReport: Sync {
    /// The axis whose packages it describes.
    fn axis(&self) -> Axis;
    /// What the package is and gets, before anything is asked. Every value from the package is printed
    /// through [`display::line`].
    fn describe(&self, offer: &DirOffer) -> String;
    /// The fields `inspect --json` adds for the package `name` (manifest `conf`, in `dir`).
    fn inspect_fields(&self, name: &str, conf: &Manifest, dir: &Path, has_plug: bool) -> Map<String, Value>;
}

/// How the user answers the consent question.
#[derive(Clone, Debug, Default)]
pub struct Consent {
    /// Grant everything the driver asks for, without asking.
    pub yes: bool,
    /// Grant only these capabilities (as `--grant` spells them).
    pub grants: Vec<String>,
}

/// Where the consent question is put to the user.
pub trait Prompt {
    /// Show the user `text` (the command line: on stderr).
    fn show(&mut self, text: &str);
    /// Ask `question` and read the answer; `None` when there is no terminal to ask on.
    fn ask(&mut self, question: &str) -> Option<std::io::Result<String>>;
}

fn runtime() -> Result<Runtime, HostError> {
    Runtime::from_env().map_err(HostError::refused)
}

/// What a driver is and asks for, as the consent prompt and `inspect` show it. The manifest was
/// validated when read; every value of it is printed through [`display::line`] all the same, so nothing
/// in it can hide the capability list from the user asked to consent.
fn describe_request(manifest: &PluginManifest, sha256: &str, from: &Path) -> String {
    let mut text = format!(
        "{}/{} {} (built against {}@{}) from {}\n  sha256 {sha256}\n",
        manifest.axis,
        display::line(&manifest.name),
        display::line(&manifest.version),
        manifest.axis.package(),
        display::line(&manifest.api),
        display::line(&from.display().to_string())
    );
    if let Some(description) = &manifest.description {
        text.push_str(&format!("  {}\n", display::line(description)));
    }
    let asked = manifest.capabilities();
    if asked.0.is_empty() {
        text.push_str("It asks for nothing beyond the sandbox every driver gets.\n");
    } else {
        text.push_str("It asks for:\n");
        for cap in &asked.0 {
            let shown = display::line(&cap.to_string()).into_owned();
            match cap.consequence() {
                Some(consequence) => text.push_str(&format!("  {shown}    ({consequence})\n")),
                None => text.push_str(&format!("  {shown}\n")),
            }
        }
    }
    text
}

/// The bundled driver of `axis` named `name`, if a plugin of that name would replace one.
fn replaced_bundled(axes: &Axes, axis: Axis, name: &str) -> Option<&'static str> {
    super::dir_package(&axes.dirs, axis).and_then(|d| d.shadows(name)).or_else(|| bundled::of(axis).map(|d| d.name).find(|b| *b == name))
}

/// The user's answer to `request`: what is granted. An earlier trust of the plugin shows what widened;
/// one of these very files asking for the same, with neither `--yes` nor `--grant` given, is answered
/// with what was granted then, without asking (a no-op that succeeds, terminal or not).
pub fn answer(axes: &Axes, request: &ConsentRequest, consent: &Consent, prompt: &mut dyn Prompt) -> Result<Capabilities, HostError> {
    if let Some(granted) = &request.unchanged
        && consent.grants.is_empty()
        && !consent.yes
    {
        prompt.show("already trusted, unchanged since (the same component and manifest, asking for the same): nothing to ask\n");
        return Ok(granted.clone());
    }
    let asked = request.asks_for();
    let mut text = match &request.offer {
        Offer::Component(manifest) => {
            let mut text = describe_request(manifest, request.sha256, request.from);
            match (manifest.axis, replaced_bundled(axes, manifest.axis, &manifest.name)) {
                (_, None) => {}
                (Axis::Types, Some(name)) => text.push_str(&format!(
                    "It replaces bundled {name}'s delivery plug: wherever the type {name} delivers, this component answers.\n"
                )),
                (axis, Some(name)) => text.push_str(&format!(
                    "It replaces the bundled {axis} driver '{name}': wherever {axis}/{name} is used, this one runs instead.\n"
                )),
            }
            text
        }
        Offer::AgentType { name, conf_sha256, conf, plug, files, runs_from } => axes.report(Axis::Types).describe(&DirOffer {
            name,
            conf_sha256,
            files_sha256: request.sha256,
            from: request.from,
            conf: *conf,
            plug: *plug,
            files,
            runs_from,
        }),
    };
    match &request.widened {
        Some(widened) if widened.is_empty() => text.push_str("Compared with what you trusted before, it asks for nothing more.\n"),
        Some(widened) => {
            text.push_str("Compared with what you trusted before, it now also asks for:\n");
            for cap in widened {
                text.push_str(&format!("  + {}\n", display::line(&cap.to_string())));
            }
        }
        None => {}
    }
    prompt.show(&text);
    if !consent.grants.is_empty() {
        // A grant that names no capability is a malformed argument (usage), before anything is written.
        let granted = consent.grants.iter().map(|g| Capability::parse_grant(g)).collect::<Result<Vec<_>, _>>().map_err(HostError::usage)?;
        return Ok(Capabilities(granted));
    }
    if consent.yes {
        return Ok(asked);
    }
    let Some(answer) = prompt.ask("Trust it and grant these? [y/N] ") else {
        return Err(HostError::refused(
            "no terminal to ask for consent: rerun with --yes to grant what it asks for, or with --grant <capability> for each one to grant",
        ));
    };
    let answer = answer.map_err(|e| HostError::refused(format!("reading the answer: {e}")))?;
    if matches!(answer.trim(), "y" | "Y" | "yes" | "Yes") { Ok(asked) } else { Err(HostError::refused("not trusted: you declined")) }
}

/// `plugin install`: a driver package (a directory holding agmsg-driver.toml, the manifest itself, or
/// a component with `manifest`) or an agent type's directory, installed and trusted once the user
/// consents. What to print.
pub fn install(
    axes: &Axes,
    source: &Path,
    manifest: Option<&Path>,
    consent: &Consent,
    prompt: &mut dyn Prompt,
) -> Result<String, HostError> {
    if manifest.is_none() && TypePackage::is_type_dir(axes.types_dirs(), source) {
        return install_type(axes, source, consent, prompt);
    }
    let package = Package::read(source, manifest)?;
    let (trusted, shadowed) = workflow::install(&runtime()?, &package, |request| answer(axes, request, consent, prompt))?;
    let Trusted { axis, name, dir, runs_with } = trusted;
    let mut out = format!("installed {axis}/{name} {} in {}\n", display::line(&package.manifest.version), dir.display());
    out.push_str(&format!("trusted; it runs with: {}\n", display::line(&runs_with.summary())));
    if let Some(shadowed) = shadowed {
        out.push_str(&format!("note: it shadows the bundled {axis} driver '{shadowed}'\n"));
    }
    Ok(out)
}

/// `plugin install <dir>` of an agent type's directory.
fn install_type(axes: &Axes, source: &Path, consent: &Consent, prompt: &mut dyn Prompt) -> Result<String, HostError> {
    let package = TypePackage::read(axes.types_dirs(), source)?;
    let (trusted, shadowed) =
        workflow::install_type(&runtime()?, axes.types_dirs(), &package, |request| answer(axes, request, consent, prompt))?;
    let mut out = format!("installed types/{} in {}\n", display::line(&trusted.name), trusted.dir.display());
    out.push_str(&format!("trusted; it runs with: {}\n", trusted.runs_with.summary()));
    if let Some(shadowed) = shadowed {
        out.push_str(&format!("note: it shadows the bundled type '{shadowed}'\n"));
    }
    Ok(out)
}

/// `plugin trust`: a plugin found in a plugin directory (`path`: which one, when found in several).
pub fn trust(axes: &Axes, reference: &str, path: Option<&Path>, consent: &Consent, prompt: &mut dyn Prompt) -> Result<String, HostError> {
    let Trusted { axis, name, dir, runs_with } =
        workflow::trust(&runtime()?, reference, path, &axes.dirs, |request| answer(axes, request, consent, prompt))?;
    let mut out = format!("trusted {axis}/{name} at {}; it runs with: {}\n", dir.display(), display::line(&runs_with.summary()));
    if let Some(replaced) = replaced_bundled(axes, axis, &name) {
        out.push_str(&match axis {
            Axis::Types if TypePackage::is_type_dir(axes.types_dirs(), &dir) => {
                format!("note: it replaces the bundled type '{replaced}'\n")
            }
            Axis::Types => format!("note: it replaces bundled {replaced}'s delivery plug\n"),
            axis => format!("note: it replaces the bundled {axis} driver '{replaced}'\n"),
        });
    }
    Ok(out)
}

/// `plugin untrust`: it stays where it is, ignored.
pub fn untrust(axes: &Axes, reference: &str) -> Result<String, HostError> {
    let (axis, name) = workflow::untrust(reference, &axes.dirs)?;
    Ok(format!("untrusted {axis}/{name}; it is ignored from now on\n"))
}

/// `plugin remove`: a plugin installed in `$AGMSG_HOME/plugins`, and its trust.
pub fn remove(axes: &Axes, reference: &str) -> Result<String, HostError> {
    let (axis, name, installed) = workflow::remove(reference, &axes.dirs)?;
    Ok(format!("removed {axis}/{name} ({})\n", installed.display()))
}

/// One row of `plugin list`.
struct Row {
    reference: String,
    version: String,
    state: String,
    granted: String,
    path: String,
    problem: Option<String>,
    /// Where a trusted plugin was published, when it was installed from a registry or an artifact file.
    source: Option<super::trust::Provenance>,
}

/// `plugin list`: every driver found (bundled, then each axis's plugin candidates): axis/name,
/// version, builtin / trusted / UNTRUSTED, what it is granted, path. `json`: one object per line.
pub fn list(axes: &Axes, json: bool) -> Result<String, HostError> {
    let mut rows = Vec::new();
    let trust = registry::home_trust()?;
    for axis in Axis::ALL {
        for driver in bundled::of(axis) {
            let granted = (axes.bundled_runs_with)(axis, driver.name).map(|c| c.summary()).unwrap_or_default();
            rows.push(Row {
                reference: format!("{axis}/{}", driver.name),
                version: env!("CARGO_PKG_VERSION").to_owned(),
                state: "builtin".into(),
                granted,
                path: "(bundled)".into(),
                problem: None,
                source: None,
            });
        }
        for candidate in registry::candidates(axis, None, &axes.dirs)? {
            let (state, granted) = match &candidate.state {
                TrustState::Trusted(caps) if candidate.problem().is_none() => ("trusted".to_owned(), caps.summary()),
                _ => ("UNTRUSTED".to_owned(), "-".to_owned()),
            };
            rows.push(Row {
                reference: format!("{axis}/{}", candidate.name),
                version: match (&candidate.manifest, candidate.is_type_dir) {
                    (Some(m), _) => m.version.clone(),
                    // An agent type has no version of its own.
                    (None, true) if candidate.broken.is_none() => "-".into(),
                    (None, _) => "?".into(),
                },
                state,
                granted,
                path: candidate.dir.display().to_string(),
                problem: candidate.problem(),
                source: match candidate.state {
                    TrustState::Trusted(_) => trust.record(axis, &candidate.name, &candidate.dir).and_then(|r| r.provenance.clone()),
                    _ => None,
                },
            });
        }
    }
    let mut out = String::new();
    for row in &rows {
        if json {
            let mut value = json!({
                "driver": row.reference, "version": row.version, "state": row.state,
                "granted": row.granted, "path": row.path, "problem": row.problem,
            });
            if let Some(source) = &row.source {
                let fields = json!({ "source": source.source, "digest": source.digest, "publisher": source.publisher });
                value.as_object_mut().expect("an object").extend(fields.as_object().expect("an object").clone());
            }
            out.push_str(&format!("{value}\n"));
        } else {
            // Versions, grants, paths and problems can hold a plugin's text: shown, never sent to the terminal.
            let [reference, version, granted, path] = [&row.reference, &row.version, &row.granted, &row.path].map(|v| display::line(v));
            out.push_str(&format!("{reference:<24} {version:<9} {:<10} {granted:<40} {path}\n", row.state));
            if let (Some(problem), "UNTRUSTED") = (&row.problem, row.state.as_str()) {
                out.push_str(&format!("{:<24} ({})\n", "", display::line(problem)));
            }
            if let Some(source) = &row.source {
                let signed = source.publisher.as_deref().map_or_else(|| "unsigned".to_owned(), |key| format!("signed by {key}"));
                out.push_str(&format!("{:<24} (from {}, {signed})\n", "", display::line(&source.source)));
            }
        }
    }
    Ok(out)
}

/// What `plugin inspect` found: the report to print, and whether this host would load (use) it.
pub struct Inspection {
    pub text: String,
    pub loads: bool,
}

/// `plugin inspect`: a driver's manifest, its component's real imports and exports, sha256, and
/// whether this host can run it. `target`: a package directory, manifest or component file, a type
/// directory, or an installed driver or type (axis/name or name); a driver bundled in this binary is
/// reported the same way. `json`: one object.
pub fn inspect(axes: &Axes, target: &str, manifest: Option<&Path>, json: bool) -> Result<Inspection, HostError> {
    let path = Path::new(target);
    if manifest.is_none() && TypePackage::is_type_dir(axes.types_dirs(), path) {
        return inspect_type(axes, &TypePackage::read(axes.types_dirs(), path)?, None, json);
    }
    let (package, installed) = if path.exists() || manifest.is_some() {
        (Package::read(path, manifest)?, None)
    } else {
        let (axis, name, mut candidates) = match workflow::find_ref(target, &axes.dirs) {
            Ok(found) => found,
            // No plugin of that name: a driver bundled in this binary, reported the same way.
            Err(e) => return inspect_bundled(axes, target, json).unwrap_or(Err(e)),
        };
        let candidate = candidates.pop().expect("find_ref returns at least one");
        let state = match &candidate.state {
            TrustState::Trusted(caps) => format!("trusted; it runs with: {}", caps.summary()),
            TrustState::Untrusted(why) => format!("UNTRUSTED: {why} (trust it with: {})", registry::trust_command(axis, &name, None)),
            TrustState::Builtin => "builtin".into(),
        };
        if candidate.is_type_dir {
            let files = AgentTypeFiles::read(axes.types_dirs(), &name, &candidate.dir)
                .map_err(|e| HostError::refused(format!("types/{name} at {}: {e}", candidate.dir.display())))?;
            return inspect_type(axes, &TypePackage { name, dir: candidate.dir, files, provenance: None }, Some(state), json);
        }
        let manifest_path = candidate.dir.join(MANIFEST_FILE);
        let package = Package::read(&manifest_path, None)?;
        (package, Some(state))
    };
    let report = examine(&runtime()?, &package.manifest, &package.wasm, &package.sha256);
    let loads = report.verdict.is_ok();
    let m = &package.manifest;
    let offered: Vec<String> = offered_packages().map(|(p, v)| format!("{p}@{v}")).collect();
    let verdict = match &report.verdict {
        Ok(()) => "loads on this host (with what it asks for granted)".to_owned(),
        Err(e) => format!("REFUSED: {e}"),
    };
    if json {
        let value = json!({
            "name": m.name, "axis": m.axis.as_str(), "version": m.version, "api": m.api,
            "description": m.description, "component": package.component_path, "sha256": package.sha256,
            "size": package.wasm.len(), "asks_for": m.capabilities().0.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "imports": report.imports, "exports": report.exports, "host_offers": offered,
            "compatible": loads, "verdict": verdict, "state": installed,
        });
        return Ok(Inspection { text: format!("{value}\n"), loads });
    }
    let mut out = describe_request(m, &package.sha256, &package.component_path);
    out.push_str(&format!(
        "Manifest: {}\nSize: {} bytes\n",
        display::line(&package.manifest_path.display().to_string()),
        package.wasm.len()
    ));
    out.push_str("Imports (what the component really uses):\n");
    for import in &report.imports {
        out.push_str(&format!("  {}\n", display::line(import)));
    }
    out.push_str("Exports:\n");
    for export in &report.exports {
        out.push_str(&format!("  {}\n", display::line(export)));
    }
    out.push_str(&format!("This host offers: {}\nVerdict: {}\n", offered.join(", "), display::line(&verdict)));
    if let Some(state) = installed {
        out.push_str(&format!("Installed: {}\n", display::line(&state)));
    }
    Ok(Inspection { text: out, loads })
}

/// `inspect` of an agent type (a directory, or an installed candidate with its trust state): its
/// manifest's keys, its template, its files, and its plug component as `inspect` shows a driver's (real
/// imports and exports, whether this host loads it with no capabilities). Whether it can be used.
fn inspect_type(axes: &Axes, package: &TypePackage, state: Option<String>, json: bool) -> Result<Inspection, HostError> {
    let files = &package.files;
    let (files_sha256, conf_sha256) = files.pinned();
    let template = files.conf.value("template");
    let template_bytes = (!template.is_empty()).then(|| files.tree.file(Path::new(template)).map(<[u8]>::len));
    let plug = package.examine_plug(&runtime()?).map(|report| (files.plug.as_ref().expect("examined"), report));
    // Usable: its plug (if any) loads, and the template it names (if any) is a file of the directory.
    let usable = plug.as_ref().is_none_or(|(_, report)| report.verdict.is_ok()) && template_bytes.is_none_or(|bytes| bytes.is_some());
    let keys: Vec<(String, String)> =
        files.conf.entries().iter().filter(|e| !e.ignored).map(|e| (e.key.to_owned(), e.value.to_owned())).collect();
    let listing = files.listing();
    let report = axes.report(Axis::Types);
    if json {
        let plug = plug.as_ref().map(|((m, wasm), report)| {
            json!({
                "component": m.component, "version": m.version, "api": m.api, "sha256": super::sha256_hex(wasm),
                "size": wasm.len(), "imports": report.imports, "exports": report.exports, "runs_with": "none",
                "compatible": report.verdict.is_ok(), "verdict": report.verdict.as_ref().err(),
            })
        });
        let mut value = json!({
            "name": package.name, "axis": "types", "kind": "agent-type", "dir": package.dir,
            "type_conf_sha256": conf_sha256, "files_sha256": files_sha256,
            "keys": keys.iter().map(|(k, v)| json!({ "key": k, "value": v })).collect::<Vec<_>>(),
            "template": if template.is_empty() { Value::Null } else { json!({ "file": template, "bytes": template_bytes.flatten() }) },
            "files": listing.iter().map(|f| json!({ "path": f.path, "bytes": f.bytes, "sha256": f.sha256 })).collect::<Vec<_>>(),
            "asks_for": Vec::<String>::new(), "plug": plug, "usable": usable, "state": state,
        });
        let fields = report.inspect_fields(&package.name, &files.conf, &package.dir, files.plug.is_some());
        value.as_object_mut().expect("an object").extend(fields);
        return Ok(Inspection { text: format!("{value}\n"), loads: usable });
    }
    let l = |s: &str| display::line(s).into_owned();
    let mut out = report.describe(&DirOffer {
        name: &package.name,
        conf_sha256: &conf_sha256,
        files_sha256: &files_sha256,
        from: &package.dir,
        conf: Some(&files.conf),
        plug: files.plug.as_ref().map(|(m, _)| m),
        files: &listing,
        runs_from: &package.dir,
    });
    out.push_str(&format!(
        "Manifest: {} (agmsg's reader: the first line setting a key wins)\n",
        l(&package.dir.join("type.conf").display().to_string())
    ));
    for (key, value) in &keys {
        out.push_str(&format!("  {}={}\n", l(key), l(value)));
    }
    match template_bytes {
        None => out.push_str("Template: none\n"),
        Some(Some(n)) => out.push_str(&format!("Template: {} ({n} bytes)\n", l(template))),
        Some(None) => out.push_str(&format!("Template: {} MISSING: not a file of the directory\n", l(template))),
    }
    match &plug {
        None => out.push_str("Plug: none\n"),
        Some(((m, wasm), report)) => {
            out.push_str(&format!(
                "Plug: {} sha256 {}, {} bytes; it runs with: none\n",
                l(&m.component.display().to_string()),
                super::sha256_hex(wasm),
                wasm.len()
            ));
            out.push_str("  Imports (what the component really uses):\n");
            for import in &report.imports {
                out.push_str(&format!("    {}\n", l(import)));
            }
            out.push_str("  Exports:\n");
            for export in &report.exports {
                out.push_str(&format!("    {}\n", l(export)));
            }
            match &report.verdict {
                Ok(()) => out.push_str("  Verdict: loads on this host (with no capabilities)\n"),
                Err(e) => out.push_str(&format!("  Verdict: REFUSED: {}\n", l(e))),
            }
        }
    }
    if let Some(state) = state {
        out.push_str(&format!("Installed: {}\n", l(&state)));
    }
    Ok(Inspection { text: out, loads: usable })
}

/// `inspect` of a driver bundled in this binary (`axis/name`, or a bare name), which has no package on
/// disk: what `inspect` shows of a plugin, as far as it applies (its real imports and exports, sha256,
/// what it runs with, and whether this host admits it with that). `None`: no bundled driver has that
/// name (then the plugin lookup's error stands).
fn inspect_bundled(axes: &Axes, target: &str, json: bool) -> Option<Result<Inspection, HostError>> {
    let (axis, name) = match target.split_once('/') {
        Some((axis, name)) => (Axis::parse(axis)?, name),
        None => (Axis::ALL.into_iter().find(|axis| bundled::of(*axis).any(|d| d.name == target))?, target),
    };
    let driver = bundled::of(axis).find(|d| d.name == name)?;
    // What it runs with, as its axis gives a bundled driver.
    let runs_with = (axes.bundled_runs_with)(axis, name)?;
    Some(report_bundled(axis, name, driver.sha256, driver.wasm, &runs_with, driver.manifest, json))
}

fn report_bundled(
    axis: Axis,
    name: &str,
    sha256: &str,
    wasm: &[u8],
    runs_with: &Capabilities,
    conf: Option<&str>,
    json: bool,
) -> Result<Inspection, HostError> {
    let runtime = runtime()?;
    let (imports, exports, verdict) = match runtime.load(wasm, sha256) {
        Ok(component) => {
            let (imports, exports) = sandbox::interfaces(&runtime.engine, &component);
            // Admission reads the grants' kinds, never a store: no directory is opened for it.
            let grants = Grants::new(axis, runs_with, None, runtime.limits);
            let verdict = sandbox::admit(&runtime.engine, &component, &grants);
            (imports, exports, verdict)
        }
        Err(e) => (Vec::new(), Vec::new(), Err(format!("not a valid component: {e:#}"))),
    };
    let loads = verdict.is_ok();
    // The contract version it was built against, from its own export of its axis' interface.
    let prefix = format!("{}/{}@", axis.package(), axis.contract_interfaces().exported);
    let api = exports.iter().find_map(|e| e.strip_prefix(&prefix).map(str::to_owned)).unwrap_or_else(|| "?".into());
    let version = env!("CARGO_PKG_VERSION");
    let offered: Vec<String> = offered_packages().map(|(p, v)| format!("{p}@{v}")).collect();
    let caps: Vec<String> = runs_with.0.iter().map(ToString::to_string).collect();
    let verdict_text = match &verdict {
        Ok(()) => "loads on this host (with what it runs with)".to_owned(),
        Err(e) => format!("REFUSED: {e}"),
    };
    if json {
        let value = json!({
            "name": name, "axis": axis.as_str(), "version": version, "api": api, "description": null,
            "component": "(bundled)", "builtin": true, "sha256": sha256, "size": wasm.len(),
            "asks_for": caps, "runs_with": caps, "terminal_conf": conf,
            "imports": imports, "exports": exports, "host_offers": offered,
            "compatible": loads, "verdict": verdict_text, "state": "builtin",
        });
        return Ok(Inspection { text: format!("{value}\n"), loads });
    }
    let mut out = format!("{axis}/{name} {version} (built against {}@{api}), bundled in agmsg-host\n  sha256 {sha256}\n", axis.package());
    if caps.is_empty() {
        out.push_str("It runs with nothing beyond the sandbox every driver gets.\n");
    } else {
        out.push_str("It runs with:\n");
        for cap in &caps {
            out.push_str(&format!("  {cap}\n"));
        }
    }
    if let Some(conf) = conf {
        out.push_str("Manifest: terminal.conf (bundled)\n");
        for line in conf.lines().filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#')) {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out.push_str(&format!("Size: {} bytes\nImports (what the component really uses):\n", wasm.len()));
    for import in &imports {
        out.push_str(&format!("  {import}\n"));
    }
    out.push_str("Exports:\n");
    for export in &exports {
        out.push_str(&format!("  {export}\n"));
    }
    out.push_str(&format!("This host offers: {}\nVerdict: {verdict_text}\n", offered.join(", ")));
    out.push_str(&format!("Installed: builtin; it runs with: {}\n", runs_with.summary()));
    Ok(Inspection { text: out, loads })
}
