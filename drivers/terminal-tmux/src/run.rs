//! Running `tmux` (and `ps`) through the host, and reading what they print.
//!
//! Every argument is its own argv entry and no shell is involved; what tmux itself would still read as
//! syntax in an argument is escaped: a final `;` here, for every argument ([`literal::arg`]), formats
//! by the callers that pass a format-expanded argument ([`literal::format`]). A program the host could not run or refused to run is
//! classed by the SDK's `TermError::from_process`.

use agmsg_guest_sdk::log;
use agmsg_guest_sdk::process::{self, Output};
use agmsg_guest_sdk::terminal::TermError;

use crate::id::TmuxId;
use crate::literal;

/// The tmux server a call goes to: the one an id names, or the ambient one (`$TMUX`, the default socket).
#[derive(Clone, Copy)]
pub struct Server<'a> {
    socket: Option<&'a str>,
}

impl<'a> Server<'a> {
    /// Whatever plain `tmux` reaches: the server of `$TMUX`, else the default socket.
    pub fn ambient() -> Server<'static> {
        Server { socket: None }
    }

    /// The server that owns `id`; ambient for a legacy id without a socket.
    pub fn of(id: &TmuxId<'a>) -> Server<'a> {
        Server { socket: id.socket }
    }

    /// The server at `socket` (already validated by the id grammar).
    pub fn at(socket: &'a str) -> Server<'a> {
        Server { socket: Some(socket) }
    }

    /// `tmux [-S <socket>] <args...>`.
    pub fn run(&self, args: &[&str]) -> Result<Output, TermError> {
        let mut argv: Vec<&str> = Vec::with_capacity(args.len() + 2);
        if let Some(socket) = self.socket {
            argv.extend(["-S", socket]);
        }
        // tmux would split the command at an argument ending in `;` (a poke's text, a label).
        let escaped: Vec<_> = args.iter().map(|a| literal::arg(a)).collect();
        argv.extend(escaped.iter().map(|a| a.as_ref()));
        // Only the subcommand is logged: the rest may be a user's message.
        log::debug(&format!("tmux {}", args.first().copied().unwrap_or("")));
        run_program("tmux", &argv)
    }

    /// Run `args` and require exit 0; `on_failure` builds the error from tmux's own words.
    pub fn run_ok(&self, args: &[&str], on_failure: impl FnOnce(String) -> TermError) -> Result<Output, TermError> {
        let out = self.run(args)?;
        if out.success() { Ok(out) } else { Err(on_failure(complaint(&out))) }
    }

    /// Run a step whose failure agmsg ignores (`|| true`): a cosmetic rename after the real work.
    pub fn run_best_effort(&self, args: &[&str]) {
        match self.run(args) {
            Ok(out) if out.success() => {}
            Ok(out) => log::debug(&format!("ignored: tmux {} failed: {}", args.first().copied().unwrap_or(""), complaint(&out))),
            Err(e) => log::debug(&format!("ignored: {e:?}")),
        }
    }
}

/// Run a declared program, mapping the host's refusals onto the exit-code taxonomy.
pub fn run_program(program: &str, args: &[&str]) -> Result<Output, TermError> {
    process::run(program, args).map_err(|e| TermError::from_process(program, e))
}

/// stdout as bash's `$(...)` would capture it: trailing newlines removed, nothing else touched.
pub fn captured(out: &Output) -> String {
    let mut text = out.stdout_text();
    let kept = text.trim_end_matches('\n').len();
    text.truncate(kept);
    text
}

/// How a failed run explains itself: its exit status and tmux's own stderr.
pub fn complaint(out: &Output) -> String {
    let status = out.status.map_or_else(|| "a signal".to_owned(), |code| format!("rc={code}"));
    let stderr = out.stderr_text();
    let stderr = stderr.trim();
    if stderr.is_empty() { status } else { format!("{status}: {stderr}") }
}
