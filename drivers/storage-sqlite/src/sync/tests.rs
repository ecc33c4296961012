//! The sync ops on a real `messages.db` (native SQLite, the default VFS), including their crash
//! boundaries: a crash test re-runs this test binary as a child that aborts (no unwinding, no rollback,
//! as a kill or a trapped instance) at a named point, then checks what the store holds. The crash tests
//! run twice: through SQLite's default VFS, and through the component's own (`agmsg-host-locks` over
//! `unix-none`, opened as the component opens it, in PERSIST journal mode), so that the kill also lands
//! in that VFS's locking and the next connection's hot-journal rollback goes through it.

use std::path::{Path, PathBuf};
use std::process::Command;

use agmsg_guest_sdk::ids::{new_id, now_utc};
use agmsg_guest_sdk::storage::{
    AgeProfile, Binding, Chat, Disposition, Envelope, Evaluated, Message, OutcomeStatus, PageKey, PrepareRequest, Projection, PullMessage,
    PushAck, PushCandidate, ReprocessScope, RosterKind, SyncPages, WriteProfile,
};
use rusqlite::{Connection, OpenFlags};

use super::push::{SealRequest, seal_timestamp};
use super::{SyncError, new_uuid4, pull, push};

const SERVER: &str = "0196f3a2-7c1e-7000-8000-000000000001";
const REMOTE: &str = "0196f3a2-7c1e-7000-8000-0000000000a2";

pub(super) fn binding(team: &str) -> Binding {
    binding_with(team, SERVER, REMOTE)
}

pub(super) fn binding_with(team: &str, server: &str, remote: &str) -> Binding {
    Binding { local_team: team.into(), server_instance_id: server.into(), remote_team_id: remote.into(), protocol_version: "1".into() }
}

/// A candidate's envelope as agmsg prints it.
pub(super) fn envelope_of(c: &PushCandidate) -> serde_json::Value {
    serde_json::json!({"v": c.envelope.v, "cipher": c.envelope.cipher, "key_id": c.envelope.key_id, "blob": c.envelope.blob})
}

/// agmsg's `sync_pull_message` line as the typed record (what the host's parser makes of it).
pub(super) fn pull_message_from_json(v: &serde_json::Value) -> PullMessage {
    let text = |v: &serde_json::Value| v.as_str().map(str::to_owned);
    let status = match v["status"].as_str().unwrap() {
        "importable" => Evaluated::Importable,
        "pending_key" => Evaluated::PendingKey,
        "malformed" => Evaluated::Malformed,
        other => panic!("{other}"),
    };
    let p = &v["projection"];
    PullMessage {
        server_seq: text(&v["server_seq"]).unwrap(),
        wire_id: text(&v["id"]).unwrap(),
        server_received_at: text(&v["server_received_at"]).unwrap(),
        envelope: Envelope {
            v: v["envelope"]["v"].as_u64().unwrap() as u32,
            cipher: text(&v["envelope"]["cipher"]).unwrap(),
            key_id: text(&v["envelope"]["key_id"]),
            blob: text(&v["envelope"]["blob"]).unwrap(),
        },
        status,
        reason: text(&v["reason"]),
        policy_revision: text(&v["policy_revision"]),
        local_security_revision: text(&v["local_security_revision"]),
        projection: p.is_object().then(|| {
            Projection::Message(Chat {
                body: text(&p["body"]).unwrap(),
                created_at: text(&p["created_at"]).unwrap(),
                from_agent: text(&p["from_agent"]).unwrap(),
                to_agent: text(&p["to_agent"]).unwrap(),
            })
        }),
    }
}

/// Which VFS this thread's connections go through.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Vfs {
    /// SQLite's default (`unix`: POSIX locks, DELETE journal mode).
    Default,
    /// The component's (`crate::vfs`: the host's OFD locks over `unix-none`, PERSIST journal mode).
    Component,
}

thread_local! {
    static VFS: std::cell::Cell<Vfs> = const { std::cell::Cell::new(Vfs::Default) };
}

/// Run `test` once through each VFS (each test runs on a thread of its own).
pub(super) fn each_vfs(test: fn()) {
    for vfs in [Vfs::Default, Vfs::Component] {
        VFS.set(vfs);
        test();
    }
    VFS.set(Vfs::Default);
}

/// The VFS a crash child runs its op through: its parent's, passed as `AGMSG_SYNC_CRASH_VFS`.
pub(super) fn crash_env(cmd: &mut Command) -> &mut Command {
    cmd.env("AGMSG_SYNC_CRASH_VFS", format!("{:?}", VFS.get()))
}

/// In a crash child: take the parent's VFS (see [`crash_env`]).
pub(super) fn vfs_from_crash_env() {
    if std::env::var("AGMSG_SYNC_CRASH_VFS").is_ok_and(|v| v == "Component") {
        VFS.set(Vfs::Component);
    }
}

/// A connection through this thread's VFS, nothing run on it yet (no schema check).
pub(super) fn connect(path: &Path) -> Connection {
    match VFS.get() {
        Vfs::Default => Connection::open(path).unwrap(),
        Vfs::Component => {
            let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
            let conn = crate::open_connection_at(path.to_str().unwrap(), flags, false).unwrap();
            // As `Session::set_journal_mode` does in the component.
            assert_eq!(conn.query_row("PRAGMA journal_mode=PERSIST", [], |r| r.get::<_, String>(0)).unwrap(), "persist");
            conn
        }
    }
}

