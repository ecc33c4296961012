//! A sync op is bounded like export, and a driver's answer is checked against what the host can know
//! (issue 34, "Bounds"): a whole-op deadline however slowly a driver hands its answer out; exactly the
//! page's outcomes (no flood, `imported` only for what the engine found importable, a corrupt count a
//! store can hold); a refused op prints nothing however much it had already passed; and an id the host
//! prints never carries a bidi override.

mod common;

use common::Env;
use common::sync::sync_op;

fn prepare_none(max: u64) -> String {
    format!(
        r#"{{"type":"sync_prepare","envelope_v":1,"cipher":"none","key_id":null,"recipients":[],"max_blob_bytes":{max},"allow_new":true}}"#
    )
}

fn refused(what: &str, run: &agmsg_conformance::Run, why: &str) {
    assert_eq!((run.code, run.stdout.len()), (13, 0), "{what}: code and bytes printed; stderr: {}", run.stderr);
    assert!(run.stderr.contains(why), "{what}: expected {why:?} in {}", run.stderr);
}

/// A driver that hands out one candidate a slice, each within the call deadline, is stopped by the
/// whole-op bound (`AGMSG_OP_TIMEOUT_MS`) instead of holding agmsg's engine for limit x deadline.
#[test]
fn a_prepare_answer_handed_out_slowly_is_stopped_by_the_whole_op_bound() {
    let env = Env::new().env("AGMSG_OP_TIMEOUT_MS", "600");
    let driver = common::fixture("sync-fixture");
    let run = sync_op(&env, driver.to_str().unwrap());
    // 1000 slices of 150 ms would be 150 s; the bound ends it after about 0.6 s.
    let slow = run("prepare-push", &["1000"], &prepare_none(13));
    refused("a slow answer", &slow, "still answering sync-prepare-push after 600 ms (AGMSG_OP_TIMEOUT_MS)");
}

/// A refusal after more than 16 MiB of valid candidates (the held-back answer spooled to a file) still
/// prints nothing.
#[test]
fn a_refusal_after_many_megabytes_of_valid_records_prints_nothing() {
    let env = Env::new();
    let driver = common::fixture("sync-fixture");
    let run = sync_op(&env, driver.to_str().unwrap());
    let late = run("prepare-push", &["24"], &prepare_none(1_048_572));
    refused("a bad 24th candidate after 23 MiB", &late, "not a lowercase UUIDv4");
}

/// An id the engine gets is printable: a local id ending in U+202E (right-to-left override) is refused.
#[test]
fn an_id_with_a_bidi_override_is_refused() {
    let env = Env::new();
    let driver = common::fixture("sync-fixture");
    let run = sync_op(&env, driver.to_str().unwrap());
    refused("a local id with U+202E", &run("prepare-push", &["2"], &prepare_none(14)), "sync_push_candidate.local_id");
}

/// Apply-pull's answer holds exactly what the page can explain.
#[test]
fn apply_pull_outcomes_are_bounded_by_the_page() {
    let env = Env::new();
    let driver = common::fixture("sync-fixture");
    let run = sync_op(&env, driver.to_str().unwrap());
    let message = |n: u64, status: &str| {
        format!(
            r#"{{"type":"sync_pull_message","server_seq":"{n}","id":"00000000-0000-4000-8000-{n:012x}","server_received_at":"t","envelope":{{"v":1,"cipher":"none","key_id":null,"blob":"eA=="}},"status":"{status}"}}"#
        )
    };
    let page = |status: &str, cursor: u64| {
        format!("{}\n{}\n{{\"type\":\"sync_pull_cursor\",\"next_after\":\"{cursor}\"}}\n", message(1, status), message(2, status))
    };
    assert_eq!(run("apply-pull", &[], &page("pending_key", 2)).ok().lines().len(), 3);
    refused("a flood of outcomes", &run("apply-pull", &[], &page("malformed", 94)), "sync_apply_outcome records for a page of 2 messages");
    for status in ["pending_key", "policy_violation"] {
        refused(&format!("imported for {status}"), &run("apply-pull", &[], &page(status, 93)), &format!("which the engine found {status}"));
    }
    refused("a corrupt count of 2^64-1", &run("apply-pull", &[], &page("malformed", 92)), "corrupt_count 18446744073709551615");
}
