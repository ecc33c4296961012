//! The sandbox, against fixture drivers built by the test suite: a driver gets its store directory and
//! nothing else; a runaway or broken driver ends with a clear error, the host intact and the store
//! intact; the compile cache misses, hits and rebuilds a damaged entry.

mod common;

use common::{Env, Run, fixture};
use rusqlite::Connection;

fn hostile(env: &Env, misbehaviour: &str) -> Run {
    hostile_with(env, misbehaviour, "x")
}

/// [`hostile`] with `body` as the message body (what some misbehaviours take as their argument).
fn hostile_with(env: &Env, misbehaviour: &str, body: &str) -> Run {
    let driver = fixture("hostile-storage");
    env.run(&["--driver", driver.to_str().unwrap(), "storage", "send", misbehaviour, "a", "b", body])
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
    let bodies: Vec<String> =
        env.storage(&["list-unread", "t", "bob"]).json().iter().map(|r| r["body"].as_str().unwrap().to_owned()).collect();
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
    // A port that really listens: the connection is refused by the sandbox, and none arrives.
    let witness = common::egress::Listener::new();
    assert_blocked(&hostile_with(&env, "network", &witness.port()), "network");
    witness.assert_no_connection("network");
    assert_blocked(&hostile(&env, "listen"), "listen");
}

#[test]
fn infinite_loop_hits_the_deadline() {
    let env = env_with_store();
    // Built (or waited for, while another test builds a fixture) before the clock starts.
    fixture("hostile-storage");
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

/// The compile cache serves components that are not bundled (plugins, files named by path); bundled
/// drivers come with their machine code and never touch it.
#[test]
fn compile_cache_miss_hit_and_rebuild() {
    let parent = tempfile::tempdir().unwrap();
    let cache = parent.path().join("cache");
    let env = Env::new().with_cache(cache.clone()).env("AGMSG_LOG", "debug");
    let driver = fixture("hostile-storage");
    let describe = || env.run(&["--driver", driver.to_str().unwrap(), "storage", "describe"]);
    let run = describe();
    run.ok();
    assert!(run.stderr.contains("compile cache: miss"), "{run:?}");
    let entries: Vec<_> = std::fs::read_dir(&cache).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(entries.len(), 1);
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&cache).unwrap().permissions());
    assert_eq!(mode & 0o077, 0, "the cache directory is created private");

    let run = describe();
    assert!(run.stderr.contains("compile cache: hit"), "{run:?}");

    std::fs::write(&entries[0], b"\x7fELF garbage, not a compiled component").unwrap();
    let run = describe();
    run.ok();
    assert!(run.stderr.contains("compile cache: damaged entry") && run.stderr.contains("compile cache: rebuilt"), "{run:?}");
    let run = describe();
    assert!(run.stderr.contains("compile cache: hit"), "{run:?}");
}

/// A first call costs what a warm one does: bundled drivers run the machine code built into the
/// binary, in place, whether the cache directory is empty, cannot be created, or there is no home at
/// all; nothing is compiled, and nothing is written to the cache.
#[test]
fn bundled_drivers_never_compile_at_run_time() {
    let parent = tempfile::tempdir().unwrap();
    let empty = parent.path().join("empty-cache");
    // Nothing can be created below /proc, even as root: a cache that cannot exist.
    for cache in [empty.to_str().unwrap(), "/proc/agmsg-host-cache"] {
        let env = Env::new().with_cache(cache.into()).env("AGMSG_LOG", "debug");
        for args in [
            &["storage", "send", "t", "alice", "bob", "hi"][..],
            &["--driver", "jsonl", "storage", "send", "t", "alice", "bob", "hi"],
            &["terminal", "--driver", "plain", "check"],
        ] {
            for run in [env.run(args), env.run(args)] {
                assert!(run.code == 0 || args[0] == "terminal", "{args:?}: {run:?}");
                assert!(run.stderr.contains("bundled machine code: loaded"), "{args:?}: {run:?}");
                for other_path in ["compile cache: hit", "compile cache: miss", "compiling"] {
                    assert!(!run.stderr.contains(other_path), "{args:?}: {run:?}");
                }
            }
        }
    }
    let written: Vec<_> = std::fs::read_dir(&empty).map(|d| d.map(|e| e.unwrap().file_name()).collect()).unwrap_or_default();
    assert!(written.is_empty(), "bundled drivers wrote to the cache: {written:?}");
    // No HOME, no cache variable: agmsg's scripts inside an agent's sandbox.
    let store = parent.path().join("store");
    let out = std::process::Command::new(common::BIN)
        .args(["storage", "--store", store.to_str().unwrap(), "send", "t", "alice", "bob", "hi"])
        .env_clear()
        .env("AGMSG_LOG", "debug")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.contains("bundled machine code: loaded"), "{stderr}");
}

