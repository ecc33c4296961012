//! Running the programs this driver's manifest declares (`programs=`), through the host.
//!
//! Name a program by its declared bare name (`"tmux"`): the host refuses any other name and any path.

pub use crate::bindings::agmsg::host::process::{Output, ProcessError};
use crate::bindings::agmsg::host::process as host;

impl Output {
    /// Exited with status 0.
    pub fn success(&self) -> bool {
        self.status == Some(0)
    }

    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// Run a declared program with an empty stdin and wait for it.
pub fn run(program: &str, args: &[&str]) -> Result<Output, ProcessError> {
    run_with(program, args, None, &[])
}

/// Run a declared program with `stdin` and wait for it.
pub fn run_with_stdin(program: &str, args: &[&str], stdin: &[u8]) -> Result<Output, ProcessError> {
    run_with(program, args, Some(stdin), &[])
}

/// Run a declared program with an optional `stdin` and variables set for this run only (each must be
/// declared in the manifest's `env=`; it overrides the host's value).
pub fn run_with(program: &str, args: &[&str], stdin: Option<&[u8]>, env: &[(&str, &str)]) -> Result<Output, ProcessError> {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    let env: Vec<(String, String)> = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    host::run(program, &args, stdin, &env)
}

/// Whether a declared program is installed (the host resolved it when it loaded the driver).
pub fn available(program: &str) -> bool {
    host::available(program)
}
