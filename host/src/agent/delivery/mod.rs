//! Delivery: how an agent type is told of new messages, written into one file of the project (the
//! type's `hooks_file=`). agmsg's `delivery.sh` is a Template Method: a default (JSON event hooks)
//! that a type's `_delivery.sh` plug overrides. Here every behaviour is a pure function, the current
//! file's text in and an [`ApplyReport`] out (write this text, remove the file, or keep it, plus notices
//! and `AGMSG-DIRECTIVE` blocks for the caller to print); [`target`] is the one place that touches
//! the project: it validates the target, reads it and applies the answer atomically.
//!
//! - [`json_hooks`]: the default, agmsg's JSON event hooks (claude-code, codex), member order and
//!   every entry that is not agmsg's kept.
//! - [`rules`]: the rule-file behaviours of the bundled plugs: the shared rule file of gemini and
//!   antigravity (one rule per type in the one file, so turning one off keeps the other's),
//!   copilot's JSON Stop hook, opencode's and grok-build's marker rules.
//! - [`component`]: a type's plug component (`agmsg:agent`; cursor's, claude-code's and grok-build's are
//!   bundled): each op it overrides replaces the host's, each it does not falls back to it (agmsg's
//!   Template Method).
//! - [`forms`]: what a plug's answer may be: one of the host's own file forms for the type
//!   ([`own_forms`]), and directives only as the host words them.
//! - [`shim`]: the `_delivery.sh` through which agmsg's own delivery engine uses agmsg-host for a
//!   type.
//! - [`target`]: `<project>/<hooks_file>` opened component by component without following a symlink,
//!   read (capped), written through an anonymous file renamed into place, or removed.

pub mod codex;
pub mod component;
pub mod forms;
pub mod json_hooks;
pub mod rules;
pub mod shim;
pub mod target;
pub mod types;

use crate::agent::bundled;
use crate::agent::plug::Function;
pub use crate::agent::plug::{Behaviour, SideEffects};
use crate::agent::registry::{AgentType, Origin};
use crate::error::HostError;
use component::Overrides;
pub use types::{FileAnswer, Mode};

/// An apply's answer and what to tell the user.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApplyReport {
    pub answer: Option<FileAnswer>,
    /// Lines for the user (stdout), in order.
    pub notices: Vec<String>,
    /// Warnings (stderr).
    pub warnings: Vec<String>,
}

impl ApplyReport {
    fn answer(answer: FileAnswer) -> ApplyReport {
        ApplyReport { answer: Some(answer), ..ApplyReport::default() }
    }
}

/// What a status found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    pub mode: Mode,
    /// Per-event entry counts of a JSON hooks file (`SessionStart`, `SessionEnd`, `Stop`), when the
    /// file exists and the behaviour has events.
    pub entries: Option<Vec<(&'static str, usize)>>,
    /// Why the mode is off, when the behaviour can tell (agmsg's JSON hooks status does).
    pub off: Option<OffDetail>,
}

/// What agmsg's JSON hooks status says of an off mode, so a reader can tell "nothing installed" from
/// "could not tell" in the first line (agmsg #687).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OffDetail {
    /// A readable settings file without agmsg's entries.
    NoHooks,
    /// No settings file.
    NoFile,
    /// A settings file that is not valid JSON.
    NotJson,
}

impl Status {
    /// A status of `mode` with nothing more to say.
    pub fn of(mode: Mode) -> Status {
        Status { mode, entries: None, off: None }
    }

    /// The words after `mode: `, as agmsg prints them; `file` is the delivery file's path.
    pub fn words(&self, file: Option<&std::path::Path>) -> String {
        let file = file.map(|f| crate::display::line(&f.display().to_string()).into_owned()).unwrap_or_default();
        match (self.mode, self.off) {
            (Mode::Off, Some(OffDetail::NoHooks)) => "off (no agmsg delivery hooks installed for this project)".to_owned(),
            (Mode::Off, Some(OffDetail::NoFile)) => {
                format!("off (unrecognized: no settings file found at {file} -- this project may not be registered)")
            }
            (Mode::Off, Some(OffDetail::NotJson)) => format!("off (unrecognized: settings file at {file} could not be read as valid JSON)"),
            (mode, _) => mode.name().to_owned(),
        }
    }
}

