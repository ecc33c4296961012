//! Helpers shared by the test binaries: an isolated environment per test, the built `agmsg-host`
//! binary, and fixture components built by the test suite.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

pub const BIN: &str = env!("CARGO_BIN_EXE_agmsg-host");

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// One compile cache for the whole run, so that each component is compiled once.
pub fn shared_cache() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("agmsg-cache")
}

/// An isolated home, store and config for one test.
pub struct Env {
    pub dir: tempfile::TempDir,
    pub store: PathBuf,
    pub cache: PathBuf,
    extra: Vec<(String, String)>,
}

/// What a run printed and how it exited.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn lines(&self) -> Vec<&str> {
        self.stdout.lines().collect()
    }
    pub fn json(&self) -> Vec<serde_json::Value> {
        self.stdout.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}"))).collect()
    }
    #[track_caller]
    pub fn ok(&self) -> &Self {
        assert_eq!(self.code, 0, "expected success: {self:#?}");
        self
    }
}

impl From<Output> for Run {
    fn from(o: Output) -> Run {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Env {
    pub fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        Env { store, cache: shared_cache(), dir, extra: Vec::new() }
    }

    pub fn with_cache(mut self, cache: PathBuf) -> Env {
        self.cache = cache;
        self
    }

    pub fn env(mut self, key: &str, value: &str) -> Env {
        self.extra.push((key.into(), value.into()));
        self
    }

    pub fn db(&self) -> PathBuf {
        self.store.join("messages.db")
    }

    /// `agmsg-host` with a clean environment pointing at this test's store.
    pub fn cmd(&self) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.env_clear()
            .env("HOME", self.dir.path())
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("AGMSG_STORAGE_PATH", &self.store)
            .env("AGMSG_CACHE_DIR", &self.cache)
            .current_dir(self.dir.path())
            .stdin(Stdio::null());
        for (k, v) in &self.extra {
            cmd.env(k, v);
        }
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Run {
        self.cmd().args(args).output().unwrap().into()
    }

    pub fn run_stdin(&self, args: &[&str], stdin: &[u8]) -> Run {
        let mut child = self.cmd().args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        child.stdin.take().unwrap().write_all(stdin).unwrap();
        child.wait_with_output().unwrap().into()
    }

    /// `storage <args>`.
    pub fn storage(&self, args: &[&str]) -> Run {
        let mut all = vec!["storage"];
        all.extend_from_slice(args);
        self.run(&all)
    }

    pub fn send(&self, team: &str, from: &str, to: &str, body: &str) -> String {
        let run = self.storage(&["send", team, from, to, body]);
        run.ok();
        run.stdout.trim_end().to_owned()
    }
}

/// Build a fixture component from `tests/fixtures/<package>` (once per test binary) and return its path.
pub fn fixture(package: &str) -> PathBuf {
    static BUILT: OnceLock<std::sync::Mutex<Vec<String>>> = OnceLock::new();
    let built = BUILT.get_or_init(Default::default);
    let mut built = built.lock().unwrap();
    let target_dir = workspace().join("target").join("wasm");
    let path = target_dir.join("wasm32-wasip2").join("driver").join(format!("{}.wasm", package.replace('-', "_")));
    if !built.iter().any(|p| p == package) {
        let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .current_dir(workspace())
            .args(["build", "--quiet", "--target", "wasm32-wasip2", "--profile", "driver", "-p", package, "--target-dir"])
            .arg(&target_dir)
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("RUSTFLAGS")
            .status()
            .expect("running cargo to build a fixture");
        assert!(status.success(), "building fixture {package} failed");
        built.push(package.to_owned());
    }
    path
}
