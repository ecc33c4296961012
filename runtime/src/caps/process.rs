//! `agmsg:host/process`: the programs a terminal driver's manifest declares, and nothing else.
//!
//! Each declared name is resolved to an absolute path once, when the driver is loaded, from the host's
//! `PATH`; a call must use the declared bare name, so neither an undeclared program nor a path (even to
//! the same file) can run. The program gets the declared environment variables only, `/` as its working
//! directory, a time limit (its own, cut to what is left of the driver call's deadline), and its stdout
//! and stderr captured up to a cap. It runs in a process group of its own, and a time-out kills the
//! whole group, so a declared shell cannot leave grandchildren behind.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use wait_timeout::ChildExt;

use wasmtime::component::{HasData, Linker};

use super::wit::process::{Host, Output, ProcessError, add_to_linker};
use crate::log::{Severity, emit};

/// Captured stdout and stderr are each cut at this size (and the output marked truncated).
pub const MAX_PROCESS_OUTPUT: usize = 4 << 20;
/// After the program exits, how long to wait for pipes that a background child of it may hold open.
const PIPE_GRACE: Duration = Duration::from_millis(200);

/// What a driver may run, fixed when the driver is loaded.
#[derive(Clone, Debug)]
pub struct ProcessGrant {
    /// Declared name -> absolute path (`None`: declared but not installed here).
    programs: BTreeMap<String, Option<PathBuf>>,
    /// Declared name -> the argument vectors it may be given (absent: any).
    arg_patterns: BTreeMap<String, Vec<Vec<String>>>,
    /// The declared variable names, and those set in the host's environment with their values.
    declared_env: Vec<String>,
    env: Vec<(String, OsString)>,
    timeout: Duration,
}

impl ProcessGrant {
    /// Resolve the declared programs on the host's `PATH` and pick the declared variables out of the
    /// host's environment.
    /// `programs`: each name with the argument patterns it is limited to (`None`: any arguments; see
    /// [`crate::capabilities::args_match`]).
    pub fn resolve(programs: &[(String, Option<Vec<Vec<String>>>)], env: &[String], timeout: Duration) -> ProcessGrant {
        let path = std::env::var_os("PATH").unwrap_or_default();
        // A program granted several times: the union of its patterns, and any arguments if one grant
        // says so.
        let mut arg_patterns: BTreeMap<String, Vec<Vec<String>>> = BTreeMap::new();
        for (name, args) in programs {
            if let Some(args) = args
                && !programs.iter().any(|(other, any)| other == name && any.is_none())
            {
                arg_patterns.entry(name.clone()).or_default().extend(args.iter().cloned());
            }
        }
        let programs = programs.iter().map(|(name, _)| (name.clone(), find_on_path(name, &path))).collect();
        let declared_env = env.to_vec();
        let env = env.iter().filter_map(|name| Some((name.clone(), std::env::var_os(name)?))).collect();
        ProcessGrant { programs, arg_patterns, declared_env, env, timeout }
    }

    /// The declared variables present on the host, which the driver also sees as its environment.
    pub fn env(&self) -> &[(String, OsString)] {
        &self.env
    }

    fn program(&self, name: &str) -> Result<&Path, ProcessError> {
        if name.contains('/') {
            return Err(ProcessError::NotAllowed(format!("programs are named, never given by path ({name:?})")));
        }
        match self.programs.get(name) {
            Some(Some(path)) => Ok(path),
            Some(None) => Err(ProcessError::NotFound(name.to_owned())),
            None => {
                let declared: Vec<&str> = self.programs.keys().map(String::as_str).collect();
                Err(ProcessError::NotAllowed(format!(
                    "{name:?} is not declared in the driver's manifest (programs={})",
                    declared.join(" ")
                )))
            }
        }
    }

