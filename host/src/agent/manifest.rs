//! An agent type's manifest, `type.conf`: the reader is the package format's
//! ([`crate::plugin::conf`], agmsg's `agmsg_type_get` exactly); here, what the types axis knows of its
//! keys: which ones agmsg reads and their defaults, the path rules (`template=`, `spawn=` relative,
//! `hooks_file` a runtime's delivery location, [`check_hooks_file`]), agmsg's spawn gate, and the check
//! plugin/ runs on a type directory ([`TypeDirs`]).

use std::path::Path;

use crate::axis::Axis;
use crate::error::HostError;
use crate::plugin::DirPackage;
pub use crate::plugin::conf::{KeyLine, MAX_MANIFEST_BYTES, Manifest, is_key, is_space};

/// An agent type's manifest file: the types axis's package manifest ([`Axis::dir_manifest`]).
pub const TYPE_CONF: &str = match Axis::Types.dir_manifest() {
    Some(file) => file,
    None => panic!("the types axis names its package manifest"),
};

/// The types axis's part in reading an agent type's directory as a plugin (the plugin registry, install,
/// trust, inspect): `type.conf`'s `template=` and `spawn=` relative, without `..`, and its
/// `hooks_file=` a runtime's delivery location that is no other type's ([`check_hooks_file`]).
pub struct TypeDirs;

impl DirPackage for TypeDirs {
    fn axis(&self) -> Axis {
        Axis::Types
    }

    fn check(&self, name: &str, conf: &Manifest, path: &Path) -> Result<(), HostError> {
        for key in ["template", "spawn"] {
            check_relative(key, conf.value(key)).map_err(|e| e.context(path.display()))?;
        }
        // Where delivery would write (and delete, for `off`): a runtime's delivery file, not another type's.
        let hooks_file = conf.value("hooks_file");
        if !hooks_file.is_empty() {
            check_hooks_file(name, hooks_file).map_err(|e| e.context(path.display()))?;
        }
        Ok(())
    }

    fn named_files<'m>(&self, conf: &'m Manifest) -> Vec<(&'static str, &'m str)> {
        Some(("template", conf.value("template"))).into_iter().filter(|(_, file)| !file.is_empty()).collect()
    }

    fn shadows(&self, name: &str) -> Option<&'static str> {
        super::bundled::get(name).map(|t| t.name)
    }
}

/// Whether spawn may launch a type with this manifest: `spawnable=yes` or a non-empty `spawn=`
/// (agmsg's gate; here, below the registry, so listing a type does not reach up into spawn's argv).
pub fn spawnable(conf: &Manifest) -> bool {
    conf.value("spawnable") == "yes" || !conf.value("spawn").is_empty()
}

/// Check a manifest path value (`template=`, `spawn=`, `hooks_file=`) the way agmsg does: relative to
/// its base, never absolute and never containing `..` (agmsg's `case /*|*..*`); refused otherwise.
pub fn check_relative(key: &str, value: &str) -> Result<(), HostError> {
    if value.starts_with('/') || value.contains("..") {
        return Err(HostError::refused(format!("invalid {key} {:?}: must be relative, without '..'", value)));
    }
    Ok(())
}

/// What an agent runtime does with a delivery file, by where it is ([`hooks_location`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HooksKind {
    /// JSON the runtime reads hook entries from (`hooks.json`, `hooks/<name>.json`,
    /// `settings.local.json`): it runs their commands.
    Commands,
    /// A rule file (`rules/<name>.md` or `.mdc`) the runtime gives its agent as instructions.
    Rules,
}

/// Where a `hooks_file` is: the runtime's dot-directory (without the dot) and what kind of file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HooksLocation<'a> {
    pub runtime: &'a str,
    pub kind: HooksKind,
}

