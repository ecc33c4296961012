//! Stage-1 remote sync on sqlite, per 1,000 messages: `prepare-push` (reserve and seal `none`),
//! `reconcile-push` (the acks) and `apply-pull` (a page of 1,000 importable messages), each one whole
//! process as agmsg's engine pays for it: `agmsg-host storage sync-<op>` on the bundled component
//! against agmsg 1.2.1's bash sqlite driver through its own adapter
//! (`scripts/internal/storage-sync-driver.sh`, which sources `sqlite.sh` and `sqlite-sync.sh`; sealing
//! by its Node helper). Both start each run from a copy of one store (the same 1,000 messages), so
//! they do the same work on the same data. Then the full-size page: 1,000 messages of 1 MiB envelopes
//! through prepare-push and apply-pull under the default driver memory cap (256 MiB), with the
//! process's peak RSS: too slow for CI, whose test (`tests/storage_sync_sqlite.rs`) is scaled down.
//!
//! Run: `cargo bench -p agmsg-host --bench sync_vs_bash` (release). `SYNC_BENCH_RUNS=N` (default 3)
//! runs per side, `SYNC_BENCH_FULL=0` skips the full-size page, `AGMSG_REFERENCE_REPO` is agmsg's git
//! repository (default /work/.mirror/kappaseijin+agmsg/repo), `AGMSG_HOST_BIN` another build. agmsg's
//! side is skipped, saying why, without its repository, bash, node, jq or sqlite3; a jq without `-b`
//! (1.6) gets a wrapper that drops the flag, as `scripts/agmsg-suites` does.

mod common;
// The tests' sync helpers: the ack line agmsg's engine sends for a candidate.
#[allow(dead_code)]
#[path = "../../tests/common/sync.rs"]
mod sync_records;

use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{median, ms, which};

const SERVER: &str = "0196f3a2-7c1e-7000-8000-000000000001";
const REMOTE: &str = "0196f3a2-7c1e-7000-8000-000000000002";
const PREPARE: &str =
    r#"{"type":"sync_prepare","envelope_v":1,"cipher":"none","key_id":null,"recipients":[],"max_blob_bytes":1048576,"allow_new":true}"#;
const MESSAGES: usize = 1000;
/// The largest body agmsg's sync projection takes: its `none` envelope is ~1.33 MB of base64.
const MIB_BODY: usize = 1_000_000;

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            out.push(if i <= chunk.len() { ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char } else { '=' });
        }
    }
    out
}

fn wire(n: usize) -> String {
    format!("6f1c2a3b-4d5e-4f60-8a7b-{n:012x}")
}

/// A v1 event log of `count` messages alice → bob, `body_bytes` each, written to `file` as it goes.
fn write_log(file: &Path, count: usize, body_bytes: usize) {
    let mut out = BufWriter::new(std::fs::File::create(file).unwrap());
    for i in 0..count {
        let body = format!("{i:06}{}", "x".repeat(body_bytes - 6));
        writeln!(
            out,
            r#"{{"type":"message_sent","id":"0196f3a2-7c1e-7000-8000-{i:012x}","team":"t","from":"alice","to":"bob","body":"{body}","at":"2026-01-01T00:00:00Z"}}"#
        )
        .unwrap();
    }
    out.flush().unwrap();
}

