//! A terminal driver reaches the terminal only through what its manifest declares: the programs it may
//! run (by name, resolved by the host), the variables it may read and pass on, and no filesystem.

mod common;

use std::path::{Path, PathBuf};

use common::{Env, Run};

/// The hostile fixture as a driver directory: its manifest and its component.
fn hostile_driver(env: &Env) -> PathBuf {
    let dir = env.dir.path().join("hostile-driver");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(common::fixture("hostile-terminal"), dir.join("driver.wasm")).unwrap();
    std::fs::copy(common::workspace().join("tests/fixtures/hostile-terminal/terminal.conf"), dir.join("terminal.conf")).unwrap();
    dir
}

fn attempt(env: &Env, driver: &Path, what: &str) -> Run {
    env.run(&["terminal", "--driver", driver.to_str().unwrap(), "peek", what])
}

#[test]
fn only_declared_programs_run_and_only_by_name() {
    let env = Env::new();
    let driver = hostile_driver(&env);

    let run = attempt(&env, &driver, "undeclared");
    assert_eq!((run.code, run.stdout.as_str()), (12, ""), "{run:?}");
    assert!(run.stderr.contains("\\\"sh\\\" is not declared") || run.stderr.contains("not declared"), "{run:?}");
    for path in ["by-path", "relative-path"] {
        let run = attempt(&env, &driver, path);
        assert_eq!(run.code, 12, "{path}: {run:?}");
        assert!(run.stderr.contains("never given by path"), "{path}: {run:?}");
    }
    let run = attempt(&env, &driver, "missing");
    assert!(run.code == 12 && run.stderr.contains("NotFound"), "{run:?}");

    let run = attempt(&env, &driver, "declared");
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.starts_with("ran: status Some(0): tmux "), "{run:?}");
    assert_eq!(attempt(&env, &driver, "available").stdout, "tmux=true sh=false");
}

#[test]
fn only_declared_variables_reach_the_driver_and_its_programs() {
    let env = Env::new().env("AGMSG_FIXTURE_VISIBLE", "yes").env("AGMSG_FIXTURE_SECRET", "leaked");
    let driver = hostile_driver(&env);
    assert_eq!(attempt(&env, &driver, "environment").stdout, "AGMSG_FIXTURE_VISIBLE=yes");
    assert_eq!(attempt(&env, &driver, "child-environment").stdout, "ran: status Some(0): AGMSG_FIXTURE_VISIBLE=yes");
    assert_eq!(attempt(&env, &driver, "child-directory").stdout, "ran: status Some(0): /");
    // A run may set a declared variable for itself, and nothing else.
    assert_eq!(attempt(&env, &driver, "child-env-override").stdout, "ran: status Some(0): AGMSG_FIXTURE_VISIBLE=override");
    let run = attempt(&env, &driver, "child-env-undeclared");
    assert!(run.code == 12 && run.stderr.contains("\\\"LD_PRELOAD\\\" is not declared"), "{run:?}");
    let run = attempt(&env, &driver, "filesystem");
    assert_eq!(run.code, 12, "no filesystem at all: {run:?}");
}

#[test]
fn a_manifest_that_names_a_path_is_refused() {
    let env = Env::new();
    let driver = hostile_driver(&env);
    std::fs::write(driver.join("terminal.conf"), "name=hostile\nprograms=/bin/sh\n").unwrap();
    let run = attempt(&env, &driver, "declared");
    assert_eq!(run.code, 13, "{run:?}");
    assert!(run.stderr.contains("never given by path"), "{run:?}");
}

/// How long a run whose program sleeps an hour may take, at most: liveness only (minutes). A run that
/// returns within it did not wait for the program.
const LIVENESS: std::time::Duration = std::time::Duration::from_secs(120);

/// A value unique to this run of a test, for `AGMSG_FIXTURE_VISIBLE`: it marks the programs this run
/// started among every process on the machine (another run of the test may be going on beside it).
fn unique_mark(what: &str) -> String {
    let unique = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("{what}-{}-{unique}", std::process::id())
}

