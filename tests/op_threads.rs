//! Which threads a process runs its driver calls with (issue 28 §3). wasmtime-wasi does its host calls
//! (files, sockets, clocks) on the tokio runtime the calling thread is in; the host's own runtime has one
//! worker, which also ticks the epoch. Without it, wasmtime-wasi built an ambient runtime on first use,
//! a worker per CPU (`tokio-rt-worker`), beside a thread of the host's for the ticker
//! (`agmsg-epoch`).

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
    let env = Env::new();
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