pub(super) fn open(path: &Path) -> Connection {
    let conn = connect(path);
    conn.busy_timeout(std::time::Duration::from_secs(5)).unwrap();
    crate::schema::ensure(&conn).unwrap();
    conn
}

pub(super) fn new_store() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("messages.db");
    drop(open(&path));
    (dir, path)
}

pub(super) fn send(conn: &Connection, team: &str, from: &str, to: &str, body: &str) -> String {
    let m = Message { id: new_id(), team: team.into(), from: from.into(), to: to.into(), body: body.into(), at: now_utc() };
    crate::insert_message(conn, &m).unwrap();
    m.id
}

/// A stand-in sealer: a fresh random nonce in every blob, so a resealed reservation could never come
/// back byte-identical. With `AGMSG_SYNC_TEST_WIRE_LOG` set, it logs every wire id it seals (the ids a
/// crash may have kept private).
pub(super) fn test_sealer(r: &SealRequest<'_>) -> Result<String, String> {
    if let Ok(log) = std::env::var("AGMSG_SYNC_TEST_WIRE_LOG") {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
        writeln!(f, "{}", r.wire_id).unwrap();
        f.sync_all().unwrap();
    }
    if r.body == "unsealable" {
        return Err("refused by the test sealer".into());
    }
    Ok(format!("sealed:{}:{}:{}:{}", r.wire_id, r.body.len(), r.created_at, new_uuid4()))
}

fn none_request(allow_new: bool) -> PrepareRequest {
    PrepareRequest { envelope_v: 1, profile: WriteProfile::None, max_blob_bytes: 1 << 20, allow_new }
}

pub(super) fn drain<T>(pages: &mut dyn SyncPages<T>, max_bytes: u32) -> Vec<T> {
    let mut all = Vec::new();
    loop {
        let page = pages.next_page(max_bytes).unwrap();
        if page.is_empty() {
            return all;
        }
        all.extend(page);
    }
}

pub(super) fn prepare(path: &Path, team: &str, limit: u32, allow_new: bool) -> Result<Vec<PushCandidate>, SyncError> {
    let conn = open(path);
    let (state, mut pages) = push::prepare(conn, &binding(team), limit, &none_request(allow_new), &mut test_sealer)?;
    assert!(agmsg_guest_sdk::storage::is_lower_uuid(&state.driver_generation, 4));
    Ok(drain(&mut pages, 1 << 20))
}

pub(super) fn ack(c: &PushCandidate, seq: u64) -> PushAck {
    PushAck { local_position: c.local_position, wire_id: c.wire_id.clone(), server_seq: seq.to_string(), disposition: Disposition::Stored }
}

pub(super) fn count(path: &Path, sql: &str) -> i64 {
    open(path).query_row(sql, [], |r| r.get(0)).unwrap()
}

fn push_cursor(path: &Path) -> i64 {
    count(path, "SELECT push_cursor FROM sync_bindings")
}

fn transport_cursor(path: &Path) -> String {
    open(path).query_row("SELECT transport_cursor FROM sync_bindings", [], |r| r.get(0)).unwrap()
}

fn envelope(blob: &str) -> Envelope {
    Envelope { v: 1, cipher: "none".into(), key_id: None, blob: blob.into() }
}

pub(super) fn pulled(seq: u64, wire: &str, blob: &str, status: Evaluated, projection: Option<Projection>) -> PullMessage {
    PullMessage {
        server_seq: seq.to_string(),
        wire_id: wire.into(),
        server_received_at: "2026-08-01T10:00:00.000Z".into(),
        envelope: envelope(blob),
        status,
        reason: None,
        policy_revision: None,
        local_security_revision: None,
        projection,
    }
}

pub(super) fn chat(from: &str, to: &str, body: &str) -> Option<Projection> {
    Some(Projection::Message(Chat {
        body: body.into(),
        created_at: "2026-08-01T09:59:59.000000Z".into(),
        from_agent: from.into(),
        to_agent: to.into(),
    }))
}

pub(super) fn apply(path: &Path, team: &str, messages: Vec<PullMessage>, next_after: &str) -> agmsg_guest_sdk::storage::ApplyResult {
    let mut page = pull::begin(open(path), &binding(team)).unwrap();
    page.push_messages(&messages).unwrap();
    page.commit_page(next_after).unwrap()
}

#[test]
fn the_component_sealer_makes_agmsgs_none_envelope_and_refuses_what_agmsg_refuses() {
    let (_dir, path) = new_store();
    send(&open(&path), "dev", "alice", "bob", "hi");
    let (_, mut pages) = push::prepare(open(&path), &binding("dev"), 10, &none_request(true), &mut push::seal_with_crate).unwrap();
    let c = drain(&mut pages, 1 << 20);
    drop(pages);
    let at: String = open(&path).query_row("SELECT at FROM events", [], |r| r.get(0)).unwrap();
    let expected = agmsg_sync_seal::seal(
        &agmsg_sync_seal::Message { body: "hi", created_at: &seal_timestamp(&at), from_agent: "alice", to_agent: "bob" },
        &agmsg_sync_seal::SealRequest::none(REMOTE, &c[0].wire_id),
    )
    .unwrap();
    assert_eq!(c[0].envelope.blob, expected.blob);
    assert!(seal_timestamp(&at).ends_with(".000000Z"), "{at}");
    // A name agmsg's projection refuses: the message stays unreserved and prepare fails (13).
    send(&open(&path), "dev", "-dash", "bob", "bad sender");
    let err = push::prepare(open(&path), &binding("dev"), 10, &none_request(true), &mut push::seal_with_crate).err().expect("refused");
    assert!(matches!(&err, SyncError::Runtime(m) if m.contains("could not be sealed")), "{err}");
    assert_eq!(count(&path, "SELECT COUNT(*) FROM sync_messages"), 1);
}

