//! Leveled logging through the host, which prefixes the driver's name and routes the line.
//!
//! For every axis. The host prints each line on its stderr as
//! `agmsg-host: [driver <name>] <level>: <message>`, and only at or above the level `AGMSG_LOG` selects
//! (`error`, `warn`, `info`, `debug`, `trace`; `warn` by default), so `info`, `debug` and `trace` lines
//! cost little in normal runs. What a driver prints to its own stdout or stderr is captured and logged
//! too, but only when the call ends and at fixed levels (`info` and `warn`): these functions pick the
//! level and log at once.
//!
//! These call the host, so they only work inside a component (hence `no_run`):
//!
//! ```no_run
//! use agmsg_guest_sdk::log;
//!
//! let pending = 3;
//! log::debug(&format!("compacting: {pending} read marks to fold"));
//! log::warn("the index was stale and has been rebuilt");
//! ```

use crate::bindings::log::{Level, log};

/// Log at the `trace` level: step-by-step detail, for chasing one bug.
///
/// ```no_run
/// agmsg_guest_sdk::log::trace("watch-after: scanning from position 120");
/// ```
pub fn trace(message: &str) {
    log(Level::Trace, message);
}

/// Log at the `debug` level: what the driver decided and why (`AGMSG_LOG=debug` shows it).
///
/// ```no_run
/// let id = "%3";
/// agmsg_guest_sdk::log::debug(&format!("peek {id}: capturing the last 50 lines"));
/// ```
pub fn debug(message: &str) {
    log(Level::Debug, message);
}

/// Log at the `info` level: something a user may want to know happened (hidden unless `AGMSG_LOG` is
/// `info` or lower).
///
/// ```no_run
/// agmsg_guest_sdk::log::info("migrated the store to schema 3");
/// ```
pub fn info(message: &str) {
    log(Level::Info, message);
}

/// Log at the `warn` level: the op went on, but something was off.
///
/// ```no_run
/// agmsg_guest_sdk::log::warn("the capture went over the host's output cap and was cut");
/// ```
pub fn warn(message: &str) {
    log(Level::Warn, message);
}

/// Log at the `error` level: for detail that does not fit the op's error value. The failure itself is
/// still reported by returning the error.
///
/// ```no_run
/// agmsg_guest_sdk::log::error("events.jsonl line 12: not JSON; the store needs repair");
/// ```
pub fn error(message: &str) {
    log(Level::Error, message);
}
