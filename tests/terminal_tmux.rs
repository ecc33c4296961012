//! The bundled tmux driver against a real tmux server on a private socket, beyond the contract's pane
//! rules (`agmsg_conformance::tmux`): its exact ids, titles, windows and geometry, hostile ids, dead
//! servers; and the §6.3 resolvers.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use agmsg_conformance::tmux::TmuxServer;
use common::{Env, Run};

/// A private tmux server (the contract suite's), and agmsg-host as if inside its first pane.
fn start() -> (TmuxServer, Env) {
    let server = TmuxServer::start();
    let env = inside(&server);
    (server, env)
}

/// agmsg-host as if inside `server`'s first pane.
fn inside(server: &TmuxServer) -> Env {
    Env(server.inside(&common::harness()))
}

fn terminal(env: &Env, args: &[&str]) -> Run {
    let mut all = vec!["terminal"];
    all.extend_from_slice(args);
    env.run(&all)
}

/// Peek until the pane shows `needle` (a shell takes a moment to run what was typed).
fn wait_for_text(env: &Env, id: &str, needle: &str) -> String {
    let started = Instant::now();
    loop {
        let run = terminal(env, &["peek", id]);
        run.ok();
        if run.stdout.contains(needle) {
            return run.stdout;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "pane {id} never showed {needle:?}:\n{}", run.stdout);
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn socket_of(id: &str) -> &str {
    id.rsplit_once(':').unwrap().0
}

#[test]
fn a_pane_from_spawn_to_gone() {
    let (server, env) = start();
    let sock = server.socket.display().to_string();
    assert_eq!(terminal(&env, &["--driver", "tmux", "check"]).stdout, "ok\n");
    assert_eq!(terminal(&env, &["--driver", "tmux", "detect", "session-1"]).stdout, format!("{}\n", server.first_pane));

    // Spawn a pane running a shell, below the caller's pane.
    let run = terminal(&env, &["--driver", "tmux", "spawn", "worker", server.dir.path().to_str().unwrap(), "pane-v", "sh"]);
    let pane = run.ok().stdout.trim_end().to_owned();
    assert!(pane.starts_with(&format!("{sock}:%")), "{run:?}");
    assert_eq!(terminal(&env, &["pane-state", &format!("tmux:{pane}")]).stdout, "present\n");

    // Poke a command in; its output (not just the typed text) comes back through peek.
    assert_eq!(terminal(&env, &["--driver", "tmux", "poke", &pane, "echo agmsg-$((6*7))"]).stdout, "ok\n");
    let text = wait_for_text(&env, &format!("tmux:{pane}"), "agmsg-42");
    assert!(text.contains("echo agmsg-$((6*7))"), "{text}");
    let tail = terminal(&env, &["--driver", "tmux", "peek", &pane, "--lines", "5"]);
    assert_eq!(tail.code, 0, "{tail:?}");

    // Name it and read the label back, both ways.
    assert_eq!(terminal(&env, &["--driver", "tmux", "name", &pane, "crew", "builder"]).stdout, "ok\n");
    assert!(terminal(&env, &["--driver", "tmux", "label-of", &pane]).stdout.contains("crew:builder"));
    let found = terminal(&env, &["--driver", "tmux", "find-by-label", "crew:builder"]);
    assert_eq!(found.ok().lines(), [pane.as_str()], "{found:?}");
    let title = server.query(&["display-message", "-p", "-t", socket_free(&pane), "#{pane_title}"]);
    assert_eq!(title, "crew:builder");

    // Where: its window, socket-qualified like the id.
    let window = server.query(&["display-message", "-p", "-t", socket_free(&pane), "#{window_id}"]);
    assert_eq!(terminal(&env, &["--driver", "tmux", "where", &pane]).stdout, format!("{sock}:{window}\n"));

    // Arrange: a second pane to the right, then placed below the first: moved, then unchanged.
    let second = terminal(&env, &["--driver", "tmux", "spawn", "second", "/", "pane-h", "sh"]).ok().stdout.trim_end().to_owned();
    assert_eq!(terminal(&env, &["--driver", "tmux", "arrange", &second, "place_below", &pane]).stdout, "moved\n");
    assert_eq!(terminal(&env, &["--driver", "tmux", "arrange", &second, "place_below", &pane]).stdout, "unchanged\n");
    let geometry = |id: &str| {
        let g = server.query(&["display-message", "-p", "-t", socket_free(id), "#{pane_left} #{pane_top} #{pane_width} #{pane_height}"]);
        g.split(' ').map(|n| n.parse::<u32>().unwrap()).collect::<Vec<_>>()
    };
    let (a, b) = (geometry(&pane), geometry(&second));
    assert_eq!((b[0], b[2], b[1]), (a[0], a[2], a[1] + a[3] + 1), "second is right below the first");

    // Despawn: gone is a positive answer from the server.
    assert_eq!(terminal(&env, &["--driver", "tmux", "despawn", &second]).stdout, "ok\n");
    assert_eq!(terminal(&env, &["--driver", "tmux", "despawn", &pane]).stdout, "ok\n");
    let state = terminal(&env, &["--driver", "tmux", "pane-state", &pane]);
    assert_eq!((state.code, state.stdout.as_str()), (0, "gone\n"));
    assert_eq!(socket_of(&pane), sock);
}

fn socket_free(id: &str) -> &str {
    id.rsplit_once(':').unwrap().1
}

#[test]
fn malformed_and_hostile_ids_fail_closed() {
    let (server, env) = start();
    let marker = server.dir.path().join("pwned");
    let hostile = format!("%0;touch {}", marker.display());
    for args in [
        vec!["--driver", "tmux", "peek", hostile.as_str()],
        vec!["--driver", "tmux", "poke", "%9;kill-server", "x"],
        vec!["--driver", "tmux", "despawn", "alice"],
        vec!["poke", "tmux:%9;kill", "x"],
        vec!["peek", "tmux:alice"],
        vec!["--driver", "tmux", "pane-state", ":%3"],
    ] {
        let run = terminal(&env, &args);
        assert_eq!(run.code, 13, "{args:?}: {run:?}");
    }
    assert!(!marker.exists());
    assert_eq!(terminal(&env, &["pane-state", &format!("tmux:{}", server.first_pane)]).stdout, "present\n", "the server is alive");
    // A bare id has no socket: tmux cannot be asked reliably, so the answer is unknown, never gone.
    let bare = terminal(&env, &["--driver", "tmux", "pane-state", "%0"]);
    assert_eq!((bare.code, bare.stdout.as_str()), (10, "unknown\n"));
    // No socket file at all: tmux could not be asked, so unknown.
    let missing = format!("{}:%0", server.dir.path().join("no-such-socket").display());
    let run = terminal(&env, &["--driver", "tmux", "pane-state", &missing]);
    assert_eq!((run.code, run.stdout.as_str()), (10, "unknown\n"), "{run:?}");
    // A server that died (SIGKILL leaves its socket): tmux says "no server running", a positive gone.
    let doomed = TmuxServer::start();
    Command::new("kill").args(["-KILL", &doomed.pid]).status().unwrap();
    // Waited for (the kill lands when the kernel gets to it); the bound is liveness only.
    let started = Instant::now();
    while doomed.tmux(&["list-sessions"]).output().unwrap().status.success() {
        assert!(started.elapsed() < Duration::from_secs(120), "the SIGKILLed tmux server still answers after 120 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(doomed.socket.exists(), "the killed server left its socket behind");
    let run = terminal(&env, &["--driver", "tmux", "pane-state", &doomed.first_pane]);
    assert_eq!((run.code, run.stdout.as_str()), (0, "gone\n"), "{run:?}");
}

#[test]
fn resolution() {
    let server = TmuxServer::start();
    let outside = Env::new();
    assert_eq!(terminal(&outside, &["resolve-name", "s"]).stdout, "plain\t-\n");
    assert_eq!(terminal(&outside, &["resolve-placement", "s"]).stdout, "plain\t-\n");

    let in_pane = inside(&server);
    assert_eq!(terminal(&in_pane, &["resolve-name", "s"]).stdout, format!("tmux\t{}\n", server.first_pane));
    assert_eq!(terminal(&in_pane, &["resolve-placement", "s"]).stdout, format!("tmux\t{}\n", server.first_pane));

    // Under tmux without TMUX_PANE: present but cannot name the pane, so naming fails loudly instead
    // of falling back to plain; placement only needs presence.
    let no_pane = Env::new().env("TMUX", &server.tmux_var());
    let run = terminal(&no_pane, &["resolve-name", "s"]);
    assert_eq!((run.code, run.stdout.as_str()), (10, ""), "{run:?}");
    assert!(run.stderr.contains("cannot identify this pane") && run.stderr.contains("tmux:"), "{run:?}");
    assert_eq!(terminal(&no_pane, &["resolve-placement", "s"]).stdout, "tmux\t\n");

    let forced = inside(&server).env("AGMSG_TERMINAL_DRIVER", "plain");
    assert_eq!(terminal(&forced, &["resolve-name", "s"]).stdout, "plain\t-\n");
    let unknown = inside(&server).env("AGMSG_TERMINAL_DRIVER", "screen");
    let run = terminal(&unknown, &["resolve-name", "s"]);
    assert_eq!(run.code, 13, "{run:?}");
    assert!(run.stderr.contains("unknown terminal driver 'screen' (AGMSG_TERMINAL_DRIVER)"), "{run:?}");
}

#[test]
fn list_and_describe() {
    let env = Env::new();
    let run = terminal(&env, &["list", "--json"]);
    let drivers: serde_json::Value = serde_json::from_str(&run.ok().stdout).unwrap();
    let names: Vec<&str> = drivers.as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
    let (tmux, plain) = (names.iter().position(|n| *n == "tmux").unwrap(), names.iter().position(|n| *n == "plain").unwrap());
    assert!(tmux < plain, "resolution order is by priority: {names:?}");
    let describe = terminal(&env, &["--driver", "tmux", "describe"]);
    for line in [
        "name=tmux",
        "priority=20",
        "capabilities=spawn despawn peek poke where arrange name",
        "intent.swap=tmux swap-pane -s SOURCE -t TARGET",
    ] {
        assert!(describe.stdout.lines().any(|l| l == line), "{line}: {describe:?}");
    }
    // Optional ops a driver does not implement are unsupported, not a failure of the driver.
    let run = terminal(&env, &["--driver", "tmux", "enumerate-panes"]);
    assert_eq!(run.code, 13, "{run:?}");
    assert_eq!(terminal(&env, &["--driver", "tmux", "capability", "peek"]).code, 0);
    assert_eq!(terminal(&env, &["--driver", "tmux", "capability", "teleport"]).code, 1);

    // Without tmux on PATH: agmsg's directive line, then missing_deps (10).
    let no_tmux = Env::new().env("PATH", "/nonexistent");
    let run = terminal(&no_tmux, &["--driver", "tmux", "check"]);
    assert_eq!(run.code, 10, "{run:?}");
    assert_eq!(
        run.lines(),
        [r#"AGMSG-DIRECTIVE: {"driver":"terminals/tmux","reason":"tmux not found","type":"install_deps"}"#, "missing_deps"],
        "{run:?}"
    );
}

/// Issue 24, item 4, op by op: names, labels and poked text reach tmux as data. tmux expands formats
/// (`#(...)` runs a command) in a window name, a pane title, `rename-window` and a start directory,
/// splits its argv into commands at an argument ending in `;` (and drops the backslash of `\;`), and
/// reads a positional argument starting with `-` as flags; none of that may happen to what a user,
/// or another agent, chose.
#[test]
fn names_labels_and_text_are_data_to_tmux() {
    let (server, env) = start();
    let dir = server.dir.path().to_str().unwrap().to_owned();
    let query = |target: &str, format: &str| server.query(&["display-message", "-p", "-t", target, format]);
    let tmux = |args: &[&str]| terminal(&env, &[&["--driver", "tmux"][..], args].concat());

    // A split whose program records every line typed into it.
    let typed = server.dir.path().join("typed");
    let record = format!("stty -echo; exec cat > '{}'", typed.display());
    let pane = tmux(&["spawn", "-w#{pane_id};", &dir, "pane-v", "sh", "-c", &record]).ok().stdout.trim_end().to_owned();
    assert_eq!(query(socket_free(&pane), "#{pane_title}"), "-w#{pane_id};");

    // poke: each text arrives as typed (then poke's Right + Enter, which `cat` records as ESC [ C).
    let texts = ["a;", "b\\;", ";", "c;;", "#(cd;touch PWNED-poke)#{pane_id}", "-x"];
    for text in texts {
        assert_eq!(tmux(&["poke", &pane, text]).stdout, "ok\n", "poke {text:?}");
    }
    let started = Instant::now();
    let lines = loop {
        let got = std::fs::read_to_string(&typed).unwrap_or_default();
        let lines: Vec<String> = got.lines().map(|l| l.trim_end_matches("\u{1b}[C").trim_end_matches("\u{1b}OC").to_owned()).collect();
        if lines.len() >= texts.len() || started.elapsed() > Duration::from_secs(10) {
            break lines;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(lines, texts, "every poke typed its text exactly");

    // name on a pane: the key, the title and team-observe's record, byte for byte.
    let (team, agent) = ("-team#(cd;touch PWNED-name)", "#{pane_id}##[fg=red];");
    let label = format!("{team}:{agent}");
    assert_eq!(tmux(&["name", &pane, team, agent]).stdout, "ok\n");
    assert_eq!(tmux(&["label-of", &pane]).stdout, format!("{label}\n"));
    assert_eq!(query(socket_free(&pane), "#{pane_title}"), label);
    assert_eq!(tmux(&["find-by-label", &label]).ok().lines(), [pane.as_str()]);
    let observed = tmux(&["team-observe", &pane]);
    assert_eq!(observed.ok().stdout, format!("n/a:unsupported\tn/a:no_independent_field\t{label}\t{label}\n"));

    // A window: spawn's name, then a label starting with `-` (a flag to rename-window, unless ended).
    let window = tmux(&["spawn", "-n#S;", &dir, "window", "sh"]).ok().stdout.trim_end().to_owned();
    assert_eq!(query(socket_free(&window), "#{window_name}"), "-n#S;");
    assert_eq!(tmux(&["name", &window, "-t", "#W"]).stdout, "ok\n");
    assert_eq!(query(socket_free(&window), "#{window_name}"), "-t:#W");
    assert_eq!(query(socket_free(&window), "#{@agmsg_agent}"), "-t:#W");

    // A name tmux cannot hold as given (a line break: a pane title refuses it, `rename-window` stores
    // it escaped) is refused before anything is created, rather than shown as something else.
    let panes = server.pane_count();
    for target in ["window", "pane-v"] {
        let refused = tmux(&["spawn", "two\nlines", &dir, target, "sh"]);
        assert_eq!(refused.code, 13, "{refused:?}");
        assert!(refused.stderr.contains("control character"), "{refused:?}");
    }
    assert_eq!(server.pane_count(), panes, "nothing was created");

    agmsg_conformance::tmux::assert_nothing_ran(&[server.dir.path(), env.dir.path()]);
}
