//! The resident server: one process per user and build that has the engine, the linkers and the bundled
//! drivers' machine code ready, and forks a child per request that runs the op as a fresh `agmsg-host`
//! process would, with the caller's argv, environment, working directory, umask, resource limits and
//! stdin, stdout and stderr (the caller's own descriptors, passed over the socket). Each answer is the
//! in-process one byte for byte because it is made the same way, by the same code, writing to the same
//! descriptors; the child is a process of its own, so one request's driver looping holds no other, a
//! trap or a trust change leaves nothing behind, and the server's memory does not grow with use.
//!
//! - [`rendezvous`]: where this user's server of this build listens (a private directory, checked).
//! - [`protocol`]: the frames on the socket.
//! - [`client`]: [`forward`], which every invocation tries first, and `server status` / `stop`.
//! - [`serve`]: the server's loop, a child's set-up, and the spare: a process forked ahead of the next
//!   request that makes ready the driver instances the server's last storage op and last terminal op
//!   ran on (the same store or terminal, driver and grants, resolved from that op's argv and
//!   environment), so that the op it is handed, if it resolves to the same, starts warm
//!   (`crate::runtime::warm`).
//! - [`peer`]: who may be served: this user, unconfined, in this process's namespaces.
//!
//! On unless `AGMSG_HOST_SERVER=off` ([`switched_on`]); a caller that cannot reach it runs in-process,
//! silently.

mod client;
mod peer;
mod protocol;
mod rendezvous;
mod serve;

use std::sync::atomic::{AtomicU32, Ordering};

pub use client::{Forward, Status, forward, status, stop};
pub use serve::{Served, Spare, op_ended, serve, serve_again};

/// The engine's file name: the whole host, beside the small `agmsg-host` that users and agmsg's scripts
/// run (`host/src/front.rs`), which offers each op to the server and becomes the engine (exec) for an
/// op none takes. A server is an engine's; the build's identity is its engine file's.
pub const ENGINE: &str = "agmsg-host-engine";

/// The small program's file name, beside the engine: what shims run.
pub const FRONT: &str = "agmsg-host";

/// Set by the small `agmsg-host` in the environment of the engine it becomes: the op was offered to the
/// server already (and a server started if none ran), so the engine runs it without offering it again.
pub const OFFERED: &str = "AGMSG_HOST_OFFERED";

/// Whether this engine is what the small `agmsg-host` became after offering its op ([`OFFERED`]). The
/// variable is taken out of the environment, so that nothing the op starts inherits it. Called first
/// thing in `main`, while the process has one thread.
pub fn offered_already() -> bool {
    if std::env::var_os(OFFERED).is_none() {
        return false;
    }
    // SAFETY: the process's only thread (nothing has started another yet), so no one reads the
    // environment meanwhile.
    unsafe { std::env::remove_var(OFFERED) };
    true
}

/// The running program's own file, whoever renamed or replaced its path since.
pub const OWN_FILE: &str = "/proc/self/exe";

/// The variable that turns the server off (`off`) for a caller.
pub const SWITCH: &str = "AGMSG_HOST_SERVER";

/// Whether [`SWITCH`]'s value lets ops go through the server: unset, empty or `on` does; `off` (or `0`,
/// `false`, `no`, as a user may write it) does not. Any other value is read as on, the default: with a
/// child serving op after op on its kept instances, an op through the server costs less than one
/// in-process, back to back or spaced (README, "The resident server").
pub fn switched_on(value: Option<&std::ffi::OsStr>) -> bool {
    !value.is_some_and(|v| ["off", "0", "false", "no"].iter().any(|off| v.eq_ignore_ascii_case(off)))
}
/// The variable that sets how long an idle server lives on, in seconds.
pub const IDLE: &str = "AGMSG_HOST_SERVER_IDLE";

/// The parent of the process the user started: in a server's child, the caller's parent (the client
/// is the process the user started); else this process's parent. Where agent detection starts.
pub fn caller_parent() -> u32 {
    match CALLER_PARENT.load(Ordering::Relaxed) {
        0 => std::os::unix::process::parent_id(),
        pid => pid,
    }
}

/// Set in a server's child before each op it runs.
static CALLER_PARENT: AtomicU32 = AtomicU32::new(0);

/// How the user invoked `agmsg-host` (its `argv[0]`): in a server's child, the client's (the child's own
/// is the server's); else this process's.
pub fn invoked_as() -> Option<std::ffi::OsString> {
    match CALLER_ARG0.lock().ok().and_then(|arg0| arg0.clone()) {
        Some(arg0) => Some(arg0),
        None => std::env::args_os().next(),
    }
}

/// Set in a server's child before each op it runs.
static CALLER_ARG0: std::sync::Mutex<Option<std::ffi::OsString>> = std::sync::Mutex::new(None);
