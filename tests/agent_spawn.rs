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
# A test that wants the agent to become ready names the sentinel here. The agent makes it only once
# no sentinel is there (a stale one must have been removed; it waits up to 60 s), saying so first.
if [ -f "$out.ready-at" ]; then
  s="$(cat "$out.ready-at")"; i=0
  while [ -e "$s" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
  if [ ! -e "$s" ]; then echo absent > "$out.ready-seen"; fi
  : > "$s"
fi
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
    /// agmsg's install (`AGMSG_SKILL_DIR`, named `agmsg` as the prompt's command is): a fake
    /// `scripts/join.sh` appends its argv and `AGMSG_RESOLVE_PROJECT` to `joins`, and fails with a
    /// message while `join-fails` exists.
    skill: PathBuf,
}

/// The fake join.sh of [`Lab::skill`].
fn fake_join(skill: &Path) -> String {
    format!(
        r#"#!/bin/sh
skill='{skill}'
{{ printf '%s|' "$@"; printf 'AGMSG_RESOLVE_PROJECT=%s\n' "${{AGMSG_RESOLVE_PROJECT-(unset)}}"; }} >> "$skill/joins"
if [ -f "$skill/join-fails" ]; then echo "Error: '$2' is permanently bound to another identity" >&2; exit 1; fi
# Leaves a process behind that holds join.sh's stderr open.
if [ -f "$skill/join-lingers" ]; then sleep 30 & fi
echo "Joined team $1 as $2"
"#,
        skill = skill.display()
    )
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
        let skill = dir.path().join("agmsg");
        std::fs::create_dir_all(skill.join("scripts")).unwrap();
        let join = skill.join("scripts/join.sh");
        std::fs::write(&join, fake_join(&skill)).unwrap();
        std::fs::set_permissions(&join, std::fs::Permissions::from_mode(0o755)).unwrap();
        Lab { server, dir, bin, records, tmp, path, skill }
    }

    /// The run directory's file `name`, if there is one.
    fn run_file(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.skill.join("run").join(name)).ok()
    }

    /// What the fake join.sh was called with, one line per call.
    fn joins(&self) -> String {
        std::fs::read_to_string(self.skill.join("joins")).unwrap_or_default()
    }

    /// agmsg-host as if inside the server's first pane.
    fn inside(&self) -> Env {
        self.outside().env("TMUX", &self.server.tmux_var()).env("TMUX_PANE", self.server.first_pane.rsplit_once(':').unwrap().1)
    }

    /// agmsg-host under no terminal, with the fake CLIs on its `PATH`.
    fn outside(&self) -> Env {
        Env::new().env("PATH", &self.path).env("TMPDIR", self.tmp.to_str().unwrap()).env("AGMSG_SKILL_DIR", self.skill.to_str().unwrap())
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
    let run = env.run(&[&["spawn"][..], &args, &["--json", "--no-wait"]].concat());
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
    let args =
        ["codex", "crew", "cody", "--project", project.to_str().unwrap(), "--spawn-arg", "--sandbox", "--spawn-arg", "workspace-write"];
    let boot_argv = json(&env.run(&[&["types", "boot-argv"][..], &args].concat()));
    let run = env.run(&[&["spawn"][..], &args, &["--placement", "pane-h"]].concat());
    let reference = run.ok().stdout.trim_end().to_owned();
    let pane = reference.strip_prefix("tmux:").unwrap_or_else(|| panic!("a tmux reference: {run:?}"));
    assert!(pane.starts_with(&format!("{sock}:%")), "{pane}");
    assert_eq!(lab.server.pane_count(), before + 1);
    let first_window = lab.server.query(&["display-message", "-p", "-t", socket_free(&lab.server.first_pane), "#{window_id}"]);
    assert_eq!(
        lab.server.query(&["display-message", "-p", "-t", socket_free(pane), "#{window_id}"]),
        first_window,
        "a split, not a window"
    );
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
    let run = lab.inside().env("AGMSG_TERMINAL_NAMING", "off").run(&[
        "spawn",
        "claude-code",
        "crew",
        "carol",
        "--project",
        project.to_str().unwrap(),
        "--json",
        "--no-wait",
    ]);
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
    let run = env.run(&[&["spawn"][..], &args, &["--terminal", "plain", "--json", "--no-wait"]].concat());
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
        (
            &env,
            vec!["gemini", "crew", "a", "--project", p],
            1,
            "gemini (the launch command of agent type gemini) is not an executable on PATH",
        ),
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
    let run = env.run(&[
        "spawn",
        "claude-code",
        "crew#(cd;touch PWNED-finding)",
        "bob",
        "--project",
        project.to_str().unwrap(),
        "--json",
        "--no-wait",
    ]);
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
        let args =
            ["spawn", "claude-code", team, agent, "--project", project.to_str().unwrap(), "--placement", placement, "--json", "--no-wait"];
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

/// Issue 27, item 3: after a spawn, agmsg's placement record `run/spawn.<team>__<agent>` (names
/// percent-encoded) holds `<reference>\t<project>\t<type>\n`; despawn by name reads it: `--force`
/// closes the pane and removes the record, a graceful despawn with no live lock does the same, and
/// one whose lock a live session holds sends `ctrl:despawn` and waits, bounded, for the release.
#[test]
fn the_placement_record_is_written_and_despawn_by_name_reads_it() {
    let lab = Lab::new();
    let env = lab.inside();
    let panes = lab.server.pane_count();
    let spawn = |agent: &str, project: &Path| {
        // codex has no readiness handshake: spawn returns once the pane is up.
        let run = env.run(&["spawn", "codex", "c#1", agent, "--project", project.to_str().unwrap(), "--json"]);
        let spawned = json(&run);
        lab.recorded(project);
        spawned
    };

    let project = lab.project("rec");
    let spawned = spawn("cody", &project);
    let reference = spawned["reference"].as_str().unwrap().to_owned();
    let record = lab.skill.join("run/spawn.c%231__cody");
    assert_eq!(spawned["record"], record.to_str().unwrap());
    let bare = socket_free(&reference);
    assert_eq!(std::fs::read_to_string(&record).unwrap(), format!("{bare}\t{}\tcodex\n", project.display()), "the record's bytes");
    let own = lab.skill.join("run/agmsg-host.spawn.c%231__cody");
    assert_eq!(std::fs::read_to_string(&own).unwrap(), format!("{reference}\n"), "the whole reference beside it");
    assert_eq!(spawned["ready"], "skipped");
    assert_eq!(lab.server.pane_count(), panes + 1);

    let run = env.run(&["despawn", "c#1", "lead", "cody", "--force"]);
    assert_eq!((run.code, run.stdout.as_str()), (0, "status=forced name=cody team=c#1\n"), "{run:?}");
    assert!(!record.exists() && !own.exists(), "the record is removed, and agmsg-host's beside it");
    assert_eq!(lab.server.pane_count(), panes, "the recorded window is closed");
    let run = env.run(&["despawn", "c#1", "lead", "cody", "--force"]);
    assert_eq!((run.code, run.stdout.as_str()), (1, ""), "{run:?}");
    assert!(run.stderr.contains("no placement record for 'c#1/cody'"), "{run:?}");
    // A record agmsg 1.2.1's own spawn.sh wrote: a bare tmux pane id, on the caller's server.
    let pane = lab.server.query(&["split-window", "-d", "-P", "-F", "#{pane_id}", "-t", socket_free(&lab.server.first_pane), "sleep 600"]);
    assert_eq!(lab.server.pane_count(), panes + 1);
    std::fs::write(lab.skill.join("run/spawn.c%231__old"), format!("{pane}\t{}\tcodex\n", project.display())).unwrap();
    let run = env.run(&["despawn", "c#1", "lead", "old", "--force"]);
    assert_eq!((run.code, run.stdout.as_str()), (0, "status=forced name=old team=c#1\n"), "{run:?}");
    assert_eq!(lab.server.pane_count(), panes, "the legacy record's pane is closed: {run:?}");

    // Names are data, checked before any file is looked up: `..` cannot reach out of run/.
    for (team, agent) in [("c#1", "../../x"), ("a:b", "cody")] {
        let run = env.run(&["despawn", team, "lead", agent]);
        assert_eq!((run.code, run.stdout.as_str()), (1, ""), "{run:?}");
        assert!(run.stderr.contains("must not contain"), "{run:?}");
    }

    // Graceful, and no session holds the role: torn down from here all the same.
    let project = lab.project("rec2");
    spawn("dora", &project);
    let run = env.run(&["despawn", "c#1", "lead", "dora"]);
    assert_eq!((run.code, run.stdout.as_str()), (0, "status=ok name=dora team=c#1 note=no-live-lock\n"), "{run:?}");
    assert_eq!(lab.server.pane_count(), panes);
    assert!(lab.run_file("spawn.c%231__dora").is_none());

    // A live session holds the role: ctrl:despawn is sent and the wait is bounded.
    let project = lab.project("rec3");
    spawn("eve", &project);
    let lock = lab.skill.join("run/actas.c%231__eve.session");
    std::fs::write(&lock, format!("sess.{}\n", std::process::id())).unwrap();
    let started = Instant::now();
    let run = env.run(&["despawn", "c#1", "lead", "eve", "--timeout", "1"]);
    assert_eq!((run.code, run.stdout.as_str()), (3, "status=timeout name=eve team=c#1 after=1s\n"), "{run:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "bounded: {:?}", started.elapsed());
    assert!(run.stderr.contains("retry with --force"), "{run:?}");
    assert!(lab.run_file("spawn.c%231__eve").is_some(), "a timeout leaves the record");
    let unread = env.run(&["storage", "list-unread", "c#1", "eve"]);
    let messages = unread.ok().json();
    assert_eq!(messages.len(), 1, "{unread:?}");
    assert_eq!((messages[0]["from"].as_str(), messages[0]["body"].as_str()), (Some("lead"), Some("ctrl:despawn")));
    // The member's watcher drops the role a second later: the despawn ends then.
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(1));
        std::fs::remove_file(&lock).unwrap();
    });
    let run = env.run(&["despawn", "c#1", "lead", "eve", "--timeout", "30"]);
    releaser.join().unwrap();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.starts_with("status=ok name=eve team=c#1 after="), "{run:?}");
    assert!(lab.run_file("spawn.c%231__eve").is_none(), "the record is removed");
}

