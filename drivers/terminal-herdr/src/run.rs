//! Running `herdr` through the host, and which instance a call reaches.
//!
//! Every argument is its own argv entry and no shell is involved, so text from users (a poke, a label, a
//! boot command) reaches herdr exactly as given. A program the host could not run or refused to run is
//! classed by the SDK's `TermError::from_process`.
//!
//! Routing. herdr has no command-line flag for the instance: agmsg's driver sends a call about
//! `<socket>:wN:pX` to that instance by running the CLI with `HERDR_SOCKET_PATH=<socket>`, and so does
//! this one: [`reach`] routes the op's calls (a per-run variable the manifest declares), and a bare id
//! goes to the ambient instance.

use agmsg_guest_sdk::log;
use agmsg_guest_sdk::process::{self, Output};
use agmsg_guest_sdk::terminal::TermError;
use serde_json::Value;

use crate::id::HerdrId;

thread_local! {
    /// The instance this op's calls go to (`None`: the ambient `HERDR_SOCKET_PATH`).
    static ROUTE: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Route this op's herdr calls to the instance that owns `id`, until the guard drops.
pub fn reach(id: &HerdrId<'_>) -> Route {
    ROUTE.with(|route| *route.borrow_mut() = id.socket.map(str::to_owned));
    Route
}

/// While alive, herdr calls go to the instance [`reach`] chose.
#[must_use = "the route ends when the guard is dropped"]
pub struct Route;

impl Drop for Route {
    fn drop(&mut self) {
        ROUTE.with(|route| *route.borrow_mut() = None);
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
    let socket = ROUTE.with(|route| route.borrow().clone());
    let env: Vec<(&str, &str)> = socket.as_deref().map(|s| ("HERDR_SOCKET_PATH", s)).into_iter().collect();
    process::run_with("herdr", args, None, &env).map_err(|e| TermError::from_process("herdr", e))
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

/// How a failed run explains itself: its exit status and what herdr said (herdr writes its error JSON to
/// stdout, so both channels are quoted).
pub fn complaint(out: &Output) -> String {
    let status = out.status.map_or_else(|| "a signal".to_owned(), |code| format!("rc={code}"));
    let said: Vec<String> =
        [out.stdout_text(), out.stderr_text()].into_iter().map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect();
    if said.is_empty() { status } else { format!("{status}: {}", said.join(" / ")) }
}
