//! `agmsg-host driver new`: what it generates builds with `cargo build --release --target wasm32-wasip2`
//! and passes `driver test` as generated, for every axis, made by a copy of the binary outside the build
//! tree and building from nothing but itself and crates.io.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Env, Run, build_project as build};

/// `driver new <axis> <name>` as someone with only the binary would run it: agmsg-host copied out of
/// the build tree into a directory of its own, run where the project is to go (issue 35 §5). The
/// project must build from what it holds and a registry: no file of it names the build tree, and
/// every crate cargo builds it from that is not from a registry is inside it.
fn new_project(env: &Env, axis: &str, name: &str) -> PathBuf {
    // Linked, else copied (another file system: a copy may meet ETXTBSY below).
    let bin = common::install_binary(&env.dir.path().join("bin"));
    let projects = env.dir.path().join("projects");
    std::fs::create_dir_all(&projects).unwrap();
    // A test thread that forks while this copy's file is still open for writing gives the child that
    // descriptor until it execs: running the copy meanwhile fails with ETXTBSY. Try again shortly.
    let mut tries = 0;
    let run: Run = loop {
        match env.program(&bin).current_dir(&projects).args(["driver", "new", axis, name]).output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 50 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            out => break out.unwrap().into(),
        }
    };
    assert_eq!(run.code, 0, "{run:?}");
    let project = projects.join(name);
    assert_self_contained(&project);
    project
}

fn assert_self_contained(project: &Path) {
    let tree = common::workspace().canonicalize().unwrap();
    let mut todo = vec![project.to_owned()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
                assert!(!names_path(&text, tree.to_str().unwrap()), "{} names the build tree {}", path.display(), tree.display());
            }
        }
    }
    let out = Command::new("cargo")
        .current_dir(project)
        .args(["metadata", "--format-version", "1"])
        .env("RUSTUP_TOOLCHAIN", common::toolchain())
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let project = project.canonicalize().unwrap();
    for package in metadata["packages"].as_array().unwrap().iter().filter(|p| p["source"].is_null()) {
        let manifest = Path::new(package["manifest_path"].as_str().unwrap());
        assert!(manifest.starts_with(&project), "{} builds from {} (outside the project)", project.display(), manifest.display());
    }
}

/// Whether `text` names `path` itself: as a whole path, not as part of a longer name (a build tree at
/// /tmp/x is not named by /tmp/xyz or /var/tmp/x in some vendored file).
fn names_path(text: &str, path: &str) -> bool {
    let name_char = |c: char| c.is_alphanumeric() || "._-".contains(c);
    text.match_indices(path).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + path.len()..].chars().next();
        !before.is_some_and(name_char) && !after.is_some_and(name_char)
    })
}

#[test]
fn a_path_is_named_only_whole() {
    assert!(names_path("path = \"/tmp/x\"", "/tmp/x"));
    assert!(names_path("/tmp/x/target/debug", "/tmp/x"));
    assert!(names_path("/tmp/x", "/tmp/x"));
    assert!(!names_path("see /tmp/xyz for it", "/tmp/x"));
    assert!(!names_path("/var/tmp/x", "/tmp/x"));
    assert!(!names_path("/tmp/x.log", "/tmp/x"));
}

#[test]
fn generated_drivers_build_and_pass_the_contract_suite() {
    let env = Env::new();
    let store = new_project(&env, "storage", "scaffold-store");
    let wasm = build(&store, "scaffold_store");
    let run = env.run(&["driver", "test", wasm.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(run.stdout.ends_with("13 of 22 rules passed, 9 skipped (not applicable to this driver)\n"), "{run:?}");
    // And it is a working store.
    let sent = env.run(&["--driver", wasm.to_str().unwrap(), "storage", "send", "t", "alice", "bob", "through the scaffold"]);
    assert_eq!(sent.code, 0, "{sent:?}");

    let terminal = new_project(&env, "terminal", "scaffold-term");
    let wasm = build(&terminal, "scaffold_term");
    std::fs::copy(&wasm, terminal.join("driver.wasm")).unwrap();
    let run = env.run(&["driver", "test", terminal.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(run.stdout.ends_with("6 of 6 rules passed\n"), "{run:?}");
    // Its package manifest installs it as a plugin, usable by name.
    let run = env.run(&["plugin", "install", terminal.to_str().unwrap(), "--yes"]);
    assert_eq!(run.code, 0, "{run:?}");
    let run = env.run(&["terminal", "--driver", "scaffold-term", "describe"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("name=scaffold-term"), "{run:?}");
}

#[test]
fn a_generated_delivery_plug_builds_and_passes_the_types_suite() {
    let env = Env::new();
    let project = new_project(&env, "types", "scaffold-plug");
    let wasm = build(&project, "scaffold_plug");
    // The project is its plug package once the component is beside its agmsg-driver.toml.
    std::fs::copy(&wasm, project.join("driver.wasm")).unwrap();
    let run = env.run(&["driver", "test", project.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(run.stdout.ends_with("5 of 5 rules passed\n"), "{run:?}");
    // Tried on a project as a type's plug: it overrides nothing, so agmsg's default JSON hooks.
    let target = env.dir.path().join("app");
    std::fs::create_dir(&target).unwrap();
    let run = env.run(&[
        "--driver",
        project.join("driver.wasm").to_str().unwrap(),
        "delivery",
        "set",
        "turn",
        "claude-code",
        target.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(std::fs::read_to_string(target.join(".claude/settings.local.json")).unwrap().contains("check-inbox.sh"));
}

#[test]
fn refuses_bad_names_and_non_empty_directories() {
    let env = Env::new();
    let run = env.run(&["driver", "new", "storage", "Bad Name", "--path", env.dir.path().join("x").to_str().unwrap()]);
    assert_eq!(run.code, 2, "{run:?}");
    std::fs::write(env.dir.path().join("keep.txt"), "mine").unwrap();
    let run = env.run(&["driver", "new", "storage", "ok-name", "--path", env.dir.path().to_str().unwrap()]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("is not empty"), "{run:?}");
}

/// A project that cannot be written is a failure (exit 1) with why, not a usage error: the command
/// line was right. (It exited 2, the usage code, before the error model.)
#[test]
fn a_directory_that_cannot_be_written_fails_with_1_not_usage() {
    let env = Env::new();
    let run = env.run(&["driver", "new", "storage", "ok-name", "--path", "/proc/agmsg-host-nowhere/ok-name"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("cannot create /proc/agmsg-host-nowhere/ok-name"), "{run:?}");
}

/// `driver test` that cannot make its scratch directory fails with 1 and why: its command line was
/// right. (It exited 2, the usage code, before the error model; with no compile cache configured it
/// needs a temporary directory, and TMPDIR names none.)
#[test]
fn driver_test_without_a_scratch_directory_fails_with_1_not_usage() {
    let out = std::process::Command::new(common::BIN)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("TMPDIR", "/proc/agmsg-host-nowhere")
        .args(["driver", "test", "jsonl"])
        .output()
        .unwrap();
    let run = Run::from(out);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("cannot create a temporary directory"), "{run:?}");
}
