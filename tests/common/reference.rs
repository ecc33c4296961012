//! agmsg's own scripts for the tests that run them against agmsg-host (its repository is public; it is
//! read at run time from a git directory, `AGMSG_REFERENCE_REPO`, never committed here).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use super::Env;

/// Where agmsg's repository is looked for when `AGMSG_REFERENCE_REPO` is unset.
const DEFAULT_REPO: &str = "/work/.mirror/kappaseijin+agmsg/repo";

/// agmsg's repository (a git directory), or `None`: the test is skipped, saying why, unless
/// `AGMSG_REQUIRE_REFERENCE=1` makes that a failure. Also `None` when one of `tools` is missing.
pub fn repo(tools: &[&str]) -> Option<String> {
    let repo = std::env::var("AGMSG_REFERENCE_REPO").unwrap_or_else(|_| DEFAULT_REPO.to_owned());
    let required = std::env::var("AGMSG_REQUIRE_REFERENCE").as_deref() == Ok("1");
    if !Path::new(&repo).exists() {
        assert!(!required, "agmsg's repository is not at {repo} (AGMSG_REFERENCE_REPO)");
        eprintln!("skipped: agmsg's repository is not at {repo} (set AGMSG_REFERENCE_REPO to a clone's git directory)");
        return None;
    }
    for tool in tools {
        if Command::new(tool).arg("--version").output().is_err() {
            assert!(!required, "agmsg's scripts need {tool}");
            eprintln!("skipped: agmsg's scripts need {tool}, which is not installed");
            return None;
        }
    }
    Some(repo)
}

/// agmsg's `scripts/` extracted below `<env>/agmsg` (which it returns), or `None` as [`repo`] says.
pub fn scripts(env: &Env, tools: &[&str]) -> Option<PathBuf> {
    let repo = repo(tools)?;
    let dir = env.dir.path().join("agmsg");
    std::fs::create_dir_all(&dir).unwrap();
    let tar = env.dir.path().join("scripts.tar");
    let archived = Command::new("git").args(["-C", &repo, "archive", "-o"]).arg(&tar).args(["HEAD", "scripts"]).output().unwrap();
    assert!(archived.status.success(), "git archive: {archived:?}");
    let extracted = Command::new("tar").arg("-xf").arg(&tar).arg("-C").arg(&dir).output().unwrap();
    assert!(extracted.status.success(), "tar: {extracted:?}");
    assert!(dir.join("scripts/delivery.sh").is_file() && dir.join("scripts/lib/storage.sh").is_file(), "no agmsg scripts/ in {repo}");
    Some(dir)
}