/// Dot-directories that belong to tools, not agent runtimes: a file under them can be run or trusted
/// by something else (git's config and hooks, an editor's tasks, a dev container, git hook managers).
const NOT_RUNTIMES: &[&str] = &["git", "vscode", "idea", "devcontainer", "husky", "direnv", "cargo", "venv", "config"];

/// A lowercase name part: `[a-z0-9][a-z0-9_-]*`, at most 64 characters.
fn is_lower_name(s: &str) -> bool {
    s.len() <= 64
        && s.bytes().next().is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// The one rule for where a type's `hooks_file` may be (delivery writes it, and deletes it for `off`):
/// an agent runtime's own delivery location in the project, never a source file, a build or CI file,
/// or anything under `.git/`. Exactly one of
///
/// - `.<runtime>/hooks.json`, `.<runtime>/hooks/<name>.json`, `.<runtime>/settings.local.json`
///   (hook entries the runtime runs), or
/// - `.<runtime>/rules/<name>.md`, `.<runtime>/rules/<name>.mdc` (a rule its agent reads),
///
/// with `<runtime>` and `<name>` lowercase (`[a-z0-9][a-z0-9_-]*`) and `<runtime>` not a tool's
/// directory ([`NOT_RUNTIMES`]: `.git`, `.vscode`, ...). agmsg's types' files are all of this form.
pub fn hooks_location(file: &str) -> Result<HooksLocation<'_>, HostError> {
    let refused = || {
        HostError::refused(format!(
            "hooks_file \"{}\" is not an agent runtime's delivery file: it must be .<runtime>/hooks.json, .<runtime>/hooks/<name>.json, \
             .<runtime>/settings.local.json or .<runtime>/rules/<name>.md|.mdc (<runtime> and <name> lowercase letters, digits, '-', '_'; \
             not .{})",
            crate::display::line(file),
            NOT_RUNTIMES.join(", .")
        ))
    };
    let parts: Vec<&str> = file.split('/').collect();
    let runtime = parts[0].strip_prefix('.').filter(|r| is_lower_name(r) && !NOT_RUNTIMES.contains(r)).ok_or_else(refused)?;
    let kind = match parts[1..] {
        ["hooks.json" | "settings.local.json"] => HooksKind::Commands,
        ["hooks", name] if name.strip_suffix(".json").is_some_and(is_lower_name) => HooksKind::Commands,
        ["rules", name] if name.strip_suffix(".md").or_else(|| name.strip_suffix(".mdc")).is_some_and(is_lower_name) => HooksKind::Rules,
        _ => return Err(refused()),
    };
    Ok(HooksLocation { runtime, kind })
}

/// The bundled type `t`'s `hooks_file` (empty: none).
fn bundled_hooks_file(t: &super::bundled::BundledType) -> String {
    Manifest::parse(t.conf.as_bytes(), t.name).map(|m| m.value("hooks_file").to_owned()).unwrap_or_default()
}

/// The bundled types other than `name` whose delivery file `file` is: a type named `name` may not
/// write there (it would edit their runtime's settings), unless it replaces the bundled type of its
/// own name and keeps that one's file (gemini and antigravity share theirs).
pub fn hooks_file_owners(name: &str, file: &str) -> Vec<&'static str> {
    if super::bundled::get(name).is_some_and(|own| bundled_hooks_file(own) == file) {
        return Vec::new();
    }
    super::bundled::TYPES.iter().filter(|t| t.name != name && bundled_hooks_file(t) == file).map(|t| t.name).collect()
}

/// A type's `hooks_file` as delivery, install, trust and the types suite accept it: a runtime's
/// delivery location ([`hooks_location`]) and not a bundled type's file unless the type replaces that
/// type ([`hooks_file_owners`]). Checked wherever a type may come from, and again before delivery
/// opens the file, so a type trusted before this rule cannot write there either.
pub fn check_hooks_file<'a>(name: &str, file: &'a str) -> Result<HooksLocation<'a>, HostError> {
    let location = hooks_location(file)?;
    let owners = hooks_file_owners(name, file);
    if !owners.is_empty() {
        return Err(HostError::refused(format!(
            "hooks_file {} is bundled {}'s delivery file: type {} may not write into it (only a type named {} replaces it)",
            crate::display::line(file),
            owners.join(" and "),
            crate::display::line(name),
            owners.join(" or ")
        )));
    }
    Ok(location)
}

