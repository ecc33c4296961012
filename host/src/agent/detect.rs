//! Which agent runtime is calling: agmsg's `detect-cli-type.sh`, with its precedence hazard fixed.
//!
//! The evidence is the manifests' data: `detect=` variables and `detect_proc=` process-name globs.
//! The rules, first that fires wins:
//!
//! 1. **Session variable.** A `detect=` variable that is set (non-empty) and is a runtime's own
//!    session variable (`CLAUDE_CODE_SESSION_ID`, `CODEX_THREAD_ID`, `GROK_SESSION_ID`, `GEMINI_CLI`).
//!    Types are tried in sorted name order; `detect=explicit` types never match. When several types'
//!    session variables are set (a runtime started from another one's shell inherits its variables),
//!    the one whose process is the nearest ancestor wins; if no ancestor settles it, the first in
//!    sorted order (agmsg's order).
//! 2. **Process tree.** Walking up from the caller (at most 10 processes, never pid 1), the first
//!    ancestor whose name matches a type's `detect_proc=` glob; at one ancestor, types in sorted
//!    order. A process's name is its kernel name (`/proc/<pid>/comm`, what `ps -o comm=` shows) and,
//!    as that is cut at 15 bytes, also the basename of its `argv[0]`.
//! 3. **Credential.** A `detect=` variable that is a credential other tools share too (a name ending
//!    in `_API_KEY`, `_KEY`, `_TOKEN`, `_SECRET`, `_PASSWORD` or `_CREDENTIALS`, such as
//!    `GEMINI_API_KEY`, which users export for SDKs), and any variable of a `detect_fallback=` key
//!    (newer agmsg manifests list such weak variables there). Sorted type order.
//! 4. **Fallback**: `claude-code`.
//!
//! agmsg 1.2.1 checks every `detect=` variable first, in alphabetical type order, so a grok session in
//! a shell exporting `GEMINI_API_KEY` detects as gemini; here `GROK_SESSION_ID` (rule 1) or the `grok`
//! process (rule 2) beats the credential (rule 3).

use std::path::Path;

use serde::Serialize;

use super::registry::{AgentType, Registry};

/// At most this many processes are examined, starting with the caller.
pub const MAX_DEPTH: usize = 10;

/// What detection falls back to.
pub const FALLBACK: &str = "claude-code";

/// An ancestor whose name matched a type's `detect_proc` glob.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Ancestor {
    pub pid: u32,
    /// 0 for the caller, 1 for its parent, ...
    pub depth: usize,
    /// The name that matched.
    pub name: String,
    /// The glob it matched.
    pub pattern: String,
}

/// Which rule fired.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum Rule {
    /// Rule 1: a runtime's own session variable; `nearest` when several were set and an ancestor
    /// process chose among them.
    SessionVariable { variable: String, nearest: Option<Ancestor> },
    /// Rule 2: an ancestor process.
    Process { ancestor: Ancestor },
    /// Rule 3: a variable other tools share too.
    Credential { variable: String },
    /// Rule 4: nothing matched.
    Fallback,
}

/// The detected type, the rule that fired, and the evidence it outranked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Detection {
    #[serde(rename = "type")]
    pub agent_type: String,
    #[serde(flatten)]
    pub rule: Rule,
    /// Evidence that was present but lost, one sentence each.
    pub passed_over: Vec<String>,
}

impl Detection {
    /// One sentence saying why.
    pub fn explain(&self) -> String {
        match &self.rule {
            Rule::SessionVariable { variable, nearest: None } => {
                format!("rule 1 (session variable): {variable} is set, {}'s own session variable", self.agent_type)
            }
            Rule::SessionVariable { variable, nearest: Some(a) } => format!(
                "rule 1 (session variable): {variable} is set, {}'s own session variable; other types' session variables are set too, and {} is the nearest ancestor process ({} pid {}, depth {}, matches {:?})",
                self.agent_type, self.agent_type, a.name, a.pid, a.depth, a.pattern
            ),
            Rule::Process { ancestor: a } => format!(
                "rule 2 (process tree): ancestor {} (pid {}, depth {}) matches {}'s detect_proc glob {:?}",
                a.name, a.pid, a.depth, self.agent_type, a.pattern
            ),
            Rule::Credential { variable } => format!(
                "rule 3 (credential): {variable} is set; it selects {} only because no session variable or process did (other tools use it too)",
                self.agent_type
            ),
            Rule::Fallback => format!("rule 4 (fallback): no session variable, process or credential matched: {FALLBACK}"),
        }
    }
}

