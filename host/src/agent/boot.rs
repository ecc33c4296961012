//! The launch command of a spawned agent, exactly as agmsg's `spawn.sh` / `boot-command.sh` build
//! it, as data: no process runs, no file is written.
//!
//! A direct CLI (reference §5):
//!
//! ```text
//! <cli words…> [<resume_arg> <uuid>] [<model_arg> <model>] [<spawn options…>] [<name_arg> <team>-<agent>] [<prompt_arg>] <prompt>
//! ```
//!
//! A node launcher (`spawn=<file>.mjs`, which wins over `cli=`):
//!
//! ```text
//! <AGMSG_NODE_BIN|node> <type-dir>/<spawn> --name <agent> --team <team> --project <project> [<spawn options…>] --initial-input <prompt>
//! ```
//!
//! The prompt is `<cmd_prefix><skill> actas <agent>` (`cmd_prefix` defaults to `/`; `<skill>` is the
//! installed command's name), followed by a newline and the boot prompt when one is given. Manifest
//! flag values are emitted unquoted by agmsg's boot script, so they split at whitespace here too; the
//! model, names, project and prompt are one argument each. The boot script runs in `<project>` with
//! `AGMSG_SPAWNED=1` and the type's `spawn_unset_env` variables unset; spawn waits for the agent to be
//! ready unless `monitor=no`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use super::delivery::shq;
use super::manifest::{self, Manifest, is_space};
use super::registry::AgentType;
use crate::error::HostError;

/// What to boot.
#[derive(Clone, Debug, Default)]
pub struct BootRequest {
    pub team: String,
    pub agent: String,
    /// The project directory the agent works in.
    pub project: PathBuf,
    pub model: Option<String>,
    /// Text sent after the actas prompt, on its own line.
    pub boot_prompt: Option<String>,
    /// A recorded session id that passed the caller's resume gate (a record exists and the type's
    /// transcript check found it); used only when the type has `resume_arg`.
    pub resume: Option<String>,
    /// Spawn-option tokens (agmsg's `spawn_options.yaml`), inserted where agmsg inserts them.
    pub spawn_options: Vec<String>,
    /// The installed command's name (`agmsg`).
    pub skill: String,
    /// The node program for launcher types (`AGMSG_NODE_BIN`, else `node`).
    pub node: String,
}

/// How the agent is launched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Launcher {
    /// The type's `cli=` program.
    Cli,
    /// The type's `spawn=` node launcher.
    Node,
}

/// The launch command, as data.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BootCommand {
    #[serde(rename = "type")]
    pub agent_type: String,
    pub launcher: Launcher,
    /// The command line; `argv[0]` is looked up on `PATH`.
    pub argv: Vec<String>,
    /// Where it runs.
    pub cwd: PathBuf,
    /// Variables the boot script sets.
    pub env_set: BTreeMap<String, String>,
    /// Variables the boot script unsets (`spawn_unset_env`).
    pub env_unset: Vec<String>,
    /// The actas prompt (and boot prompt) the agent starts with.
    pub prompt: String,
    /// `<team>-<agent>` when the type names sessions (`name_arg`).
    pub session_name: Option<String>,
    /// The session resumed, when one was given and the type can resume.
    pub resume: Option<String>,
    /// Whether spawn waits for the agent's readiness (`monitor` is not `no`).
    pub wait_ready: bool,
}

impl BootRequest {
    /// This installation's part of a request: the installed command's name (the skill directory's
    /// name, `agmsg` by default) and the node program (`AGMSG_NODE_BIN`, else `node`).
    pub fn for_installation(self) -> BootRequest {
        let node = std::env::var("AGMSG_NODE_BIN").ok().filter(|n| !n.is_empty()).unwrap_or_else(|| "node".to_owned());
        BootRequest { skill: super::registry::skill_name(), node, ..self }
    }
}

/// A shell variable name, as `export` and `unset` take it.
fn is_shell_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_ascii_alphabetic()) && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

