//! The root workspace lists its members by name: a directory being written under `drivers/` or
//! `tests/fixtures/` (empty, a half-written Cargo.toml, a `driver new` project with its own `[workspace]`)
//! must not stop cargo in the tree, and every real driver and fixture must be listed (host/build.rs
//! bundles from that list).

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn root_manifest() -> String {
    std::fs::read_to_string(workspace().join("Cargo.toml")).unwrap()
}

fn members(manifest: &str) -> Vec<String> {
    let table: toml::Table = toml::from_str(manifest).unwrap();
    let members = table["workspace"]["members"].as_array().expect("workspace.members");
    members.iter().map(|m| m.as_str().unwrap().to_owned()).collect()
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The root manifest, verbatim, over stub packages for its members, with stray directories beside them:
/// `cargo metadata` must load exactly the listed members.
#[test]
fn a_half_written_driver_directory_does_not_break_the_workspace() {
    let manifest = root_manifest();
    let listed = members(&manifest);
    let tree = tempfile::tempdir().unwrap();
    write(&tree.path().join("Cargo.toml"), &manifest);
    for member in &listed {
        if member.contains('*') {
            continue; // a glob: the strays below are what it would pick up
        }
        let name = member.replace('/', "-");
        write(
            &tree.path().join(member).join("Cargo.toml"),
            &format!("[package]\nname = \"stub-{name}\"\nversion = \"0.0.0\"\nedition = \"2021\"\n"),
        );
        write(&tree.path().join(member).join("src/lib.rs"), "");
    }
    for stray in ["drivers", "tests/fixtures"] {
        std::fs::create_dir_all(tree.path().join(stray).join("empty-new-dir")).unwrap();
        write(&tree.path().join(stray).join("half-written/Cargo.toml"), "[package\nname = \"half");
        // What `driver new` writes: a project of its own.
        write(
            &tree.path().join(stray).join("scaffolded/Cargo.toml"),
            "[package]\nname = \"my-store\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[workspace]\n",
        );
        write(&tree.path().join(stray).join("scaffolded/src/lib.rs"), "");
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(tree.path())
        .args(["metadata", "--no-deps", "--offline", "--format-version", "1"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo metadata failed in a tree with stray driver directories:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(metadata["workspace_members"].as_array().unwrap().len(), listed.len(), "{metadata}");
}

/// Listing by name must not forget one: every directory under `drivers/` and `tests/fixtures/` with a
/// Cargo.toml is a member, and every member exists.
#[test]
fn every_driver_and_fixture_directory_is_a_listed_member() {
    let listed = members(&root_manifest());
    for member in &listed {
        assert!(!member.contains(['*', '?', '[']), "workspace member {member:?} is a glob");
        assert!(workspace().join(member).join("Cargo.toml").is_file(), "workspace member {member:?} has no Cargo.toml");
    }
    for parent in ["drivers", "tests/fixtures"] {
        for entry in std::fs::read_dir(workspace().join(parent)).unwrap() {
            let entry = entry.unwrap();
            if !entry.path().join("Cargo.toml").is_file() {
                continue;
            }
            let member = format!("{parent}/{}", entry.file_name().to_str().unwrap());
            assert!(listed.contains(&member), "{member} has a Cargo.toml but is not listed in the root Cargo.toml's workspace.members");
        }
    }
}