#[test]
fn seal_timestamps_gain_agmsgs_six_digit_fraction() {
    assert_eq!(seal_timestamp("2026-08-01T10:00:00Z"), "2026-08-01T10:00:00.000000Z");
    assert_eq!(seal_timestamp("2026-08-01T10:00:00.123456Z"), "2026-08-01T10:00:00.123456Z");
    assert_eq!(seal_timestamp("yesterday"), "yesterday");
}

#[test]
fn the_sync_tables_are_agmsgs_and_the_generation_is_made_once() {
    let (_dir, path) = new_store();
    prepare(&path, "dev", 10, true).unwrap();
    let conn = open(&path);
    let columns = |table: &str| -> Vec<String> {
        conn.prepare(&format!("SELECT name FROM pragma_table_info('{table}') ORDER BY cid"))
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    };
    assert_eq!(
        columns("sync_messages"),
        [
            "local_team",
            "server_instance_id",
            "remote_team_id",
            "protocol_version",
            "driver_generation",
            "local_position",
            "local_id",
            "wire_id",
            "envelope_v",
            "cipher",
            "key_id",
            "blob",
            "server_seq",
            "direction"
        ]
    );
    assert_eq!(columns("sync_bindings").len(), 7);
    assert!(columns("sync_read_members").contains(&"remote_agent".to_string()));
    let generation: String = conn.query_row("SELECT generation FROM sync_store_metadata", [], |r| r.get(0)).unwrap();
    assert!(agmsg_guest_sdk::storage::is_lower_uuid(&generation, 4), "{generation}");
    drop(conn);
    prepare(&path, "dev", 10, true).unwrap();
    assert_eq!(count(&path, "SELECT COUNT(*) FROM sync_store_metadata"), 1);
    let again: String = open(&path).query_row("SELECT generation FROM sync_store_metadata", [], |r| r.get(0)).unwrap();
    assert_eq!(again, generation);
}

#[test]
fn prepare_reserves_in_local_order_and_answers_byte_stable_until_reconcile() {
    let (_dir, path) = new_store();
    let conn = open(&path);
    let ids: Vec<String> = (0..3).map(|i| send(&conn, "dev", "alice", "bob", &format!("hello {i}"))).collect();
    send(&conn, "ops", "carol", "dave", "another team");
    drop(conn);

    let first = prepare(&path, "dev", 10, true).unwrap();
    assert_eq!(first.iter().map(|c| c.local_id.clone()).collect::<Vec<_>>(), ids);
    assert!(first.windows(2).all(|w| w[0].local_position < w[1].local_position));
    for c in &first {
        assert!(agmsg_guest_sdk::storage::is_lower_uuid(&c.wire_id, 4), "{}", c.wire_id);
        assert_eq!((c.envelope.v, c.envelope.cipher.as_str(), c.envelope.key_id.as_deref()), (1, "none", None));
        assert!(c.envelope.blob.starts_with(&format!("sealed:{}:", c.wire_id)));
    }
    // Re-entrant: the same reservations, byte for byte (the sealer's nonce would show a reseal), and
    // nothing is sealed again.
    assert_eq!(prepare(&path, "dev", 10, true).unwrap(), first);
    let mut seals = 0;
    let mut counting = |r: &SealRequest<'_>| {
        seals += 1;
        test_sealer(r)
    };
    let (_, mut pages) = push::prepare(open(&path), &binding("dev"), 10, &none_request(true), &mut counting).unwrap();
    assert_eq!(drain(&mut pages, 1 << 20), first);
    drop(pages);
    assert_eq!(seals, 0, "a reservation is never sealed twice");
    // allow_new=false reserves nothing new but still answers what exists.
    send(&open(&path), "dev", "alice", "bob", "later");
    assert_eq!(prepare(&path, "dev", 10, false).unwrap(), first);
    assert_eq!(count(&path, "SELECT COUNT(*) FROM sync_messages"), 3);
    // The limit bounds both the new reservations and the answer.
    assert_eq!(prepare(&path, "dev", 2, true).unwrap(), first[..2]);
    assert_eq!(prepare(&path, "dev", 10, true).unwrap().len(), 4);
}

#[test]
fn pages_respect_the_byte_budget_but_always_make_progress() {
    let (_dir, path) = new_store();
    let conn = open(&path);
    for i in 0..5 {
        send(&conn, "dev", "alice", "bob", &"x".repeat(100 * (i + 1)));
    }
    drop(conn);
    prepare(&path, "dev", 10, true).unwrap();
    let (_, mut pages) = push::prepare(open(&path), &binding("dev"), 10, &none_request(true), &mut test_sealer).unwrap();
    let mut seen = 0;
    loop {
        let page = pages.next_page(150).unwrap();
        if page.is_empty() {
            break;
        }
        let bytes: usize = page.iter().map(|c| c.envelope.blob.len()).sum();
        assert!(page.len() == 1 || bytes <= 150, "{} candidates, {bytes} bytes", page.len());
        seen += page.len();
    }
    assert_eq!(seen, 5);
}

