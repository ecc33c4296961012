//! Who seals what agmsg's relay receives, and what of the store a storage driver sees (issue 34).
//!
//! An installed driver with the optional `sync` interface never decides who can read a pushed message:
//! the host seals each `age-v1` envelope (`agmsg:host/seal`), to exactly the engine's recipients, and
//! refuses an answer holding any envelope it did not seal, with exit 13 and nothing printed: one the
//! driver sealed itself to the team and a stranger, to a stranger alone, age's header then the message
//! in the clear, a real header then the clear text, or two host-sealed envelopes under each other's wire
//! ids. A host-sealed reservation replays byte for byte until it is acknowledged, then is forgotten.
//!
//! The store a driver is granted does not show agmsg's engine files (`remote-sync/`) or the host's own
//! (`.agmsg-host/`): reading, listing, writing, creating, renaming, linking and removing them all fail,
//! and the files stay as they were.

mod common;

use std::path::Path;
use std::process::Command;

use common::Env;
use common::sync::{REMOTE, SERVER, sync_op};

/// An age identity and its recipient, made by `age-keygen` (the CLI `scripts/setup` installs).
fn age_identity(dir: &Path) -> Option<(std::path::PathBuf, String)> {
    let key = dir.join("team.key");
    let made = Command::new("age-keygen").arg("-o").arg(&key).output().ok()?;
    if !made.status.success() {
        return None;
    }
    let public = String::from_utf8_lossy(&made.stderr).trim().strip_prefix("Public key: ")?.to_owned();
    Some((key, public))
}

fn need_age() -> bool {
    let found = Command::new("age").arg("--version").output().is_ok_and(|o| o.status.success());
    if !found {
        assert!(std::env::var("AGMSG_REQUIRE_AGE").as_deref() != Ok("1"), "the age CLI is required here (AGMSG_REQUIRE_AGE=1)");
        eprintln!("skipped: no `age` CLI to open the envelopes with");
    }
    found
}

fn prepare(key_id: &str, recipient: &str, allow_new: bool) -> String {
    format!(
        r#"{{"type":"sync_prepare","envelope_v":1,"cipher":"age-v1","key_id":"{key_id}","recipients":["{recipient}"],"max_blob_bytes":1048576,"allow_new":{allow_new}}}"#
    )
}

/// `age -d -i <key>` of a base64 blob: the frame's bytes, or None when the key does not open it.
fn open(blob: &str, key: &Path, dir: &Path) -> Option<Vec<u8>> {
    let file = dir.join("blob.age");
    let bytes = base64_decode(blob);
    std::fs::write(&file, bytes).unwrap();
    let out = Command::new("age").arg("-d").arg("-i").arg(key).arg(&file).output().unwrap();
    out.status.success().then_some(out.stdout)
}

fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let mut out = Vec::new();
    for quad in text.as_bytes().chunks(4) {
        let n = quad.iter().take_while(|c| **c != b'=').count();
        let bits = quad[..n].iter().fold(0u32, |acc, c| acc << 6 | u32::from(value(*c))) << (6 * (4 - n));
        out.extend_from_slice(&bits.to_be_bytes()[1..n.max(1)]);
    }
    out
}

fn candidates(stdout: &str) -> Vec<serde_json::Value> {
    stdout.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()).filter(|v| v["type"] == "sync_push_candidate").collect()
}

