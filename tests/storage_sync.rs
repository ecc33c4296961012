//! The host's side of Stage-1 remote sync (`agmsg:storage` 1.2.0's optional `sync` interface):
//! `agmsg-host storage sync-<op>` with agmsg's argv and JSONL framing, records parsed strictly before a
//! driver sees them, bulk moved in slices through the sync resources, exit codes 13 / 12 / 14, describe's
//! `capabilities=` from the exports and the shim's `storage_sync_*` functions only where offered. The
//! driver is the fixture `sync-fixture` (canned answers, nothing stored), so what is checked is the host.

mod common;

use common::sync::{REMOTE, SERVER, push_ack, sync_op};
use common::{Env, fixture};

fn wire(n: u64) -> String {
    format!("00000000-0000-4000-8000-{n:012x}")
}

fn sync_fixture() -> String {
    fixture("sync-fixture").to_str().unwrap().to_owned()
}

/// `storage sync-<op> t SERVER REMOTE 1 <extra>...` on `driver`, `stdin` fed in.
fn sync(env: &Env, driver: &str, op: &str, extra: &[&str], stdin: &str) -> agmsg_conformance::Run {
    sync_op(env, driver)(op, extra, stdin)
}

fn pull_message(n: u64, status: &str, blob: &str) -> String {
    let projection = if status == "importable" {
        r#","projection":{"body":"hi","created_at":"2026-01-01T00:00:00Z","from_agent":"a","to_agent":"b"}"#
    } else {
        ""
    };
    format!(
        r#"{{"type":"sync_pull_message","server_seq":"{n}","id":"{}","server_received_at":"2026-01-01T00:00:00Z","envelope":{{"v":1,"cipher":"none","key_id":null,"blob":"{blob}"}},"status":"{status}"{projection}}}"#,
        wire(n)
    )
}

#[test]
fn describe_names_stage1_sync_from_the_exports_and_the_shim_defines_the_sync_functions() {
    let env = Env::new();
    let driver = sync_fixture();
    // The fixture's own describe lists no capability: the host adds what the component exports.
    let described = env.run(&["--driver", &driver, "storage", "describe"]);
    assert!(described.ok().lines().contains(&"capabilities=stage1-sync"), "{described:?}");
    let shim = env.run(&["--driver", &driver, "shim", "storage"]);
    for function in
        ["storage_sync_prepare_push()", "storage_sync_reconcile_push()", "storage_sync_apply_pull()", "storage_sync_reprocess()"]
    {
        assert!(shim.ok().stdout.contains(function), "{function} missing:\n{}", shim.stdout);
    }
    // A driver without the interface: agmsg's adapter finds no function and answers 14 itself.
    let plain = fixture("hostile-text").to_str().unwrap().to_owned();
    let shim = env.run(&["--driver", &plain, "shim", "storage"]);
    assert!(!shim.ok().stdout.contains("storage_sync_"), "{}", shim.stdout);
    let described = env.run(&["--driver", &plain, "storage", "describe"]);
    assert!(described.ok().lines().contains(&"capabilities="), "{described:?}");
}

#[test]
fn an_op_the_driver_does_not_offer_exits_14_and_bad_arguments_exit_13() {
    let env = Env::new();
    let plain = fixture("hostile-text").to_str().unwrap().to_owned();
    let run = sync(&env, &plain, "reconcile-push", &[], "");
    assert_eq!(run.code, 14, "{run:?}");
    assert!(run.stderr.contains("does not offer"), "{run:?}");

    let driver = sync_fixture();
    let prepare =
        r#"{"type":"sync_prepare","envelope_v":1,"cipher":"none","key_id":null,"recipients":[],"max_blob_bytes":4,"allow_new":true}"#;
    assert_eq!(sync(&env, &driver, "prepare-push", &["2"], prepare).ok().lines().len(), 3);
    // Refused before stdin is read: nothing is fed, so the test never writes into a closed pipe.
    for limit in ["0", "1001", "01", "x"] {
        let run = sync(&env, &driver, "prepare-push", &[limit], "");
        assert_eq!((run.code, run.stdout.as_str()), (13, ""), "limit {limit}: {run:?}");
    }
    let upper = env.run_stdin(&["--driver", &driver, "storage", "sync-prepare-push", "t", &SERVER.to_uppercase(), REMOTE, "1", "2"], b"");
    assert_eq!(upper.code, 13, "{upper:?}");
    let version = env.run_stdin(&["--driver", &driver, "storage", "sync-prepare-push", "t", SERVER, REMOTE, "v1", "2"], b"");
    assert_eq!(version.code, 13, "{version:?}");
}

