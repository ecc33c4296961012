//! The storage contract (spec §2), rule by rule. The `live_*` rules check the optional `live` interface
//! (`agmsg:storage` 1.1.0) of a driver that offers it; one that does not (it is polled) passes them
//! vacuously. The `receipts_*` and `rename_*` rules check the optional 1.2.0 interfaces the same way,
//! and are skipped for a driver that answers `unsupported`; the `sync_*`, `resync_*` and `read_state_*`
//! rules check the optional `sync`, `resync` and `read-state` interfaces of a driver that offers them (skipped on 14).

use std::process::Stdio;
use std::time::{Duration, Instant};

use agmsg_conformance::{Env, Harness, Rule};

fn env_for(harness: &Harness, driver: &str) -> Env {
    Env::new(harness).env("AGMSG_STORAGE_DRIVER", driver)
}

fn ids(records: &[serde_json::Value]) -> Vec<String> {
    records.iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect()
}

fn unread(env: &Env, team: &str, agent: &str) -> Vec<String> {
    let run = env.storage(&["list-unread", team, agent]);
    run.ok();
    ids(&run.json())
}

fn tip(env: &Env, pair: &str) -> String {
    let run = env.storage(&["watch-tip", pair]);
    run.ok();
    let line = run.stdout.trim_end().to_owned();
    assert_eq!(run.lines().len(), 1, "watch-tip prints one bare line: {run:?}");
    line
}

fn cursor(env: &Env, team: &str, agent: &str) -> String {
    let run = env.storage(&["read-cursor-get", team, agent]);
    run.ok();
    run.stdout.trim_end().to_owned()
}

fn consume(env: &Env, team: &str, agent: &str, cursor: &str, ids: &[&str]) {
    let mut args = vec!["read-cursor-consume", team, agent, cursor];
    args.extend_from_slice(ids);
    let run = env.storage(&args);
    assert_eq!((run.code, run.stdout.as_str()), (0, "ok\n"), "{run:?}");
}

/// watch-after: the records and the trailing cursor.
fn watch_after(env: &Env, cursor: &str, pairs: &[&str]) -> (Vec<String>, String) {
    let mut args = vec!["watch-after", cursor];
    args.extend_from_slice(pairs);
    let run = env.storage(&args);
    run.ok();
    let mut records = run.json();
    let last = records.pop().expect("watch-after always ends with a cursor record");
    assert_eq!(last["type"], "cursor", "{run:?}");
    assert!(last["cursor"].is_string());
    (ids(&records), last["cursor"].as_str().unwrap().to_owned())
}

fn round_trip_and_recipient_scope(harness: &Harness, driver: &str) {
    let env = env_for(harness, driver);
    let a = env.send("t", "alice", "bob", "one");
    let b = env.send("t", "alice", "carol", "two");
    let c = env.send("u", "alice", "bob", "other team");
    assert_eq!(unread(&env, "t", "bob"), std::slice::from_ref(&a));
    assert_eq!(unread(&env, "t", "carol"), std::slice::from_ref(&b));
    assert_eq!(unread(&env, "u", "bob"), [c]);
    // Marking bob's copy read never affects carol's; re-marking is idempotent.
    for _ in 0..2 {
        let run = env.storage(&["mark-read-batch", "t", "bob", &a]);
        assert_eq!((run.code, run.stdout.as_str()), (0, "ok\n"));
    }
    assert!(unread(&env, "t", "bob").is_empty());
    assert_eq!(unread(&env, "t", "carol"), [b]);
    // No ids: still ok.
    assert_eq!(env.storage(&["mark-read-batch", "t", "bob"]).stdout, "ok\n");
}

fn covered_prefix_and_hard_gap(harness: &Harness, driver: &str) {
    let env = env_for(harness, driver);
    let zero = cursor(&env, "t", "bob");
    let m1 = env.send("t", "a", "bob", "1");
    let m2 = env.send("t", "a", "bob", "2");
    let m3 = env.send("t", "a", "bob", "3");
    let now = tip(&env, "t:bob");
    // Exact read of m2 and m3 past the unread m1: retained as exceptions, frontier does not move.
    consume(&env, "t", "bob", &now, &[&m2, &m3]);
    assert_eq!(cursor(&env, "t", "bob"), zero, "a still-unread message is a hard gap");
    assert_eq!(unread(&env, "t", "bob"), std::slice::from_ref(&m1));
    // Reading m1 closes the gap: the frontier moves through the whole covered prefix.
    consume(&env, "t", "bob", &now, &[&m1]);
    assert_eq!(cursor(&env, "t", "bob"), now);
    assert!(unread(&env, "t", "bob").is_empty());
    // Never backwards.
    consume(&env, "t", "bob", &zero, &[]);
    assert_eq!(cursor(&env, "t", "bob"), now);
}