impl BootCommand {
    /// agmsg's boot script (reference §5) for this command, POSIX sh: it removes its own file (the
    /// shell keeps reading it through its open descriptor), enters the project, sets and unsets the
    /// variables, runs the agent, and leaves an interactive shell in the pane when the agent exits.
    /// Every word is single-quoted, so nothing in a prompt, a path or a model is read as syntax; a
    /// variable name that is not a shell name, or a NUL anywhere, is refused.
    pub fn script(&self) -> Result<String, HostError> {
        for name in self.env_set.keys().chain(&self.env_unset) {
            if !is_shell_name(name) {
                return Err(HostError::refused(format!(
                    "agent type {}: {name:?} is not a variable name the boot script can set or unset",
                    self.agent_type
                )));
            }
        }
        let cwd = self.cwd.to_str().ok_or_else(|| HostError::refused(format!("project {} is not UTF-8", self.cwd.display())))?;
        let texts = self.argv.iter().map(String::as_str).chain(self.env_set.values().map(String::as_str)).chain([cwd]);
        if let Some(bad) = texts.into_iter().find(|t| t.contains('\0')) {
            return Err(HostError::refused(format!("the boot command holds a NUL character: {bad:?}")));
        }
        let mut script = String::from("#!/bin/sh\n# agmsg-host spawn's boot script (it removes itself)\nrm -f -- \"$0\"\n");
        script.push_str(&format!("cd {} || exit 1\n", shq(cwd)));
        for (name, value) in &self.env_set {
            script.push_str(&format!("export {name}={}\n", shq(value)));
        }
        for name in &self.env_unset {
            script.push_str(&format!("unset {name}\n"));
        }
        let words: Vec<String> = self.argv.iter().map(|w| shq(w)).collect();
        script.push_str(&words.join(" "));
        script.push_str("\nexec \"${SHELL:-/bin/sh}\" -i\n");
        Ok(script)
    }
}

fn words(value: &str) -> impl Iterator<Item = String> + '_ {
    value.split(is_space).filter(|w| !w.is_empty()).map(str::to_owned)
}

/// `cmd_prefix`, `/` when empty or missing.
fn cmd_prefix(conf: &Manifest) -> &str {
    match conf.value("cmd_prefix") {
        "" => "/",
        p => p,
    }
}

/// The actas prompt: `<cmd_prefix><skill> actas <agent>`, then `\n<boot prompt>` when one is given.
pub fn actas_prompt(t: &AgentType, skill: &str, agent: &str, boot_prompt: Option<&str>) -> String {
    let prefix = cmd_prefix(&t.manifest);
    let mut prompt = format!("{prefix}{skill} actas {agent}");
    if let Some(extra) = boot_prompt.filter(|p| !p.is_empty()) {
        prompt.push('\n');
        prompt.push_str(extra);
    }
    prompt
}

/// Whether spawn may launch a type with this manifest: `spawnable=yes` or a non-empty `spawn=`
/// (agmsg's gate).
pub fn spawnable(conf: &Manifest) -> bool {
    manifest::spawnable(conf)
}

/// What spawn can launch for a type, every word its manifest puts on the command line, for a person
/// deciding whether to trust it (`plugin install | trust | inspect`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LaunchTemplate {
    /// Neither `spawnable=yes` nor `spawn=`: spawn refuses it.
    NotSpawnable,
    /// Spawnable, but its `cli=` is empty: spawn refuses it.
    NoCli,
    /// The command [`boot_command`] builds, as one line: the manifest's words shell-quoted where they
    /// need it, `<...>` what spawn fills in, `[...]` a part used only when asked for (`--resume`,
    /// `--model`). Not yet made safe for a terminal: print it through [`crate::display::line`].
    Command { launcher: Launcher, program: String, line: String },
}