#[test]
fn prepare_prints_the_state_then_every_candidate_read_in_slices() {
    let env = Env::new();
    let driver = sync_fixture();
    // Three 5 MiB envelopes: more than one slice of the host's reads, each printed whole and in order.
    let blob = 5 << 20;
    let prepare = format!(
        r#"{{"type":"sync_prepare","envelope_v":1,"cipher":"none","key_id":null,"recipients":[],"max_blob_bytes":{blob},"allow_new":true}}"#
    );
    let run = sync(&env, &driver, "prepare-push", &["3"], &prepare);
    let lines = run.ok().lines();
    assert_eq!(lines.len(), 4, "{}", run.stderr);
    assert_eq!(lines[0], r#"{"type":"sync_state","driver_generation":"0c3e1f5a-8d2b-4e6f-9a1c-2b3d4e5f6a7b","transport_cursor":"0"}"#);
    for (n, line) in (1..=3u64).zip(&lines[1..]) {
        let head = format!(
            r#"{{"type":"sync_push_candidate","local_position":"{n}","local_id":"local-{n}","id":"{}","envelope":{{"v":1,"cipher":"none","key_id":null,"blob":""#,
            wire(n)
        );
        assert!(line.starts_with(&head), "candidate {n}: {}", &line[..200.min(line.len())]);
        assert_eq!(line.len(), head.len() + blob + 3);
    }
    // agmsg's sqlite leniency: no `recipients` is none's empty list; anything else about the record is strict.
    let lenient = prepare.replace(r#""recipients":[],"#, "");
    assert_eq!(sync(&env, &driver, "prepare-push", &["1"], &lenient.replace(&blob.to_string(), "4")).ok().lines().len(), 2);
    for bad in [
        prepare.replace(r#""allow_new":true"#, r#""allow_new":true,"allow_new":false"#),
        prepare.replace(r#""allow_new":true"#, r#""allow_new":true,"limit":3"#),
        prepare.replace(r#""key_id":null"#, r#""key_id":"k1""#),
        format!("{prepare}\n{prepare}"),
        format!("{prepare} {{}}"),
        String::new(),
    ] {
        let run = sync(&env, &driver, "prepare-push", &["3"], &bad);
        assert_eq!((run.code, run.stdout.as_str()), (13, ""), "{bad}: {}", run.stderr);
    }
}

#[test]
fn reconcile_answers_the_push_cursor_and_a_corrupt_batch_exits_12() {
    let env = Env::new();
    let driver = sync_fixture();
    let ack = |position: i64, n: u64| push_ack(position, &wire(n), n);
    let run = sync(&env, &driver, "reconcile-push", &[], &format!("{}\n{}\n", ack(1, 10), ack(2, 11)));
    assert_eq!(run.ok().lines(), [r#"{"type":"sync_reconcile_result","push_cursor":"2"}"#]);
    let corrupt = sync(&env, &driver, "reconcile-push", &[], &format!("{}\n{}\n", ack(1, 10), ack(2000, 11)));
    assert_eq!((corrupt.code, corrupt.stdout.as_str()), (12, ""), "{corrupt:?}");
    assert!(corrupt.stderr.contains("matches no reservation"), "{corrupt:?}");
    for bad in [
        String::new(),
        ack(1, 10).replace(r#""disposition":"stored""#, r#""disposition":"kept""#),
        ack(1, 10).replace('}', r#","server_seq":"12"}"#),
    ] {
        let run = sync(&env, &driver, "reconcile-push", &[], &bad);
        assert_eq!((run.code, run.stdout.as_str()), (13, ""), "{bad}: {run:?}");
    }
}

#[test]
fn apply_pull_streams_the_page_in_slices_and_commits_it_with_its_cursor() {
    let env = Env::new();
    let driver = sync_fixture();
    let page = [
        pull_message(1, "importable", "eA=="),
        pull_message(2, "pending_key", "eQ=="),
        r#"{"type":"sync_pull_cursor","next_after":"2"}"#.to_owned(),
    ]
    .join("\n");
    let run = sync(&env, &driver, "apply-pull", &[], &page);
    assert_eq!(
        run.ok().lines(),
        [
            r#"{"type":"sync_apply_result","transport_cursor":"2","corrupt_count":1}"#.to_owned(),
            format!(r#"{{"type":"sync_apply_outcome","id":"{}","server_seq":"1","status":"imported"}}"#, wire(1)),
            format!(r#"{{"type":"sync_apply_outcome","id":"{}","server_seq":"2","status":"pending_key"}}"#, wire(2)),
        ]
    );
    // Four 3 MiB envelopes: the host hands them over in two slices (the fixture counts them in
    // corrupt_count), never the whole page at once.
    let blob = "A".repeat(3 << 20);
    let mut big: Vec<String> = (1..=4).map(|n| pull_message(n, "malformed", &blob)).collect();
    big.push(r#"{"type":"sync_pull_cursor","next_after":"4"}"#.into());
    let run = sync(&env, &driver, "apply-pull", &[], &big.join("\n"));
    let lines = run.ok().lines();
    assert_eq!(lines[0], r#"{"type":"sync_apply_result","transport_cursor":"4","corrupt_count":2}"#);
    assert_eq!(lines.len(), 5);
    // An empty page is a cursor alone.
    let empty = sync(&env, &driver, "apply-pull", &[], r#"{"type":"sync_pull_cursor","next_after":"0"}"#);
    assert_eq!(empty.ok().lines(), [r#"{"type":"sync_apply_result","transport_cursor":"0","corrupt_count":0}"#]);

    let cursor = r#"{"type":"sync_pull_cursor","next_after":"2"}"#;
    // The cursor's position in the page is not significant (agmsg's sqlite driver, and its suite's
    // "a message line after the cursor line does not blank the cursor"): a message after it is applied.
    let late = sync(&env, &driver, "apply-pull", &[], &format!("{cursor}\n{}", pull_message(1, "pending_key", "eA==")));
    let lines = late.ok().lines();
    assert!(lines[0].contains(r#""transport_cursor":"2""#), "{lines:?}");
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[1].contains(r#""server_seq":"1""#), "{lines:?}");
    for (bad, why) in [
        (pull_message(1, "importable", "eA=="), "no sync_pull_cursor"),
        (format!("{cursor}\n{cursor}"), "second sync_pull_cursor"),
        (
            format!("{}\n{cursor}", pull_message(1, "malformed", "eA==").replace(r#""blob":"eA==""#, r#""blob":"eA==","blob":"eA==""#)),
            "line 1: not one JSON record: duplicate key",
        ),
        (
            format!("{}\n{cursor}", pull_message(1, "malformed", "eA==").replace(r#""status""#, r#""colour":"red","status""#)),
            "line 1: sync_pull_message: unknown key",
        ),
        (format!("{}\n{cursor}", pull_message(1, "importable", "eA==").replace(r#","projection""#, r#","x""#)), "line 1"),
        (
            format!("\n\n{}\n{cursor}", pull_message(1, "malformed", "eA==").replace(r#""server_seq":"1""#, r#""server_seq":"01""#)),
            "line 3",
        ),
    ] {
        let run = sync(&env, &driver, "apply-pull", &[], &bad);
        assert_eq!((run.code, run.stdout.as_str()), (13, ""), "{bad}: {run:?}");
        assert!(run.stderr.contains(why), "{why}: {}", run.stderr);
    }
}

#[test]
fn reprocess_prints_the_state_its_candidates_and_the_page_trailer() {
    let env = Env::new();
    let driver = sync_fixture();
    let after = format!("5:{}", wire(5));
    let run = sync(&env, &driver, "reprocess", &["2", &after, "malformed"], "");
    let candidate = |n: u64| {
        format!(
            r#"{{"type":"sync_reprocess_candidate","server_seq":"{n}","id":"{}","server_received_at":"2026-01-01T00:00:00Z","envelope":{{"v":1,"cipher":"none","key_id":null,"blob":"QQ=="}},"prior_status":"malformed"}}"#,
            wire(n)
        )
    };
    assert_eq!(
        run.ok().lines(),
        [
            r#"{"type":"sync_state","driver_generation":"0c3e1f5a-8d2b-4e6f-9a1c-2b3d4e5f6a7b","transport_cursor":"0"}"#.to_owned(),
            candidate(6),
            candidate(7),
            format!(r#"{{"type":"sync_reprocess_page","next_after":"7:{}","has_more":true}}"#, wire(7)),
        ]
    );
    // No position and no scope: every recoverable status from the start.
    let first = sync(&env, &driver, "reprocess", &["1"], "");
    assert!(first.ok().lines()[1].contains(r#""server_seq":"1""#) && first.stdout.contains("pending_key"), "{first:?}");
    for bad in [vec!["1", "5"], vec!["1", &after, "everything"], vec!["1", "5:NOT-A-UUID"]] {
        let run = sync(&env, &driver, "reprocess", &bad, "");
        assert_eq!((run.code, run.stdout.as_str()), (13, ""), "{bad:?}: {run:?}");
    }
}

/// The bundled sqlite driver through the same CLI: a sent message is reserved and sealed (`none`), the
/// answer is byte-stable until reconcile, the ack moves the push cursor to it, and the server's echo of
/// it pulled back is reconciled, not imported a second time.
#[test]
fn sqlite_round_trip_through_the_cli() {
    let env = Env::new();
    env.run(&["--driver", "sqlite", "storage", "send", "t", "a", "b", "hello"]).ok();
    let prepare =
        r#"{"type":"sync_prepare","envelope_v":1,"cipher":"none","key_id":null,"recipients":[],"max_blob_bytes":1048576,"allow_new":true}"#;
    let first = sync(&env, "sqlite", "prepare-push", &["10"], prepare);
    let lines = first.ok().lines();
    assert_eq!(lines.len(), 2, "{first:?}");
    assert!(lines[0].starts_with(r#"{"type":"sync_state","driver_generation":"#), "{}", lines[0]);
    let candidate: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
    assert_eq!(candidate["type"], "sync_push_candidate");
    assert_eq!(candidate["envelope"]["cipher"], "none");
    let again = sync(&env, "sqlite", "prepare-push", &["10"], prepare);
    assert_eq!(again.ok().stdout, first.stdout, "prepare is byte-stable before reconcile");

    let position = candidate["local_position"].as_str().unwrap().to_owned();
    let wire_id = candidate["id"].as_str().unwrap().to_owned();
    let ack = push_ack(&position, &wire_id, 1);
    let reconciled = sync(&env, "sqlite", "reconcile-push", &[], &ack);
    assert_eq!(reconciled.ok().lines(), [format!(r#"{{"type":"sync_reconcile_result","push_cursor":"{position}"}}"#)]);

    let blob = candidate["envelope"]["blob"].as_str().unwrap();
    let echo = format!(
        r#"{{"type":"sync_pull_message","server_seq":"1","id":"{wire_id}","server_received_at":"2026-01-01T00:00:00Z","envelope":{{"v":1,"cipher":"none","key_id":null,"blob":"{blob}"}},"status":"importable","projection":{{"body":"hello","created_at":"2026-01-01T00:00:00Z","from_agent":"a","to_agent":"b"}}}}
{{"type":"sync_pull_cursor","next_after":"1"}}"#
    );
    let pulled = sync(&env, "sqlite", "apply-pull", &[], &echo);
    let lines = pulled.ok().lines();
    assert!(lines[0].starts_with(r#"{"type":"sync_apply_result","transport_cursor":"1""#), "{pulled:?}");
    assert_eq!(
        lines[1],
        format!(r#"{{"type":"sync_apply_outcome","id":"{wire_id}","server_seq":"1","status":"reconciled"}}"#),
        "{pulled:?}"
    );
    let history = env.run(&["--driver", "sqlite", "storage", "history", "t"]);
    assert_eq!(history.ok().lines().len(), 1, "the echo is not a second message: {history:?}");
}
