//! `agmsg-host types list | describe | get | detect | boot-argv`: the agent types as data.
//!
//! Every value a manifest supplies is printed through the one display rule; `--json` prints JSON.
//! Exit codes: 0 done; 1 the request cannot be met (an unknown type, a type that cannot be spawned, a
//! refused option); 2 usage (clap's, and a key that is not a key). `types get` behaves as agmsg's
//! `agmsg_type_get`: an unknown type or a missing key prints the default and exits 0.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::{Value, json};

use super::exit;
use agmsg_host::agent::boot::{self, BootRequest};
use agmsg_host::agent::delivery;
use agmsg_host::agent::detect::{self, ProcFs};
use agmsg_host::agent::manifest::{self, KEYS};
use agmsg_host::agent::plug::Function;
use agmsg_host::agent::registry::{AgentType, Origin, Registry};
use agmsg_host::display;
use agmsg_host::error::HostError;
use agmsg_host::log::host_log;

pub const LONG_HELP: &str = "The agent types (claude-code, codex, gemini, ...) as data.\n\n\
    Types come from, in order (a later one of the same name wins): those bundled in this binary \
    (agmsg 1.2.1's ten), agmsg's own installed types ($AGMSG_SKILL_DIR, else ~/.agents/skills/agmsg: \
    scripts/drivers/types/<name>/type.conf), and external types under $AGMSG_HOME/plugins/types/<name>/ \
    and each AGMSG_PLUGIN_DIRS directory's types/<name>/, once trusted. A manifest is read as agmsg \
    reads it, never executed.";

pub const DETECT_HELP: &str = "Which agent runtime is calling, first rule that fires:\n\n\
    1. session variable: a type's detect= variable is set and is the runtime's own (CODEX_THREAD_ID, \
    GROK_SESSION_ID, ...); when several types' are set, the one whose process is the nearest ancestor \
    wins, else the first by type name;\n\
    2. process tree: from the caller up (at most 10 processes, never pid 1), the first ancestor whose \
    name matches a type's detect_proc= glob;\n\
    3. credential: a detect= variable other tools share too (a name ending in _API_KEY, _KEY, _TOKEN, \
    _SECRET, _PASSWORD or _CREDENTIALS, like GEMINI_API_KEY), or a detect_fallback= variable;\n\
    4. fallback: claude-code.\n\n\
    detect=explicit types are never selected from the environment. (agmsg 1.2.1 checks every detect= \
    variable first, by type name, so GEMINI_API_KEY made a grok session detect as gemini.)";

#[derive(Debug, clap::Subcommand)]
pub enum TypesCommand {
    /// Every type: name, where it comes from, whether spawn can launch it, its cli, detection and
    /// delivery modes
    List {
        /// One JSON object per line
        #[arg(long)]
        json: bool,
    },
    /// A type's every key and where it came from, its template, its plug and what the plug overrides
    Describe {
        #[arg(value_name = "TYPE")]
        agent_type: String,
        #[arg(long)]
        json: bool,
    },
    /// One key's value, as agmsg's `agmsg_type_get <type> <key> [default]`: the default (empty) for a
    /// missing key or an unknown type, exit 0
    Get {
        #[arg(value_name = "TYPE")]
        agent_type: String,
        key: String,
        #[arg(allow_hyphen_values = true)]
        default: Option<String>,
        /// Fail (exit 1) on an unknown type or a missing key instead
        #[arg(long)]
        strict: bool,
    },
    /// Which agent runtime is calling (prints its type)
    #[command(long_about = DETECT_HELP)]
    Detect {
        /// Also say which rule fired and what evidence it outranked
        #[arg(long)]
        explain: bool,
        /// The detection as a JSON object
        #[arg(long)]
        json: bool,
        /// Walk the process tree from PID instead of from the caller
        #[arg(long, value_name = "PID")]
        pid: Option<u32>,
    },
    /// The command spawn would launch for an agent, as JSON (argv, cwd, variables set and unset);
    /// runs nothing
    BootArgv(BootArgs),
}

