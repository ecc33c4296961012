//! The sandbox, against fixture drivers built by the test suite: a driver gets its store directory and
//! nothing else; a runaway or broken driver ends with a clear error, the host intact and the store
//! intact; the compile cache misses, hits and rebuilds a damaged entry.

mod common;

use common::{Env, Run, fixture};
use rusqlite::Connection;

fn hostile(env: &Env, misbehaviour: &str) -> Run {
    let driver = fixture("hostile-storage");
    env.run(&["--driver", driver.to_str().unwrap(), "storage", "send", misbehaviour, "a", "b", "x"])
}

/// A store with one message in it, to prove it survives.
fn env_with_store() -> Env {
    let env = Env::new().env("AGMSG_DRIVER_TIMEOUT_MS", "2000").env("AGMSG_DRIVER_MEMORY_MB", "64");
    env.send("t", "alice", "bob", "before");
    env
}

#[track_caller]
fn assert_store_intact(env: &Env) {
    let db = Connection::open(env.db()).unwrap();
    let ok: String = db.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
    // The next op with a good driver succeeds at once (no stale lock).
    env.send("t", "alice", "bob", "after");
    let bodies: Vec<String> = env.storage(&["list-unread", "t", "bob"]).json().iter().map(|r| r["body"].as_str().unwrap().to_owned()).collect();
    assert_eq!(bodies, ["before", "after"]);
}

#[track_caller]
fn assert_blocked(run: &Run, what: &str) {
    assert_eq!(run.code, 13, "{what}: {run:?}");
    assert!(!run.stdout.contains("ESCAPED"), "{what} escaped: {run:?}");
    assert!(run.stderr.contains(&format!("blocked {what}")), "{what}: {run:?}");
}