#[test]
fn a_message_that_cannot_be_sealed_stays_unreserved_and_the_rest_commit() {
    let (_dir, path) = new_store();
    let conn = open(&path);
    send(&conn, "dev", "alice", "bob", "one");
    send(&conn, "dev", "alice", "bob", "unsealable");
    send(&conn, "dev", "alice", "bob", "three");
    drop(conn);
    let err = prepare(&path, "dev", 10, true).unwrap_err();
    assert!(matches!(&err, SyncError::Runtime(m) if m.contains("could not be sealed")), "{err}");
    assert_eq!(count(&path, "SELECT COUNT(*) FROM sync_messages"), 2);
}

#[test]
fn reconcile_advances_only_the_contiguous_acknowledged_prefix() {
    let (_dir, path) = new_store();
    let conn = open(&path);
    for i in 0..3 {
        send(&conn, "dev", "alice", "bob", &format!("m{i}"));
    }
    drop(conn);
    let c = prepare(&path, "dev", 10, true).unwrap();
    let cursor = push::reconcile(&open(&path), &binding("dev"), &[ack(&c[0], 11), ack(&c[2], 13)]).unwrap();
    assert_eq!(cursor, c[0].local_position, "the gap at the second message holds the cursor");
    // The acknowledged third is no longer a candidate; the second still is.
    assert_eq!(prepare(&path, "dev", 10, true).unwrap(), [c[1].clone()]);
    // A repeated ack of the same sequence is idempotent.
    let cursor = push::reconcile(&open(&path), &binding("dev"), &[ack(&c[1], 12), ack(&c[0], 11)]).unwrap();
    assert_eq!(cursor, c[2].local_position);
    assert_eq!(push_cursor(&path), c[2].local_position);
    assert!(prepare(&path, "dev", 10, true).unwrap().is_empty());
}

#[test]
fn reconcile_refuses_the_whole_batch_with_corrupt_state() {
    let (_dir, path) = new_store();
    let conn = open(&path);
    for i in 0..2 {
        send(&conn, "dev", "alice", "bob", &format!("m{i}"));
    }
    drop(conn);
    let c = prepare(&path, "dev", 10, true).unwrap();
    let before = (push_cursor(&path), count(&path, "SELECT COUNT(*) FROM sync_messages WHERE server_seq IS NOT NULL"));
    let mut wrong_wire = ack(&c[1], 12);
    wrong_wire.wire_id = new_uuid4();
    let mut wrong_position = ack(&c[1], 12);
    wrong_position.local_position += 1000;
    let duplicate_seq = ack(&c[1], 11);
    for bad in [wrong_wire, wrong_position, duplicate_seq] {
        let err = push::reconcile(&open(&path), &binding("dev"), &[ack(&c[0], 11), bad]).unwrap_err();
        assert!(matches!(err, SyncError::Corrupt(_)), "{err}");
        let after = (push_cursor(&path), count(&path, "SELECT COUNT(*) FROM sync_messages WHERE server_seq IS NOT NULL"));
        assert_eq!(after, before, "nothing of the batch is recorded");
    }
    // Once recorded, a sequence cannot change.
    push::reconcile(&open(&path), &binding("dev"), &[ack(&c[0], 11)]).unwrap();
    let err = push::reconcile(&open(&path), &binding("dev"), &[ack(&c[0], 99)]).unwrap_err();
    assert!(matches!(err, SyncError::Corrupt(_)), "{err}");
}

