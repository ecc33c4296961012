//! What only the jsonl driver has: agmsg's file layout, a corrupt line, the tuple compaction key, and
//! waiting for a lock held by another process.

mod common;

use std::time::{Duration, Instant};

use common::Env;

fn jsonl() -> Env {
    Env::new().env("AGMSG_STORAGE_DRIVER", "jsonl")
}

/// A log written by hand in agmsg's format (including a sync record agmsg may write and a line with
/// unknown fields) opens and works; what the component appends stays in the same format.
#[test]
fn log_written_by_hand_in_agmsg_format() {
    let env = jsonl();
    std::fs::create_dir_all(&env.store).unwrap();
    std::fs::write(
        env.store.join("events.jsonl"),
        concat!(
            r#"{"type":"message_sent","id":"0192aaaa-0000-7000-8000-000000000001","team":"t","from":"alice","to":"bob","body":"hello","at":"2026-05-30T19:00:00Z"}"#, "\n",
            r#"{"type":"sync_generation","generation":3}"#, "\n",
            r#"{"type":"message_sent","id":"0192aaaa-0000-7000-8000-000000000002","team":"t","from":"carol","to":"bob","body":"second","at":"2026-05-30T19:01:00Z","extra":{"x":1}}"#, "\n",
            r#"{"type":"message_read","id":"0192aaaa-0000-7000-8000-00000000000a","msg_id":"0192aaaa-0000-7000-8000-000000000001","team":"t","agent":"bob","at":"2026-05-30T19:05:00Z"}"#, "\n",
        ),
    )
    .unwrap();
    std::fs::write(env.store.join(".read-cursor-v1"), "").unwrap();
    let unread = env.storage(&["list-unread", "t", "bob"]).json();
    assert_eq!(unread.len(), 1);
    assert_eq!(unread[0]["body"], "second");
    let run = env.storage(&["describe", "t"]);
    assert!(run.stdout.contains(&format!("log={}", env.store.join("events.jsonl").display())), "{run:?}");

    let id = env.send("t", "bob", "alice", "reply");
    env.storage(&["mark-read-batch", "t", "bob", "0192aaaa-0000-7000-8000-000000000002"]).ok();
    let log = std::fs::read_to_string(env.store.join("events.jsonl")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 6);
    assert!(lines[4].starts_with(&format!(r#"{{"type":"message_sent","id":"{id}","team":"t","from":"bob","to":"alice","body":"reply","at":""#)), "{}", lines[4]);
    assert!(lines[5].starts_with(r#"{"type":"message_read","id":""#) && lines[5].contains(r#""msg_id":"0192aaaa-0000-7000-8000-000000000002","team":"t","agent":"bob","at":""#), "{}", lines[5]);
    // The frontier moved (both of bob's messages are read) and is in agmsg's tsv.
    let cursors = std::fs::read_to_string(env.store.join("read-cursors.tsv")).unwrap();
    assert_eq!(cursors, "t\tbob\t3\n");
}

#[test]
fn migration_treats_the_backlog_as_consumed() {
    let env = jsonl();
    std::fs::create_dir_all(&env.store).unwrap();
    std::fs::write(
        env.store.join("events.jsonl"),
        concat!(r#"{"type":"message_sent","id":"m1","team":"t","from":"a","to":"bob","body":"old","at":"2026-01-01T00:00:00Z"}"#, "\n"),
    )
    .unwrap();
    assert_eq!(env.storage(&["list-unread", "t", "bob"]).stdout, "");
    assert_eq!(env.storage(&["read-cursor-get", "t", "bob"]).stdout, "1\n");
    assert!(env.store.join(".read-cursor-v1").exists());
    env.send("t", "a", "bob", "new");
    assert_eq!(env.storage(&["list-unread", "t", "bob"]).json().len(), 1);
}

#[test]
fn corrupt_line_fails_with_its_number() {
    let env = jsonl();
    env.send("t", "a", "bob", "fine");
    let log = env.store.join("events.jsonl");
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.push_str("{this is not json\n");
    std::fs::write(&log, text).unwrap();
    for args in [vec!["list-unread", "t", "bob"], vec!["watch-tip", "t:bob"], vec!["history", "t"], vec!["watch-after", "0", "t:bob"]] {
        let run = env.storage(&args);
        assert_eq!((run.code, run.stdout.as_str()), (12, ""), "{args:?}: {run:?}");
        assert!(run.stderr.contains("events.jsonl line 2"), "{run:?}");
    }
    let run = env.storage(&["compact"]);
    assert_eq!((run.code, run.stdout.as_str()), (12, "corrupt_state\n"), "{run:?}");
}

#[test]
fn compaction_keys_reads_by_tuple() {
    let env = jsonl();
    std::fs::create_dir_all(&env.store).unwrap();
    std::fs::write(env.store.join(".read-cursor-v1"), "").unwrap();
    // ("a b", "c") and ("a", "b c") are different readers; the duplicate of the first goes.
    let read = |id: &str, team: &str, agent: &str| {
        format!(r#"{{"type":"message_read","id":"{id}","msg_id":"m","team":"{team}","agent":"{agent}","at":"2026-01-01T00:00:00Z"}}"#)
    };
    let lines = [read("r1", "a b", "c"), read("r2", "a", "b c"), read("r3", "a b", "c")];
    std::fs::write(env.store.join("events.jsonl"), lines.join("\n") + "\n").unwrap();
    assert_eq!(env.storage(&["compact"]).stdout, "ok\n");
    let log = std::fs::read_to_string(env.store.join("events.jsonl")).unwrap();
    let ids: Vec<&str> = log.lines().map(|l| &l[l.find(r#""id":""#).unwrap() + 6..][..2]).collect();
    assert_eq!(ids, ["r1", "r2"]);
}

#[test]
fn waits_for_a_lock_held_elsewhere() {
    let env = jsonl();
    env.send("t", "a", "bob", "first");
    // Another process holds the store lock (a flock on the store directory) for a second.
    let mut holder = std::process::Command::new("flock")
        .arg(&env.store)
        .args(["sleep", "1"])
        .spawn()
        .expect("flock(1) from util-linux");
    std::thread::sleep(Duration::from_millis(200));
    let started = Instant::now();
    env.send("t", "a", "bob", "second");
    assert!(started.elapsed() >= Duration::from_millis(500), "the send waited for the lock");
    holder.wait().unwrap();
    assert_eq!(env.storage(&["list-unread", "t", "bob"]).json().len(), 2);
}
