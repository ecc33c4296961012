//! `agmsg:host/process`: the programs a terminal driver's manifest declares, and nothing else.
//!
//! A call must use a declared bare name, which is resolved to an absolute path on the host's `PATH` (as
//! the driver was loaded with it) when it is run, so neither an undeclared program nor a path (even to
//! the same file) can run, and a driver that declares several programs pays only for those it runs.
//! The program gets the declared environment variables only, `/` as its working directory, a time
//! limit (its own, cut to what is left of the driver call's deadline), and its stdout and stderr
//! captured up to a cap. It runs in a process group of its own, and a time-out kills the whole group,
//! so a declared shell cannot leave grandchildren behind.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
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
    /// The declared names.
    programs: Vec<String>,
    /// The host's `PATH` as the driver was loaded, which they are looked up on.
    path: OsString,
    /// Declared name -> the argument vectors it may be given (absent: any).
    arg_patterns: BTreeMap<String, Vec<Vec<String>>>,
    /// The declared variable names, and those set in the host's environment with their values.
    declared_env: Vec<String>,
    env: Vec<(String, OsString)>,
    timeout: Duration,
}

impl ProcessGrant {
    /// Take the declared programs, to be looked up on the host's `PATH`, and pick the declared
    /// variables out of the host's environment.
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
        let mut names: Vec<String> = programs.iter().map(|(name, _)| name.clone()).collect();
        names.sort();
        names.dedup();
        let declared_env = env.to_vec();
        let env = env.iter().filter_map(|name| Some((name.clone(), std::env::var_os(name)?))).collect();
        ProcessGrant { programs: names, path, arg_patterns, declared_env, env, timeout }
    }

    /// The declared variables present on the host, which the driver also sees as its environment.
    pub fn env(&self) -> &[(String, OsString)] {
        &self.env
    }

    fn program(&self, name: &str) -> Result<PathBuf, ProcessError> {
        if name.contains('/') {
            return Err(ProcessError::NotAllowed(format!("programs are named, never given by path ({name:?})")));
        }
        if !self.programs.iter().any(|declared| declared == name) {
            return Err(ProcessError::NotAllowed(format!(
                "{name:?} is not declared in the driver's manifest (programs={})",
                self.programs.join(" ")
            )));
        }
        find_on_path(name, &self.path).ok_or_else(|| ProcessError::NotFound(name.to_owned()))
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
        let mut command = Command::new(path);
        command
            .args(args)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .envs(overrides.iter().map(|(k, v)| (k, v)))
            .current_dir("/");
        let timeout = self.timeout.min(deadline.saturating_duration_since(Instant::now()));
        run_bounded(name, command, stdin, timeout)
    }
}

/// Run `command` (named `name` in errors) to completion or until `timeout`, in a process group of its
/// own that a time-out kills whole: `stdin` fed to it (else /dev/null), its stdout and stderr captured
/// up to [`MAX_PROCESS_OUTPUT`] each. The one way the host runs a program and waits for it.
pub fn run_bounded(name: &str, mut command: Command, stdin: Option<&[u8]>, timeout: Duration) -> Result<Output, ProcessError> {
    let mut child = command
        .process_group(0)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| ProcessError::Failed(format!("cannot start {name}: {e}")))?;
    let limit = Instant::now() + timeout;
    let kill = |child: &mut Child| {
        // The group's id is the child's pid (process_group(0)); the child is not reaped yet, so the id
        // cannot have been reused.
        if let Some(group) = rustix::process::Pid::from_raw(child.id() as i32) {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
        let _ = child.kill();
        let _ = child.wait();
    };
    let (exited, stdout, stderr) = match exchange(&mut child, stdin, limit) {
        Ok(done) => done,
        Err(e) => {
            kill(&mut child);
            return Err(ProcessError::Failed(format!("reading the output of {name}: {e}")));
        }
    };
    let status = match exited {
        Some(status) => status,
        None => match child.wait_timeout(limit.saturating_duration_since(Instant::now())) {
            Ok(Some(status)) => status,
            Ok(None) => {
                kill(&mut child);
                return Err(ProcessError::TimedOut(timeout.as_millis().min(u128::from(u32::MAX)) as u32));
            }
            Err(e) => return Err(ProcessError::Failed(format!("waiting for {name}: {e}"))),
        },
    };
    Ok(Output { status: status.code(), truncated: stdout.cut || stderr.cut, stdout: stdout.kept, stderr: stderr.kept })
}

