//! What the user is shown of an agent type before trusting it, and what `plugin inspect` says of one
//! ([`TypeReport`], the types axis's [`DirReport`]): where it is from and its hashes, which bundled type it
//! replaces and what differs, the file delivery writes and what that file makes its runtime do, every
//! word spawn can put on a command line, the texts it gives agents, and every file it ships. Every
//! value from the package is printed through [`display::line`].

use std::path::Path;

use serde_json::{Map, Value};

use super::boot::{LaunchTemplate, Launcher, launch_template};
use super::bundled as agent_bundled;
use super::manifest::{self as hooks_manifest, Manifest};
use super::registry::skill_name;
use crate::axis::Axis;
use crate::display;
use crate::plugin::commands::{DirOffer, DirReport};
use crate::plugin::registry::TypeFile;

/// The types axis's [`DirReport`]: an agent type's directory, described.
pub struct TypeReport;

impl DirReport for TypeReport {
    fn axis(&self) -> Axis {
        Axis::Types
    }

    fn describe(&self, offer: &DirOffer) -> String {
        describe(offer)
    }

    fn inspect_fields(&self, name: &str, conf: &Manifest, dir: &Path, has_plug: bool) -> Map<String, Value> {
        let launch = match launch_template(conf, dir, &skill_name()) {
            LaunchTemplate::Command { line, .. } => Some(line),
            _ => None,
        };
        let hooks_file = conf.value("hooks_file");
        let delivery = (!hooks_file.is_empty()).then(|| {
            hooks_manifest::check_hooks_file(name, hooks_file)
                .map(|l| l.effect(hooks_file, has_plug))
                .unwrap_or_else(|e| format!("REFUSED: {e}"))
        });
        let mut fields = Map::new();
        fields.insert("replaces_bundled".into(), agent_bundled::get(name).map(|t| t.name).into());
        fields.insert("launch".into(), launch.into());
        fields.insert("delivery".into(), delivery.into());
        fields
    }
}

fn describe(offer: &DirOffer) -> String {
    let l = |s: &str| display::line(s).into_owned();
    let mut text = format!(
        "types/{} (an agent type) from {}\n  type.conf sha256 {}\n  its other files' sha256 {}\n",
        l(offer.name),
        l(&offer.from.display().to_string()),
        offer.conf_sha256,
        offer.files_sha256
    );
    match offer.plug {
        Some(m) => text.push_str(&format!(
            "  plug component {} {} (built against {}@{})\n",
            l(&m.component.display().to_string()),
            l(&m.version),
            Axis::Types.package(),
            l(&m.api)
        )),
        None => text.push_str("  no plug component: agmsg's delivery defaults throughout\n"),
    }
    if let Some(conf) = offer.conf {
        text.push_str(&replaces(offer, conf));
        text.push_str(&delivery(offer, conf));
        text.push_str(&launches(conf, offer.runs_from));
    }
    text.push_str(&texts(offer));
    text.push_str("Its files:\n");
    for f in offer.files {
        text.push_str(&format!("  {} ({} bytes, sha256 {})\n", l(&f.path), f.bytes, f.sha256));
    }
    text.push_str("A type declares no capabilities; its plug component, if it ships one, runs with none (no files, programs, variables or network).\n");
    text
}

/// The bundled type of its name it replaces, and what differs from it: its keys, its template, its plug.
fn replaces(offer: &DirOffer, conf: &Manifest) -> String {
    let Some(bundled) = agent_bundled::get(offer.name) else { return String::new() };
    let l = |s: Option<&str>| s.map_or_else(|| "(missing)".to_owned(), |v| display::line(v).into_owned());
    let mut text = format!(
        "It replaces bundled {0}: wherever the type {0} is used (detection, delivery, spawn, its /agmsg command) this one is used instead.\n",
        bundled.name
    );
    let original = Manifest::parse(bundled.conf.as_bytes(), bundled.name).expect("bundled manifests are text");
    let mut keys: Vec<&str> = hooks_manifest::KEYS.iter().map(|k| k.key).collect();
    let entries = conf.entries();
    keys.extend(entries.iter().filter(|e| !e.ignored).map(|e| e.key).filter(|k| !hooks_manifest::KEYS.iter().any(|i| i.key == *k)));
    // Compared as agmsg reads them: a missing key with a default reads as that default.
    let read = |m: &'_ Manifest, key: &str| {
        let default = hooks_manifest::key_info(key).and_then(|k| k.default);
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
    let ours = offer.files.iter().find(|f| f.path == template);
    let theirs = bundled.files.iter().find(|(f, _)| *f == original.value("template")).map(|(_, t)| crate::plugin::sha256_hex(t.as_bytes()));
    match (ours, theirs) {
        (Some(ours), Some(theirs)) if ours.sha256 == theirs => text.push_str("  its template is bundled's, byte for byte\n"),
        (Some(_), Some(_)) => {
            text.push_str(&format!("  its template {} differs from bundled {}'s\n", display::line(template), bundled.name))
        }
        _ => {}
    }
    match (offer.plug.is_some(), agent_bundled::plug(offer.name).is_some()) {
        (true, true) => text.push_str(&format!("  its plug component replaces bundled {}'s\n", bundled.name)),
        (true, false) => text.push_str("  its plug component answers for its delivery (bundled has none)\n"),
        (false, true) => {
            text.push_str(&format!("  it has no plug component: agmsg's delivery defaults instead of bundled {}'s plug\n", bundled.name))
        }
        (false, false) => {}
    }
    if let LaunchTemplate::Command { line, .. } = launch_template(&original, offer.runs_from, &skill_name()) {
        text.push_str(&format!("  bundled {} launches: {}\n", bundled.name, display::line(&line)));
    }
    text
}

/// The file delivery writes (and deletes, for `off`), and what writing it makes its runtime do.
fn delivery(offer: &DirOffer, conf: &Manifest) -> String {
    let file = conf.value("hooks_file");
    if file.is_empty() {
        return "Delivery: no hooks_file: delivery writes no file for it.\n".to_owned();
    }
    // Refused types never reach a consent; said all the same should one be shown.
    let mut text = match hooks_manifest::check_hooks_file(offer.name, file) {
        Ok(location) => format!("Delivery: {}; `delivery set off` removes what it wrote.\n", location.effect(file, offer.plug.is_some())),
        Err(e) => format!("Delivery: REFUSED: {}\n", display::line(&e.message)),
    };
    if offer.plug.is_some() {
        text.push_str("  Its plug component only chooses among the forms agmsg-host itself writes there (any other answer is refused).\n");
    }
    text
}

/// The texts it gives agents: its template (the /agmsg command) and any other text file it ships.
fn texts(offer: &DirOffer) -> String {
    let template = offer.conf.map_or("", |c| c.value("template"));
    let texts: Vec<&TypeFile> = offer
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

/// What `spawn` would run for a type, with the user's full rights (not sandboxed): every word of its
/// launch command line ([`launch_template`], the one `boot_command` builds), the one thing a type's
/// trust gives it beyond data.
fn launches(conf: &Manifest, dir: &Path) -> String {
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
