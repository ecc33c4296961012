//! `resync` and `read-state` on a real `messages.db` (native SQLite): the audit and its read-only
//! status, read-state max-merge and set-union, name mismatches, the operator's block, all-or-nothing
//! pages; and one store taken in turns with agmsg's own bash `sqlite-sync.sh`.

use std::path::{Path, PathBuf};
use std::process::Command;

use agmsg_guest_sdk::storage::{BlockedReason, Evaluated, Exact, Frontier, Member, ReadContext, ResyncRequest, Snapshot};

use super::interop::{SERVER as AGMSG_SERVER, TEAM as AGMSG_TEAM, agmsg, agmsg_skill, page_line, records};
use super::tests::{
    ack, apply, binding, binding_with, chat, connect, count, crash_env, each_vfs, new_store, open, prepare, pulled, send,
    vfs_from_crash_env,
};
use super::{push, read_state, resync};

const MEMBER: &str = "018f3f7e-0000-7000-8000-000000000010";
const OTHER: &str = "018f3f7e-0000-7000-8000-000000000011";
const W1: &str = "550e8400-e29b-41d4-a716-446655440031";
const W2: &str = "550e8400-e29b-41d4-a716-446655440032";

fn request(expected: &str, floor: &str, current: &str) -> ResyncRequest {
    ResyncRequest { expected_transport_cursor: expected.into(), min_available_seq: floor.into(), current_seq: current.into() }
}

fn context(floor: &str, current: &str, members: &[(&str, &str)], local: &[&str]) -> ReadContext {
    ReadContext {
        min_available_seq: floor.into(),
        current_seq: current.into(),
        members: members.iter().map(|(id, name)| Member { member_id: (*id).into(), name: (*name).into() }).collect(),
        local_agents: local.iter().map(|a| (*a).into()).collect(),
    }
}

fn snapshot(floor: &str, current: &str, frontiers: &[(&str, &str)], exacts: &[(&str, &str)]) -> Snapshot {
    Snapshot {
        min_available_seq: floor.into(),
        current_seq: current.into(),
        frontiers: frontiers.iter().map(|(m, s)| Frontier { member_id: (*m).into(), server_seq: (*s).into() }).collect(),
        exacts: exacts.iter().map(|(m, w)| Exact { member_id: (*m).into(), wire_id: (*w).into() }).collect(),
    }
}

fn unread(path: &Path, agent: &str) -> Vec<String> {
    crate::unread(&open(path), "dev", agent, None).unwrap().into_iter().map(|m| m.body).collect()
}

/// Everything a store holds, as text: what "changed nothing" is checked against.
fn dump(path: &Path) -> String {
    let conn = connect(path);
    let mut out = String::new();
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for t in tables {
        let mut stmt = conn.prepare(&format!("SELECT * FROM \"{t}\"")).unwrap();
        let n = stmt.column_count();
        let rows: Vec<String> = stmt
            .query_map([], |r| Ok((0..n).map(|i| format!("{:?}", r.get_ref(i).unwrap())).collect::<Vec<_>>().join("|")))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        out.push_str(&format!("{t}: {rows:?}\n"));
    }
    out
}

/// Two messages to bob pulled at sequences 1 and 2; bob has read only the second.
fn two_pulled_second_read(path: &Path) {
    apply(
        path,
        "dev",
        vec![
            pulled(1, W1, "b1", Evaluated::Importable, chat("alice", "bob", "leave unread")),
            pulled(2, W2, "b2", Evaluated::Importable, chat("alice", "bob", "read out of order")),
        ],
        "2",
    );
    let conn = open(path);
    let second: String =
        conn.query_row("SELECT id FROM events WHERE type='message_sent' AND body='read out of order'", [], |r| r.get(0)).unwrap();
    crate::consume(&conn, "dev", "bob", u64::MAX, &[second]).unwrap();
}

#[test]
fn resync_status_creates_nothing_and_refuses_a_store_or_binding_that_never_synced() {
    let (_dir, path) = new_store();
    let before = dump(&path);
    assert_eq!(resync::status(&open(&path), &binding("dev"), "5").unwrap(), None);
    assert_eq!(dump(&path), before, "resync-status wrote to a store that never synced");

    send(&open(&path), "dev", "alice", "bob", "hi");
    prepare(&path, "dev", 10, true).unwrap();
    let before = dump(&path);
    let report = resync::status(&open(&path), &binding("dev"), "5").unwrap().unwrap();
    assert_eq!((report.transport_cursor.as_str(), report.audit.as_ref()), ("0", None));
    let other = binding_with("dev", super::tests::binding("dev").server_instance_id.as_str(), "0196f3a2-7c1e-7000-8000-0000000000ff");
    assert_eq!(resync::status(&open(&path), &other, "5").unwrap(), None, "another binding");
    assert_eq!(dump(&path), before, "resync-status changed the store");
}