/// Issue 27, item 3: spawn waits for the readiness sentinel `run/ready.<team>__<agent>` (agmsg's
/// watcher creates it) where agmsg waits: a stale one is removed first, an agent that becomes ready
/// late is waited for, one that never does ends the wait at `--ready-timeout` with exit 3.
#[test]
fn spawn_waits_for_readiness_and_the_wait_is_bounded() {
    let lab = Lab::new();
    let env = lab.inside();
    std::fs::create_dir_all(lab.skill.join("run")).unwrap();

    let project = lab.project("late");
    let sentinel = lab.skill.join("run/ready.crew__late");
    std::fs::write(&sentinel, "").unwrap();
    std::fs::write(lab.records.join("late.ready-at"), sentinel.to_str().unwrap()).unwrap();
    let run = env.run(&["spawn", "claude-code", "crew", "late", "--project", project.to_str().unwrap(), "--ready-timeout", "30"]);
    let lines = run.ok().lines();
    assert_eq!(lines.len(), 2, "{run:?}");
    assert!(lines[0].starts_with("tmux:"), "the reference first: {run:?}");
    let after: u64 =
        lines[1].strip_prefix("status=ready name=late team=crew after=").and_then(|s| s.strip_suffix('s')).unwrap().parse().unwrap();
    assert!(after < 30, "{run:?}");
    // The stale sentinel did not count: the agent made the one spawn saw only after the stale one was
    // gone (a spawn that took the stale one would have answered while the agent still waited).
    assert_eq!(std::fs::read_to_string(lab.records.join("late.ready-seen")).ok().as_deref(), Some("absent\n"), "{run:?}");
    assert!(sentinel.exists());

    let project = lab.project("never");
    let started = Instant::now();
    let run = env.run(&["spawn", "claude-code", "crew", "never", "--project", project.to_str().unwrap(), "--ready-timeout", "2"]);
    assert!(started.elapsed() < Duration::from_secs(15), "bounded: {:?}", started.elapsed());
    assert_eq!(run.code, 3, "{run:?}");
    let lines = run.lines();
    assert_eq!(lines.len(), 2, "{run:?}");
    assert!(lines[0].starts_with("tmux:"), "{run:?}");
    assert_eq!(lines[1], "status=timeout name=never team=crew after=2s");
    assert!(run.stderr.contains("did not signal ready within 2s"), "{run:?}");
    assert!(lab.run_file("spawn.crew__never").is_some(), "the pane and its record stay");

    // --no-wait, and a type with no handshake (codex, monitor=no): no wait at all.
    let project = lab.project("nowait");
    let started = Instant::now();
    let spawned =
        json(&env.run(&["spawn", "claude-code", "crew", "nowait", "--project", project.to_str().unwrap(), "--no-wait", "--json"]));
    assert_eq!(spawned["ready"], "skipped");
    assert!(started.elapsed() < Duration::from_secs(20));
    let project = lab.project("codex-nowait");
    let run = env.run(&["spawn", "codex", "crew", "cx", "--project", project.to_str().unwrap(), "--json"]);
    assert_eq!(json(&run)["ready"], "skipped");
    assert!(run.stderr.contains("no readiness handshake"), "{run:?}");
}

