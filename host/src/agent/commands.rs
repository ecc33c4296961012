//! `types list | describe | get | detect | boot-argv`: the agent types as data, each returning what the
//! command line prints. Every value a manifest supplies goes through the one display rule; `json`
//! gives JSON. `get` behaves as agmsg's `agmsg_type_get`: an unknown type or a missing key gives the
//! default.

use serde_json::{Value, json};

use super::boot::{self, BootRequest};
use super::delivery;
use super::detect::{self, ProcFs};
use super::manifest::{self, KEYS};
use super::plug::Function;
use super::registry::{AgentType, Origin, Registry};
use crate::display;
use crate::error::HostError;
use crate::log::host_log;

/// The registry, its warnings (untrusted or unreadable candidates) on the host log.
pub fn registry() -> Registry {
    let reg = Registry::from_env();
    for warning in &reg.warnings {
        host_log::warn(warning);
    }
    reg
}

/// The registry for a command about type `name`: its warnings on the host log, except, when `name` is
/// not a type, those about candidates of that name, which the command's error says
/// ([`Registry::require`]) rather than twice.
pub fn registry_for(name: &str) -> Registry {
    let reg = Registry::from_env();
    let said_by_the_error = if reg.get(name).is_none() { reg.ignored(name) } else { &[] };
    for warning in reg.warnings.iter().filter(|w| !said_by_the_error.contains(w)) {
        host_log::warn(warning);
    }
    reg
}

fn dir_text(origin: &Origin) -> Option<String> {
    origin.dir().map(|d| d.display().to_string())
}

fn or_dash(s: &str) -> &str {
    if s.is_empty() { "-" } else { s }
}

/// `types list`: every type: name, where it comes from, whether spawn can launch it, its cli,
/// detection and delivery modes (`json`: one object per line).
pub fn list(json: bool) -> Result<String, HostError> {
    let reg = registry();
    let mut out = String::new();
    if !json {
        out.push_str(&format!("{:<14} {:<8} {:<9} {:<14} {:<22} {}\n", "TYPE", "SOURCE", "SPAWNABLE", "CLI", "DELIVERY", "DETECT"));
    }
    for t in reg.types() {
        let detect = detect_summary(t);
        if json {
            let row = json!({
                "name": t.name,
                "source": t.origin.word(),
                "dir": dir_text(&t.origin),
                "spawnable": t.spawnable(),
                "cli": t.value("cli"),
                "detect": t.manifest.words("detect"),
                "detect_proc": t.manifest.words("detect_proc"),
                "delivery_modes": delivery_modes(t),
                "shadows": t.shadows.iter().map(origin_json).collect::<Vec<_>>(),
            });
            out.push_str(&format!("{row}\n"));
        } else {
            let spawnable = if t.spawnable() { "yes" } else { "no" };
            let modes = delivery_modes(t).join(" ");
            let [name, cli, detect, modes] = [t.name.as_str(), or_dash(t.value("cli")), or_dash(&detect), &modes].map(display::line);
            out.push_str(&format!("{name:<14} {:<8} {spawnable:<9} {cli:<14} {modes:<22} {detect}", t.origin.word()));
            if let Some(dir) = t.dir() {
                out.push_str(&format!("  ({})", display::line(&dir.display().to_string())));
            }
            out.push('\n');
        }
    }
    Ok(out)
}

/// `detect` and `detect_proc` in one cell: `explicit`, the variables, `proc:` the globs.
fn detect_summary(t: &AgentType) -> String {
    let mut parts: Vec<String> = t.manifest.words("detect").into_iter().map(str::to_owned).collect();
    let procs = t.manifest.words("detect_proc");
    if !procs.is_empty() {
        parts.push(format!("proc:{}", procs.join(",")));
    }
    parts.join(" ")
}

/// The modes `delivery set` accepts for `t`: the library's one rule, which `delivery modes` prints too.
fn delivery_modes(t: &AgentType) -> Vec<&'static str> {
    delivery::modes(t).into_iter().map(delivery::Mode::name).collect()
}

fn origin_json(origin: &Origin) -> Value {
    json!({ "source": origin.word(), "dir": dir_text(origin) })
}

fn require<'a>(reg: &'a Registry, name: &str) -> Result<&'a AgentType, HostError> {
    reg.require(name)
}

