//! age-v1 envelopes sealed here open with the `age` CLI (the reference implementation) and with
//! agmsg's own `openEnvelope`, which is what its engine runs on a pull; the plaintext is agmsg's frame.
//! The CLI tests are skipped, saying why, when `age` / `age-keygen` are not installed, and the agmsg test
//! when node or agmsg 1.2.1 is missing (its release tree, `AGMSG_REFERENCE_TREE`, else
//! `../shared/agmsg-1.2.1` beside the workspace; else its repository, `AGMSG_REFERENCE_REPO`, default
//! /work/.mirror/kappaseijin+agmsg/repo); `AGMSG_REQUIRE_AGE=1` / `AGMSG_REQUIRE_REFERENCE=1` make that a
//! failure. A skip is also appended to the file `AGMSG_SKIP_LOG` names, for `scripts/test`'s summary.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::str::FromStr;

use agmsg_sync_seal::{Envelope, Message, SealRequest, SealState, age_frame, seal};
use base64::Engine;

const TEAM: &str = "018f3f7e-0000-7000-8000-000000000001";
const WIRE: &str = "550e8400-e29b-41d4-a716-446655440000";

fn available(tool: &str, arg: &str, require: &str) -> bool {
    let ok = Command::new(tool).arg(arg).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    if !ok {
        skip(&format!("{tool} is not installed"), require);
    }
    ok
}

/// Skip the running test: say why (and append it to `AGMSG_SKIP_LOG`), or fail when `require` is 1.
fn skip(why: &str, require: &str) {
    assert!(std::env::var(require).as_deref() != Ok("1"), "{why} ({require}=1)");
    eprintln!("skipped: {why}");
    if let Some(log) = std::env::var_os("AGMSG_SKIP_LOG").filter(|v| !v.is_empty())
        && let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(log)
    {
        use std::io::Write;
        let _ = writeln!(file, "age_interop::{}: {why}", std::thread::current().name().unwrap_or("?"));
    }
}

/// A new age identity file (mode 0600, as agmsg requires) and its recipient.
fn keygen(dir: &Path, name: &str) -> (PathBuf, String) {
    let path = dir.join(name);
    let out = Command::new("age-keygen").arg("-o").arg(&path).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&path).unwrap();
    let recipient = text.lines().find_map(|l| l.strip_prefix("# public key: ")).expect("age-keygen writes the public key").to_owned();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    (path, recipient)
}

fn age_request<'a>(recipients: &'a [String]) -> SealRequest<'a> {
    SealRequest { cipher: "age-v1", key_id: Some("epoch-1"), recipients, ..SealRequest::none(TEAM, WIRE) }
}

fn blob(envelope: &Envelope) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(&envelope.blob).unwrap()
}

fn age_decrypt(file: &[u8], identity: &Path) -> Option<Vec<u8>> {
    let mut child = Command::new("age")
        .arg("--decrypt")
        .arg("--identity")
        .arg(identity)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = file.to_vec();
    let writer = std::thread::spawn(move || std::io::Write::write_all(&mut stdin, &input));
    let out = child.wait_with_output().unwrap();
    // age stops reading at a header with no stanza for its identity: a broken pipe then is no error.
    let written = writer.join().unwrap();
    out.status.success().then(|| {
        written.unwrap();
        out.stdout
    })
}

#[test]
fn age_cli_opens_what_is_sealed_here() {
    if !available("age", "--version", "AGMSG_REQUIRE_AGE") || !available("age-keygen", "--version", "AGMSG_REQUIRE_AGE") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (first, first_recipient) = keygen(dir.path(), "first.key");
    let (second, second_recipient) = keygen(dir.path(), "second.key");
    let (stranger, _) = keygen(dir.path(), "stranger.key");
    let recipients = vec![first_recipient, second_recipient];
    let big = "x🔐\n".repeat(100_000);
    for body in ["Run the test suite", "単一引用符 ' と絵文字 🔐\t\u{1}\"\\", big.as_str()] {
        let message = Message { body, created_at: "2026-07-20T06:30:00.000000Z", from_agent: "leader", to_agent: "worker-1" };
        let envelope = seal(&message, &age_request(&recipients)).unwrap();
        assert_eq!((envelope.v, envelope.cipher.as_str(), envelope.key_id.as_deref()), (1, "age-v1", Some("epoch-1")));
        let file = blob(&envelope);
        assert!(file.starts_with(b"age-encryption.org/v1\n"));
        let header_end = file.windows(4).position(|w| w == b"\n---").unwrap();
        let header = String::from_utf8_lossy(&file[..header_end]);
        assert_eq!(header.matches("\n-> X25519 ").count(), 2, "{header}");
        let frame = age_frame(1, TEAM, WIRE, "epoch-1", &message).unwrap();
        for identity in [&first, &second] {
            assert_eq!(age_decrypt(&file, identity).as_deref(), Some(frame.as_slice()), "{}", identity.display());
        }
        assert_eq!(age_decrypt(&file, &stranger), None, "not sealed to the stranger");
        // Randomized like every age file; the same plaintext inside.
        let again = blob(&seal(&message, &age_request(&recipients)).unwrap());
        assert_ne!(again, file);
        assert_eq!(age_decrypt(&again, &first).as_deref(), Some(frame.as_slice()));
    }
}