fn frontier_is_capped_at_the_tip(harness: &Harness, driver: &str) {
    let env = env_for(harness, driver);
    env.send("t", "a", "carol", "not addressed to bob: no gap");
    let now = tip(&env, "t:bob");
    consume(&env, "t", "bob", "999999999999", &[]);
    assert_eq!(cursor(&env, "t", "bob"), now, "never past the current tip");
    let later = env.send("t", "a", "bob", "later");
    assert_eq!(unread(&env, "t", "bob"), [later]);
}

fn consume_advances_across_other_traffic(harness: &Harness, driver: &str) {
    let env = env_for(harness, driver);
    env.send("t", "a", "carol", "not for bob");
    env.send("t", "a", "carol", "not for bob either");
    let now = tip(&env, "t:bob");
    consume(&env, "t", "bob", &now, &[]);
    assert_eq!(cursor(&env, "t", "bob"), now);
}

fn watch_after_delivers_and_always_advances(harness: &Harness, driver: &str) {
    let env = env_for(harness, driver);
    let start = cursor(&env, "t", "bob");
    let m1 = env.send("t", "a", "bob", "1");
    env.send("t", "a", "carol", "off-subscription");
    let m2 = env.send("t", "a", "dave", "2");
    let (got, next) = watch_after(&env, &start, &["t:bob", "t:dave"]);
    assert_eq!(got, [m1, m2]);
    assert_eq!(next, tip(&env, "t:bob"), "the trailing cursor is the tip");
    // Nothing new for bob, but traffic elsewhere: the cursor still advances.
    env.send("t", "a", "carol", "more off-subscription");
    let (got, after) = watch_after(&env, &next, &["t:bob"]);
    assert!(got.is_empty());
    assert_ne!(after, next);
    assert_eq!(after, tip(&env, "t:bob"));
    // A cursor from the future never regresses.
    let (_, future) = watch_after(&env, "999999999", &["t:bob"]);
    assert_eq!(future, "999999999");
}

fn watch_loop_consumes_exactly_what_was_shown(harness: &Harness, driver: &str) {
    let env = env_for(harness, driver);
    let m1 = env.send("t", "a", "bob", "1");
    let start = cursor(&env, "t", "bob");
    let (got, next) = watch_after(&env, &start, &["t:bob"]);
    assert_eq!(got, std::slice::from_ref(&m1));
    // Crash before consume: delivered again.
    assert_eq!(watch_after(&env, &cursor(&env, "t", "bob"), &["t:bob"]).0, std::slice::from_ref(&m1));
    consume(&env, "t", "bob", &next, &[&m1]);
    assert!(watch_after(&env, &cursor(&env, "t", "bob"), &["t:bob"]).0.is_empty());
}

fn cursor_tokens_are_transport_safe(harness: &Harness, driver: &str) {
    let env = env_for(harness, driver);
    env.send("t", "a", "bob", "1");
    for token in [tip(&env, "t:bob"), cursor(&env, "t", "bob"), watch_after(&env, &cursor(&env, "t", "bob"), &["t:bob"]).1] {
        assert!(agmsg_contract::is_transport_token(&token), "{token:?}");
    }
}

fn bad_pairs_and_cursors_are_refused(harness: &Harness, driver: &str) {
    let env = env_for(harness, driver);
    env.send("t", "a", "bob", "1");
    for args in [
        vec!["watch-tip", "nocolon"],
        vec!["watch-tip", "t:a", "u:b"],
        vec!["watch-after", "0", "t:"],
        vec!["watch-after", "0", "t:a", "u:a"],
    ] {
        let run = env.storage(&args);
        assert_ne!(run.code, 0, "{args:?}");
        assert!(run.stdout.is_empty(), "{args:?}: {run:?}");
    }
    for bad in ["", "12 3", "abc", "-1"] {
        let run = env.storage(&["read-cursor-consume", "t", "bob", bad]);
        assert_eq!((run.code, run.stdout.as_str()), (13, "runtime_error\n"), "{bad:?}: {run:?}");
        let run = env.storage(&["watch-after", bad, "t:bob"]);
        assert_ne!(run.code, 0, "{bad:?}");
    }
}