/// `types describe`: a type's every key and where it came from, its template, its plug and what the
/// plug overrides.
pub fn describe(name: &str, json: bool) -> Result<String, HostError> {
    let reg = registry_for(name);
    let t = require(&reg, name)?;
    let manifest_path = match t.dir() {
        Some(dir) => dir.join("type.conf").display().to_string(),
        None => format!("(built in) {}/type.conf", t.name),
    };
    let entries = t.manifest.entries();
    let missing: Vec<_> = KEYS.iter().filter(|k| t.get(k.key).is_none()).collect();
    let template = t.template();
    let plug = t.plug();
    // What agmsg-host itself runs for the type's delivery: a sandboxed plug component, or nothing (the
    // host's own defaults and rules); the shell plug above is agmsg's, described, never run.
    let component = t.plug_component();
    let stray = t.manifest.stray_lines();

    if json {
        let template = match &template {
            Ok(None) => Value::Null,
            Ok(Some(tpl)) => json!({
                "file": tpl.file,
                "path": tpl.path.as_ref().map(|p| p.display().to_string()),
                "bytes": tpl.text.as_ref().ok().map(String::len),
                "error": tpl.text.as_ref().err(),
            }),
            Err(e) => json!({ "file": t.value("template"), "error": e }),
        };
        let value = json!({
            "name": t.name,
            "source": t.origin.word(),
            "dir": dir_text(&t.origin),
            "manifest": manifest_path,
            "shadows": t.shadows.iter().map(origin_json).collect::<Vec<_>>(),
            "keys": entries.iter().map(|e| json!({
                "key": e.key, "value": e.value, "line": e.line, "read": !e.ignored,
                "known": manifest::key_info(e.key).is_some(),
            })).collect::<Vec<_>>(),
            "missing": missing.iter().map(|k| json!({ "key": k.key, "reads_as": k.default.unwrap_or("") })).collect::<Vec<_>>(),
            "stray_lines": stray.iter().map(|(n, l)| json!({ "line": n, "text": l })).collect::<Vec<_>>(),
            "spawnable": t.spawnable(),
            "template": template,
            "plug": {
                "file": plug.file,
                "overrides": plug.overrides.iter().map(|(f, what)| json!({ "function": f.name(), "does": what })).collect::<Vec<_>>(),
                "defaults": Function::ALL.iter().filter(|f| !plug.overrides(**f)).map(|f| json!({ "function": f.name(), "does": f.default_behaviour() })).collect::<Vec<_>>(),
                "code": plug.code,
            },
            "component": component.as_ref().map(|c| json!({
                "name": c.name,
                "sha256": c.sha256,
                "path": c.path.as_ref().map(|p| p.display().to_string()),
                "capabilities": c.capabilities.summary(),
            })),
        });
        return Ok(format!("{value}\n"));
    }

    let l = |s: &str| display::line(s).into_owned();
    let mut out = String::new();
    out.push_str(&format!("type       {}\n", l(&t.name)));
    out.push_str(&format!("source     {}\n", l(&t.origin.describe())));
    out.push_str(&format!("manifest   {}\n", l(&manifest_path)));
    for old in &t.shadows {
        out.push_str(&format!("shadows    {}\n", l(&old.describe())));
    }
    out.push_str(&format!("spawnable  {}\n", if t.spawnable() { "yes" } else { "no" }));
    out.push_str("keys       (agmsg's reader: the first line setting a key wins)\n");
    for e in &entries {
        let note = match (e.ignored, manifest::key_info(e.key)) {
            (true, _) => " (ignored: an earlier line sets it)",
            (false, None) => " (not a key agmsg 1.2.1 reads)",
            (false, Some(_)) => "",
        };
        out.push_str(&format!("  {}={}  [type.conf line {}]{note}\n", l(e.key), l(e.value), e.line));
    }
    for k in &missing {
        match k.default {
            Some(d) => out.push_str(&format!("  {}  [missing: reads as {d:?}]\n", k.key)),
            None => out.push_str(&format!("  {}  [missing: reads as empty]\n", k.key)),
        }
    }
    for (n, line) in &stray {
        out.push_str(&format!("  line {n} is never read: {}\n", l(line)));
    }
    match &template {
        Ok(None) => out.push_str("template   none\n"),
        Ok(Some(tpl)) => {
            let place = tpl.path.as_ref().map_or_else(|| format!("(built in) {}/{}", t.name, tpl.file), |p| p.display().to_string());
            match &tpl.text {
                Ok(text) => out.push_str(&format!("template   {} ({} bytes)\n", l(&place), text.len())),
                Err(e) => out.push_str(&format!("template   {} (cannot be read: {})\n", l(&place), l(e))),
            }
        }
        Err(e) => out.push_str(&format!("template   {}\n", l(e))),
    }
    match &plug.file {
        Some(file) => out.push_str(&format!("plug       {}\n", l(file))),
        None => out.push_str("plug       none: agmsg's delivery defaults throughout\n"),
    }
    for f in Function::ALL {
        match plug.overrides.iter().find(|(g, _)| *g == f) {
            Some((_, Some(what))) => out.push_str(&format!("  {:<15} overridden: {}\n", f.name(), l(what))),
            Some((_, None)) => out.push_str(&format!("  {:<15} overridden (by {})\n", f.name(), f.shell_name())),
            None => out.push_str(&format!("  {:<15} default: {}\n", f.name(), f.default_behaviour())),
        }
    }
    for code in &plug.code {
        out.push_str(&format!("code       {}\n", l(code)));
    }
    match &component {
        Some(c) => {
            let place = c.path.as_ref().map_or_else(|| format!("bundled plug '{}'", c.name), |p| p.display().to_string());
            out.push_str(&format!(
                "component  agmsg-host runs {} (sha256 {}), sandboxed, granted: {}; an op it does not override gets agmsg's default\n",
                l(&place),
                &c.sha256[..c.sha256.len().min(12)],
                l(&c.capabilities.summary())
            ));
        }
        None => out.push_str("component  none: agmsg-host answers with agmsg's defaults and its own rules for this type\n"),
    }
    Ok(out)
}