/// One pulled message at `seq`, importable, its blob the `none` envelope of its projection.
fn pull_message(seq: usize, body: &str) -> String {
    let projection = format!(r#"{{"body":"{body}","created_at":"2026-01-02T00:00:00.000000Z","from_agent":"carol","to_agent":"bob"}}"#);
    format!(
        r#"{{"type":"sync_pull_message","server_seq":"{seq}","id":"{}","server_received_at":"2026-01-02T00:00:00.000000Z","envelope":{{"v":1,"cipher":"none","key_id":null,"blob":"{}"}},"status":"importable","projection":{projection}}}"#,
        wire(seq),
        base64(projection.as_bytes())
    )
}

/// What one process did: its wall time, stdout (or only its size), and peak RSS.
struct Ran {
    took: Duration,
    stdout: Vec<u8>,
    stdout_bytes: u64,
    max_rss_kb: i64,
}

/// Run `cmd`, `feed` writing its stdin from a thread, stdout kept when `keep` (else counted). Panics,
/// with stderr, when the process fails: a benchmark of a failing op means nothing.
// The child is reaped by `wait4` (for its rusage), which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn run(what: &str, mut cmd: Command, feed: impl FnOnce(&mut dyn Write) + Send + 'static, keep: bool) -> Ran {
    let started = Instant::now();
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        feed(&mut stdin);
    });
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let (mut kept, mut total, mut buf) = (Vec::new(), 0u64, vec![0u8; 1 << 16]);
        loop {
            let n = stdout.read(&mut buf).unwrap();
            if n == 0 {
                return (kept, total);
            }
            total += n as u64;
            if keep {
                kept.extend_from_slice(&buf[..n]);
            }
        }
    });
    let mut stderr = child.stderr.take().unwrap();
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    // wait4, not Child::wait: the child's own peak RSS comes with it.
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "{what}: wait4 failed");
    let took = started.elapsed();
    let _ = writer.join();
    let (stdout, stdout_bytes) = reader.join().unwrap();
    let stderr = errors.join().unwrap();
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "{what} failed ({status:#x}): {stderr}");
    Ran { took, stdout, stdout_bytes, max_rss_kb: usage.ru_maxrss }
}

fn feed_text(text: String) -> impl FnOnce(&mut dyn Write) + Send + 'static {
    move |w| {
        let _ = w.write_all(text.as_bytes());
    }
}

/// A side: how to run a sync op on a store directory.
trait Side {
    fn name(&self) -> &'static str;
    fn op(&self, store: &Path, op: &str, extra: &[&str]) -> Command;
}

struct Host;

impl Side for Host {
    fn name(&self) -> &'static str {
        "agmsg-host (sqlite component)"
    }
    fn op(&self, store: &Path, op: &str, extra: &[&str]) -> Command {
        let mut cmd = common::host_command();
        cmd.args(["--driver", "sqlite", "storage", &format!("sync-{op}"), "t", SERVER, REMOTE, "1"])
            .args(extra)
            .env("AGMSG_STORAGE_PATH", store);
        cmd
    }
}

struct Bash {
    skill: PathBuf,
    path: String,
}

impl Side for Bash {
    fn name(&self) -> &'static str {
        "agmsg 1.2.1 bash sqlite driver"
    }
    fn op(&self, store: &Path, op: &str, extra: &[&str]) -> Command {
        let adapter_op = match op {
            "prepare-push" => "prepare",
            "reconcile-push" => "reconcile",
            "apply-pull" => "apply",
            other => other,
        };
        let mut cmd = Command::new(self.skill.join("scripts/internal/storage-sync-driver.sh"));
        cmd.args([adapter_op, "t", SERVER, REMOTE, "1"]).args(extra).env("AGMSG_STORAGE_PATH", store).env("PATH", &self.path);
        cmd
    }
}