fn history_by_agent_and_team(harness: &Harness, driver: &str) {
    let env = env_for(harness, driver);
    let m1 = env.send("t", "alice", "bob", "1");
    let m2 = env.send("t", "bob", "carol", "2");
    let m3 = env.send("t", "carol", "dave", "3");
    env.send("u", "alice", "bob", "other team");
    let all = |args: &[&str]| {
        let run = env.storage(args);
        run.ok();
        ids(&run.json())
    };
    assert_eq!(all(&["history", "t"]), [m1.clone(), m2.clone(), m3.clone()]);
    assert_eq!(all(&["history", "t", ""]), [m1.clone(), m2.clone(), m3.clone()], "empty agent is team-wide");
    assert_eq!(all(&["history", "t", "bob"]), [m1.clone(), m2.clone()], "sender or recipient");
    // --limit keeps the most recent N, oldest to newest; it is never taken for the agent.
    assert_eq!(all(&["history", "t", "--limit", "2"]), [m2.clone(), m3.clone()]);
    assert_eq!(all(&["history", "t", "bob", "--limit", "1"]), std::slice::from_ref(&m2));
    assert_eq!(all(&["history", "t", "--limit", "1", "carol"]), [m3]);
    // Read state does not change history.
    env.storage(&["mark-read-batch", "t", "bob", &m1]).ok();
    assert_eq!(all(&["history", "t", "bob"]), [m1, m2]);
}

fn export_import_round_trip(harness: &Harness, driver: &str) {
    let env = env_for(harness, driver);
    let m1 = env.send("t", "alice", "bob", "line\nbreak \"quoted\"");
    env.send("t", "alice", "carol", "two");
    env.storage(&["mark-read-batch", "t", "bob", &m1]).ok();
    let file = env.dir.path().join("export.jsonl");
    let run = env.storage(&["export", file.to_str().unwrap()]);
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
    let text = std::fs::read_to_string(&file).unwrap();
    let events: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(events.iter().filter(|e| e["type"] == "message_sent").count(), 2);
    assert_eq!(events.iter().filter(|e| e["type"] == "message_read").count(), 1);
    assert!(events.iter().all(|e| e["type"] == "message_sent" || e["type"] == "message_read"));

    // Into a fresh store: the same visible state.
    let other = env_for(harness, driver);
    let run = other.storage(&["import", "t", file.to_str().unwrap()]);
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
    assert!(unread(&other, "t", "bob").is_empty());
    assert_eq!(unread(&other, "t", "carol").len(), 1);
    assert_eq!(other.storage(&["history", "t"]).json(), env.storage(&["history", "t"]).json());
    // Importing twice duplicates nothing.
    other.storage(&["import", file.to_str().unwrap()]).ok();
    assert_eq!(other.storage(&["history", "t"]).json().len(), 2);
    let again = other.dir.path().join("again.jsonl");
    other.storage(&["export", again.to_str().unwrap()]).ok();
    assert_eq!(std::fs::read_to_string(&again).unwrap().lines().count(), 3);
}

fn import_is_all_or_nothing(harness: &Harness, driver: &str) {
    let env = env_for(harness, driver);
    let file = env.dir.path().join("bad.jsonl");
    std::fs::write(
        &file,
        concat!(
            r#"{"type":"message_sent","id":"0192aaaa-0000-7000-8000-000000000001","team":"t","from":"a","to":"bob","body":"ok","at":"2026-01-01T00:00:00Z"}"#,
            "\n",
            r#"{"type":"future_event","anything":1}"#,
            "\n",
            r#"{"type":"message_sent","id":"0192aaaa-0000-7000-8000-000000000002","team":"t","from":"a","to":"bob","body":"ok","at":"2026-01-01T00:00:00Z","extra":"ignored"}"#,
            "\n",
            "{not json\n"
        ),
    )
    .unwrap();
    let run = env.storage(&["import", file.to_str().unwrap()]);
    assert_eq!(run.code, 13, "{run:?}");
    assert!(run.stderr.contains("line 4"), "names the line: {run:?}");
    assert!(unread(&env, "t", "bob").is_empty(), "nothing applied");

    // Without the bad line, unknown types and fields are ignored and the rest applies.
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.lines().take(3).collect::<Vec<_>>().join("\n")).unwrap();
    env.storage(&["import", file.to_str().unwrap()]).ok();
    assert_eq!(unread(&env, "t", "bob").len(), 2);

    for bad in [
        r#"{"type":"message_sent","id":"x y","team":"t","from":"a","to":"b","body":"","at":"2026-01-01T00:00:00Z"}"#,
        r#"{"type":"message_sent","id":"x","team":"t/..","from":"a","to":"b","body":"","at":"2026-01-01T00:00:00Z"}"#,
        r#"{"type":"message_read","id":"x","team":"t","agent":"b","at":"2026-01-01T00:00:00Z"}"#,
        r#"[1,2]"#,
    ] {
        std::fs::write(&file, bad).unwrap();
        assert_eq!(env.storage(&["import", file.to_str().unwrap()]).code, 13, "{bad}");
    }
}

fn export_is_atomic_and_replaces_symlinks(harness: &Harness, driver: &str) {
    let env = env_for(harness, driver);
    env.send("t", "a", "b", "1");
    let target = env.dir.path().join("precious.txt");
    std::fs::write(&target, "do not overwrite").unwrap();
    let link = env.dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    env.storage(&["export", link.to_str().unwrap()]).ok();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "do not overwrite");
    assert!(!std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read_to_string(&link).unwrap().lines().count(), 1);
    let leftovers: Vec<_> = std::fs::read_dir(env.dir.path())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().contains(".tmp."))
        .collect();
    assert!(leftovers.is_empty());
}

