//! Which threads a process runs its driver calls with (issue 28 §3). wasmtime-wasi does its host calls
//! (files, sockets, clocks) on the tokio runtime the calling thread is in; the host's own runtime has one
//! worker, which also ticks the epoch. Without it, wasmtime-wasi built an ambient runtime on first use,
//! a worker per CPU (`tokio-rt-worker`), beside a thread of the host's for the ticker
//! (`agmsg-epoch`).
//!
//! Each test looks at the `agmsg-host` process it started, so its ops run in that process
//! (`AGMSG_HOST_SERVER=off`): through the resident server, a server's child would run them.

mod common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use common::Env;

/// The names of a live process's threads (`comm`, at most 15 bytes).
fn thread_names(pid: u32) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("comm")).ok())
        .map(|name| name.trim_end().to_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_storage_process_makes_its_calls_with_one_worker_thread() {
    let env = Env::new().env("AGMSG_HOST_SERVER", "off");
    env.storage(&["init"]).ok();
    env.storage(&["send", "t", "alice", "bob", "hello"]).ok();
    // A watch stays up: its first round (the sqlite driver reading its store through WASI) is done once
    // it has printed the unread message.
    let mut watch = env.cmd().args(["watch", "t", "bob", "--interval", "1"]).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut stdout = BufReader::new(watch.stdout.take().unwrap());
    let mut printed = String::new();
    while !printed.contains("hello") {
        let mut line = String::new();
        if stdout.read_line(&mut line).unwrap() == 0 {
            break;
        }
        printed.push_str(&line);
    }
    // A moment for a round that is not the first.
    std::thread::sleep(Duration::from_millis(300));
    let names = thread_names(watch.id());
    let _ = watch.kill();
    let _ = watch.wait();
    assert!(printed.contains("hello"), "the watch delivered the message: {printed:?}");
    assert!(names.iter().any(|n| n == "agmsg-io"), "the host's I/O worker: {names:?}");
    // tokio's default name for its workers is `tokio-rt-worker`.
    assert!(!names.iter().any(|n| n.starts_with("tokio") || n == "agmsg-epoch"), "{names:?}");
}

/// The hostile terminal fixture as a driver directory (it runs the declared `env` with no arguments
/// for `peek child-environment`), with a fake `env` first on PATH whose script is `script`.
fn terminal_driver_running(script: &str) -> (Env, std::path::PathBuf, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let driver = env.dir.path().join("hostile-driver");
    std::fs::create_dir_all(&driver).unwrap();
    std::fs::copy(common::fixture("hostile-terminal"), driver.join("driver.wasm")).unwrap();
    std::fs::copy(common::workspace().join("tests/fixtures/hostile-terminal/terminal.conf"), driver.join("terminal.conf")).unwrap();
    let bin = env.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let fake = bin.join("env");
    std::fs::write(&fake, format!("#!/bin/sh\nhere=\"${{0%/*}}\"\n{script}")).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    (env.env("PATH", &path).env("AGMSG_HOST_SERVER", "off"), driver, bin)
}

/// A terminal op reads the program it runs (its stdout and stderr) on the calling thread: the process
/// has its main thread and the I/O worker while the program runs, and no thread per pipe.
#[test]
fn a_terminal_op_reads_its_programs_pipes_without_threads_of_their_own() {
    // The program runs until the test has looked (it waits for `go`): a fixed run time raced the look on
    // a loaded machine. The program's own limit (10 s) bounds the wait if the test never says go.
    let (env, driver, bin) = terminal_driver_running(
        ": > \"$here/running\"\nwhile [ ! -e \"$here/go\" ]; do /bin/sleep 0.05; done\necho done\necho noted >&2\n",
    );
    let host = env
        .cmd()
        .args(["terminal", "--driver", driver.to_str().unwrap(), "peek", "child-environment"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !bin.join("running").exists() {
        assert!(started.elapsed() < Duration::from_secs(20), "the program never ran");
        std::thread::sleep(Duration::from_millis(10));
    }
    let names = thread_names(host.id());
    std::fs::write(bin.join("go"), "").unwrap();
    let out = host.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!((out.status.code(), stdout.trim()), (Some(0), "ran: status Some(0): done"), "{}", String::from_utf8_lossy(&out.stderr));
    // The op runs in the engine the small `agmsg-host` became: its main thread's name is the engine
    // file's, cut to 15 bytes as the kernel keeps it.
    assert_eq!(names, ["agmsg-host-engi", "agmsg-io"], "threads while the program ran");
}

/// A background child that keeps the program's pipes open holds the op up for a short grace period
/// only: what the program printed before it exited is the output.
///
/// The child holds them for 60 s and the program's own limit is 25 s, so an op that waited for the
/// pipes would take 25 s at least; the bound (15 s) is far from both that and the op's real time, so
/// a loaded machine does not fail it (a 5 s child and a 4 s bound left 1 s of margin).
#[test]
fn a_programs_background_child_holding_its_pipes_does_not_hold_up_the_op() {
    let (env, driver, bin) = terminal_driver_running("/bin/sleep 60 &\necho $! > \"$here/child\"\necho early\n");
    let env = env.env("AGMSG_PROCESS_TIMEOUT_MS", "25000");
    let started = std::time::Instant::now();
    let run = env.run(&["terminal", "--driver", driver.to_str().unwrap(), "peek", "child-environment"]);
    let took = started.elapsed();
    // The background child is the test's to end, whatever the outcome.
    if let Ok(pid) = std::fs::read_to_string(bin.join("child")) {
        let _ = std::process::Command::new("kill").arg(pid.trim()).status();
    }
    assert_eq!((run.code, run.stdout.trim()), (0, "ran: status Some(0): early"), "{run:?}");
    assert!(took < Duration::from_secs(15), "took {took:?}");
}
