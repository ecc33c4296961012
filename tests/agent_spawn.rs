//! `agmsg-host spawn` against a real tmux server on a private socket: a fake agent CLI, first on the
//! server's `PATH`, records the argv, working directory and variables it was started with; they must be
//! exactly what `types boot-argv` prints, and the new window or pane must carry the agent's name. Then
//! plain (through an `AGMSG_TERMINAL` template, which runs the boot in `/`), and the refusals.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agmsg_conformance::tmux::TmuxServer;
use common::{Env, Run};
use serde_json::Value;

/// A fake agent CLI: it writes `<records>/<project dir name>.{argv,cwd,env}` (argv NUL-separated,
/// `$0` first) and exits; the argv file appears last, whole.
fn fake_cli(records: &Path) -> String {
    format!(
        r#"#!/bin/sh
out='{records}'/"$(basename "$(pwd -P)")"
printf '%s\0' "$0" "$@" > "$out.argv.part"
pwd -P > "$out.cwd"
{{
  printf 'AGMSG_SPAWNED=%s\n' "${{AGMSG_SPAWNED-(unset)}}"
  printf 'CLAUDE_CODE_SESSION_ID=%s\n' "${{CLAUDE_CODE_SESSION_ID-(unset)}}"
}} > "$out.env"
mv "$out.argv.part" "$out.argv"
"#,
        records = records.display()
    )
}

/// A private tmux server whose panes find the fake `claude` and `codex` first on `PATH` and inherit a
/// parent session's `CLAUDE_CODE_SESSION_ID` (which claude-code's boot must unset), and agmsg-host
/// as if inside its first pane with the same `PATH` and a private `TMPDIR` (where boot scripts go).
struct Lab {
    server: TmuxServer,
    dir: tempfile::TempDir,
    bin: PathBuf,
    records: PathBuf,
    tmp: PathBuf,
    path: String,
}