/// Everything a behaviour may know: no filesystem, no environment.
#[derive(Clone, Debug)]
pub struct Context {
    /// The type's name.
    pub agent_type: String,
    /// The project directory, absolute, as written into commands.
    pub project: String,
    /// agmsg's install directory (its scripts are `<skill_dir>/scripts/*.sh`).
    pub skill_dir: String,
    /// `hook_windows_wrap=yes`: JSON hook entries also carry `commandWindows`.
    pub windows_wrap: bool,
}

impl Context {
    /// `'<skill_dir>/scripts/<script>' '<type>' '<project>'`, each argument POSIX single-quoted as
    /// agmsg's `agmsg_shq` quotes it.
    pub fn script_command(&self, script: &str) -> String {
        format!("{} {} {}", shq(&format!("{}/scripts/{script}", self.skill_dir)), shq(&self.agent_type), shq(&self.project))
    }
}

/// agmsg's `agmsg_shq`: one shell word in single quotes, each `'` as `'\''`.
pub use crate::shell::quote as shq;

/// bash's `printf %q` (agmsg quotes the words of commands it prints for an agent this way).
pub use agmsg_contract::printf_q as bash_q;

/// What agmsg's plug for a type of this name does beyond its file (its row of the per-type table),
/// whichever candidate of the name answers.
fn side_effects(t: &AgentType) -> SideEffects {
    bundled::get(&t.name).map_or(SideEffects::None, |b| b.side_effects)
}

impl Behaviour {
    /// The behaviour of a type: a bundled type's plug by name; a type on disk whose `_delivery.sh`
    /// overrides `apply` or `status` is refused (its plug is shell code, never run here).
    pub fn of(t: &AgentType) -> Result<Behaviour, HostError> {
        // The per-type table says it (agent/bundled.rs); generic code names no type.
        let by_name = bundled::get(&t.name).map(|b| b.behaviour);
        // A bundled type, or agmsg's own installed copy of one: the behaviour of agmsg's plug.
        if let (Some(b), Origin::Bundled | Origin::Installed { .. }) = (by_name, &t.origin) {
            return Ok(b);
        }
        let plug = t.plug();
        if plug.overrides(Function::Apply) || plug.overrides(Function::Status) {
            return Err(HostError::refused(format!(
                "type {}: its _delivery.sh overrides {}; agmsg-host never runs shell plugs (a delivery plug component is the way to change delivery)",
                t.name,
                [Function::Apply, Function::Status]
                    .into_iter()
                    .filter(|f| plug.overrides(*f))
                    .map(Function::shell_name)
                    .collect::<Vec<_>>()
                    .join(" and ")
            )));
        }
        Ok(Behaviour::JsonHooks)
    }

    /// What turning delivery off prints for the type when no plug component overrides `on_disable`:
    /// `None` is agmsg's default (stop the project's watchers of the type). hermes's plug in agmsg
    /// overrides it: it only says that delivery is manual, so that a hermes `off` never stops the
    /// watcher another type keeps on the same project. agmsg-app has no plug, so keeps the default.
    ///
    /// codex's plug in agmsg also overrides it (it stops the project's Codex bridges and says how to
    /// undo the bridge's setup): agmsg-host stops nothing, and says what to do instead
    /// ([`codex::on_disable`]).
    pub fn on_disable(self, t: &AgentType, ctx: &Context) -> Option<Vec<String>> {
        match (self, side_effects(t)) {
            (Behaviour::Manual, SideEffects::ManualOff) => {
                Some(vec![format!("{}: no automatic delivery hook to remove; manual inbox checks only.", t.name)])
            }
            (Behaviour::JsonHooks, SideEffects::CodexBridge) => Some(codex::on_disable(ctx)),
            _ => None,
        }
    }

