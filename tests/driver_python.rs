//! The storage contract is language-independent: `examples/storage-python`, a storage driver written in
//! Python and built into a component with componentize-py, passes `agmsg-host driver test` (all the
//! storage rules) and works as a store.
//!
//! Needs CPython 3 with venv and pip, and PyPI (the pinned componentize-py, a wheel whose sha256 must be
//! one `examples/storage-python/build.sh` lists, is installed into a virtual environment under
//! `target/python-driver/`, reused when present). Without them this test fails, with what is missing:
//! it never skips.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use common::{Env, workspace};

/// Build the Python driver with its build script; the component's path.
fn build_python_driver() -> PathBuf {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    match Command::new(&python).arg("--version").output() {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!(
            "`{python} --version` failed ({}): the Python storage driver test needs CPython 3 with venv and pip\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => panic!("cannot run `{python}` ({e}): the Python storage driver test needs CPython 3 with venv and pip"),
    }
    let dir = workspace().join("target").join("python-driver");
    let wasm = dir.join("storage_python.wasm");
    let script = workspace().join("examples").join("storage-python").join("build.sh");
    let started = Instant::now();
    let out = Command::new("bash").arg(&script).arg(&wasm).arg(dir.join("venv")).env_remove("VIRTUAL_ENV").output().expect("running bash");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{} failed ({}):\n{stderr}{}", script.display(), out.status, String::from_utf8_lossy(&out.stdout));
    eprintln!("python driver built in {:.1} s:\n{stderr}", started.elapsed().as_secs_f64());
    assert!(wasm.is_file(), "{} wrote no {}", script.display(), wasm.display());
    wasm
}

#[test]
fn python_driver_passes_the_storage_contract_suite() {
    let wasm = build_python_driver();
    let wasm = wasm.to_str().unwrap();
    let env = Env::new();

    let started = Instant::now();
    let run = env.run(&["driver", "test", wasm]);
    eprintln!("driver test took {:.1} s:\n{}", started.elapsed().as_secs_f64(), run.stdout);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.lines().iter().filter(|l| l.starts_with("PASS  ")).count(), 13, "{run:?}");
    assert!(run.stdout.ends_with("13 of 22 rules passed, 9 skipped (not applicable to this driver)\n"), "{run:?}");

    // And it is a working store: a send, and the message back through the same component.
    let sent = env.run(&["--driver", wasm, "storage", "send", "t", "alice", "bob", "from Python"]);
    assert_eq!(sent.code, 0, "{sent:?}");
    let id = sent.stdout.trim_end();
    assert_eq!(id.len(), 36, "a UUID: {sent:?}");
    assert_eq!(&id[14..15], "7", "a UUIDv7: {sent:?}");
    let unread = env.run(&["--driver", wasm, "storage", "list-unread", "t", "bob"]);
    assert_eq!(unread.code, 0, "{unread:?}");
    let records = unread.json();
    assert_eq!(records.len(), 1, "{unread:?}");
    assert_eq!(records[0]["id"], id);
    assert_eq!(records[0]["from"], "alice");
    assert_eq!(records[0]["body"], "from Python");
    // The store is the driver's own file.
    assert!(env.store.join("store.json").is_file(), "{:?}", std::fs::read_dir(&env.store).map(|d| d.count()));

    // As a user meets it: inspected, installed as a plugin with its manifest (which declares CPython's
    // sockets inert), then used by name.
    let manifest = workspace().join("examples/storage-python/agmsg-driver.toml");
    let manifest = manifest.to_str().unwrap();
    let run = env.run(&["plugin", "inspect", wasm, "--manifest", manifest]);
    assert_eq!(run.code, 0, "{run:?}");
    for expected in
        ["storage/python 0.1.0", "inert-sockets", "wasi:sockets/tcp@", "agmsg:storage/driver@1.2.0", "Verdict: loads on this host"]
    {
        assert!(run.stdout.contains(expected), "{expected}: {}", run.stdout);
    }
    let run = env.run(&["plugin", "install", wasm, "--manifest", manifest, "--yes"]);
    assert_eq!(run.code, 0, "{run:?}");
    let by_name = |args: &[&str]| -> common::Run {
        env.cmd().env("AGMSG_STORAGE_DRIVER", "python").arg("storage").args(args).output().unwrap().into()
    };
    assert_eq!(by_name(&["send", "t", "carol", "bob", "by name"]).code, 0);
    let unread = by_name(&["list-unread", "t", "bob"]);
    let bodies: Vec<String> = unread.json().iter().map(|r| r["body"].as_str().unwrap().to_owned()).collect();
    assert_eq!(bodies, ["from Python", "by name"], "{unread:?}");
}
