//! Hostile input to the surfaces added with spawn parity, Stage-1 sync and the directory capability:
//! a planted placement record (a FIFO, a link, a huge file, a directory, control characters, a project
//! or type that reads as an option of agmsg's `reset.sh`), a spawn options file that is not a plain
//! file, stdin sync records agmsg's strict framing refuses, and what a driver hands back printed as
//! JSONL for agmsg's engine. Each must end in a clear refusal (or a warning) with the documented exit
//! code, never a hang, a panic, a write through a link, or a line agmsg's engine could misread.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use agmsg_host::storage::sync::{
    self, ApplyResult, Envelope, Evaluated, Outcome, OutcomeStatus, PushCandidate, ReprocessCandidate, SyncState,
};
use common::Env;
use common::sync::{REMOTE, SERVER, sync_op};

/// Control characters, a forged record on a line of its own, quotes and backslashes, DEL, C1, the JS
/// line separators and a bidi override: what a hostile driver might put in any string it hands back.
const NASTY: &str = "a\n{\"type\":\"sync_state\"}\r\n\x1b]0;pwned\x07\x1b[2J\"\\\u{0}\u{7f}\u{85}\u{2028}\u{2029}\u{202e}z";

/// agmsg-host with agmsg's install at `skill` (`AGMSG_SKILL_DIR`), run with a deadline: a hang is a
/// failure, not a stuck test.
fn run_bounded(env: &Env, skill: &Path, args: &[&str], deadline: Duration) -> agmsg_conformance::Run {
    let mut cmd = env.cmd();
    cmd.args(args).env("AGMSG_SKILL_DIR", skill).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(deadline) {
        Ok(out) => out.unwrap().into(),
        Err(_) => {
            common::kill_tree(pid);
            panic!("agmsg-host {args:?} did not finish within {deadline:?}");
        }
    }
}

/// No control character (newlines and tabs aside) and no bidi override: the text cannot act on a terminal.
#[track_caller]
fn assert_inert(what: &str, text: &str) {
    let bad = text
        .chars()
        .find(|&c| (c.is_control() && c != '\n' && c != '\t') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'));
    assert!(bad.is_none(), "{what} carries {bad:?}: {text:?}");
}

/// A refusal of what a driver handed back: 13, nothing on stdout, an inert stderr that says `why`.
fn assert_refused(what: &str, run: agmsg_conformance::Run, why: &str) {
    assert_eq!((run.code, run.stdout.as_str()), (13, ""), "{what}: {run:?}");
    assert!(run.stderr.contains(why), "{what}: expected {why:?} in {}", run.stderr);
    assert_inert(what, &run.stderr);
}

/// agmsg's install with a `run/` directory and a fake `scripts/reset.sh` that writes its argv, one
/// word a line, to `<skill>/reset-args`.
fn skill_with_reset(env: &Env) -> PathBuf {
    let skill = env.dir.path().join("agmsg");
    std::fs::create_dir_all(skill.join("run")).unwrap();
    std::fs::create_dir_all(skill.join("scripts")).unwrap();
    let reset = skill.join("scripts/reset.sh");
    std::fs::write(&reset, format!("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > '{}/reset-args'\n", skill.display()))
        .unwrap();
    std::fs::set_permissions(&reset, std::fs::Permissions::from_mode(0o755)).unwrap();
    skill
}

/// A planted record that is not a plain file (a FIFO, a link to a file outside, a directory) or is
/// too large is refused at once with exit 1 and a message naming it; nothing is read or written
/// through the link, and reset.sh is never run for it.
#[test]
fn despawn_refuses_a_planted_record_that_is_not_a_small_plain_file() {
    let env = Env::new();
    let skill = skill_with_reset(&env);
    let record = skill.join("run/spawn.crew__bob");
    let outside = env.dir.path().join("outside");
    std::fs::write(&outside, "tmux:%1\t/p\tcodex\n").unwrap();

    for what in ["a FIFO", "a link", "a directory", "a huge file"] {
        match what {
            "a FIFO" => assert!(std::process::Command::new("mkfifo").arg(&record).status().unwrap().success()),
            "a link" => std::os::unix::fs::symlink(&outside, &record).unwrap(),
            "a directory" => std::fs::create_dir(&record).unwrap(),
            _ => std::fs::write(&record, format!("tmux:%1\t/p\tcodex\n{}", "x".repeat(1 << 20))).unwrap(),
        }
        let started = Instant::now();
        let run = run_bounded(&env, &skill, &["despawn", "crew", "lead", "bob", "--force"], Duration::from_secs(20));
        assert_eq!(run.code, 1, "{what}: {run:?}");
        assert!(started.elapsed() < Duration::from_secs(10), "{what}: took {:?}", started.elapsed());
        assert!(run.stderr.contains("placement record"), "{what}: {}", run.stderr);
        assert!(!run.stderr.contains("panicked"), "{what}: {}", run.stderr);
        assert!(!skill.join("reset-args").exists(), "{what}: reset.sh ran");
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "tmux:%1\t/p\tcodex\n", "{what}: the link's target changed");
        // Take the planted thing away (a directory is not a file).
        if record.is_dir() && !record.is_symlink() {
            std::fs::remove_dir(&record).unwrap();
        } else {
            std::fs::remove_file(&record).unwrap();
        }
    }
}