/// What an agent runtime's dot-directory is, for people (agmsg's runtimes); `None` for others.
fn runtime_label(runtime: &str) -> Option<&'static str> {
    Some(match runtime {
        "claude" => "Claude Code",
        "codex" => "Codex",
        "github" => "GitHub Copilot",
        "cursor" => "Cursor",
        "agent" => "Gemini CLI and Antigravity",
        "opencode" => "OpenCode",
        "grok" => "Grok Build",
        _ => return None,
    })
}

impl HooksLocation<'_> {
    /// What delivery writes into `file` (this location) for an external type and what its runtime
    /// then does, in one sentence for a consent prompt. Without a plug component an external type gets
    /// agmsg's default, JSON hook entries, whatever the file; a plug only picks among agmsg-host's own
    /// forms (those entries, or for a rule file agmsg's rule).
    pub fn effect(&self, file: &str, plug: bool) -> String {
        let file = crate::display::line(file);
        let runtime = match runtime_label(self.runtime) {
            Some(label) => label.to_owned(),
            None => format!("the agent runtime that reads .{}/", crate::display::line(self.runtime)),
        };
        match self.kind {
            HooksKind::Commands => format!(
                "writes agmsg's hook commands into {file}, which {runtime} runs as shell commands at its session events, with your rights"
            ),
            HooksKind::Rules if plug => {
                format!("writes agmsg's rule (or its hook entries) into {file}, which {runtime} gives its agent as standing instructions")
            }
            HooksKind::Rules => format!(
                "writes agmsg's hook entries (JSON naming agmsg's scripts) into {file}, which {runtime} gives its agent as standing instructions"
            ),
        }
    }
}

/// What agmsg does with a key, and what it reads as when missing.
pub struct KeyInfo {
    pub key: &'static str,
    /// The value agmsg uses when the key is missing (`None`: empty, nothing).
    pub default: Option<&'static str>,
    pub meaning: &'static str,
}