fn compaction_properties(harness: &Harness, driver: &str) {
    let env = env_for(harness, driver);
    let m1 = env.send("t", "a", "bob", "1");
    let m2 = env.send("t", "a", "bob", "2");
    env.send("t", "a", "carol", "3");
    env.storage(&["mark-read-batch", "t", "bob", &m2]).ok();
    let before_cursor = tip(&env, "t:bob");
    // A duplicate read marker, as a merged import would leave it.
    let file = env.dir.path().join("dup.jsonl");
    std::fs::write(
        &file,
        format!(r#"{{"type":"message_read","id":"dup-1","msg_id":"{m2}","team":"t","agent":"bob","at":"2026-01-01T00:00:00Z"}}"#),
    )
    .unwrap();
    env.storage(&["import", file.to_str().unwrap()]).ok();

    let export = |name: &str| {
        let path = env.dir.path().join(name);
        env.storage(&["export", path.to_str().unwrap()]).ok();
        std::fs::read_to_string(path).unwrap()
    };
    let unread_before = (unread(&env, "t", "bob"), unread(&env, "t", "carol"));
    let history_before = env.storage(&["history", "t"]).stdout;
    let count_before = export("before.jsonl").lines().count();

    assert_eq!(env.storage(&["compact"]).stdout, "ok\n");
    let once = export("once.jsonl");
    assert_eq!(env.storage(&["compact", "t"]).stdout, "ok\n");
    let twice = export("twice.jsonl");
    assert_eq!(once, twice, "idempotent");
    assert_eq!((unread(&env, "t", "bob"), unread(&env, "t", "carol")), unread_before, "state-preserving");
    assert_eq!(env.storage(&["history", "t"]).stdout, history_before);
    assert!(once.lines().count() <= count_before, "monotonic");
    let reads: Vec<&str> = once.lines().filter(|l| l.contains("message_read")).collect();
    assert_eq!(reads.len(), 1, "read-coalescing: {reads:?}");
    assert_eq!(once.lines().filter(|l| l.contains("message_sent")).count(), 3, "message_sent untouched");
    // Cursor-safe: the tip never regresses, and an old cursor still delivers later messages.
    assert!(tip(&env, "t:bob").parse::<u64>().unwrap() >= before_cursor.parse::<u64>().unwrap());
    let m4 = env.send("t", "a", "bob", "4");
    assert_eq!(watch_after(&env, &before_cursor, &["t:bob"]).0, [m4]);
    let _ = m1;
}

/// Every rule, in the order they are reported.
/// `storage wait-after`: its answer (`changed`, `timed-out`, `unsupported`) and how long it took.
fn wait_after(env: &Env, cursor: &str, pair: &str, timeout_ms: u64) -> (String, Duration) {
    let started = Instant::now();
    let run = env.storage(&["wait-after", cursor, pair, "--timeout-ms", &timeout_ms.to_string()]);
    let took = started.elapsed();
    run.ok();
    assert_eq!(run.lines().len(), 1, "wait-after prints one bare line: {run:?}");
    (run.stdout.trim_end().to_owned(), took)
}

/// Why the `live_*` rules do not apply to a driver without the optional interface.
const NO_LIVE: &str = "the driver offers no `live` interface (optional): watch polls it";

fn live_wait_times_out_and_sees_what_is_there(harness: &Harness, driver: &str) {
    let env = env_for(harness, driver);
    env.storage(&["init", "t"]).ok();
    let start = tip(&env, "t:bob");
    let (answer, took) = wait_after(&env, &start, "t:bob", 400);
    if answer == "unsupported" {
        agmsg_conformance::skip(NO_LIVE);
    }
    assert_eq!(answer, "timed-out", "nothing was sent");
    assert!(took >= Duration::from_millis(350), "it returned after {took:?}, before its timeout of 400 ms");
    assert!(took < Duration::from_secs(10), "it returned after {took:?}, long after its timeout of 400 ms");
    // A message already after the cursor: at once, whatever the timeout.
    env.send("t", "alice", "bob", "already here");
    let (answer, took) = wait_after(&env, &start, "t:bob", 20_000);
    assert_eq!(answer, "changed");
    assert!(took < Duration::from_secs(10), "it took {took:?} to see a message already there");
}

fn live_wait_wakes_on_a_send_from_another_session(harness: &Harness, driver: &str) {
    let env = env_for(harness, driver);
    env.storage(&["init", "t"]).ok();
    let start = tip(&env, "t:bob");
    if wait_after(&env, &start, "t:bob", 1).0 == "unsupported" {
        agmsg_conformance::skip(NO_LIVE);
    }
    let waiter = env
        .cmd()
        .args(["storage", "wait-after", &start, "t:bob", "--timeout-ms", "12000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Let it load and start waiting (it answers `changed` just as well if the send comes first).
    std::thread::sleep(Duration::from_millis(1500));
    let sent = Instant::now();
    env.send("t", "alice", "bob", "wake up");
    let run = agmsg_conformance::Run::from(waiter.wait_with_output().unwrap());
    let took = sent.elapsed();
    run.ok();
    assert_eq!(run.stdout, "changed\n", "{run:?}");
    assert!(took < Duration::from_secs(6), "it woke {took:?} after the send, not soon after (timeout 12 s)");
}

/// Whether an optional op's run says the driver does not offer it (13, `unsupported: ...`); skip then.
fn skip_if_unsupported(run: &agmsg_conformance::Run, why: &str) {
    if run.code == 13 && run.stderr.contains("unsupported:") {
        agmsg_conformance::skip(why);
    }
}

const NO_RECEIPTS: &str = "the driver offers no `receipts` interface (optional): agmsg skips receipts";
const NO_RENAME: &str = "the driver offers no `rename` interface (optional): agmsg renames its store itself or not at all";

fn receipts_record_once_and_report_the_state(harness: &Harness, driver: &str) {
    let env = env_for(harness, driver);
    // Asked first, so that a driver without the interface is skipped whatever else it does.
    skip_if_unsupported(&env.storage(&["receipt-status", "t", "none-yet"]), NO_RECEIPTS);
    let a = env.send("t", "alice", "bob", "one");
    let b = env.send("t", "alice", "bob", "two");
    let status = |id: &str| {
        let run = env.storage(&["receipt-status", "t", id]);
        run.ok();
        run.stdout.trim_end().to_owned()
    };
    assert_eq!(status(&a), "none");
    let run = env.storage(&["record-receipts", "t", "bob", "inbox", &a, "not-a-message"]);
    assert_eq!((run.code, run.stdout.as_str()), (0, "ok\n"), "an unknown id is skipped: {run:?}");
    assert_eq!(status(&a), "receipt");
    assert_eq!(status(&b), "none", "only the ids given");
    assert_eq!(env.storage(&["record-receipts", "t", "carol", "watch", &a]).stdout, "ok\n", "again: still ok");
    assert_eq!(status(&a), "receipt");
    assert_eq!(env.storage(&["record-receipts", "t", "bob", "inbox"]).stdout, "ok\n", "no ids: ok");
}

fn rename_agent_keeps_unread_and_frontier(harness: &Harness, driver: &str) {
    let env = env_for(harness, driver);
    // A rename no record matches: the probe for the interface, and it must succeed.
    let probe = env.storage(&["rename-agent", "t", "nobody", "someone"]);
    skip_if_unsupported(&probe, NO_RENAME);
    assert_eq!((probe.code, probe.stdout.as_str()), (0, "ok\n"), "{probe:?}");
    let read = env.send("t", "alice", "bob", "read");
    let at = tip(&env, "t:bob");
    consume(&env, "t", "bob", &at, &[&read]);
    let unread_one = env.send("t", "alice", "bob", "unread");
    let run = env.storage(&["rename-agent", "t", "bob", "rob"]);
    assert_eq!((run.code, run.stdout.as_str()), (0, "ok\n"), "{run:?}");
    assert_eq!(unread(&env, "t", "rob"), [unread_one], "the unread message follows the name");
    assert!(unread(&env, "t", "bob").is_empty());
    assert_eq!(cursor(&env, "t", "rob"), at, "the frontier follows the name");
}

fn rename_team_keeps_unread(harness: &Harness, driver: &str) {
    let env = env_for(harness, driver);
    skip_if_unsupported(&env.storage(&["rename-team", "none", "none2"]), NO_RENAME);
    let m = env.send("t", "alice", "bob", "before");
    let run = env.storage(&["rename-team", "t", "core"]);
    assert_eq!((run.code, run.stdout.as_str()), (0, "ok\n"), "{run:?}");
    assert_eq!(unread(&env, "core", "bob"), [m]);
    assert!(unread(&env, "t", "bob").is_empty());
}

const SYNC_SERVER: &str = "018f3f7e-0000-7000-8000-000000000000";
const SYNC_REMOTE: &str = "018f3f7e-0000-7000-8000-000000000001";
const SYNC_MEMBER: &str = "018f3f7e-0000-7000-8000-000000000010";
const NO_RESYNC: &str = "the driver offers no `resync` interface (optional): agmsg's engine does not resync through it";
const NO_READ_STATE: &str = "the driver offers no `read-state` interface (optional): agmsg's engine skips read-state sync";

/// `storage sync-<op> t SERVER REMOTE 1 <extra>...` with `stdin`.
fn sync_op(env: &Env, op: &str, extra: &[&str], stdin: &str) -> agmsg_conformance::Run {
    let op = format!("sync-{op}");
    let args: Vec<&str> = ["storage", op.as_str(), "t", SYNC_SERVER, SYNC_REMOTE, "1"].into_iter().chain(extra.iter().copied()).collect();
    env.run_stdin(&args, stdin.as_bytes())
}

/// Skip when the extension is not offered (agmsg's adapter answers 14 for it).
fn skip_if_not_offered(run: &agmsg_conformance::Run, why: &str) {
    if run.code == 14 {
        agmsg_conformance::skip(why);
    }
}

fn sync_line(run: &agmsg_conformance::Run, kind: &str) -> serde_json::Value {
    run.ok();
    let lines = run.lines();
    assert_eq!(lines.len(), 1, "one {kind} record: {run:?}");
    let v: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(v["type"], kind, "{run:?}");
    v
}

const NO_SYNC: &str = "the driver offers no `sync` interface (optional): agmsg's engine does not sync this store";
const PREPARE_NONE: &str =
    r#"{"type":"sync_prepare","envelope_v":1,"cipher":"none","key_id":null,"recipients":[],"max_blob_bytes":1048576,"allow_new":true}"#;

fn records(run: &agmsg_conformance::Run) -> Vec<serde_json::Value> {
    run.ok();
    run.lines().iter().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON record ({e}): {l}"))).collect()
}

fn kinds(records: &[serde_json::Value]) -> Vec<&str> {
    records.iter().map(|r| r["type"].as_str().unwrap_or("?")).collect()
}

/// stage1-sync, push: prepare reserves each new message once and answers byte for byte the same until
/// reconcile (agmsg's engine may retry a POST with what it was handed); reconcile moves the push cursor
/// to the acknowledged messages, which are not offered again.
fn sync_prepare_is_stable_until_reconcile(harness: &Harness, driver: &str) {
    let env = env_for(harness, driver);
    let probe = sync_op(&env, "prepare-push", &["10"], PREPARE_NONE);
    skip_if_not_offered(&probe, NO_SYNC);
    assert_eq!(kinds(&records(&probe)), ["sync_state"], "nothing to push yet");
    env.storage(&["send", "t", "alice", "bob", "one"]).ok();
    env.storage(&["send", "t", "alice", "bob", "two"]).ok();
    let first = sync_op(&env, "prepare-push", &["10"], PREPARE_NONE);
    let prepared = records(&first);
    assert_eq!(kinds(&prepared), ["sync_state", "sync_push_candidate", "sync_push_candidate"], "two messages sent");
    let again = sync_op(&env, "prepare-push", &["10"], PREPARE_NONE);
    assert_eq!(again.stdout, first.stdout, "prepare before reconcile must answer the same bytes");
    let acks: String = prepared[1..]
        .iter()
        .enumerate()
        .map(|(i, c)| {
            format!(
                "{{\"type\":\"sync_push_ack\",\"local_position\":{},\"id\":{},\"server_seq\":\"{}\",\"disposition\":\"stored\"}}\n",
                c["local_position"],
                c["id"],
                i + 1
            )
        })
        .collect();
    let result = sync_line(&sync_op(&env, "reconcile-push", &[], &acks), "sync_reconcile_result");
    assert_eq!(result["push_cursor"], prepared[2]["local_position"], "{result}");
    let after = sync_op(&env, "prepare-push", &["10"], PREPARE_NONE);
    assert_eq!(kinds(&records(&after)), ["sync_state"], "acknowledged messages offered again");
}

/// stage1-sync, pull: an importable message becomes one local message, a quarantined one none; the
/// transport cursor moves to the page's; the same page again imports nothing twice; reprocess offers
/// the quarantined message back, without touching the cursor.
fn sync_apply_pull_imports_once_and_quarantines(harness: &Harness, driver: &str) {
    let env = env_for(harness, driver);
    let wire = |n: u32| format!("6f1c2a3b-4d5e-4f60-8a7b-{n:012x}");
    let message = |n: u32, status: &str, projection: &str| {
        format!(
            r#"{{"type":"sync_pull_message","server_seq":"{n}","id":"{}","server_received_at":"2026-01-01T00:00:00.000000Z","envelope":{{"v":1,"cipher":"none","key_id":null,"blob":"e30="}},"status":"{status}"{projection}}}"#,
            wire(n)
        )
    };
    let chat = r#","projection":{"body":"from afar","created_at":"2026-01-01T00:00:00.000000Z","from_agent":"carol","to_agent":"bob"}"#;
    let page = format!(
        "{}\n{}\n{{\"type\":\"sync_pull_cursor\",\"next_after\":\"2\"}}\n",
        message(1, "importable", chat),
        message(2, "pending_key", "")
    );
    let run = sync_op(&env, "apply-pull", &[], &page);
    skip_if_not_offered(&run, NO_SYNC);
    let applied = records(&run);
    assert_eq!(kinds(&applied), ["sync_apply_result", "sync_apply_outcome", "sync_apply_outcome"], "{run:?}");
    assert_eq!(applied[0]["transport_cursor"], "2", "{run:?}");
    assert_eq!((applied[1]["status"].as_str(), applied[2]["status"].as_str()), (Some("imported"), Some("pending_key")), "{run:?}");
    let bodies = |env: &Env| -> Vec<String> {
        let run = env.storage(&["list-unread", "t", "bob"]);
        run.ok();
        run.json().iter().map(|m| m["body"].as_str().unwrap_or_default().to_owned()).collect()
    };
    assert_eq!(bodies(&env), ["from afar"]);
    records(&sync_op(&env, "apply-pull", &[], &page));
    assert_eq!(bodies(&env), ["from afar"], "the same page twice imported a message twice");
    let reprocessed = records(&sync_op(&env, "reprocess", &["10"], ""));
    assert_eq!(kinds(&reprocessed), ["sync_state", "sync_reprocess_candidate", "sync_reprocess_page"], "{reprocessed:?}");
    assert_eq!((reprocessed[1]["id"].as_str(), reprocessed[1]["prior_status"].as_str()), (Some(wire(2).as_str()), Some("pending_key")));
    assert_eq!(reprocessed[0]["transport_cursor"], "2", "reprocess must not move the cursor");
}

/// stage1-resync: status creates nothing (a binding it was never told of fails, twice alike); a gap is
/// recorded once, moving the transport cursor to the floor; the same gap again is refused.
fn resync_status_is_read_only_and_a_gap_is_accepted_once(harness: &Harness, driver: &str) {
    let env = env_for(harness, driver);
    let first = sync_op(&env, "resync-status", &["5"], "");
    skip_if_not_offered(&first, NO_RESYNC);
    assert_ne!(first.code, 0, "no binding yet: {first:?}");
    assert!(first.stdout.is_empty(), "{first:?}");
    let second = sync_op(&env, "resync-status", &["5"], "");
    assert_eq!((second.code, second.stdout.as_str()), (first.code, ""), "the first status created something: {second:?}");
    // A binding exists once Stage-1 sync has prepared for it.
    let prepare =
        r#"{"type":"sync_prepare","envelope_v":1,"cipher":"none","key_id":null,"recipients":[],"max_blob_bytes":1048576,"allow_new":true}"#;
    let prepared = sync_op(&env, "prepare-push", &["10"], prepare);
    if prepared.code == 14 {
        agmsg_conformance::skip("the driver offers `resync` without `sync`: no binding can be made to check it on");
    }
    prepared.ok();
    let status = sync_line(&sync_op(&env, "resync-status", &["5"], ""), "sync_resync_status");
    assert_eq!((status["transport_cursor"].as_str(), status["audit"].is_null()), (Some("0"), true), "{status}");
    let request = r#"{"type":"sync_resync","expected_transport_cursor":"0","min_available_seq":"5","current_seq":"7","reason":"retention-gap-accepted"}"#;
    let result = sync_line(&sync_op(&env, "resync", &[], request), "sync_resync_result");
    assert_eq!(
        (result["transport_cursor"].as_str(), result["gap_start"].as_str(), result["gap_end"].as_str()),
        (Some("5"), Some("1"), Some("5")),
        "{result}"
    );
    let status = sync_line(&sync_op(&env, "resync-status", &["5"], ""), "sync_resync_status");
    assert_eq!((status["transport_cursor"].as_str(), status["audit"]["accepted_floor"].as_str()), (Some("5"), Some("5")), "{status}");
    let again = sync_op(&env, "resync", &[], request);
    assert_ne!(again.code, 0, "the same gap twice: {again:?}");
}

/// stage2-read-state: a local member's frontier max-merges (a lower one never moves it back), a
/// remote name no local agent holds is blocked, and the operator's block holds until lifted.
fn read_state_merges_frontiers_and_blocks_members(harness: &Harness, driver: &str) {
    let env = env_for(harness, driver);
    let context = |name: &str| {
        format!(
            r#"{{"type":"sync_read_context","min_available_seq":"0","current_seq":"9","members":[{{"member_id":"{SYNC_MEMBER}","name":"{name}"}}],"local_agents":["bob"]}}"#
        )
    };
    let first = sync_op(&env, "prepare-read-state", &[], &context("bob"));
    skip_if_not_offered(&first, NO_READ_STATE);
    first.ok();
    let frontier = |env: &Env| -> Option<String> {
        let run = sync_op(env, "prepare-read-state", &[], &context("bob"));
        run.ok();
        run.lines()
            .iter()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|v| v["type"] == "sync_read_frontier")
            .map(|v| v["server_seq"].as_str().unwrap().to_owned())
    };
    assert_eq!(frontier(&env).as_deref(), Some("0"));
    let page = |seq: &str| {
        format!(
            "{{\"type\":\"sync_read_snapshot\",\"min_available_seq\":\"0\",\"current_seq\":\"9\"}}\n{{\"type\":\"sync_read_frontier\",\"member_id\":\"{SYNC_MEMBER}\",\"server_seq\":\"{seq}\"}}\n"
        )
    };
    let applied = sync_line(&sync_op(&env, "apply-read-state", &[], &page("5")), "sync_read_apply_result");
    assert_eq!(applied["member_count"], 1, "{applied}");
    sync_op(&env, "apply-read-state", &[], &page("3")).ok();
    assert_eq!(frontier(&env).as_deref(), Some("5"), "frontiers max-merge");
    // Blocked by the operator: no frontier until unblocked.
    let block = format!(r#"{{"type":"sync_read_block","member_id":"{SYNC_MEMBER}","reason":"read-state-limit-exceeded"}}"#);
    sync_line(&sync_op(&env, "block-read-state", &[], &block), "sync_read_blocked");
    assert_eq!(frontier(&env), None, "a blocked member exports no frontier");
    let unblock = format!(r#"{{"type":"sync_read_unblock","member_id":"{SYNC_MEMBER}"}}"#);
    sync_line(&sync_op(&env, "unblock-read-state", &[], &unblock), "sync_read_unblocked");
    assert_eq!(frontier(&env).as_deref(), Some("5"));
    // A remote name that is not local is blocked as a mismatch.
    let run = sync_op(&env, "prepare-read-state", &[], &context("mallory"));
    let blocked = sync_line(&run, "sync_read_blocked");
    assert_eq!(blocked["reason"], "member-name-mismatch", "{run:?}");
    // A page naming a member the driver does not know is refused.
    let stranger = page("1").replace(SYNC_MEMBER, "018f3f7e-0000-7000-8000-0000000000ff");
    assert_ne!(sync_op(&env, "apply-read-state", &[], &stranger).code, 0, "an unknown member's frontier");
}

pub const RULES: &[Rule] = &[
    Rule { name: "round_trip_and_recipient_scope", check: round_trip_and_recipient_scope },
    Rule { name: "covered_prefix_and_hard_gap", check: covered_prefix_and_hard_gap },
    Rule { name: "frontier_is_capped_at_the_tip", check: frontier_is_capped_at_the_tip },
    Rule { name: "consume_advances_across_other_traffic", check: consume_advances_across_other_traffic },
    Rule { name: "watch_after_delivers_and_always_advances", check: watch_after_delivers_and_always_advances },
    Rule { name: "watch_loop_consumes_exactly_what_was_shown", check: watch_loop_consumes_exactly_what_was_shown },
    Rule { name: "cursor_tokens_are_transport_safe", check: cursor_tokens_are_transport_safe },
    Rule { name: "bad_pairs_and_cursors_are_refused", check: bad_pairs_and_cursors_are_refused },
    Rule { name: "history_by_agent_and_team", check: history_by_agent_and_team },
    Rule { name: "export_import_round_trip", check: export_import_round_trip },
    Rule { name: "import_is_all_or_nothing", check: import_is_all_or_nothing },
    Rule { name: "export_is_atomic_and_replaces_symlinks", check: export_is_atomic_and_replaces_symlinks },
    Rule { name: "compaction_properties", check: compaction_properties },
    Rule { name: "live_wait_times_out_and_sees_what_is_there", check: live_wait_times_out_and_sees_what_is_there },
    Rule { name: "live_wait_wakes_on_a_send_from_another_session", check: live_wait_wakes_on_a_send_from_another_session },
    Rule { name: "receipts_record_once_and_report_the_state", check: receipts_record_once_and_report_the_state },
    Rule { name: "rename_agent_keeps_unread_and_frontier", check: rename_agent_keeps_unread_and_frontier },
    Rule { name: "rename_team_keeps_unread", check: rename_team_keeps_unread },
    Rule { name: "sync_prepare_is_stable_until_reconcile", check: sync_prepare_is_stable_until_reconcile },
    Rule { name: "sync_apply_pull_imports_once_and_quarantines", check: sync_apply_pull_imports_once_and_quarantines },
    Rule { name: "resync_status_is_read_only_and_a_gap_is_accepted_once", check: resync_status_is_read_only_and_a_gap_is_accepted_once },
    Rule { name: "read_state_merges_frontiers_and_blocks_members", check: read_state_merges_frontiers_and_blocks_members },
];