/// Issue 27, item 3: a role whose actas lock a live session holds is refused (exit 1, as agmsg) before
/// anything is joined, launched or recorded; a lock whose owner died does not stop the spawn.
#[test]
fn a_role_held_by_a_live_session_is_refused_before_anything_runs() {
    let lab = Lab::new();
    let env = lab.inside();
    let project = lab.project("held");
    let p = project.to_str().unwrap();
    std::fs::create_dir_all(lab.skill.join("run")).unwrap();
    let lock = lab.skill.join("run/actas.crew__held.session");
    let owner = format!("sess-1.{}", std::process::id());
    std::fs::write(&lock, format!("{owner}\n")).unwrap();
    let panes = lab.server.pane_count();
    let run = env.run(&["spawn", "claude-code", "crew", "held", "--project", p, "--no-wait"]);
    assert_eq!((run.code, run.stdout.as_str()), (1, ""), "{run:?}");
    assert!(run.stderr.contains(&format!("actas 'held' in team 'crew' is held by a live session ({owner})")), "{run:?}");
    assert_eq!(lab.server.pane_count(), panes, "no pane");
    assert_eq!(lab.joins(), "", "not joined");
    assert!(lab.run_file("spawn.crew__held").is_none(), "no record");

    std::fs::write(&lock, format!("sess-1.{}\n", common::pid::dead_pid())).unwrap();
    env.run(&["spawn", "claude-code", "crew", "held", "--project", p, "--no-wait"]).ok();
    lab.recorded(&project);
}

