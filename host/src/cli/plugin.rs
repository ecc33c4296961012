//! `agmsg-host plugin install | list | inspect | trust | untrust | remove`: third-party drivers, with the
//! user's consent to exactly what each one asks for.
//!
//! Install and trust show the capabilities a driver asks for (and, for an update, what widened) and ask
//! on a terminal; without one they need `--yes` (grant what it asks for) or `--grant` flags (grant
//! those; the driver gets what it declared AND was granted). A component whose imports go beyond its
//! own manifest, or that targets an incompatible contract version, is refused before anything is
//! written.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::exit;
use agmsg_host::error::HostError;

use serde_json::{Value, json};

use agmsg_host::agent::boot::{LaunchTemplate, Launcher, launch_template};
use agmsg_host::agent::bundled as agent_bundled;
use agmsg_host::agent::manifest as hooks_manifest;
use agmsg_host::agent::registry::skill_name;
use agmsg_host::axis::Axis;
use agmsg_host::axis::offered_packages;
use agmsg_host::bundled;
use agmsg_host::capabilities::{Capabilities, Capability};
use agmsg_host::display;
use agmsg_host::plugin::DirPackage;
use agmsg_host::plugin::manifest::{MANIFEST_FILE, PluginManifest};
use agmsg_host::plugin::registry;
use agmsg_host::plugin::registry::{AgentTypeFiles, TypeFile};
use agmsg_host::plugin::trust::TrustState;
use agmsg_host::plugin::workflow::{self, ConsentRequest, Offer, Package, Trusted, TypePackage, examine};
use agmsg_host::runtime::Runtime;
use agmsg_host::runtime::sandbox::{self, Grants};

/// How the user answers the consent question.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct Consent {
    /// Grant everything the driver asks for, without asking
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Grant only this capability (repeatable): store, env:NAME, program:NAME, network:HOST:PORT,
    /// memory:MIB, timeout:MS, inert-sockets. The driver gets what it asks for AND is granted.
    #[arg(long = "grant", value_name = "CAPABILITY")]
    pub grants: Vec<String>,
}

#[derive(Debug, clap::Subcommand)]
pub enum PluginCommand {
    /// Install a driver package (a directory holding agmsg-driver.toml, the manifest itself, or a
    /// .wasm component with --manifest), or an agent type's directory (type.conf, its template,
    /// optionally a plug component), into $AGMSG_HOME/plugins/<axis>/<name>/ and trust it
    Install {
        /// The package directory, its agmsg-driver.toml, its component (.wasm), or a type directory
        source: PathBuf,
        /// The manifest, when SOURCE is a component whose manifest is elsewhere
        #[arg(long, value_name = "FILE")]
        manifest: Option<PathBuf>,
        #[command(flatten)]
        consent: Consent,
    },
    /// Every driver found: axis/name, version, builtin / trusted / UNTRUSTED, what it is granted, path
    List {
        /// One JSON object per line
        #[arg(long)]
        json: bool,
    },
    /// A driver's manifest, its component's real imports and exports, sha256, and whether this host
    /// can run it
    Inspect {
        /// A package directory, manifest or component file, a type directory, or an installed driver
        /// or type (axis/name or name)
        target: String,
        /// The manifest, when TARGET is a component whose manifest is elsewhere
        #[arg(long, value_name = "FILE")]
        manifest: Option<PathBuf>,
        /// One JSON object
        #[arg(long)]
        json: bool,
    },
    /// Trust a plugin found in a plugin directory, granting what it asks for (or what --grant says)
    Trust {
        /// axis/name, or a name that is unambiguous across axes
        reference: String,
        /// Which directory, when the plugin is found in several
        #[arg(long, value_name = "DIR")]
        path: Option<PathBuf>,
        #[command(flatten)]
        consent: Consent,
    },
    /// Stop trusting a plugin (it stays where it is, ignored)
    Untrust {
        /// axis/name, or a name that is unambiguous across axes
        reference: String,
    },
    /// Delete a plugin installed in $AGMSG_HOME/plugins, and its trust
    Remove {
        /// axis/name, or a name that is unambiguous across axes
        reference: String,
    },
}

