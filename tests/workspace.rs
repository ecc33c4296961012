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

/// A released WIT version's text never changes: `wit/released/<package>@<version>.wit` holds each
/// released text, pinned by `wit/released/SHA256SUMS`, and each package's current text is exactly the
/// released text of the version it declares. A change to a contract is a new version: bump the
/// `package` line (semver: only additions within a major), add its text here and its sum there.
#[test]
fn released_wit_texts_never_change() {
    use sha2::{Digest, Sha256};
    let released = workspace().join("wit/released");
    let sums = std::fs::read_to_string(released.join("SHA256SUMS")).unwrap();
    let mut pinned = std::collections::BTreeMap::new();
    for line in sums.lines() {
        let (sum, name) = line.split_once("  ").unwrap_or_else(|| panic!("SHA256SUMS: {line:?}"));
        pinned.insert(name.to_owned(), sum.to_owned());
    }
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&released).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name == "SHA256SUMS" {
            continue;
        }
        let text = std::fs::read(released.join(&name)).unwrap();
        let sum: String = Sha256::digest(&text).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(pinned.get(&name), Some(&sum), "{name}: a released text changed (or is not pinned in SHA256SUMS)");
        let declared = format!("package agmsg:{};", name.trim_end_matches(".wit"));
        assert!(String::from_utf8(text).unwrap().lines().any(|l| l == declared), "{name} declares another version");
        found.push(name);
    }
    assert_eq!(found.len(), pinned.len(), "SHA256SUMS pins a file that is not there: {pinned:?}");
    for package in ["storage", "terminal", "agent", "host"] {
        let current = std::fs::read_to_string(workspace().join(format!("wit/{package}/{package}.wit"))).unwrap();
        let version = current
            .lines()
            .find_map(|l| l.strip_prefix(&format!("package agmsg:{package}@")))
            .and_then(|v| v.strip_suffix(';'))
            .unwrap_or_else(|| panic!("wit/{package}: no package line"));
        let frozen = std::fs::read_to_string(released.join(format!("{package}@{version}.wit")))
            .unwrap_or_else(|_| panic!("wit/{package} declares {version}, which wit/released does not hold: release it"));
        assert!(current == frozen, "wit/{package}/{package}.wit differs from the released {package}@{version}: bump its version");
    }
}