/// agmsg's `reset.sh` reads any word starting with `--` as its option, wherever it stands, until a
/// `--`. A record whose project (or type) is `--no-resolve` must still reach reset.sh as that
/// positional argument, not as an option that shifts the others (which drops the registration of the
/// wrong project/type pair). The record's control characters reach the terminal only as shown text.
#[test]
fn despawn_hands_a_records_fields_to_reset_sh_as_arguments_never_as_options() {
    let env = Env::new();
    let skill = skill_with_reset(&env);
    std::fs::write(skill.join("run/spawn.crew__bob"), "nosuch\x1b[2J:1\t--no-resolve\t--force\n").unwrap();
    let run = run_bounded(&env, &skill, &["despawn", "crew", "lead", "bob", "--force"], Duration::from_secs(20));
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "status=forced name=bob team=crew\n");
    assert_inert("despawn's stderr", &run.stderr);
    assert!(run.stderr.contains("could not close"), "the unknown terminal is a warning: {}", run.stderr);
    let argv = std::fs::read_to_string(skill.join("reset-args")).expect("reset.sh ran");
    // agmsg's option parsing (scripts/lib/cli-options.sh): `--` ends options, any other `--*` is one.
    let (mut options, mut positional, mut ended) = (Vec::new(), Vec::new(), false);
    for word in argv.lines() {
        match word {
            "--" if !ended => ended = true,
            w if !ended && w.starts_with("--") => options.push(w),
            w => positional.push(w),
        }
    }
    assert!(options.is_empty(), "reset.sh would read {options:?} as its options (argv {argv:?})");
    assert_eq!(positional, ["--no-resolve", "--force", "bob"], "argv {argv:?}");
    assert!(!skill.join("run/spawn.crew__bob").exists(), "the record is removed");
}

/// A team or agent that could name a file outside `run/` (`..`, `/`), or carries a control
/// character, is refused before any lookup; `%` is a name character, encoded so it cannot alias
/// another name's file.
#[test]
fn despawn_refuses_names_that_could_leave_the_run_directory() {
    let env = Env::new();
    let skill = skill_with_reset(&env);
    // A record another (encoded) name would alias if `%` were left as it is.
    std::fs::write(skill.join("run/spawn.crew__a%2Fb"), "nosuch:1\t/p\tcodex\n").unwrap();
    for (team, agent) in [("..", "bob"), ("crew", "../../x"), ("crew", "a/b"), ("c\x1b[2J", "bob"), ("crew", "")] {
        let run = run_bounded(&env, &skill, &["despawn", team, "lead", agent, "--force"], Duration::from_secs(20));
        assert_eq!(run.code, 1, "{team:?}/{agent:?}: {run:?}");
        assert_inert("despawn's stderr", &run.stderr);
    }
    let run = run_bounded(&env, &skill, &["despawn", "crew", "lead", "a%2Fb", "--force"], Duration::from_secs(20));
    assert_eq!(run.code, 1, "a%2Fb is encoded as a%252Fb, which has no record: {run:?}");
    assert!(skill.join("run/spawn.crew__a%2Fb").exists(), "another name's record is left alone");
    assert!(!skill.join("reset-args").exists());
}