/// `types get`: one key's value, as agmsg's `agmsg_type_get <type> <key> [default]` (`strict`: an
/// unknown type or a missing key is refused instead).
pub fn get(name: &str, key: &str, default: &str, strict: bool) -> Result<String, HostError> {
    if !manifest::is_key(key) {
        return Err(HostError::usage(format!("invalid key {key:?}: a key is letters, digits and '_'")));
    }
    // As agmsg_type_get: no warnings about other candidates, the default for what cannot be found.
    let reg = Registry::from_env();
    let value = match reg.get(name) {
        Some(t) => match t.get(key) {
            Some(v) => v,
            None if strict => return Err(HostError::refused(format!("agent type {name} has no key {key}"))),
            None => default,
        },
        // The registry's own error: the types there are, and why one of this name was skipped.
        None if strict => {
            return Err(reg.require(name).err().unwrap_or_else(|| HostError::refused(format!("unknown agent type {name:?}"))));
        }
        None => default,
    };
    Ok(format!("{}\n", display::text(value)))
}

/// `types detect`: which agent runtime is calling (from the process `pid`, else the caller); `explain`:
/// which rule fired and what it outranked.
pub fn detect(explain: bool, json: bool, pid: Option<u32>) -> Result<String, HostError> {
    let reg = registry();
    let start = pid.unwrap_or_else(detect::caller);
    let env = |v: &str| std::env::var_os(v).map(|s| s.to_string_lossy().into_owned());
    let found = detect::detect(&reg, &env, &ProcFs, start);
    if json {
        let mut value = serde_json::to_value(&found).expect("a detection serializes");
        value["explanation"] = Value::String(found.explain());
        return Ok(format!("{value}\n"));
    }
    let mut out = format!("{}\n", display::line(&found.agent_type));
    if explain {
        out.push_str(&format!("{}\n", display::line(&found.explain())));
        for note in &found.passed_over {
            out.push_str(&format!("passed over: {}\n", display::line(note)));
        }
    }
    Ok(out)
}

/// `types boot-argv`: the command spawn would launch, as JSON; runs nothing.
pub fn boot_argv(name: &str, req: &BootRequest) -> Result<String, HostError> {
    let reg = registry_for(name);
    let t = require(&reg, name)?;
    let command = boot::boot_command(t, req)?;
    let value = serde_json::to_value(&command).expect("a boot command serializes");
    Ok(format!("{value}\n"))
}
