//! The harness of the driver contract suites: a rule drives the `agmsg-host` binary against a driver in
//! a fresh home and store and panics (an assertion) when the driver breaks the contract. Each axis's
//! rules live with the axis (`host/src/<axis>/suite.rs`); the test suite runs them against every bundled
//! driver, and `agmsg-host driver test` against any driver. The tmux pane rules and the private tmux
//! server they drive are here ([`tmux`]), for any driver that runs tmux.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

pub mod tmux;

/// Which binary the rules run, where it caches compiled components, and the variables every run gets
/// (a driver whose store is not a directory, postgres, needs to be told its database). In a value,
/// `{env}` stands for a name unique to each rule's [`Env`], so that each rule starts from an empty
/// store there too.
#[derive(Clone, Debug)]
pub struct Harness {
    pub bin: PathBuf,
    pub cache: PathBuf,
    pub env: Vec<(String, String)>,
    /// `agmsg-host` arguments run in each [`Env`] as it is dropped, to remove a store the home's removal
    /// does not (postgres: `storage purge-store --yes`, each rule's namespace of the database); `None`
    /// when the store lives in the home.
    pub cleanup: Option<Vec<String>>,
}

/// One rule of the contract: a name, and a check that panics when the driver breaks it.
pub struct Rule {
    pub name: &'static str,
    pub check: fn(&Harness, &str),
}

/// How a rule ended that did not fail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Passed,
    /// The rule is about something this driver does not offer (an optional interface): neither a pass
    /// nor a failure, and reported as such, with why.
    Skipped(String),
}

/// What [`skip`] unwinds with.
struct Skipped(String);

/// End the running rule as not applicable to this driver, saying why (`SKIP` in `driver test`).
pub fn skip(why: impl Into<String>) -> ! {
    std::panic::resume_unwind(Box::new(Skipped(why.into())))
}

/// Run `rule` against `driver` (a bundled name or a component path); `Err` carries the assertion.
pub fn run_rule(harness: &Harness, rule: &Rule, driver: &str) -> Result<Verdict, String> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (rule.check)(harness, driver))) {
        Ok(()) => Ok(Verdict::Passed),
        Err(payload) => match payload.downcast::<Skipped>() {
            Ok(skipped) => Ok(Verdict::Skipped(skipped.0)),
            Err(payload) => Err(payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "the rule panicked".to_owned())),
        },
    }
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

impl Drop for Env {
    /// Run the harness's cleanup in this environment. Never panics (it may run while a failed rule
    /// unwinds); a cleanup that fails is reported on stderr, since what it left behind stays.
    fn drop(&mut self) {
        let Some(args) = self.cleanup.take() else { return };
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        match self.cmd().args(&args).output() {
            Ok(out) if out.status.success() => {}
            Ok(out) => eprintln!(
                "note: cleanup `agmsg-host {}` failed ({}): {}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim_end()
            ),
            Err(e) => eprintln!("note: cleanup `agmsg-host {}` did not run: {e}", args.join(" ")),
        }
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

/// An isolated home, store and config: one per rule (or test).
pub struct Env {
    pub dir: tempfile::TempDir,
    pub store: PathBuf,
    pub cache: PathBuf,
    bin: PathBuf,
    extra: Vec<(String, String)>,
    cleanup: Option<Vec<String>>,
}

impl Env {
    pub fn new(harness: &Harness) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        let unique: String =
            dir.path().file_name().map(|n| n.to_string_lossy().chars().filter(|c| c.is_ascii_alphanumeric()).collect()).unwrap_or_default();
        let extra = harness.env.iter().map(|(k, v)| (k.clone(), v.replace("{env}", &unique))).collect();
        Env { store, cache: harness.cache.clone(), bin: harness.bin.clone(), dir, extra, cleanup: harness.cleanup.clone() }
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
        self.program(&self.bin)
    }

    /// Another program (a shell loop, `sqlite3`) in the same environment as [`Env::cmd`].
    pub fn program(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env("HOME", self.dir.path())
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("AGMSG_STORAGE_PATH", &self.store)
            .env("AGMSG_CACHE_DIR", &self.cache)
            .current_dir(self.dir.path())
            .stdin(Stdio::null());
        // The resident server's switch passes through (CI runs the suite in-process and its
        // binary-driving tests again through the server); unset, each op runs in a process of its own,
        // whatever the product's default: a rule that changes a store's files between ops must not
        // race a spare's warm-up reading them (`driver test` and the test suite alike).
        cmd.env("AGMSG_HOST_SERVER", std::env::var_os("AGMSG_HOST_SERVER").unwrap_or_else(|| "off".into()));
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
        // A child may answer without reading its input (an op the driver does not offer exits at
        // once): a closed pipe is then part of its answer, not the test's failure.
        match child.stdin.take().unwrap().write_all(stdin) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
            written => written.unwrap(),
        }
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
