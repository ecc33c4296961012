//! Many processes on one store, and a writer killed mid-stream: nothing lost, nothing duplicated, the
//! store intact, no stale lock.

mod common;

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::Env;
use rusqlite::Connection;

#[test]
fn eight_processes_times_250_sends() {
    const WRITERS: usize = 8;
    const SENDS: usize = 250;
    let env = Env::new();
    env.storage(&["init"]).ok();
    // Each writer is a shell loop of real agmsg-host processes, as agmsg's scripts would run them.
    let script = format!(
        r#"for i in $(seq 1 {SENDS}); do "$0" storage send t "w$1" bob "w$1-$i" || echo "FAILED $i" >&2; done"#
    );
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            env.cmd()
                .program_with("bash")
                .args(["-c", &script, common::BIN, &w.to_string()])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut ids = HashSet::new();
    for writer in writers {
        let out = writer.wait_with_output().unwrap();
        assert!(out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("FAILED"), "a send failed instead of waiting: {stderr}");
        for id in String::from_utf8(out.stdout).unwrap().lines() {
            assert!(ids.insert(id.to_owned()), "duplicate id {id}");
        }
    }
    assert_eq!(ids.len(), WRITERS * SENDS);
    let db = Connection::open(env.db()).unwrap();
    let ok: String = db.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
    let (events, distinct, legacy): (i64, i64, i64) = db
        .query_row(
            "SELECT count(*), count(DISTINCT id), (SELECT count(*) FROM messages) FROM events WHERE type='message_sent'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!((events, distinct, legacy), (2000, 2000, 2000));
    assert_eq!(env.storage(&["list-unread", "t", "bob"]).json().len(), 2000);
}

#[test]
fn writer_killed_mid_stream() {
    let env = Env::new();
    env.storage(&["init"]).ok();
    let mut writer = env
        .cmd()
        .program_with("bash")
        .args(["-c", r#"for i in $(seq 1 100000); do "$0" storage send t a bob "m$i" || exit 1; done"#, common::BIN])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = writer.stdout.take().unwrap();
    let mut printed = Vec::new();
    let mut lines = BufReader::new(stdout).lines();
    while printed.len() < 30 {
        printed.push(lines.next().unwrap().unwrap());
    }
    // Kill the whole process group mid-write: bash and whichever agmsg-host is running.
    let pid = writer.id() as i32;
    unsafe_kill(pid);
    let _ = writer.wait();
    for line in lines.map_while(Result::ok) {
        printed.push(line);
    }

    let started = Instant::now();
    env.send("t", "a", "bob", "after the crash");
    assert!(started.elapsed() < Duration::from_secs(5), "the next op must not wait on a stale lock");
    let db = Connection::open(env.db()).unwrap();
    let ok: String = db.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
    let stored: HashSet<String> = env.storage(&["list-unread", "t", "bob"]).json().iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect();
    for id in &printed {
        assert!(stored.contains(id), "send {id} printed an id but is missing");
    }
}

/// SIGKILL the bash loop and every agmsg-host child of it.
fn unsafe_kill(pid: i32) {
    let _ = std::process::Command::new("pkill").args(["-KILL", "-P", &pid.to_string()]).status();
    let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
    let _ = std::process::Command::new("pkill").args(["-KILL", "-P", &pid.to_string()]).status();
}

trait ProgramWith {
    fn program_with(self, program: &str) -> std::process::Command;
}

impl ProgramWith for std::process::Command {
    /// The same environment and working directory, another program.
    fn program_with(self, program: &str) -> std::process::Command {
        let mut cmd = std::process::Command::new(program);
        cmd.env_clear();
        for (k, v) in self.get_envs() {
            if let Some(v) = v {
                cmd.env(k, v);
            }
        }
        if let Some(dir) = self.get_current_dir() {
            cmd.current_dir(dir);
        }
        cmd
    }
}