#[test]
fn resync_records_one_immutable_gap_and_moves_only_the_transport_cursor() {
    let (_dir, path) = new_store();
    send(&open(&path), "dev", "alice", "bob", "local survives retention");
    let pushed = prepare(&path, "dev", 10, true).unwrap();
    let result = resync::resync(&open(&path), &binding("dev"), &request("0", "5", "7")).unwrap();
    assert_eq!(
        (
            result.audit.expected_transport_cursor.as_str(),
            result.audit.accepted_floor.as_str(),
            result.audit.gap_start.as_str(),
            result.audit.gap_end.as_str(),
            result.audit.reason.as_str()
        ),
        ("0", "5", "1", "5", "retention-gap-accepted")
    );
    let report = resync::status(&open(&path), &binding("dev"), "5").unwrap().unwrap();
    assert_eq!(report.transport_cursor, "5");
    assert_eq!(report.audit, Some(result.audit.clone()));
    assert_eq!(report.driver_generation, result.driver_generation);
    assert_eq!(resync::status(&open(&path), &binding("dev"), "6").unwrap().unwrap().audit, None, "another floor has no audit");
    // The local message and its reservation are untouched.
    assert_eq!(count(&path, "SELECT COUNT(*) FROM events WHERE body='local survives retention'"), 1);
    let wire: String = open(&path).query_row("SELECT wire_id FROM sync_messages WHERE direction='push'", [], |r| r.get(0)).unwrap();
    assert_eq!(wire, pushed[0].wire_id);

    // Repeating it, or a stale expected cursor, changes nothing.
    let before = dump(&path);
    assert!(resync::resync(&open(&path), &binding("dev"), &request("0", "5", "7")).is_err());
    assert!(resync::resync(&open(&path), &binding("dev"), &request("3", "9", "9")).is_err());
    assert_eq!(dump(&path), before);
    assert_eq!(count(&path, "SELECT COUNT(*) FROM sync_resync_audits"), 1);
    // From the new cursor, the next gap is its own audit.
    resync::resync(&open(&path), &binding("dev"), &request("5", "9", "9")).unwrap();
    assert_eq!(count(&path, "SELECT COUNT(*) FROM sync_resync_audits"), 2);
}

#[test]
fn prepare_exports_exact_reads_across_holes_and_apply_merges_the_frontier_separately() {
    let (_dir, path) = new_store();
    two_pulled_second_read(&path);
    let prepared = read_state::prepare(&open(&path), &binding("dev"), &context("0", "2", &[(MEMBER, "bob")], &["bob"])).unwrap();
    assert_eq!(prepared.frontiers, vec![Frontier { member_id: MEMBER.into(), server_seq: "0".into() }]);
    assert_eq!(prepared.exacts, vec![Exact { member_id: MEMBER.into(), wire_id: W2.into() }]);
    assert!(prepared.blocked.is_empty());
    assert_eq!(unread(&path, "bob"), ["leave unread"]);

    let applied = read_state::apply(&open(&path), &binding("dev"), &snapshot("0", "2", &[(MEMBER, "2")], &[])).unwrap();
    assert_eq!((applied.member_count, applied.min_available_seq.as_deref()), (1, Some("0")));
    assert!(unread(&path, "bob").is_empty(), "the remote frontier marked bob's first message read");
    let cursor: i64 = count(&path, "SELECT local_position FROM read_cursors WHERE team='dev' AND agent='bob'");
    assert_eq!(cursor, count(&path, "SELECT seq FROM sqlite_sequence WHERE name='events'"));
    assert_eq!(
        super::tests::count(&path, "SELECT CAST(transport_cursor AS INTEGER) FROM sync_bindings"),
        2,
        "read state never moves the transport cursor"
    );
    // Covered aliases are gone; the next prepare reports the merged frontier and no exact read.
    let again = read_state::prepare(&open(&path), &binding("dev"), &context("0", "2", &[(MEMBER, "bob")], &["bob"])).unwrap();
    assert_eq!(again.frontiers, vec![Frontier { member_id: MEMBER.into(), server_seq: "2".into() }]);
    assert!(again.exacts.is_empty());
}