    /// What turning monitor delivery on prints for the type when no plug component overrides
    /// `on_enable`: `None` is agmsg's default. codex's plug in agmsg overrides it with the setup of its
    /// Codex bridge, which agmsg-host does not run: the user is told how ([`codex::on_enable`]).
    pub fn on_enable(self, t: &AgentType, ctx: &Context, mode: Mode) -> Option<Vec<String>> {
        (self == Behaviour::JsonHooks && side_effects(t) == SideEffects::CodexBridge).then(|| codex::on_enable(ctx, mode))
    }

    /// Whether [`Behaviour::on_enable`] / [`Behaviour::on_disable`] answer for the type (`enable`
    /// says which), whatever the project.
    pub fn answers_side_effect(self, t: &AgentType, enable: bool) -> bool {
        matches!(
            (self, side_effects(t), enable),
            (Behaviour::JsonHooks, SideEffects::CodexBridge, _) | (Behaviour::Manual, SideEffects::ManualOff, false)
        )
    }

    /// Whether the behaviour writes a file (`hooks_file=` is needed).
    pub fn has_file(self) -> bool {
        self != Behaviour::Manual
    }

    /// What the type's delivery file becomes for `mode`, from its current text (`None`: absent).
    pub fn apply(self, ctx: &Context, mode: Mode, current: Option<&str>) -> Result<ApplyReport, HostError> {
        let mut outcome = match self {
            Behaviour::JsonHooks => ApplyReport::answer(json_hooks::apply(ctx, mode, current)?),
            Behaviour::RuleFile => rules::shared_rule_apply(ctx, mode, current),
            Behaviour::Copilot => ApplyReport::answer(rules::copilot_apply(ctx, mode)),
            Behaviour::Cursor => ApplyReport::answer(rules::cursor_apply(ctx, mode)),
            Behaviour::Opencode => ApplyReport::answer(rules::opencode_apply(ctx, mode)),
            Behaviour::GrokBuild => ApplyReport::answer(rules::grok_apply(ctx, mode)),
            Behaviour::Manual => ApplyReport::default(),
        };
        if let (Some(FileAnswer::Write(new)), Some(old)) = (&outcome.answer, current)
            && new == old
        {
            outcome.answer = Some(FileAnswer::Keep);
        }
        if outcome.answer == Some(FileAnswer::Remove) && current.is_none() {
            outcome.answer = Some(FileAnswer::Keep);
        }
        Ok(outcome)
    }

    /// The mode the file says (`None`: absent).
    pub fn status(self, ctx: &Context, current: Option<&str>) -> Result<Status, HostError> {
        Ok(match self {
            Behaviour::JsonHooks => json_hooks::status(ctx, current)?,
            Behaviour::RuleFile => Status::of(rules::shared_rule_status(ctx, current)),
            Behaviour::Copilot | Behaviour::Cursor => Status::of(if current.is_some() { Mode::Turn } else { Mode::Off }),
            Behaviour::Opencode | Behaviour::GrokBuild => Status::of(rules::marker_status(current)),
            Behaviour::Manual => Status::of(Mode::Off),
        })
    }
}

/// The host's own forms of the type's delivery file, one per mode the type accepts: the only answers a
/// plug may give ([`forms::admit_file`]). The host's behaviour for the type (agmsg's JSON event hooks
/// for a type whose shell plug is refused), and for a markdown rule file the one-type rule (an `.mdc`
/// file: cursor's always-applied rule), which a type of a runtime reading rules may choose.
pub fn own_forms(t: &AgentType, ctx: &Context, current: Option<&str>) -> Vec<(Mode, FileAnswer)> {
    let behaviour = Behaviour::of(t).unwrap_or(Behaviour::JsonHooks);
    let file = t.value("hooks_file");
    let rule_file = file.ends_with(".md") || file.ends_with(".mdc");
    let mut forms = Vec::new();
    for mode in modes(t) {
        // A form the behaviour cannot make from this file (it is not JSON, say) is not offered. `apply`
        // says Keep for a file already in the form: the form is then the file's text.
        if let Ok(ApplyReport { answer: Some(answer), .. }) = behaviour.apply(ctx, mode, current) {
            let form = match answer {
                FileAnswer::Keep => current.map_or(FileAnswer::Remove, |text| FileAnswer::Write(text.to_owned())),
                other => other,
            };
            forms.push((mode, form));
        }
        if rule_file {
            let rule = match mode {
                Mode::Off => FileAnswer::Remove,
                _ if file.ends_with(".mdc") => rules::cursor_apply(ctx, mode),
                _ => rules::single_rule(ctx),
            };
            forms.push((mode, rule));
        }
    }
    forms
}