#[test]
fn apply_pull_quarantines_imports_once_and_moves_the_cursor() {
    let (_dir, path) = new_store();
    let (a, b, r) = (new_uuid4(), new_uuid4(), new_uuid4());
    let page = vec![
        pulled(1, &a, "blob-a", Evaluated::Importable, chat("carol", "bob", "from afar")),
        pulled(2, &b, "blob-b", Evaluated::PendingKey, None),
        pulled(3, &r, "blob-r", Evaluated::Importable, Some(Projection::Roster(RosterKind::MemberJoined))),
    ];
    let result = apply(&path, "dev", page.clone(), "3");
    assert_eq!(result.transport_cursor, "3");
    assert_eq!(result.corrupt_count, 0);
    let statuses: Vec<(String, OutcomeStatus)> = result.outcomes.iter().map(|o| (o.wire_id.clone(), o.status)).collect();
    assert_eq!(
        statuses,
        [(a.clone(), OutcomeStatus::Imported), (b.clone(), OutcomeStatus::PendingKey), (r.clone(), OutcomeStatus::Imported)]
    );
    assert_eq!(transport_cursor(&path), "3");
    let conn = open(&path);
    let (to, body, legacy): (String, String, i64) = conn
        .query_row("SELECT e.to_agent, e.body, e.legacy_id FROM events e WHERE e.type='message_sent'", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    assert_eq!((to.as_str(), body.as_str()), ("bob", "from afar"));
    let mirrored: String = conn.query_row("SELECT body FROM messages WHERE id=?1", [legacy], |r| r.get(0)).unwrap();
    assert_eq!(mirrored, "from afar", "the legacy mirror, linked by legacy_id");
    assert_eq!(count(&path, "SELECT COUNT(*) FROM sync_messages WHERE direction='pull'"), 1);
    assert_eq!(count(&path, "SELECT COUNT(*) FROM sync_quarantine"), 3);
    // The roster record is acknowledged, never a message; the imported one is unread for bob.
    assert_eq!(count(&path, "SELECT COUNT(*) FROM events WHERE type='message_sent'"), 1);
    drop(conn);

    // Replayed (a retry after a lost answer): nothing is imported twice.
    let again = apply(&path, "dev", page, "3");
    assert_eq!(again.outcomes, result.outcomes);
    assert_eq!(count(&path, "SELECT COUNT(*) FROM events WHERE type='message_sent'"), 1);
    assert_eq!(count(&path, "SELECT COUNT(*) FROM messages"), 1);

    // The key arrives: the same envelope, now importable, is imported once.
    let later = apply(&path, "dev", vec![pulled(2, &b, "blob-b", Evaluated::Importable, chat("carol", "bob", "late"))], "3");
    assert_eq!(later.outcomes[0].status, OutcomeStatus::Imported);
    assert_eq!(count(&path, "SELECT COUNT(*) FROM events WHERE type='message_sent'"), 2);
}

#[test]
fn apply_pull_reconciles_the_echo_of_a_pushed_message() {
    let (_dir, path) = new_store();
    send(&open(&path), "dev", "alice", "bob", "mine");
    let c = prepare(&path, "dev", 10, true).unwrap();
    let echo = PullMessage {
        envelope: c[0].envelope.clone(),
        ..pulled(7, &c[0].wire_id, "", Evaluated::Importable, chat("alice", "bob", "mine"))
    };
    let result = apply(&path, "dev", vec![echo], "7");
    assert_eq!(result.outcomes[0].status, OutcomeStatus::Reconciled);
    assert_eq!(count(&path, "SELECT COUNT(*) FROM events WHERE type='message_sent'"), 1, "not imported again");
    let seq: String = open(&path).query_row("SELECT server_seq FROM sync_messages", [], |r| r.get(0)).unwrap();
    assert_eq!(seq, "7");
}

#[test]
fn apply_pull_records_conflicts_as_corrupt_state() {
    let (_dir, path) = new_store();
    let (a, b) = (new_uuid4(), new_uuid4());
    apply(&path, "dev", vec![pulled(5, &a, "blob-a", Evaluated::PendingKey, None)], "5");
    // Another wire id at a sequence the binding already maps.
    let result = apply(&path, "dev", vec![pulled(5, &b, "blob-b", Evaluated::Importable, chat("c", "bob", "x"))], "5");
    assert_eq!(result.corrupt_count, 1);
    assert_eq!(result.outcomes.len(), 1);
    assert_eq!((result.outcomes[0].wire_id.as_str(), result.outcomes[0].status), (b.as_str(), OutcomeStatus::CorruptState));
    // The same wire id with another envelope.
    let result = apply(&path, "dev", vec![pulled(5, &a, "tampered", Evaluated::Importable, chat("c", "bob", "y"))], "5");
    assert_eq!(result.outcomes[0].status, OutcomeStatus::CorruptState);
    assert_eq!(count(&path, "SELECT COUNT(*) FROM events WHERE type='message_sent'"), 0, "nothing conflicting is imported");
}

#[test]
fn a_pull_page_dropped_uncommitted_leaves_nothing() {
    let (_dir, path) = new_store();
    let mut page = pull::begin(open(&path), &binding("dev")).unwrap();
    page.push_messages(&[pulled(1, &new_uuid4(), "b", Evaluated::Importable, chat("c", "bob", "x"))]).unwrap();
    drop(page);
    assert_eq!(count(&path, "SELECT COUNT(*) FROM sync_quarantine"), 0);
    assert_eq!(count(&path, "SELECT COUNT(*) FROM events"), 0);
    assert_eq!(transport_cursor(&path), "0");
}

#[test]
fn an_importable_message_without_projection_abandons_the_page() {
    let (_dir, path) = new_store();
    let mut page = pull::begin(open(&path), &binding("dev")).unwrap();
    page.push_messages(&[pulled(1, &new_uuid4(), "b", Evaluated::PendingKey, None)]).unwrap();
    assert!(page.push_messages(&[pulled(2, &new_uuid4(), "b", Evaluated::Importable, None)]).is_err());
    assert!(page.commit_page("2").is_err(), "an abandoned page cannot commit");
    drop(page);
    assert_eq!(count(&path, "SELECT COUNT(*) FROM sync_quarantine"), 0);
    assert_eq!(transport_cursor(&path), "0");
}

#[test]
fn reprocess_pages_by_sequence_and_wire_id_within_its_scope() {
    let (_dir, path) = new_store();
    let mut wires: Vec<String> = (0..6).map(|_| new_uuid4()).collect();
    wires.sort();
    let page = vec![
        pulled(9, &wires[0], "b0", Evaluated::PendingKey, None),
        pulled(10, &wires[1], "b1", Evaluated::Malformed, None),
        pulled(2, &wires[2], "b2", Evaluated::AuthenticationFailed, None),
        pulled(30, &wires[3], "b3", Evaluated::Importable, chat("c", "bob", "ok")),
        pulled(4, &wires[4], "b4", Evaluated::Malformed, None),
        pulled(100, &wires[5], "b5", Evaluated::PolicyViolation, None),
    ];
    apply(&path, "dev", page, "100");
    let walk = |scope: ReprocessScope, limit: u32| -> Vec<Vec<(String, Evaluated)>> {
        let mut pages = Vec::new();
        let mut after: Option<PageKey> = None;
        loop {
            let (page, mut candidates) = pull::reprocess(open(&path), &binding("dev"), limit, after.as_ref(), scope).unwrap();
            assert_eq!(page.state.transport_cursor, "100");
            let got: Vec<(String, Evaluated)> =
                drain(&mut candidates, 1 << 20).into_iter().map(|c| (c.server_seq, c.prior_status)).collect();
            assert!(got.len() <= limit as usize);
            pages.push(got);
            if !page.has_more {
                assert!(page.next_after.is_none());
                return pages;
            }
            after = page.next_after;
        }
    };
    let seq = |s: &str, e| (s.to_string(), e);
    assert_eq!(
        walk(ReprocessScope::Recoverable, 2),
        [
            vec![seq("2", Evaluated::AuthenticationFailed), seq("4", Evaluated::Malformed)],
            vec![seq("9", Evaluated::PendingKey), seq("10", Evaluated::Malformed)],
            vec![seq("100", Evaluated::PolicyViolation)],
        ],
        "numeric order, the imported one left out"
    );
    assert_eq!(
        walk(ReprocessScope::Malformed, 1),
        [vec![seq("4", Evaluated::Malformed)], vec![seq("10", Evaluated::Malformed)]],
        "the last page says has_more=false"
    );
    assert_eq!(transport_cursor(&path), "100", "reprocess never moves the transport cursor");
}

#[test]
fn legacy_history_is_projected_once_and_pushed_first() {
    let (_dir, path) = new_store();
    let conn = open(&path);
    conn.execute(
        "INSERT INTO messages(team, from_agent, to_agent, body, created_at) VALUES('dev','old','bob','legacy','2026-01-01T00:00:00Z')",
        [],
    )
    .unwrap();
    drop(conn);
    // A store agmsg's legacy reader filled: open it again so this driver classifies the legacy row.
    crate::legacy::create(&open(&path)).unwrap();
    send(&open(&path), "dev", "alice", "bob", "new");
    assert_eq!(crate::legacy::history(&open(&path), "dev", None, None).unwrap().len(), 1, "a legacy message");
    let c = prepare(&path, "dev", 10, true).unwrap();
    assert_eq!(c.len(), 2);
    assert_eq!(c[0].local_position, 1 - super::schema::LEGACY_SEQ_OFFSET);
    assert_eq!(c[0].local_id, "1");
    prepare(&path, "dev", 10, true).unwrap();
    assert_eq!(count(&path, "SELECT COUNT(*) FROM events WHERE seq<0"), 1, "projected once");
    // History shows the legacy message once, not from both the event log and the legacy table.
    let history = crate::legacy::history(&open(&path), "dev", None, None).unwrap();
    assert!(history.is_empty(), "{history:?}");
}

/// agmsg's `test_remote_sync.bats` "a projected legacy row is not listed twice (#689)": the projection
/// puts the row's event below every read cursor, so the legacy row must stay the unread copy, once.
#[test]
fn a_projected_legacy_row_stays_unread_once_until_read() {
    let (_dir, path) = new_store();
    open(&path)
        .execute(
            "INSERT INTO messages(team, from_agent, to_agent, body, created_at) \
             VALUES('dev','carol','bob','older than the event log','2026-01-01T00:00:00Z')",
            [],
        )
        .unwrap();
    crate::legacy::create(&open(&path)).unwrap();
    let unread = |path: &Path| -> Vec<(String, String)> {
        crate::unread(&open(path), "dev", "bob", None).unwrap().into_iter().map(|m| (m.id, m.body)).collect()
    };
    let before = unread(&path);
    assert_eq!(before, [("1".to_owned(), "older than the event log".to_owned())]);
    prepare(&path, "dev", 10, true).unwrap();
    assert_eq!(count(&path, "SELECT COUNT(*) FROM events WHERE seq<0 AND legacy_id=1"), 1, "projected");
    assert_eq!(unread(&path), before, "still unread, once, after the projection");
    assert!(crate::unread(&open(&path), "dev", "alice", None).unwrap().is_empty(), "bob's, no one else's");
    // Read by its id (what agmsg's inbox does): gone.
    let conn = open(&path);
    let tip = crate::high_water(&conn).unwrap();
    crate::consume(&conn, "dev", "bob", tip, &["1".to_owned()]).unwrap();
    drop(conn);
    assert_eq!(unread(&path), Vec::<(String, String)>::new());
}

// ------------------------------------------------------------------------------------------------
// Crashes: a child process aborts at a point; the parent checks what survived.

/// Run `op` in a child process of this test binary that aborts at `point` (its `hit`-th passage).
fn crash(path: &Path, op: &str, point: &str, hit: u32, extra: &[(&str, &str)]) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    crash_env(&mut cmd);
    cmd.args(["--exact", "sync::tests::crash_child", "--nocapture", "--test-threads=1"])
        .env("AGMSG_SYNC_CRASH_DB", path)
        .env("AGMSG_SYNC_CRASH_OP", op)
        .env("AGMSG_SYNC_CRASH_AT", point)
        .env("AGMSG_SYNC_CRASH_HIT", hit.to_string());
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(
        !out.status.success() && out.status.code().is_none(),
        "the child should have died at {point}: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout)
    );
}