#[test]
fn apply_max_merges_frontiers_and_unions_exact_reads() {
    let (_dir, path) = new_store();
    read_state::prepare(&open(&path), &binding("dev"), &context("0", "9", &[(MEMBER, "bob")], &["bob"])).unwrap();
    read_state::apply(&open(&path), &binding("dev"), &snapshot("0", "9", &[(MEMBER, "5")], &[(MEMBER, W1)])).unwrap();
    read_state::apply(&open(&path), &binding("dev"), &snapshot("0", "9", &[(MEMBER, "3")], &[(MEMBER, W2)])).unwrap();
    let seq: String = open(&path).query_row("SELECT remote_server_seq FROM sync_read_members", [], |r| r.get(0)).unwrap();
    assert_eq!(seq, "5", "a lower frontier does not move it back");
    let exact: Vec<String> = open(&path)
        .prepare("SELECT wire_id FROM sync_read_remote_exact ORDER BY wire_id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(exact, [W1, W2]);
    // A page's floor raises every member's floor and frontier.
    let r = read_state::apply(&open(&path), &binding("dev"), &snapshot("10", "12", &[], &[])).unwrap();
    assert_eq!(r.min_available_seq.as_deref(), Some("10"));
    let seq: String = open(&path).query_row("SELECT remote_server_seq FROM sync_read_members", [], |r| r.get(0)).unwrap();
    assert_eq!(seq, "10");
}

#[test]
fn a_page_naming_an_unknown_member_applies_nothing() {
    let (_dir, path) = new_store();
    two_pulled_second_read(&path);
    read_state::prepare(&open(&path), &binding("dev"), &context("0", "2", &[(MEMBER, "bob")], &["bob"])).unwrap();
    let before = dump(&path);
    let page = snapshot("0", "2", &[(MEMBER, "2")], &[(OTHER, W1)]);
    assert!(read_state::apply(&open(&path), &binding("dev"), &page).is_err());
    assert_eq!(dump(&path), before, "a refused page left changes");
    assert_eq!(unread(&path, "bob"), ["leave unread"]);
}

#[test]
fn a_name_without_local_authority_or_renamed_on_one_side_is_blocked() {
    let (_dir, path) = new_store();
    send(&open(&path), "dev", "alice", "bob", "local bob authority");
    // No local agent bob: blocked from the start.
    let p = read_state::prepare(&open(&path), &binding("dev"), &context("0", "0", &[(MEMBER, "bob")], &["alice"])).unwrap();
    assert_eq!(p.blocked.iter().map(|b| b.reason).collect::<Vec<_>>(), [BlockedReason::MemberNameMismatch]);
    assert!(p.frontiers.is_empty() && p.exacts.is_empty());
    // Known locally: usable; renamed remotely only: blocked again.
    let p = read_state::prepare(&open(&path), &binding("dev"), &context("0", "0", &[(MEMBER, "bob")], &["bob"])).unwrap();
    assert!(p.blocked.is_empty() && p.frontiers.len() == 1);
    let p = read_state::prepare(&open(&path), &binding("dev"), &context("0", "0", &[(MEMBER, "robert")], &["bob"])).unwrap();
    assert_eq!(p.blocked.iter().map(|b| b.reason).collect::<Vec<_>>(), [BlockedReason::MemberNameMismatch]);
    assert!(p.frontiers.is_empty());
    // A name given twice is refused, changing nothing.
    let before = dump(&path);
    assert!(read_state::prepare(&open(&path), &binding("dev"), &context("0", "0", &[(MEMBER, "bob"), (OTHER, "bob")], &["bob"])).is_err());
    assert_eq!(dump(&path), before);
}

#[test]
fn a_limit_block_holds_until_the_operator_lifts_it() {
    let (_dir, path) = new_store();
    send(&open(&path), "dev", "alice", "bob", "local bob authority");
    let ctx = context("0", "0", &[(MEMBER, "bob")], &["bob"]);
    read_state::prepare(&open(&path), &binding("dev"), &ctx).unwrap();
    assert!(read_state::block(&open(&path), &binding("dev"), OTHER).is_err(), "an unknown member");
    assert!(read_state::unblock(&open(&path), &binding("dev"), OTHER).is_err(), "an unknown member");
    read_state::block(&open(&path), &binding("dev"), MEMBER).unwrap();
    let reason: String = open(&path).query_row("SELECT blocked_reason FROM sync_read_members", [], |r| r.get(0)).unwrap();
    assert_eq!(reason, "read-state-limit-exceeded");
    for _ in 0..2 {
        let p = read_state::prepare(&open(&path), &binding("dev"), &ctx).unwrap();
        assert_eq!(p.blocked.iter().map(|b| b.reason).collect::<Vec<_>>(), [BlockedReason::ReadStateLimitExceeded]);
        assert!(p.frontiers.is_empty());
    }
    read_state::unblock(&open(&path), &binding("dev"), MEMBER).unwrap();
    let p = read_state::prepare(&open(&path), &binding("dev"), &ctx).unwrap();
    assert!(p.blocked.is_empty());
    assert_eq!(p.frontiers.len(), 1);
}

#[test]
fn a_pushed_message_is_marked_read_by_its_remote_recipients_frontier() {
    let (_dir, path) = new_store();
    send(&open(&path), "dev", "alice", "bob", "pushed to bob");
    let c = prepare(&path, "dev", 10, true).unwrap();
    push::reconcile(&open(&path), &binding("dev"), &[ack(&c[0], 4)]).unwrap();
    read_state::prepare(&open(&path), &binding("dev"), &context("0", "4", &[(MEMBER, "bob")], &["bob"])).unwrap();
    assert_eq!(unread(&path, "bob"), ["pushed to bob"]);
    read_state::apply(&open(&path), &binding("dev"), &snapshot("0", "4", &[(MEMBER, "3")], &[])).unwrap();
    assert_eq!(unread(&path, "bob"), ["pushed to bob"], "seq 4 is beyond the frontier");
    read_state::apply(&open(&path), &binding("dev"), &snapshot("0", "4", &[], &[(MEMBER, &c[0].wire_id)])).unwrap();
    assert!(unread(&path, "bob").is_empty(), "read exactly");
}

/// agmsg's bash driver and this one take turns on one store: the same read state derived, and each
/// sees the other's resync audit and merged frontier.
#[test]
fn read_state_and_resync_interoperate_with_agmsgs_bash_driver() {
    let dir = tempfile::tempdir().unwrap();
    let Some(skill) = agmsg_skill(dir.path()) else { return };
    let b = binding_with("demo", AGMSG_SERVER, AGMSG_TEAM);
    let page = format!(
        "{}\n{}\n{{\"type\":\"sync_pull_cursor\",\"next_after\":\"2\"}}\n",
        page_line(1, W1, "importable", Some("leave unread")),
        page_line(2, W2, "importable", Some("read out of order"))
    );
    let ctx_line = format!(
        r#"{{"type":"sync_read_context","min_available_seq":"0","current_seq":"2","local_agents":["bob"],"members":[{{"member_id":"{MEMBER}","name":"bob"}}]}}"#
    );
    // agmsg pulls, bob reads the second message, agmsg prepares its read state.
    agmsg(&skill, "storage_sync_apply_pull demo $S $T 1 >/dev/null", &page);
    let theirs = agmsg(
        &skill,
        "id=$(storage_history demo | jq -r 'select(.body==\"read out of order\")|.id'); \
         storage_read_cursor_consume demo bob \"$(storage_watch_tip demo:bob)\" \"$id\" >/dev/null; \
         storage_sync_prepare_read_state demo $S $T 1; echo; agmsg_db_path demo",
        &format!("{ctx_line}\n"),
    );
    let db = std::path::PathBuf::from(theirs.lines().last().unwrap());
    let ctx = context("0", "2", &[(MEMBER, "bob")], &["bob"]);
    let ours = read_state::prepare(&open(&db), &b, &ctx).unwrap();
    let their_frontiers: Vec<Frontier> = records(&theirs, "sync_read_frontier")
        .iter()
        .map(|v| Frontier { member_id: v["member_id"].as_str().unwrap().into(), server_seq: v["server_seq"].as_str().unwrap().into() })
        .collect();
    let their_exacts: Vec<Exact> = records(&theirs, "sync_read_exact")
        .iter()
        .map(|v| Exact { member_id: v["member_id"].as_str().unwrap().into(), wire_id: v["wire_id"].as_str().unwrap().into() })
        .collect();
    assert_eq!(ours.frontiers, their_frontiers);
    assert_eq!(ours.exacts, their_exacts);
    assert_eq!(ours.exacts, vec![Exact { member_id: MEMBER.into(), wire_id: W2.into() }]);

    // We apply the remote frontier and accept a retention gap; agmsg sees both.
    read_state::apply(&open(&db), &b, &snapshot("0", "2", &[(MEMBER, "2")], &[])).unwrap();
    resync::resync(&open(&db), &b, &request("2", "5", "7")).unwrap();
    let theirs = agmsg(
        &skill,
        "storage_list_unread demo bob | jq -s length; storage_sync_resync_status demo $S $T 1 5; \
         storage_sync_prepare_read_state demo $S $T 1",
        &format!("{ctx_line}\n"),
    );
    assert_eq!(theirs.lines().next(), Some("0"), "agmsg still lists bob's message unread: {theirs}");
    let status = &records(&theirs, "sync_resync_status")[0];
    assert_eq!(status["transport_cursor"], "5");
    assert_eq!(status["audit"]["gap_start"], "3");
    assert_eq!(records(&theirs, "sync_read_frontier")[0]["server_seq"], "2");
    // And agmsg's block is ours to lift.
    agmsg(
        &skill,
        "storage_sync_block_read_state demo $S $T 1 >/dev/null",
        &format!(r#"{{"type":"sync_read_block","member_id":"{MEMBER}","reason":"read-state-limit-exceeded"}}"#),
    );
    let p = read_state::prepare(&open(&db), &b, &ctx).unwrap();
    assert_eq!(p.blocked.iter().map(|b| b.reason).collect::<Vec<_>>(), [BlockedReason::ReadStateLimitExceeded]);
    read_state::unblock(&open(&db), &b, MEMBER).unwrap();
    let theirs = agmsg(&skill, "storage_sync_prepare_read_state demo $S $T 1", &format!("{ctx_line}\n"));
    assert!(records(&theirs, "sync_read_blocked").is_empty(), "{theirs}");
}

// ------------------------------------------------------------------------------------------------
// Crashes: a child process of this test binary aborts inside an op's transaction (no unwinding, no
// rollback: a kill -9); the parent checks that the store is exactly as before.

fn crash(path: &Path, op: &str, point: &str) {
    let out = crash_env(&mut Command::new(std::env::current_exe().unwrap()))
        .args(["--exact", "sync::tests_stage2::stage2_crash_child", "--nocapture", "--test-threads=1"])
        .env("AGMSG_STAGE2_CRASH_DB", path)
        .env("AGMSG_STAGE2_CRASH_OP", op)
        .env("AGMSG_SYNC_CRASH_AT", point)
        .output()
        .unwrap();
    assert!(
        out.status.code().is_none(),
        "the child should have died at {point}: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout)
    );
}

/// The child side of [`crash`]; without its variables (a normal run) it does nothing.
#[test]
fn stage2_crash_child() {
    let Ok(db) = std::env::var("AGMSG_STAGE2_CRASH_DB") else { return };
    let path = PathBuf::from(db);
    vfs_from_crash_env();
    let b = binding("dev");
    let _ = match std::env::var("AGMSG_STAGE2_CRASH_OP").unwrap().as_str() {
        "prepare" => read_state::prepare(&open(&path), &b, &context("0", "2", &[(MEMBER, "bob")], &["bob"])).map(|_| ()),
        "apply" => read_state::apply(&open(&path), &b, &snapshot("1", "2", &[(MEMBER, "2")], &[(MEMBER, W1)])).map(|_| ()),
        "resync" => resync::resync(&open(&path), &b, &request("2", "5", "7")).map(|_| ()),
        other => panic!("unknown op {other}"),
    };
    panic!("the op finished without reaching its crash point");
}

#[test]
fn a_kill_inside_prepare_apply_or_resync_leaves_the_store_as_it_was() {
    each_vfs(a_kill_inside_prepare_apply_or_resync_leaves_the_store_as_it_was_once);
}

fn a_kill_inside_prepare_apply_or_resync_leaves_the_store_as_it_was_once() {
    let (_dir, path) = new_store();
    two_pulled_second_read(&path);
    let before = dump(&path);
    crash(&path, "prepare", "read-state:prepare-before-commit");
    assert_eq!(dump(&path), before, "prepare");
    read_state::prepare(&open(&path), &binding("dev"), &context("0", "2", &[(MEMBER, "bob")], &["bob"])).unwrap();
    for (op, point) in [("apply", "read-state:apply-before-commit"), ("resync", "resync:before-commit")] {
        let before = dump(&path);
        crash(&path, op, point);
        assert_eq!(dump(&path), before, "{op}");
    }
    assert_eq!(unread(&path, "bob"), ["leave unread"]);
    // And the same ops, uninterrupted, do apply.
    read_state::apply(&open(&path), &binding("dev"), &snapshot("1", "2", &[(MEMBER, "2")], &[])).unwrap();
    assert!(unread(&path, "bob").is_empty());
    resync::resync(&open(&path), &binding("dev"), &request("2", "5", "7")).unwrap();
}