/// A cache directory others can write is not used. It is looked at when a component is to be compiled:
/// an op on a bundled driver, which runs its embedded code, neither uses it nor says anything of it.
#[test]
fn a_cache_directory_others_can_write_is_not_used() {
    let cache = tempfile::tempdir().unwrap();
    std::fs::set_permissions(cache.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let env = Env::new().with_cache(cache.path().to_path_buf());
    let bundled = env.storage(&["check"]);
    bundled.ok();
    assert!(!bundled.stderr.contains("compile cache"), "{bundled:?}");
    let driver = fixture("hostile-storage");
    let run = env.run(&["--driver", driver.to_str().unwrap(), "storage", "check"]);
    assert_eq!(run.code, 10, "the driver still loads (and says what it misses): {run:?}");
    assert!(run.stderr.contains("compile cache disabled") && run.stderr.contains("writable by other users"), "{run:?}");
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 0);
}

/// A cache directory that is a symlink (even to a private directory of this user), or that belongs to
/// another user, is not used: the cache holds native code that is loaded without recompiling. A
/// component that is not bundled (so compiled through the cache when it is used) loads all the same.
#[test]
fn a_cache_directory_that_is_a_link_or_another_users_is_not_used() {
    let parent = tempfile::tempdir().unwrap();
    let real = parent.path().join("real");
    std::fs::create_dir(&real).unwrap();
    std::fs::set_permissions(&real, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let link = parent.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let driver = fixture("hostile-storage");
    let check = |cache: &std::path::Path| -> Run {
        let env = Env::new().with_cache(cache.to_path_buf());
        let run = env.run(&["--driver", driver.to_str().unwrap(), "storage", "check"]);
        assert_eq!(run.code, 10, "the driver still loads (and says what it misses): {run:?}");
        run
    };
    let run = check(&link);
    assert!(run.stderr.contains(&format!("compile cache disabled: {} is not a directory", link.display())), "{run:?}");
    assert_eq!(std::fs::read_dir(&real).unwrap().count(), 0, "written through the link");
    // The same directory named directly is used: what kept it empty was the link.
    check(&real);
    assert_ne!(std::fs::read_dir(&real).unwrap().count(), 0, "the real directory is used as a cache");

    // Another user's directory (only root can make one here).
    if rustix::process::geteuid().as_raw() != 0 {
        eprintln!("skipped the other user's directory: not root, so no directory can be given away");
        return;
    }
    let theirs = parent.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::set_permissions(&theirs, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    let run = check(&theirs);
    assert!(
        run.stderr.contains(&format!("compile cache disabled: {} belongs to uid 65534, not to this user (0)", theirs.display())),
        "{run:?}"
    );
    assert_eq!(std::fs::read_dir(&theirs).unwrap().count(), 0, "written to another user's directory");
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
    // Only the plain package install is relayed for an agent to run; the pipe to a shell is not.
    assert_eq!(directive["commands"], serde_json::json!(["apt-get install frobnicator"]), "{run:?}");
    assert_eq!(directive["reason"], "frobnicator not found on PATH");
    assert!(directive["driver"].as_str().unwrap().ends_with("hostile_storage.wasm"));
    assert!(run.stderr.contains("frobnicator not found"), "{run:?}");
    assert!(run.stderr.contains("asked to run 1 command(s) that are not a plain package install; not relayed"), "{run:?}");
    assert!(!run.stdout.contains("curl"), "{run:?}");
}

#[test]
fn a_driver_cannot_plant_symlinks() {
    let env = env_with_store();
    for what in ["plant-partition", "plant-journal", "plant-inside"] {
        assert_blocked(&hostile(&env, what), what);
    }
    for planted in ["teams/victim", "messages.db-journal", "alias.db"] {
        let link = env.store.join(planted).symlink_metadata().is_ok_and(|m| m.file_type().is_symlink());
        assert!(!link, "{planted} was planted");
    }
    assert_store_intact(&env);
}

/// A per-team partition whose directory is a symlink out of the store (planted before this host
/// refused them, or by anything else that can write the store) is never followed.
#[test]
fn a_partition_symlink_out_of_the_store_is_not_followed() {
    let env = env_with_store();
    let teams = env.dir.path().join("teams");
    std::fs::create_dir_all(teams.join("victim")).unwrap();
    std::fs::write(teams.join("victim/config.json"), r#"{"drivers":{"partition":"per-team"}}"#).unwrap();
    let outside = env.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(env.store.join("teams")).unwrap();
    std::os::unix::fs::symlink("../../outside", env.store.join("teams/victim")).unwrap();
    let env = env.env("AGMSG_TEAMS_DIR", teams.to_str().unwrap());
    let link = env.store.join("teams/victim");
    let refusal = format!(
        "{} is not a directory (a symlink or another file where the store expects a directory); refusing to follow it",
        link.display()
    );
    for driver in ["sqlite", "jsonl"] {
        for args in
            [&["send", "victim", "a", "b", "hi"][..], &["init", "victim"], &["list-unread", "victim", "b"], &["store-exists", "victim"]]
        {
            let mut argv = vec!["--driver", driver, "storage"];
            argv.extend_from_slice(args);
            let run = env.run(&argv);
            // Refused (every op, store-exists too) for that reason, with the runtime-error status.
            assert_eq!(run.code, 13, "{driver} {args:?} went through the link: {run:?}");
            assert!(run.stderr.contains(&refusal), "{driver} {args:?}: {run:?}");
        }
    }
    // The same partition as agmsg resolves it, handed over by the shim agmsg sources.
    let partition = env.store.join("teams/victim");
    let run = run_with(
        &env,
        &[("AGMSG_STORE_IS_PARTITION", "1")],
        &["storage", "--store", partition.to_str().unwrap(), "send", "victim", "a", "b", "hi"],
    );
    assert!(run.code == 13 && run.stderr.contains("refusing to follow it"), "{run:?}");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0, "something was written outside the store");
    // A real partition directory works as before.
    std::fs::remove_file(env.store.join("teams/victim")).unwrap();
    let id = env.storage(&["send", "victim", "a", "b", "hi"]);
    id.ok();
    assert!(env.store.join("teams/victim/messages.db").is_file());
}

#[test]
fn the_call_deadline_binds_inside_host_calls() {
    let env = Env::new().env("AGMSG_DRIVER_TIMEOUT_MS", "1000");
    env.send("t", "alice", "bob", "before");
    // The bound is far below what an unbounded call takes (the fixture sleeps 30 s, waits for the lock
    // up to 60 s) and far above a 1 s deadline plus a loaded machine's process start (4 s was too close).
    // The fixture is built (or waited for, while another test of this binary builds one) before the
    // clock starts: inside it, a build took 28 s of a timed 'sleep'.
    fixture("hostile-storage");
    let timed = |what: &str| {
        let started = std::time::Instant::now();
        let run = hostile(&env, what);
        assert!(started.elapsed() < std::time::Duration::from_secs(15), "{what} took {:?}: {run:?}", started.elapsed());
        run
    };
    // A WASI sleep (epoch interruption alone would wait for it to return).
    let run = timed("sleep");
    assert!(run.code == 13 && run.stderr.contains("exceeded its time limit of 1000 ms"), "{run:?}");
    // Holding the store lock while blocked: the trap drops the instance and the lock with it.
    let run = timed("hold-lock-and-sleep");
    assert!(run.stderr.contains("exceeded its time limit of 1000 ms"), "{run:?}");
    // Waiting for the store lock someone else holds: the wait ends with the call, not after 60 s.
    let held = std::fs::File::open(&env.store).unwrap();
    held.lock().unwrap();
    // The wait is cut to the deadline, so either the driver sees the lock time out or the deadline
    // interrupts it first: both end the call on time.
    let run = timed("lock-wait");
    assert!(
        run.code == 13 && (run.stderr.contains("blocked lock-wait") || run.stderr.contains("exceeded its time limit of 1000 ms")),
        "{run:?}"
    );
    held.unlock().unwrap();
    assert_store_intact(&env);
}

#[test]
fn a_log_flood_is_capped_per_call() {
    let env = env_with_store().env("AGMSG_LOG", "info");
    let run = hostile(&env, "log-flood");
    run.ok();
    assert!(run.stderr.len() < 2 << 20, "stderr got {} bytes", run.stderr.len());
    assert!(run.stderr.contains("log lines") && run.stderr.contains("dropped"), "{}", &run.stderr[run.stderr.len().saturating_sub(500)..]);
}

/// `agmsg-host <args>` in `env`, with more variables.
fn run_with(env: &Env, vars: &[(&str, &str)], args: &[&str]) -> Run {
    env.cmd().envs(vars.iter().copied()).args(args).output().unwrap().into()
}

/// An exporter that never ends: the export stops at its size or time bound, the target keeps its old
/// content and no temp file is left; a convert from such a driver stops the same way and changes
/// nothing.
#[test]
fn an_export_that_never_ends_is_bounded_and_leaves_nothing() {
    let env = env_with_store();
    let driver = fixture("hostile-storage");
    let driver = driver.to_str().unwrap();
    std::fs::write(env.store.join("endless-export"), "").unwrap();
    let out = env.dir.path().join("exports");
    std::fs::create_dir_all(&out).unwrap();
    let target = out.join("events.jsonl");
    std::fs::write(&target, "old\n").unwrap();
    let target = target.to_str().unwrap();
    let listing = || std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect::<Vec<_>>();
    let export = ["--driver", driver, "storage", "export", target];

    let run = run_with(&env, &[("AGMSG_EXPORT_MAX_MB", "4")], &export);
    assert_ne!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("exported more than 4 MiB"), "{run:?}");
    assert_eq!(std::fs::read_to_string(target).unwrap(), "old\n");
    assert_eq!(listing(), ["events.jsonl"], "no temp file is left");

    let started = std::time::Instant::now();
    let run = run_with(&env, &[("AGMSG_OP_TIMEOUT_MS", "500")], &export);
    assert!(run.stderr.contains("still exporting after 500 ms"), "{run:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert_eq!(listing(), ["events.jsonl"], "no temp file is left");

    // A kill mid-export leaves no temp file either (the file has no name until it is complete).
    let mut child = env.cmd().args(export).stderr(std::process::Stdio::null()).spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(listing(), ["events.jsonl"], "no temp file is left after a kill");
    assert_eq!(std::fs::read_to_string(target).unwrap(), "old\n");

    let config = env.dir.path().join("config.json");
    std::fs::write(&config, r#"{"storage":"sqlite"}"#).unwrap();
    let vars = [("AGMSG_CONFIG", config.to_str().unwrap()), ("AGMSG_STORAGE_DRIVER", driver), ("AGMSG_EXPORT_MAX_MB", "4")];
    let run = run_with(&env, &vars, &["storage", "convert", "jsonl"]);
    assert_ne!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("exported more than 4 MiB"), "{run:?}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), r#"{"storage":"sqlite"}"#);
    assert!(!env.store.join("events.jsonl").exists());
    assert!(std::fs::read_dir(&env.store).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().starts_with(".agmsg-convert")));
}

/// Inside a sandbox without /proc the store is still granted (by its checked path), and a partition
/// link is still refused.
#[test]
fn stores_work_without_proc() {
    let env = Env::new();
    let probe = std::process::Command::new("unshare").args(["--mount", "--propagation", "private", "sh", "-c", "umount -l /proc"]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: cannot unmount /proc in a private mount namespace here");
        return;
    }
    let teams = env.dir.path().join("teams");
    let without_proc = |args: &str| -> Run {
        env.program("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c", &format!("umount -l /proc && exec \"$0\" {args}"), common::BIN])
            .env("AGMSG_TEAMS_DIR", &teams)
            .output()
            .unwrap()
            .into()
    };
    let run = without_proc("storage send t alice bob hi");
    run.ok();
    let bodies: Vec<String> =
        env.storage(&["list-unread", "t", "bob"]).json().iter().map(|r| r["body"].as_str().unwrap().to_owned()).collect();
    assert_eq!(bodies, ["hi"]);

    std::fs::create_dir_all(teams.join("victim")).unwrap();
    std::fs::write(teams.join("victim/config.json"), r#"{"drivers":{"partition":"per-team"}}"#).unwrap();
    std::fs::create_dir_all(env.dir.path().join("outside")).unwrap();
    std::fs::create_dir_all(env.store.join("teams")).unwrap();
    std::os::unix::fs::symlink("../../outside", env.store.join("teams/victim")).unwrap();
    let run = without_proc("storage send victim a b hi");
    assert!(run.code == 13 && run.stderr.contains("refusing to follow it"), "{run:?}");
    assert_eq!(std::fs::read_dir(env.dir.path().join("outside")).unwrap().count(), 0);
}