/// The child side of [`crash`]; without its variables (a normal run) it does nothing.
#[test]
fn crash_child() {
    let Ok(db) = std::env::var("AGMSG_SYNC_CRASH_DB") else { return };
    let path = PathBuf::from(db);
    vfs_from_crash_env();
    match std::env::var("AGMSG_SYNC_CRASH_OP").unwrap().as_str() {
        "prepare" => {
            let _ = prepare(&path, "dev", 1000, true);
        }
        "reconcile" => {
            let c = prepare(&path, "dev", 1000, true).unwrap();
            let acks: Vec<PushAck> = c.iter().zip(1..).map(|(c, seq)| ack(c, seq)).collect();
            let _ = push::reconcile(&open(&path), &binding("dev"), &acks);
        }
        "apply" => {
            let page: Vec<PullMessage> = std::env::var("AGMSG_SYNC_TEST_WIRES")
                .unwrap()
                .split(',')
                .zip(1..)
                .map(|(w, seq)| pulled(seq, w, &format!("blob{seq}"), Evaluated::Importable, chat("c", "bob", "x")))
                .collect();
            let n = page.len().to_string();
            let mut stage = pull::begin(open(&path), &binding("dev")).unwrap();
            let _ = stage.push_messages(&page).and_then(|_| stage.commit_page(&n));
        }
        other => panic!("unknown op {other}"),
    }
    panic!("the op finished without reaching its crash point");
}