/// The process tree, as detection reads it.
pub trait Processes {
    /// `pid`'s parent, if it can be read.
    fn parent(&self, pid: u32) -> Option<u32>;
    /// `pid`'s names: its kernel name, then its `argv[0]` basename when that differs.
    fn names(&self, pid: u32) -> Vec<String>;
}

/// The process tree of this machine, from `/proc`.
pub struct ProcFs;

impl Processes for ProcFs {
    fn parent(&self, pid: u32) -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // `pid (comm) state ppid ...`: comm may hold spaces and parentheses, so split after the last ')'.
        let rest = &stat[stat.rfind(')')? + 1..];
        rest.split_whitespace().nth(1)?.parse().ok()
    }

    fn names(&self, pid: u32) -> Vec<String> {
        let mut names = Vec::new();
        if let Ok(comm) = std::fs::read(format!("/proc/{pid}/comm")) {
            let comm = String::from_utf8_lossy(&comm).trim_end_matches('\n').to_owned();
            if !comm.is_empty() {
                names.push(comm);
            }
        }
        if let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) {
            let argv0 = cmdline.split(|b| *b == 0).next().unwrap_or_default();
            let argv0 = String::from_utf8_lossy(argv0);
            if let Some(base) = Path::new(argv0.as_ref()).file_name().map(|b| b.to_string_lossy().into_owned())
                && !base.is_empty()
                && !names.contains(&base)
            {
                names.push(base);
            }
        }
        names
    }
}

/// Whether `name` is a shell variable name: `[A-Za-z_][A-Za-z0-9_]*`.
pub fn is_variable_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_') && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Whether `variable` names a credential other tools share too (rule 3), by its suffix.
pub fn is_credential(variable: &str) -> bool {
    ["_API_KEY", "_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_CREDENTIALS"].iter().any(|s| variable.ends_with(s))
}

/// The `detect_proc` glob of `t` that one of `names` matches (bash `case` semantics: `*`, `?`, `[...]`).
pub fn proc_match(t: &AgentType, names: &[String]) -> Option<String> {
    let options = glob::MatchOptions { case_sensitive: true, require_literal_separator: false, require_literal_leading_dot: false };
    t.manifest.words("detect_proc").into_iter().find_map(|pattern| {
        let glob = glob::Pattern::new(pattern).ok()?;
        names.iter().any(|n| glob.matches_with(n, options)).then(|| pattern.to_owned())
    })
}

/// The caller's process: the parent of the `agmsg-host` process the user started (this process's
/// parent, or in the resident server's child its client's).
pub fn caller() -> u32 {
    crate::server::caller_parent()
}

/// The processes detection examines, from `start` up: (pid, its names), at most [`MAX_DEPTH`], never
/// pid 1 (nor pid 0).
pub fn ancestry(procs: &dyn Processes, start: u32) -> Vec<(u32, Vec<String>)> {
    let mut out = Vec::new();
    let mut pid = start;
    while out.len() < MAX_DEPTH && pid > 1 {
        out.push((pid, procs.names(pid)));
        match procs.parent(pid) {
            Some(parent) if parent != pid => pid = parent,
            _ => break,
        }
    }
    out
}