/// agmsg's `openEnvelope` (its engine's pull path: header check, `age` CLI, frame and binding check,
/// canonical projection) opens a none and an age-v1 envelope sealed here, with two recipients.
#[test]
fn agmsgs_open_envelope_opens_what_is_sealed_here() {
    if !available("node", "--version", "AGMSG_REQUIRE_REFERENCE")
        || !available("age", "--version", "AGMSG_REQUIRE_AGE")
        || !available("age-keygen", "--version", "AGMSG_REQUIRE_AGE")
    {
        return;
    }
    let repo = std::env::var("AGMSG_REFERENCE_REPO").unwrap_or_else(|_| "/work/.mirror/kappaseijin+agmsg/repo".into());
    let tree = std::env::var_os("AGMSG_REFERENCE_TREE")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/agmsg-1.2.1"));
    let dir = tempfile::tempdir().unwrap();
    let helper = dir.path().join("sync-cipher.mjs");
    // A copy of agmsg's file (the tree may be read-only), from its release tree, else its repository.
    let from_tree = std::fs::read(tree.join("scripts/internal/sync-cipher.mjs")).ok();
    let shown = || Command::new("git").args(["-C", &repo, "show", "HEAD:scripts/internal/sync-cipher.mjs"]).output();
    match from_tree {
        Some(bytes) => std::fs::write(&helper, bytes).unwrap(),
        None => match shown() {
            Ok(out) if out.status.success() => std::fs::write(&helper, out.stdout).unwrap(),
            _ => {
                skip(
                    &format!("agmsg 1.2.1 is neither at {} (AGMSG_REFERENCE_TREE) nor at {repo} (AGMSG_REFERENCE_REPO)", tree.display()),
                    "AGMSG_REQUIRE_REFERENCE",
                );
                return;
            }
        },
    }
    let (identity, recipient) = keygen(dir.path(), "team.key");
    let (_, other) = keygen(dir.path(), "other.key");
    let recipients = vec![other, recipient];
    let body = "a backslash \\ and a \\\"quoted\\\" escape\nnext line 🔐 é\u{2028}";
    let message = Message { body, created_at: "2024-02-29T23:59:59.999999Z", from_agent: "Zoë", to_agent: "worker 1" };
    let none = seal(&message, &SealRequest::none(TEAM, WIRE)).unwrap();
    let age = seal(&message, &age_request(&recipients)).unwrap();
    let cases: Vec<String> = [&none, &age]
        .iter()
        .map(|e| {
            serde_json::json!({
                "envelope": e, "protocol_version": 1, "team_id": TEAM, "wire_id": WIRE,
                "identity_file": identity, "expected_recipients": recipients, "max_blob_bytes": 1_048_576,
            })
            .to_string()
        })
        .collect();
    let script = "const { openEnvelope } = await import(process.argv[1]);\n\
                  let input = ''; for await (const chunk of process.stdin) input += chunk;\n\
                  for (const line of input.split('\\n').filter(Boolean)) {\n\
                    process.stdout.write(JSON.stringify(await openEnvelope(JSON.parse(line))) + '\\n');\n\
                  }";
    let mut child = Command::new("node")
        .args(["--input-type=module", "-e", script])
        .arg(&helper)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), (cases.join("\n") + "\n").as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "openEnvelope: {}", String::from_utf8_lossy(&out.stderr));
    let opened: Vec<serde_json::Value> = String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let want = serde_json::json!({"body": body, "created_at": message.created_at, "from_agent": "Zoë", "to_agent": "worker 1"});
    assert_eq!(opened, [want.clone(), want]);
}

/// Bad recipients and a blob over `max_blob_bytes` are clear errors (no CLI needed).
#[test]
fn age_requests_are_validated() {
    let recipient = age::x25519::Identity::generate().to_public().to_string();
    let message = Message { body: "hi", created_at: "2026-07-20T06:30:00.000000Z", from_agent: "a", to_agent: "b" };
    let refused = |recipients: &[String], max: u64, why: &str| {
        let request = SealRequest { max_blob_bytes: max, ..age_request(recipients) };
        let error = seal(&message, &request).unwrap_err();
        assert_eq!(error.state, SealState::Malformed);
        assert!(error.message.starts_with(why), "{why}: {error}");
    };
    // The right form, a wrong bech32 checksum.
    let mut broken = recipient.clone();
    let last = broken.pop().unwrap();
    broken.push(if last == 'q' { 'p' } else { 'q' });
    refused(std::slice::from_ref(&broken), 1 << 20, "age-v1 recipient manifest is invalid: recipient 1 is not an X25519 public key");
    refused(&[recipient.clone(), recipient.clone()], 1 << 20, "age-v1 recipient manifest is invalid: recipient 2 repeats");
    refused(&[], 1 << 20, "age-v1 recipient manifest is invalid: 0 recipients");
    refused(std::slice::from_ref(&recipient), 200, "encrypted age file exceeds max_blob_bytes");
    let none = SealRequest { recipients: std::slice::from_ref(&recipient), ..SealRequest::none(TEAM, WIRE) };
    assert!(seal(&message, &none).unwrap_err().message.starts_with("none takes no recipients"));

    // 256 recipients is the most, and each gets its stanza.
    let many: Vec<String> = (0..256).map(|_| age::x25519::Identity::generate().to_public().to_string()).collect();
    let envelope = seal(&message, &age_request(&many)).unwrap();
    let file = blob(&envelope);
    assert_eq!(file.windows(10).filter(|w| w == b"-> X25519 ").count(), 256);
    assert!(age::x25519::Recipient::from_str(&many[0]).is_ok());
}