/// The host seals an installed driver's envelopes to exactly the engine's recipients: each opens with
/// the team's key to agmsg's frame holding the message, under the wire id printed beside it. The
/// reservation replays byte for byte; once acknowledged, the host forgets it, and a driver that answers
/// it again is refused.
#[test]
fn an_installed_drivers_envelopes_are_sealed_by_the_host_and_replay_until_acknowledged() {
    if !need_age() {
        return;
    }
    let env = Env::new();
    let keys = tempfile::tempdir().unwrap();
    let (key, recipient) = age_identity(keys.path()).expect("age-keygen");
    let driver = common::fixture("sync-fixture");
    let run = sync_op(&env, driver.to_str().unwrap());

    let first = run("prepare-push", &["2"], &prepare("host", &recipient, true));
    assert_eq!(first.code, 0, "{first:?}");
    let sealed = candidates(&first.stdout);
    assert_eq!(sealed.len(), 2, "{}", first.stdout);
    for (n, c) in sealed.iter().enumerate() {
        let frame = open(c["envelope"]["blob"].as_str().unwrap(), &key, keys.path()).expect("the team's key opens the host's envelope");
        let frame = String::from_utf8_lossy(&frame);
        assert!(frame.starts_with("agmsg-age-v1"), "{frame}");
        assert!(frame.contains(&format!(r#""body":"secret message {}""#, n + 1)), "{frame}");
        assert_eq!(c["envelope"]["key_id"], "host");
    }
    // The host's record of what it sealed is in its own directory of the store.
    let ledger = env.store.join(".agmsg-host/sealed").join(format!("{SERVER}.{REMOTE}.v1"));
    assert_eq!(std::fs::read_to_string(&ledger).unwrap().lines().count(), 2);

    let again = run("prepare-push", &["2"], &prepare("host", &recipient, false));
    assert_eq!((again.code, &again.stdout), (0, &first.stdout), "a reservation replays byte for byte: {again:?}");

    let wire = sealed[0]["id"].as_str().unwrap();
    let ack = format!(r#"{{"type":"sync_push_ack","local_position":"1","id":"{wire}","server_seq":"1","disposition":"stored"}}"#);
    run("reconcile-push", &[], &ack).ok();
    assert_eq!(std::fs::read_to_string(&ledger).unwrap().lines().count(), 1, "the acknowledged envelope is forgotten");
    let replayed = run("prepare-push", &["2"], &prepare("host", &recipient, false));
    assert_eq!((replayed.code, replayed.stdout.as_str()), (13, ""), "{replayed:?}");
    assert!(replayed.stderr.contains(wire) && replayed.stderr.contains("did not seal"), "{}", replayed.stderr);
}

/// Whatever an installed driver makes itself is refused: exit 13, stdout empty, the wire id named.
/// Each is an envelope agmsg's engine would push as given, and none of them can be told from a real
/// one without a key; the first two open (with the team's key, or a stranger's), the others hold the
/// message in the clear.
#[test]
fn an_envelope_the_host_did_not_seal_is_refused_and_nothing_is_printed() {
    let env = Env::new();
    let driver = common::fixture("sync-fixture");
    let run = sync_op(&env, driver.to_str().unwrap());
    let recipient = "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p";
    for mode in ["forge-extra", "forge-only", "forge-clear", "forge-header", "host-swap"] {
        let refused = run("prepare-push", &["2"], &prepare(mode, recipient, true));
        assert_eq!(refused.code, 13, "{mode}: {refused:?}");
        assert_eq!(refused.stdout, "", "{mode}: nothing is printed");
        assert!(refused.stderr.contains("did not seal"), "{mode}: {}", refused.stderr);
    }
}

/// `remote-sync/` (agmsg's engine: the recipients it seals to) and `.agmsg-host/` (the host's record of
/// what it sealed) are not in a storage driver's view of its store: every way in fails, a listing of the
/// store leaves them out, and they are unchanged afterwards.
#[test]
fn a_storage_driver_sees_neither_the_engines_files_nor_the_hosts() {
    let env = Env::new();
    std::fs::create_dir_all(env.store.join("remote-sync")).unwrap();
    std::fs::write(env.store.join("remote-sync/t1.json"), "{\"recipients\":[\"age1team\"]}\n").unwrap();
    std::fs::create_dir_all(env.store.join(".agmsg-host/sealed")).unwrap();
    let driver = common::fixture("sync-fixture");
    let run = sync_op(&env, driver.to_str().unwrap());
    let peeked = run("prepare-push", &["1"], &prepare("peek", "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p", true));
    assert_eq!(peeked.code, 13, "{peeked:?}");
    let report = peeked.stderr.split("peek: ").nth(1).unwrap_or_else(|| panic!("{}", peeked.stderr));
    assert!(!report.contains("REACHED"), "{report}");
    for attempt in [
        "read=",
        "read-dotdot=",
        "stat=",
        "list=hidden",
        "write=",
        "create=",
        "mkdir-host=",
        "ledger=",
        "rename-out=",
        "rename-in=",
        "remove=",
        "link=",
    ] {
        assert!(report.contains(attempt), "{attempt} missing from {report}");
    }
    assert_eq!(std::fs::read_to_string(env.store.join("remote-sync/t1.json")).unwrap(), "{\"recipients\":[\"age1team\"]}\n");
    let names: Vec<_> = std::fs::read_dir(env.store.join("remote-sync")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, vec![std::ffi::OsString::from("t1.json")]);
    assert!(env.store.join(".agmsg-host/sealed").read_dir().unwrap().next().is_none());
    // What the driver may do in its store it still does: the plain directory it made is there.
    assert!(env.store.join("plain").is_dir());
}
