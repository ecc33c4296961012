//! Waiting on a child with a bound: a test whose child hangs fails, naming what it waited for, instead
//! of holding CI up. The bounds are for liveness only (minutes, far above any healthy run on a loaded
//! machine); nothing here is timed.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStdout, Output};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// What a line or a whole child is waited for, at most.
pub const LIVENESS: Duration = Duration::from_secs(180);

/// A child's stdout line by line, each line waited for at most [`LIVENESS`].
pub struct Lines {
    rx: Receiver<String>,
}

impl Lines {
    pub fn new(stdout: ChildStdout) -> Lines {
        Lines { rx: lines_of(stdout) }
    }

    /// The next line; `None` at the end of output. Panics (after killing `child`'s process tree) if
    /// neither comes within [`LIVENESS`].
    #[track_caller]
    pub fn next(&self, child: &Child, what: &str) -> Option<String> {
        match self.rx.recv_timeout(LIVENESS) {
            Ok(line) => Some(line),
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => {
                super::kill_tree(child.id());
                panic!("{what}: no line and no end of output within {LIVENESS:?}");
            }
        }
    }

    /// Every line left until the end of output (the child has been killed or is ending).
    #[track_caller]
    pub fn rest(&self, child: &Child, what: &str) -> Vec<String> {
        std::iter::from_fn(|| self.next(child, what)).collect()
    }
}

fn lines_of(output: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(output).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

fn all_of(output: Option<impl Read + Send + 'static>) -> Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    if let Some(mut output) = output {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = output.read_to_end(&mut bytes);
            let _ = tx.send(bytes);
        });
    } else {
        let _ = tx.send(Vec::new());
    }
    rx
}

/// [`Child::wait_with_output`] within [`LIVENESS`]: past it, the child's process tree is killed and
/// the test fails naming `what`.
#[track_caller]
pub fn output(mut child: Child, what: &str) -> Output {
    let (stdout, stderr) = (all_of(child.stdout.take()), all_of(child.stderr.take()));
    let status = wait(&mut child, what);
    // The child has ended; its output ends with it (a grandchild still holding a pipe is a hang too).
    let collect = |rx: Receiver<Vec<u8>>| {
        rx.recv_timeout(LIVENESS).unwrap_or_else(|_| panic!("{what}: its output did not end within {LIVENESS:?} of its exit"))
    };
    Output { status, stdout: collect(stdout), stderr: collect(stderr) }
}

/// [`Child::wait`] within [`LIVENESS`], as [`output`].
#[track_caller]
pub fn wait(child: &mut Child, what: &str) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if started.elapsed() > LIVENESS {
            super::kill_tree(child.id());
            let _ = child.wait();
            panic!("{what}: still running after {LIVENESS:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every process below `pid` (children, theirs, ...), by `pgrep -P`.
fn descendants(pid: u32) -> Vec<u32> {
    let out = std::process::Command::new("pgrep").args(["-P", &pid.to_string()]).output().unwrap();
    let children: Vec<u32> = String::from_utf8_lossy(&out.stdout).split_whitespace().filter_map(|p| p.parse().ok()).collect();
    children.iter().flat_map(|&c| std::iter::once(c).chain(descendants(c))).collect()
}

/// Whether `pid` is still a running process (not gone, not a zombie: a zombie holds no file or lock).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next()).is_some_and(|state| state != "Z"))
}

/// SIGKILL `child` and every process below it, reap it, and wait (within [`LIVENESS`]) until each of
/// those processes is gone: after this, nothing they held (locks, files) is held any more.
#[track_caller]
pub fn kill_tree_and_wait(child: &mut Child, what: &str) {
    let below = descendants(child.id());
    super::kill_tree(child.id());
    for &pid in &below {
        let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
    }
    wait(child, what);
    let started = Instant::now();
    while below.iter().any(|&pid| alive(pid)) {
        assert!(started.elapsed() < LIVENESS, "{what}: killed processes still running after {LIVENESS:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