/// The spawn options file (the user's, named by `AGMSG_SPAWN_OPTIONS_FILE` or under `$HOME`) is read
/// only if it is a regular file of sane size: a FIFO must not hang spawn, and a device or a link to one
/// (`/dev/zero`) must not be read without end.
#[test]
fn the_spawn_options_file_must_be_a_small_regular_file() {
    use agmsg_host::spawn::options;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.yaml");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let zero_link = dir.path().join("zero.yaml");
    std::os::unix::fs::symlink("/dev/zero", &zero_link).unwrap();
    let huge = dir.path().join("huge.yaml");
    std::fs::write(&huge, format!("codex:\n  --x: {}\n", "y".repeat(2 << 20))).unwrap();
    for path in [fifo, PathBuf::from("/dev/zero"), zero_link, huge] {
        let (tx, rx) = mpsc::channel();
        let p = path.clone();
        std::thread::spawn(move || {
            let _ = tx.send(options::load(&p).map(|o| o.is_some()));
        });
        let answer = rx.recv_timeout(Duration::from_secs(10)).unwrap_or_else(|_| panic!("loading {} did not return", path.display()));
        let e = answer.expect_err(&format!("{} is refused", path.display())).message;
        assert!(e.contains("spawn options file"), "{e}");
    }
    // A link to a regular file (a dotfile manager's) is the user's and is read.
    let real = dir.path().join("real.yaml");
    std::fs::write(&real, "codex:\n  --search:\n").unwrap();
    let link = dir.path().join("link.yaml");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    assert_eq!(options::load(&link).unwrap().unwrap().tokens("codex", None), ["--search"]);
    assert!(options::load(&dir.path().join("missing.yaml")).unwrap().is_none());

    // A required role's profile file is checked on what is opened, without blocking: a FIFO there
    // is no readable profile (and cannot hang the check).
    let profiles = tempfile::tempdir().unwrap();
    let fifo = profiles.path().join("architect.config.toml");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let file = options::SpawnOptions::parse("agmsg.require-role-overlay:\n  codex: true\ncodex@architect:\n  -p: architect\n").unwrap();
    let contract = options::ProfileContract {
        args: vec!["-p", "--profile"],
        home_env: "AGMSG_HOSTILE_NEW_NO_SUCH_VARIABLE",
        default_dir: "",
        suffix: ".config.toml",
    };
    let (tx, rx) = mpsc::channel();
    let profile_dir: &'static str = String::leak(profiles.path().to_str().unwrap().to_owned());
    std::thread::spawn(move || {
        let contract = options::ProfileContract { default_dir: profile_dir, ..contract };
        let _ = tx.send(options::resolve(Some(&file), "codex", "bob", Some("architect"), &["codex"], Some(&contract)));
    });
    let e = rx.recv_timeout(Duration::from_secs(10)).expect("the profile check returns").expect_err("a FIFO is no profile").message;
    assert!(e.contains("architect.config.toml"), "{e}");
}

