//! The sync ops on a real store directory, natively, through the driver's own trait methods, and their
//! crash boundaries: a crash test re-runs this test binary as a child that aborts at a named point of
//! the write protocol ([`super::crash`]: no unwinding, no `Drop`, no cut-back, as a kill or a trapped
//! instance), then checks what the next op makes of the store:
//!
//! - the child died inside the op (it still held agmsg's `events.jsonl.lock/`), and the next op takes
//!   the lock back and cuts an uncommitted append away (the journal is gone afterwards);
//! - the log is whole under agmsg's strict reader (no torn record);
//! - nothing half-applied: a crash before the journal's removal leaves the log byte for byte as it was,
//!   one after it leaves every record of the commit;
//! - every acknowledged write (an op that answered before the crash) is still in the fold;
//! - the op then runs again, and its effect is there exactly once.
//!
//! The store has its cursor migration marked done, as a store agmsg made has, so that the sync ops meet
//! a store without `.events-index/` (see [`crate::host`] for what stands in for the host).

use std::path::PathBuf;
use std::process::Command;

use agmsg_guest_sdk::storage::{
    Binding, Chat, Disposition, Envelope, Evaluated, PrepareRequest, Projection, PullMessage, PushAck, PushCandidate, StorageDriver,
    SyncDriver, SyncPages, WriteProfile,
};
use serde_json::Value;

use super::fold::{State, Target};
use super::journal::read_records;
use crate::{Jsonl, LOG_FILE};

const SERVER: &str = "0196f3a2-7c1e-7000-8000-000000000001";
const REMOTE: &str = "0196f3a2-7c1e-7000-8000-0000000000a2";
const JOURNAL: &str = ".events-index/import-commit";
const PREPARE_STAGING: &str = ".events-index/sync-prepare-entries";
/// A pulled blob this long puts a page of three in two records (`journal::RECORD_BYTES` is 4 MiB).
const BIG_BLOB: usize = 3 << 19;

fn binding() -> Binding {
    Binding { local_team: "dev".into(), server_instance_id: SERVER.into(), remote_team_id: REMOTE.into(), protocol_version: "1".into() }
}

/// A store directory of the test's own, made this thread's store.
struct Store {
    dir: tempfile::TempDir,
}

