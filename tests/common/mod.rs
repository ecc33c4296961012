//! Helpers shared by the test binaries: an isolated environment per test, the built `agmsg-host`
//! binary, and fixture components built by the test suite.
#![allow(dead_code)]

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

#[allow(unused_imports)]
pub use agmsg_conformance::{Harness, Run};

pub mod bounded;
pub mod egress;
pub mod lines;
pub mod netns;
pub mod pid;
pub mod postgres;
pub mod reference;
pub mod registry;
pub mod sync;

pub const BIN: &str = env!("CARGO_BIN_EXE_agmsg-host");
/// The whole host, which `BIN` (a small front) runs beside it.
pub const ENGINE: &str = env!("CARGO_BIN_EXE_agmsg-host-engine");

/// agmsg-host placed into `dir` as an install places it: the program and its engine beside it (hard
/// links, which write nothing; copies across file systems). The program's path.
pub fn install_binary(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    for (built, name) in [(ENGINE, "agmsg-host-engine"), (BIN, "agmsg-host")] {
        let placed = dir.join(name);
        if !placed.exists() && std::fs::hard_link(built, &placed).is_err() {
            std::fs::copy(built, &placed).unwrap();
        }
    }
    dir.join("agmsg-host")
}

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// One compile cache for the whole run, so that each component is compiled once.
pub fn shared_cache() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("agmsg-cache")
}

/// The binary under test and the run's shared compile cache, for the contract suite's harness.
pub fn harness() -> Harness {
    Harness { bin: PathBuf::from(BIN), cache: shared_cache(), env: Vec::new(), cleanup: None }
}

/// An isolated home, store and config for one test: the contract suite's [`agmsg_conformance::Env`]
/// running the binary under test.
pub struct Env(pub agmsg_conformance::Env);

impl Env {
    pub fn new() -> Env {
        Env(agmsg_conformance::Env::new(&harness()))
    }

    pub fn with_cache(self, cache: PathBuf) -> Env {
        Env(self.0.with_cache(cache))
    }

    pub fn env(self, key: &str, value: &str) -> Env {
        Env(self.0.env(key, value))
    }
}

impl std::ops::Deref for Env {
    type Target = agmsg_conformance::Env;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

/// Settings of the build that made this test, meant for it alone, which a wasm build the test runs must
/// not inherit: flags, and scripts/test's lint wrapper (clippy-driver with `-D warnings` for this
/// workspace's crates: fixtures are hostile on purpose, and a wrapper that comes and goes would make
/// cargo rebuild the SDK in the target directory the bundled drivers' build shares).
const HOST_BUILD_ONLY: &[&str] =
    &["RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER", "CLIPPY_ARGS", "CLIPPY_CONF_DIR"];

/// `Command::env_remove` for each name.
trait EnvsRemove {
    fn envs_remove(&mut self, names: &[&str]) -> &mut Self;
}

impl EnvsRemove for Command {
    fn envs_remove(&mut self, names: &[&str]) -> &mut Self {
        names.iter().fold(self, |cmd, name| cmd.env_remove(name))
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
            .envs_remove(HOST_BUILD_ONLY)
            .status()
            .expect("running cargo to build a fixture");
        assert!(status.success(), "building fixture {package} failed");
        built.push(package.to_owned());
    }
    path
}

/// The repository's pinned toolchain, for a project outside the workspace.
pub fn toolchain() -> String {
    let text = std::fs::read_to_string(workspace().join("rust-toolchain.toml")).unwrap();
    let line = text.lines().find(|l| l.trim_start().starts_with("channel")).expect("a channel in rust-toolchain.toml");
    line.split('"').nth(1).unwrap().to_owned()
}

/// Build a driver project of its own (a `driver new` project, an example) as its author would, with
/// `cargo build --release --target wasm32-wasip2`, into one shared target directory; its wasm file.
pub fn build_project(project: &Path, crate_file: &str) -> PathBuf {
    let target_dir = workspace().join("target").join("scaffold");
    let status = Command::new("cargo")
        .current_dir(project)
        .args(["build", "--quiet", "--release", "--target", "wasm32-wasip2"])
        .env("RUSTUP_TOOLCHAIN", toolchain())
        .env("CARGO_TARGET_DIR", &target_dir)
        .envs_remove(HOST_BUILD_ONLY)
        .status()
        .expect("running cargo");
    assert!(status.success(), "building the driver project in {} failed", project.display());
    target_dir.join("wasm32-wasip2").join("release").join(format!("{crate_file}.wasm"))
}

/// The write end of a pipe whose read end is already closed (a stdout its reader has closed).
pub fn closed_pipe() -> std::os::fd::OwnedFd {
    let (read, write) = std::io::pipe().unwrap();
    drop(read);
    write.into()
}

/// SIGKILL a shell loop and every child of it (agmsg-host processes mid-op).
pub fn kill_tree(pid: u32) {
    let pid = pid.to_string();
    for _ in 0..2 {
        let _ = Command::new("pkill").args(["-KILL", "-P", &pid]).status();
        let _ = Command::new("kill").args(["-KILL", &pid]).status();
    }
}

/// `writers` shell loops at once, loop `w` running `sends` real `agmsg-host storage send t w<w> bob
/// w<w>-<i>` one after another (as agmsg's scripts would) in the home `home(w)`: the ids they printed,
/// once checked that every loop ended well, no send failed and no id came twice.
pub fn concurrent_sends<'a>(writers: usize, sends: usize, home: impl Fn(usize) -> &'a Env) -> HashSet<String> {
    let script = format!(r#"for i in $(seq 1 {sends}); do "$0" storage send t "w$1" bob "w$1-$i" || echo "FAILED $i" >&2; done"#);
    let loops: Vec<_> = (0..writers)
        .map(|w| {
            home(w)
                .program("bash")
                .args(["-c", &script, BIN, &w.to_string()])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut ids = HashSet::new();
    for writer in loops {
        let out = writer.wait_with_output().unwrap();
        assert!(out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("FAILED"), "a send failed instead of waiting: {stderr}");
        for id in String::from_utf8(out.stdout).unwrap().lines() {
            assert!(ids.insert(id.to_owned()), "duplicate id {id}");
        }
    }
    ids
}
