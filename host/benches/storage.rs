//! Storage benchmarks, each side by side with its baseline in one run:
//!
//! 1. per-op latency of `send` and `list-unread` through the sqlite component (in one warm process) vs
//!    the same SQL through native rusqlite;
//! 2. loading the compiled component from the cache (mmap) vs compiling it;
//! 3. the whole process: one `agmsg-host storage send` with a warm cache vs `sqlite3 <db> "INSERT ..."`.
//!
//! Run: `cargo bench -p agmsg-host --bench storage` (release build). Prints a table with ratios.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{ms, time};

use agmsg_host::runtime::cache::CompileCache;
use agmsg_host::runtime::sandbox::StoreDir;
use agmsg_host::runtime::{Limits, Runtime};
use agmsg_host::storage::{DriverSource, StorageDriver};
use rusqlite::{Connection, params};

const BIN: &str = env!("CARGO_BIN_EXE_agmsg-host");

fn row(what: &str, ours: Duration, baseline: Duration, baseline_name: &str) {
    println!(
        "{what:<42} {:>9.3} ms   {baseline_name:<24} {:>9.3} ms   ratio {:>5.2}x",
        ms(ours),
        ms(baseline),
        ours.as_secs_f64() / baseline.as_secs_f64()
    );
}

/// agmsg's schema, for the native baseline.
/// agmsg's schema in a native database with the given journal mode.
fn native_store(path: &Path, journal_mode: &str) -> Connection {
    let db = Connection::open(path).unwrap();
    db.query_row(&format!("PRAGMA journal_mode={journal_mode}"), [], |r| r.get::<_, String>(0)).unwrap();
    db.execute_batch(include_str!("../../tests/fixtures/agmsg-bash-schema.sql")).unwrap();
    db
}

fn native_send(db: &mut Connection, i: usize) {
    let tx = db.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).unwrap();
    tx.prepare_cached("INSERT INTO messages(team, from_agent, to_agent, body, created_at) VALUES('t', 'alice', 'bob', ?1, '2026-12-02T00:00:00Z')")
        .unwrap()
        .execute([format!("message {i}")])
        .unwrap();
    let legacy = tx.last_insert_rowid();
    tx.prepare_cached(
        "INSERT INTO events(type, id, team, from_agent, to_agent, body, at, legacy_id) VALUES('message_sent', ?1, 't', 'alice', 'bob', ?2, '2026-12-02T00:00:00Z', ?3)",
    )
    .unwrap()
    .execute(params![format!("id-{i}"), format!("message {i}"), legacy])
    .unwrap();
    tx.commit().unwrap();
}

fn native_list_unread(db: &Connection) -> usize {
    let mut stmt = db
        .prepare_cached(
            "SELECT e.id, e.team, e.from_agent, e.to_agent, e.body, e.at, e.seq FROM events e \
             WHERE e.type='message_sent' AND e.team=?1 AND e.to_agent=?2 \
             AND e.seq > COALESCE((SELECT local_position FROM read_cursors WHERE team=?1 AND agent=?2), 0) \
             AND NOT EXISTS (SELECT 1 FROM events r WHERE r.type='message_read' AND r.team=?1 AND r.agent=?2 \
             AND r.msg_id=e.id) ORDER BY e.seq",
        )
        .unwrap();
    let rows: Vec<(String, String, String, String, String, String)> = stmt
        .query_map(["t", "bob"], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    rows.len()
}

fn main() {
    if common::listing_only() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cache_dir = dir.path().join("cache");
    let component_store = dir.path().join("component");
    let native_dir = dir.path().join("native");
    std::fs::create_dir_all(&component_store).unwrap();
    std::fs::create_dir_all(&native_dir).unwrap();
    unsafe { std::env::set_var("AGMSG_CACHE_DIR", &cache_dir) };

    let source = DriverSource::resolve("sqlite").unwrap();
    let runtime = Runtime::new(CompileCache::from_env(), Limits::from_env().unwrap()).unwrap();

    println!("agmsg-host storage benchmarks (median of N runs; ratio = ours / baseline)\n");

    // 2. Component load: compile once (fills the cache), then cached loads.
    let compile = time(1, |_| runtime.engine.precompile_component(&source.wasm).unwrap());
    runtime.load(&source.wasm, &source.sha256).unwrap();
    let cached = time(50, |_| runtime.load(&source.wasm, &source.sha256).unwrap());
    row("component load from cache (mmap)", cached, compile, "Cranelift compile");

    // 1. Per-op latency in one warm process.
    let mut driver = StorageDriver::open(&runtime, &source, StoreDir::open(&component_store).unwrap()).unwrap();
    driver.init().unwrap();
    let mut native = native_store(&native_dir.join("messages.db"), "WAL");
    let rollback_dir = dir.path().join("native-rollback");
    std::fs::create_dir_all(&rollback_dir).unwrap();
    let mut native_rollback = native_store(&rollback_dir.join("messages.db"), "PERSIST");
    const N: usize = 300;
    let ours = time(N, |i| driver.send("t", "alice", "bob", &format!("message {i}")).unwrap());
    let base = time(N, |i| native_send(&mut native, i));
    row("send (one transaction)", ours, base, "native rusqlite, WAL");
    let base = time(N, |i| native_send(&mut native_rollback, i));
    row("send (one transaction)", ours, base, "native, same journal");
    let ours = time(N, |_| driver.list_unread("t", "bob", None).unwrap().len());
    let base = time(N, |_| native_list_unread(&native));
    row(&format!("list-unread ({N} unread)"), ours, base, "native rusqlite");
    let ours = time(N, |_| driver.list_unread("t", "bob", Some(10)).unwrap().len());
    row("list-unread --limit 10", ours, base, "native rusqlite (all)");

    // 3. Whole process, warm cache.
    let sqlite3 = which("sqlite3");
    let db = native_dir.join("messages.db");
    drop(native);
    const P: usize = 30;
    let ours = time(P, |i| {
        let out = Command::new(BIN)
            .args(["--store", component_store.to_str().unwrap(), "storage", "send", "t", "alice", "bob", &format!("p{i}")])
            .env("AGMSG_CACHE_DIR", &cache_dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    });
    match sqlite3 {
        Some(sqlite3) => {
            let base = time(P, |i| {
                let sql = format!(
                    "BEGIN IMMEDIATE; INSERT INTO messages(team, from_agent, to_agent, body, created_at) VALUES('t','alice','bob','p{i}','2026-12-02T00:00:00Z'); \
                     INSERT INTO events(type, id, team, from_agent, to_agent, body, at, legacy_id) VALUES('message_sent','p{i}','t','alice','bob','p{i}','2026-12-02T00:00:00Z', last_insert_rowid()); COMMIT;"
                );
                let out = Command::new(&sqlite3).args(["-cmd", ".timeout 5000"]).arg(&db).arg(sql).output().unwrap();
                assert!(out.status.success(), "{out:?}");
            });
            row("whole process: storage send (warm cache)", ours, base, "sqlite3 CLI INSERT");
        }
        None => println!("whole process: storage send (warm cache) {:.3} ms (sqlite3 CLI not found: no baseline)", ms(ours)),
    }
}

fn which(program: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| Path::new(d).join(program)).find(|p| p.is_file())
}
