//! Storage benchmarks, each side by side with its baseline in one run:
//!
//! 1. per-op latency of `send` and `list-unread` through the sqlite component (in one warm process) vs
//!    the same SQL through native rusqlite;
//! 2. loading a bundled component's machine code in place vs copying it, vs a cache file (a plugin's
//!    path), vs compiling it;
//! 3. the whole process, as agmsg's scripts pay it (one process per op), alternating run by run with
//!    the `sqlite3` CLI running the same transaction or query on the same kind of store (journal
//!    PERSIST): send, list-unread, history --limit 20, watch-after, for sqlite and jsonl; a first call
//!    with an empty cache and one with no writable cache, against the warm call.
//!
//! Run: `cargo bench -p agmsg-host --bench storage` (release build). Prints a table with ratios.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{alternating, ms, row, time, which};

use agmsg_host::runtime::cache::{CompileCache, NoEmbeddedCode};
use agmsg_host::runtime::sandbox::StoreDir;
use agmsg_host::runtime::{Limits, Runtime};
use agmsg_host::storage::Storage;
use rusqlite::{Connection, params};

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
    tx.prepare_cached(
        "INSERT INTO messages(team, from_agent, to_agent, body, created_at) VALUES('t', 'alice', 'bob', ?1, '2026-12-02T00:00:00Z')",
    )
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

    let source = agmsg_host::storage::source::resolve("sqlite").unwrap();
    // The first runtime creates the process's engine: what a process pays once.
    let started = std::time::Instant::now();
    let runtime = Runtime::new(CompileCache::from_env(), Limits::from_env().unwrap()).unwrap();
    let engine_created = started.elapsed();

    println!("agmsg-host storage benchmarks (median of N runs; ratio = ours / baseline)\n");

    // 2. Component load: a bundled driver's code in place, copied, from a cache file, compiled.
    let compile = time(1, |_| runtime.engine.precompile_component(&source.wasm).unwrap());
    // A process loads each bundled driver once (later loads share it): the first load is the cost.
    let in_place = time(1, |_| runtime.load(&source.wasm, &source.sha256).unwrap());
    let code = agmsg_host::bundled::precompiled(&source.sha256).expect("sqlite is bundled with its machine code");
    // SAFETY: the machine code build.rs produced for this engine configuration.
    let copied = time(50, |_| unsafe { wasmtime::component::Component::deserialize(&runtime.engine, code) }.unwrap());
    // A plugin's path: compiled once into the cache, then mapped from the cache file.
    runtime.cache.load(&runtime.engine, &source.wasm, &source.sha256, &NoEmbeddedCode).unwrap();
    let cached = time(50, |_| runtime.cache.load(&runtime.engine, &source.wasm, &source.sha256, &NoEmbeddedCode).unwrap());
    row("bundled component load, in place", in_place, copied, "the same bytes copied");
    row("bundled component load, in place", in_place, cached, "cache file (mmap)");
    row("component load from cache file (plugins)", cached, compile, "Cranelift compile");

    // 1. Per-op latency in one warm process.
    let mut driver = Storage::open(&runtime, &source, StoreDir::open(&component_store).unwrap()).unwrap();
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

    // Where a whole-process send's time goes, phase by phase, each phase fresh as in a new process.
    cold_start_breakdown(&source, dir.path(), engine_created, in_place);

    // 3. Whole process (what agmsg's scripts pay per op), alternating with its baseline run by run.
    drop(native);
    whole_process(dir.path(), &cache_dir, &rollback_dir.join("messages.db"));
}