/// Detect the calling runtime among `reg`'s types, from `env` (a variable's value, if set) and the
/// process tree from `start` (usually [`caller`]).
pub fn detect(reg: &Registry, env: &dyn Fn(&str) -> Option<String>, procs: &dyn Processes, start: u32) -> Detection {
    // A token that is not a variable name is never set (bash would stop on it: `invalid variable name`).
    let set = |v: &str| is_variable_name(v) && env(v).is_some_and(|value| !value.is_empty());
    let mut sessions: Vec<(&AgentType, String)> = Vec::new();
    let mut credentials: Vec<(&AgentType, String)> = Vec::new();
    for t in reg.types() {
        if t.explicit_only() && t.value("detect_fallback").is_empty() {
            continue;
        }
        let detect = if t.explicit_only() { Vec::new() } else { t.manifest.words("detect") };
        let mut weak: Vec<&str> = detect.iter().copied().filter(|v| is_credential(v)).collect();
        if t.value("detect_fallback") != "explicit" {
            weak.extend(t.manifest.words("detect_fallback"));
        }
        if let Some(v) = detect.iter().find(|v| !is_credential(v) && set(v)) {
            sessions.push((t, (*v).to_owned()));
        }
        if let Some(v) = weak.iter().find(|v| set(v)) {
            credentials.push((t, (*v).to_owned()));
        }
    }
    let tree = ancestry(procs, start);
    let mut passed_over = Vec::new();
    let credential_note = |winner: &str, passed_over: &mut Vec<String>| {
        for (t, v) in &credentials {
            if t.name != winner {
                passed_over.push(format!(
                    "{v} is set ({}), but it is a credential other tools share: weaker than a session variable or a process",
                    t.name
                ));
            }
        }
    };

    // Rule 1.
    if !sessions.is_empty() {
        let mut chosen = 0;
        let mut nearest = None;
        if sessions.len() > 1 {
            'tree: for (depth, (pid, names)) in tree.iter().enumerate() {
                for (i, (t, _)) in sessions.iter().enumerate() {
                    if let Some(pattern) = proc_match(t, names) {
                        let name =
                            names.iter().find(|n| glob::Pattern::new(&pattern).is_ok_and(|g| g.matches(n))).cloned().unwrap_or_default();
                        chosen = i;
                        nearest = Some(Ancestor { pid: *pid, depth, name, pattern });
                        break 'tree;
                    }
                }
            }
        }
        let (t, variable) = &sessions[chosen];
        for (i, (other, v)) in sessions.iter().enumerate() {
            if i != chosen {
                passed_over.push(format!("{v} is set too ({}'s session variable)", other.name));
            }
        }
        credential_note(&t.name, &mut passed_over);
        return Detection { agent_type: t.name.clone(), rule: Rule::SessionVariable { variable: variable.clone(), nearest }, passed_over };
    }

    // Rule 2.
    for (depth, (pid, names)) in tree.iter().enumerate() {
        for t in reg.types() {
            if let Some(pattern) = proc_match(t, names) {
                let name = names.iter().find(|n| glob::Pattern::new(&pattern).is_ok_and(|g| g.matches(n))).cloned().unwrap_or_default();
                credential_note(&t.name, &mut passed_over);
                return Detection {
                    agent_type: t.name.clone(),
                    rule: Rule::Process { ancestor: Ancestor { pid: *pid, depth, name, pattern } },
                    passed_over,
                };
            }
        }
    }

    // Rule 3.
    if let Some((t, variable)) = credentials.first() {
        for (other, v) in &credentials[1..] {
            passed_over.push(format!("{v} is set too ({}'s credential; {} comes first in type order)", other.name, t.name));
        }
        return Detection { agent_type: t.name.clone(), rule: Rule::Credential { variable: variable.clone() }, passed_over };
    }

    Detection { agent_type: FALLBACK.to_owned(), rule: Rule::Fallback, passed_over }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::registry::{TypeLocations, trust_none};
    use std::collections::HashMap;

    /// A fake tree: pid -> (parent, name).
    struct Tree(HashMap<u32, (u32, &'static str)>);

    impl Processes for Tree {
        fn parent(&self, pid: u32) -> Option<u32> {
            self.0.get(&pid).map(|p| p.0)
        }
        fn names(&self, pid: u32) -> Vec<String> {
            self.0.get(&pid).map(|p| vec![p.1.to_owned()]).unwrap_or_default()
        }
    }

    /// A chain of processes named `names`, the caller first (pid 100, 101, ... ; the last one's parent
    /// is pid 1).
    fn chain(names: &[&'static str]) -> Tree {
        let mut map = HashMap::new();
        for (i, name) in names.iter().enumerate() {
            let pid = 100 + i as u32;
            let parent = if i + 1 == names.len() { 1 } else { pid + 1 };
            map.insert(pid, (parent, *name));
        }
        Tree(map)
    }

    fn run(vars: &[(&str, &str)], tree: &[&'static str]) -> Detection {
        let reg = Registry::load(&TypeLocations::default(), &trust_none);
        let vars: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        detect(&reg, &|k| vars.get(k).cloned(), &chain(tree), 100)
    }

    #[test]
    fn session_variables() {
        let d = run(&[("CODEX_THREAD_ID", "t")], &["bash"]);
        assert_eq!(
            (d.agent_type.as_str(), &d.rule),
            ("codex", &Rule::SessionVariable { variable: "CODEX_THREAD_ID".into(), nearest: None })
        );
        assert_eq!(run(&[("CLAUDE_CODE_SESSION_ID", "x")], &[]).agent_type, "claude-code");
        assert_eq!(run(&[("GROK_SESSION_ID", "x")], &[]).agent_type, "grok-build");
        assert_eq!(run(&[("GEMINI_CLI", "1")], &[]).agent_type, "gemini");
        // Set but empty is not set.
        assert_eq!(run(&[("CODEX_THREAD_ID", "")], &["bash"]).rule, Rule::Fallback);
    }

    #[test]
    fn a_shared_credential_loses_to_a_session_variable_or_a_process() {
        // agmsg 1.2.1 says gemini here (alphabetical order).
        let d = run(&[("GEMINI_API_KEY", "k"), ("GROK_SESSION_ID", "s")], &["bash", "grok"]);
        assert_eq!(d.agent_type, "grok-build");
        assert!(matches!(d.rule, Rule::SessionVariable { .. }));
        assert!(d.passed_over[0].contains("GEMINI_API_KEY"), "{:?}", d.passed_over);
        // No session variable: the grok process still beats the credential.
        let d = run(&[("GEMINI_API_KEY", "k")], &["bash", "grok"]);
        assert_eq!(d.agent_type, "grok-build");
        assert!(
            matches!(&d.rule, Rule::Process { ancestor } if ancestor.name == "grok" && ancestor.depth == 1 && ancestor.pattern == "grok")
        );
        // Nothing else: the credential is still evidence.
        let d = run(&[("GEMINI_API_KEY", "k")], &["bash", "sshd"]);
        assert_eq!((d.agent_type.as_str(), &d.rule), ("gemini", &Rule::Credential { variable: "GEMINI_API_KEY".into() }));
    }

    #[test]
    fn inherited_session_variables_are_settled_by_the_nearest_process() {
        // codex started from a Claude Code shell inherits CLAUDE_CODE_SESSION_ID.
        let vars = [("CLAUDE_CODE_SESSION_ID", "c"), ("CODEX_THREAD_ID", "t")];
        let d = run(&vars, &["bash", "codex", "bash", "claude"]);
        assert_eq!(d.agent_type, "codex");
        assert!(
            matches!(&d.rule, Rule::SessionVariable { variable, nearest: Some(a) } if variable == "CODEX_THREAD_ID" && a.name == "codex")
        );
        assert!(d.passed_over[0].contains("CLAUDE_CODE_SESSION_ID"));
        // No process settles it: agmsg's sorted order.
        assert_eq!(run(&vars, &["bash"]).agent_type, "claude-code");
    }

    #[test]
    fn process_tree_globs_depth_and_pid_1() {
        assert_eq!(run(&[], &["sh", "codex-aarch64-unknown-linux-musl"]).agent_type, "codex");
        assert_eq!(run(&[], &["cursor-agent"]).agent_type, "cursor");
        assert_eq!(run(&[], &["opencode"]).agent_type, "opencode");
        assert_eq!(run(&[], &["claude"]).agent_type, "claude-code");
        assert_eq!(run(&[], &["gemini"]).agent_type, "gemini");
        // Not a glob match: `codexfoo` (codex-* needs the dash), `xgrok`.
        assert_eq!(run(&[], &["codexfoo", "xgrok"]).rule, Rule::Fallback);
        // The 10th process is examined, the 11th is not.
        let mut names = vec!["bash"; 9];
        names.push("grok");
        assert_eq!(run(&[], &names).agent_type, "grok-build");
        let mut names = vec!["bash"; 10];
        names.push("grok");
        assert_eq!(run(&[], &names).rule, Rule::Fallback);
        // pid 1 is never examined.
        let reg = Registry::load(&TypeLocations::default(), &trust_none);
        let tree = Tree(HashMap::from([(1, (0, "codex"))]));
        assert_eq!(detect(&reg, &|_| None, &tree, 1).rule, Rule::Fallback);
    }

    #[test]
    fn explicit_types_are_never_detected_from_the_environment() {
        let skill = tempfile::tempdir().unwrap();
        let dir = skill.path().join("scripts/drivers/types/aaa");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("type.conf"), "name=aaa\ndetect=explicit\ndetect_proc=aaa\n").unwrap();
        let reg = Registry::load(&TypeLocations { skill_dir: Some(skill.path().to_owned()), plugin_bases: vec![] }, &trust_none);
        let d = detect(&reg, &|v| (v == "explicit").then(|| "1".into()), &chain(&["aaa"]), 100);
        assert_eq!(d.agent_type, "aaa", "by its process only");
        assert!(matches!(d.rule, Rule::Process { .. }));
    }

    #[test]
    fn detect_fallback_variables_are_weak() {
        let skill = tempfile::tempdir().unwrap();
        let dir = skill.path().join("scripts/drivers/types/aaa");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("type.conf"), "name=aaa\ndetect=AAA_SESSION\ndetect_fallback=AAA_HOME\n").unwrap();
        let reg = Registry::load(&TypeLocations { skill_dir: Some(skill.path().to_owned()), plugin_bases: vec![] }, &trust_none);
        let vars = |v: &str| (v == "AAA_HOME").then(|| "1".into());
        let d = detect(&reg, &vars, &chain(&["codex"]), 100);
        assert_eq!(d.agent_type, "codex");
        let d = detect(&reg, &vars, &chain(&["bash"]), 100);
        assert_eq!((d.agent_type.as_str(), d.rule), ("aaa", Rule::Credential { variable: "AAA_HOME".into() }));
    }

    #[test]
    fn only_variable_names_are_looked_up() {
        let skill = tempfile::tempdir().unwrap();
        let dir = skill.path().join("scripts/drivers/types/aaa");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("type.conf"), "name=aaa\ndetect=A=B 1X -\n").unwrap();
        let reg = Registry::load(&TypeLocations { skill_dir: Some(skill.path().to_owned()), plugin_bases: vec![] }, &trust_none);
        let asked = std::cell::RefCell::new(Vec::new());
        let env = |v: &str| {
            asked.borrow_mut().push(v.to_owned());
            Some("1".to_owned())
        };
        assert_eq!(detect(&reg, &env, &chain(&["bash"]), 100).agent_type, "claude-code", "CLAUDE_CODE_SESSION_ID, asked first, is set");
        assert!(asked.borrow().iter().all(|v| is_variable_name(v)), "{:?}", asked.borrow());
        assert!(is_variable_name("_X1") && !is_variable_name("1X") && !is_variable_name("") && !is_variable_name("A-B"));
    }

    #[test]
    fn credentials() {
        for v in ["GEMINI_API_KEY", "OPENAI_API_KEY", "GH_TOKEN", "X_SECRET"] {
            assert!(is_credential(v), "{v}");
        }
        for v in ["GEMINI_CLI", "CODEX_THREAD_ID", "CLAUDE_CODE_SESSION_ID", "GROK_SESSION_ID", "CODEX_SANDBOX"] {
            assert!(!is_credential(v), "{v}");
        }
    }

    #[test]
    fn reads_this_process_from_proc() {
        let me = std::process::id();
        assert_eq!(ProcFs.parent(me), Some(caller()));
        let names = ProcFs.names(me);
        assert!(!names.is_empty());
        assert!(ancestry(&ProcFs, me).len() >= 2);
        assert!(ProcFs.names(u32::MAX).is_empty());
    }
}
