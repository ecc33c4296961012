//! What the remote-sync tests share: a store filled with large messages, a look into a sqlite store,
//! an ack for a prepared candidate, and a `sync-<op>` run or killed with its records fed on stdin.

use std::fmt::Display;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use agmsg_conformance::{Env, Run};
use rusqlite::Connection;
use serde_json::Value;

/// A v1 event log of `count` messages alice -> bob in team `t`, each body `body_bytes` long and
/// starting with its number.
pub fn message_log(count: usize, body_bytes: usize) -> String {
    let mut log = String::new();
    for i in 0..count {
        let body = format!("{i:06}{}", "x".repeat(body_bytes - 6));
        log.push_str(&format!(
            r#"{{"type":"message_sent","id":"0196f3a2-7c1e-7000-8000-{i:012x}","team":"t","from":"alice","to":"bob","body":"{body}","at":"2026-01-01T00:00:00Z"}}"#
        ));
        log.push('\n');
    }
    log
}

/// `log` written to `import.jsonl` in the test's directory, for `storage import`; its path.
pub fn import_file(env: &Env, log: &str) -> PathBuf {
    let file = env.dir.path().join("import.jsonl");
    std::fs::write(&file, log).unwrap();
    file
}

/// The sqlite store of `env`.
pub fn db(env: &Env) -> Connection {
    Connection::open(env.store.join("messages.db")).unwrap()
}

/// The one number `sql` answers on the sqlite store of `env`.
pub fn count(env: &Env, sql: &str) -> i64 {
    db(env).query_row(sql, [], |r| r.get(0)).unwrap()
}

pub fn json(line: &str) -> Value {
    serde_json::from_str(line).unwrap()
}

/// agmsg's `sync_push_ack` line (no newline): the server stored the reservation at `position` under
/// `wire_id` at sequence `seq`.
pub fn push_ack(position: impl Display, wire_id: &str, seq: impl Display) -> String {
    format!(r#"{{"type":"sync_push_ack","local_position":"{position}","id":"{wire_id}","server_seq":"{seq}","disposition":"stored"}}"#)
}

/// [`push_ack`] for the `sync_push_candidate` record `candidate`.
pub fn ack_line(candidate: &Value, seq: impl Display) -> String {
    push_ack(candidate["local_position"].as_str().unwrap(), candidate["id"].as_str().unwrap(), seq)
}

/// The server and remote ids [`sync_op`] runs between.
pub const SERVER: &str = "0196f3a2-7c1e-7000-8000-000000000001";
pub const REMOTE: &str = "0196f3a2-7c1e-7000-8000-000000000002";

/// A runner of `driver`'s sync ops: `run(op, extra, stdin)` is `agmsg-host --driver <driver> storage
/// sync-<op> t SERVER REMOTE 1 <extra>...` with `stdin` on its stdin.
pub fn sync_op<'a>(env: &'a Env, driver: &'a str) -> impl Fn(&str, &[&str], &str) -> Run + 'a {
    move |op: &str, extra: &[&str], stdin: &str| {
        let op = format!("sync-{op}");
        let args: Vec<&str> =
            ["--driver", driver, "storage", op.as_str(), "t", SERVER, REMOTE, "1"].into_iter().chain(extra.iter().copied()).collect();
        env.run_stdin(&args, stdin.as_bytes())
    }
}

/// Spawn `cmd` with `stdin` written from a thread: a large input and a large answer must not wait for
/// each other, and a child killed mid-read must not hold the test up.
fn spawn_fed(cmd: &mut Command, stdin: &str, output: fn() -> Stdio) -> (Child, JoinHandle<()>) {
    let mut child = cmd.stdin(Stdio::piped()).stdout(output()).stderr(output()).spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.to_owned();
    let writer = std::thread::spawn(move || {
        // The child may stop reading (a refused record, a kill): what it did not take is its answer's.
        let _ = std::io::Write::write_all(&mut input, stdin.as_bytes());
    });
    (child, writer)
}

/// Run `cmd` to its end with `stdin` fed in.
pub fn run_fed(cmd: &mut Command, stdin: &str) -> Run {
    let (child, writer) = spawn_fed(cmd, stdin, Stdio::piped);
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out.into()
}

/// Start `cmd` with `stdin` fed in, SIGKILL it after `delay`, and reap it: the kill -9 tests' one step.
/// Whether the kill lands mid-op or after the op ended, the test's checks after it must hold.
pub fn kill_after(cmd: &mut Command, stdin: &str, delay: Duration) {
    let (mut child, writer) = spawn_fed(cmd, stdin, Stdio::null);
    std::thread::sleep(delay);
    let _ = child.kill();
    let _ = child.wait();
    writer.join().unwrap();
}

/// Start `cmd` with `stdin` fed in and SIGKILL it as soon as `inside()` says the op is mid-way (polled
/// without pause while the child runs; the bound is liveness only), then reap it. Answers whether the
/// kill came that way: false when the child ended first. Whether the kill really landed inside the op
/// is for the caller to show afterwards, from what the op leaves behind only when cut short (a hot
/// journal, a staging file, its lock).
pub fn kill_when(cmd: &mut Command, stdin: &str, inside: impl Fn() -> bool) -> bool {
    let (mut child, writer) = spawn_fed(cmd, stdin, Stdio::null);
    let started = std::time::Instant::now();
    let triggered = loop {
        if child.try_wait().unwrap().is_some() {
            break false;
        }
        if inside() {
            break true;
        }
        assert!(started.elapsed() < Duration::from_secs(300), "the op neither reached its middle nor ended within 300 s");
        std::thread::sleep(Duration::from_micros(200));
    };
    let _ = child.kill();
    let _ = child.wait();
    writer.join().unwrap();
    triggered
}

/// Whether SQLite's rollback journal beside `db` holds a transaction that did not finish: a
/// `-journal` file whose header is SQLite's journal magic. The sqlite driver keeps its journal
/// (journal_mode=PERSIST) and zeroes that header at each commit, so the magic is there only while a
/// write transaction is going on, or after one was cut short. Read it before anything opens the
/// database, which would roll it back.
pub fn hot_journal(db: &std::path::Path) -> bool {
    const MAGIC: [u8; 8] = [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7];
    let mut journal = db.as_os_str().to_owned();
    journal.push("-journal");
    let mut header = [0u8; 8];
    std::fs::File::open(journal).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut header)).is_ok() && header == MAGIC
}
