//! What only the jsonl driver has: agmsg's file layout, a corrupt line, the tuple compaction key, and
//! waiting for a lock held by another process.

mod common;

use std::time::Duration;

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
    assert!(
        lines[4].starts_with(&format!(r#"{{"type":"message_sent","id":"{id}","team":"t","from":"bob","to":"alice","body":"reply","at":""#)),
        "{}",
        lines[4]
    );
    assert!(
        lines[5].starts_with(r#"{"type":"message_read","id":""#)
            && lines[5].contains(r#""msg_id":"0192aaaa-0000-7000-8000-000000000002","team":"t","agent":"bob","at":""#),
        "{}",
        lines[5]
    );
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
    use std::io::BufRead;
    use std::process::Stdio;
    let env = jsonl();
    env.send("t", "a", "bob", "first");
    // Another process holds the store lock (a flock on the store directory) until its stdin closes. It
    // says when it holds it: a fixed head start raced a slow `flock` start on a loaded machine.
    let mut holder = std::process::Command::new("flock")
        .arg(&env.store)
        .args(["sh", "-c", "echo held; exec cat >/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("flock(1) from util-linux");
    let mut said = String::new();
    std::io::BufReader::new(holder.stdout.take().unwrap()).read_line(&mut said).unwrap();
    assert_eq!(said, "held\n");
    let mut send =
        env.cmd().args(["storage", "send", "t", "a", "bob", "second"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    // Long enough for a send that did not wait to have finished; the lock is held all the while, so
    // however slow the machine, a send still running now is one that waits.
    std::thread::sleep(Duration::from_millis(1000));
    let early = send.try_wait().unwrap();
    drop(holder.stdin.take()); // cat ends, and flock lets go
    holder.wait().unwrap();
    let sent = common::Run::from(send.wait_with_output().unwrap());
    assert!(early.is_none(), "the send ended while the lock was held: {sent:?}");
    sent.ok();
    assert_eq!(env.storage(&["list-unread", "t", "bob"]).json().len(), 2);
}

/// What the driver logged about its index in one run (`AGMSG_LOG=debug`).
fn index_log(run: &common::Run) -> Vec<&str> {
    run.stderr.lines().filter(|l| l.contains("jsonl index:")).collect()
}

fn sent(id: &str, from: &str, to: &str, body: &str) -> String {
    format!(r#"{{"type":"message_sent","id":"{id}","team":"t","from":"{from}","to":"{to}","body":"{body}","at":"2026-01-01T00:00:00Z"}}"#)
}

/// A new process does not re-parse the log: the sidecar index covers it, and only lines appended since
/// (here by hand, as agmsg's own driver would) are parsed. In-process: through the resident server, the
/// spare's warm-up reads ahead of the op, so the op's own log shows less parsing than a new process's.
#[test]
fn a_new_process_parses_only_what_was_appended() {
    let env = jsonl().env("AGMSG_LOG", "debug").env("AGMSG_HOST_SERVER", "off");
    for i in 0..50 {
        env.send("t", "a", "bob", &format!("m{i}"));
    }
    let first = env.storage(&["list-unread", "t", "bob"]);
    assert_eq!(first.ok().json().len(), 50);
    // The first send created the store and its (empty) index; this read parses the 50 sends.
    assert!(index_log(&first).iter().any(|l| l.contains("parsed bytes 0..")), "{:?}", first.stderr);

    let again = env.storage(&["list-unread", "t", "bob"]);
    assert_eq!(again.ok().json().len(), 50);
    assert!(index_log(&again).is_empty(), "nothing new to parse: {:?}", again.stderr);

    let log = env.store.join("events.jsonl");
    let before = std::fs::metadata(&log).unwrap().len();
    let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    std::io::Write::write_all(&mut file, (sent("by-hand", "carol", "bob", "appended") + "\n").as_bytes()).unwrap();
    let after = env.storage(&["history", "t", "--limit", "2"]);
    let history = after.ok().json();
    assert_eq!((history[0]["body"].as_str(), history[1]["body"].as_str()), (Some("m49"), Some("appended")));
    let parsed = index_log(&after);
    assert_eq!(parsed.len(), 1, "{:?}", after.stderr);
    assert!(parsed[0].contains(&format!("parsed bytes {before}..")), "{parsed:?}");
}

/// The log is the truth: a log rewritten by someone else (agmsg renaming an agent), or an index that is
/// deleted or damaged, gives a rebuilt index and correct answers.
#[test]
fn index_is_rebuilt_when_the_log_is_rewritten_or_the_index_damaged() {
    // In-process: the index is deleted between ops without the store's lock, which through the resident
    // server races the spare's warm-up rebuilding it.
    let env = jsonl().env("AGMSG_HOST_SERVER", "off");
    env.send("t", "a", "bob", "one");
    env.send("t", "a", "bob", "two");
    assert_eq!(env.storage(&["list-unread", "t", "bob"]).json().len(), 2);

    // agmsg's rename_agent rewrites the log (temp + mv): bob becomes rob.
    let log = env.store.join("events.jsonl");
    let renamed = std::fs::read_to_string(&log).unwrap().replace(r#""to":"bob""#, r#""to":"rob""#);
    std::fs::write(env.store.join("events.jsonl.rename.tmp"), renamed).unwrap();
    std::fs::rename(env.store.join("events.jsonl.rename.tmp"), &log).unwrap();
    assert_eq!(env.storage(&["list-unread", "t", "bob"]).stdout, "");
    assert_eq!(env.storage(&["list-unread", "t", "rob"]).json().len(), 2);

    let index = env.store.join(".events-index");
    std::fs::write(index.join("meta.json"), "{not json").unwrap();
    assert_eq!(env.storage(&["list-unread", "t", "rob"]).json().len(), 2);
    std::fs::remove_dir_all(&index).unwrap();
    assert_eq!(env.storage(&["history", "t"]).json().len(), 2);
    // Records overwritten with garbage: the op fails closed, and the next one rebuilds.
    std::fs::write(index.join("messages.bin"), vec![0xffu8; 64]).unwrap();
    let damaged = env.storage(&["list-unread", "t", "rob"]);
    assert_eq!(damaged.code, 12, "{damaged:?}");
    assert!(damaged.stderr.contains("rebuilt from the log on the next op"), "{damaged:?}");
    assert_eq!(env.storage(&["list-unread", "t", "rob"]).json().len(), 2);
}

/// Read marks apply through the index whatever their order: before their message (an import from a
/// store that logged them so) and from a new process.
#[test]
fn read_marks_before_their_message_and_across_processes() {
    let env = jsonl();
    std::fs::create_dir_all(&env.store).unwrap();
    std::fs::write(env.store.join(".read-cursor-v1"), "").unwrap();
    let read = r#"{"type":"message_read","id":"r1","msg_id":"m2","team":"t","agent":"bob","at":"2026-01-01T00:00:00Z"}"#;
    let lines = [sent("m1", "a", "bob", "first"), read.to_owned(), sent("m2", "a", "bob", "second"), sent("m3", "a", "bob", "third")];
    std::fs::write(env.store.join("events.jsonl"), lines.join("\n") + "\n").unwrap();
    let unread: Vec<_> = env.storage(&["list-unread", "t", "bob"]).json().iter().map(|m| m["id"].as_str().unwrap().to_owned()).collect();
    assert_eq!(unread, ["m1", "m3"]);
    env.storage(&["mark-read-batch", "t", "bob", "m1"]).ok();
    // m1 and m2 are read: the frontier moves over both and stops at m3.
    assert_eq!(env.storage(&["read-cursor-get", "t", "bob"]).stdout, "2\n");
    let batch = env.storage(&["watch-after", "0", "t:bob"]).json();
    assert_eq!(batch.iter().filter_map(|m| m["id"].as_str()).collect::<Vec<_>>(), ["m3"]);
    // Marking m1 again writes no second read line.
    env.storage(&["mark-read-batch", "t", "bob", "m1"]).ok();
    let log = std::fs::read_to_string(env.store.join("events.jsonl")).unwrap();
    assert_eq!(log.matches(r#""msg_id":"m1""#).count(), 1, "{log}");
}

/// agmsg's sync records imported messages as nested `local_event`s of a `sync_pull_commit` line; they
/// are messages like any other, with their own delivery positions. As in agmsg's projection, only an
/// `imported` outcome's non-null `local_event` counts: a quarantined or reconciled one carries
/// `"local_event":null`.
#[test]
fn sync_pull_commit_events_are_messages() {
    let env = jsonl();
    std::fs::create_dir_all(&env.store).unwrap();
    std::fs::write(env.store.join(".read-cursor-v1"), "").unwrap();
    let commit = format!(
        r#"{{"type":"sync_pull_commit","generation":2,"messages":[{{"id":"x","status":"imported","local_event":{}}},{{"id":"q","status":"pending_key","local_event":null}},{{"id":"r","status":"malformed","local_event":{}}},{{"id":"y","status":"imported","local_event":{}}}]}}"#,
        sent("s1", "remote", "bob", "synced one"),
        sent("s9", "remote", "bob", "not imported"),
        sent("s2", "remote", "carol", "synced two"),
    );
    let lines = [sent("m1", "a", "bob", "local"), commit, sent("m3", "a", "bob", "after")];
    std::fs::write(env.store.join("events.jsonl"), lines.join("\n") + "\n").unwrap();
    let bodies = |run: common::Run| run.json().iter().map(|m| m["body"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
    assert_eq!(bodies(env.storage(&["list-unread", "t", "bob"])), ["local", "synced one", "after"]);
    assert_eq!(env.storage(&["watch-tip", "t:bob"]).stdout, "4\n");
    assert_eq!(bodies(env.storage(&["history", "t", "carol"])), ["synced two"]);
    env.storage(&["mark-read-batch", "t", "bob", "m1", "s1"]).ok();
    assert_eq!(env.storage(&["read-cursor-get", "t", "bob"]).stdout, "3\n");
}

/// A log in agmsg's format with `messages` messages in team `t` among 50 agents (message `i` goes
/// from agent `i+1` to agent `i`, 50 being the count), and a read by the recipient after every tenth
/// (`i % 10 == 0`). Written the way agmsg writes it: one compact line per event.
fn write_big_log(path: &std::path::Path, messages: usize) {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let agent = |i: usize| format!("agent{:02}", i % 50);
    for i in 0..messages {
        let id = format!("0192{i:08x}-0000-7000-8000-{i:012x}");
        let body = format!("message {i}: a body of ordinary length, about one sentence of text for a peer agent");
        let at = format!("2026-01-01T{:02}:{:02}:{:02}Z", i / 3600 % 24, i / 60 % 60, i % 60);
        writeln!(out, "{}", agmsg_contract::records::message_sent(&id, "t", &agent(i + 1), &agent(i), &body, &at)).unwrap();
        if i % 10 == 0 {
            let read = format!("0193{i:08x}-0000-7000-8000-{i:012x}");
            writeln!(out, "{}", agmsg_contract::records::message_read(&read, &id, "t", &agent(i), &at)).unwrap();
        }
    }
    out.flush().unwrap();
}

/// The first op on a log far bigger than the driver's memory builds its index in bounded memory
/// (issue 28: a 1M-event log failed every op with "exceeded its memory limit"), and the next op parses
/// nothing. 32 MiB with ~200k events (44 MB of log) failed before.
#[test]
fn first_op_on_a_big_log_indexes_it_in_bounded_memory() {
    const MESSAGES: usize = 180_000;
    let env = jsonl().env("AGMSG_DRIVER_MEMORY_MB", "32").env("AGMSG_LOG", "debug");
    std::fs::create_dir_all(&env.store).unwrap();
    write_big_log(&env.store.join("events.jsonl"), MESSAGES);
    // The migration ran long ago; agent07 has consumed all but the last 500 positions.
    std::fs::write(env.store.join(".read-cursor-v1"), "").unwrap();
    std::fs::write(env.store.join("read-cursors.tsv"), format!("t\tagent07\t{}\n", MESSAGES - 500)).unwrap();

    let first = env.storage(&["history", "t", "--limit", "20"]);
    let history = first.ok().json();
    assert_eq!(history.len(), 20, "{first:?}");
    assert_eq!(history[19]["body"].as_str().unwrap().split(':').next(), Some(format!("message {}", MESSAGES - 1).as_str()));
    assert!(index_log(&first).iter().any(|l| l.contains("parsed bytes 0..")), "{:?}", first.stderr);

    // The first op left an index covering the whole log (what lets the next op parse nothing).
    let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(env.store.join(".events-index/meta.json")).unwrap()).unwrap();
    assert_eq!(meta["covered_len"].as_u64(), Some(std::fs::metadata(env.store.join("events.jsonl")).unwrap().len()), "{meta}");
    let second = env.storage(&["list-unread", "t", "agent07"]);
    // Positions after the cursor (index >= MESSAGES - 500) to agent07, less those read (i % 10 == 0).
    let expected: Vec<String> =
        (MESSAGES - 500..MESSAGES).filter(|i| i % 50 == 7 && i % 10 != 0).map(|i| format!("0192{i:08x}-0000-7000-8000-{i:012x}")).collect();
    let unread: Vec<String> = second.ok().json().iter().map(|m| m["id"].as_str().unwrap().to_owned()).collect();
    assert_eq!(unread, expected);
    // What makes it fast, shown rather than timed: it parses no byte of the log.
    assert!(index_log(&second).is_empty(), "the second op parses nothing: {:?}", second.stderr);

    // A read mark of an old message, through the id table; the frontier stays (agent07's first unread
    // message is still unread).
    env.storage(&["mark-read-batch", "t", "agent07", &expected[1]]).ok();
    let unread = env.storage(&["list-unread", "t", "agent07"]).json();
    assert_eq!(unread.len(), expected.len() - 1);
    assert!(unread.iter().all(|m| m["id"] != expected[1].as_str()));
}

/// Run `agmsg-host <args>` in `env` and return its exit code, its stderr and its peak resident set
/// size in KiB. Through GNU time where there is one: wait4's rusage of a child spawned from this process
/// counts this process's RSS too (Linux carries the peak across the spawn's exec), a floor that could
/// hide growth.
fn run_measured(env: &Env, args: &[&str]) -> (i32, String, u64) {
    let time = std::path::Path::new("/usr/bin/time");
    let mut cmd = env.cmd();
    if time.exists() {
        cmd = env.program(time);
        cmd.args(["-f", "maxrss=%M", common::BIN]);
    }
    let stderr = tempfile::NamedTempFile::new().unwrap();
    // Reaped by wait4 below, which also gives its rusage.
    #[allow(clippy::zombie_processes)]
    let child = cmd.args(args).stdout(std::process::Stdio::null()).stderr(stderr.reopen().unwrap()).spawn().unwrap();
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the pid is our child's, not yet waited for; `status` and `usage` outlive the call.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as libc::pid_t);
    let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { -1 };
    let stderr = std::fs::read_to_string(stderr.path()).unwrap();
    let reported = stderr.lines().rev().find_map(|l| l.strip_prefix("maxrss=")).and_then(|kib| kib.trim().parse().ok());
    (code, stderr, reported.unwrap_or(usage.ru_maxrss as u64))
}

/// `storage import` holds one line at a time, not the file: every line is checked in a first pass
/// (a bad line fails the import, with its number, before the driver sees anything) and the second
/// pass streams pages to the driver, which stages them on disk. The host's peak RSS for a 36 MB file
/// stays within a few MiB of the one for a tiny file (before: the file's text plus every event parsed,
/// over twice the file's size).
#[test]
fn import_streams_in_bounded_host_memory() {
    const MESSAGES: usize = 150_000;
    let files = tempfile::tempdir().unwrap();
    let (small, big) = (files.path().join("small.jsonl"), files.path().join("big.jsonl"));
    write_big_log(&small, 100);
    write_big_log(&big, MESSAGES);
    let big_size = std::fs::metadata(&big).unwrap().len();

    let env = jsonl();
    let (code, stderr, small_rss) = run_measured(&env, &["storage", "import", small.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let env = jsonl();
    let (code, stderr, big_rss) = run_measured(&env, &["storage", "import", big.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(env.storage(&["watch-tip", "t:agent00"]).stdout, format!("{MESSAGES}\n"));
    let grew = big_rss.saturating_sub(small_rss) << 10;
    eprintln!("import peak RSS: {small_rss} KiB for 100 messages, {big_rss} KiB for {MESSAGES} ({big_size} bytes)");
    assert!(grew < big_size / 4, "peak RSS grew by {grew} bytes for a {big_size}-byte file");

    // A bad last line: nothing reaches the driver, and the error names the line.
    let bad = files.path().join("bad.jsonl");
    std::fs::copy(&big, &bad).unwrap();
    std::fs::OpenOptions::new().append(true).open(&bad).and_then(|mut f| std::io::Write::write_all(&mut f, b"{not json\n")).unwrap();
    let lines = MESSAGES + MESSAGES / 10 + 1;
    let env = jsonl();
    env.storage(&["init"]).ok();
    let run = env.storage(&["import", bad.to_str().unwrap()]);
    assert_eq!(run.code, 13, "{run:?}");
    assert!(run.stderr.contains(&format!("line {lines}: invalid JSON")) && run.stderr.contains("nothing was imported"), "{run:?}");
    assert_eq!(std::fs::metadata(env.store.join("events.jsonl")).unwrap().len(), 0);
    assert_eq!(env.storage(&["watch-tip", "t:agent00"]).stdout, "0\n");
}

/// The covered length the index's saved meta records (0 without one).
fn covered_len(env: &Env) -> u64 {
    std::fs::read(env.store.join(".events-index/meta.json"))
        .ok()
        .and_then(|text| serde_json::from_slice::<serde_json::Value>(&text).ok())
        .and_then(|meta| meta["covered_len"].as_u64())
        .unwrap_or(0)
}

/// A first build stopped by the call deadline is not lost: the index is saved as it goes, so each op
/// resumes from where the last one was stopped and one of them finishes. (Before, nothing was saved
/// until the end, so an index that took longer than the deadline never got built.)
///
/// The deadline starts at 50 ms and grows by half after an op that saved nothing (a loaded machine may
/// spend a short deadline before the first checkpoint); a fixed 500 ms failed so under CI's load, and
/// on a quiet machine a first op of 500 ms built the whole index (so nothing was stopped). That
/// the finishing op resumed is read from its own log: it parsed from where the last stopped op left.
#[test]
fn a_stopped_first_build_resumes() {
    const MESSAGES: usize = 200_000;
    let env = jsonl().env("AGMSG_LOG", "debug");
    std::fs::create_dir_all(&env.store).unwrap();
    write_big_log(&env.store.join("events.jsonl"), MESSAGES);
    std::fs::write(env.store.join(".read-cursor-v1"), "").unwrap();
    let size = std::fs::metadata(env.store.join("events.jsonl")).unwrap().len();
    let mut deadline_ms = 50;
    let mut stopped = Vec::new();
    let finished = (0..80).find_map(|_| {
        let before = covered_len(&env);
        let run: common::Run = env
            .cmd()
            .args(["storage", "watch-tip", "t:agent00"])
            .env("AGMSG_DRIVER_TIMEOUT_MS", deadline_ms.to_string())
            .output()
            .unwrap()
            .into();
        if run.code == 0 {
            return Some(run);
        }
        assert!(run.stderr.contains("exceeded its time limit"), "{run:?}");
        let after = covered_len(&env);
        stopped.push((deadline_ms, after));
        if after == before && deadline_ms < 20_000 {
            deadline_ms = deadline_ms * 3 / 2;
        }
        None
    });
    eprintln!("(deadline ms, covered bytes) after each stopped op: {stopped:?} of {size}");
    let finished = finished.unwrap_or_else(|| panic!("no op finished; (deadline, covered) after each: {stopped:?} of {size}"));
    assert_eq!(finished.stdout, format!("{MESSAGES}\n"));
    assert!(!stopped.is_empty(), "the first op was expected to be stopped (the deadline is 50 ms)");
    assert!(stopped.windows(2).all(|w| w[0].1 <= w[1].1), "{stopped:?}");
    let resumed_from = stopped.last().unwrap().1;
    assert!(resumed_from > 0, "a stopped op saved nothing before the last one finished: {stopped:?}");
    if resumed_from < size {
        let parsed = format!("jsonl index: parsed bytes {resumed_from}..{size} ");
        assert!(
            index_log(&finished).iter().any(|l| l.contains(&parsed)),
            "the finishing op resumed at {resumed_from}: {:?}",
            finished.stderr
        );
    } else {
        // The last stopped op saved the whole log before its deadline struck (seen under load): the
        // finishing op has nothing left to parse, and must parse nothing again.
        assert!(!index_log(&finished).iter().any(|l| l.contains("parsed bytes")), "the finishing op parsed again: {:?}", finished.stderr);
    }
    assert_eq!(covered_len(&env), size);
}

/// An import whose append to the log was cut short (a kill, the call deadline) is undone by the next op:
/// the journal the commit wrote first holds the log's length before it.
#[test]
fn an_import_cut_short_is_rolled_back_by_the_next_op() {
    let env = jsonl();
    env.send("t", "a", "bob", "before");
    let log = env.store.join("events.jsonl");
    let length = std::fs::metadata(&log).unwrap().len();
    // What a commit killed midway leaves: its journal, and part of a line appended.
    std::fs::write(env.store.join(".events-index/import-commit"), length.to_string()).unwrap();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .and_then(|mut f| std::io::Write::write_all(&mut f, br#"{"type":"message_sent","id":"half"#))
        .unwrap();
    let run = env.storage(&["history", "t"]);
    assert_eq!(run.json().len(), 1, "{run:?}");
    assert!(run.stderr.contains("an import was interrupted"), "{run:?}");
    assert_eq!(std::fs::metadata(&log).unwrap().len(), length);
    assert!(!env.store.join(".events-index/import-commit").exists());
    // An import that fails midway (a conflict) leaves the log as it was and no staging files.
    let file = env.dir.path().join("conflict.jsonl");
    let message = |body: &str| agmsg_contract::records::message_sent("m1", "t", "a", "bob", body, "2026-01-01T00:00:00Z");
    std::fs::write(&file, format!("{}\n{}\n", message("one"), message("two"))).unwrap();
    let run = env.storage(&["import", file.to_str().unwrap()]);
    assert_eq!(run.code, 13, "{run:?}");
    assert!(run.stderr.contains("import conflict: message m1"), "{run:?}");
    assert_eq!(std::fs::metadata(&log).unwrap().len(), length);
    let staged: Vec<_> = std::fs::read_dir(env.store.join(".events-index"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with("import"))
        .collect();
    assert!(staged.is_empty(), "{staged:?}");
}

/// `storage convert jsonl` of a sqlite store bigger than the jsonl driver's memory: the jsonl importer
/// stages on disk (before: it held every event, then the whole log, and ran out of memory).
#[test]
fn convert_of_a_big_sqlite_store_to_jsonl_in_bounded_memory() {
    const MESSAGES: usize = 60_000;
    let env = Env::new();
    let config = env.dir.path().join("config.json");
    std::fs::write(&config, r#"{"storage": "sqlite"}"#).unwrap();
    let env = env.env("AGMSG_CONFIG", config.to_str().unwrap()).env("AGMSG_DRIVER_MEMORY_MB", "32");
    let file = env.dir.path().join("log.jsonl");
    write_big_log(&file, MESSAGES);
    env.storage(&["init"]).ok();
    let run = env.storage(&["import", file.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    let run = env.storage(&["convert", "jsonl"]);
    assert_eq!(run.stdout, "ok\n", "{run:?}");
    let converted = std::fs::read_to_string(env.store.join("events.jsonl")).unwrap();
    assert_eq!(converted.lines().count(), MESSAGES + MESSAGES / 10);
    let run = env.storage(&["history", "t", "--limit", "1"]);
    assert!(run.ok().stdout.contains(&format!("message {}:", MESSAGES - 1)), "{run:?}");
}

/// A checkpoint's temp file left by an op killed mid-write does not pile up: the next op that catches
/// up removes it (killed first builds left one per kill).
#[test]
fn temp_files_of_a_killed_op_are_removed() {
    let env = jsonl();
    env.send("t", "a", "bob", "one");
    assert_eq!(env.storage(&["list-unread", "t", "bob"]).json().len(), 1);
    let stale = env.store.join(".events-index/meta.json.tmp.01a23fbd-a64d-71bd-9a18-a4768b4062c4");
    std::fs::write(&stale, "{").unwrap();
    env.send("t", "a", "bob", "two");
    assert_eq!(env.storage(&["list-unread", "t", "bob"]).json().len(), 2);
    assert!(!stale.exists());
}
