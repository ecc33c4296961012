//! The resync (`stage1-resync`) and read-state (`stage2-read-state`) extensions end to end through
//! `agmsg-host storage sync-<op>` on the bundled sqlite component: agmsg's argv, records in and out in
//! agmsg's shapes and key order, strict input (duplicate and unknown keys, a second record), exit 13 for
//! refused input and runtime failures, 14 for a driver without the extension, describe's capabilities
//! and the shim's functions from the exports. The driver's SQL is unit-tested natively in
//! `drivers/storage-sqlite/src/sync/tests_stage2.rs`.

mod common;

use common::sync::{count, db, json};
use common::{Env, fixture};

const SERVER: &str = "018f3f7e-0000-7000-8000-000000000000";
const REMOTE: &str = "018f3f7e-0000-7000-8000-000000000001";
const MEMBER: &str = "018f3f7e-0000-7000-8000-000000000010";
const PREPARE: &str = r#"{"type":"sync_prepare","envelope_v":1,"cipher":"none","key_id":null,"max_blob_bytes":1048576,"allow_new":true}"#;
const RESYNC: &str =
    r#"{"type":"sync_resync","expected_transport_cursor":"0","min_available_seq":"5","current_seq":"7","reason":"retention-gap-accepted"}"#;

fn sync(env: &Env, driver: &str, op: &str, extra: &[&str], stdin: &str) -> agmsg_conformance::Run {
    let op = format!("sync-{op}");
    let args: Vec<&str> =
        ["--driver", driver, "storage", op.as_str(), "demo", SERVER, REMOTE, "1"].into_iter().chain(extra.iter().copied()).collect();
    env.run_stdin(&args, stdin.as_bytes())
}

/// Whether `line` holds `keys` in this order (agmsg's; serde_json's map would sort them).
fn in_order(line: &str, keys: &[&str]) -> bool {
    let at: Vec<Option<usize>> = keys.iter().map(|k| line.find(&format!("\"{k}\":"))).collect();
    at.iter().all(Option::is_some) && at.windows(2).all(|w| w[0] < w[1]) && json(line).as_object().unwrap().len() == keys.len()
}