impl Store {
    fn new() -> Store {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(crate::MIGRATION_MARKER), b"").unwrap();
        crate::host::set_store_dir(dir.path());
        Store { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn log(&self) -> Vec<u8> {
        std::fs::read(self.path(LOG_FILE)).unwrap_or_default()
    }
}

fn send(body: &str) -> String {
    Jsonl.send("dev", "alice", "bob", body).unwrap()
}

fn drain<T>(pages: &mut dyn SyncPages<T>) -> Vec<T> {
    let mut all = Vec::new();
    loop {
        let page = pages.next_page(1 << 20).unwrap();
        if page.is_empty() {
            return all;
        }
        all.extend(page);
    }
}

/// Prepare and read every candidate (the pages, which hold the locks, are dropped on return).
fn prepare() -> Vec<PushCandidate> {
    let request = PrepareRequest { envelope_v: 1, profile: WriteProfile::None, max_blob_bytes: 1 << 20, allow_new: true };
    let (_, mut pages) = Jsonl.prepare_push(&binding(), 1000, &request).unwrap();
    drain(&mut *pages)
}

fn ack(c: &PushCandidate, seq: u64) -> PushAck {
    PushAck { local_position: c.local_position, wire_id: c.wire_id.clone(), server_seq: seq.to_string(), disposition: Disposition::Stored }
}

fn reconcile(acks: &[PushAck]) -> i64 {
    Jsonl.reconcile_push(&binding(), acks).unwrap()
}

fn pulled(seq: u64, wire: &str, blob_len: usize) -> PullMessage {
    PullMessage {
        server_seq: seq.to_string(),
        wire_id: wire.into(),
        server_received_at: "2026-08-01T10:00:00.000Z".into(),
        envelope: Envelope { v: 1, cipher: "none".into(), key_id: None, blob: format!("{seq}{}", "x".repeat(blob_len)) },
        status: Evaluated::Importable,
        reason: None,
        policy_revision: None,
        local_security_revision: None,
        projection: Some(Projection::Message(Chat {
            body: format!("pulled {seq}"),
            created_at: "2026-08-01T09:59:59.000000Z".into(),
            from_agent: "carol".into(),
            to_agent: "bob".into(),
        })),
    }
}

fn apply(page: Vec<PullMessage>, next_after: &str) -> agmsg_guest_sdk::storage::ApplyResult {
    let mut stage = Jsonl.apply_pull(&binding()).unwrap();
    stage.push(page).unwrap();
    stage.commit(next_after).unwrap()
}

/// The binding's state as the log holds it.
fn state() -> State {
    State::load(&Target { local_team: "dev", server: SERVER, remote: REMOTE }).unwrap()
}

/// Every record of the log, read as agmsg's strict reader reads it.
fn records() -> Vec<Value> {
    let mut all = Vec::new();
    read_records(|_, _, record| {
        all.push(record);
        Ok(())
    })
    .unwrap();
    all
}

/// How many local messages the pull commits in the log carry (each import makes one).
fn imported() -> usize {
    records()
        .iter()
        .filter(|r| r["type"] == "sync_pull_commit")
        .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
        .filter(|m| !m["local_event"].is_null())
        .count()
}

// ------------------------------------------------------------------------------------------------
// Crashes: a child process aborts at a point; the parent checks what the next op finds.

/// Run `op` in a child process of this test binary that aborts at `point` (its `hit`-th passage).
fn crash(store: &Store, op: &str, point: &str, hit: u32) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "sync::tests::crash_child", "--nocapture", "--test-threads=1"])
        .env("AGMSG_SYNC_CRASH_DB", store.dir.path())
        .env("AGMSG_SYNC_CRASH_OP", op)
        .env("AGMSG_SYNC_CRASH_AT", point)
        .env("AGMSG_SYNC_CRASH_HIT", hit.to_string())
        .output()
        .unwrap();
    assert!(
        !out.status.success() && out.status.code().is_none(),
        "the child should have died at {point} (hit {hit}) of {op}: {:?}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The child side of [`crash`]; without its variables (a normal run) it does nothing. Its store is
/// `AGMSG_SYNC_CRASH_DB` (read by `crate::host::store_dir`).
#[test]
fn crash_child() {
    let Ok(op) = std::env::var("AGMSG_SYNC_CRASH_OP") else { return };
    match op.as_str() {
        "prepare" => {
            prepare();
        }
        "reconcile" => {
            // Every candidate is reserved already (no append here); the ack is the op's one write.
            let c = prepare();
            reconcile(&[ack(&c[0], 2)]);
        }
        "apply" => {
            apply(pull_page(), "13");
        }
        "reprocess" => {
            let _ = Jsonl.reprocess(&binding(), 10, None, agmsg_guest_sdk::storage::ReprocessScope::Recoverable).unwrap();
        }
        "recover" => {
            drop(super::open_locked().unwrap());
        }
        "unread" => {
            Jsonl.list_unread("dev", "bob", None).unwrap();
        }
        other => panic!("unknown op {other}"),
    }
    panic!("the op finished without reaching its crash point");
}

/// The page the `apply` op pulls: three messages, in two records.
fn pull_page() -> Vec<PullMessage> {
    let wires = ["0196f3a2-7c1e-4000-8000-000000000011", "0196f3a2-7c1e-4000-8000-000000000012", "0196f3a2-7c1e-4000-8000-000000000013"];
    wires.iter().zip(11..).map(|(w, seq)| pulled(seq, w, BIG_BLOB)).collect()
}

/// What answered before the crash: two local messages prepared, the first acknowledged at 1, and one
/// pulled message applied with the cursor at 10.
struct Acknowledged {
    candidates: Vec<PushCandidate>,
    push_cursor: i64,
}

fn acknowledged_history() -> Acknowledged {
    send("m0");
    send("m1");
    let candidates = prepare();
    assert_eq!(candidates.len(), 2);
    let push_cursor = reconcile(&[ack(&candidates[0], 1)]);
    assert_eq!(push_cursor, candidates[0].local_position);
    apply(vec![pulled(10, "0196f3a2-7c1e-4000-8000-000000000010", 16)], "10");
    Acknowledged { candidates, push_cursor }
}

impl Acknowledged {
    /// Every acknowledged write is in the fold.
    fn check(&self, context: &str) {
        let state = state();
        for c in &self.candidates {
            let r = state.reservation_by_wire(&c.wire_id).unwrap_or_else(|| panic!("{context}: reservation {} lost", c.wire_id));
            assert_eq!(r.position, c.local_position.to_string(), "{context}");
        }
        assert_eq!(state.acks.get(&self.candidates[0].wire_id).map(String::as_str), Some("1"), "{context}: the ack");
        assert!(state.push_cursor() as i64 >= self.push_cursor, "{context}: the push cursor went back");
        assert!(super::fold::seq_cmp(&state.transport, "10").is_ge(), "{context}: the transport cursor went back");
        assert_eq!(state.pulled["0196f3a2-7c1e-4000-8000-000000000010"].status, "imported", "{context}");
    }
}

/// The next op's view after a crash: the dead child's lock is still there, the next op takes it back
/// and recovers; then no journal is left and the log reads whole.
fn recover(store: &Store, context: &str) {
    assert!(store.path("events.jsonl.lock").is_dir(), "{context}: the child did not die inside the op (holding agmsg's lock)");
    drop(super::open_locked().unwrap_or_else(|e| panic!("{context}: the next op cannot take the store back: {e:?}")));
    assert!(!store.path(JOURNAL).exists(), "{context}: the append journal is left");
    assert!(!store.path("events.jsonl.lock").exists(), "{context}: agmsg's lock is left");
    read_records(|_, _, _| Ok(())).unwrap_or_else(|e| panic!("{context}: the log does not read whole: {e:?}"));
}

/// The op again, to completion, and its effect exactly once.
fn run_again_and_check(op: &str, acked: &Acknowledged, context: &str) {
    match op {
        "prepare" => {
            let c = prepare();
            assert_eq!(c.len(), 2, "{context}: m1 (reserved, unacknowledged) and m2");
            assert_eq!(c[0], acked.candidates[1], "{context}: the reservation is replayed, never resealed");
            assert!(!acked.candidates.iter().any(|a| a.wire_id == c[1].wire_id), "{context}");
            assert_eq!(prepare(), c, "{context}: a second prepare replays the same");
        }
        "reconcile" => {
            let c = prepare();
            assert_eq!(c, acked.candidates[1..], "{context}: the unacknowledged reservation, as it was");
            assert_eq!(reconcile(&[ack(&c[0], 2)]), c[0].local_position, "{context}");
            assert!(prepare().is_empty(), "{context}: both acknowledged");
            assert_eq!(state().acks.get(&c[0].wire_id).map(String::as_str), Some("2"), "{context}");
        }
        "apply" => {
            for round in 0..2 {
                let result = apply(pull_page(), "13");
                assert_eq!(result.transport_cursor, "13", "{context}");
                assert_eq!(imported(), 4, "{context}: round {round}: the page is imported once (beside the first pull)");
            }
            assert_eq!(state().transport, "13", "{context}");
            // And through the index (brought up to date by this read): each pulled message once.
            let unread: Vec<String> = Jsonl.list_unread("dev", "bob", None).unwrap().into_iter().map(|m| m.body).collect();
            let pulled: Vec<&String> = unread.iter().filter(|b| b.starts_with("pulled ")).collect();
            assert_eq!(pulled, ["pulled 10", "pulled 11", "pulled 12", "pulled 13"], "{context}: {unread:?}");
        }
        other => panic!("{other}"),
    }
}

/// Set up the acknowledged history and the op's input, crash the op at `point`, and answer the log as
/// it was just before the op, and the history.
fn crash_op(store: &Store, op: &str, point: &str, hit: u32) -> (Vec<u8>, Acknowledged) {
    let acked = acknowledged_history();
    if op == "prepare" {
        send("m2");
    }
    let before = store.log();
    crash(store, op, point, hit);
    (before, acked)
}

/// Every point before a commit's journal is removed: the log is left byte for byte as it was (a commit
/// of two records cut after the first included), every acknowledged write is kept, and the op runs
/// again with its effect once.
#[test]
fn a_crash_before_the_journal_is_removed_leaves_the_log_as_it_was() {
    let cases: &[(&str, &str, u32)] = &[
        ("prepare", "prepare:sealed", 1),
        ("prepare", "prepare:before-append", 1),
        ("prepare", "append:journaled", 1),
        ("prepare", "append:line", 1),
        ("prepare", "append:synced", 1),
        ("reconcile", "reconcile:before-append", 1),
        ("reconcile", "rewrite:before-rename", 1),
        ("reconcile", "append:journaled", 1),
        ("reconcile", "append:line", 1),
        ("reconcile", "append:synced", 1),
        ("apply", "apply:staged", 2),
        ("apply", "apply:before-append", 1),
        ("apply", "append:journaled", 1),
        ("apply", "append:line", 1),
        ("apply", "append:line", 2),
        ("apply", "append:synced", 1),
    ];
    for &(op, point, hit) in cases {
        let context = format!("{op} at {point} ({hit})");
        let store = Store::new();
        let (before, acked) = crash_op(&store, op, point, hit);
        if point.starts_with("append:") {
            assert!(store.path(JOURNAL).exists(), "{context}: the journal is in place");
        }
        if point == "append:line" && hit == 1 && op == "apply" {
            let len = store.log().len();
            assert!(len > before.len() && len < before.len() + 3 * BIG_BLOB, "{context}: the first of two records is written");
        }
        recover(&store, &context);
        assert!(store.log() == before, "{context}: the log is not as it was before the op");
        acked.check(&context);
        run_again_and_check(op, &acked, &context);
        acked.check(&context);
    }
}

/// Past the journal's removal the commit is durable though the op never answered: the next op keeps
/// every record of it, and running the op again changes nothing more.
#[test]
fn a_crash_after_the_journal_is_removed_keeps_the_whole_commit() {
    for op in ["prepare", "reconcile", "apply"] {
        let context = format!("{op} at append:committed");
        let store = Store::new();
        let (before, acked) = crash_op(&store, op, "append:committed", 1);
        recover(&store, &context);
        let log = store.log();
        assert!(log.len() > before.len() && log.starts_with(&before), "{context}: the commit was cut away");
        acked.check(&context);
        let state = state();
        let expected = match op {
            "prepare" => {
                assert_eq!(state.reservations.len(), 3, "{context}: m2's reservation is kept");
                "sync_prepare_commit"
            }
            "reconcile" => {
                assert_eq!(state.acks.get(&acked.candidates[1].wire_id).map(String::as_str), Some("2"), "{context}");
                "sync_reconcile_commit"
            }
            _ => {
                assert_eq!((state.transport.as_str(), imported()), ("13", 4), "{context}: the whole page and its cursor");
                "sync_pull_commit"
            }
        };
        let tail = records().into_iter().skip(records_in(&before)).map(|r| r["type"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
        assert!(!tail.is_empty() && tail.iter().all(|t| t == expected), "{context}: {tail:?}");
        match op {
            "prepare" => {
                let c = prepare();
                assert_eq!(c[0], acked.candidates[1], "{context}");
                assert_eq!(c[1].wire_id, state.reservations[2].wire, "{context}: the durable reservation, not a new one");
            }
            "reconcile" => assert!(prepare().is_empty(), "{context}: both acknowledged"),
            _ => run_again_and_check("apply", &acked, &context),
        }
        if op != "apply" {
            // (A pull page applied again is a replay, which agmsg records: only its imports must not repeat.)
            assert_eq!(store.log().len(), log.len(), "{context}: running the op again wrote nothing");
        }
    }
}

/// How many records `log` holds (non-empty lines).
fn records_in(log: &[u8]) -> usize {
    log.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count()
}

/// A prepare killed after sealing two new messages publishes neither wire id: the next prepare seals
/// every message again under new ones (agmsg's rule: a wire id that may have been seen is never reused
/// for another envelope, and one never committed is never published).
#[test]
fn a_crash_after_sealing_publishes_nothing_and_the_next_prepare_uses_new_wire_ids() {
    let store = Store::new();
    for i in 0..3 {
        send(&format!("m{i}"));
    }
    let before = store.log();
    crash(&store, "prepare", "prepare:sealed", 2);
    let staged = std::fs::read_to_string(store.path(PREPARE_STAGING)).expect("the dead op's staging file");
    let private: Vec<String> = staged.split("\"id\":\"").skip(1).map(|s| s[..36].to_owned()).collect();
    assert_eq!(private.len(), 2, "two reservations were sealed before the crash: {staged}");
    recover(&store, "prepare:sealed");
    assert!(store.log() == before, "nothing published");
    let c = prepare();
    assert_eq!(c.len(), 3);
    assert!(c.iter().all(|c| !private.contains(&c.wire_id)), "a wire id the dead op sealed is published: {private:?}");
    assert!(!store.path(PREPARE_STAGING).exists(), "the staging file is gone");
}

/// A crash inside the next op's recovery (the log cut back, the journal not yet removed) is recovered
/// by the op after it, the same way.
#[test]
fn a_crash_inside_recovery_is_recovered_again() {
    let store = Store::new();
    let (before, acked) = crash_op(&store, "apply", "append:synced", 1);
    assert!(store.log().len() > before.len(), "the page was written before the crash");
    crash(&store, "recover", "recover:cut-back", 1);
    assert!(store.path(JOURNAL).exists(), "the second child died before the journal's removal");
    recover(&store, "recover:cut-back");
    assert!(store.log() == before, "the log is not as it was before the op");
    acked.check("recover:cut-back");
    run_again_and_check("apply", &acked, "recover:cut-back");
}

/// The bodies of bob's unread messages that came by pull, and their ids, through the index.
fn unread_pulled() -> Vec<(String, String)> {
    let unread = Jsonl.list_unread("dev", "bob", None).unwrap();
    unread.into_iter().filter(|m| m.body.starts_with("pulled ")).map(|m| (m.body, m.id)).collect()
}

/// A read that brings the index up to date over a pull commit, killed after the index's records and id
/// slots are written but before the meta that counts them (or before the meta's rename): the next read
/// parses those lines again, lists each pulled message once, and reading one by its id (through the id
/// table the dead read had already written to) marks it read once.
#[test]
fn a_read_killed_while_indexing_a_pull_commit_lists_each_message_once() {
    for point in ["index:batch-written", "rewrite:before-rename"] {
        let store = Store::new();
        acknowledged_history();
        assert_eq!(unread_pulled().len(), 1, "{point}: the index covers the history");
        apply(pull_page(), "13");
        crash(&store, "unread", point, 1);
        recover(&store, point);
        let unread = unread_pulled();
        let bodies: Vec<&str> = unread.iter().map(|(b, _)| b.as_str()).collect();
        assert_eq!(bodies, ["pulled 10", "pulled 11", "pulled 12", "pulled 13"], "{point}");
        let id = unread[1].1.clone();
        for _ in 0..2 {
            Jsonl.mark_read_batch("dev", "bob", std::slice::from_ref(&id)).unwrap();
            let bodies: Vec<String> = unread_pulled().into_iter().map(|(b, _)| b).collect();
            assert_eq!(bodies, ["pulled 10", "pulled 12", "pulled 13"], "{point}");
        }
        let reads = records().iter().filter(|r| r["type"] == "message_read").count();
        assert_eq!(reads, 1, "{point}: one read mark");
    }
}

/// The first sync op on a log gives it a generation (reprocess appends it): killed inside that append,
/// the log is as it was and the next reprocess appends one generation.
#[test]
fn a_crash_inside_reprocess_generation_append_leaves_the_log_as_it_was() {
    for (point, hit) in [("append:journaled", 1), ("append:line", 1), ("append:synced", 1)] {
        let store = Store::new();
        send("m0");
        let before = store.log();
        crash(&store, "reprocess", point, hit);
        recover(&store, point);
        assert!(store.log() == before, "{point}");
        let (page, _) = Jsonl.reprocess(&binding(), 10, None, agmsg_guest_sdk::storage::ReprocessScope::Recoverable).unwrap();
        assert_eq!(state().generation.as_deref(), Some(page.state.driver_generation.as_str()), "{point}");
        assert_eq!(records().iter().filter(|r| r["type"] == "sync_prepare_commit").count(), 1, "{point}");
    }
}