/// Every record the host prints for agmsg's engine is one line (agmsg splits on `\r?\n`) that
/// `JSON.parse` reads back as exactly the strings the driver handed over: no raw control character,
/// no second record smuggled in a string.
#[test]
fn driver_strings_are_printed_as_one_json_line_each_that_reads_back_exactly() {
    let s = NASTY.to_owned();
    let envelope = Envelope { v: 1, cipher: s.clone(), key_id: Some(s.clone()), blob: s.clone() };
    let lines = [
        sync::state_line(&SyncState { driver_generation: s.clone(), transport_cursor: s.clone() }),
        sync::candidate_line(&PushCandidate {
            local_position: i64::MIN,
            local_id: s.clone(),
            wire_id: s.clone(),
            envelope: envelope.clone(),
        }),
        sync::apply_result_line(&ApplyResult { transport_cursor: s.clone(), corrupt_count: u64::MAX, outcomes: Vec::new() }),
        sync::outcome_line(&Outcome { wire_id: s.clone(), server_seq: s.clone(), status: OutcomeStatus::Evaluated(Evaluated::Malformed) }),
        sync::reprocess_candidate_line(&ReprocessCandidate {
            server_seq: s.clone(),
            wire_id: s.clone(),
            server_received_at: s.clone(),
            envelope,
            prior_status: Evaluated::PendingKey,
        }),
    ];
    for line in lines {
        assert!(!line.bytes().any(|b| b < 0x20), "a raw control byte: {line:?}");
        assert_eq!(line.split(['\r', '\n']).count(), 1);
        let value: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        let object = value.as_object().unwrap();
        for (key, v) in object {
            match v {
                serde_json::Value::String(text) if key != "type" && key != "status" && key != "prior_status" && key != "local_position" => {
                    assert_eq!(text, NASTY, "{key} in {line}")
                }
                serde_json::Value::Object(inner) => {
                    for k in ["cipher", "key_id", "blob"] {
                        assert_eq!(inner[k], NASTY, "envelope.{k}");
                    }
                }
                _ => {}
            }
        }
    }
}

const WIRE: &str = "0b9a7c1e-2f3d-4a5b-8c6d-7e8f9a0b1c2d";