#[test]
fn describe_and_the_shim_offer_resync_and_read_state_only_for_a_driver_that_exports_them() {
    let env = Env::new();
    let described = env.run(&["--driver", "sqlite", "storage", "describe"]);
    assert!(described.ok().lines().contains(&"capabilities=stage1-sync,stage1-resync,stage2-read-state,receipts"), "{described:?}");
    let shim = env.run(&["--driver", "sqlite", "shim", "storage"]);
    for f in [
        "storage_sync_resync_status()",
        "storage_sync_resync()",
        "storage_sync_prepare_read_state()",
        "storage_sync_apply_read_state()",
        "storage_sync_block_read_state()",
        "storage_sync_unblock_read_state()",
    ] {
        assert!(shim.ok().stdout.contains(f), "{f} missing:\n{}", shim.stdout);
    }
    let plain = fixture("hostile-text").to_str().unwrap().to_owned();
    let shim = env.run(&["--driver", &plain, "shim", "storage"]);
    assert!(!shim.ok().stdout.contains("storage_sync_resync") && !shim.stdout.contains("read_state"), "{}", shim.stdout);
    for (op, extra, stdin) in [("resync-status", vec!["5"], ""), ("resync", vec![], RESYNC), ("unblock-read-state", vec![], "")] {
        let stdin =
            if op == "unblock-read-state" { format!(r#"{{"type":"sync_read_unblock","member_id":"{MEMBER}"}}"#) } else { stdin.to_owned() };
        let run = sync(&env, &plain, op, &extra, &stdin);
        assert_eq!(run.code, 14, "{op}: {run:?}");
        assert!(run.stderr.contains("does not offer"), "{run:?}");
    }
}

#[test]
fn resync_status_is_read_only_and_resync_records_one_gap() {
    let env = Env::new();
    // A store that never synced: 13, nothing printed, nothing made.
    let run = sync(&env, "sqlite", "resync-status", &["5"], "");
    assert_eq!((run.code, run.stdout.as_str(), run.stderr.as_str()), (13, "", ""), "{run:?}");
    assert!(!env.store.join("messages.db").exists() || count(&env, "SELECT COUNT(*) FROM sqlite_master WHERE name LIKE 'sync_%'") == 0);

    env.send("demo", "alice", "bob", "local survives retention");
    sync(&env, "sqlite", "prepare-push", &["10"], PREPARE).ok();
    let status = sync(&env, "sqlite", "resync-status", &["5"], "");
    assert!(in_order(status.ok().stdout.trim(), &["type", "driver_generation", "transport_cursor", "audit"]), "{status:?}");
    let line = json(status.stdout.trim());
    assert_eq!((line["transport_cursor"].as_str(), line["audit"].is_null()), (Some("0"), true));

    let result = sync(&env, "sqlite", "resync", &[], RESYNC);
    let keys =
        ["type", "driver_generation", "expected_transport_cursor", "transport_cursor", "accepted_floor", "gap_start", "gap_end", "reason"];
    assert!(in_order(result.ok().stdout.trim(), &keys), "{result:?}");
    let r = json(result.stdout.trim());
    assert_eq!((r["transport_cursor"].as_str(), r["gap_start"].as_str(), r["gap_end"].as_str()), (Some("5"), Some("1"), Some("5")));
    assert_eq!(r["driver_generation"], line["driver_generation"]);
    let status = json(sync(&env, "sqlite", "resync-status", &["5"], "").ok().stdout.trim());
    assert_eq!(status["transport_cursor"], "5");
    assert_eq!(status["audit"]["accepted_floor"], "5");
    // Again: refused, one audit; another binding: refused, nothing printed.
    let again = sync(&env, "sqlite", "resync", &[], RESYNC);
    assert_eq!((again.code, again.stdout.as_str()), (13, ""), "{again:?}");
    assert_eq!(count(&env, "SELECT COUNT(*) FROM sync_resync_audits"), 1);
    let other = env.run_stdin(
        &["--driver", "sqlite", "storage", "sync-resync-status", "demo", SERVER, "018f3f7e-0000-7000-8000-000000000002", "1", "5"],
        b"",
    );
    assert_eq!(
        (other.code, other.stdout.as_str(), other.stderr.as_str()),
        (13, "", ""),
        "agmsg: absent bindings fail closed, silently: {other:?}"
    );
}

#[test]
fn resync_input_is_strict_and_a_refused_record_changes_nothing() {
    let env = Env::new();
    env.send("demo", "alice", "bob", "hi");
    sync(&env, "sqlite", "prepare-push", &["10"], PREPARE).ok();
    let duplicate = RESYNC.replacen(r#""min_available_seq":"5""#, r#""min_available_seq":"4","min_available_seq":"5""#, 1);
    let unknown = RESYNC.replacen(r#""reason""#, r#""note":"x","reason""#, 1);
    let two = format!("{RESYNC}\n\n{}", RESYNC.replacen(r#""5""#, r#""6""#, 1));
    let backwards = RESYNC.replacen(r#""min_available_seq":"5""#, r#""min_available_seq":"0""#, 1);
    for bad in [duplicate.as_str(), unknown.as_str(), two.as_str(), backwards.as_str(), "", "not json"] {
        let run = sync(&env, "sqlite", "resync", &[], bad);
        assert_eq!((run.code, run.stdout.as_str()), (13, ""), "{bad}: {run:?}");
    }
    for floor in ["05", "-1", "x", "9223372036854775808"] {
        assert_eq!(sync(&env, "sqlite", "resync-status", &[floor], "").code, 13, "{floor}");
    }
    assert_eq!(count(&env, "SELECT COUNT(*) FROM sync_resync_audits"), 0);
    let cursor: String = db(&env).query_row("SELECT transport_cursor FROM sync_bindings", [], |r| r.get(0)).unwrap();
    assert_eq!(cursor, "0");
}

#[test]
fn read_state_prepares_applies_blocks_and_unblocks_through_the_cli() {
    let env = Env::new();
    let page = [
        r#"{"type":"sync_pull_message","server_seq":"1","id":"550e8400-e29b-41d4-a716-446655440031","server_received_at":"2026-07-21T06:00:00.000000Z","envelope":{"v":1,"cipher":"none","key_id":null,"blob":"e30="},"status":"importable","projection":{"body":"leave unread","created_at":"2026-07-21T06:00:00.000000Z","from_agent":"alice","to_agent":"bob"}}"#,
        r#"{"type":"sync_pull_message","server_seq":"2","id":"550e8400-e29b-41d4-a716-446655440032","server_received_at":"2026-07-21T06:00:01.000000Z","envelope":{"v":1,"cipher":"none","key_id":null,"blob":"e30="},"status":"importable","projection":{"body":"read out of order","created_at":"2026-07-21T06:00:01.000000Z","from_agent":"alice","to_agent":"bob"}}"#,
        r#"{"type":"sync_pull_cursor","next_after":"2"}"#,
    ]
    .join("\n");
    sync(&env, "sqlite", "apply-pull", &[], &page).ok();
    let second: String = db(&env).query_row("SELECT id FROM events WHERE body='read out of order'", [], |r| r.get(0)).unwrap();
    env.storage(&["mark-read-batch", "demo", "bob", &second]).ok();
    // The server's member objects carry more than the driver reads (their registrations).
    let context = format!(
        r#"{{"type":"sync_read_context","min_available_seq":"0","current_seq":"2","members":[{{"member_id":"{MEMBER}","name":"bob","registrations":[]}}],"local_agents":["bob"]}}"#
    );
    let prepared = sync(&env, "sqlite", "prepare-read-state", &[], &context);
    assert_eq!(
        prepared.ok().lines(),
        [
            format!(r#"{{"type":"sync_read_frontier","member_id":"{MEMBER}","server_seq":"0"}}"#).as_str(),
            format!(r#"{{"type":"sync_read_exact","member_id":"{MEMBER}","wire_id":"550e8400-e29b-41d4-a716-446655440032"}}"#).as_str(),
        ]
    );
    let snapshot = format!(
        "{}\n{}\n",
        r#"{"type":"sync_read_snapshot","min_available_seq":"0","current_seq":"2"}"#,
        format_args!(r#"{{"type":"sync_read_frontier","member_id":"{MEMBER}","server_seq":"2"}}"#)
    );
    let applied = sync(&env, "sqlite", "apply-read-state", &[], &snapshot);
    assert_eq!(applied.ok().stdout.trim(), r#"{"type":"sync_read_apply_result","min_available_seq":"0","member_count":1}"#);
    assert_eq!(env.storage(&["list-unread", "demo", "bob"]).ok().stdout.trim(), "", "the remote frontier read it");

    // A page for an unknown member, or out of order, is refused whole.
    let unknown = snapshot.replace(MEMBER, "018f3f7e-0000-7000-8000-0000000000ff");
    let reversed: String = snapshot.lines().rev().map(|l| format!("{l}\n")).collect();
    for bad in [unknown.as_str(), reversed.as_str(), ""] {
        let run = sync(&env, "sqlite", "apply-read-state", &[], bad);
        assert_eq!((run.code, run.stdout.as_str()), (13, ""), "{bad}: {run:?}");
    }

    let block = format!(r#"{{"type":"sync_read_block","member_id":"{MEMBER}","reason":"read-state-limit-exceeded"}}"#);
    let blocked = sync(&env, "sqlite", "block-read-state", &[], &block);
    assert_eq!(
        blocked.ok().stdout.trim(),
        format!(r#"{{"type":"sync_read_blocked","member_id":"{MEMBER}","reason":"read-state-limit-exceeded"}}"#)
    );
    let prepared = sync(&env, "sqlite", "prepare-read-state", &[], &context);
    assert_eq!(prepared.ok().lines(), [blocked.stdout.trim()], "only the block, no frontier");
    let unblock = format!(r#"{{"type":"sync_read_unblock","member_id":"{MEMBER}"}}"#);
    let unblocked = sync(&env, "sqlite", "unblock-read-state", &[], &unblock);
    assert_eq!(unblocked.ok().stdout.trim(), format!(r#"{{"type":"sync_read_unblocked","member_id":"{MEMBER}"}}"#));
    assert_eq!(json(sync(&env, "sqlite", "prepare-read-state", &[], &context).ok().lines()[0])["server_seq"], "2");
    // An unknown member cannot be blocked; a wrong reason or a second record is refused.
    for bad in [
        block.replace(MEMBER, "018f3f7e-0000-7000-8000-0000000000ff"),
        block.replace("read-state-limit-exceeded", "member-name-mismatch"),
        format!("{block}\n{block}"),
    ] {
        let run = sync(&env, "sqlite", "block-read-state", &[], &bad);
        assert_eq!((run.code, run.stdout.as_str()), (13, ""), "{bad}: {run:?}");
    }
}
