//! Running `herdr` through the host, and which instance a call reaches.
//!
//! Every argument is its own argv entry and no shell is involved, so text from users (a poke, a label, a
//! boot command) reaches herdr exactly as given. A program the host could not run is a terminal that could
//! not be asked (unreachable, 10); one the host refused to run is this driver's own fault (failed, 12).
//!
//! Routing. agmsg's driver sends a call about `<socket>:wN:pX` to that instance by running the CLI with
//! `HERDR_SOCKET_PATH=<socket>`; herdr has no command-line flag for it. This component cannot set a
//! child's environment: the host runs herdr with the manifest's variables as the caller had them. So the
//! only instance it reaches is the ambient one, and a call about an id of another instance is refused as
//! unreachable before anything runs: asking the ambient instance about a pane id it may also hold would
//! answer about somebody else's pane (ids repeat across instances).

use agmsg_guest_sdk::log;
use agmsg_guest_sdk::process::{self, Output, ProcessError};
use agmsg_guest_sdk::terminal::TermError;
use serde_json::Value;

use crate::id::HerdrId;
use crate::session;

/// Refuse an id this driver cannot route to its own instance.
pub fn reach(id: &HerdrId<'_>) -> Result<(), TermError> {
    let Some(socket) = id.socket else { return Ok(()) };
    match session::ambient_socket() {
        Some(ambient) if ambient == socket => Ok(()),
        Some(ambient) => Err(TermError::unreachable(format!(
            "herdr: the pane belongs to the instance at {socket:?}, and this driver reaches only $HERDR_SOCKET_PATH's ({ambient:?})"
        ))),
        None => Err(TermError::unreachable(format!(
            "herdr: the pane belongs to the instance at {socket:?}, and $HERDR_SOCKET_PATH is unset, so no call can be routed there"
        ))),
    }
}

/// The herdr binary is installed, or the terminal is unreachable.
pub fn require_herdr() -> Result<(), TermError> {
    if process::available("herdr") { Ok(()) } else { Err(TermError::unreachable("herdr: not on PATH — cannot reach the terminal")) }
}

/// `herdr <args...>`.
pub fn herdr(args: &[&str]) -> Result<Output, TermError> {
    // Only the subcommand is logged: the rest may be a user's message.
    log::debug(&format!("herdr {}", args.iter().take(2).copied().collect::<Vec<_>>().join(" ")));
    process::run("herdr", args).map_err(process_error)
}

/// Run `args` and require exit 0; `on_failure` builds the error from herdr's own words.
pub fn herdr_ok(args: &[&str], on_failure: impl FnOnce(String) -> TermError) -> Result<Output, TermError> {
    let out = herdr(args)?;
    if out.success() { Ok(out) } else { Err(on_failure(complaint(&out))) }
}

/// Run a step whose failure agmsg ignores (`|| true`): a cosmetic rename, a cleanup.
pub fn herdr_best_effort(args: &[&str]) {
    match herdr(args) {
        Ok(out) if out.success() => {}
        Ok(out) => log::debug(&format!("ignored: herdr {} failed: {}", args.first().copied().unwrap_or(""), complaint(&out))),
        Err(e) => log::debug(&format!("ignored: {e:?}")),
    }
}

/// A successful call's stdout as JSON, or `None` when it is empty or not JSON.
pub fn json_of(out: &Output) -> Option<Value> {
    if out.stdout.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    serde_json::from_slice(&out.stdout).ok()
}

fn process_error(e: ProcessError) -> TermError {
    match e {
        ProcessError::NotFound(_) => TermError::unreachable("herdr: not on PATH — cannot reach the terminal"),
        ProcessError::TimedOut(ms) => TermError::unreachable(format!("herdr did not answer within {ms} ms")),
        ProcessError::Failed(why) => TermError::unreachable(format!("could not run herdr: {why}")),
        ProcessError::NotAllowed(why) => TermError::failed(format!("the host refused to run herdr: {why}")),
    }
}

/// How a failed run explains itself: its exit status and what herdr said (herdr writes its error JSON to
/// stdout, so both channels are quoted).
pub fn complaint(out: &Output) -> String {
    let status = out.status.map_or_else(|| "a signal".to_owned(), |code| format!("rc={code}"));
    let said: Vec<String> = [out.stdout_text(), out.stderr_text()]
        .into_iter()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect();
    if said.is_empty() { status } else { format!("{status}: {}", said.join(" / ")) }
}
