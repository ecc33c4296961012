//! The terminal shim (`agmsg-host shim terminal <name>`) as agmsg's terminal registry uses it: the
//! driver directory's `terminal.conf` read as agmsg reads it, `ops.sh` sourced in bash under `set -euo
//! pipefail` and each `terminal_*` function called with spec §6.2's argv against a private tmux server:
//! its stdout framing and exit code (0, 1, 2 usage, 10, 12, 13) are the op's, ids round-trip, and
//! hostile names, texts and paths arrive as they are and run nothing.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agmsg_conformance::tmux::TmuxServer;
use common::{Env, Run};

/// agmsg's required terminal functions (its registry's list, §6.2 plus check and describe) and the
/// fifteen optional ones.
const REQUIRED: &[&str] = &["check", "describe", "detect", "spawn", "despawn", "pane_state", "peek", "poke", "where", "arrange", "name"];
const OPTIONAL: &[&str] = &[
    "capability",
    "team_observe",
    "team_input_ready",
    "find_by_label",
    "label_of",
    "id_ok",
    "pane_process_observe",
    "enumerate_panes",
    "fence",
    "pane_focused",
    "input_clear",
    "input_type",
    "expected_label",
    "instance_for_ref",
    "id_split",
];

/// `shim terminal <name>` into `<env>/drivers/`; the driver directory.
#[track_caller]
fn write_shim(env: &Env, name: &str) -> PathBuf {
    let out = env.dir.path().join("drivers");
    std::fs::create_dir_all(&out).unwrap();
    let run = env.run(&["shim", "terminal", name, "--output", out.to_str().unwrap()]);
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
    out.join(name)
}

/// `terminal_<function> <args>` in bash with `ops` sourced, as agmsg's entry scripts run.
fn call(env: &Env, ops: &Path, function: &str, args: &[&str]) -> Run {
    let mut cmd = env.program("bash");
    cmd.arg("-c").arg("set -euo pipefail; source \"$0\"; \"$@\"").arg(ops).arg(format!("terminal_{function}")).args(args);
    cmd.output().unwrap().into()
}

/// `agmsg-host --driver tmux terminal <op> <args>` itself, for comparison.
fn direct(env: &Env, op: &str, args: &[&str]) -> Run {
    let mut all = vec!["--driver", "tmux", "terminal", op];
    all.extend_from_slice(args);
    env.run(&all)
}

#[track_caller]
fn expect(run: &Run, code: i32, stdout: &str) {
    assert_eq!((run.code, run.stdout.as_str()), (code, stdout), "{run:#?}");
}

/// The same stdout, stderr and exit code as agmsg-host's own op.
#[track_caller]
fn same_as_direct(env: &Env, ops: &Path, function: &str, op: &str, args: &[&str]) -> Run {
    let shim = call(env, ops, function, args);
    let own = direct(env, op, args);
    assert_eq!((shim.code, &shim.stdout, &shim.stderr), (own.code, &own.stdout, &own.stderr), "terminal_{function} {args:?}");
    shim
}

/// What `path`'s `key=` line says, read as agmsg reads terminal.conf (the first `key=` line, spaces
/// and one pair of double quotes stripped).
fn conf_value(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == key).then(|| {
            let v = v.trim();
            v.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(v).to_owned()
        })
    })
}