pub fn run(command: PluginCommand) -> ExitCode {
    let result = match command {
        PluginCommand::Install { source, manifest, consent } => install(&source, manifest.as_deref(), &consent),
        PluginCommand::List { json } => list(json),
        // A component this host would refuse is reported in full, then exits 1.
        PluginCommand::Inspect { target, manifest, json } => match inspect(&target, manifest.as_deref(), json) {
            Ok(false) => return exit::no(),
            other => other.map(|_| ()),
        },
        PluginCommand::Trust { reference, path, consent } => trust(&reference, path.as_deref(), &consent),
        PluginCommand::Untrust { reference } => untrust(&reference),
        PluginCommand::Remove { reference } => remove(&reference),
    };
    exit::report("plugin", result)
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

/// What an agent type is and gets, as the consent prompt and `inspect` show it, before anything is
/// asked: where it is from and its hashes, which bundled type it replaces and what differs, the file
/// delivery writes and what that file makes its runtime do, every word spawn can put on a command
/// line, the texts it gives agents, and every file it ships. Every value from the package is printed
/// through [`display::line`].
struct TypeOffer<'a> {
    name: &'a str,
    conf_sha256: &'a str,
    files_sha256: &'a str,
    from: &'a Path,
    conf: Option<&'a agmsg_host::agent::Manifest>,
    plug: Option<&'a PluginManifest>,
    files: &'a [TypeFile],
    /// Where it is used from once trusted (spawn's launcher path).
    runs_from: &'a Path,
}

impl TypeOffer<'_> {
    fn describe(&self) -> String {
        let l = |s: &str| display::line(s).into_owned();
        let mut text = format!(
            "types/{} (an agent type) from {}\n  type.conf sha256 {}\n  its other files' sha256 {}\n",
            l(self.name),
            l(&self.from.display().to_string()),
            self.conf_sha256,
            self.files_sha256
        );
        match self.plug {
            Some(m) => text.push_str(&format!(
                "  plug component {} {} (built against {}@{})\n",
                l(&m.component.display().to_string()),
                l(&m.version),
                Axis::Types.package(),
                l(&m.api)
            )),
            None => text.push_str("  no plug component: agmsg's delivery defaults throughout\n"),
        }
        if let Some(conf) = self.conf {
            text.push_str(&self.replaces(conf));
            text.push_str(&self.delivery(conf));
            text.push_str(&launches(conf, self.runs_from));
        }
        text.push_str(&self.texts());
        text.push_str("Its files:\n");
        for f in self.files {
            text.push_str(&format!("  {} ({} bytes, sha256 {})\n", l(&f.path), f.bytes, f.sha256));
        }
        text.push_str("A type declares no capabilities; its plug component, if it ships one, runs with none (no files, programs, variables or network).\n");
        text
    }

    /// The bundled type of its name it replaces, and what differs from it: its keys, its template, its plug.
    fn replaces(&self, conf: &agmsg_host::agent::Manifest) -> String {
        let Some(bundled) = agent_bundled::get(self.name) else { return String::new() };
        let l = |s: Option<&str>| s.map_or_else(|| "(missing)".to_owned(), |v| display::line(v).into_owned());
        let mut text = format!(
            "It replaces bundled {0}: wherever the type {0} is used (detection, delivery, spawn, its /agmsg command) this one is used instead.\n",
            bundled.name
        );
        let original = agmsg_host::agent::Manifest::parse(bundled.conf.as_bytes(), bundled.name).expect("bundled manifests are text");
        let mut keys: Vec<&str> = agmsg_host::agent::manifest::KEYS.iter().map(|k| k.key).collect();
        let entries = conf.entries();
        keys.extend(
            entries.iter().filter(|e| !e.ignored).map(|e| e.key).filter(|k| !agmsg_host::agent::manifest::KEYS.iter().any(|i| i.key == *k)),
        );
        // Compared as agmsg reads them: a missing key with a default reads as that default.
        let read = |m: &'_ agmsg_host::agent::Manifest, key: &str| {
            let default = agmsg_host::agent::manifest::key_info(key).and_then(|k| k.default);
            m.get(key).or(default).map(str::to_owned)
        };
        let changed: Vec<String> = keys
            .iter()
            .filter(|key| read(&original, key) != read(conf, key))
            .map(|key| format!("  {}: {} -> {}\n", display::line(key), l(read(&original, key).as_deref()), l(read(conf, key).as_deref())))
            .collect();
        if changed.is_empty() {
            text.push_str(&format!("Its type.conf reads as bundled {}'s.\n", bundled.name));
        } else {
            text.push_str(&format!("What differs from bundled {}'s type.conf:\n", bundled.name));
            changed.iter().for_each(|c| text.push_str(c));
        }
        let template = conf.value("template");
        let ours = self.files.iter().find(|f| f.path == template);
        let theirs =
            bundled.files.iter().find(|(f, _)| *f == original.value("template")).map(|(_, t)| agmsg_host::plugin::sha256_hex(t.as_bytes()));
        match (ours, theirs) {
            (Some(ours), Some(theirs)) if ours.sha256 == theirs => text.push_str("  its template is bundled's, byte for byte\n"),
            (Some(_), Some(_)) => {
                text.push_str(&format!("  its template {} differs from bundled {}'s\n", display::line(template), bundled.name))
            }
            _ => {}
        }
        match (self.plug.is_some(), agmsg_host::agent::bundled::plug(self.name).is_some()) {
            (true, true) => text.push_str(&format!("  its plug component replaces bundled {}'s\n", bundled.name)),
            (true, false) => text.push_str("  its plug component answers for its delivery (bundled has none)\n"),
            (false, true) => text
                .push_str(&format!("  it has no plug component: agmsg's delivery defaults instead of bundled {}'s plug\n", bundled.name)),
            (false, false) => {}
        }
        if let LaunchTemplate::Command { line, .. } = launch_template(&original, self.runs_from, &skill_name()) {
            text.push_str(&format!("  bundled {} launches: {}\n", bundled.name, display::line(&line)));
        }
        text
    }

    /// The file delivery writes (and deletes, for `off`), and what writing it makes its runtime do.
    fn delivery(&self, conf: &agmsg_host::agent::Manifest) -> String {
        let file = conf.value("hooks_file");
        if file.is_empty() {
            return "Delivery: no hooks_file: delivery writes no file for it.\n".to_owned();
        }
        // Refused types never reach a consent; said all the same should one be shown.
        let mut text = match hooks_manifest::check_hooks_file(self.name, file) {
            Ok(location) => {
                format!("Delivery: {}; `delivery set off` removes what it wrote.\n", location.effect(file, self.plug.is_some()))
            }
            Err(e) => format!("Delivery: REFUSED: {}\n", display::line(&e.message)),
        };
        if self.plug.is_some() {
            text.push_str(
                "  Its plug component only chooses among the forms agmsg-host itself writes there (any other answer is refused).\n",
            );
        }
        text
    }

    /// The texts it gives agents: its template (the /agmsg command) and any other text file it ships.
    fn texts(&self) -> String {
        let template = self.conf.map_or("", |c| c.value("template"));
        let texts: Vec<&TypeFile> = self
            .files
            .iter()
            .filter(|f| f.path != "type.conf" && (f.path == template || [".md", ".mdc", ".txt"].iter().any(|e| f.path.ends_with(e))))
            .collect();
        if texts.is_empty() {
            return "Texts it gives agents: none.\n".to_owned();
        }
        let mut text = "Texts it gives agents:\n".to_owned();
        for f in texts {
            let role = if f.path == template { ": its /agmsg command (template=, installed as the skill's SKILL.md)" } else { "" };
            text.push_str(&format!("  {} ({} bytes, sha256 {}){role}\n", display::line(&f.path), f.bytes, f.sha256));
        }
        text
    }
}