/// The modes a type accepts: `delivery_modes=`, else (missing or empty) agmsg's default `monitor turn
/// both off`. Unknown words are left out. The one rule: `delivery set`'s gate, `delivery modes` and
/// `types list` all read it.
pub fn modes(t: &AgentType) -> Vec<Mode> {
    let words = t.manifest.words("delivery_modes");
    if words.is_empty() {
        return Mode::ALL.to_vec();
    }
    words.iter().filter_map(|w| Mode::parse(w).ok()).collect()
}

/// agmsg's central gate: `mode` must be one the type declares.
pub fn gate(t: &AgentType, mode: Mode) -> Result<(), HostError> {
    let modes = modes(t);
    if modes.contains(&mode) {
        return Ok(());
    }
    let declared = t.value("delivery_modes");
    let supported = if declared.is_empty() { "monitor turn both off" } else { declared };
    Err(HostError::refused(format!("Error: '{mode}' mode is not supported for {} (supported: {supported}).", t.name)))
}

/// The lines agmsg's `delivery.sh set` prints after applying: the confirmation, then the mode's side
/// effects (`on_enable`; the turn note and the stop directive; the off note, `on_disable` and, for a
/// type with an automatic mode, the stop directive), each the plug's when it overrides it.
/// agmsg-host touches no process, and says so after the stop directive, whoever worded it.
///
/// As agmsg's `emit_monitor_directive`, a start directive gives way to a note while the session's
/// watcher is alive ([`unless_watching`]).
fn set_notices(t: &AgentType, mode: Mode, ctx: &Context, plug: &mut dyn Overrides) -> Result<Vec<String>, HostError> {
    let mut lines = vec![format!("Delivery mode set to '{mode}' for {} ({})", ctx.project, t.name)];
    let automatic = modes(t).iter().any(|m| *m != Mode::Off);
    let stop = |plug: &mut dyn Overrides| -> Result<String, HostError> {
        let directive = plug.stop_directive()?.unwrap_or_else(|| DEFAULT_STOP_DIRECTIVE.to_owned());
        Ok(format!("{directive}\nagmsg-host stops no processes: run agmsg's `delivery.sh stop` to end watch.sh processes."))
    };
    match mode {
        Mode::Monitor | Mode::Both => {
            let default = || vec!["Restart your agent (or start its watcher) to activate monitor delivery.".to_owned()];
            let own = || Behaviour::of(t).ok().and_then(|b| b.on_enable(t, ctx, mode));
            lines.extend(plug.on_enable(mode)?.map(|said| unless_watching(ctx, said)).or_else(own).unwrap_or_else(default));
        }
        Mode::Turn => {
            lines.push("Future sessions: Stop hook will check inbox between turns.".to_owned());
            lines.push(stop(plug)?);
        }
        Mode::Off => {
            lines.push("Future sessions: no automatic delivery.".to_owned());
            let own = || Behaviour::of(t).ok().and_then(|b| b.on_disable(t, ctx));
            lines.extend(plug.on_disable()?.or_else(own).unwrap_or_default());
            if automatic {
                lines.push(stop(plug)?);
            }
        }
    }
    Ok(lines)
}

/// agmsg's `emit_monitor_directive` (and grok-build's plug) starts no second watcher for a session:
/// while `<skill_dir>/run/watch.<session>.pid` names a live process it says so instead of the directive,
/// which would run a duplicate beside it. The host does the same with the start directive a plug
/// answered: from the directive on, the plug's lines give way to the host's note naming the watcher.
fn unless_watching(ctx: &Context, said: Vec<String>) -> Vec<String> {
    let Some((at, session)) = forms::start_watch_at(ctx, &said) else { return said };
    let Some(pid) = live_watcher(&ctx.skill_dir, &session) else { return said };
    let mut lines = said[..at].to_vec();
    lines.push(format!("A watch.sh is already streaming into this session (pid {pid}): nothing to start, that watcher is the one in use."));
    lines
}