/// Issue 27, item 3: the agent is joined to its team for the project before launch, by agmsg's own
/// join.sh with the project kept as given; a failing join stops the spawn; no agmsg install is a
/// warning; with agmsg's real scripts the roster (teams/<team>/config.json) has the member.
#[test]
fn the_agent_is_pre_joined_through_agmsgs_join() {
    let lab = Lab::new();
    let env = lab.inside();
    let project = lab.project("joined");
    let p = project.to_str().unwrap();
    let spawned = json(&env.run(&["spawn", "claude-code", "crew", "bob", "--project", p, "--no-wait", "--json"]));
    assert_eq!(spawned["joined"], true);
    assert_eq!(lab.joins(), format!("crew|bob|claude-code|{p}|AGMSG_RESOLVE_PROJECT=0\n"));
    lab.recorded(&project);

    // A join that leaves a process holding its stderr: spawn does not wait for that process.
    std::fs::write(lab.skill.join("join-lingers"), "").unwrap();
    let project = lab.project("lingers");
    let started = Instant::now();
    env.run(&["spawn", "codex", "crew", "lin", "--project", project.to_str().unwrap()]).ok();
    assert!(started.elapsed() < Duration::from_secs(15), "spawn waited for join.sh's leftover: {:?}", started.elapsed());
    lab.recorded(&project);
    std::fs::remove_file(lab.skill.join("join-lingers")).unwrap();

    std::fs::write(lab.skill.join("join-fails"), "").unwrap();
    let panes = lab.server.pane_count();
    let run = env.run(&["spawn", "claude-code", "crew", "bob", "--project", p, "--no-wait"]);
    assert_eq!((run.code, run.stdout.as_str()), (1, ""), "{run:?}");
    assert!(run.stderr.contains("pre-joining bob to team crew failed") && run.stderr.contains("permanently bound"), "{run:?}");
    assert_eq!(lab.server.pane_count(), panes, "not launched");

    // No agmsg install: nothing to join, said as a warning; the spawn goes on.
    let bare = lab.dir.path().join("bare/agmsg");
    std::fs::create_dir_all(&bare).unwrap();
    let project = lab.project("unjoined");
    let run = lab.inside().env("AGMSG_SKILL_DIR", bare.to_str().unwrap()).run(&[
        "spawn",
        "codex",
        "crew",
        "cy",
        "--project",
        project.to_str().unwrap(),
        "--json",
    ]);
    let spawned = json(&run);
    assert_eq!(spawned["joined"], false);
    assert!(spawned["warnings"][0].as_str().unwrap().contains("cy was not pre-joined to crew"), "{run:?}");
    assert!(bare.join("run/spawn.crew__cy").is_file(), "the record is still written");

    // agmsg's own join.sh, when its repository is at hand.
    let Some(agmsg) = common::reference::scripts(&env, &["sqlite3", "bash"]) else { return };
    let project = lab.project("real");
    let p = project.to_str().unwrap();
    let real = lab.inside().env("AGMSG_SKILL_DIR", agmsg.to_str().unwrap());
    let run = real.run(&["spawn", "codex", "crew", "rita", "--project", p, "--json"]);
    assert_eq!(json(&run)["joined"], true, "{run:?}");
    lab.recorded(&project);
    let config: Value = serde_json::from_str(&std::fs::read_to_string(agmsg.join("teams/crew/config.json")).unwrap()).unwrap();
    let registrations = &config["agents"]["rita"]["registrations"];
    assert_eq!(registrations.as_array().map(Vec::len), Some(1), "{config}");
    assert_eq!(registrations[0]["type"], "codex");
    let registered = registrations[0]["project"].as_str().unwrap();
    assert!(registered == p || Path::new(registered) == project.canonicalize().unwrap(), "{registered} for {p}");
    // And despawn --force drops that registration through agmsg's reset.sh.
    let run = real.run(&["despawn", "crew", "lead", "rita", "--force"]);
    assert_eq!((run.code, run.stdout.as_str()), (0, "status=forced name=rita team=crew\n"), "{run:?}");
    assert!(!run.stderr.contains("warn"), "no step failed: {run:?}");
    let config: Value = serde_json::from_str(&std::fs::read_to_string(agmsg.join("teams/crew/config.json")).unwrap()).unwrap();
    let left = config["agents"]["rita"]["registrations"].as_array().map_or(0, Vec::len);
    assert_eq!(left, 0, "{config}");
}