/// What `spawn` would run for a type, with the user's full rights (not sandboxed): every word of its
/// launch command line ([`launch_template`], the one `boot_command` builds), the one thing a type's
/// trust gives it beyond data.
fn launches(conf: &agmsg_host::agent::Manifest, dir: &Path) -> String {
    match launch_template(conf, dir, &skill_name()) {
        LaunchTemplate::NotSpawnable => "It is not spawnable: spawn launches nothing.\n".to_owned(),
        LaunchTemplate::NoCli => "It is marked spawnable but has no cli: spawn refuses it, launching nothing.\n".to_owned(),
        LaunchTemplate::Command { program, line, launcher } => {
            let program = match launcher {
                // The launcher is one of its files, listed with its sha256.
                Launcher::Node => format!("its node launcher {}", display::line(conf.value("spawn"))),
                Launcher::Cli => format!("`{}`", display::line(&program)),
            };
            let mut text =
                format!("Spawned, it runs {program} with your rights (not sandboxed), in the project, as:\n  {}\n", display::line(&line));
            let unset = conf.words("spawn_unset_env");
            if !unset.is_empty() {
                text.push_str(&format!("  (its boot script sets AGMSG_SPAWNED=1 and unsets {})\n", display::line(&unset.join(" "))));
            }
            text
        }
    }
}