/// The pid in the session's watcher pidfile, when that process is alive: signal 0 answers (or is not
/// permitted, as for agmsg: a watcher in another sandbox is still alive), and it is no zombie. Only
/// looks: no signal is sent.
fn live_watcher(skill_dir: &str, session: &str) -> Option<i32> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    // The id is one file name in run/ (the start directive's word may be anything printable).
    if session.is_empty() || session.contains(['/', '\0']) || session == "." || session == ".." {
        return None;
    }
    let file = std::path::Path::new(skill_dir).join("run").join(format!("watch.{session}.pid"));
    // Opened without blocking (a FIFO planted there must not hang delivery) and read only if regular.
    let opened = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(file).ok()?;
    if !opened.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    opened.take(64).read_to_string(&mut text).ok()?;
    let pid: i32 = text.trim().parse().ok().filter(|pid| *pid > 0)?;
    (crate::pid::alive(pid) && !crate::pid::zombie(pid)).then_some(pid)
}

/// agmsg's default in-session watcher-stop directive (`emit_stop_directive`, a blank line, then the
/// directive), without its claim that the watchers were killed; one of the host's directive texts.
const DEFAULT_STOP_DIRECTIVE: &str = agmsg_contract::delivery_texts::STOP_TASK_DIRECTIVE;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_matches_agmsg_and_bash() {
        assert_eq!(shq("/p/o'brien"), r"'/p/o'\''brien'");
        for (text, q) in [
            ("a,b", r"a\,b"),
            ("~x", r"\~x"),
            ("a~b", "a~b"),
            ("#a", r"\#a"),
            ("a#b", "a#b"),
            ("a=b", "a=b"),
            ("x:y", "x:y"),
            ("é", "é"),
            ("it's", r"it\'s"),
            ("/tmp/p q", r"/tmp/p\ q"),
            ("", "''"),
            ("a{b}", r"a\{b\}"),
        ] {
            assert_eq!(bash_q(text), q, "{text}");
        }
    }

    #[test]
    fn modes_parse() {
        assert_eq!(Mode::parse("both"), Ok(Mode::Both));
        assert_eq!(Mode::parse("x").unwrap_err().message, "Unknown mode: x (use monitor|turn|both|off)");
    }
}

/// What `set` did.
#[derive(Debug)]
pub struct SetReport {
    /// The file, when the type has one.
    pub file: Option<std::path::PathBuf>,
    /// Whether it changed.
    pub changed: bool,
    /// Lines for stdout (the behaviour's, then agmsg's confirmation and directive).
    pub notices: Vec<String>,
    /// Lines for stderr.
    pub warnings: Vec<String>,
}

/// What `status` found.
#[derive(Debug)]
pub struct StatusReport {
    pub file: Option<std::path::PathBuf>,
    pub exists: bool,
    pub status: Status,
    /// What the type's delivery runs beside the file, as agmsg's status reports it after the file's
    /// lines (codex: its Codex bridges, [`codex::bridge_status`]); empty for most types.
    pub notes: Vec<String>,
}

fn context(t: &AgentType, project: &std::path::Path, skill_dir: &std::path::Path) -> Result<Context, HostError> {
    let skill_dir =
        skill_dir.to_str().ok_or_else(|| HostError::refused(format!("agmsg's directory {} is not UTF-8", skill_dir.display())))?;
    Ok(Context {
        agent_type: t.name.clone(),
        project: project.to_str().expect("checked by project_dir").to_owned(),
        skill_dir: skill_dir.trim_end_matches('/').to_owned(),
        windows_wrap: t.value("hook_windows_wrap") == "yes",
    })
}

fn hooks_file(t: &AgentType) -> Result<&str, HostError> {
    let file = t.value("hooks_file");
    if file.is_empty() {
        return Err(HostError::refused(format!("Unknown agent type: {} (it has no hooks_file)", t.name)));
    }
    Ok(file)
}