/// [`boot_command`]'s command line for a type with this manifest (and this directory, where its
/// node launcher is), before spawn fills in the team, agent, project, model and session; `skill` is
/// the installed command's name in the prompt. Spawn options (the user's own `spawn_options.yaml`)
/// are left out: they do not come from the type.
pub fn launch_template(conf: &Manifest, dir: &std::path::Path, skill: &str) -> LaunchTemplate {
    if !spawnable(conf) {
        return LaunchTemplate::NotSpawnable;
    }
    let fixed = |value: &str| words(value).map(|w| crate::shell::word(&w)).collect::<Vec<_>>();
    let prompt = crate::shell::quote(&format!("{}{skill} actas <agent>", cmd_prefix(conf)));
    let spawn = conf.value("spawn");
    if !spawn.is_empty() {
        let launcher = crate::shell::word(&dir.join(spawn).to_string_lossy());
        let line = format!("node {launcher} --name <agent> --team <team> --project <project> --initial-input {prompt}");
        return LaunchTemplate::Command { launcher: Launcher::Node, program: "node".to_owned(), line };
    }
    let cli: Vec<String> = words(conf.value("cli")).collect();
    let Some(program) = cli.first().cloned() else { return LaunchTemplate::NoCli };
    let mut line: Vec<String> = fixed(conf.value("cli"));
    // In boot_command's order: resume, model, (spawn options), name, prompt flag, prompt.
    for (key, value) in [("resume_arg", "<session-id>"), ("model_arg", "<model>")] {
        let flag = fixed(conf.value(key));
        if !flag.is_empty() {
            line.push(format!("[{} {value}]", flag.join(" ")));
        }
    }
    let name_arg = fixed(conf.value("name_arg"));
    if !name_arg.is_empty() {
        line.extend(name_arg);
        line.push("<team>-<agent>".to_owned());
    }
    line.extend(fixed(conf.value("prompt_arg")));
    line.push(prompt);
    LaunchTemplate::Command { launcher: Launcher::Cli, program, line: line.join(" ") }
}

