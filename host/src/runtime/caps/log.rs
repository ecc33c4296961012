//! `agmsg:host/log`: a driver's log lines, prefixed with its name, on the host's stderr.
//!
//! The level shown is `AGMSG_LOG` (`error`, `warn`, `info`, `debug`, `trace`; default `warn`). The same
//! routing serves the host's own diagnostics ([`host_log`]) and whatever a driver writes to its
//! stdout/stderr, which the sandbox captures.

use std::sync::OnceLock;

use crate::runtime::sandbox::HostState;
use crate::runtime::sandbox::bindings::storage::agmsg::host::log::{Host, Level};

/// One log message (all its lines) is cut at this length.
const MAX_MESSAGE: usize = 4096;
/// What one call may log through `agmsg:host/log`, like its captured stdout; the rest is dropped and
/// counted.
pub const MAX_LOG_PER_CALL: usize = 1 << 20;

/// One call's log allowance (reset at every call).
#[derive(Default, Debug)]
pub struct LogBudget {
    used: usize,
    dropped_lines: u64,
    dropped_bytes: u64,
}

impl LogBudget {
    /// Take `len` bytes from the allowance; false once it is spent (the line is dropped and counted).
    fn take(&mut self, len: usize) -> bool {
        if self.used.saturating_add(len) > MAX_LOG_PER_CALL {
            self.dropped_lines += 1;
            self.dropped_bytes += len as u64;
            return false;
        }
        self.used += len;
        true
    }

    /// At the end of a call: say how much was dropped, if anything, and start a new allowance.
    pub fn report_dropped(&mut self, source: &str) {
        if self.dropped_lines > 0 {
            emit(
                source,
                Severity::Warn,
                &format!(
                    "{} log lines ({} bytes) dropped: a call may log at most {} KiB",
                    self.dropped_lines,
                    self.dropped_bytes,
                    MAX_LOG_PER_CALL >> 10
                ),
            );
        }
        *self = LogBudget::default();
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Severity {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

impl Severity {
    fn name(self) -> &'static str {
        match self {
            Severity::Trace => "trace",
            Severity::Debug => "debug",
            Severity::Info => "info",
            Severity::Warn => "warn",
            Severity::Error => "error",
        }
    }
}

fn threshold() -> Severity {
    static THRESHOLD: OnceLock<Severity> = OnceLock::new();
    *THRESHOLD.get_or_init(|| match std::env::var("AGMSG_LOG").as_deref() {
        Ok("trace") => Severity::Trace,
        Ok("debug") => Severity::Debug,
        Ok("info") => Severity::Info,
        Ok("error") => Severity::Error,
        _ => Severity::Warn,
    })
}

/// Print one log line for `source` (`host` or `driver <name>`), if the level is shown.
pub fn emit(source: &str, severity: Severity, message: &str) {
    if severity < threshold() {
        return;
    }
    let mut message = message.trim_end();
    if message.len() > MAX_MESSAGE {
        let mut cut = MAX_MESSAGE;
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        message = &message[..cut];
    }
    // One line of the host's stderr per line of the message, each shown by the one rule for text a
    // driver supplied: no control character reaches the terminal, and none can forge a line.
    for line in message.lines() {
        eprintln!("agmsg-host: [{source}] {}: {}", severity.name(), crate::display::line(line));
    }
}

/// The host's own diagnostics.
pub mod host_log {
    use super::{Severity, emit};

    pub fn debug(message: &str) {
        emit("host", Severity::Debug, message);
    }
    pub fn warn(message: &str) {
        emit("host", Severity::Warn, message);
    }
}

impl Host for HostState {
    fn log(&mut self, level: Level, message: String) {
        let severity = match level {
            Level::Trace => Severity::Trace,
            Level::Debug => Severity::Debug,
            Level::Info => Severity::Info,
            Level::Warn => Severity::Warn,
            Level::Error => Severity::Error,
        };
        if self.log_budget.take(message.len()) {
            emit(&format!("driver {}", self.driver_name), severity, &message);
        }
    }
}