/// The phases a `storage send` process goes through after start-up, each timed on its own with fresh
/// objects (median of 30): what the profile of a whole-process send is made of. In one process the
/// binary's pages are already mapped, so each phase costs a little less here than in a new process.
fn cold_start_breakdown(source: &agmsg_host::runtime::DriverSource, dir: &Path, engine_created: Duration, in_place: Duration) {
    const N: usize = 30;
    println!("\nphases of one `storage send` process (fresh objects, in one process):");
    let phase = |what: &str, d: Duration| println!("  {what:<52} {:>9.3} ms", ms(d));
    phase("the process's engine and epoch thread (measured first)", engine_created);
    phase("limits + cache (Runtime::from_env, engine shared)", time(N, |_| Runtime::from_env().unwrap()));
    let runtime = Runtime::from_env().unwrap();
    phase("component load (bundled code, in place; measured above)", in_place);
    phase(
        "linker for the storage axis (WASI + agmsg:host)",
        time(N, |_| agmsg_host::runtime::sandbox::linker(&runtime.engine, agmsg_host::axis::Axis::Storage).unwrap()),
    );
    let component = runtime.load(&source.wasm, &source.sha256).unwrap();
    let linker = agmsg_host::runtime::sandbox::linker(&runtime.engine, agmsg_host::axis::Axis::Storage).unwrap();
    phase("instantiate_pre (type-check imports)", time(N, |_| linker.instantiate_pre(&component).unwrap()));
    let store = dir.join("breakdown-store");
    std::fs::create_dir_all(&store).unwrap();
    Storage::open(&runtime, source, StoreDir::open(&store).unwrap()).unwrap().init().unwrap();
    let mut first = Vec::new();
    let mut second = Vec::new();
    for i in 0..N {
        let mut driver = Storage::open(&runtime, source, StoreDir::open(&store).unwrap()).unwrap();
        let started = std::time::Instant::now();
        driver.send("t", "alice", "bob", &format!("first {i}")).unwrap();
        first.push(started.elapsed());
        let started = std::time::Instant::now();
        driver.send("t", "alice", "bob", &format!("second {i}")).unwrap();
        second.push(started.elapsed());
    }
    let (first, second) = (common::median(first), common::median(second));
    phase("first send: instantiate + open the database + send", first);
    phase("second send on that instance (the send itself)", second);
    phase("so: instantiate + open the database", first.saturating_sub(second));
    println!();
}

/// `agmsg-host <args>` as agmsg's scripts run it: a new process per op.
fn host(store: &Path, cache: &Path, args: &[&str]) {
    let out = common::host_command().arg("--store").arg(store).args(args).env("AGMSG_CACHE_DIR", cache).output().unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
}

/// The `sqlite3` CLI running `sql` on `db` in the driver's journal mode, as agmsg's bash driver does.
fn sqlite3_cli(sqlite3: &Path, db: &Path, sql: &str) {
    let out =
        Command::new(sqlite3).args(["-cmd", ".timeout 5000", "-cmd", "PRAGMA journal_mode=PERSIST"]).arg(db).arg(sql).output().unwrap();
    assert!(out.status.success(), "{out:?}");
}

