//! agmsg's own scripts for the tests that run them against agmsg-host. agmsg is MIT-licensed and public,
//! but never committed here: it is read at run time from agmsg 1.2.1's release tree
//! (`AGMSG_REFERENCE_TREE`, else `../shared/agmsg-1.2.1` beside this repository, as CI lays it out; it
//! may be read-only, so it is always copied first), else from a clone's git directory
//! (`AGMSG_REFERENCE_REPO`).
//!
//! Without either, or without a tool agmsg's scripts need, a test is skipped: it says why on stderr,
//! appends `<test binary>::<test>: <why>` to the file `AGMSG_SKIP_LOG` names (so `scripts/test` can list
//! it in its summary: cargo hides a passing test's stderr), and passes. `AGMSG_REQUIRE_REFERENCE=1`
//! makes a skip a failure; `scripts/test` sets it when the release tree is there.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::Env;

/// Where agmsg's repository is looked for when `AGMSG_REFERENCE_REPO` is unset (one build machine's).
const DEFAULT_REPO: &str = "/work/.mirror/kappaseijin+agmsg/repo";

/// Where agmsg's scripts come from.
#[derive(Clone, Debug)]
pub enum Source {
    /// agmsg 1.2.1's release tree (the directory holding `install.sh` and `scripts/`), never written.
    Tree(PathBuf),
    /// A clone's git directory; files are taken from its `HEAD`.
    Repo(String),
}

impl Source {
    /// Copy `paths` (relative to agmsg's root: `scripts`, `tests/helpers/mock_remote_server.py`, ...)
    /// below `into`, writable by the user as an install is.
    pub fn extract(&self, into: &Path, paths: &[&str]) {
        std::fs::create_dir_all(into).unwrap();
        match self {
            Source::Tree(tree) => {
                for path in paths {
                    let to = into.join(path);
                    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                    let copied = Command::new("cp").arg("-R").arg(tree.join(path)).arg(&to).output().unwrap();
                    assert!(copied.status.success(), "cp {path}: {copied:?}");
                }
                let chmod = Command::new("chmod").args(["-R", "u+w"]).arg(into).output().unwrap();
                assert!(chmod.status.success(), "{chmod:?}");
            }
            Source::Repo(repo) => {
                let tar = tempfile::NamedTempFile::new().unwrap();
                let archived =
                    Command::new("git").args(["-C", repo, "archive", "-o"]).arg(tar.path()).arg("HEAD").args(paths).output().unwrap();
                assert!(archived.status.success(), "git archive: {archived:?}");
                let extracted = Command::new("tar").arg("-xf").arg(tar.path()).arg("-C").arg(into).output().unwrap();
                assert!(extracted.status.success(), "tar: {extracted:?}");
            }
        }
    }

    /// The text of one of agmsg's files (`scripts/internal/sync-cipher.mjs`).
    pub fn read(&self, path: &str) -> String {
        match self {
            Source::Tree(tree) => std::fs::read_to_string(tree.join(path)).unwrap_or_else(|e| panic!("{}: {e}", tree.join(path).display())),
            Source::Repo(repo) => {
                let shown = Command::new("git").args(["-C", repo, "show"]).arg(format!("HEAD:{path}")).output().unwrap();
                assert!(shown.status.success(), "git show {path}: {shown:?}");
                String::from_utf8(shown.stdout).unwrap()
            }
        }
    }
}

/// agmsg 1.2.1's release tree: `AGMSG_REFERENCE_TREE`, else `<workspace>/../shared/agmsg-1.2.1`; `None`
/// when no `install.sh` is there.
pub fn release_tree() -> Option<PathBuf> {
    let tree = tree_path();
    tree.join("install.sh").is_file().then_some(tree)
}

/// Where agmsg 1.2.1's release tree is looked for.
fn tree_path() -> PathBuf {
    std::env::var_os("AGMSG_REFERENCE_TREE")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| super::workspace().join("../shared/agmsg-1.2.1"))
}

/// Whether a skip is a failure (`AGMSG_REQUIRE_REFERENCE=1`).
fn required() -> bool {
    std::env::var("AGMSG_REQUIRE_REFERENCE").as_deref() == Ok("1")
}

/// The running test, as `<test binary>::<test>`.
fn test_name() -> String {
    let thread = std::thread::current();
    format!("{}::{}", env!("CARGO_CRATE_NAME"), thread.name().unwrap_or("?"))
}

/// Skip the running test: say why, log it for `scripts/test`'s summary, or fail when a skip is not
/// allowed.
pub fn skip(why: &str) {
    assert!(!required(), "{why} (AGMSG_REQUIRE_REFERENCE=1: this test must run)");
    eprintln!("skipped: {why}");
    if let Some(log) = std::env::var_os("AGMSG_SKIP_LOG").filter(|v| !v.is_empty()) {
        let line = format!("{}: {why}\n", test_name());
        if let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(log) {
            let _ = file.write_all(line.as_bytes());
        }
    }
}

/// Whether every one of `tools` runs (else skipped, saying which).
pub fn tools(tools: &[&str]) -> bool {
    for tool in tools {
        if Command::new(tool).arg("--version").output().is_err() {
            skip(&format!("agmsg's scripts need {tool}, which is not installed (scripts/setup installs it)"));
            return false;
        }
    }
    true
}

/// agmsg 1.2.1's release tree, else its repository, or `None`: skipped, saying why. Also `None` when
/// one of `tools` is missing.
pub fn source(tools_needed: &[&str]) -> Option<Source> {
    let source = match release_tree() {
        Some(tree) => Source::Tree(tree),
        None => {
            let repo = std::env::var("AGMSG_REFERENCE_REPO").unwrap_or_else(|_| DEFAULT_REPO.to_owned());
            if !Path::new(&repo).exists() {
                skip(&format!(
                    "agmsg 1.2.1 is neither at {} (AGMSG_REFERENCE_TREE, its release tree) nor at {repo} (AGMSG_REFERENCE_REPO, a clone's git directory)",
                    tree_path().display()
                ));
                return None;
            }
            if !tools(&["git", "tar"]) {
                return None;
            }
            Source::Repo(repo)
        }
    };
    tools(tools_needed).then_some(source)
}

/// agmsg 1.2.1's release tree (what its `install.sh` installs from), or `None`: skipped, saying why.
pub fn tree(tools_needed: &[&str]) -> Option<PathBuf> {
    let Some(tree) = release_tree() else {
        skip(&format!("agmsg 1.2.1's release tree is not at {} (set AGMSG_REFERENCE_TREE to it)", tree_path().display()));
        return None;
    };
    tools(tools_needed).then_some(tree)
}

/// agmsg's `scripts/` copied below `<env>/agmsg` (which it returns), or `None` as [`source`] says.
pub fn scripts(env: &Env, tools_needed: &[&str]) -> Option<PathBuf> {
    let source = source(tools_needed)?;
    let dir = env.dir.path().join("agmsg");
    source.extract(&dir, &["scripts"]);
    assert!(dir.join("scripts/delivery.sh").is_file() && dir.join("scripts/lib/storage.sh").is_file(), "no agmsg scripts/ from {source:?}");
    Some(dir)
}