/// Every key agmsg 1.2.1 reads (agent-types-reference §2), in the reference's order.
pub const KEYS: &[KeyInfo] = &[
    KeyInfo { key: "name", default: None, meaning: "the type name (= its directory); documentation only" },
    KeyInfo { key: "template", default: None, meaning: "the /agmsg command template, relative to the type dir (becomes SKILL.md)" },
    KeyInfo { key: "detect", default: None, meaning: "env variables whose presence selects this type; `explicit`: never auto-detected" },
    KeyInfo { key: "detect_proc", default: None, meaning: "ancestor process-name globs that select this type" },
    KeyInfo { key: "cli", default: None, meaning: "launch command: the first word is the program, the rest a fixed prefix" },
    KeyInfo { key: "spawnable", default: None, meaning: "`yes` lets spawn launch the type" },
    KeyInfo { key: "spawn", default: None, meaning: "a .mjs node launcher beside the manifest; also makes the type spawnable" },
    KeyInfo { key: "model_arg", default: None, meaning: "the flag --model passes the model with; without it --model is refused" },
    KeyInfo { key: "prompt_arg", default: None, meaning: "flag emitted just before the actas prompt (missing: bare positional)" },
    KeyInfo { key: "cmd_prefix", default: Some("/"), meaning: "the skill invocation prefix: prompt = <prefix><skill> actas <agent>" },
    KeyInfo { key: "name_arg", default: None, meaning: "session display-name flag, emitted as <name_arg> <team>-<agent>" },
    KeyInfo { key: "resume_arg", default: None, meaning: "flag or subcommand emitted right after cli with the recorded session id" },
    KeyInfo {
        key: "spawn_unset_env",
        default: None,
        meaning: "env variables the boot script unsets (a child must not inherit its parent's session)",
    },
    KeyInfo { key: "vendor", default: None, meaning: "token for <project>_<role>_<vendor> role derivation" },
    KeyInfo { key: "hooks_file", default: None, meaning: "project-relative delivery file (absolute paths and '..' refused)" },
    KeyInfo { key: "monitor", default: None, meaning: "`no`: spawn skips the readiness wait" },
    KeyInfo { key: "delivery_modes", default: Some("monitor turn both off"), meaning: "the delivery modes `delivery set` accepts" },
    KeyInfo {
        key: "stop_output",
        default: Some("plain"),
        meaning: "`json`: the turn-end inbox check prints {\"continue\":true,\"systemMessage\":...}",
    },
    KeyInfo { key: "hook_windows_wrap", default: None, meaning: "`yes`: JSON hook entries also get a Windows commandWindows variant" },
    KeyInfo { key: "role_overlay_profile_args", default: None, meaning: "profile flags a role overlay may use (codex: -p --profile)" },
    KeyInfo { key: "role_overlay_profile_home_env", default: None, meaning: "env variable naming the profile home (codex: CODEX_HOME)" },
    KeyInfo {
        key: "role_overlay_profile_default_dir",
        default: None,
        meaning: "profile home under $HOME when that variable is unset (codex: .codex)",
    },
    KeyInfo { key: "role_overlay_profile_suffix", default: None, meaning: "profile file suffix (codex: .config.toml)" },
];

