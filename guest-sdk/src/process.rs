//! Running the programs this driver's manifest declares (`programs=`), through the host.
//!
//! Name a program by its declared bare name (`"tmux"`): the host refuses any other name and any path.
//!
//! For terminal drivers. A component cannot start processes itself; the host runs them on
//! its behalf: it resolved each declared name on its `PATH` when it loaded the driver, starts the
//! program with only the variables `env=` declares, in a fixed working directory and under a time
//! limit, and captures stdout and stderr up to a cap.
//!
//! ```no_run
//! use agmsg_guest_sdk::process;
//!
//! let out = process::run("tmux", &["display-message", "-p", "#{session_name}"])?;
//! if out.success() {
//!     agmsg_guest_sdk::log::debug(&format!("in session {}", out.stdout_text().trim_end()));
//! }
//! # Ok::<(), agmsg_guest_sdk::process::ProcessError>(())
//! ```

/// What a finished program left behind: its exit `status` (`None` when a signal ended it), its
/// captured `stdout` and `stderr` bytes, and whether either went over the host's cap and was cut
/// (`truncated`).
///
/// ```
/// use agmsg_guest_sdk::process::Output;
///
/// let out = Output { status: Some(1), stdout: Vec::new(), stderr: b"no server running\n".to_vec(), truncated: false };
/// assert!(!out.success());
/// assert!(out.stderr_text().contains("no server"));
/// ```
pub use crate::bindings::terminal::agmsg::host::process::Output;

/// Why a program did not run to completion. A program that ran and failed is not an error: it is an
/// [`Output`] whose status is not 0. [`TermError::from_process`](crate::terminal::TermError::from_process)
/// gives its failure class.
///
/// ```no_run
/// use agmsg_guest_sdk::process::{self, Output};
/// use agmsg_guest_sdk::terminal::TermError;
///
/// fn tmux(args: &[&str]) -> Result<Output, TermError> {
///     process::run("tmux", args).map_err(|e| TermError::from_process("tmux", e))
/// }
/// # let _ = tmux;
/// ```
pub use crate::bindings::terminal::agmsg::host::process::ProcessError;

use crate::bindings::terminal::agmsg::host::process as host;

impl Output {
    /// Exited with status 0.
    ///
    /// ```
    /// use agmsg_guest_sdk::process::Output;
    ///
    /// let ok = Output { status: Some(0), stdout: Vec::new(), stderr: Vec::new(), truncated: false };
    /// let killed = Output { status: None, ..ok.clone() };
    /// assert!(ok.success());
    /// assert!(!killed.success());
    /// ```
    pub fn success(&self) -> bool {
        self.status == Some(0)
    }

    /// The captured stdout as text; bytes that are not UTF-8 become `U+FFFD`.
    ///
    /// ```
    /// use agmsg_guest_sdk::process::Output;
    ///
    /// let out = Output { status: Some(0), stdout: b"%1\n%4\n".to_vec(), stderr: Vec::new(), truncated: false };
    /// let panes: Vec<String> = out.stdout_text().lines().map(str::to_owned).collect();
    /// assert_eq!(panes, ["%1", "%4"]);
    /// ```
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// The captured stderr as text; bytes that are not UTF-8 become `U+FFFD`.
    ///
    /// ```
    /// use agmsg_guest_sdk::process::Output;
    ///
    /// let out = Output { status: Some(1), stdout: Vec::new(), stderr: b"can't find pane: %9\n".to_vec(), truncated: false };
    /// assert_eq!(out.stderr_text().trim_end(), "can't find pane: %9");
    /// ```
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// Run a declared program with an empty stdin and wait for it.
///
/// ```no_run
/// use agmsg_guest_sdk::process;
///
/// let out = process::run("tmux", &["capture-pane", "-p", "-t", "%3"])?;
/// let screen = out.stdout_text();
/// # let _ = screen;
/// # Ok::<(), agmsg_guest_sdk::process::ProcessError>(())
/// ```
pub fn run(program: &str, args: &[&str]) -> Result<Output, ProcessError> {
    run_with(program, args, None, &[])
}

/// Run a declared program with `stdin` and wait for it.
///
/// ```no_run
/// use agmsg_guest_sdk::process;
///
/// // Hand tmux a long text through a buffer rather than through argv.
/// let text = "a message\nwith several lines\n";
/// process::run_with_stdin("tmux", &["load-buffer", "-b", "agmsg", "-"], text.as_bytes())?;
/// process::run("tmux", &["paste-buffer", "-d", "-b", "agmsg", "-t", "%3"])?;
/// # Ok::<(), agmsg_guest_sdk::process::ProcessError>(())
/// ```
pub fn run_with_stdin(program: &str, args: &[&str], stdin: &[u8]) -> Result<Output, ProcessError> {
    run_with(program, args, Some(stdin), &[])
}

/// Run a declared program with an optional `stdin` and variables set for this run only (each must be
/// declared in the manifest's `env=`; it overrides the host's value).
///
/// ```no_run
/// use agmsg_guest_sdk::process;
///
/// // Address one of several tmux servers for this call only (the manifest declares `env=TMUX`).
/// let socket = "/tmp/tmux-1000/work,4242,0";
/// let out = process::run_with("tmux", &["list-panes", "-a"], None, &[("TMUX", socket)])?;
/// # let _ = out;
/// # Ok::<(), agmsg_guest_sdk::process::ProcessError>(())
/// ```
pub fn run_with(program: &str, args: &[&str], stdin: Option<&[u8]>, env: &[(&str, &str)]) -> Result<Output, ProcessError> {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    let env: Vec<(String, String)> = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    host::run(program, &args, stdin, &env)
}

/// Whether a declared program is installed (the host resolved it when it loaded the driver).
///
/// It never runs the program, so it is cheap enough for `check`.
///
/// ```no_run
/// use agmsg_guest_sdk::process;
/// use agmsg_guest_sdk::terminal::TermError;
///
/// fn check() -> Result<(), TermError> {
///     if process::available("tmux") {
///         Ok(())
///     } else {
///         Err(TermError::MissingDeps("tmux is not installed".into()))
///     }
/// }
/// ```
pub fn available(program: &str) -> bool {
    host::available(program)
}