/// The room a capture has for each read at least: a read takes what the pipe holds, up to this.
const READ_ROOM: usize = 16 << 10;

/// One of the program's output pipes as it is read: at most [`MAX_PROCESS_OUTPUT`] bytes kept.
struct Capture {
    pipe: Option<OwnedFd>,
    kept: Vec<u8>,
    cut: bool,
}

impl Capture {
    fn new(pipe: Option<impl Into<OwnedFd>>) -> Capture {
        Capture { pipe: pipe.map(Into::into), kept: Vec::new(), cut: false }
    }

    /// Read what the pipe holds now (it was reported ready, so this does not block); closed at its end.
    /// Read straight into what is kept (no buffer zeroed and copied from for each program run), and
    /// past the cap into a scratch buffer that is dropped.
    fn read(&mut self) {
        let Some(pipe) = &self.pipe else { return };
        let got = if self.kept.len() < MAX_PROCESS_OUTPUT {
            // Never room past the cap: grown by doubling from READ_ROOM, the capture stops at the cap.
            self.kept.reserve(READ_ROOM.min(MAX_PROCESS_OUTPUT - self.kept.len()));
            rustix::io::read(pipe, rustix::buffer::spare_capacity(&mut self.kept))
        } else {
            let mut scratch = [0u8; 4096];
            rustix::io::read(pipe, &mut scratch[..]).inspect(|&n| self.cut |= n > 0)
        };
        match got {
            Ok(0) => self.pipe = None,
            // Not reached while the vector grows by doubling from READ_ROOM (its capacity then stops at
            // the cap); kept so that the cap holds whatever room the vector was given.
            Ok(_) if self.kept.len() > MAX_PROCESS_OUTPUT => {
                self.kept.truncate(MAX_PROCESS_OUTPUT);
                self.cut = true;
            }
            Ok(_) | Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => {}
            Err(_) => self.pipe = None,
        }
    }
}

/// How long to poll at a time for the program's exit where no pidfd tells of it (a kernel before 5.3).
const EXIT_POLL: Duration = Duration::from_millis(20);

