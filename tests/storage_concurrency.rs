//! Many processes on one store, and a writer killed mid-stream: nothing lost, nothing duplicated, the
//! store intact, no stale lock.

mod common;

use std::collections::HashSet;
use std::process::Stdio;
use std::time::Duration;

use common::Env;
use rusqlite::Connection;

#[test]
fn eight_processes_times_250_sends() {
    const WRITERS: usize = 8;
    const SENDS: usize = 250;
    let env = Env::new();
    env.storage(&["init"]).ok();
    let ids = common::concurrent_sends(WRITERS, SENDS, |_| &env);
    assert_eq!(ids.len(), WRITERS * SENDS);
    let db = Connection::open(env.db()).unwrap();
    let ok: String = db.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
    let (events, distinct, legacy): (i64, i64, i64) = db
        .query_row("SELECT count(*), count(DISTINCT id), (SELECT count(*) FROM messages) FROM events WHERE type='message_sent'", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    assert_eq!((events, distinct, legacy), (2000, 2000, 2000));
    assert_eq!(env.storage(&["list-unread", "t", "bob"]).json().len(), 2000);
}

#[test]
fn writer_killed_mid_stream() {
    let env = Env::new();
    env.storage(&["init"]).ok();
    let mut writer = env
        .program("bash")
        .args(["-c", r#"for i in $(seq 1 100000); do "$0" storage send t a bob "m$i" || exit 1; done"#, common::BIN])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = common::bounded::Lines::new(writer.stdout.take().unwrap());
    let mut printed = Vec::new();
    while printed.len() < 30 {
        printed.push(lines.next(&writer, "the writer's sends").expect("the writer ended early"));
    }
    // Kill the whole process group mid-write: bash and whichever agmsg-host is running.
    common::bounded::kill_tree_and_wait(&mut writer, "the killed writer");
    printed.extend(lines.rest(&writer, "the killed writer's output"));

    // No stale lock: with every killed process gone, the host's store lock (a flock on the store
    // directory) and SQLite's write lock are free at once, asked for without waiting.
    let store = std::fs::File::open(&env.store).unwrap();
    rustix::fs::flock(&store, rustix::fs::FlockOperation::NonBlockingLockExclusive).expect("a stale store lock");
    rustix::fs::flock(&store, rustix::fs::FlockOperation::Unlock).unwrap();
    let db = Connection::open(env.db()).unwrap();
    db.busy_timeout(Duration::ZERO).unwrap();
    db.execute_batch("BEGIN IMMEDIATE; ROLLBACK;").expect("a stale SQLite write lock");
    drop(db);
    env.send("t", "a", "bob", "after the crash");
    let db = Connection::open(env.db()).unwrap();
    let ok: String = db.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
    let stored: HashSet<String> =
        env.storage(&["list-unread", "t", "bob"]).json().iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect();
    for id in &printed {
        assert!(stored.contains(id), "send {id} printed an id but is missing");
    }
}

/// jsonl: processes sending, reading (which updates the sidecar index) and marking read at once, one
/// of them SIGKILLed mid-stream. Afterwards the index answers exactly as one rebuilt from the log does.
#[test]
fn jsonl_index_survives_concurrent_readers_and_a_kill() {
    let env = Env::new().env("AGMSG_STORAGE_DRIVER", "jsonl");
    env.storage(&["init"]).ok();
    let script = r#"for i in $(seq 1 "$2"); do
        "$0" storage send t "w$1" "r$(( i % 3 ))" "w$1-$i" >/dev/null || exit 1
        id=$("$0" storage list-unread t "r$(( i % 3 ))" --limit 1 | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
        if [ -n "$id" ] && [ $(( i % 2 )) = 0 ]; then "$0" storage mark-read-batch t "r$(( i % 3 ))" "$id" >/dev/null || exit 1; fi
    done"#;
    let spawn = |w: usize, rounds: usize| {
        let args = ["-c", script, common::BIN, &w.to_string(), &rounds.to_string()];
        env.program("bash").args(args).stdout(Stdio::null()).spawn().unwrap()
    };
    let workers: Vec<_> = (0..3).map(|w| spawn(w, 40)).collect();
    // The victim would run far longer than the others: it dies mid-stream.
    let mut victim = spawn(3, 100_000);
    std::thread::sleep(Duration::from_millis(1500));
    assert!(victim.try_wait().unwrap().is_none(), "the victim is still running when killed");
    common::kill_tree(victim.id());
    common::bounded::wait(&mut victim, "the killed victim");
    for mut worker in workers {
        assert!(common::bounded::wait(&mut worker, "a worker").success(), "a worker failed");
    }

    let answers = || {
        let mut all = Vec::new();
        for agent in ["r0", "r1", "r2"] {
            all.push(env.storage(&["list-unread", "t", agent]).stdout);
            all.push(env.storage(&["watch-after", "0", &format!("t:{agent}")]).stdout);
            all.push(env.storage(&["history", "t", agent, "--limit", "7"]).stdout);
        }
        all.push(env.storage(&["history", "t"]).stdout);
        all.push(env.storage(&["watch-tip", "t:r0"]).stdout);
        all
    };
    let with_index = answers();
    assert!(with_index.iter().all(|a| !a.is_empty()));
    std::fs::remove_dir_all(env.store.join(".events-index")).unwrap();
    assert_eq!(answers(), with_index, "the index after concurrent use and a kill differs from a rebuilt one");
}
