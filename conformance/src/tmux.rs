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
        assert!(started.elapsed() < Duration::from_secs(10), "pane {id} never showed {needle:?}; peek printed:\n{}", peek.stdout);
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

/// Every pane rule, in the order they are reported.
pub const PANE_RULES: &[Rule] = &[
    Rule { name: "detect_names_the_callers_pane", check: detect_names_the_callers_pane },
    Rule { name: "a_pane_from_spawn_to_gone", check: a_pane_from_spawn_to_gone },
    Rule { name: "name_and_arrange_as_declared", check: name_and_arrange_as_declared },
    Rule { name: "no_tmux_is_unknown_never_gone", check: no_tmux_is_unknown_never_gone },
];
