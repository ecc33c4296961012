//! Components and native `sqlite3` on one `messages.db` at the same time, as happens when agmsg's own
//! scripts (native) and agmsg-host run side by side: several `agmsg-host storage send` processes, native
//! writers and readers with agmsg's 5000 ms busy timeout, and a component writer killed mid-stream.
//! Every acknowledged write must be there exactly once and the database intact.

mod common;

use std::collections::HashSet;
use std::process::{Child, Stdio};
use std::time::Duration;

use common::Env;
use rusqlite::Connection;

const HOST_WRITERS: usize = 3;
const NATIVE_WRITERS: usize = 2;
const ROUNDS: usize = 40;

fn bash(env: &Env, script: &str, args: &[&str]) -> Child {
    env.program("bash").arg("-c").arg(script).arg(common::BIN).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

/// Native writer `$1`: agmsg's bash send (dual write, one IMMEDIATE transaction), acknowledged only
/// after sqlite3 exits 0; and a native read after each write.
const NATIVE_WRITER: &str = r#"db="$AGMSG_STORAGE_PATH/messages.db"
for i in $(seq 1 "$2"); do
  id="native-$1-$i"
  if sqlite3 -bail "$db" ".timeout 5000" "BEGIN IMMEDIATE; INSERT INTO messages(team, from_agent, to_agent, body) VALUES('t', 'native$1', 'bob', '$id'); INSERT INTO events(type, id, team, from_agent, to_agent, body, at, legacy_id) VALUES('message_sent', '$id', 't', 'native$1', 'bob', '$id', strftime('%Y-%m-%dT%H:%M:%SZ','now'), last_insert_rowid()); COMMIT;" >/dev/null; then
    echo "$id"
  else
    echo "FAILED write $id" >&2
  fi
  sqlite3 "$db" ".timeout 5000" "SELECT count(*) FROM events WHERE type='message_sent';" >/dev/null || echo "FAILED read $i" >&2
done"#;

/// Component writer `$1`: real agmsg-host processes, as agmsg's scripts would run them.
const HOST_WRITER: &str = r#"for i in $(seq 1 "$2"); do "$0" storage send t "host$1" bob "host-$1-$i" || echo "FAILED send $i" >&2; done"#;

fn run_mixed(env: &Env) {
    let mut children = Vec::new();
    for w in 0..HOST_WRITERS {
        children.push(("host", bash(env, HOST_WRITER, &[&w.to_string(), &ROUNDS.to_string()])));
    }
    for w in 0..NATIVE_WRITERS {
        children.push(("native", bash(env, NATIVE_WRITER, &[&w.to_string(), &ROUNDS.to_string()])));
    }
    // A component writer that runs until it is SIGKILLed mid-stream.
    let mut victim = bash(env, HOST_WRITER, &["victim", "100000"]);
    let mut victim_ids = Vec::new();
    let lines = common::bounded::Lines::new(victim.stdout.take().unwrap());
    while victim_ids.len() < 10 {
        victim_ids.push(lines.next(&victim, "the victim's sends").expect("the victim ended early"));
    }
    common::kill_tree(victim.id());
    common::bounded::wait(&mut victim, "the killed victim");
    victim_ids.extend(lines.rest(&victim, "the killed victim's output"));

    let mut acknowledged = HashSet::new();
    for (kind, child) in children {
        let out = common::bounded::output(child, &format!("a {kind} writer"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("FAILED"), "a {kind} process failed instead of waiting:\n{stderr}");
        for id in String::from_utf8(out.stdout).unwrap().lines() {
            assert!(acknowledged.insert(id.to_owned()), "{id} acknowledged twice");
        }
    }
    assert_eq!(acknowledged.len(), (HOST_WRITERS + NATIVE_WRITERS) * ROUNDS);
    acknowledged.extend(victim_ids);

    // The next op after the kill proceeds, and every acknowledged write is there exactly once.
    env.send("t", "after", "bob", "after the kill");
    let db = Connection::open(env.db()).unwrap();
    let ok: String = db.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
    let mut stmt = db.prepare("SELECT id, count(*) FROM events WHERE type='message_sent' GROUP BY id").unwrap();
    let stored: Vec<(String, i64)> = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect();
    let stored_ids: HashSet<&str> = stored.iter().map(|(id, _)| id.as_str()).collect();
    for (id, count) in &stored {
        assert_eq!(*count, 1, "{id} stored {count} times");
    }
    for id in &acknowledged {
        assert!(stored_ids.contains(id.as_str()), "acknowledged write {id} is missing");
    }
    let legacy: i64 = db.query_row("SELECT count(*) FROM messages", [], |r| r.get(0)).unwrap();
    assert_eq!(legacy as usize, stored.len(), "every message is dual-written");
    drop(stmt);
    // Closed first: an open native WAL connection holds a shared lock the component waits on.
    drop(db);
    // Both sides still read everything.
    let listed = env.storage(&["history", "t"]).json().len();
    assert_eq!(listed, stored.len());
}

#[test]
fn with_native_sqlite_on_a_wal_store() {
    let env = Env::new();
    std::fs::create_dir_all(&env.store).unwrap();
    let db = Connection::open(env.db()).unwrap();
    db.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0)).unwrap();
    db.execute_batch(include_str!("fixtures/agmsg-bash-schema.sql")).unwrap();
    drop(db);
    run_mixed(&env);
    let mode: String = Connection::open(env.db()).unwrap().query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal", "the store stays in agmsg's WAL mode");
}