#[test]
fn a_crash_after_sealing_publishes_nothing_and_the_next_prepare_uses_new_wire_ids() {
    each_vfs(a_crash_after_sealing_publishes_nothing_and_the_next_prepare_uses_new_wire_ids_once);
}

fn a_crash_after_sealing_publishes_nothing_and_the_next_prepare_uses_new_wire_ids_once() {
    let (dir, path) = new_store();
    send(&open(&path), "dev", "alice", "bob", "secret");
    let log = dir.path().join("wires.log");
    crash(&path, "prepare", "prepare:after-seal", 1, &[("AGMSG_SYNC_TEST_WIRE_LOG", log.to_str().unwrap())]);
    let private = std::fs::read_to_string(&log).unwrap();
    let private: Vec<&str> = private.lines().collect();
    assert_eq!(private.len(), 1, "one message was sealed before the crash");
    assert_eq!(count(&path, "SELECT COUNT(*) FROM sync_messages"), 0, "nothing published");
    let c = prepare(&path, "dev", 10, true).unwrap();
    assert_eq!(c.len(), 1);
    assert_ne!(c[0].wire_id, private[0], "an abandoned private wire id is never published");
}

#[test]
fn a_crash_mid_page_keeps_the_committed_groups_byte_for_byte() {
    each_vfs(a_crash_mid_page_keeps_the_committed_groups_byte_for_byte_once);
}

fn a_crash_mid_page_keeps_the_committed_groups_byte_for_byte_once() {
    let (_dir, path) = new_store();
    let conn = open(&path);
    for i in 0..120 {
        send(&conn, "dev", "alice", "bob", &format!("m{i}"));
    }
    drop(conn);
    // The second group's commit never happens.
    crash(&path, "prepare", "prepare:before-group-commit", 2, &[]);
    assert_eq!(count(&path, "SELECT COUNT(*) FROM sync_messages"), 50);
    let kept: Vec<(i64, String, String)> = open(&path)
        .prepare("SELECT local_position, wire_id, blob FROM sync_messages ORDER BY local_position")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    let c = prepare(&path, "dev", 1000, true).unwrap();
    assert_eq!(c.len(), 120);
    let replayed: Vec<(i64, String, String)> =
        c[..50].iter().map(|c| (c.local_position, c.wire_id.clone(), c.envelope.blob.clone())).collect();
    assert_eq!(replayed, kept, "committed reservations are replayed, never resealed");
}

#[test]
fn a_crash_before_reconcile_commits_records_no_ack() {
    each_vfs(a_crash_before_reconcile_commits_records_no_ack_once);
}

fn a_crash_before_reconcile_commits_records_no_ack_once() {
    let (_dir, path) = new_store();
    let conn = open(&path);
    for i in 0..3 {
        send(&conn, "dev", "alice", "bob", &format!("m{i}"));
    }
    drop(conn);
    let before = prepare(&path, "dev", 1000, true).unwrap();
    crash(&path, "reconcile", "reconcile:before-commit", 1, &[]);
    assert_eq!(count(&path, "SELECT COUNT(*) FROM sync_messages WHERE server_seq IS NOT NULL"), 0);
    assert_eq!(push_cursor(&path), 0);
    assert_eq!(prepare(&path, "dev", 1000, true).unwrap(), before);
}

#[test]
fn a_crash_mid_pull_page_imports_nothing_and_keeps_the_cursor_then_a_retry_imports_once() {
    each_vfs(a_crash_mid_pull_page_imports_nothing_and_keeps_the_cursor_then_a_retry_imports_once_once);
}

fn a_crash_mid_pull_page_imports_nothing_and_keeps_the_cursor_then_a_retry_imports_once_once() {
    let (_dir, path) = new_store();
    let wires: Vec<String> = (0..3).map(|_| new_uuid4()).collect();
    let joined = wires.join(",");
    for (point, hit) in [("apply:after-message", 2), ("apply:before-commit", 1)] {
        crash(&path, "apply", point, hit, &[("AGMSG_SYNC_TEST_WIRES", &joined)]);
        assert_eq!(count(&path, "SELECT COUNT(*) FROM sync_quarantine"), 0, "{point}");
        assert_eq!(count(&path, "SELECT COUNT(*) FROM events"), 0, "{point}");
        assert_eq!(transport_cursor(&path), "0", "{point}");
    }
    let page: Vec<PullMessage> =
        wires.iter().zip(1..).map(|(w, seq)| pulled(seq, w, &format!("blob{seq}"), Evaluated::Importable, chat("c", "bob", "x"))).collect();
    apply(&path, "dev", page.clone(), "3");
    apply(&path, "dev", page, "3");
    assert_eq!(count(&path, "SELECT COUNT(*) FROM events WHERE type='message_sent'"), 3);
    assert_eq!(transport_cursor(&path), "3");
}