/// The launch command for `t`, or why it cannot be launched.
pub fn boot_command(t: &AgentType, req: &BootRequest) -> Result<BootCommand, HostError> {
    agmsg_contract::check_name("team", &req.team).map_err(|e| HostError::refused(e.to_string()))?;
    agmsg_contract::check_name("agent", &req.agent).map_err(|e| HostError::refused(e.to_string()))?;
    if !t.spawnable() {
        return Err(HostError::refused(format!(
            "agent type {} is not spawnable (its manifest has neither spawnable=yes nor spawn=)",
            t.name
        )));
    }
    let project_text = req.project.to_string_lossy();
    if project_text.is_empty() || project_text.chars().any(char::is_control) {
        return Err(HostError::refused(format!(
            "invalid project path {project_text:?}: empty, or holds a line break or control character"
        )));
    }
    let project = std::path::absolute(&req.project).map_err(|e| HostError::refused(format!("{}: {e}", req.project.display())))?;
    if !project.is_dir() {
        return Err(HostError::refused(format!("project {} is not a directory", project.display())));
    }
    if let Some(model) = &req.model
        && (model.is_empty() || model.chars().any(char::is_control))
    {
        return Err(HostError::refused(format!("invalid model {model:?}")));
    }
    let model_arg = t.value("model_arg");
    let spawn = t.value("spawn");
    if req.model.is_some() {
        if model_arg.is_empty() {
            return Err(HostError::refused(format!("agent type {} does not accept --model (its manifest has no model_arg)", t.name)));
        }
        if !spawn.is_empty() {
            return Err(HostError::refused(format!(
                "agent type {} is started by a node launcher, which takes its model from its own configuration: --model is refused",
                t.name
            )));
        }
    }
    let prompt = actas_prompt(t, &req.skill, &req.agent, req.boot_prompt.as_deref());
    let mut env_set = BTreeMap::new();
    env_set.insert("AGMSG_SPAWNED".to_owned(), "1".to_owned());
    let env_unset: Vec<String> = words(t.value("spawn_unset_env")).collect();
    let wait_ready = t.value("monitor") != "no";

    if !spawn.is_empty() {
        manifest::check_relative("spawn", spawn).map_err(|e| HostError::refused(format!("type {}: {e}", t.name)))?;
        let dir = t.dir().ok_or_else(|| HostError::refused(format!("agent type {} names a node launcher but has no directory", t.name)))?;
        let node = if req.node.is_empty() { "node".to_owned() } else { req.node.clone() };
        let mut argv = vec![node, dir.join(spawn).to_string_lossy().into_owned()];
        argv.extend(["--name".to_owned(), req.agent.clone(), "--team".to_owned(), req.team.clone()]);
        argv.extend(["--project".to_owned(), project.to_string_lossy().into_owned()]);
        argv.extend(req.spawn_options.iter().cloned());
        argv.extend(["--initial-input".to_owned(), prompt.clone()]);
        return Ok(BootCommand {
            agent_type: t.name.clone(),
            launcher: Launcher::Node,
            argv,
            cwd: project,
            env_set,
            env_unset,
            prompt,
            session_name: None,
            resume: None,
            wait_ready,
        });
    }

    let mut argv: Vec<String> = words(t.value("cli")).collect();
    if argv.is_empty() {
        return Err(HostError::refused(format!("agent type {} is spawnable but its manifest has no cli", t.name)));
    }
    let resume_arg = t.value("resume_arg");
    let resume = req.resume.clone().filter(|r| !r.is_empty() && !resume_arg.is_empty());
    if let Some(uuid) = &resume {
        if !agmsg_contract::is_transport_token(uuid) {
            return Err(HostError::refused(format!("invalid session id {uuid:?}")));
        }
        argv.extend(words(resume_arg));
        argv.push(uuid.clone());
    }
    if let Some(model) = &req.model {
        argv.extend(words(model_arg));
        argv.push(model.clone());
    }
    argv.extend(req.spawn_options.iter().cloned());
    let name_arg = t.value("name_arg");
    let session_name = (!name_arg.is_empty()).then(|| format!("{}-{}", req.team, req.agent));
    if let Some(name) = &session_name {
        argv.extend(words(name_arg));
        argv.push(name.clone());
    }
    argv.extend(words(t.value("prompt_arg")));
    argv.push(prompt.clone());
    Ok(BootCommand {
        agent_type: t.name.clone(),
        launcher: Launcher::Cli,
        argv,
        cwd: project,
        env_set,
        env_unset,
        prompt,
        session_name,
        resume,
        wait_ready,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::registry::{Registry, TypeLocations, trust_none};

    fn req(project: &std::path::Path) -> BootRequest {
        BootRequest {
            team: "t".into(),
            agent: "bob".into(),
            project: project.to_owned(),
            skill: "agmsg".into(),
            node: "node".into(),
            ..Default::default()
        }
    }

    fn argv(reg: &Registry, name: &str, r: &BootRequest) -> Vec<String> {
        boot_command(reg.get(name).unwrap(), r).unwrap().argv
    }

    #[test]
    fn every_bundled_spawnable_type() {
        let reg = Registry::load(&TypeLocations::default(), &trust_none);
        let dir = tempfile::tempdir().unwrap();
        let r = req(dir.path());
        assert_eq!(argv(&reg, "claude-code", &r), ["claude", "-n", "t-bob", "/agmsg actas bob"]);
        assert_eq!(argv(&reg, "codex", &r), ["codex", "$agmsg actas bob"]);
        assert_eq!(argv(&reg, "gemini", &r), ["gemini", "$agmsg actas bob"]);
        assert_eq!(argv(&reg, "antigravity", &r), ["agy", "--prompt-interactive", "$agmsg actas bob"]);
        assert_eq!(argv(&reg, "copilot", &r), ["copilot", "--interactive", "/agmsg actas bob"]);
        assert_eq!(argv(&reg, "opencode", &r), ["opencode", "--prompt", "$agmsg actas bob"]);
        assert_eq!(argv(&reg, "cursor", &r), ["cursor-agent", "/agmsg actas bob"]);
        assert_eq!(argv(&reg, "grok-build", &r), ["grok", "/agmsg actas bob"]);
        for name in ["hermes", "agmsg-app"] {
            assert!(boot_command(reg.get(name).unwrap(), &r).unwrap_err().message.contains("not spawnable"), "{name}");
        }
    }

    #[test]
    fn model_resume_options_and_boot_prompt_in_agmsgs_order() {
        let reg = Registry::load(&TypeLocations::default(), &trust_none);
        let dir = tempfile::tempdir().unwrap();
        let r = BootRequest {
            model: Some("opus".into()),
            resume: Some("0192-uuid".into()),
            spawn_options: vec!["--x".into(), "y".into()],
            boot_prompt: Some("review PR 7".into()),
            ..req(dir.path())
        };
        let cmd = boot_command(reg.get("claude-code").unwrap(), &r).unwrap();
        assert_eq!(
            cmd.argv,
            ["claude", "--resume", "0192-uuid", "--model", "opus", "--x", "y", "-n", "t-bob", "/agmsg actas bob\nreview PR 7"]
        );
        assert_eq!(cmd.env_unset, ["CLAUDE_CODE_SESSION_ID"]);
        assert_eq!(cmd.env_set.get("AGMSG_SPAWNED").map(String::as_str), Some("1"));
        assert!(cmd.wait_ready);
        assert_eq!(cmd.cwd, dir.path());
        // codex: resume is a subcommand right after the cli; -m for the model; no readiness wait.
        let cmd = boot_command(reg.get("codex").unwrap(), &r).unwrap();
        assert_eq!(cmd.argv, ["codex", "resume", "0192-uuid", "-m", "opus", "--x", "y", "$agmsg actas bob\nreview PR 7"]);
        assert!(!cmd.wait_ready);
        // No resume_arg: a fresh boot.
        let cmd = boot_command(reg.get("gemini").unwrap(), &r).unwrap();
        assert_eq!(cmd.argv, ["gemini", "--model", "opus", "--x", "y", "$agmsg actas bob\nreview PR 7"]);
        assert_eq!(cmd.resume, None);
    }

    #[test]
    fn refusals() {
        let skill = tempfile::tempdir().unwrap();
        let types = skill.path().join("scripts/drivers/types");
        for (name, conf) in [("nomodel", "cli=x\nspawnable=yes\n"), ("nocli", "spawnable=yes\n"), ("badspawn", "spawn=../x.mjs\n")] {
            std::fs::create_dir_all(types.join(name)).unwrap();
            std::fs::write(types.join(name).join("type.conf"), conf).unwrap();
        }
        let reg = Registry::load(&TypeLocations { skill_dir: Some(skill.path().to_owned()), plugin_bases: vec![] }, &trust_none);
        let dir = tempfile::tempdir().unwrap();
        let with_model = BootRequest { model: Some("m".into()), ..req(dir.path()) };
        assert!(boot_command(reg.get("nomodel").unwrap(), &with_model).unwrap_err().message.contains("does not accept --model"));
        assert!(boot_command(reg.get("nocli").unwrap(), &req(dir.path())).unwrap_err().message.contains("no cli"));
        assert!(boot_command(reg.get("badspawn").unwrap(), &req(dir.path())).unwrap_err().message.contains("invalid spawn"));
        let claude = reg.get("claude-code").unwrap();
        assert!(boot_command(claude, &BootRequest { team: "a/b".into(), ..req(dir.path()) }).unwrap_err().message.contains("team"));
        assert!(boot_command(claude, &BootRequest { agent: String::new(), ..req(dir.path()) }).unwrap_err().message.contains("agent"));
        assert!(boot_command(claude, &req(&dir.path().join("missing"))).unwrap_err().message.contains("not a directory"));
        assert!(boot_command(claude, &req(std::path::Path::new("/tmp/a\nb"))).unwrap_err().message.contains("line break"));
        assert!(
            boot_command(claude, &BootRequest { model: Some(String::new()), ..req(dir.path()) })
                .unwrap_err()
                .message
                .contains("invalid model")
        );
    }

    #[test]
    fn boot_script() {
        let reg = Registry::load(&TypeLocations::default(), &trust_none);
        let dir = tempfile::tempdir().unwrap();
        let r = BootRequest { boot_prompt: Some("it's $HOME".into()), ..req(dir.path()) };
        let cmd = boot_command(reg.get("claude-code").unwrap(), &r).unwrap();
        let project = dir.path().to_str().unwrap();
        assert_eq!(
            cmd.script().unwrap(),
            format!(
                "#!/bin/sh\n# agmsg-host spawn's boot script (it removes itself)\nrm -f -- \"$0\"\ncd '{project}' || exit 1\n\
                 export AGMSG_SPAWNED='1'\nunset CLAUDE_CODE_SESSION_ID\n\
                 'claude' '-n' 't-bob' '/agmsg actas bob\nit'\\''s $HOME'\nexec \"${{SHELL:-/bin/sh}}\" -i\n"
            )
        );
        let mut bad = cmd.clone();
        bad.env_unset = vec!["X;rm -rf ~".into()];
        assert!(bad.script().unwrap_err().message.contains("not a variable name"));
        let mut bad = cmd;
        bad.argv.push("a\0b".into());
        assert!(bad.script().unwrap_err().message.contains("NUL"));
    }

    /// A manifest on disk, as an external type's.
    fn conf(text: &str) -> Manifest {
        Manifest::parse(text.as_bytes(), "test").unwrap()
    }

    #[test]
    fn the_launch_template_has_every_word_boot_command_uses() {
        let text = "cli=fakeagent --dangerously-skip-permissions\nspawnable=yes\nname_arg=--mcp-config /tmp/x.json -n\n\
                    prompt_arg=--yolo  -p\nmodel_arg=--model --unsafe\nresume_arg=resume --all\ncmd_prefix=$(id)\n";
        let dir = std::path::Path::new("/types/fake");
        let LaunchTemplate::Command { launcher, program, line } = launch_template(&conf(text), dir, "agmsg") else { panic!("spawnable") };
        assert_eq!((launcher, program.as_str()), (Launcher::Cli, "fakeagent"));
        assert_eq!(
            line,
            "fakeagent --dangerously-skip-permissions [resume --all <session-id>] [--model --unsafe <model>] \
             --mcp-config /tmp/x.json -n <team>-<agent> --yolo -p '$(id)agmsg actas <agent>'"
        );
        // The same words, in the same order, as boot_command puts on the command line.
        let skill = tempfile::tempdir().unwrap();
        let types = skill.path().join("scripts/drivers/types/fake");
        std::fs::create_dir_all(&types).unwrap();
        std::fs::write(types.join("type.conf"), text).unwrap();
        let reg = Registry::load(&TypeLocations { skill_dir: Some(skill.path().to_owned()), plugin_bases: vec![] }, &trust_none);
        let project = tempfile::tempdir().unwrap();
        let r = BootRequest { model: Some("M".into()), resume: Some("S".into()), ..req(project.path()) };
        assert_eq!(
            argv(&reg, "fake", &r),
            [
                "fakeagent",
                "--dangerously-skip-permissions",
                "resume",
                "--all",
                "S",
                "--model",
                "--unsafe",
                "M",
                "--mcp-config",
                "/tmp/x.json",
                "-n",
                "t-bob",
                "--yolo",
                "-p",
                "$(id)agmsg actas bob"
            ]
        );

        // Bundled claude-code, a node launcher, and types spawn refuses.
        let claude = Registry::load(&TypeLocations::default(), &trust_none);
        let claude = &claude.get("claude-code").unwrap().manifest;
        let LaunchTemplate::Command { line, .. } = launch_template(claude, dir, "agmsg") else { panic!() };
        assert_eq!(line, "claude [--resume <session-id>] [--model <model>] -n <team>-<agent> '/agmsg actas <agent>'");
        let node = launch_template(&conf("spawn=launch it.mjs\ncli=ignored\n"), dir, "agmsg");
        assert_eq!(node, LaunchTemplate::Command {
            launcher: Launcher::Node,
            program: "node".into(),
            line: "node '/types/fake/launch it.mjs' --name <agent> --team <team> --project <project> --initial-input '/agmsg actas <agent>'".into()
        });
        assert_eq!(launch_template(&conf("cli=x\n"), dir, "agmsg"), LaunchTemplate::NotSpawnable);
        assert_eq!(launch_template(&conf("spawnable=yes\n"), dir, "agmsg"), LaunchTemplate::NoCli);
    }

    #[test]
    fn node_launcher() {
        let skill = tempfile::tempdir().unwrap();
        let dir = skill.path().join("scripts/drivers/types/kiro");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("type.conf"), "name=kiro\ncli=ignored\nspawn=launch.mjs\nmodel_arg=--model\ncmd_prefix=$\nmonitor=no\n")
            .unwrap();
        let reg = Registry::load(&TypeLocations { skill_dir: Some(skill.path().to_owned()), plugin_bases: vec![] }, &trust_none);
        let project = tempfile::tempdir().unwrap();
        let r = BootRequest { spawn_options: vec!["--flag".into()], node: "/opt/node".into(), ..req(project.path()) };
        let cmd = boot_command(reg.get("kiro").unwrap(), &r).unwrap();
        assert_eq!(cmd.launcher, Launcher::Node);
        let project = project.path().to_string_lossy().into_owned();
        let launcher = dir.join("launch.mjs").to_string_lossy().into_owned();
        assert_eq!(
            cmd.argv,
            [
                "/opt/node",
                &launcher,
                "--name",
                "bob",
                "--team",
                "t",
                "--project",
                &project,
                "--flag",
                "--initial-input",
                "$agmsg actas bob"
            ]
        );
        assert!(
            boot_command(reg.get("kiro").unwrap(), &BootRequest { model: Some("m".into()), ..r })
                .unwrap_err()
                .message
                .contains("node launcher")
        );
    }
}
