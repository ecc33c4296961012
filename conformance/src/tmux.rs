//! The terminal contract (spec §6) rules that drive real panes, for drivers that run tmux: each rule
//! starts a private tmux server on a socket in a temporary directory, runs the driver as if from inside
//! that server's first pane (`TMUX`, `TMUX_PANE`), and checks the driver's answers against the server's
//! own state. The rules use only the contract's ops and ids as the driver prints them, so they hold for
//! any tmux-like driver, not just the bundled one.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::{Env, Harness, Rule, Run};

/// A tmux server of our own, on a socket in a temp dir; killed when dropped.
pub struct TmuxServer {
    pub dir: tempfile::TempDir,
    pub socket: PathBuf,
    pub pid: String,
    /// The first pane, as `<socket>:%N` (the bundled tmux driver's id form).
    pub first_pane: String,
}

impl TmuxServer {
    /// Start one; panics (a failed rule) when tmux cannot be run.
    pub fn start() -> TmuxServer {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let socket = dir.path().join("sock");
        let mut server = TmuxServer { socket, dir, pid: String::new(), first_pane: String::new() };
        let status = server.tmux(&["-f", "/dev/null", "new-session", "-d", "-s", "agmsg-test", "-x", "160", "-y", "48"]).status();
        match status {
            Ok(status) => assert!(status.success(), "starting a private tmux server failed ({status})"),
            Err(e) => panic!("cannot run tmux ({e}): the pane rules need tmux installed"),
        }
        server.pid = server.query(&["display-message", "-p", "-t", "agmsg-test", "#{pid}"]);
        let pane = server.query(&["display-message", "-p", "-t", "agmsg-test", "#{pane_id}"]);
        server.first_pane = format!("{}:{pane}", server.socket.display());
        server
    }

    /// Raw `tmux -S <socket> ...`, with a small clean environment.
    pub fn tmux(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("SHELL", "/bin/sh")
            .env("TERM", "xterm")
            .arg("-S")
            .arg(&self.socket)
            .args(args);
        cmd
    }

    pub fn query(&self, args: &[&str]) -> String {
        let out = self.tmux(args).output().expect("running tmux");
        assert!(out.status.success(), "tmux {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim_end().to_owned()
    }

    /// `$TMUX` as tmux sets it inside its panes: `socket,pid,session`.
    pub fn tmux_var(&self) -> String {
        format!("{},{},0", self.socket.display(), self.pid)
    }

    /// An environment running as if inside this server's first pane.
    pub fn inside(&self, harness: &Harness) -> Env {
        let pane = self.first_pane.rsplit_once(':').expect("socket:%N").1.to_owned();
        Env::new(harness).env("TMUX", &self.tmux_var()).env("TMUX_PANE", &pane)
    }

    /// How many panes the server has, by its own account.
    pub fn pane_count(&self) -> usize {
        self.query(&["list-panes", "-a", "-F", "#{pane_id}"]).lines().count()
    }
}

impl Drop for TmuxServer {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]).output();
    }
}

fn run(env: &Env, driver: &str, args: &[&str]) -> Run {
    let mut all = vec!["terminal", "--driver", driver];
    all.extend_from_slice(args);
    env.run(&all)
}

/// The capabilities `describe` declares.
fn capabilities(env: &Env, driver: &str) -> Vec<String> {
    let describe = run(env, driver, &["describe"]);
    let line = describe.lines().iter().find_map(|l| l.strip_prefix("capabilities=").map(str::to_owned)).unwrap_or_default();
    line.split_whitespace().map(str::to_owned).collect()
}

/// Spawn a shell pane; its id as the driver printed it.
#[track_caller]
fn spawn(env: &Env, driver: &str, server: &TmuxServer, name: &str, target: &str) -> String {
    let before = server.pane_count();
    let spawned = run(env, driver, &["spawn", name, server.dir.path().to_str().unwrap(), target, "sh"]);
    assert_eq!(spawned.code, 0, "spawn {target} succeeds: {spawned:?}");
    let lines = spawned.lines();
    assert_eq!(lines.len(), 1, "spawn prints one id: {spawned:?}");
    assert_eq!(server.pane_count(), before + 1, "the server has one more pane after spawn");
    lines[0].to_owned()
}

