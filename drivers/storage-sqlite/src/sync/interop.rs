//! One store, two drivers: agmsg's own bash `sqlite-sync.sh` and this driver's sync take turns on the
//! same `messages.db`, and each carries on from the other's state (reservations replayed byte for byte,
//! acknowledgements, imports never duplicated, quarantine reprocessed).
//!
//! agmsg's scripts are copied at run time from agmsg 1.2.1's release tree (`AGMSG_REFERENCE_TREE`, else
//! `../shared/agmsg-1.2.1` beside the workspace), else extracted from its repository
//! (`AGMSG_REFERENCE_REPO`, a git directory), as `tests/common/reference.rs` does; without either, or
//! without bash, jq, sqlite3 and node, the test is skipped saying why (and logged to `AGMSG_SKIP_LOG`),
//! unless `AGMSG_REQUIRE_REFERENCE=1` makes that a failure.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use agmsg_guest_sdk::storage::{Evaluated, OutcomeStatus, PushAck, ReprocessScope};
use rusqlite::Connection;
use serde_json::Value;

use super::tests::{binding_with, drain, envelope_of, open, test_sealer};
use super::{pull, push};

const DEFAULT_REPO: &str = "/work/.mirror/kappaseijin+agmsg/repo";
pub(super) const SERVER: &str = "018f3f7e-0000-7000-8000-000000000000";
pub(super) const TEAM: &str = "018f3f7e-0000-7000-8000-000000000001";
const PREPARE: &str = r#"{"type":"sync_prepare","envelope_v":1,"cipher":"none","key_id":null,"max_blob_bytes":1048576,"allow_new":true}"#;

/// Skip the running test: say why (and append it to `AGMSG_SKIP_LOG` for `scripts/test`'s summary),
/// or fail with `AGMSG_REQUIRE_REFERENCE=1`.
fn skip(why: &str) {
    assert!(std::env::var("AGMSG_REQUIRE_REFERENCE").as_deref() != Ok("1"), "{why} (AGMSG_REQUIRE_REFERENCE=1)");
    eprintln!("skipped: {why}");
    if let Some(log) = std::env::var_os("AGMSG_SKIP_LOG").filter(|v| !v.is_empty())
        && let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(log)
    {
        let _ = writeln!(file, "agmsg_storage_sqlite::{}: {why}", std::thread::current().name().unwrap_or("?"));
    }
}