/// Through the component's VFS, a kill inside a commit: after the database file took some of the
/// page's pages (`vfs:main-write`), or all of them, synced, before the journal was finalized
/// (`vfs:main-sync`). The next connection must find the hot journal (no RESERVED lock, asked through the
/// VFS), take EXCLUSIVE through it and roll the journal back: the store is whole and as before the page,
/// and the retry imports once.
#[test]
fn a_kill_mid_commit_through_the_component_vfs_is_rolled_back_by_the_next_connection() {
    VFS.set(Vfs::Component);
    let (dir, path) = new_store();
    // The binding exists first, so that the page's commit is the child's one write to the database.
    drop(pull::begin(open(&path), &binding("dev")).unwrap());
    let wires: Vec<String> = (0..200).map(|_| new_uuid4()).collect();
    let joined = wires.join(",");
    for (point, hit) in [("vfs:main-write", 1), ("vfs:main-write", 3), ("vfs:main-sync", 1)] {
        let before = std::fs::read(&path).unwrap();
        crash(&path, "apply", point, hit, &[("AGMSG_SYNC_TEST_WIRES", &joined)]);
        assert_ne!(std::fs::read(&path).unwrap(), before, "{point} ({hit}): the kill landed after the database file was written to");
        let journal = std::fs::read(dir.path().join("messages.db-journal")).unwrap();
        assert!(journal.len() >= 28 && journal[..8] != [0; 8], "{point} ({hit}): the journal is hot");
        let check: String = open(&path).query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
        assert_eq!(check, "ok", "{point} ({hit})");
        assert_eq!(count(&path, "SELECT COUNT(*) FROM sync_quarantine"), 0, "{point} ({hit})");
        assert_eq!(count(&path, "SELECT COUNT(*) FROM events"), 0, "{point} ({hit})");
        assert_eq!(transport_cursor(&path), "0", "{point} ({hit})");
    }
    let page: Vec<PullMessage> =
        wires.iter().zip(1..).map(|(w, seq)| pulled(seq, w, &format!("blob{seq}"), Evaluated::Importable, chat("c", "bob", "x"))).collect();
    apply(&path, "dev", page.clone(), "200");
    apply(&path, "dev", page, "200");
    assert_eq!(count(&path, "SELECT COUNT(*) FROM events WHERE type='message_sent'"), 200);
    assert_eq!(transport_cursor(&path), "200");
    VFS.set(Vfs::Default);
}

#[test]
fn age_requests_carry_the_key_id_into_the_envelope() {
    let (_dir, path) = new_store();
    send(&open(&path), "dev", "alice", "bob", "hi");
    let request = PrepareRequest {
        envelope_v: 1,
        profile: WriteProfile::AgeV1(AgeProfile { key_id: "k1".into(), recipients: vec!["age1".to_string() + &"q".repeat(58)] }),
        max_blob_bytes: 1 << 20,
        allow_new: true,
    };
    let (_, mut pages) = push::prepare(open(&path), &binding("dev"), 10, &request, &mut test_sealer).unwrap();
    let c = drain(&mut pages, 1 << 20);
    assert_eq!((c[0].envelope.cipher.as_str(), c[0].envelope.key_id.as_deref()), ("age-v1", Some("k1")));
}

/// A store whose `sync_read_members` predates agmsg's three added columns is migrated in place: the
/// columns are added and every member's `remote_agent` starts as its local name. A current table is left
/// as it is (the migration's `UPDATE` does not run again).
#[test]
fn an_old_read_members_table_gains_the_three_columns() {
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(
        "CREATE TABLE sync_read_members (
           local_team TEXT NOT NULL, server_instance_id TEXT NOT NULL, remote_team_id TEXT NOT NULL,
           protocol_version INTEGER NOT NULL, driver_generation TEXT NOT NULL, member_id TEXT NOT NULL,
           agent TEXT NOT NULL, active INTEGER NOT NULL DEFAULT 1,
           remote_server_seq TEXT NOT NULL DEFAULT '0', min_available_seq TEXT NOT NULL DEFAULT '0');
         INSERT INTO sync_read_members(local_team, server_instance_id, remote_team_id, protocol_version,
           driver_generation, member_id, agent) VALUES('t', 's', 'r', 1, 'g', 'm1', 'alice');",
    )
    .unwrap();
    assert!(!crate::schema::has_column(&conn, "sync_read_members", "remote_agent").unwrap());
    super::schema::ensure(&conn).unwrap();
    for column in ["remote_agent", "name_mismatch", "blocked_reason"] {
        assert!(crate::schema::has_column(&conn, "sync_read_members", column).unwrap(), "{column}");
    }
    let member = |conn: &Connection| -> (String, i64, Option<String>) {
        conn.query_row("SELECT remote_agent, name_mismatch, blocked_reason FROM sync_read_members WHERE member_id='m1'", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap()
    };
    assert_eq!(member(&conn), ("alice".into(), 0, None));
    conn.execute("UPDATE sync_read_members SET remote_agent='alice-remote'", []).unwrap();
    super::schema::ensure(&conn).unwrap();
    assert_eq!(member(&conn).0, "alice-remote", "the migration ran again on a current table");
    assert!(!crate::schema::has_column(&conn, "no_such_table", "agent").unwrap());
}
