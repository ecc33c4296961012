//! A type's code plug, as data: which functions of agmsg's delivery Template Method
//! (`scripts/delivery.sh`) its `_delivery.sh` overrides, and what other code its directory carries.
//! agmsg-host never runs this code: for a bundled type the facts are built in (reference §4); for a
//! type on disk the plug's text is scanned for the function definitions, never sourced.

use std::path::Path;

/// How a type's delivery file is written: agmsg's default, or the behaviour of the plug agmsg ships
/// for it (a bundled type's is in its row of [`super::bundled::TYPES`]; what each does is
/// `agent::delivery`'s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behaviour {
    /// agmsg's default: JSON event hooks (claude-code, codex, and any type without an apply plug).
    JsonHooks,
    /// `rulefile_apply`/`rulefile_status`, one file shared by several types (gemini, antigravity).
    RuleFile,
    /// copilot's JSON `Stop` hook file.
    Copilot,
    /// cursor's always-applied rule (`.cursor/rules/*.mdc`).
    Cursor,
    /// opencode's marker rule.
    Opencode,
    /// grok-build's marker rule.
    GrokBuild,
    /// Manual delivery only (hermes, agmsg-app): nothing is written, the status is always off.
    Manual,
}

/// What agmsg's plug for a type does beyond its delivery file, which agmsg-host does not do but says in
/// its own words (`agent::delivery`: `Behaviour::on_enable`, `on_disable`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SideEffects {
    /// Nothing beyond agmsg's defaults.
    None,
    /// codex's: its Codex bridge set up on enable, stopped on disable, reported by status.
    CodexBridge,
    /// hermes's: turning delivery off only says that delivery is manual (no watcher is stopped).
    ManualOff,
}

/// An overridable function of agmsg's delivery engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Function {
    Apply,
    Status,
    OnEnable,
    OnDisable,
    StopDirective,
    RuntimeStatus,
}

impl Function {
    pub const ALL: [Function; 6] =
        [Function::Apply, Function::Status, Function::OnEnable, Function::OnDisable, Function::StopDirective, Function::RuntimeStatus];

    /// Its short name (`on_enable`).
    pub fn name(self) -> &'static str {
        match self {
            Function::Apply => "apply",
            Function::Status => "status",
            Function::OnEnable => "on_enable",
            Function::OnDisable => "on_disable",
            Function::StopDirective => "stop_directive",
            Function::RuntimeStatus => "runtime_status",
        }
    }

    /// The shell function a plug defines to override it (`agmsg_delivery_on_enable`).
    pub fn shell_name(self) -> String {
        format!("agmsg_delivery_{}", self.name())
    }

    /// What agmsg's `delivery.sh` does when no plug overrides it.
    pub fn default_behaviour(self) -> &'static str {
        match self {
            Function::Apply => {
                "JSON event hooks in hooks_file: SessionStart/SessionEnd for monitor, Stop for turn (agmsg-owned entries replaced, other keys kept)"
            }
            Function::Status => "inspects the agmsg-owned SessionStart/Stop entries of hooks_file: the mode and per-event counts",
            Function::OnEnable => "nothing",
            Function::OnDisable => "kills this (project, type)'s watch.sh",
            Function::StopDirective => "an AGMSG-DIRECTIVE to TaskStop the agmsg inbox stream",
            Function::RuntimeStatus => "counts run/watch.*.pid alive and stale",
        }
    }
}

/// A bundled type's plug (static facts).
pub struct Plug {
    /// The plug file agmsg ships for it (`_delivery.sh`), if any.
    pub file: Option<&'static str>,
    /// The functions it overrides, each with what it does instead.
    pub overrides: &'static [(Function, &'static str)],
    /// Other code agmsg ships in the type's directory, each with what it is for.
    pub code: &'static [&'static str],
}

/// What a type's plug does, whichever way it was learnt.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlugInfo {
    /// The plug file, if any.
    pub file: Option<String>,
    /// The functions it overrides, with what it does instead when known (a scanned plug: unknown).
    pub overrides: Vec<(Function, Option<String>)>,
    /// Other code files in the type's directory (with what each is for, when known).
    pub code: Vec<String>,
}

impl PlugInfo {
    pub fn of_bundled(plug: &Plug) -> PlugInfo {
        PlugInfo {
            file: plug.file.map(str::to_owned),
            overrides: plug.overrides.iter().map(|(f, what)| (*f, Some((*what).to_owned()))).collect(),
            code: plug.code.iter().map(|c| (*c).to_owned()).collect(),
        }
    }