fn whole_process(dir: &Path, cache: &Path, native_db: &Path) {
    const P: usize = 30;
    println!("\nwhole process, median of {P} runs alternating with the baseline:");
    let Some(sqlite3) = which("sqlite3") else {
        println!("  sqlite3 CLI not found: no baseline");
        return;
    };
    let stores: Vec<(&str, std::path::PathBuf)> = ["sqlite", "jsonl"].iter().map(|d| (*d, dir.join(format!("process-{d}")))).collect();
    for (driver, store) in &stores {
        host(store, cache, &["--driver", driver, "storage", "init"]);
        for i in 0..200 {
            host_quiet_send(store, cache, driver, i);
        }
    }
    for i in 0..200 {
        sqlite3_cli(&sqlite3, native_db, &send_sql(&format!("fill{i}")));
    }
    let send = |driver: &str, store: &Path, i: usize| {
        host(store, cache, &["--driver", driver, "storage", "send", "t", "alice", "bob", &format!("p{i}")])
    };
    let base_send = |i: usize| sqlite3_cli(&sqlite3, native_db, &send_sql(&format!("p{i}")));
    let (sqlite_store, jsonl_store) = (&stores[0].1, &stores[1].1);

    let (ours, base) = alternating(P, |i| send("sqlite", sqlite_store, i), base_send);
    row("storage send (sqlite)", ours, base, "sqlite3 CLI, same txn");
    let (jsonl, _) = alternating(P, |i| send("jsonl", jsonl_store, i), base_send);
    row("storage send (jsonl)", jsonl, ours, "storage send (sqlite)");

    // A first call after install: nothing in the cache (a fresh directory each run).
    let (first, warm) = alternating(
        P,
        |i| {
            let fresh = dir.join(format!("fresh-cache-{i}"));
            host(sqlite_store, &fresh, &["storage", "send", "t", "alice", "bob", "first"]);
        },
        |i| send("sqlite", sqlite_store, i),
    );
    row("storage send, empty cache", first, warm, "the same, warm cache");
    // No writable cache at all (a read-only HOME inside an agent's sandbox).
    let nowhere = Path::new("/proc/agmsg-host-no-cache");
    let (none, warm) = alternating(
        P,
        |_| host(sqlite_store, nowhere, &["storage", "send", "t", "alice", "bob", "x"]),
        |i| send("sqlite", sqlite_store, i),
    );
    row("storage send, no cache dir", none, warm, "the same, warm cache");

    let unread_sql = "SELECT json_object('id',id,'team',team,'from',from_agent,'to',to_agent,'body',body,'at',at) FROM events \
        WHERE type='message_sent' AND team='t' AND to_agent='bob' AND seq > COALESCE((SELECT local_position FROM read_cursors \
        WHERE team='t' AND agent='bob'), 0) ORDER BY seq";
    for (driver, store) in &stores {
        let (ours, base) = alternating(
            P,
            |_| host(store, cache, &["--driver", driver, "storage", "list-unread", "t", "bob"]),
            |_| sqlite3_cli(&sqlite3, native_db, unread_sql),
        );
        row(&format!("storage list-unread ({driver})"), ours, base, "sqlite3 CLI, same query");
    }
    let history_sql = "SELECT * FROM (SELECT json_object('id',id,'team',team,'from',from_agent,'to',to_agent,'body',body,'at',at), seq \
        FROM events WHERE type='message_sent' AND team='t' ORDER BY seq DESC LIMIT 20) ORDER BY seq";
    for (driver, store) in &stores {
        let (ours, base) = alternating(
            P,
            |_| host(store, cache, &["--driver", driver, "storage", "history", "t", "--limit", "20"]),
            |_| sqlite3_cli(&sqlite3, native_db, history_sql),
        );
        row(&format!("storage history --limit 20 ({driver})"), ours, base, "sqlite3 CLI, same query");
    }
    let watch_sql = "SELECT json_object('id',id,'team',team,'from',from_agent,'to',to_agent,'body',body,'at',at) FROM events \
        WHERE type='message_sent' AND seq > 150 AND team='t' AND to_agent='bob' ORDER BY seq";
    for (driver, store) in &stores {
        let tip = watch_tip(store, cache, driver);
        let (ours, base) = alternating(
            P,
            |_| host(store, cache, &["--driver", driver, "storage", "watch-after", &tip, "t:bob"]),
            |_| sqlite3_cli(&sqlite3, native_db, watch_sql),
        );
        row(&format!("storage watch-after ({driver})"), ours, base, "sqlite3 CLI, same query");
    }
}

fn send_sql(body: &str) -> String {
    format!(
        "BEGIN IMMEDIATE; INSERT INTO messages(team, from_agent, to_agent, body, created_at) VALUES('t','alice','bob','{body}','2026-12-02T00:00:00Z'); \
         INSERT INTO events(type, id, team, from_agent, to_agent, body, at, legacy_id) VALUES('message_sent','{body}','t','alice','bob','{body}','2026-12-02T00:00:00Z', last_insert_rowid()); COMMIT;"
    )
}

fn host_quiet_send(store: &Path, cache: &Path, driver: &str, i: usize) {
    host(store, cache, &["--driver", driver, "storage", "send", "t", "alice", "bob", &format!("fill {i}")]);
}

fn watch_tip(store: &Path, cache: &Path, driver: &str) -> String {
    let out = common::host_command()
        .arg("--store")
        .arg(store)
        .args(["--driver", driver, "storage", "watch-tip", "t:bob"])
        .env("AGMSG_CACHE_DIR", cache)
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}
