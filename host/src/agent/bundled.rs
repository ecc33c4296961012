//! The ten agent types agmsg 1.2.1 ships, as data built into this binary: each one's `type.conf`
//! (values exactly as agent-types-reference §2 lists them), its command template, and what its code
//! plug (`_delivery.sh` and friends, which agmsg-host never runs) overrides in agmsg's delivery
//! Template Method (reference §4). The files live in `types/<name>/`. Also the bundled delivery plug
//! components (`drivers/agent-*`), as they run ([`plug`]).

use std::borrow::Cow;
use std::path::Path;

use super::plug::{Behaviour, Function, Plug, SideEffects};
use crate::axis::Axis;
use crate::capabilities::Capabilities;
use crate::plugin::manifest::{MANIFEST_FILE, PluginManifest};
use crate::runtime::DriverSource;

/// A type built into this binary.
pub struct BundledType {
    pub name: &'static str,
    /// Its `type.conf`.
    pub conf: &'static str,
    /// Its template files: (path relative to the type dir, text).
    pub files: &'static [(&'static str, &'static str)],
    /// What agmsg's plug for it does.
    pub plug: Plug,
    /// How its delivery file is written (agmsg's plug for it, else agmsg's default).
    pub behaviour: Behaviour,
    /// What its plug does beyond the file.
    pub side_effects: SideEffects,
}

macro_rules! conf {
    ($name:literal) => {
        include_str!(concat!("types/", $name, "/type.conf"))
    };
}

macro_rules! template {
    ($name:literal) => {
        &[("template.md", include_str!(concat!("types/", $name, "/template.md")))]
    };
}

use Function::*;

const RULEFILE_STATUS: (Function, &str) = (Status, "rulefile_status: the rule file present means turn");

/// The bundled types, sorted by name.
pub const TYPES: &[BundledType] = &[
    BundledType {
        name: "agmsg-app",
        behaviour: Behaviour::Manual,
        side_effects: SideEffects::None,
        conf: conf!("agmsg-app"),
        files: &[],
        plug: Plug { file: None, overrides: &[], code: &[] },
    },
    BundledType {
        name: "antigravity",
        behaviour: Behaviour::RuleFile,
        side_effects: SideEffects::None,
        conf: conf!("antigravity"),
        files: template!("antigravity"),
        plug: Plug {
            file: Some("_delivery.sh"),
            overrides: &[
                (
                    Apply,
                    "rulefile_apply: turn/both write a PostToolUse check-inbox rule to hooks_file (shared with gemini); monitor falls back to turn; off removes it",
                ),
                RULEFILE_STATUS,
            ],
            code: &[],
        },
    },
    BundledType {
        name: "claude-code",
        behaviour: Behaviour::JsonHooks,
        side_effects: SideEffects::None,
        conf: conf!("claude-code"),
        files: template!("claude-code"),
        plug: Plug {
            file: Some("_delivery.sh"),
            overrides: &[(
                OnEnable,
                "prints a notice and an AGMSG-DIRECTIVE to invoke the Monitor tool with watch.sh <session-derived instance id> <project> <type>, skipped while the pidfile's watcher is alive",
            )],
            code: &["_transcript-exists.sh: resume gate, checks ~/.claude/projects/<munged project>/<uuid>.jsonl"],
        },
    },
    BundledType {
        name: "codex",
        behaviour: Behaviour::JsonHooks,
        side_effects: SideEffects::CodexBridge,
        conf: conf!("codex"),
        files: template!("codex"),
        plug: Plug {
            file: Some("_delivery.sh"),
            overrides: &[
                (
                    OnEnable,
                    "prints the codex shell-function setup (codex-shim-install.sh), runs a Node preflight (AGMSG_NODE), prints a restart-Codex notice",
                ),
                (
                    OnDisable,
                    "stops this identity's codex bridge and the per-project codex app-server (pid files checked against their cmdline), removes their run/ files",
                ),
                (
                    RuntimeStatus,
                    "per-identity bridge liveness, why a bridge is missing, a loaded-thread probe of the app-server, a note when the PATH shim is shadowed",
                ),
            ],
            code: &[
                "_session-start.sh: writes the bridge request (type, thread id, app-server URL)",
                "_transcript-exists.sh: resume gate for a recorded codex thread",
                "codex-monitor.sh, codex-shim.sh, codex-shim-install.sh: the pseudo-monitor (a loopback codex app-server, codex --remote)",
                "codex-bridge-launcher.sh, codex-bridge.js, watch-once.sh: the Node bridge that injects turns for new messages",
                "codex-record-session.sh: records the role-to-thread seat used for resume",
            ],
        },
    },
    BundledType {
        name: "copilot",
        behaviour: Behaviour::Copilot,
        side_effects: SideEffects::None,
        conf: conf!("copilot"),
        files: template!("copilot"),
        plug: Plug {
            file: Some("_delivery.sh"),
            overrides: &[
                (
                    Apply,
                    "turn writes {\"version\":1,\"hooks\":{\"Stop\":[{\"type\":\"command\",\"bash\":<check-inbox>,\"timeoutSec\":30}]}} to hooks_file; off removes it",
                ),
                RULEFILE_STATUS,
            ],
            code: &[],
        },
    },
    BundledType {
        name: "cursor",
        behaviour: Behaviour::Cursor,
        side_effects: SideEffects::None,
        conf: conf!("cursor"),
        files: template!("cursor"),
        plug: Plug {
            file: Some("_delivery.sh"),
            overrides: &[
                (Apply, "turn writes an alwaysApply rule with a PostToolUse check-inbox instruction to hooks_file; off removes it"),
                RULEFILE_STATUS,
            ],
            code: &[],
        },
    },
    BundledType {
        name: "gemini",
        behaviour: Behaviour::RuleFile,
        side_effects: SideEffects::None,
        conf: conf!("gemini"),
        files: template!("gemini"),
        plug: Plug {
            file: Some("_delivery.sh"),
            overrides: &[
                (
                    Apply,
                    "rulefile_apply: turn/both write a PostToolUse check-inbox rule to hooks_file (shared with antigravity); monitor falls back to turn; off removes it",
                ),
                RULEFILE_STATUS,
            ],
            code: &[],
        },
    },
    BundledType {
        name: "grok-build",
        behaviour: Behaviour::GrokBuild,
        side_effects: SideEffects::None,
        conf: conf!("grok-build"),
        files: template!("grok-build"),
        plug: Plug {
            file: Some("_delivery.sh"),
            overrides: &[
                (
                    Apply,
                    "a rule with a mode marker: turn self-polls with inbox.sh; monitor has the monitor tool run watch.sh \"${GROK_SESSION_ID:--}\"",
                ),
                (Status, "reads the rule's mode marker"),
                (OnEnable, "a grok-flavoured monitor directive"),
                (StopDirective, "kill_command_or_subagent"),
            ],
            code: &[],
        },
    },
    BundledType {
        name: "hermes",
        behaviour: Behaviour::Manual,
        side_effects: SideEffects::ManualOff,
        conf: conf!("hermes"),
        files: template!("hermes"),
        plug: Plug {
            file: Some("_delivery.sh"),
            overrides: &[
                (Apply, "nothing"),
                (Status, "always mode: off"),
                (OnDisable, "prints a notice; deliberately does not kill watchers"),
            ],
            code: &[],
        },
    },
    BundledType {
        name: "opencode",
        behaviour: Behaviour::Opencode,
        side_effects: SideEffects::None,
        conf: conf!("opencode"),
        files: template!("opencode"),
        plug: Plug {
            file: Some("_delivery.sh"),
            overrides: &[
                (
                    Apply,
                    "markdown rule with a first-line mode marker; monitor has the sentinel_monitor tool run watch.sh \"${SENTINEL_SESSION_ID:--}\" <project> opencode, with a turn fallback",
                ),
                (Status, "reads the rule's mode marker"),
            ],
            code: &[],
        },
    },
];