/// Feed `input` to the program and read its stdout and stderr, all on the calling thread (no thread per
/// pipe: a process that runs one program pays for none), until it has exited and both pipes are closed,
/// or [`PIPE_GRACE`] after its exit (a background child of it may hold them open), or until `limit`.
/// Returns the exit status (`None`: still running at `limit`) and the two captures.
fn exchange(child: &mut Child, input: Option<&[u8]>, limit: Instant) -> std::io::Result<(Option<ExitStatus>, Capture, Capture)> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let mut stdout = Capture::new(child.stdout.take());
    let mut stderr = Capture::new(child.stderr.take());
    // A program that does not read its input must not block us: written only as the pipe has room.
    let mut stdin: Option<OwnedFd> = child.stdin.take().map(Into::into);
    if let Some(pipe) = &stdin {
        rustix::io::ioctl_fionbio(pipe, true)?;
    }
    let mut input = input.unwrap_or_default();
    // Readable once the program has exited. Its id cannot have been reused: it is not reaped yet.
    let pidfd = rustix::process::Pid::from_raw(child.id() as i32)
        .and_then(|pid| rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok());
    let mut exited = None;
    let mut grace_end = limit;
    loop {
        if exited.is_none() && pidfd.is_none() {
            exited = child.try_wait()?;
            if exited.is_some() {
                grace_end = Instant::now() + PIPE_GRACE;
            }
        }
        let reading = stdout.pipe.is_some() || stderr.pipe.is_some();
        // Without a pidfd, an exit after both pipes closed is waited for by the caller.
        if !reading && (exited.is_some() || pidfd.is_none()) {
            break;
        }
        let now = Instant::now();
        let until = if exited.is_some() { grace_end } else { limit };
        if now >= until {
            break;
        }
        let mut wait = until - now;
        if exited.is_none() && pidfd.is_none() {
            wait = wait.min(EXIT_POLL);
        }
        if input.is_empty() {
            stdin = None;
        }
        let mut fds = Vec::with_capacity(4);
        // Which capture (0 stdout, 1 stderr, 2 stdin, 3 the exit) each entry of `fds` is.
        let mut what = Vec::with_capacity(4);
        for (i, fd) in [stdout.pipe.as_ref(), stderr.pipe.as_ref()].into_iter().enumerate() {
            if let Some(fd) = fd {
                fds.push(PollFd::new(fd, PollFlags::IN));
                what.push(i);
            }
        }
        if let Some(fd) = &stdin {
            fds.push(PollFd::new(fd, PollFlags::OUT));
            what.push(2);
        }
        if let (Some(fd), None) = (&pidfd, exited) {
            fds.push(PollFd::new(fd, PollFlags::IN));
            what.push(3);
        }
        let timeout = Timespec { tv_sec: wait.as_secs() as _, tv_nsec: wait.subsec_nanos() as _ };
        match poll(&mut fds, Some(&timeout)) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
        let ready: Vec<usize> = fds.iter().zip(&what).filter(|(fd, _)| !fd.revents().is_empty()).map(|(_, &w)| w).collect();
        drop(fds);
        for w in ready {
            match w {
                0 => stdout.read(),
                1 => stderr.read(),
                2 => {
                    let pipe = stdin.as_ref().expect("polled");
                    match rustix::io::write(pipe, input) {
                        Ok(n) => input = &input[n..],
                        Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => {}
                        // The program closed its input (EPIPE) or it failed: nothing more goes in.
                        Err(_) => input = &[],
                    }
                }
                _ => {
                    exited = child.try_wait()?;
                    if exited.is_some() {
                        grace_end = Instant::now() + PIPE_GRACE;
                    }
                }
            }
        }
    }
    Ok((exited, stdout, stderr))
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
    fn run(
        &mut self,
        program: String,
        args: Vec<String>,
        stdin: Option<Vec<u8>>,
        env: Vec<(String, String)>,
    ) -> Result<Output, ProcessError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(programs: &[&str], timeout: Duration) -> ProcessGrant {
        let programs: Vec<(String, Option<Vec<Vec<String>>>)> = programs.iter().map(|p| (p.to_string(), None)).collect();
        ProcessGrant::resolve(&programs, &[], timeout)
    }

    fn far() -> Instant {
        Instant::now() + Duration::from_secs(30)
    }

    #[test]
    fn input_larger_than_a_pipe_goes_in_while_the_output_comes_out() {
        // cat echoes as it reads: neither side may wait for the other to finish first.
        let input: Vec<u8> = (0..3u32 << 20).map(|i| (i % 251) as u8).collect();
        let out = grant(&["cat"], Duration::from_secs(20)).run("cat", &[], Some(&input), &[], far()).unwrap();
        assert_eq!((out.status, out.stdout.len(), out.truncated), (Some(0), input.len(), false));
        assert!(out.stdout == input);
    }

    #[test]
    fn stdout_and_stderr_are_kept_apart_and_capped() {
        let script = "printf out; printf err >&2; head -c 5000000 /dev/zero; exit 3";
        let out = grant(&["sh"], Duration::from_secs(20)).run("sh", &["-c".into(), script.into()], None, &[], far()).unwrap();
        assert_eq!((out.status, out.stderr.as_slice(), out.truncated), (Some(3), &b"err"[..], true));
        assert_eq!((out.stdout.len(), &out.stdout[..3]), (MAX_PROCESS_OUTPUT, &b"out"[..]));
    }

    #[test]
    fn a_capture_holds_no_more_memory_than_its_cap() {
        use std::io::Write;
        let (reader, mut writer) = std::io::pipe().unwrap();
        let (more, wanted) = std::sync::mpsc::channel::<usize>();
        let writing = std::thread::spawn(move || {
            for n in wanted {
                writer.write_all(&vec![b'x'; n]).unwrap();
            }
        });
        let mut capture = Capture::new(Some(reader));
        // Filled to just short of the cap (its room then less than a read's), then past it.
        let short = MAX_PROCESS_OUTPUT - 8192;
        more.send(short).unwrap();
        while capture.kept.len() < short {
            capture.read();
        }
        more.send(64 << 10).unwrap();
        drop(more);
        while capture.pipe.is_some() {
            capture.read();
        }
        writing.join().unwrap();
        assert_eq!((capture.kept.len(), capture.cut), (MAX_PROCESS_OUTPUT, true));
        assert!(capture.kept.capacity() <= MAX_PROCESS_OUTPUT, "{}", capture.kept.capacity());
    }

    #[test]
    fn a_program_that_ignores_its_input_and_outlives_its_limit_is_killed() {
        let started = Instant::now();
        let input = vec![b'x'; 1 << 20];
        let run = grant(&["sleep"], Duration::from_millis(300)).run("sleep", &["20".into()], Some(&input), &[], far());
        assert!(matches!(run, Err(ProcessError::TimedOut(300))), "{run:?}");
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    }
}