/// agmsg's skill directory (its `scripts/` copied into `dir`), or `None` when the test must skip.
pub(super) fn agmsg_skill(dir: &Path) -> Option<PathBuf> {
    let tree = std::env::var_os("AGMSG_REFERENCE_TREE")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/agmsg-1.2.1"));
    let tree = tree.join("scripts/lib/storage.sh").is_file().then_some(tree);
    let repo = std::env::var("AGMSG_REFERENCE_REPO").unwrap_or_else(|_| DEFAULT_REPO.to_owned());
    if tree.is_none() && !Path::new(&repo).exists() {
        skip(&format!(
            "agmsg 1.2.1 is neither a release tree (AGMSG_REFERENCE_TREE, ../shared/agmsg-1.2.1) nor at {repo} (AGMSG_REFERENCE_REPO)"
        ));
        return None;
    }
    let tools: &[&str] = if tree.is_some() { &["bash", "jq", "sqlite3", "node"] } else { &["bash", "jq", "sqlite3", "node", "git", "tar"] };
    for tool in tools {
        if Command::new(tool).arg("--version").output().is_err() {
            skip(&format!("agmsg's sync needs {tool}, which is not installed"));
            return None;
        }
    }
    // agmsg's prepare insists on `jq -b` (binary stdout, for Windows' CRLF), which jq 1.6 lacks; on
    // Linux jq writes LF either way, so an older jq gets a wrapper that drops the flag.
    let probe = Command::new("jq").args(["-b", "-n", "1"]).output().unwrap();
    if !probe.status.success() {
        let real = String::from_utf8(Command::new("bash").args(["-c", "command -v jq"]).output().unwrap().stdout).unwrap();
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(
            bin.join("jq"),
            format!(
                "#!/bin/bash\nargs=()\nfor a in \"$@\"; do [ \"$a\" = -b ] || args+=(\"$a\"); done\nexec {} \"${{args[@]}}\"\n",
                real.trim()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(bin.join("jq"), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let skill = dir.join("skill");
    std::fs::create_dir_all(skill.join("db")).unwrap();
    if let Some(tree) = tree {
        let copied = Command::new("cp").arg("-R").arg(tree.join("scripts")).arg(skill.join("scripts")).output().unwrap();
        assert!(copied.status.success(), "cp: {copied:?}");
        // Writable, as an install is (the release tree may be read-only).
        let chmod = Command::new("chmod").args(["-R", "u+w"]).arg(&skill).output().unwrap();
        assert!(chmod.status.success(), "chmod: {chmod:?}");
    } else {
        let tar = dir.join("scripts.tar");
        let archived = Command::new("git").args(["-C", &repo, "archive", "-o"]).arg(&tar).args(["HEAD", "scripts"]).output().unwrap();
        assert!(archived.status.success(), "git archive: {archived:?}");
        let extracted = Command::new("tar").arg("-xf").arg(&tar).arg("-C").arg(&skill).output().unwrap();
        assert!(extracted.status.success(), "tar: {extracted:?}");
    }
    Some(skill)
}

/// Run `script` in bash with agmsg's sqlite driver loaded on the store at `<dir>/store`; its stdout.
pub(super) fn agmsg(skill: &Path, script: &str, stdin: &str) -> String {
    let store = skill.parent().unwrap().join("store");
    let prelude = format!(
        "set -e; export PATH=\"{bin}:$PATH\" SKILL_DIR='{skill}' AGMSG_STORAGE_PATH='{store}' AGMSG_STORAGE_DRIVER=sqlite; \
         source \"$SKILL_DIR/scripts/lib/storage.sh\"; agmsg_storage_load; storage_init demo >/dev/null; \
         S={SERVER}; T={TEAM};\n",
        bin = skill.parent().unwrap().join("bin").display(),
        skill = skill.display(),
        store = store.display()
    );
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(prelude + script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "agmsg's script failed ({}): {script}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

pub(super) fn records(jsonl: &str, kind: &str) -> Vec<Value> {
    jsonl.lines().filter(|l| l.starts_with('{')).map(|l| serde_json::from_str::<Value>(l).unwrap()).filter(|v| v["type"] == kind).collect()
}

pub(super) fn page_line(seq: u64, wire: &str, status: &str, body: Option<&str>) -> String {
    let mut v = serde_json::json!({
        "type": "sync_pull_message", "server_seq": seq.to_string(), "id": wire,
        "server_received_at": "2026-07-20T13:04:00.000000Z",
        "envelope": {"v": 1, "cipher": "none", "key_id": null, "blob": format!("blob-{seq}")},
        "status": status,
    });
    if let Some(body) = body {
        v["projection"] = serde_json::json!({"body": body, "created_at": "2026-07-20T13:03:00.000000Z",
            "from_agent": "carol", "to_agent": "bob"});
    }
    v.to_string()
}

#[test]
fn a_store_agmsg_synced_keeps_syncing_here_and_back() {
    let dir = tempfile::tempdir().unwrap();
    let Some(skill) = agmsg_skill(dir.path()) else { return };
    let b = binding_with("demo", SERVER, TEAM);

    // agmsg reserves two messages.
    let theirs = agmsg(
        &skill,
        "storage_send demo alice bob one >/dev/null; storage_send demo alice bob two >/dev/null; \
         storage_sync_prepare_push demo $S $T 1 100; echo; agmsg_db_path demo",
        &format!("{PREPARE}\n"),
    );
    let db = PathBuf::from(theirs.lines().last().unwrap());
    let their_candidates = records(&theirs, "sync_push_candidate");
    assert_eq!(their_candidates.len(), 2);

    // The component's own sealer, given agmsg's wire id and message, makes agmsg's `none` envelope
    // byte for byte (agmsg's Node helper sealed these).
    for c in &their_candidates {
        let position: i64 = c["local_position"].as_str().unwrap().parse().unwrap();
        let (body, at, from, to): (String, String, String, String) = Connection::open(&db)
            .unwrap()
            .query_row("SELECT body, at, from_agent, to_agent FROM events WHERE seq=?1", [position], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .unwrap();
        let created_at = push::seal_timestamp(&at);
        let blob = push::seal_with_crate(&push::SealRequest {
            envelope_v: 1,
            profile: &agmsg_guest_sdk::storage::WriteProfile::None,
            max_blob_bytes: 1 << 20,
            wire_id: c["id"].as_str().unwrap(),
            team_id: TEAM,
            protocol_version: 1,
            body: &body,
            created_at: &created_at,
            from_agent: &from,
            to_agent: &to,
        })
        .unwrap();
        assert_eq!(blob, c["envelope"]["blob"].as_str().unwrap(), "sealed here as agmsg seals it");
    }
    let their_state = &records(&theirs, "sync_state")[0];

    // Here: the same reservations, byte for byte, nothing sealed again, the same generation.
    let conn = open(&db);
    crate::insert_message(
        &conn,
        &agmsg_guest_sdk::storage::Message {
            id: agmsg_guest_sdk::ids::new_id(),
            team: "demo".into(),
            from: "alice".into(),
            to: "bob".into(),
            body: "three, sent here".into(),
            at: agmsg_guest_sdk::ids::now_utc(),
        },
    )
    .unwrap();
    drop(conn);
    let mut seals = 0;
    let mut counting = |r: &push::SealRequest<'_>| {
        seals += 1;
        test_sealer(r)
    };
    let request = agmsg_guest_sdk::storage::PrepareRequest {
        envelope_v: 1,
        profile: agmsg_guest_sdk::storage::WriteProfile::None,
        max_blob_bytes: 1 << 20,
        allow_new: true,
    };
    let (state, mut pages) = push::prepare(open(&db), &b, 100, &request, &mut counting).unwrap();
    let ours = drain(&mut pages, 1 << 20);
    drop(pages);
    assert_eq!(seals, 1, "only the message sent here is sealed");
    assert_eq!(state.driver_generation, their_state["driver_generation"].as_str().unwrap());
    assert_eq!(ours.len(), 3);
    for (mine, theirs) in ours.iter().zip(&their_candidates) {
        assert_eq!(mine.local_position.to_string(), theirs["local_position"].as_str().unwrap());
        assert_eq!(mine.local_id, theirs["local_id"].as_str().unwrap());
        assert_eq!(mine.wire_id, theirs["id"].as_str().unwrap());
        assert_eq!(envelope_of(mine), theirs["envelope"], "replayed, not resealed");
    }

    // agmsg acknowledges all three, the one reserved here included; its cursor passes them all.
    let acks: String = ours
        .iter()
        .zip(1..)
        .map(|(c, seq)| {
            serde_json::json!({"type": "sync_push_ack", "local_position": c.local_position.to_string(),
                "id": c.wire_id, "server_seq": seq.to_string(), "disposition": "stored"})
            .to_string()
                + "\n"
        })
        .collect();
    let reconciled = agmsg(&skill, "storage_sync_reconcile_push demo $S $T 1", &acks);
    assert_eq!(records(&reconciled, "sync_reconcile_result")[0]["push_cursor"], ours[2].local_position.to_string());
    // Acknowledged here again (a retried reconcile): idempotent, same cursor.
    let ack = |i: usize| PushAck {
        local_position: ours[i].local_position,
        wire_id: ours[i].wire_id.clone(),
        server_seq: (i + 1).to_string(),
        disposition: agmsg_guest_sdk::storage::Disposition::Duplicate,
    };
    assert_eq!(push::reconcile(&open(&db), &b, &[ack(0), ack(1), ack(2)]).unwrap(), ours[2].local_position);

    // agmsg applies a pull page: a message for bob, one waiting for its key, and the echo of "one".
    let (imported, pending) = ("6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b", "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4c");
    let mut echo: Value = serde_json::from_str(&page_line(1, &ours[0].wire_id, "importable", Some("one"))).unwrap();
    echo["envelope"] = envelope_of(&ours[0]);
    let page = format!(
        "{}\n{}\n{}\n{{\"type\":\"sync_pull_cursor\",\"next_after\":\"5\"}}\n",
        echo,
        page_line(4, imported, "importable", Some("from afar")),
        page_line(5, pending, "pending_key", None)
    );
    let applied = agmsg(&skill, "storage_sync_apply_pull demo $S $T 1", &page);
    let mut their_outcomes: Vec<(String, String)> = records(&applied, "sync_apply_outcome")
        .iter()
        .map(|o| (o["id"].as_str().unwrap().to_owned(), o["status"].as_str().unwrap().to_owned()))
        .collect();
    their_outcomes.sort();

    // The same page replayed here: the same outcomes, nothing imported twice.
    let messages: Vec<agmsg_guest_sdk::storage::PullMessage> =
        page.lines().take(3).map(|l| super::tests::pull_message_from_json(&serde_json::from_str(l).unwrap())).collect();
    let mut stage = pull::begin(open(&db), &b).unwrap();
    stage.push_messages(&messages).unwrap();
    let result = stage.commit_page("5").unwrap();
    drop(stage);
    let mut our_outcomes: Vec<(String, String)> = result
        .outcomes
        .iter()
        .map(|o| {
            let status = match o.status {
                OutcomeStatus::Imported => "imported",
                OutcomeStatus::Reconciled => "reconciled",
                OutcomeStatus::PendingKey => "pending_key",
                other => panic!("{other:?}"),
            };
            (o.wire_id.clone(), status.to_owned())
        })
        .collect();
    our_outcomes.sort();
    assert_eq!(our_outcomes, their_outcomes);
    let conn = Connection::open(&db).unwrap();
    let afar: i64 = conn.query_row("SELECT COUNT(*) FROM events WHERE body='from afar'", [], |r| r.get(0)).unwrap();
    assert_eq!(afar, 1, "imported once");
    drop(conn);

    // Reprocess here finds agmsg's quarantined row; agmsg's reprocess agrees.
    let (page_info, mut candidates) = pull::reprocess(open(&db), &b, 10, None, ReprocessScope::Recoverable).unwrap();
    let found = drain(&mut candidates, 1 << 20);
    drop(candidates);
    assert_eq!(page_info.state.transport_cursor, "5");
    assert_eq!(found.len(), 1);
    assert_eq!((found[0].wire_id.as_str(), found[0].prior_status), (pending, Evaluated::PendingKey));
    let reprocessed = agmsg(&skill, "storage_sync_reprocess demo $S $T 1 10", "");
    assert_eq!(records(&reprocessed, "sync_reprocess_candidate")[0]["id"], pending);

    // And back: agmsg's prepare sees everything acknowledged.
    let again = agmsg(&skill, "storage_sync_prepare_push demo $S $T 1 100", &format!("{PREPARE}\n"));
    assert!(records(&again, "sync_push_candidate").is_empty(), "{again}");
}