impl Lab {
    fn new() -> Lab {
        let server = TmuxServer::start();
        let dir = tempfile::tempdir().unwrap();
        let (bin, records, tmp) = (dir.path().join("bin"), dir.path().join("records"), dir.path().join("tmp"));
        for d in [&bin, &records, &tmp] {
            std::fs::create_dir(d).unwrap();
        }
        for name in ["claude", "codex"] {
            let file = bin.join(name);
            std::fs::write(&file, fake_cli(&records)).unwrap();
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
        server.query(&["set-environment", "-g", "PATH", &path]);
        server.query(&["set-environment", "-g", "CLAUDE_CODE_SESSION_ID", "parent-session"]);
        Lab { server, dir, bin, records, tmp, path }
    }

    /// agmsg-host as if inside the server's first pane.
    fn inside(&self) -> Env {
        self.outside().env("TMUX", &self.server.tmux_var()).env("TMUX_PANE", self.server.first_pane.rsplit_once(':').unwrap().1)
    }

    /// agmsg-host under no terminal, with the fake CLIs on its `PATH`.
    fn outside(&self) -> Env {
        Env::new().env("PATH", &self.path).env("TMPDIR", self.tmp.to_str().unwrap())
    }

    /// A project directory, its name awkward for a shell.
    fn project(&self, name: &str) -> PathBuf {
        let p = self.dir.path().join("projects").join(name);
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    /// What the fake CLI recorded when started in `project`: argv (with `$0`), cwd, variables.
    fn recorded(&self, project: &Path) -> (Vec<String>, String, String) {
        let name = project.file_name().unwrap().to_str().unwrap();
        let argv = self.records.join(format!("{name}.argv"));
        let started = Instant::now();
        while !argv.exists() {
            assert!(started.elapsed() < Duration::from_secs(10), "the fake agent never ran in {}", project.display());
            std::thread::sleep(Duration::from_millis(25));
        }
        let bytes = std::fs::read(&argv).unwrap();
        let words = bytes.split(|b| *b == 0).map(|w| String::from_utf8(w.to_vec()).unwrap());
        let mut argv: Vec<String> = words.collect();
        assert_eq!(argv.pop().as_deref(), Some(""), "NUL-terminated");
        let read = |ext: &str| std::fs::read_to_string(self.records.join(format!("{name}.{ext}"))).unwrap();
        (argv, read("cwd").trim_end_matches('\n').to_owned(), read("env"))
    }

    fn boot_scripts_left(&self) -> Vec<PathBuf> {
        std::fs::read_dir(&self.tmp).unwrap().map(|e| e.unwrap().path()).collect()
    }
}

fn json(run: &Run) -> Value {
    serde_json::from_str(&run.ok().stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {run:?}"))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_owned()).collect()
}

/// The agent's argv as the pane ran it: `$0` is the fake found on the server's PATH.
#[track_caller]
fn assert_ran(lab: &Lab, recorded: &[String], argv: &[String]) {
    assert_eq!(recorded[0], lab.bin.join(&argv[0]).to_str().unwrap(), "argv[0] found on the pane's PATH");
    assert_eq!(&recorded[1..], &argv[1..], "the argv boot-argv prints, word for word");
}

fn socket_free(id: &str) -> &str {
    id.rsplit_once(':').unwrap().1
}

#[test]
fn spawn_into_a_window_and_a_pane_runs_exactly_the_boot_argv() {
    let lab = Lab::new();
    let env = lab.inside();
    let sock = lab.server.socket.display().to_string();

    // A window: claude-code, with a model and a boot prompt full of shell syntax, in a project whose
    // path has a space and a quote.
    let project = lab.project("my project's dir");
    let prompt = "review PR #7: `rm -rf /`; $HOME \"quoted\" 'single' \\ back\nsecond line\ttab";
    let args = ["claude-code", "crew", "bob", "--project", project.to_str().unwrap(), "--model", "opus-4", "--boot-prompt", prompt];
    let boot_argv = json(&env.run(&[&["types", "boot-argv"][..], &args].concat()));
    let run = env.run(&[&["spawn"][..], &args, &["--json"]].concat());
    let spawned = json(&run);
    assert_eq!(spawned["boot"], boot_argv, "spawn built the command boot-argv prints");
    assert_eq!(spawned["placement"], "window");
    assert_eq!(spawned["terminal"], "tmux");
    assert_eq!(spawned["naming"], "label-and-key", "{run:?}");
    let id = spawned["id"].as_str().unwrap();
    assert_eq!(spawned["reference"], format!("tmux:{id}"));
    assert!(id.starts_with(&format!("{sock}:@")), "a window on our server: {id}");

    let (argv, cwd, vars) = lab.recorded(&project);
    let expected = strings(&boot_argv["argv"]);
    assert_eq!(expected, ["claude", "--model", "opus-4", "-n", "crew-bob", &format!("/agmsg actas bob\n{prompt}")]);
    assert_ran(&lab, &argv, &expected);
    assert_eq!(Path::new(&cwd), project.canonicalize().unwrap(), "the agent runs in the project");
    assert_eq!(vars, "AGMSG_SPAWNED=1\nCLAUDE_CODE_SESSION_ID=(unset)\n", "set and unset as the boot says");
    let window = socket_free(id);
    assert_eq!(lab.server.query(&["display-message", "-p", "-t", window, "#{window_name}"]), "crew:bob");
    assert_eq!(lab.server.query(&["display-message", "-p", "-t", window, "#{@agmsg_agent}"]), "crew:bob");
    assert!(lab.boot_scripts_left().is_empty(), "the boot script removed itself: {:?}", lab.boot_scripts_left());
    // The agent exited; its pane stays, with a shell, as agmsg's boot leaves it.
    let state = env.run(&["terminal", "pane-state", &format!("tmux:{id}")]);
    assert_eq!(state.stdout, "present\n", "{state:?}");

    // A pane to the right of the caller's: codex (no variables to unset), plain text output.
    let before = lab.server.pane_count();
    let project = lab.project("codex-side");
    let args = ["codex", "crew", "cody", "--project", project.to_str().unwrap(), "--spawn-arg", "--sandbox", "--spawn-arg", "workspace-write"];
    let boot_argv = json(&env.run(&[&["types", "boot-argv"][..], &args].concat()));
    let run = env.run(&[&["spawn"][..], &args, &["--placement", "pane-h"]].concat());
    let reference = run.ok().stdout.trim_end().to_owned();
    let pane = reference.strip_prefix("tmux:").unwrap_or_else(|| panic!("a tmux reference: {run:?}"));
    assert!(pane.starts_with(&format!("{sock}:%")), "{pane}");
    assert_eq!(lab.server.pane_count(), before + 1);
    let first_window = lab.server.query(&["display-message", "-p", "-t", socket_free(&lab.server.first_pane), "#{window_id}"]);
    assert_eq!(lab.server.query(&["display-message", "-p", "-t", socket_free(pane), "#{window_id}"]), first_window, "a split, not a window");
    let (argv, cwd, vars) = lab.recorded(&project);
    let expected = strings(&boot_argv["argv"]);
    assert_eq!(expected, ["codex", "--sandbox", "workspace-write", "$agmsg actas cody"]);
    assert_ran(&lab, &argv, &expected);
    assert_eq!(Path::new(&cwd), project.canonicalize().unwrap());
    assert_eq!(vars, "AGMSG_SPAWNED=1\nCLAUDE_CODE_SESSION_ID=parent-session\n", "codex unsets nothing");
    assert_eq!(lab.server.query(&["display-message", "-p", "-t", socket_free(pane), "#{pane_title}"]), "crew:cody");
    let label = env.run(&["terminal", "label-of", &reference]);
    assert!(label.ok().stdout.contains("crew:cody"), "{label:?}");
    // The reference is what the other ops take.
    assert_eq!(env.run(&["terminal", "despawn", &reference]).stdout, "ok\n");
    assert_eq!(lab.server.pane_count(), before);

    // AGMSG_TERMINAL_NAMING=off: the key only; the window keeps the agent's name spawn gave it.
    let project = lab.project("quiet");
    let run = lab.inside().env("AGMSG_TERMINAL_NAMING", "off").run(&["spawn", "claude-code", "crew", "carol", "--project", project.to_str().unwrap(), "--json"]);
    let spawned = json(&run);
    assert_eq!(spawned["naming"], "key-only");
    let window = socket_free(spawned["id"].as_str().unwrap()).to_owned();
    lab.recorded(&project);
    assert_eq!(lab.server.query(&["display-message", "-p", "-t", &window, "#{window_name}"]), "carol");
    assert_eq!(lab.server.query(&["display-message", "-p", "-t", &window, "#{@agmsg_agent}"]), "crew:carol");
}

#[test]
fn plain_through_an_agmsg_terminal_template() {
    // plain's launcher runs in `/` with only its declared variables: the boot script's own `cd` is what
    // puts the agent in the project. plain has no name op, so the pane is not named.
    let lab = Lab::new();
    let env = lab.outside().env("AGMSG_TERMINAL", "{cmd}");
    let project = lab.project("plain-proj");
    let args = ["claude-code", "crew", "dana", "--project", project.to_str().unwrap()];
    let boot_argv = json(&env.run(&[&["types", "boot-argv"][..], &args].concat()));
    let run = env.run(&[&["spawn"][..], &args, &["--terminal", "plain", "--json"]].concat());
    let spawned = json(&run);
    assert_eq!((spawned["reference"].as_str(), spawned["naming"].as_str()), (Some("plain:-"), Some("unsupported")), "{run:?}");
    let (argv, cwd, vars) = lab.recorded(&project);
    assert_ran(&lab, &argv, &strings(&boot_argv["argv"]));
    assert_eq!(Path::new(&cwd), project.canonicalize().unwrap());
    assert!(vars.starts_with("AGMSG_SPAWNED=1\n"), "{vars}");
    assert!(lab.boot_scripts_left().is_empty());
}

#[test]
fn refusals_are_clear_and_leave_nothing_behind() {
    let lab = Lab::new();
    let env = lab.inside();
    let project = lab.project("p");
    let p = project.to_str().unwrap();
    let skill = lab.dir.path().join("skill");
    let nomodel = skill.join("scripts/drivers/types/nomodel");
    std::fs::create_dir_all(&nomodel).unwrap();
    std::fs::write(nomodel.join("type.conf"), "name=nomodel\ncli=claude\nspawnable=yes\nhooks_file=.nomodel/hooks.json\n").unwrap();
    let with_skill = lab.inside().env("AGMSG_SKILL_DIR", skill.to_str().unwrap());
    let missing = lab.dir.path().join("no-such-project");
    let panes = lab.server.pane_count();

    let cases: Vec<(&Env, Vec<&str>, i32, &str)> = vec![
        (&env, vec!["nosuch", "crew", "a", "--project", p], 1, "unknown agent type \"nosuch\""),
        (&env, vec!["hermes", "crew", "a", "--project", p], 1, "not spawnable"),
        (&with_skill, vec!["nomodel", "crew", "a", "--project", p, "--model", "m"], 1, "does not accept --model"),
        (&env, vec!["claude-code", "crew", "a", "--project", missing.to_str().unwrap()], 1, "is not a directory"),
        (&env, vec!["gemini", "crew", "a", "--project", p], 1, "gemini (the launch command of agent type gemini) is not an executable on PATH"),
        (&env, vec!["claude-code", "crew", "a:b", "--project", p], 1, "agent"),
        (&env, vec!["claude-code", "crew", "a", "--project", p, "--terminal", "plain"], 13, "could not spawn: unsupported: headless"),
        (&env, vec!["claude-code", "crew", "a", "--project", p, "--terminal", "screen"], 13, "unknown terminal driver"),
        (&env, vec!["claude-code", "crew", "a", "--project", p, "--driver", "tmux"], 2, "--terminal, not --driver"),
        (&env, vec!["claude-code", "crew", "a", "--project", p, "--placement", "diagonal"], 2, "invalid value 'diagonal'"),
    ];
    for (env, args, code, message) in cases {
        let run = env.run(&[&["spawn"][..], &args].concat());
        assert_eq!(run.code, code, "{args:?}: {run:?}");
        assert!(run.stderr.contains(message), "{args:?}: expected {message:?} in {run:?}");
        assert_eq!(run.stdout, "", "{args:?}");
    }
    // Under tmux but without TMUX_PANE: a split has no caller pane to target (agmsg #990); and outside
    // any terminal, placement falls to plain, which has no window to open here.
    let no_pane = lab.outside().env("TMUX", &lab.server.tmux_var());
    let run = no_pane.run(&["spawn", "claude-code", "crew", "a", "--project", p, "--placement", "pane-v"]);
    assert_eq!(run.code, 13, "{run:?}");
    assert!(run.stderr.contains("TMUX_PANE"), "{run:?}");
    let run = lab.outside().run(&["spawn", "claude-code", "crew", "a", "--project", p]);
    assert_eq!(run.code, 13, "{run:?}");
    assert!(run.stderr.contains("terminal 'plain' could not spawn"), "{run:?}");

    assert_eq!(lab.server.pane_count(), panes, "no pane was created");
    assert!(lab.boot_scripts_left().is_empty(), "a failed spawn removes its boot script: {:?}", lab.boot_scripts_left());
    assert!(!lab.records.join("p.argv").exists(), "no agent ran");
}

/// Issue 24, item 4: a team, agent or project holding tmux format syntax (`#(...)` runs a command with
/// the user's rights) or ending in `;` (where tmux's argv parser ends a command) reaches tmux as data:
/// nothing runs, the spawn succeeds, and the window name, key, pane title and directory read back
/// exactly as given.
#[test]
fn hostile_names_and_project_are_data() {
    let lab = Lab::new();
    let env = lab.inside();
    let query = |target: &str, format: &str| lab.server.query(&["display-message", "-p", "-t", target, format]);

    // The finding as reported: `#(...)` in the team ran `touch` in tmux's $HOME, and spawn exited 0.
    let project = lab.project("finding");
    let run = env.run(&["spawn", "claude-code", "crew#(cd;touch PWNED-finding)", "bob", "--project", project.to_str().unwrap(), "--json"]);
    let spawned = json(&run);
    assert_eq!(spawned["naming"], "label-and-key", "{run:?}");
    let window = socket_free(spawned["id"].as_str().unwrap()).to_owned();
    lab.recorded(&project);
    assert_eq!(query(&window, "#{window_name}"), "crew#(cd;touch PWNED-finding):bob");
    assert_eq!(query(&window, "#{@agmsg_agent}"), "crew#(cd;touch PWNED-finding):bob");

    // Every kind at once, in a window, a split and key-only, from a project path just as hostile.
    let project = lab.project("p#(cd;touch PWNED-project)#{pane_id}##[x] $(cd;touch PWNED-dollar);");
    let cases = [
        ("window", "t#{pane_id}#W;", "a#[fg=red]##x;", None),
        ("pane-h", "x'\"`cd;touch PWNED-tick`", "y#(cd;touch PWNED-agent);", None),
        ("window", "k", "q#{session_name};", Some("off")),
    ];
    for (placement, team, agent, naming) in cases {
        let env = match naming {
            Some(mode) => lab.inside().env("AGMSG_TERMINAL_NAMING", mode),
            None => lab.inside(),
        };
        let args = ["spawn", "claude-code", team, agent, "--project", project.to_str().unwrap(), "--placement", placement, "--json"];
        let run = env.run(&args);
        let spawned = json(&run);
        let label = format!("{team}:{agent}");
        assert_eq!(spawned["naming"], if naming.is_some() { "key-only" } else { "label-and-key" }, "{run:?}");
        assert_eq!(spawned["warnings"], serde_json::json!([]), "{run:?}");
        let target = socket_free(spawned["id"].as_str().unwrap()).to_owned();
        let (_, cwd, _) = lab.recorded(&project);
        assert_eq!(Path::new(&cwd), project.canonicalize().unwrap(), "the agent runs in the project as given");
        std::fs::remove_file(lab.records.join(format!("{}.argv", project.file_name().unwrap().to_str().unwrap()))).unwrap();
        assert_eq!(query(&target, "#{@agmsg_agent}"), label, "the key reads back as written");
        match (placement, naming) {
            ("window", None) => assert_eq!(query(&target, "#{window_name}"), label),
            ("window", Some(_)) => assert_eq!(query(&target, "#{window_name}"), agent, "key-only: the window keeps spawn's name"),
            _ => assert_eq!(query(&target, "#{pane_title}"), label),
        }
    }
    agmsg_conformance::tmux::assert_nothing_ran(&[lab.server.dir.path(), lab.dir.path(), env.dir.path(), &project]);
}