#[test]
fn the_directory_is_agmsgs_driver_layout_for_every_bundled_driver() {
    let env = Env::new();
    for name in ["tmux", "plain", "herdr", "orca"] {
        let dir = write_shim(&env, name);
        let mut files: Vec<String> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        files.sort();
        assert_eq!(files, ["ops.sh", "terminal.conf"], "{name}");
        // terminal.conf: agmsg's four keys, what agmsg-host's describe says of the driver.
        let conf = std::fs::read_to_string(dir.join("terminal.conf")).unwrap();
        let describe = env.run(&["--driver", name, "terminal", "describe"]);
        for key in ["name", "priority", "backend", "capabilities"] {
            let described = describe.lines().iter().find_map(|l| l.strip_prefix(&format!("{key}=")).map(str::to_owned));
            assert_eq!(conf_value(&conf, key), described, "{name}: {key} in\n{conf}");
        }
        assert_eq!(conf_value(&conf, "name").as_deref(), Some(name));
        // ops.sh: every required and optional function, nothing else of agmsg's prefix, under set -u.
        let ops = dir.join("ops.sh");
        let mut cmd = env.program("bash");
        cmd.arg("-c").arg("set -euo pipefail; source \"$0\"; declare -F | awk '{print $3}'").arg(&ops);
        let declared: Run = cmd.output().unwrap().into();
        assert_eq!(declared.code, 0, "{declared:?}");
        let mut functions: Vec<&str> = declared.lines().into_iter().filter(|f| f.starts_with("terminal_")).collect();
        functions.sort();
        let mut want: Vec<String> = REQUIRED.iter().chain(OPTIONAL).map(|f| format!("terminal_{f}")).collect();
        want.sort();
        assert_eq!(functions, want, "{name}");
        assert!(declared.lines().iter().all(|f| f.starts_with("terminal_") || f.starts_with("_agmsg_host_")), "{declared:?}");
    }
    // Written again: the same bytes (the directory is replaced file by file, atomically).
    let before = std::fs::read(env.dir.path().join("drivers/tmux/ops.sh")).unwrap();
    write_shim(&env, "tmux");
    assert_eq!(std::fs::read(env.dir.path().join("drivers/tmux/ops.sh")).unwrap(), before);
}