/// The bundled type `name`.
pub fn get(name: &str) -> Option<&'static BundledType> {
    TYPES.iter().find(|t| t.name == name)
}

/// The bundled plug of type `name`, as it runs: no filesystem, no programs, the log, and the variables
/// its embedded `agmsg-driver.toml` declares (a plug package's manifest, read as a plugin's is), if it
/// ships one.
pub fn plug(name: &str) -> Option<DriverSource> {
    crate::bundled::of(Axis::Types).find(|d| d.name == name).map(|d| DriverSource {
        name: d.name.to_owned(),
        sha256: d.sha256.to_owned(),
        wasm: Cow::Borrowed(d.wasm),
        path: None,
        capabilities: d.manifest.map_or_else(Capabilities::default, |text| {
            let manifest = PluginManifest::parse(text, Path::new(MANIFEST_FILE)).unwrap_or_else(|e| panic!("bundled plug {name}: {e}"));
            assert!(manifest.axis == Axis::Types && manifest.name == name, "bundled plug {name}: its manifest names another driver");
            manifest.capabilities()
        }),
        settings: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use crate::capabilities::Capability;

    /// A bundled plug is granted what its manifest declares and nothing else: claude-code's and
    /// grok-build's their session variable, cursor's nothing.
    #[test]
    fn bundled_plugs_get_only_their_declared_variables() {
        let env = |name: &str| super::plug(name).unwrap_or_else(|| panic!("{name} is bundled")).capabilities.0;
        assert_eq!(env("claude-code"), [Capability::Env { name: "CLAUDE_CODE_SESSION_ID".into() }]);
        assert_eq!(env("grok-build"), [Capability::Env { name: "GROK_SESSION_ID".into() }]);
        assert_eq!(env("cursor"), []);
        assert!(super::plug("codex").is_none());
    }
}