/// What to boot: the arguments `types boot-argv` and `spawn` share, so both build the same command.
#[derive(Debug, clap::Args)]
pub struct BootArgs {
    /// The agent type (`types list`)
    #[arg(value_name = "TYPE")]
    pub agent_type: String,
    /// The agent's team
    pub team: String,
    /// The agent's name in the team
    pub agent: String,
    /// The project directory the agent works in
    #[arg(long, value_name = "DIR")]
    pub project: PathBuf,
    /// The model, passed with the type's model_arg (refused for a type without one)
    #[arg(long, value_name = "MODEL", allow_hyphen_values = true)]
    pub model: Option<String>,
    /// Text sent after the actas prompt, on its own line
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub boot_prompt: Option<String>,
    /// Resume this recorded session (when the type has resume_arg; the caller checks it exists)
    #[arg(long, value_name = "SESSION_ID")]
    pub resume: Option<String>,
    /// A spawn-option token, inserted where agmsg inserts spawn_options.yaml's (repeatable)
    #[arg(long = "spawn-arg", value_name = "TOKEN", allow_hyphen_values = true)]
    pub spawn_args: Vec<String>,
}

impl BootArgs {
    /// The type's name and the request, with this installation's skill name and node program.
    pub fn request(self) -> (String, BootRequest) {
        let BootArgs { agent_type, team, agent, project, model, boot_prompt, resume, spawn_args } = self;
        let req = BootRequest { team, agent, project, model, boot_prompt, resume, spawn_options: spawn_args, ..Default::default() };
        (agent_type, req.for_installation())
    }
}

pub fn run(command: TypesCommand) -> ExitCode {
    let result = match command {
        TypesCommand::List { json } => list(json),
        TypesCommand::Describe { agent_type, json } => describe(&agent_type, json),
        TypesCommand::Get { agent_type, key, default, strict } => get(&agent_type, &key, default.as_deref().unwrap_or(""), strict),
        TypesCommand::Detect { explain, json, pid } => detect(explain, json, pid),
        TypesCommand::BootArgv(args) => {
            let (agent_type, req) = args.request();
            boot_argv(&agent_type, &req)
        }
    };
    exit::report("types", result)
}

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

fn print(text: &str) -> Result<(), HostError> {
    std::io::stdout().write_all(text.as_bytes()).map_err(|e| HostError::refused(format!("writing the output: {e}")))
}

fn dir_text(origin: &Origin) -> Option<String> {
    origin.dir().map(|d| d.display().to_string())
}

fn or_dash(s: &str) -> &str {
    if s.is_empty() { "-" } else { s }
}

fn list(json: bool) -> Result<(), HostError> {
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
    print(&out)
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

fn describe(name: &str, json: bool) -> Result<(), HostError> {
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
        return print(&format!("{value}\n"));
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
    print(&out)
}

fn get(name: &str, key: &str, default: &str, strict: bool) -> Result<(), HostError> {
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
    print(&format!("{}\n", display::text(value)))
}

fn detect(explain: bool, json: bool, pid: Option<u32>) -> Result<(), HostError> {
    let reg = registry();
    let start = pid.unwrap_or_else(detect::caller);
    let env = |v: &str| std::env::var_os(v).map(|s| s.to_string_lossy().into_owned());
    let found = detect::detect(&reg, &env, &ProcFs, start);
    if json {
        let mut value = serde_json::to_value(&found).expect("a detection serializes");
        value["explanation"] = Value::String(found.explain());
        return print(&format!("{value}\n"));
    }
    let mut out = format!("{}\n", display::line(&found.agent_type));
    if explain {
        out.push_str(&format!("{}\n", display::line(&found.explain())));
        for note in &found.passed_over {
            out.push_str(&format!("passed over: {}\n", display::line(note)));
        }
    }
    print(&out)
}

fn boot_argv(name: &str, req: &BootRequest) -> Result<(), HostError> {
    let reg = registry_for(name);
    let t = require(&reg, name)?;
    let command = boot::boot_command(t, req)?;
    let value = serde_json::to_value(&command).expect("a boot command serializes");
    print(&format!("{value}\n"))
}