/// agmsg's scripts from its repository, in `dir`, or why not.
fn agmsg_side(dir: &Path) -> Result<Bash, String> {
    for tool in ["bash", "node", "jq", "sqlite3", "git"] {
        which(tool).ok_or(format!("{tool} is not installed"))?;
    }
    let repo = std::env::var("AGMSG_REFERENCE_REPO").unwrap_or_else(|_| "/work/.mirror/kappaseijin+agmsg/repo".into());
    let skill = dir.join("agmsg");
    std::fs::create_dir_all(&skill).unwrap();
    // `git archive … | tar -x`, through a shell only for the pipe; the paths are ours.
    let extracted = Command::new("bash")
        .args(["-c", r#"git -C "$1" archive HEAD scripts | tar -x -C "$2""#, "extract"])
        .arg(&repo)
        .arg(&skill)
        .stderr(Stdio::null())
        .status()
        .map_err(|e| e.to_string())?;
    let adapter = skill.join("scripts/internal/storage-sync-driver.sh");
    if !extracted.success() && !adapter.exists() || !adapter.exists() {
        return Err(format!("agmsg's repository is not at {repo} (AGMSG_REFERENCE_REPO)"));
    }
    let mut path = std::env::var("PATH").unwrap_or_default();
    let has_b = Command::new("jq").args(["-b", "-n", "1"]).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    if !has_b {
        // agmsg's prepare insists on `jq -b` (binary stdout on Windows); on Linux jq writes LF either way.
        let wrapper = dir.join("jq-wrapper");
        std::fs::create_dir_all(&wrapper).unwrap();
        let jq = which("jq").unwrap();
        std::fs::write(
            wrapper.join("jq"),
            format!(
                "#!/usr/bin/env bash\nargs=()\nfor a in \"$@\"; do [ \"$a\" = -b ] || args+=(\"$a\"); done\nexec '{}' \"${{args[@]}}\"\n",
                jq.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(wrapper.join("jq"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        path = format!("{}:{path}", wrapper.display());
        println!("(this jq has no -b: agmsg's side runs with a wrapper that drops it)");
    }
    Ok(Bash { skill, path })
}

/// A fresh copy of the base store in `dir`.
fn copy_store(base: &Path, dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    for entry in std::fs::read_dir(base).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
        }
    }
}

/// Each op's wall time on `side`, one run from a fresh copy of `base`; checks each answer's size.
fn one_run(side: &dyn Side, base: &Path, store: &Path, page: &str) -> [Duration; 3] {
    copy_store(base, store);
    let prepared =
        run(&format!("{} prepare-push", side.name()), side.op(store, "prepare-push", &["1000"]), feed_text(PREPARE.into()), true);
    let text = String::from_utf8(prepared.stdout).unwrap();
    let candidates: Vec<serde_json::Value> = text.lines().skip(1).map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(candidates.len(), MESSAGES, "{}: prepare answered {} candidates", side.name(), candidates.len());
    let acks: String = candidates.iter().zip(1..).map(|(c, seq)| sync_records::ack_line(c, seq) + "\n").collect();
    let reconciled = run(&format!("{} reconcile-push", side.name()), side.op(store, "reconcile-push", &[]), feed_text(acks), true);
    assert!(String::from_utf8_lossy(&reconciled.stdout).contains("sync_reconcile_result"));
    let applied = run(&format!("{} apply-pull", side.name()), side.op(store, "apply-pull", &[]), feed_text(page.to_owned()), true);
    let lines = String::from_utf8(applied.stdout).unwrap();
    assert_eq!(lines.lines().count(), MESSAGES + 1, "{}: apply-pull's answer", side.name());
    assert_eq!(lines.matches(r#""status":"imported""#).count(), MESSAGES, "{}: every pulled message imported", side.name());
    [prepared.took, reconciled.took, applied.took]
}

fn main() {
    if common::listing_only() {
        return;
    }
    let runs: usize = std::env::var("SYNC_BENCH_RUNS").ok().and_then(|n| n.parse().ok()).filter(|&n| n > 0).unwrap_or(3);
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    std::fs::create_dir_all(&base).unwrap();
    let log = dir.path().join("messages.jsonl");
    write_log(&log, MESSAGES, 200);
    let mut import = common::host_command();
    import.args(["--driver", "sqlite", "storage", "import"]).arg(&log).env("AGMSG_STORAGE_PATH", &base);
    run("import", import, |_| {}, false);

    // Server sequences 1001.. (the pushed messages took 1..1000), each a new wire id.
    let page: String =
        (MESSAGES + 1..=2 * MESSAGES).map(|seq| pull_message(seq, &format!("pulled {seq} {}", "y".repeat(180))) + "\n").collect::<String>()
            + &format!("{{\"type\":\"sync_pull_cursor\",\"next_after\":\"{}\"}}\n", 2 * MESSAGES);

    let bash = agmsg_side(dir.path());
    if let Err(why) = &bash {
        println!("agmsg's side skipped: {why}");
    }
    let ops = ["prepare-push (seal none)", "reconcile-push", "apply-pull (importable)"];
    let mut ours: [Vec<Duration>; 3] = Default::default();
    let mut theirs: [Vec<Duration>; 3] = Default::default();
    for r in 0..runs {
        // Alternating which side goes first, so that drift hits both.
        let mut sides: Vec<(&dyn Side, &mut [Vec<Duration>; 3])> = vec![(&Host, &mut ours)];
        if let Ok(bash) = &bash {
            sides.push((bash, &mut theirs));
        }
        if r % 2 == 1 {
            sides.reverse();
        }
        for (side, into) in sides {
            let took = one_run(side, &base, &dir.path().join("run"), &page);
            for (samples, t) in into.iter_mut().zip(took) {
                samples.push(t);
            }
        }
    }
    println!("\nStage-1 sync on sqlite, {MESSAGES} messages of 200 bytes, one process per op, median of {runs} runs (fresh store copies)");
    println!("{:<28} {:>16} {:>22} {:>8}", "op", Host.name(), "agmsg bash driver", "ratio");
    for (i, op) in ops.iter().enumerate() {
        let a = median(ours[i].clone());
        match theirs[i].is_empty() {
            true => println!("{op:<28} {:>13.1} ms {:>22} {:>8}", ms(a), "skipped", "-"),
            false => {
                let b = median(theirs[i].clone());
                // The ratio, and how many times faster agmsg-host is (the bash side forks per message).
                println!(
                    "{op:<28} {:>13.1} ms {:>19.1} ms {:>9.4}x ({:.0}x faster)",
                    ms(a),
                    ms(b),
                    a.as_secs_f64() / b.as_secs_f64(),
                    b.as_secs_f64() / a.as_secs_f64()
                );
            }
        }
    }

    if std::env::var("SYNC_BENCH_FULL").as_deref() == Ok("0") {
        return;
    }
    // The full-size page: 1,000 messages of 1 MiB envelopes, streamed in and out, never held here.
    let full = dir.path().join("full");
    std::fs::create_dir_all(&full).unwrap();
    let big_log = dir.path().join("big.jsonl");
    write_log(&big_log, MESSAGES, MIB_BODY);
    let mut import = common::host_command();
    import.args(["--driver", "sqlite", "storage", "import"]).arg(&big_log).env("AGMSG_STORAGE_PATH", &full);
    let imported = run("import of 1,000 x 1 MiB", import, |_| {}, false);
    let store_bytes = std::fs::metadata(full.join("messages.db")).map(|m| m.len()).unwrap_or(0);
    let _ = std::fs::remove_file(&big_log);
    let prepared = run("prepare-push of 1,000 x 1 MiB", Host.op(&full, "prepare-push", &["1000"]), feed_text(PREPARE.into()), false);
    let body = "z".repeat(MIB_BODY - 20);
    let applied = run(
        "apply-pull of 1,000 x 1 MiB",
        Host.op(&full, "apply-pull", &[]),
        move |w| {
            for seq in 1..=MESSAGES {
                let _ = writeln!(w, "{}", pull_message(seq, &format!("{seq:06}{body}")));
            }
            let _ = writeln!(w, "{{\"type\":\"sync_pull_cursor\",\"next_after\":\"{MESSAGES}\"}}");
        },
        true,
    );
    assert_eq!(applied.stdout.iter().filter(|b| **b == b'\n').count(), MESSAGES + 1, "apply-pull's answer");
    println!("\nThe full-size page through agmsg-host, default driver memory cap (256 MiB): time, bytes, process peak RSS");
    for (what, ran, bytes) in [
        ("import (store after it)", &imported, store_bytes),
        ("prepare-push (answer)", &prepared, prepared.stdout_bytes),
        ("apply-pull (page in)", &applied, (MESSAGES as u64) * (MIB_BODY as u64 * 4 / 3 + MIB_BODY as u64)),
    ] {
        println!(
            "{what:<28} {:>9.1} s {:>10.1} MB   peak RSS {:>6.1} MiB",
            ran.took.as_secs_f64(),
            bytes as f64 / 1e6,
            ran.max_rss_kb as f64 / 1024.0
        );
    }
}