/// The plug component that answers for the type: the one named on the command line (`--driver`), else
/// the type's own ([`AgentType::plug_component`]).
pub type PlugOverride<'a> = Option<&'a crate::runtime::DriverSource>;

/// The type's plug component, loaded (the runtime made on first need), else [`component::NoPlug`].
fn open_plug<'rt>(
    t: &AgentType,
    ctx: &Context,
    runtime: &'rt mut Option<crate::runtime::Runtime>,
    chosen: PlugOverride<'_>,
) -> Result<Box<dyn Overrides + 'rt>, HostError> {
    let source = match chosen {
        Some(source) => source.clone(),
        None => match t.plug_component() {
            Some(source) => source,
            None => return Ok(Box::new(component::NoPlug)),
        },
    };
    // The engine cannot be made (a bad limit in the environment): delivery refuses.
    let runtime = runtime.insert(crate::runtime::Runtime::from_env().map_err(HostError::refused)?);
    Ok(Box::new(component::PlugComponent::open(runtime, &source, ctx, t.value("hooks_file"))?))
}

/// `delivery set <mode> <type> <project>`: the gate, then the type's plug component's answer for each
/// op it overrides, else the host's behaviour for the type, applied atomically, then the lines agmsg
/// prints after it. On any error the file is as it was.
pub fn set(
    t: &AgentType,
    mode: Mode,
    project: &std::path::Path,
    skill_dir: &std::path::Path,
    plug: PlugOverride<'_>,
) -> Result<SetReport, HostError> {
    apply_mode(t, mode, project, skill_dir, plug, true)
}

/// `delivery apply <type> <project> <mode>`: what agmsg's `agmsg_delivery_apply` does, the file only
/// (the gate included), with the apply's own notices and none of `set`'s.
pub fn apply(
    t: &AgentType,
    mode: Mode,
    project: &std::path::Path,
    skill_dir: &std::path::Path,
    plug: PlugOverride<'_>,
) -> Result<SetReport, HostError> {
    apply_mode(t, mode, project, skill_dir, plug, false)
}

fn apply_mode(
    t: &AgentType,
    mode: Mode,
    project: &std::path::Path,
    skill_dir: &std::path::Path,
    chosen: PlugOverride<'_>,
    set_lines: bool,
) -> Result<SetReport, HostError> {
    gate(t, mode)?;
    let project = target::project_dir(project)?;
    let ctx = context(t, &project, skill_dir)?;
    let mut runtime = None;
    let mut plug = open_plug(t, &ctx, &mut runtime, chosen)?;
    // The host's behaviour for the type; only needed (and a refused shell plug only an error) for
    // what the component does not override.
    let behaviour = Behaviour::of(t);
    let has_file = !t.value("hooks_file").is_empty() || behaviour.as_ref().is_ok_and(|b| b.has_file());
    let after_lines = |plug: &mut dyn Overrides| if set_lines { set_notices(t, mode, &ctx, plug) } else { Ok(Vec::new()) };
    let (file, changed, outcome) = if has_file {
        let target = target::Target::open(&project, &t.name, hooks_file(t)?)?;
        let current = target.read()?;
        let left = |e: HostError| HostError::new(e.class, format!("{}: {e}; left as it was", target.path().display()));
        let outcome = match plug.apply(mode, current.as_deref()).map_err(left)? {
            // The plug chooses among the host's own forms; text of its own is refused (forms.rs).
            Some(outcome) => {
                let forms = own_forms(t, &ctx, current.as_deref());
                let answer = outcome.answer.unwrap_or(FileAnswer::Keep);
                let json = t.value("hooks_file").ends_with(".json");
                let answer = forms::admit_file(&forms, mode, current.as_deref(), json, answer)
                    .map_err(|e| left(HostError::new(e.class, format!("delivery plug of {}: {e}", t.name))))?;
                ApplyReport { answer: Some(answer), ..outcome }
            }
            None => behaviour.clone()?.apply(&ctx, mode, current.as_deref()).map_err(left)?,
        };
        // What `set` prints is asked of the plug before the file changes: a refused line leaves it
        // as it was.
        let after = after_lines(plug.as_mut()).map_err(left)?;
        let changed = target.apply(outcome.answer.as_ref().unwrap_or(&FileAnswer::Keep))?;
        (Some(target.path()), changed, ApplyReport { notices: [outcome.notices, after].concat(), ..outcome })
    } else {
        let outcome = behaviour.clone()?.apply(&ctx, mode, None)?;
        (None, false, ApplyReport { notices: [outcome.notices, after_lines(plug.as_mut())?].concat(), ..outcome })
    };
    Ok(SetReport { file, changed, notices: outcome.notices, warnings: outcome.warnings })
}