/// The bundled driver of `axis` named `name`, if a plugin of that name would replace one.
fn replaced_bundled(axis: Axis, name: &str) -> Option<&'static str> {
    match axis {
        Axis::Types => agent_bundled::get(name).map(|t| t.name).or_else(|| bundled::of(axis).map(|d| d.name).find(|b| *b == name)),
        _ => bundled::of(axis).map(|d| d.name).find(|b| *b == name),
    }
}

/// The user's answer to `request`: what is granted. An earlier trust of the plugin shows what widened;
/// one of these very files asking for the same, with neither `--yes` nor `--grant` given, is answered
/// with what was granted then, without asking (a no-op that succeeds, terminal or not).
fn ask(request: &ConsentRequest, consent: &Consent) -> Result<Capabilities, HostError> {
    if let Some(granted) = &request.unchanged
        && consent.grants.is_empty()
        && !consent.yes
    {
        eprintln!("already trusted, unchanged since (the same component and manifest, asking for the same): nothing to ask");
        return Ok(granted.clone());
    }
    let asked = request.asks_for();
    let mut text = match &request.offer {
        Offer::Component(manifest) => {
            let mut text = describe_request(manifest, request.sha256, request.from);
            match (manifest.axis, replaced_bundled(manifest.axis, &manifest.name)) {
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
        Offer::AgentType { name, conf_sha256, conf, plug, files, runs_from } => {
            TypeOffer { name, conf_sha256, files_sha256: request.sha256, from: request.from, conf: *conf, plug: *plug, files, runs_from }
                .describe()
        }
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
    eprint!("{text}");
    if !consent.grants.is_empty() {
        // A grant that names no capability is a malformed argument (usage), before anything is written.
        let granted = consent.grants.iter().map(|g| Capability::parse_grant(g)).collect::<Result<Vec<_>, _>>().map_err(HostError::usage)?;
        return Ok(Capabilities(granted));
    }
    if consent.yes {
        return Ok(asked);
    }
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return Err(HostError::refused(
            "no terminal to ask for consent: rerun with --yes to grant what it asks for, or with --grant <capability> for each one to grant",
        ));
    }
    eprint!("Trust it and grant these? [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer).map_err(|e| HostError::refused(format!("reading the answer: {e}")))?;
    if matches!(answer.trim(), "y" | "Y" | "yes" | "Yes") { Ok(asked) } else { Err(HostError::refused("not trusted: you declined")) }
}

fn install(source: &Path, manifest: Option<&Path>, consent: &Consent) -> Result<(), HostError> {
    if manifest.is_none() && TypePackage::is_type_dir(types_dirs(), source) {
        return install_type(source, consent);
    }
    let package = Package::read(source, manifest)?;
    let (trusted, shadowed) = workflow::install(&runtime()?, &package, |request| ask(request, consent))?;
    let Trusted { axis, name, dir, runs_with } = trusted;
    println!("installed {axis}/{name} {} in {}", display::line(&package.manifest.version), dir.display());
    println!("trusted; it runs with: {}", display::line(&runs_with.summary()));
    if let Some(shadowed) = shadowed {
        println!("note: it shadows the bundled {axis} driver '{shadowed}'");
    }
    Ok(())
}

/// `plugin install <dir>` of an agent type's directory.
fn install_type(source: &Path, consent: &Consent) -> Result<(), HostError> {
    let package = TypePackage::read(types_dirs(), source)?;
    let (trusted, shadowed) = workflow::install_type(&runtime()?, types_dirs(), &package, |request| ask(request, consent))?;
    println!("installed types/{} in {}", display::line(&trusted.name), trusted.dir.display());
    println!("trusted; it runs with: {}", trusted.runs_with.summary());
    if let Some(shadowed) = shadowed {
        println!("note: it shadows the bundled type '{shadowed}'");
    }
    Ok(())
}

/// How the library reads a plugin directory that is a package of its axis's own kind: every axis's
/// that has them (an agent type's directory).
pub fn dir_packages() -> Vec<&'static dyn DirPackage> {
    Axis::ALL.into_iter().filter_map(|axis| agmsg_host::module(axis).dir_package()).collect()
}

/// The types axis's reader of its package directories (agent types).
fn types_dirs() -> &'static dyn DirPackage {
    agmsg_host::module(Axis::Types).dir_package().expect("the types axis has package directories")
}

fn bundled_names(axis: Axis) -> Vec<&'static str> {
    bundled::of(axis).map(|d| d.name).collect()
}

