//! `agmsg-host driver new`: what it generates builds with `cargo build --release --target wasm32-wasip2`
//! and passes `driver test` as generated, for both axes.

mod common;

use std::path::Path;
use std::process::Command;

use common::{Env, workspace};

/// The repository's pinned toolchain, for a project outside the repository.
fn toolchain() -> String {
    let text = std::fs::read_to_string(workspace().join("rust-toolchain.toml")).unwrap();
    let line = text.lines().find(|l| l.trim_start().starts_with("channel")).expect("a channel in rust-toolchain.toml");
    line.split('"').nth(1).unwrap().to_owned()
}

/// Build a generated project; its wasm file.
fn build(project: &Path, crate_file: &str) -> std::path::PathBuf {
    let target_dir = workspace().join("target").join("scaffold");
    let status = Command::new("cargo")
        .current_dir(project)
        .args(["build", "--quiet", "--release", "--target", "wasm32-wasip2"])
        .env("RUSTUP_TOOLCHAIN", toolchain())
        .env("CARGO_TARGET_DIR", &target_dir)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .status()
        .expect("running cargo");
    assert!(status.success(), "building the generated project in {} failed", project.display());
    target_dir.join("wasm32-wasip2").join("release").join(format!("{crate_file}.wasm"))
}

#[test]
fn generated_drivers_build_and_pass_the_contract_suite() {
    let env = Env::new();
    let projects = env.dir.path().join("projects");

    let store = projects.join("scaffold-store");
    let run = env.run(&["driver", "new", "storage", "scaffold-store", "--path", store.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    let wasm = build(&store, "scaffold_store");
    let run = env.run(&["driver", "test", wasm.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(run.stdout.ends_with("13 of 13 rules passed\n"), "{run:?}");
    // And it is a working store.
    let sent = env.run(&["--driver", wasm.to_str().unwrap(), "storage", "send", "t", "alice", "bob", "through the scaffold"]);
    assert_eq!(sent.code, 0, "{sent:?}");

    let terminal = projects.join("scaffold-term");
    let run = env.run(&["driver", "new", "terminal", "scaffold-term", "--path", terminal.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    let wasm = build(&terminal, "scaffold_term");
    std::fs::copy(&wasm, terminal.join("driver.wasm")).unwrap();
    let run = env.run(&["driver", "test", terminal.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(run.stdout.ends_with("5 of 5 rules passed\n"), "{run:?}");
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