#[test]
fn with_native_sqlite_on_a_rollback_journal_store() {
    let env = Env::new();
    env.storage(&["init"]).ok();
    run_mixed(&env);
}

/// Whether process `pid` has `path` (canonical) open.
fn has_open(pid: u32, path: &std::path::Path) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .is_ok_and(|fds| fds.flatten().any(|fd| std::fs::read_link(fd.path()).is_ok_and(|p| p == path)))
}

/// The lock is real on both sides: a native transaction holding the write lock makes a component's
/// send wait (not fail, not write through it), and the send completes once the native side is done:
/// after its commit for a rollback-journal store; after it closes for a WAL store (a native WAL
/// connection holds a shared lock while open, and the component, which has no shared-memory WAL index,
/// needs the database to itself).
#[test]
fn a_native_write_lock_makes_the_component_wait() {
    for wal in [false, true] {
        // In-process: the test watches the `agmsg-host` process it started open the database.
        let env = Env::new().env("AGMSG_HOST_SERVER", "off");
        env.storage(&["init"]).ok();
        if wal {
            let db = Connection::open(env.db()).unwrap();
            db.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0)).unwrap();
        }
        let db = Connection::open(env.db()).unwrap();
        db.execute_batch("BEGIN IMMEDIATE; INSERT INTO storage_metadata VALUES('native-probe', 'x');").unwrap();
        let mut send =
            env.cmd().args(["storage", "send", "t", "a", "b", "waited"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        // Waited for as an event: the send has the database open; from there it needs the write lock.
        let path = env.db().canonicalize().unwrap();
        let started = std::time::Instant::now();
        while !has_open(send.id(), &path) {
            assert!(send.try_wait().unwrap().is_none(), "wal={wal}: the send ended before it opened the database");
            assert!(started.elapsed() < common::bounded::LIVENESS, "wal={wal}: the send never opened the database");
            std::thread::sleep(Duration::from_millis(5));
        }
        // Then watched for a while (an observation window, not a bound: a send that goes through the
        // lock is caught when it does so within it): it neither ends nor writes while the lock is held.
        for _ in 0..40 {
            std::thread::sleep(Duration::from_millis(50));
            assert!(send.try_wait().unwrap().is_none(), "wal={wal}: the send ended while the native write lock was held");
            let written: i64 =
                Connection::open(env.db()).unwrap().query_row("SELECT count(*) FROM events WHERE body='waited'", [], |r| r.get(0)).unwrap();
            assert_eq!(written, 0, "wal={wal}: the send wrote through the native write lock");
        }
        db.execute_batch("COMMIT").unwrap();
        drop(db);
        let out = common::bounded::output(send, "the send once the lock is free");
        assert!(out.status.success(), "wal={wal}: the send failed instead of waiting: {}", String::from_utf8_lossy(&out.stderr));
        let id = String::from_utf8(out.stdout).unwrap().trim_end().to_owned();
        let db = Connection::open(env.db()).unwrap();
        let (probe, sent): (i64, i64) = db
            .query_row(
                "SELECT (SELECT count(*) FROM storage_metadata WHERE key='native-probe'), (SELECT count(*) FROM events WHERE id=?1)",
                [&id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((probe, sent), (1, 1), "wal={wal}");
    }
}