#[test]
fn paths_outside_the_store_are_unreachable() {
    let env = env_with_store();
    std::fs::write(env.dir.path().join("outside.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(env.dir.path().join("outside.txt"), env.store.join("link")).unwrap();
    for what in [
        "read-passwd",
        "escape-dotdot",
        "escape-absolute",
        "escape-symlink",
        "write-outside",
        "write-symlink",
        "lock-dotdot",
        "lock-absolute",
        "lock-symlink",
    ] {
        assert_blocked(&hostile(&env, what), what);
    }
    assert_eq!(std::fs::read_to_string(env.dir.path().join("outside.txt")).unwrap(), "secret");
    assert!(!env.dir.path().join("written.txt").exists());
    std::fs::remove_file(env.store.join("link")).unwrap();
    assert_store_intact(&env);
}

#[test]
fn no_environment_and_no_network() {
    let env = env_with_store().env("SECRET_TOKEN", "hunter2");
    assert_blocked(&hostile(&env, "read-env"), "read-env");
    assert_blocked(&hostile(&env, "network"), "network");
    assert_blocked(&hostile(&env, "listen"), "listen");
}

#[test]
fn infinite_loop_hits_the_deadline() {
    let env = env_with_store();
    let started = std::time::Instant::now();
    let run = hostile(&env, "loop");
    assert_eq!(run.code, 13, "{run:?}");
    assert!(run.stderr.contains("driver 'hostile_storage' exceeded its time limit of 2000 ms"), "{run:?}");
    assert!(started.elapsed().as_secs() < 20);
    assert_store_intact(&env);
}

#[test]
fn memory_hog_hits_the_memory_limit() {
    let env = env_with_store();
    let run = hostile(&env, "hog");
    assert_eq!(run.code, 13, "{run:?}");
    assert!(run.stderr.contains("exceeded its memory limit of 64 MiB"), "{run:?}");
    assert_store_intact(&env);
}

#[test]
fn panic_and_recursion_are_contained() {
    let env = env_with_store();
    let run = hostile(&env, "panic");
    assert_eq!(run.code, 13, "{run:?}");
    assert!(run.stderr.contains("panicked") && run.stderr.contains("hostile driver panicked on purpose"), "{run:?}");
    let run = hostile(&env, "recurse");
    assert_eq!(run.code, 13, "{run:?}");
    assert!(run.stderr.contains("stack overflow") || run.stderr.contains("overflowed its stack"), "{run:?}");
    assert_store_intact(&env);
}

#[test]
fn output_flood_is_capped() {
    let env = env_with_store();
    let run = hostile(&env, "spam");
    assert_eq!(run.code, 13, "{run:?}");
    assert!(run.stdout.len() < 1024, "driver output never reaches stdout");
    assert!(run.stderr.len() < 64 * 1024, "nor floods stderr: {} bytes", run.stderr.len());
    assert_store_intact(&env);
}

#[test]
fn lock_is_not_reentrant_and_never_outlives_the_instance() {
    let env = env_with_store();
    let run = hostile(&env, "lock-twice");
    assert_eq!(run.code, 13, "{run:?}");
    assert!(run.stderr.contains("already held"), "{run:?}");
    hostile(&env, "lock-forget").ok();
    assert_store_intact(&env);
}

#[test]
fn malformed_driver_output_is_refused() {
    let env = env_with_store();
    let driver = fixture("hostile-storage");
    let driver = driver.to_str().unwrap();
    let run = hostile(&env, "bad-id");
    assert_eq!((run.code, run.stdout.as_str()), (13, ""), "{run:?}");
    assert!(run.stderr.contains("malformed message id"), "{run:?}");
    let run = env.run(&["--driver", driver, "storage", "list-unread", "t", "b"]);
    assert_eq!((run.code, run.stdout.as_str()), (13, ""), "{run:?}");
    let run = env.run(&["--driver", driver, "storage", "read-cursor-get", "t", "b"]);
    assert_eq!((run.code, run.stdout.as_str()), (13, ""), "{run:?}");
    assert!(run.stderr.contains("malformed cursor"), "{run:?}");
}

#[test]
fn compile_cache_miss_hit_and_rebuild() {
    let parent = tempfile::tempdir().unwrap();
    let cache = parent.path().join("cache");
    let env = Env::new().with_cache(cache.clone()).env("AGMSG_LOG", "debug");
    let run = env.storage(&["check"]);
    run.ok();
    assert!(run.stderr.contains("compile cache: miss"), "{run:?}");
    let entries: Vec<_> = std::fs::read_dir(&cache).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(entries.len(), 1);
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&cache).unwrap().permissions());
    assert_eq!(mode & 0o077, 0, "the cache directory is created private");

    let run = env.storage(&["check"]);
    assert!(run.stderr.contains("compile cache: hit"), "{run:?}");

    std::fs::write(&entries[0], b"\x7fELF garbage, not a compiled component").unwrap();
    let run = env.storage(&["check"]);
    run.ok();
    assert!(run.stderr.contains("compile cache: damaged entry") && run.stderr.contains("compile cache: rebuilt"), "{run:?}");
    let run = env.storage(&["check"]);
    assert!(run.stderr.contains("compile cache: hit"), "{run:?}");
}

#[test]
fn a_cache_directory_others_can_write_is_not_used() {
    let cache = tempfile::tempdir().unwrap();
    std::fs::set_permissions(cache.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let env = Env::new().with_cache(cache.path().to_path_buf());
    let run = env.storage(&["check"]);
    run.ok();
    assert!(run.stderr.contains("compile cache disabled") && run.stderr.contains("writable by other users"), "{run:?}");
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 0);
}

#[test]
fn missing_deps_prints_the_directive_then_the_status() {
    let env = Env::new();
    let driver = fixture("hostile-storage");
    let run = env.run(&["--driver", driver.to_str().unwrap(), "storage", "check"]);
    assert_eq!(run.code, 10, "{run:?}");
    let lines = run.lines();
    assert_eq!(lines.len(), 2, "{run:?}");
    assert_eq!(lines[1], "missing_deps");
    let directive: serde_json::Value = serde_json::from_str(lines[0].strip_prefix("AGMSG-DIRECTIVE: ").unwrap()).unwrap();
    assert_eq!(directive["type"], "install_deps");
    assert_eq!(directive["commands"][0], "apt-get install frobnicator");
    assert_eq!(directive["reason"], "frobnicator not found on PATH");
    assert!(directive["driver"].as_str().unwrap().ends_with("hostile_storage.wasm"));
    assert!(run.stderr.contains("frobnicator not found"), "{run:?}");
}