fn wait_for_text(env: &Env, driver: &str, id: &str, needle: &str) {
    let started = Instant::now();
    loop {
        let peek = run(env, driver, &["peek", id]);
        assert_eq!(peek.code, 0, "peek {id}: {peek:?}");
        if peek.stdout.contains(needle) {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "pane {id} never showed {needle:?}; peek printed:\n{}", peek.stdout);
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn detect_names_the_callers_pane(harness: &Harness, driver: &str) {
    let server = TmuxServer::start();
    let env = server.inside(harness);
    let detect = run(&env, driver, &["detect", "session-1"]);
    assert_eq!(detect.code, 0, "inside tmux, detect finds the pane: {detect:?}");
    let id = detect.stdout.trim_end();
    assert!(!id.is_empty() && detect.lines().len() == 1, "detect prints one id: {detect:?}");
    let state = run(&env, driver, &["pane-state", id]);
    assert_eq!((state.code, state.stdout.as_str()), (0, "present\n"), "the detected pane is present: {state:?}");
}

fn a_pane_from_spawn_to_gone(harness: &Harness, driver: &str) {
    let server = TmuxServer::start();
    let env = server.inside(harness);
    let pane = spawn(&env, driver, &server, "worker", "pane-v");
    let state = run(&env, driver, &["pane-state", &pane]);
    assert_eq!((state.code, state.stdout.as_str()), (0, "present\n"), "{state:?}");

    // What is poked is typed and submitted: its output, not just the text, comes back through peek.
    let poke = run(&env, driver, &["poke", &pane, "echo agmsg-$((6*7))"]);
    assert_eq!((poke.code, poke.stdout.as_str()), (0, "ok\n"), "{poke:?}");
    wait_for_text(&env, driver, &pane, "agmsg-42");
    let tail = run(&env, driver, &["peek", &pane, "--lines", "3"]);
    assert!(tail.code == 0 && tail.stdout.contains("agmsg-42"), "peek --lines still shows the screen: {tail:?}");

    let before = server.pane_count();
    let despawn = run(&env, driver, &["despawn", &pane]);
    assert_eq!((despawn.code, despawn.stdout.as_str()), (0, "ok\n"), "{despawn:?}");
    assert_eq!(server.pane_count(), before - 1, "the pane is gone from the server");
    let state = run(&env, driver, &["pane-state", &pane]);
    assert_eq!((state.code, state.stdout.as_str()), (0, "gone\n"), "a despawned pane is gone, by the server's answer: {state:?}");
}

fn name_and_arrange_as_declared(harness: &Harness, driver: &str) {
    let server = TmuxServer::start();
    let env = server.inside(harness);
    let declared = capabilities(&env, driver);
    let first = spawn(&env, driver, &server, "first", "pane-h");

    let name = run(&env, driver, &["name", &first, "crew", "builder"]);
    if declared.iter().any(|c| c == "name") {
        assert_eq!((name.code, name.stdout.as_str()), (0, "ok\n"), "name is declared: {name:?}");
        let label = run(&env, driver, &["label-of", &first]);
        assert!(label.code == 13 || label.stdout.contains("crew:builder"), "label-of, if supported, reads the name back: {label:?}");
    } else {
        assert_eq!(name.code, 13, "name is not declared, so it is unsupported: {name:?}");
    }

    let second = spawn(&env, driver, &server, "second", "pane-h");
    let arrange = run(&env, driver, &["arrange", &second, "place_below", &first]);
    if declared.iter().any(|c| c == "arrange") {
        assert_eq!((arrange.code, arrange.stdout.as_str()), (0, "moved\n"), "{arrange:?}");
        let again = run(&env, driver, &["arrange", &second, "place_below", &first]);
        assert_eq!((again.code, again.stdout.as_str()), (0, "unchanged\n"), "arranging again changes nothing: {again:?}");
    } else {
        assert_eq!(arrange.code, 13, "arrange is not declared, so it is unsupported: {arrange:?}");
    }
}

fn no_tmux_is_unknown_never_gone(harness: &Harness, driver: &str) {
    let server = TmuxServer::start();
    let env = server.inside(harness);
    let pane = spawn(&env, driver, &server, "worker", "pane-v");
    // The driver cannot ask (no tmux on PATH): the pane's state is unknown, and nothing is claimed.
    let blind = server.inside(harness).env("PATH", "/nonexistent");
    let state = run(&blind, driver, &["pane-state", &pane]);
    assert_eq!((state.code, state.stdout.as_str()), (10, "unknown\n"), "could not ask, so unknown: {state:?}");
    let poke = run(&blind, driver, &["poke", &pane, "hello"]);
    assert_ne!(poke.code, 0, "a poke that cannot reach tmux fails: {poke:?}");
    let state = run(&env, driver, &["pane-state", &pane]);
    assert_eq!(state.stdout, "present\n", "and the pane is still there: {state:?}");
}

/// Names that tmux reads as syntax when a driver passes them through as they are: format expansion
/// (`#(` runs a shell command with the user's rights, `#{` expands a variable, `#[` is a style, `##`
/// and `#W` are escapes and aliases), tmux's own argv parser (an argument ending in `;` ends the
/// command there, one ending in `\;` loses its backslash), and shell syntax, quotes and a leading `-`
/// for good measure. Each command, if one ran, creates a `PWNED-*` file in tmux's `$HOME`.
pub const HOSTILE_NAMES: &[&str] = &[
    "w#(cd;touch PWNED-1)",
    "#{pane_id}#{session_name}#W",
    "#[fg=red]r##d#",
    "a;",
    "x\\;",
    "q'\"`cd;touch PWNED-2` $(cd;touch PWNED-3)",
    "-lead",
    "#;",
];

/// Team / agent pairs of the same kind that pass the name rules (no `/`, `\`, `:`, `..`, control).
pub const HOSTILE_PAIRS: &[(&str, &str)] = &[
    ("crew#(cd;touch PWNED-4)", "bob"),
    ("#{pane_id}", "#[fg=red]x##"),
    ("t;", "a;"),
    ("-team", "$(cd;touch PWNED-5)`cd;touch PWNED-6`"),
    ("q'\"", "#W;"),
];

/// A project directory whose path is hostile in the same ways, created under `dir`.
pub fn hostile_project(dir: &std::path::Path) -> PathBuf {
    let project = dir.join("p#(cd;touch PWNED-7)#{pane_id}##[x] $(cd;touch PWNED-8);");
    std::fs::create_dir_all(&project).expect("creating the hostile project directory");
    project
}

/// Any `PWNED-*` file a hostile name made run: in tmux's `$HOME` (the server directory), the
/// caller's, or `/` (the host runs programs there). Format jobs run in the background, so it waits a
/// moment first.
#[track_caller]
pub fn assert_nothing_ran(dirs: &[&std::path::Path]) {
    std::thread::sleep(Duration::from_millis(800));
    for dir in dirs.iter().copied().chain([std::path::Path::new("/")]) {
        let ran: Vec<String> = std::fs::read_dir(dir)
            .map(|entries| entries.filter_map(Result::ok).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        let ran: Vec<&String> = ran.iter().filter(|name| name.starts_with("PWNED-")).collect();
        assert!(ran.is_empty(), "a name was run as a command: {ran:?} appeared in {}", dir.display());
    }
}

/// The bare `%N` / `@N` a target of the server takes, from an id as the bundled driver prints it.
fn bare(id: &str) -> &str {
    id.rsplit_once(':').map_or(id, |(_, bare)| bare)
}

/// Poll `#{pane_current_path}` of `target` until it is `want` (a new pane's shell takes a moment).
#[track_caller]
fn wait_for_cwd(server: &TmuxServer, target: &str, want: &str) {
    let started = Instant::now();
    loop {
        let cwd = server.query(&["display-message", "-p", "-t", target, "#{pane_current_path}"]);
        if cwd == want {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "the pane {target} runs in {cwd:?}, not the project {want:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Names, labels, project paths and poked text reach tmux as data: nothing runs, and what tmux holds
/// (window name, pane title, `label-of`'s key, the pane's directory, the typed line) reads back byte
/// for byte as given. A visible name a driver chooses not to set is allowed; a mangled one is not.
fn hostile_names_are_data(harness: &Harness, driver: &str) {
    let server = TmuxServer::start();
    let env = server.inside(harness);
    let declared = capabilities(&env, driver);
    let names = declared.iter().any(|c| c == "name");
    let project = hostile_project(server.dir.path());
    let project_text = project.to_str().expect("a UTF-8 temp dir");
    let first = bare(&server.first_pane).to_owned();
    let default_title = server.query(&["display-message", "-p", "-t", &first, "#{pane_title}"]);

    for (i, name) in HOSTILE_NAMES.iter().enumerate() {
        // Splits make the caller's pane smaller: every other name goes to a window, and each pane is
        // closed once checked.
        let target = if i % 2 == 0 { "window" } else { "pane-v" };
        let spawned = run(&env, driver, &["spawn", name, project_text, target, "sh"]);
        assert_eq!(spawned.code, 0, "spawn {target} named {name:?} in {project_text:?} succeeds: {spawned:?}");
        let id = spawned.stdout.trim_end().to_owned();
        let pane = server.query(&["display-message", "-p", "-t", bare(&id), "#{pane_id}"]);
        wait_for_cwd(&server, &pane, project_text);
        let (window_name, title) = (
            server.query(&["display-message", "-p", "-t", &pane, "#{window_name}"]),
            server.query(&["display-message", "-p", "-t", &pane, "#{pane_title}"]),
        );
        // Set, it is the name as given; unset, it is tmux's own (the command's name, the host name).
        assert!(window_name == *name || window_name == "sh" || target != "window", "window named {name:?} reads {window_name:?}");
        assert!(title == *name || title == default_title || target == "window", "pane titled {name:?} reads {title:?}");

        if names {
            let (team, agent) = HOSTILE_PAIRS[i % HOSTILE_PAIRS.len()];
            let label = format!("{team}:{agent}");
            let named = run(&env, driver, &["name", &id, team, agent]);
            assert_eq!((named.code, named.stdout.as_str()), (0, "ok\n"), "name {id} {team:?} {agent:?}: {named:?}");
            let read = run(&env, driver, &["label-of", &id]);
            if read.code == 0 {
                assert_eq!(read.stdout, format!("{label}\n"), "label-of reads the key back as written: {read:?}");
            }
            let found = run(&env, driver, &["find-by-label", &label]);
            if found.code == 0 && target == "pane-v" {
                assert!(found.lines().contains(&id.as_str()), "find-by-label finds the named pane: {found:?}");
            }
            let visible = match target {
                "window" => server.query(&["display-message", "-p", "-t", &pane, "#{window_name}"]),
                _ => server.query(&["display-message", "-p", "-t", &pane, "#{pane_title}"]),
            };
            let before = if target == "window" { &window_name } else { &title };
            assert!(visible == label || visible == *before, "named {label:?}, the visible name reads {visible:?}");
        }

        // Text typed into the pane arrives as typed: a shell comment, so the shell runs none of it.
        let text = format!("# {name} #(cd;touch PWNED-9) {name}");
        let poke = run(&env, driver, &["poke", &id, &text]);
        assert_eq!((poke.code, poke.stdout.as_str()), (0, "ok\n"), "poke {text:?}: {poke:?}");
        wait_for_text(&env, driver, &id, &text);

        if target != "window" {
            let despawn = run(&env, driver, &["despawn", &id]);
            assert_eq!(despawn.code, 0, "{despawn:?}");
        }
    }

    // Boot words are the pane's argv, each as given (one ending in `;` too). The word file appears whole
    // (written aside, then renamed): the shell's `>` creates it before printf fills it, and a look in
    // between read it empty.
    let script = server.dir.path().join("write-word.sh");
    std::fs::write(&script, "printf %s \"$2\" > \"$1.part\" && mv \"$1.part\" \"$1\"\n").expect("writing the boot's script");
    let out = server.dir.path().join("boot-word");
    let word = "$(cd;touch PWNED-10) `cd;touch PWNED-11` #(cd;touch PWNED-12) #{pane_id} it's \"q\" a;";
    let (script_text, out_text) = (script.to_str().expect("UTF-8"), out.to_str().expect("UTF-8"));
    for target in ["window", "pane-v"] {
        let spawned = run(&env, driver, &["spawn", "boot", project_text, target, "/bin/sh", script_text, out_text, word]);
        assert_eq!(spawned.code, 0, "spawn {target} with a hostile boot word: {spawned:?}");
        let started = Instant::now();
        while !out.exists() && started.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(25));
        }
        let written = std::fs::read_to_string(&out).unwrap_or_default();
        assert_eq!(written, word, "spawn {target}: the boot got its words exactly");
        std::fs::remove_file(&out).expect("removing the boot's output");
    }
    assert_nothing_ran(&[server.dir.path(), env.dir.path()]);
}

/// Every pane rule, in the order they are reported.
pub const PANE_RULES: &[Rule] = &[
    Rule { name: "detect_names_the_callers_pane", check: detect_names_the_callers_pane },
    Rule { name: "a_pane_from_spawn_to_gone", check: a_pane_from_spawn_to_gone },
    Rule { name: "name_and_arrange_as_declared", check: name_and_arrange_as_declared },
    Rule { name: "no_tmux_is_unknown_never_gone", check: no_tmux_is_unknown_never_gone },
    Rule { name: "hostile_names_are_data", check: hostile_names_are_data },
];