    /// Run a declared program to completion (or its time limit, or `deadline`, whichever is first).
    /// `overrides` must name declared variables only.
    pub fn run(
        &self,
        name: &str,
        args: &[String],
        stdin: Option<&[u8]>,
        overrides: &[(String, String)],
        deadline: Instant,
    ) -> Result<Output, ProcessError> {
        let path = self.program(name)?;
        if let Some(patterns) = self.arg_patterns.get(name)
            && !crate::capabilities::args_match(patterns, args)
        {
            let allowed: Vec<String> = patterns.iter().map(|p| p.join(" ")).collect();
            return Err(ProcessError::NotAllowed(format!(
                "{name} {args:?}: these arguments are not among those granted ({})",
                allowed.join(" | ")
            )));
        }
        if let Some((undeclared, _)) = overrides.iter().find(|(k, _)| !self.declared_env.contains(k)) {
            return Err(ProcessError::NotAllowed(format!(
                "variable {undeclared:?} is not declared in the driver's manifest (env={})",
                self.declared_env.join(" ")
            )));
        }
        if overrides.iter().any(|(k, v)| k.contains('=') || k.contains('\0') || v.contains('\0')) {
            return Err(ProcessError::NotAllowed("an environment variable with '=' or NUL".into()));
        }
        let mut child = Command::new(path)
            .args(args)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .envs(overrides.iter().map(|(k, v)| (k, v)))
            .current_dir("/")
            .process_group(0)
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| ProcessError::Failed(format!("cannot start {name}: {e}")))?;
        if let (Some(mut pipe), Some(input)) = (child.stdin.take(), stdin) {
            let input = input.to_vec();
            // A program that does not read its stdin must not block us: write from a thread.
            std::thread::spawn(move || {
                let _ = pipe.write_all(&input);
            });
        }
        let stdout = capture(child.stdout.take().expect("piped"));
        let stderr = capture(child.stderr.take().expect("piped"));
        let timeout = self.timeout.min(deadline.saturating_duration_since(Instant::now()));
        let status = match child.wait_timeout(timeout) {
            Ok(Some(status)) => status,
            Ok(None) => {
                // The group's id is the child's pid (process_group(0)); the child is not reaped yet, so
                // the id cannot have been reused.
                if let Some(group) = rustix::process::Pid::from_raw(child.id() as i32) {
                    let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
                }
                let _ = child.kill();
                let _ = child.wait();
                return Err(ProcessError::TimedOut(timeout.as_millis().min(u128::from(u32::MAX)) as u32));
            }
            Err(e) => return Err(ProcessError::Failed(format!("waiting for {name}: {e}"))),
        };
        let grace = Instant::now() + PIPE_GRACE;
        let (stdout, out_cut) = stdout.recv_timeout(grace.saturating_duration_since(Instant::now())).unwrap_or_default();
        let (stderr, err_cut) = stderr.recv_timeout(grace.saturating_duration_since(Instant::now())).unwrap_or_default();
        Ok(Output { status: status.code(), stdout, stderr, truncated: out_cut || err_cut })
    }
}

/// Read a pipe to its end on a thread, keeping at most [`MAX_PROCESS_OUTPUT`] bytes.
fn capture(mut pipe: impl Read + Send + 'static) -> mpsc::Receiver<(Vec<u8>, bool)> {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut cut = false;
        let mut buf = [0u8; 64 << 10];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = MAX_PROCESS_OUTPUT - kept.len();
                    kept.extend_from_slice(&buf[..n.min(room)]);
                    cut |= n > room;
                }
            }
        }
        let _ = send.send((kept, cut));
    });
    receive
}

/// `name` looked up in `path`'s absolute directories (a relative entry would depend on the cwd).
pub fn find_on_path(name: &str, path: &std::ffi::OsStr) -> Option<PathBuf> {
    std::env::split_paths(path).filter(|dir| dir.is_absolute()).map(|dir| dir.join(name)).find(|candidate| is_executable_file(candidate))
}

/// A regular file (after symlinks) with an execute bit.
pub fn is_executable_file(path: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// What the process interface sees of an instance's state: its grant (none: it may run nothing), the
/// name its log lines carry, and the call's deadline (no program outlives it).
pub struct ProcessView<'a> {
    pub grant: Option<&'a ProcessGrant>,
    pub log_source: &'a str,
    pub deadline: Instant,
}

struct ProcessData;

impl HasData for ProcessData {
    type Data<'a> = ProcessView<'a>;
}

/// Add `agmsg:host/process` to a linker whose state projects a [`ProcessView`].
pub fn link<T: 'static>(linker: &mut Linker<T>, project: fn(&mut T) -> ProcessView<'_>) -> wasmtime::Result<()> {
    add_to_linker::<T, ProcessData>(linker, project)
}

impl Host for ProcessView<'_> {
    fn run(&mut self, program: String, args: Vec<String>, stdin: Option<Vec<u8>>, env: Vec<(String, String)>) -> Result<Output, ProcessError> {
        let started = Instant::now();
        let result = match self.grant {
            Some(grant) => grant.run(&program, &args, stdin.as_deref(), &env, self.deadline),
            None => Err(ProcessError::NotAllowed("this driver may not run programs".into())),
        };
        let outcome = match &result {
            Ok(output) => format!("exit {:?}", output.status),
            Err(e) => format!("refused or failed: {e:?}"),
        };
        emit(self.log_source, Severity::Debug, &format!("ran {program} {args:?}: {outcome} in {:?}", started.elapsed()));
        result
    }

    fn available(&mut self, program: String) -> bool {
        self.grant.is_some_and(|grant| grant.program(&program).is_ok())
    }
}