/// Processes running `command` (a `pgrep -f` pattern) that carry `AGMSG_FIXTURE_VISIBLE=value`, once
/// the kill has had time to land (a killed process may take a moment to go on a loaded machine; one
/// that survived is still there after [`LIVENESS`]); each found is killed.
fn survivors(command: &str, value: &str) -> Vec<String> {
    let mark = format!("AGMSG_FIXTURE_VISIBLE={value}");
    let ours = || -> Vec<String> {
        let found = std::process::Command::new("pgrep").args(["-f", command]).output().unwrap();
        String::from_utf8_lossy(&found.stdout)
            .split_whitespace()
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == mark.as_bytes()))
            })
            .map(str::to_owned)
            .collect()
    };
    let started = std::time::Instant::now();
    while !ours().is_empty() && started.elapsed() < LIVENESS {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let left = ours();
    for pid in &left {
        let _ = std::process::Command::new("kill").args(["-KILL", pid]).status();
    }
    left
}

#[test]
fn programs_run_under_a_time_limit_and_an_output_cap() {
    let value = unique_mark("slow");
    let env = Env::new().env("AGMSG_PROCESS_TIMEOUT_MS", "300").env("AGMSG_FIXTURE_VISIBLE", &value);
    let driver = hostile_driver(&env);
    // The program sleeps an hour: its limit stops it, and it is killed, not left behind.
    let started = std::time::Instant::now();
    let run = attempt(&env, &driver, "slow");
    assert!(started.elapsed() < LIVENESS, "the sleep was not stopped: {run:?}");
    assert!(run.code == 12 && run.stderr.contains("TimedOut(300)"), "{run:?}");
    let left = survivors("sleep 3600", &value);
    assert!(left.is_empty(), "the timed-out program survived: pids {left:?}");
    let run = attempt(&env, &driver, "flood");
    assert_eq!(run.stdout, format!("kept {} bytes, truncated true", 4 << 20), "{run:?}");
}

#[test]
fn a_time_out_kills_the_programs_whole_process_group() {
    // The declared variable reaches the programs: it marks this run's grandchild among every
    // `sleep 98765` on the machine (another run of this test may be going on beside it).
    let value = unique_mark("group");
    let env = Env::new().env("AGMSG_PROCESS_TIMEOUT_MS", "500").env("AGMSG_FIXTURE_VISIBLE", &value);
    let driver = hostile_driver(&env);
    let run = attempt(&env, &driver, "grandchild");
    assert!(run.code == 12 && run.stderr.contains("TimedOut(500)"), "{run:?}");
    let left = survivors("sleep 98765", &value);
    assert!(left.is_empty(), "a grandchild survived: pids {left:?}");
}

#[test]
fn the_call_deadline_binds_inside_host_calls() {
    // The program's own limit (10 minutes) is far longer than the call's deadline (1 s), and each
    // attempt would last an hour unstopped: a return within [`LIVENESS`] is the deadline's doing.
    let value = unique_mark("deadline");
    let env =
        Env::new().env("AGMSG_DRIVER_TIMEOUT_MS", "1000").env("AGMSG_PROCESS_TIMEOUT_MS", "600000").env("AGMSG_FIXTURE_VISIBLE", &value);
    let driver = hostile_driver(&env);
    // A WASI sleep: epoch interruption alone would not stop it until it returns.
    let started = std::time::Instant::now();
    let run = attempt(&env, &driver, "sleep");
    assert!(started.elapsed() < LIVENESS, "took {:?}: {run:?}", started.elapsed());
    assert!(run.code == 10 && run.stderr.contains("exceeded its time limit of 1000 ms"), "{run:?}");
    // A program run inside the host call: its limit is cut to what is left of the call (not its own
    // 10 minutes), and it is killed then.
    let started = std::time::Instant::now();
    let run = attempt(&env, &driver, "slow");
    assert!(started.elapsed() < LIVENESS, "took {:?}: {run:?}", started.elapsed());
    let limit: Option<u64> =
        run.stderr.split("ProcessError::TimedOut(").nth(1).and_then(|rest| rest.split(')').next()).and_then(|n| n.parse().ok());
    assert!(run.code == 12 && limit.is_some_and(|ms| ms <= 1000), "the program's limit is what was left of the 1000 ms call: {run:?}");
    let left = survivors("sleep 3600", &value);
    assert!(left.is_empty(), "the program outlived the call: pids {left:?}");
}