    /// Whether the plug overrides `f`.
    pub fn overrides(&self, f: Function) -> bool {
        self.overrides.iter().any(|(g, _)| *g == f)
    }

    /// The plug of the type in `dir`: `_delivery.sh` scanned for `agmsg_delivery_*` definitions (none
    /// for the one `agmsg-host shim types` writes), and the directory's other code files (by
    /// extension), sorted. Unreadable files are skipped.
    pub fn scan(dir: &Path) -> PlugInfo {
        let mut info = PlugInfo::default();
        if let Ok(bytes) = crate::plugin::tree::read_below(dir, "_delivery.sh", crate::plugin::MAX_TEXT_BYTES) {
            info.file = Some("_delivery.sh".to_owned());
            let text = String::from_utf8_lossy(&bytes);
            // agmsg-host's own shim forwards every function to agmsg-host: it overrides nothing.
            if !crate::agent::shim_text::is_shim(&text) {
                info.overrides = Function::ALL.into_iter().filter(|f| defines(&text, &f.shell_name())).map(|f| (f, None)).collect();
            }
        }
        if let Ok(entries) = std::fs::read_dir(dir) {
            let mut code: Vec<String> = entries
                .filter_map(|e| {
                    let e = e.ok()?;
                    let name = e.file_name().into_string().ok()?;
                    let is_code = [".sh", ".js", ".mjs", ".cjs", ".py"].iter().any(|ext| name.ends_with(ext));
                    (is_code && name != "_delivery.sh" && e.file_type().ok()?.is_file()).then_some(name)
                })
                .collect();
            code.sort();
            info.code = code;
        }
        info
    }
}

/// Whether shell `text` defines function `name` (`name() {`, `name () {`, `function name {`,
/// `function name() {`) at the start of a line.
fn defines(text: &str, name: &str) -> bool {
    text.lines().any(|line| {
        let line = line.trim_start();
        let (keyword, line) = match line.strip_prefix("function") {
            Some(rest) if rest.starts_with([' ', '\t']) => (true, rest.trim_start()),
            _ => (false, line),
        };
        let Some(rest) = line.strip_prefix(name) else { return false };
        if rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            return false;
        }
        let rest = rest.trim_start();
        rest.starts_with('(') || (keyword && (rest.starts_with('{') || rest.is_empty()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_overridden_functions() {
        let text = "# agmsg_delivery_status() in a comment\n\
                    agmsg_delivery_apply() {\n  rulefile_apply \"$@\"\n}\n\
                    function agmsg_delivery_on_enable {\n:\n}\n\
                    function agmsg_delivery_on_disable() { :; }\n\
                      agmsg_delivery_stop_directive () {\n:\n}\n\
                    agmsg_delivery_runtime_status_helper() { :; }\n\
                    x=agmsg_delivery_runtime_status\n";
        assert!(defines(text, "agmsg_delivery_apply"));
        assert!(defines(text, "agmsg_delivery_on_enable"));
        assert!(defines(text, "agmsg_delivery_on_disable"));
        assert!(defines(text, "agmsg_delivery_stop_directive"));
        assert!(!defines(text, "agmsg_delivery_status"), "a comment is no definition");
        assert!(!defines(text, "agmsg_delivery_runtime_status"), "another name, or a use, is no definition");
    }

    #[test]
    fn scans_a_type_dir() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("type.conf"), "name=x\n").unwrap();
        std::fs::write(
            dir.path().join("_delivery.sh"),
            "agmsg_delivery_apply() { rulefile_apply \"$@\"; }\nagmsg_delivery_status() { :; }\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("_transcript-exists.sh"), "").unwrap();
        std::fs::write(dir.path().join("launch.mjs"), "").unwrap();
        std::fs::create_dir(dir.path().join("dir.sh")).unwrap();
        let info = PlugInfo::scan(dir.path());
        assert_eq!(info.file.as_deref(), Some("_delivery.sh"));
        assert_eq!(info.overrides, [(Function::Apply, None), (Function::Status, None)]);
        assert_eq!(info.code, ["_transcript-exists.sh", "launch.mjs"]);
        assert_eq!(PlugInfo::scan(&dir.path().join("missing")), PlugInfo::default());
    }
}