fn trust(reference: &str, path: Option<&Path>, consent: &Consent) -> Result<(), HostError> {
    let Trusted { axis, name, dir, runs_with } =
        workflow::trust(&runtime()?, reference, path, &dir_packages(), |request| ask(request, consent))?;
    println!("trusted {axis}/{name} at {}; it runs with: {}", dir.display(), display::line(&runs_with.summary()));
    if let Some(replaced) = replaced_bundled(axis, &name) {
        match axis {
            Axis::Types if TypePackage::is_type_dir(types_dirs(), &dir) => println!("note: it replaces the bundled type '{replaced}'"),
            Axis::Types => println!("note: it replaces bundled {replaced}'s delivery plug"),
            axis => println!("note: it replaces the bundled {axis} driver '{replaced}'"),
        }
    }
    Ok(())
}

fn untrust(reference: &str) -> Result<(), HostError> {
    let (axis, name) = workflow::untrust(reference, &dir_packages())?;
    println!("untrusted {axis}/{name}; it is ignored from now on");
    Ok(())
}

fn remove(reference: &str) -> Result<(), HostError> {
    let (axis, name, installed) = workflow::remove(reference, &dir_packages())?;
    println!("removed {axis}/{name} ({})", installed.display());
    Ok(())
}

/// One row of `plugin list`.
struct Row {
    reference: String,
    version: String,
    state: String,
    granted: String,
    path: String,
    problem: Option<String>,
}

fn list(json: bool) -> Result<(), HostError> {
    let mut rows = Vec::new();
    for axis in Axis::ALL {
        for name in bundled_names(axis) {
            let granted = agmsg_host::module(axis).bundled_source(name).map(|s| s.capabilities.summary()).unwrap_or_default();
            rows.push(Row {
                reference: format!("{axis}/{name}"),
                version: env!("CARGO_PKG_VERSION").to_owned(),
                state: "builtin".into(),
                granted,
                path: "(bundled)".into(),
                problem: None,
            });
        }
        for candidate in registry::candidates(axis, None, &dir_packages())? {
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
            });
        }
    }
    let mut out = String::new();
    for row in &rows {
        if json {
            let value = json!({
                "driver": row.reference, "version": row.version, "state": row.state,
                "granted": row.granted, "path": row.path, "problem": row.problem,
            });
            out.push_str(&format!("{value}\n"));
        } else {
            // Versions, grants, paths and problems can hold a plugin's text: shown, never sent to the terminal.
            let [reference, version, granted, path] = [&row.reference, &row.version, &row.granted, &row.path].map(|v| display::line(v));
            out.push_str(&format!("{reference:<24} {version:<9} {:<10} {granted:<40} {path}\n", row.state));
            if let (Some(problem), "UNTRUSTED") = (&row.problem, row.state.as_str()) {
                out.push_str(&format!("{:<24} ({})\n", "", display::line(problem)));
            }
        }
    }
    std::io::stdout().write_all(out.as_bytes()).map_err(|e| HostError::refused(format!("writing the list: {e}")))
}

/// Print the report; whether this host would load the component.
fn inspect(target: &str, manifest: Option<&Path>, json: bool) -> Result<bool, HostError> {
    let path = Path::new(target);
    if manifest.is_none() && TypePackage::is_type_dir(types_dirs(), path) {
        return inspect_type(&TypePackage::read(types_dirs(), path)?, None, json);
    }
    let (package, installed) = if path.exists() || manifest.is_some() {
        (Package::read(path, manifest)?, None)
    } else {
        let (axis, name, mut candidates) = match workflow::find_ref(target, &dir_packages()) {
            Ok(found) => found,
            // No plugin of that name: a driver bundled in this binary, reported the same way.
            Err(e) => return inspect_bundled(target, json).unwrap_or(Err(e)),
        };
        let candidate = candidates.pop().expect("find_ref returns at least one");
        let state = match &candidate.state {
            TrustState::Trusted(caps) => format!("trusted; it runs with: {}", caps.summary()),
            TrustState::Untrusted(why) => format!("UNTRUSTED: {why} (trust it with: agmsg-host plugin trust {axis}/{name})"),
            TrustState::Builtin => "builtin".into(),
        };
        if candidate.is_type_dir {
            let files = AgentTypeFiles::read(types_dirs(), &name, &candidate.dir)
                .map_err(|e| HostError::refused(format!("types/{name} at {}: {e}", candidate.dir.display())))?;
            return inspect_type(&TypePackage { name, dir: candidate.dir, files }, Some(state), json);
        }
        let manifest_path = candidate.dir.join(MANIFEST_FILE);
        let package = Package::read(&manifest_path, None)?;
        (package, Some(state))
    };
    let report = examine(&runtime()?, &package.manifest, &package.wasm, &package.sha256);
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
            "compatible": report.verdict.is_ok(), "verdict": verdict, "state": installed,
        });
        println!("{value}");
        return Ok(report.verdict.is_ok());
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
    print!("{out}");
    Ok(report.verdict.is_ok())
}