#[test]
fn a_name_that_is_no_driver_is_refused_and_nothing_is_written() {
    let env = Env::new();
    let out = env.dir.path().join("drivers");
    std::fs::create_dir(&out).unwrap();
    for name in ["nosuch", "../escape", "a'b"] {
        let run = env.run(&["shim", "terminal", name, "--output", out.to_str().unwrap()]);
        assert_eq!((run.code, run.stdout.as_str()), (1, ""), "{name}: {run:?}");
        assert!(run.stderr.starts_with("agmsg-host shim terminal: "), "{run:?}");
    }
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0, "nothing written");
    // A link where the directory goes is not written through.
    let elsewhere = env.dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, out.join("tmux")).unwrap();
    let run = env.run(&["shim", "terminal", "tmux", "--output", out.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("symlink"), "{run:?}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

/// Peek through the shim until the pane shows `needle`.
fn wait_for_text(env: &Env, ops: &Path, id: &str, needle: &str) -> String {
    let started = Instant::now();
    loop {
        let run = call(env, ops, "peek", &[id]);
        assert_eq!(run.code, 0, "{run:?}");
        if run.stdout.contains(needle) {
            return run.stdout;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "pane {id} never showed {needle:?}:\n{}", run.stdout);
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Any `PWNED*` file a hostile word made run, in `dirs` or `/`.
#[track_caller]
fn assert_nothing_ran(dirs: &[&Path]) {
    std::thread::sleep(Duration::from_millis(500));
    for dir in dirs.iter().copied().chain([Path::new("/")]) {
        let ran: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("PWNED"))
            .collect();
        assert!(ran.is_empty(), "a hostile word ran: {ran:?} in {}", dir.display());
    }
}

#[test]
fn every_op_through_the_shim_against_a_real_tmux() {
    let server = TmuxServer::start();
    let env = Env(server.inside(&common::harness()));
    let ops = write_shim(&env, "tmux").join("ops.sh");
    let sock = server.socket.display().to_string();
    let project = server.dir.path().to_str().unwrap();

    expect(&call(&env, &ops, "check", &[]), 0, "ok\n");
    assert!(call(&env, &ops, "describe", &[]).stdout.starts_with("name=tmux\npriority=20\n"));
    expect(&call(&env, &ops, "detect", &["session-1"]), 0, &format!("{}\n", server.first_pane));
    // Not under tmux: absent, exit 1, no stdout.
    let outside = Env::new();
    expect(&call(&outside, &ops, "detect", &["session-1"]), 1, "");

    // spawn: a window whose name is shell syntax, arriving at tmux as it is.
    let hostile_name = "w'q\" $(cd;touch PWNED-1) `cd;touch PWNED-2` -x";
    let run = call(&env, &ops, "spawn", &[hostile_name, project, "window", "cat"]);
    let window = run.stdout.trim_end().to_owned();
    assert!(run.code == 0 && window.starts_with(&format!("{sock}:@")), "{run:?}");
    let bare_window = window.rsplit_once(':').unwrap().1;
    assert_eq!(server.query(&["display-message", "-p", "-t", bare_window, "#{window_name}"]), hostile_name);
    expect(&call(&env, &ops, "where", &[&window]), 0, &format!("{window}\n"));

    // A pane running cat, so what poke types shows verbatim; its id round-trips through every op.
    let run = call(&env, &ops, "spawn", &["worker", project, "pane-v", "cat"]);
    let pane = run.stdout.trim_end().to_owned();
    assert!(run.code == 0 && pane.starts_with(&format!("{sock}:%")), "{run:?}");
    let bare_pane = pane.rsplit_once(':').unwrap().1.to_owned();
    expect(&call(&env, &ops, "pane_state", &[&pane]), 0, "present\n");
    expect(&call(&env, &ops, "pane_state", &[&format!("tmux:{pane}")]), 0, "present\n");
    let container = call(&env, &ops, "where", &[&pane]);
    assert!(container.code == 0 && container.stdout.starts_with(&format!("{sock}:@")), "{container:?}");
    expect(&call(&env, &ops, "id_ok", &[&pane]), 0, "");
    expect(&call(&env, &ops, "id_split", &[&pane]), 0, &format!("{sock}\t{bare_pane}\n"));
    expect(&call(&env, &ops, "instance_for_ref", &[&format!("tmux:{pane}")]), 0, &format!("{sock}\t{bare_pane}\n"));

    // name: team and agent with quotes and substitutions; read back by label_of, find_by_label, tmux.
    let (team, agent) = ("te'am\"`cd;touch PWNED-3`", "$(cd;touch PWNED-4)-ag");
    expect(&call(&env, &ops, "name", &[&pane, team, agent]), 0, "ok\n");
    let label = format!("{team}:{agent}");
    expect(&call(&env, &ops, "label_of", &[&pane]), 0, &format!("{label}\n"));
    expect(&call(&env, &ops, "find_by_label", &[&label]), 0, &format!("{pane}\n"));
    assert_eq!(server.query(&["show-options", "-p", "-v", "-t", &bare_pane, "@agmsg_agent"]), label);
    expect(&call(&env, &ops, "name", &[&pane, team, agent, "key"]), 0, "ok\n");
    expect(&call(&env, &ops, "expected_label", &[team, agent]), 0, &format!("{label}\n"));
    let observed = call(&env, &ops, "team_observe", &[&pane]);
    assert!(observed.code == 0 && observed.stdout.split('\t').nth(2) == Some(label.as_str()), "{observed:?}");

    // poke: the text is typed as it is (cat echoes it), then submitted.
    let text = "hi '$(cd;touch PWNED-5)' `cd;touch PWNED-6` \"q\" -n --help";
    expect(&call(&env, &ops, "poke", &[&pane, text]), 0, "ok\n");
    wait_for_text(&env, &ops, &pane, text);
    let lines = call(&env, &ops, "peek", &[&pane, "--lines", "3"]);
    assert!(lines.code == 0 && lines.stdout.contains(text), "{lines:?}");

    // Optional reads and answers by exit code.
    for (function, code) in [("fence", 0), ("pane_process_observe", 0)] {
        let run = call(&env, &ops, function, &[&pane]);
        assert!(run.code == code && run.lines().len() == 1, "{function}: {run:?}");
    }
    expect(&call(&env, &ops, "capability", &["peek", &pane]), 0, "");
    expect(&call(&env, &ops, "capability", &["frobnicate"]), 1, "");
    // Ready or not (0/1/2) is the driver's reading of the pane's processes; the shim's answer is its.
    let ready = same_as_direct(&env, &ops, "team_input_ready", "team-input-ready", &[&pane, "cat"]);
    assert!([0, 1, 2].contains(&ready.code) && ready.stdout.is_empty(), "{ready:?}");
    expect(&call(&env, &ops, "id_ok", &["not-a-pane"]), 1, "");
    // An argument that looks like agmsg-host's own option is an argument.
    expect(&call(&env, &ops, "id_ok", &["--help"]), 1, "");
    // What the bundled tmux driver does not implement is unsupported (13), framed per op.
    expect(&call(&env, &ops, "pane_focused", &[&pane]), 13, "");
    expect(&call(&env, &ops, "input_clear", &[&pane]), 13, "runtime_error\n");
    expect(&call(&env, &ops, "input_type", &[&pane, "x"]), 13, "runtime_error\n");
    same_as_direct(&env, &ops, "enumerate_panes", "enumerate-panes", &[]);

    // arrange: below the caller's pane (moved or already there), then unchanged; a bad intent is 13.
    let arranged = call(&env, &ops, "arrange", &[&pane, "place_below", &server.first_pane]);
    assert!(arranged.code == 0 && ["moved\n", "unchanged\n"].contains(&arranged.stdout.as_str()), "{arranged:?}");
    expect(&call(&env, &ops, "arrange", &[&pane, "place_below", &server.first_pane]), 0, "unchanged\n");
    expect(&call(&env, &ops, "arrange", &[&pane, "sideways", &server.first_pane]), 13, "unsupported\n");

    // despawn, then gone: earned from tmux's own answer; the id's other ops fail by their class.
    expect(&call(&env, &ops, "despawn", &[&pane]), 0, "ok\n");
    expect(&call(&env, &ops, "pane_state", &[&pane]), 0, "gone\n");
    expect(&call(&env, &ops, "peek", &[&pane]), 12, "");
    expect(&call(&env, &ops, "poke", &[&pane, "x"]), 12, "runtime_error\n");
    expect(&call(&env, &ops, "where", &[&pane]), 10, "unknown\n");
    // No socket: no server can be asked (10, never gone); not a tmux id at all: 13.
    expect(&call(&env, &ops, "pane_state", &["%3"]), 10, "unknown\n");
    expect(&call(&env, &ops, "despawn", &["not-an-id"]), 13, "runtime_error\n");
    expect(&call(&env, &ops, "where", &["not-an-id"]), 13, "unsupported\n");
    expect(&call(&env, &ops, "spawn", &["x", project, "sideways", "cat"]), 13, "");
    // Usage errors: exit 2, nothing on stdout, agmsg-host's own message.
    for (function, op, args) in [("peek", "peek", vec![]), ("name", "name", vec![window.as_str()]), ("poke", "poke", vec![window.as_str()])]
    {
        let run = same_as_direct(&env, &ops, function, op, &args);
        expect(&run, 2, "");
    }
    // A name tmux cannot show (a line break) is refused by the driver; the message shows it arrived as
    // it is, as agmsg-host itself reports it.
    let run = same_as_direct(&env, &ops, "spawn", "spawn", &["two\nlines", project, "window", "cat"]);
    assert!(run.code == 13 && run.stderr.contains(r#""two\nlines""#), "{run:?}");
    expect(&call(&env, &ops, "despawn", &[&window]), 0, "ok\n");
    assert_nothing_ran(&[server.dir.path(), env.dir.path()]);
}

/// The shim pins the agmsg-host that wrote it, at whatever path: one holding quotes, substitutions and
/// a line break is quoted, runs, and runs nothing else when sourced.
#[test]
fn the_pinned_binary_path_is_quoted() {
    let env = Env::new();
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let odd = dir.path().join("it's $(cd;touch PWNED-7) `cd;touch PWNED-8`\nbin");
    std::fs::create_dir(&odd).unwrap();
    let bin = common::install_binary(&odd);
    let out = env.dir.path().join("drivers");
    std::fs::create_dir(&out).unwrap();
    let mut cmd = env.program(&bin);
    cmd.args(["shim", "terminal", "plain", "--output", out.to_str().unwrap()]);
    let run: Run = cmd.output().unwrap().into();
    assert_eq!(run.code, 0, "{run:?}");
    let ops = out.join("plain/ops.sh");
    let text = std::fs::read_to_string(&ops).unwrap();
    assert!(text.contains(&agmsg_contract::shell_quote(bin.to_str().unwrap())), "{text}");
    expect(&call(&env, &ops, "check", &[]), 0, "ok\n");
    expect(&call(&env, &ops, "detect", &["s"]), 0, "-\n");
    assert_nothing_ran(&[env.dir.path(), dir.path()]);
}