/// What agmsg does with `key`, if it reads it.
pub fn key_info(key: &str) -> Option<&'static KeyInfo> {
    KEYS.iter().find(|k| k.key == key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(text: &str) -> Manifest {
        Manifest::parse(text.as_bytes(), "test").unwrap()
    }

    #[test]
    fn first_matching_line_trimmed_and_unquoted() {
        let conf = "# cli=commented\n  cli \t=  \"claude --x\"  \ncli=second\ndetect=A  B\tC\nempty=\nquote=\"\nq2=\"\"\nhalf=\"abc\n";
        let m = m(conf);
        assert_eq!(m.get("cli"), Some("claude --x"));
        assert_eq!(m.entry("cli").unwrap().line, 2);
        assert_eq!(m.words("detect"), ["A", "B", "C"]);
        assert_eq!(m.get("empty"), Some(""));
        assert_eq!(m.get("missing"), None);
        assert_eq!(m.get_or("missing", "dflt"), "dflt");
        assert_eq!(m.get_or("empty", "dflt"), "");
        assert_eq!(m.get("quote"), Some("\""));
        assert_eq!(m.get("q2"), Some(""));
        assert_eq!(m.get("half"), Some("\"abc"));
        assert!(m.has("detect", "B"));
        assert!(!m.has("detect", "D"));
    }

    #[test]
    fn never_executed_and_anchored() {
        let m = m("cli=$(touch /tmp/pwned)\nxdetect=NO\ndetect_proc=codex codex-*\nname = a=b\n");
        assert_eq!(m.get("cli"), Some("$(touch /tmp/pwned)"));
        assert_eq!(m.get("detect"), None, "detect_proc and xdetect are other keys");
        assert_eq!(m.get("name"), Some("a=b"), "everything after the first '='");
        assert_eq!(m.words("detect_proc"), ["codex", "codex-*"]);
    }

    #[test]
    fn crlf_and_whitespace() {
        let m = m("cli=claude\r\nmonitor=no\r\n");
        assert_eq!(m.get("cli"), Some("claude"));
        assert_eq!(m.get("monitor"), Some("no"));
    }

    #[test]
    fn keys_are_validated() {
        let m = m("a.b=1\nab=2\n");
        assert_eq!(m.get("a.b"), None, "not a key: never a pattern");
        assert_eq!(m.get("a.*"), None);
        assert!(is_key("role_overlay_profile_args"));
        for bad in ["", "a-b", "a b", "a=", ".*", "ké"] {
            assert!(!is_key(bad), "{bad:?}");
        }
    }

    #[test]
    fn entries_and_stray_lines() {
        let m = m("# c\nname=x\n\ncli=a\ncli=b\nnot a key line\n  spaced key=1\n");
        let e = m.entries();
        assert_eq!(
            e.iter().map(|e| (e.key, e.value, e.line, e.ignored)).collect::<Vec<_>>(),
            [("name", "x", 2, false), ("cli", "a", 4, false), ("cli", "b", 5, true)]
        );
        assert_eq!(m.stray_lines(), [(6, "not a key line"), (7, "  spaced key=1")]);
    }

    #[test]
    fn malformed() {
        assert!(Manifest::parse(b"cli=\xff\n", "x").unwrap_err().message.contains("not UTF-8"));
        assert!(Manifest::parse(b"cli=a\0b\n", "x").unwrap_err().message.contains("NUL"));
    }

    #[test]
    fn relative_paths() {
        assert!(check_relative("template", "template.md").is_ok());
        assert!(check_relative("template", "sub/t.md").is_ok());
        assert_eq!(check_relative("template", "/etc/passwd").map_err(|e| e.class), Err(crate::error::ExitClass::Refused));
        assert!(check_relative("template", "../x.md").is_err());
        assert!(check_relative("template", "a..b").is_err(), "agmsg refuses any '..'");
    }

    #[test]
    fn hooks_file_locations() {
        // agmsg's own types' files are all of the form.
        for t in crate::agent::bundled::TYPES {
            let file = bundled_hooks_file(t);
            if !file.is_empty() {
                check_hooks_file(t.name, &file).unwrap_or_else(|e| panic!("{}: {e}", t.name));
            }
        }
        let kinds = [
            (".claude/settings.local.json", "claude", HooksKind::Commands),
            (".codex/hooks.json", "codex", HooksKind::Commands),
            (".github/hooks/agmsg.json", "github", HooksKind::Commands),
            (".kiro/hooks/agmsg_2.json", "kiro", HooksKind::Commands),
            (".cursor/rules/agmsg.mdc", "cursor", HooksKind::Rules),
            (".agent/rules/agmsg.md", "agent", HooksKind::Rules),
        ];
        for (file, runtime, kind) in kinds {
            assert_eq!(hooks_location(file), Ok(HooksLocation { runtime, kind }), "{file}");
        }
        for bad in [
            ".git/config",
            ".git/hooks.json",
            ".git/hooks/pre-commit.json",
            ".vscode/settings.local.json",
            ".vscode/hooks.json",
            "src/main.rs",
            "Makefile",
            ".envrc",
            ".github/workflows/ci.yml",
            ".github/workflows/hooks.json",
            ".vscode/tasks.json",
            "hooks.json",
            ".claude/settings.json",
            ".claude/hooks/x.sh",
            ".claude/rules/x.sh",
            ".Claude/hooks.json",
            ".claude/rules/Agmsg.md",
            ".claude//hooks.json",
            "./.claude/hooks.json",
            ".claude/hooks.json/",
            "../.claude/hooks.json",
            "/.claude/hooks.json",
            "..claude/hooks.json",
            ".-x/hooks.json",
            ".claude/rules/.md",
            ".claude/rules/a.b.md",
            ".claude/x/rules/a.md",
            "",
            ".",
            ".claude/hooks/a\nb.json",
            ".clau\u{202e}de/hooks.json",
        ] {
            let e = hooks_location(bad).unwrap_err().message;
            assert!(e.contains("is not an agent runtime's delivery file"), "{bad:?}: {e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }

    #[test]
    fn a_bundled_types_file_is_its_own() {
        assert_eq!(hooks_file_owners("kiro", ".claude/settings.local.json"), ["claude-code"]);
        assert_eq!(hooks_file_owners("codex", ".claude/settings.local.json"), ["claude-code"], "another bundled name is no owner either");
        assert!(hooks_file_owners("claude-code", ".claude/settings.local.json").is_empty(), "a replacement keeps its file");
        assert_eq!(hooks_file_owners("kiro", ".agent/rules/agmsg.md"), ["antigravity", "gemini"]);
        assert!(hooks_file_owners("gemini", ".agent/rules/agmsg.md").is_empty(), "shared by gemini and antigravity");
        assert!(hooks_file_owners("antigravity", ".agent/rules/agmsg.md").is_empty());
        assert!(hooks_file_owners("kiro", ".kiro/hooks.json").is_empty());
        let e = check_hooks_file("kiro", ".claude/settings.local.json").unwrap_err().message;
        assert!(e.contains("bundled claude-code's delivery file") && e.contains("type kiro may not write into it"), "{e}");
        assert!(check_hooks_file("claude-code", ".codex/hooks.json").unwrap_err().message.contains("bundled codex's"));
        let effect = check_hooks_file("claude-code", ".claude/settings.local.json").unwrap().effect(".claude/settings.local.json", false);
        assert_eq!(
            effect,
            "writes agmsg's hook commands into .claude/settings.local.json, which Claude Code runs as shell commands at its session events, with your rights"
        );
        let effect = hooks_location(".kiro/rules/agmsg.md").unwrap().effect(".kiro/rules/agmsg.md", true);
        assert_eq!(
            effect,
            "writes agmsg's rule (or its hook entries) into .kiro/rules/agmsg.md, which the agent runtime that reads .kiro/ gives its agent as standing instructions"
        );
        let effect = hooks_location(".kiro/rules/agmsg.md").unwrap().effect(".kiro/rules/agmsg.md", false);
        assert!(
            effect.starts_with("writes agmsg's hook entries (JSON naming agmsg's scripts) into .kiro/rules/agmsg.md"),
            "agmsg's default for a type without a plug: {effect}"
        );
    }

    #[test]
    fn agrees_with_the_contract_reader() {
        let conf = "# name=commented\nname=tmux\n priority = \"20\"\nbackend=tmux pane/window\nbackend=ignored\n";
        let m = m(conf);
        for key in ["name", "priority", "backend", "missing"] {
            assert_eq!(m.get(key), agmsg_contract::terminal_conf::value(conf, key), "{key}");
        }
    }

    /// The bundled types' manifests (`bundled.rs`), read as agmsg reads them.
    #[test]
    fn ten_types_sorted_each_named_as_its_directory() {
        let names: Vec<&str> = super::super::bundled::TYPES.iter().map(|t| t.name).collect();
        assert_eq!(
            names,
            ["agmsg-app", "antigravity", "claude-code", "codex", "copilot", "cursor", "gemini", "grok-build", "hermes", "opencode"]
        );
        for t in super::super::bundled::TYPES {
            let m = Manifest::parse(t.conf.as_bytes(), t.name).unwrap();
            assert_eq!(m.get("name"), Some(t.name));
            assert!(m.stray_lines().is_empty(), "{}", t.name);
            assert!(m.entries().iter().all(|e| !e.ignored), "{}: a key set twice", t.name);
            // The template each names is bundled beside it.
            match m.get("template") {
                Some(file) => assert!(t.files.iter().any(|(f, text)| *f == file && text.contains("__SKILL_NAME__")), "{}", t.name),
                None => assert_eq!(t.name, "agmsg-app"),
            }
            // Every key is one agmsg reads.
            for e in m.entries() {
                assert!(key_info(e.key).is_some(), "{}: {}", t.name, e.key);
            }
        }
    }
}