/// `inspect` of an agent type (a directory, or an installed candidate with its trust state): its
/// manifest's keys, its template, its files, and its plug component as `inspect` shows a driver's (real
/// imports and exports, whether this host loads it with no capabilities). Whether it can be used.
fn inspect_type(package: &TypePackage, state: Option<String>, json: bool) -> Result<bool, HostError> {
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
    let offer = TypeOffer {
        name: &package.name,
        conf_sha256: &conf_sha256,
        files_sha256: &files_sha256,
        from: &package.dir,
        conf: Some(&files.conf),
        plug: files.plug.as_ref().map(|(m, _)| m),
        files: &listing,
        runs_from: &package.dir,
    };
    if json {
        let launch = match launch_template(&files.conf, &package.dir, &skill_name()) {
            LaunchTemplate::Command { line, .. } => Some(line),
            _ => None,
        };
        let hooks_file = files.conf.value("hooks_file");
        let delivery = (!hooks_file.is_empty()).then(|| {
            hooks_manifest::check_hooks_file(&package.name, hooks_file)
                .map(|l| l.effect(hooks_file, files.plug.is_some()))
                .unwrap_or_else(|e| format!("REFUSED: {e}"))
        });
        let plug = plug.as_ref().map(|((m, wasm), report)| {
            json!({
                "component": m.component, "version": m.version, "api": m.api, "sha256": agmsg_host::plugin::sha256_hex(wasm),
                "size": wasm.len(), "imports": report.imports, "exports": report.exports, "runs_with": "none",
                "compatible": report.verdict.is_ok(), "verdict": report.verdict.as_ref().err(),
            })
        });
        let value = json!({
            "name": package.name, "axis": "types", "kind": "agent-type", "dir": package.dir,
            "type_conf_sha256": conf_sha256, "files_sha256": files_sha256,
            "keys": keys.iter().map(|(k, v)| json!({ "key": k, "value": v })).collect::<Vec<_>>(),
            "template": if template.is_empty() { Value::Null } else { json!({ "file": template, "bytes": template_bytes.flatten() }) },
            "files": listing.iter().map(|f| json!({ "path": f.path, "bytes": f.bytes, "sha256": f.sha256 })).collect::<Vec<_>>(),
            "replaces_bundled": agent_bundled::get(&package.name).map(|t| t.name), "launch": launch, "delivery": delivery,
            "asks_for": Vec::<String>::new(), "plug": plug, "usable": usable, "state": state,
        });
        println!("{value}");
        return Ok(usable);
    }
    let l = |s: &str| display::line(s).into_owned();
    let mut out = offer.describe();
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
                agmsg_host::plugin::sha256_hex(wasm),
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
    print!("{out}");
    Ok(usable)
}

/// `inspect` of a driver bundled in this binary (`axis/name`, or a bare name), which has no package on
/// disk: what `inspect` shows of a plugin, as far as it applies (its real imports and exports, sha256,
/// what it runs with, and whether this host admits it with that). `None`: no bundled driver has that
/// name (then the plugin lookup's error stands).
fn inspect_bundled(target: &str, json: bool) -> Option<Result<bool, HostError>> {
    let (axis, name) = match target.split_once('/') {
        Some((axis, name)) => (Axis::parse(axis)?, name),
        None => (Axis::ALL.into_iter().find(|axis| bundled_names(*axis).contains(&target))?, target),
    };
    let driver = bundled::of(axis).find(|d| d.name == name)?;
    // What it runs with, as its axis gives a bundled driver (storage: its store; terminal: what its
    // terminal.conf declares).
    let runs_with = agmsg_host::module(axis).bundled_source(name)?.capabilities;
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
) -> Result<bool, HostError> {
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
            "compatible": verdict.is_ok(), "verdict": verdict_text, "state": "builtin",
        });
        println!("{value}");
        return Ok(verdict.is_ok());
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
    print!("{out}");
    Ok(verdict.is_ok())
}