/// agmsg's `sync_prepare` record for plaintext (`none`) envelopes of at most `max_blob_bytes`.
fn prepare_none(max_blob_bytes: u32) -> String {
    format!(r#"{{"type":"sync_prepare","envelope_v":1,"cipher":"none","key_id":null,"max_blob_bytes":{max_blob_bytes},"allow_new":true}}"#)
}

/// A stdin record agmsg's strict framing refuses (a repeated key, at the top or nested; an unknown key;
/// two records on a line; a string with an escape sequence where a canonical decimal belongs; a line
/// that is not UTF-8) is refused with 13 before the driver sees it: nothing on stdout, one shown line on
/// stderr.
#[test]
fn sync_stdin_records_with_repeated_or_unknown_keys_are_refused_with_13() {
    let env = Env::new();
    let ack = format!(r#"{{"type":"sync_push_ack","local_position":"3","id":"{WIRE}","server_seq":"7","disposition":"stored"}}"#);
    let prepare = prepare_none(1048576);
    let message = format!(
        r#"{{"type":"sync_pull_message","server_seq":"1","id":"{WIRE}","server_received_at":"t","envelope":{{"v":1,"cipher":"none","key_id":null,"blob":"eA=="}},"status":"importable","projection":{{"body":"hi","created_at":"t","from_agent":"a","to_agent":"b"}}}}"#
    );
    let cases: Vec<(&str, Vec<&str>, Vec<u8>)> = vec![
        ("reconcile-push", vec![], ack.replacen(r#""server_seq":"7""#, r#""server_seq":"7","server_seq":"8""#, 1).into_bytes()),
        ("reconcile-push", vec![], ack.replacen(r#""disposition""#, r#""extra":1,"disposition""#, 1).into_bytes()),
        ("reconcile-push", vec![], format!("{ack}{ack}").into_bytes()),
        ("reconcile-push", vec![], ack.replacen(r#""server_seq":"7""#, "\"server_seq\":\"7\\u001b[2J\"", 1).into_bytes()),
        ("prepare-push", vec!["5"], prepare.replacen(r#""allow_new":true"#, r#""allow_new":true,"allow_new":false"#, 1).into_bytes()),
        ("prepare-push", vec!["5"], format!("{prepare}\n{prepare}\n").into_bytes()),
        (
            "apply-pull",
            vec![],
            format!(
                "{}\n{{\"type\":\"sync_pull_cursor\",\"next_after\":\"1\"}}\n",
                message.replacen(r#""blob":"eA==""#, r#""blob":"eA==","blob":"eQ==""#, 1)
            )
            .into_bytes(),
        ),
        (
            "apply-pull",
            vec![],
            format!(
                "{}\n{{\"type\":\"sync_pull_cursor\",\"next_after\":\"1\"}}\n",
                message.replacen(r#""hi""#, r#""hi","to_agent":"c""#, 1)
            )
            .into_bytes(),
        ),
        ("apply-pull", vec![], b"{\"type\":\"sync_pull_cursor\",\"next_after\":\"\xff\"}\n".to_vec()),
    ];
    for (op, extra, stdin) in cases {
        let op_word = format!("sync-{op}");
        let mut args = vec!["--driver", "sqlite", "storage", op_word.as_str(), "t", SERVER, REMOTE, "1"];
        args.extend(extra);
        let run = env.run_stdin(&args, &stdin);
        let shown = String::from_utf8_lossy(&stdin);
        assert_eq!(run.code, 13, "{op} {shown}: {run:?}");
        assert_eq!(run.stdout, "", "{op} {shown}");
        assert_eq!(run.stderr.lines().count(), 1, "{op}: {}", run.stderr);
        assert!(run.stderr.starts_with("agmsg-host: ") && run.stderr.contains("stdin"), "{op}: {}", run.stderr);
        assert_inert("sync's stderr", &run.stderr);
    }
}

/// A driver's value the spec refuses (a wire id that is no UUIDv4; a reprocess page position whose
/// sequence holds a `:`, so `<seq>:<wire>` would split another way) is not handed to agmsg's engine:
/// the op fails with 13 naming the driver, and the record holding it is not printed. The same ops
/// with the fixture's ordinary answers succeed.
#[test]
fn sync_values_a_driver_hands_back_are_checked_before_they_are_printed() {
    let env = Env::new();
    let driver = common::fixture("sync-fixture");
    let driver = driver.to_str().unwrap();
    let sync = sync_op(&env, driver);
    let run = sync("prepare-push", &["2"], &prepare_none(8));
    assert_eq!((run.code, run.stdout.lines().count()), (0, 3), "{run:?}");
    let run = sync("prepare-push", &["2"], &prepare_none(7));
    assert_eq!(run.code, 13, "{run:?}");
    assert!(!run.stdout.contains("not-a-uuid"), "{}", run.stdout);
    assert!(run.stderr.contains("sync_push_candidate.id") && run.stderr.contains("not a lowercase UUIDv4"), "{}", run.stderr);

    let run = sync("reprocess", &["3"], "");
    assert_eq!(run.code, 0, "{run:?}");
    let run = sync("reprocess", &["7"], "");
    assert_eq!(run.code, 13, "{run:?}");
    assert!(!run.stdout.contains("sync_reprocess_page"), "{}", run.stdout);
    assert!(run.stderr.contains("next_after"), "{}", run.stderr);
}

/// What a (possibly hostile) sync driver hands back is checked against what it was asked, before
/// anything is printed for agmsg's engine: a refusal exits 13 with stdout empty and a sentence naming
/// the field. Prepare: the generation a UUID, local ids stored message ids, each envelope of the
/// request's version, a canonical base64 blob within max_blob_bytes, no plaintext where age-v1 was
/// asked, and an age-v1 blob an age file. Apply-pull: the transport cursor the page's, every outcome for
/// a message of the page. Reprocess: only malformed rows in the malformed scope. The fixture's ordinary
/// answers to the same requests succeed.
#[test]
fn a_sync_drivers_answers_are_checked_against_the_request_and_nothing_is_printed_on_refusal() {
    let env = Env::new();
    let driver = common::fixture("sync-fixture");
    let driver = driver.to_str().unwrap();
    let run = sync_op(&env, driver);
    let recipient = format!("age1{}", "q".repeat(58));
    let age = |key: &str| {
        format!(
            r#"{{"type":"sync_prepare","envelope_v":1,"cipher":"age-v1","key_id":"{key}","recipients":["{recipient}"],"max_blob_bytes":64,"allow_new":true}}"#
        )
    };
    assert_eq!(run("prepare-push", &["2"], &prepare_none(8)).ok().lines().len(), 3);
    // An age file's start, made by the driver: the host did not seal it (tests/sync_sealing.rs has the rest).
    assert_refused("an age-v1 envelope the driver made", run("prepare-push", &["2"], &age("k1")), "that the host did not seal");
    for (max, why) in [
        (5, "sync_state.driver_generation \"fixture-generation\" is not a lowercase UUID"),
        (6, "sync_push_candidate.local_id \"local 1\""),
        (9, "sync_push_candidate.envelope.v 2 where the engine asked for 1"),
        (10, "sync_push_candidate.envelope.blob is not canonical base64"),
        (12, "sync_push_candidate.envelope.blob holds 18 bytes, not 1 to max_blob_bytes (12)"),
    ] {
        assert_refused(&format!("prepare, max_blob_bytes {max}"), run("prepare-push", &["2"], &prepare_none(max)), why);
    }
    assert_refused(
        "a plaintext envelope for age-v1",
        run("prepare-push", &["2"], &age("downgrade")),
        r#"cipher "none" where the engine asked for "age-v1""#,
    );
    assert_refused("an age-v1 blob that is no age file", run("prepare-push", &["2"], &age("plain")), "not an age v1 file");

    let message = |n: u64| {
        format!(
            r#"{{"type":"sync_pull_message","server_seq":"{n}","id":"00000000-0000-4000-8000-{n:012x}","server_received_at":"t","envelope":{{"v":1,"cipher":"none","key_id":null,"blob":"eA=="}},"status":"malformed"}}"#
        )
    };
    let page = |cursor: u64| format!("{}\n{}\n{{\"type\":\"sync_pull_cursor\",\"next_after\":\"{cursor}\"}}\n", message(1), message(2));
    assert_eq!(run("apply-pull", &[], &page(2)).ok().lines().len(), 3);
    // A conflict the driver reports carries the other sequence of a wire id of the page: taken.
    let conflict = run("apply-pull", &[], &page(95));
    assert!(conflict.ok().stdout.contains(r#""server_seq":"1001","status":"corrupt_state""#), "{conflict:?}");
    assert_refused("an outcome for a wire id not sent", run("apply-pull", &[], &page(97)), "which the page did not hold");
    assert_refused(
        "another transport cursor",
        run("apply-pull", &[], &page(98)),
        r#"transport_cursor "99", not the page's next_after "98""#,
    );
    assert_refused(
        "an outcome moved to another sequence",
        run("apply-pull", &[], &page(96)),
        "server_seq 1001, which the page did not hold",
    );

    assert_eq!(run("reprocess", &["2", "", "malformed"], "").ok().lines().len(), 4);
    assert_refused(
        "reprocess out of scope",
        run("reprocess", &["6", "", "malformed"], ""),
        r#"prior_status "pending_key" in the malformed scope"#,
    );
}

/// Every entry under `dir`, a file with its bytes: what "the store is unchanged" compares.
fn entries(dir: &Path) -> std::collections::BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut all = std::collections::BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path.clone());
                all.insert(path, None);
            } else {
                all.insert(path.clone(), Some(std::fs::read(&path).unwrap()));
            }
        }
    }
    all
}

/// The resync and read-state answers a driver hands back (tests/fixtures/stage2-fixture, hostile by
/// request) are printed for agmsg's engine only if they are what the spec and the engine allow: a
/// member id that is no lowercase UUIDv7 of the context, a non-canonical or huge sequence, a string
/// with a line break or escape sequences, a record for a member not asked about, a 1 MiB value, an
/// audit or result that does not match the gap asked about. Each refusal: 13, nothing on stdout, a
/// short inert message, and the store as it was.
#[test]
fn resync_and_read_state_answers_are_checked_and_nothing_is_printed_on_refusal() {
    const GENERATION: &str = "0c3e1f5a-8d2b-4e6f-9a1c-2b3d4e5f6a7b";
    const M1: &str = "0196f3a2-7c1e-7000-8000-000000000010";
    const M2: &str = "0196f3a2-7c1e-7000-8000-000000000011";
    const STRANGER: &str = "0196f3a2-7c1e-7000-8000-0000000000ff";
    let env = Env::new();
    let driver = common::fixture("stage2-fixture");
    let driver = driver.to_str().unwrap();
    let run = sync_op(&env, driver);
    let request = |current: &str| {
        format!(
            r#"{{"type":"sync_resync","expected_transport_cursor":"0","min_available_seq":"5","current_seq":"{current}","reason":"retention-gap-accepted"}}"#
        )
    };
    let context = |selector: &str| {
        format!(
            r#"{{"type":"sync_read_context","min_available_seq":"0","current_seq":"9","members":[{{"member_id":"{M1}","name":"alice"}},{{"member_id":"{M2}","name":"bob"}}],"local_agents":["{selector}"]}}"#
        )
    };
    let page = |current: &str| {
        format!(
            "{{\"type\":\"sync_read_snapshot\",\"min_available_seq\":\"50\",\"current_seq\":\"{current}\"}}\n\
             {{\"type\":\"sync_read_frontier\",\"member_id\":\"{M1}\",\"server_seq\":\"60\"}}\n\
             {{\"type\":\"sync_read_frontier\",\"member_id\":\"{M2}\",\"server_seq\":\"60\"}}\n"
        )
    };

    // Good answers print as agmsg's records.
    assert_eq!(
        run("resync-status", &["5"], "").ok().lines(),
        [format!(
            r#"{{"type":"sync_resync_status","driver_generation":"{GENERATION}","transport_cursor":"20","audit":{{"expected_transport_cursor":"0","accepted_floor":"5","gap_start":"1","gap_end":"5","reason":"retention-gap-accepted"}}}}"#
        )]
    );
    assert_eq!(
        run("resync-status", &["6"], "").ok().lines(),
        [format!(r#"{{"type":"sync_resync_status","driver_generation":"{GENERATION}","transport_cursor":"20","audit":null}}"#)]
    );
    assert_eq!(
        run("resync", &[], &request("7")).ok().lines(),
        [format!(
            r#"{{"type":"sync_resync_result","driver_generation":"{GENERATION}","expected_transport_cursor":"0","transport_cursor":"5","accepted_floor":"5","gap_start":"1","gap_end":"5","reason":"retention-gap-accepted"}}"#
        )]
    );
    assert_eq!(
        run("prepare-read-state", &[], &context("ok")).ok().lines(),
        [
            format!(r#"{{"type":"sync_read_frontier","member_id":"{M1}","server_seq":"9"}}"#),
            format!(r#"{{"type":"sync_read_frontier","member_id":"{M2}","server_seq":"9"}}"#),
            format!(r#"{{"type":"sync_read_exact","member_id":"{M1}","wire_id":"00000000-0000-4000-8000-000000000001"}}"#),
        ]
    );
    // No bound on the count of exact reads (the relay's limit is per member and the engine's to handle).
    assert_eq!(run("prepare-read-state", &[], &context("many")).ok().lines().len(), 5002);
    assert_eq!(
        run("apply-read-state", &[], &page("100")).ok().lines(),
        [r#"{"type":"sync_read_apply_result","min_available_seq":"50","member_count":2}"#]
    );

    let before = entries(env.dir.path());
    let refused = |what: &str, run: agmsg_conformance::Run, why: &str| {
        assert!(run.stderr.len() < 1024, "{what}: a refusal of {} bytes", run.stderr.len());
        assert_refused(what, run, why);
    };
    for (floor, why) in [
        ("11", "sync_resync_status.driver_generation \"0c3e1f5a-8d2b-4e6f-9a1c-2b3d4e5f6a7b1\\n{"),
        ("12", r#"sync_resync_status.transport_cursor "07" is not a canonical decimal"#),
        ("13", r#"sync_resync_status.transport_cursor "-1" is not a canonical decimal"#),
        ("14", r#"sync_resync_status.transport_cursor "9223372036854775808" is not a canonical decimal"#),
        ("15", "a gap 2..15 that is not the expected cursor + 1 to the accepted floor"),
        ("16", "accepted floor 16 not above the expected cursor 0 or above the transport cursor 3"),
        ("17", "(1048576 bytes) is not a lowercase UUID"),
        ("18", "sync_resync_status.audit.reason \"retention-gap-accepted1\\n{"),
        ("19", r#"an audit of floor "4" for floor 19"#),
    ] {
        refused(&format!("resync-status {floor}"), run("resync-status", &[floor], ""), why);
    }
    for (current, why) in [
        ("8", "a resync result for another gap than the one asked"),
        ("9", "a gap 1..6 that is not the expected cursor + 1 to the accepted floor"),
        ("10", r#"sync_resync_result.driver_generation "generation" is not a lowercase UUID"#),
        ("11", r#"sync_resync_result.expected_transport_cursor "00" is not a canonical decimal"#),
    ] {
        refused(&format!("resync, current_seq {current}"), run("resync", &[], &request(current)), why);
    }
    let upper = format!("{:?} is not a lowercase UUIDv7", M1.to_uppercase());
    let stranger_frontier = format!("a frontier for {STRANGER} (unknown or repeated)");
    let stranger_exact = format!("an exact read for unknown member {STRANGER}");
    let stranger_block = format!("a block for {STRANGER} (unknown or repeated)");
    let missing = format!("no frontier for member {M2}, which it did not block");
    let twice_frontier = format!("a frontier for {M1} (unknown or repeated)");
    let twice_exact = format!("the exact read 00000000-0000-4000-8000-000000000001 of {M1} twice");
    let blocked = format!("a frontier for {M2}, which it blocked");
    for (selector, why) in [
        ("v4-member", r#"sync_read_frontier.member_id "00000000-0000-4000-8000-000000000007" is not a lowercase UUIDv7"#),
        ("upper-member", upper.as_str()),
        ("nasty-member", "sync_read_frontier.member_id \"0196f3a2-7c1e-7000-8000-0000000000101\\n{"),
        ("stranger", stranger_frontier.as_str()),
        ("stranger-exact", stranger_exact.as_str()),
        ("stranger-block", stranger_block.as_str()),
        ("seq-01", r#"sync_read_frontier.server_seq "01" is not a canonical decimal"#),
        ("seq-minus", r#"sync_read_frontier.server_seq "-1" is not a canonical decimal"#),
        ("seq-huge", r#"sync_read_frontier.server_seq "9223372036854775808" is not a canonical decimal"#),
        ("seq-nasty", "sync_read_frontier.server_seq \"1\\n{"),
        ("nasty-wire", "sync_read_exact.wire_id \"00000000-0000-4000-8000-0000000000011\\n{"),
        ("oversized", "(1048576 bytes) is not a lowercase UUIDv4"),
        ("missing", missing.as_str()),
        ("twice-frontier", twice_frontier.as_str()),
        ("twice-exact", twice_exact.as_str()),
        ("blocked-updates", blocked.as_str()),
    ] {
        refused(&format!("prepare {selector}"), run("prepare-read-state", &[], &context(selector)), why);
    }
    for (current, why) in [
        ("101", r#"sync_read_apply_result.min_available_seq "01" is not a canonical decimal"#),
        ("102", r#"sync_read_apply_result.min_available_seq "-1" is not a canonical decimal"#),
        ("103", r#"sync_read_apply_result.min_available_seq "9223372036854775808" is not a canonical decimal"#),
        ("104", "sync_read_apply_result.member_count 4000000000, more than a context's 1000 members"),
        ("105", "sync_read_apply_result.min_available_seq 7, below the page's 50"),
        ("106", "sync_read_apply_result.min_available_seq null with 2 active members"),
        ("107", "sync_read_apply_result.min_available_seq \"1\\n{"),
        ("108", "sync_read_apply_result.min_available_seq 50 with no active member"),
    ] {
        refused(&format!("apply, current_seq {current}"), run("apply-read-state", &[], &page(current)), why);
    }
    assert_eq!(entries(env.dir.path()), before, "a refused answer changed the store or the home");
}