/// Issue 27, item 3: `spawn_options.yaml` (agmsg's fixtures' cases) puts the type's options, and its
/// role's, on the command line where agmsg puts them; a malformed file stops the spawn (exit 1) naming
/// the line, before anything runs.
#[test]
fn spawn_options_are_applied_and_a_malformed_file_is_refused() {
    let lab = Lab::new();
    let file = lab.dir.path().join("spawn_options.yaml");
    let env = lab.inside().env("AGMSG_SPAWN_OPTIONS_FILE", file.to_str().unwrap());

    std::fs::write(
        &file,
        "claude-code:\n  --permission-mode: acceptEdits\n  --dangerously-skip-permissions: true\n  --append-system-prompt: preserve spaces exactly\n  \
         --disabled: false\ncodex:   # base options\n  --sandbox: workspace-write\ncodex@architect:    \n  -p: architect\n",
    )
    .unwrap();
    let project = lab.project("opts");
    let args = ["spawn", "claude-code", "crew", "opt", "--project", project.to_str().unwrap(), "--no-wait", "--spawn-arg", "--extra"];
    env.run(&args).ok();
    let (argv, _, _) = lab.recorded(&project);
    let expected = [
        "claude",
        "--permission-mode",
        "acceptEdits",
        "--dangerously-skip-permissions",
        "--append-system-prompt",
        "preserve spaces exactly",
        "--extra",
        "-n",
        "crew-opt",
        "/agmsg actas opt",
    ];
    assert_ran(&lab, &argv, &expected.map(String::from));

    // A role read from the agent's name (<project>_<role>_<vendor>), and an explicit one.
    let project = lab.project("opts-role");
    env.run(&["spawn", "codex", "crew", "app_architect_codex", "--project", project.to_str().unwrap()]).ok();
    let (argv, _, _) = lab.recorded(&project);
    assert_ran(
        &lab,
        &argv,
        &["codex", "--sandbox", "workspace-write", "-p", "architect", "$agmsg actas app_architect_codex"].map(String::from),
    );
    let project = lab.project("opts-explicit");
    env.run(&["spawn", "codex", "crew", "arch", "--project", project.to_str().unwrap(), "--role", "architect"]).ok();
    let (argv, _, _) = lab.recorded(&project);
    assert_ran(&lab, &argv, &["codex", "--sandbox", "workspace-write", "-p", "architect", "$agmsg actas arch"].map(String::from));

    let panes = lab.server.pane_count();
    let project = lab.project("opts-bad");
    let run = env.run(&["spawn", "codex", "crew", "w", "--project", project.to_str().unwrap(), "--role", "writer"]);
    assert_eq!((run.code, run.stdout.as_str()), (1, ""), "{run:?}");
    assert!(run.stderr.contains("codex@writer"), "{run:?}");
    std::fs::write(&file, "codex:\n\t--sandbox: workspace-write\n").unwrap();
    let run = env.run(&["spawn", "codex", "crew", "w", "--project", project.to_str().unwrap()]);
    assert_eq!((run.code, run.stdout.as_str()), (1, ""), "{run:?}");
    assert!(run.stderr.contains(file.to_str().unwrap()) && run.stderr.contains("line 2: indented with a tab"), "{run:?}");
    assert_eq!(lab.server.pane_count(), panes, "nothing launched");
    assert!(!lab.records.join("opts-bad.argv").exists());
    assert_eq!(lab.joins().lines().filter(|l| l.starts_with("crew|w|")).count(), 0, "nor joined");

    // A required role overlay for codex (its manifest's profile contract: -p under CODEX_HOME): the
    // profile's file must exist, and the boot exports its directory.
    std::fs::write(&file, "agmsg.require-role-overlay:\n  codex: true\ncodex@architect:\n  -p: architect\n").unwrap();
    let profiles = lab.dir.path().join("codex-home");
    std::fs::create_dir(&profiles).unwrap();
    let env = env.env("CODEX_HOME", profiles.to_str().unwrap());
    let project = lab.project("opts-profile");
    let args = ["spawn", "codex", "crew", "prof", "--project", project.to_str().unwrap(), "--role", "architect", "--json"];
    let run = env.run(&args);
    assert_eq!((run.code, run.stdout.as_str()), (1, ""), "{run:?}");
    assert!(run.stderr.contains("architect.config.toml"), "{run:?}");
    let run = env.run(&["spawn", "codex", "crew", "prof", "--project", project.to_str().unwrap()]);
    assert_eq!(run.code, 1, "no role: {run:?}");
    assert!(run.stderr.contains("require a role overlay"), "{run:?}");
    assert_eq!(lab.server.pane_count(), panes, "nothing launched");
    std::fs::write(profiles.join("architect.config.toml"), "").unwrap();
    let spawned = json(&env.run(&args));
    assert_eq!(spawned["boot"]["env_set"]["CODEX_HOME"], profiles.canonicalize().unwrap().to_str().unwrap());
    let (argv, _, _) = lab.recorded(&project);
    assert_ran(&lab, &argv, &["codex", "-p", "architect", "$agmsg actas prof"].map(String::from));
}