/// `delivery status <type> <project>`: the mode the type's file says.
pub fn status(
    t: &AgentType,
    project: &std::path::Path,
    skill_dir: &std::path::Path,
    chosen: PlugOverride<'_>,
) -> Result<StatusReport, HostError> {
    let behaviour = Behaviour::of(t);
    let project = target::project_dir(project)?;
    let ctx = context(t, &project, skill_dir)?;
    if t.value("hooks_file").is_empty() && behaviour.as_ref().is_ok_and(|b| !b.has_file()) {
        return Ok(StatusReport { file: None, exists: false, status: behaviour?.status(&ctx, None)?, notes: Vec::new() });
    }
    let target = target::Target::open(&project, &t.name, hooks_file(t)?)?;
    let current = target.read()?;
    let mut runtime = None;
    let mut plug = open_plug(t, &ctx, &mut runtime, chosen)?;
    // codex's runtime status in agmsg reports its bridges; with agmsg-host's shim in place of its plug,
    // agmsg-host's status is the only one that can.
    let notes = if behaviour.as_ref().is_ok_and(|b| *b == Behaviour::JsonHooks) && side_effects(t) == SideEffects::CodexBridge {
        codex::bridge_status(&ctx)
    } else {
        Vec::new()
    };
    let status = match plug.status(current.as_deref())? {
        Some(status) => status,
        None => behaviour?.status(&ctx, current.as_deref()).map_err(|e| HostError::refused(format!("{}: {e}", target.path().display())))?,
    };
    Ok(StatusReport { file: Some(target.path()), exists: current.is_some(), status, notes })
}

/// One of the Template Method's side-effect ops, asked on its own (`delivery on-enable | on-disable |
/// stop-directive`, what agmsg-host's `_delivery.sh` shim forwards): the type's answer, or `None` when
/// neither its plug component nor the host's behaviour for it overrides the op, so agmsg's own default
/// applies (the shim then runs it: these defaults touch processes, which agmsg-host never does).
pub enum SideEffect {
    /// `agmsg_delivery_on_enable <mode>`: lines for the user.
    OnEnable(Mode),
    /// `agmsg_delivery_on_disable`: lines for the user.
    OnDisable,
    /// `agmsg_delivery_stop_directive`: the directive text, as agmsg prints it.
    StopDirective,
}

/// Ask the type for `op` (see [`SideEffect`]): the lines it prints, or `None` for agmsg's default.
pub fn side_effect(
    t: &AgentType,
    op: SideEffect,
    project: &std::path::Path,
    skill_dir: &std::path::Path,
    chosen: PlugOverride<'_>,
) -> Result<Option<Vec<String>>, HostError> {
    let project = target::project_dir(project)?;
    let ctx = context(t, &project, skill_dir)?;
    let mut runtime = None;
    let mut plug = open_plug(t, &ctx, &mut runtime, chosen)?;
    match op {
        SideEffect::OnEnable(mode) => {
            gate(t, mode)?;
            let own = || Behaviour::of(t).ok().and_then(|b| b.on_enable(t, &ctx, mode));
            Ok(plug.on_enable(mode)?.map(|said| unless_watching(&ctx, said)).or_else(own))
        }
        SideEffect::OnDisable => Ok(plug.on_disable()?.or_else(|| Behaviour::of(t).ok().and_then(|b| b.on_disable(t, &ctx)))),
        SideEffect::StopDirective => Ok(plug.stop_directive()?.map(|directive| vec![directive])),
    }
}