/// Issue 35 §3: the placement record is shared with agmsg 1.2.1, whose despawn.sh acts only on a
/// bare tmux `%N`/`@N` (or `herdr:<id>`) in its first field, on the caller's tmux server. A pane
/// agmsg-host spawned is closed by agmsg's own `despawn.sh --force`, and a pane agmsg's own spawn.sh
/// opened is closed by `agmsg-host despawn --force`.
#[test]
fn each_programs_despawn_closes_the_others_pane() {
    let lab = Lab::new();
    let env = lab.inside();
    let Some(agmsg) = common::reference::scripts(&env, &["sqlite3", "bash", "tmux"]) else { return };
    let real = lab.inside().env("AGMSG_SKILL_DIR", agmsg.to_str().unwrap());
    let panes = lab.server.pane_count();

    // agmsg-host spawns; agmsg's despawn.sh --force closes the pane.
    let project = lab.project("host-spawned");
    let run = real.run(&["spawn", "codex", "crew", "hana", "--project", project.to_str().unwrap(), "--json"]);
    let spawned = json(&run);
    lab.recorded(&project);
    assert_eq!(lab.server.pane_count(), panes + 1);
    let reference = spawned["reference"].as_str().unwrap_or_else(|| panic!("{run:?}"));
    let record = std::fs::read_to_string(agmsg.join("run/spawn.crew__hana")).unwrap();
    assert_eq!(record, format!("{}\t{}\tcodex\n", socket_free(reference), project.display()), "agmsg's form of the record");
    let despawn = std::process::Command::new("bash")
        .arg(agmsg.join("scripts/despawn.sh"))
        .args(["crew", "lead", "hana", "--force"])
        .env("TMUX", lab.server.tmux_var())
        .env("HOME", env.dir.path())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&despawn.stdout);
    assert!(despawn.status.success() && out.contains("status=forced"), "{despawn:?}");
    assert_eq!(lab.server.pane_count(), panes, "agmsg's despawn closed agmsg-host's pane: {despawn:?}");
    assert!(!agmsg.join("run/spawn.crew__hana").exists());

    // agmsg's spawn.sh opens a pane; agmsg-host's despawn --force closes it.
    let project = lab.project("agmsg-spawned");
    let spawn = std::process::Command::new("bash")
        .arg(agmsg.join("scripts/spawn.sh"))
        .args(["codex", "ivo", "--team", "crew", "--no-wait", "--project"])
        .arg(&project)
        .env("TMUX", lab.server.tmux_var())
        .env("TMUX_PANE", socket_free(&lab.server.first_pane))
        .env("PATH", &lab.path)
        .env("HOME", env.dir.path())
        .env("TMPDIR", &lab.tmp)
        .output()
        .unwrap();
    assert!(spawn.status.success(), "agmsg's spawn.sh: {spawn:?}");
    lab.recorded(&project);
    assert_eq!(lab.server.pane_count(), panes + 1);
    let run = real.run(&["despawn", "crew", "lead", "ivo", "--force"]);
    assert_eq!((run.code, run.stdout.as_str()), (0, "status=forced name=ivo team=crew\n"), "{run:?}");
    assert_eq!(lab.server.pane_count(), panes, "agmsg-host's despawn closed agmsg's pane: {run:?}");
    assert!(!agmsg.join("run/spawn.crew__ivo").exists());
}
