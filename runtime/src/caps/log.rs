//! `agmsg:host/log`: a driver's log lines, prefixed with its name, on the host's stderr (through the
//! host's log, [`crate::log`]), within an allowance per call.

use wasmtime::component::{HasSelf, Linker};

use super::wit::log::{Host, Level, add_to_linker};
use crate::log::{Severity, emit};

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

/// A driver's log: its name as the log shows it, and this call's allowance.
#[derive(Debug)]
pub struct LogCtx {
    source: String,
    budget: LogBudget,
}

impl LogCtx {
    pub fn new(driver_name: &str) -> LogCtx {
        LogCtx { source: format!("driver {driver_name}"), budget: LogBudget::default() }
    }

    /// How the log names this driver (`driver <name>`).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Log what the driver printed to its stdout or stderr.
    pub fn printed(&self, severity: Severity, text: &str) {
        emit(&self.source, severity, text);
    }

    /// At the end of a call: report what was dropped, and start the next call's allowance.
    pub fn end_call(&mut self) {
        self.budget.report_dropped(&self.source);
    }
}

/// Add `agmsg:host/log` to a linker whose state projects a [`LogCtx`].
pub fn link<T: 'static>(linker: &mut Linker<T>, project: fn(&mut T) -> &mut LogCtx) -> wasmtime::Result<()> {
    add_to_linker::<T, HasSelf<LogCtx>>(linker, project)
}

impl Host for LogCtx {
    fn log(&mut self, level: Level, message: String) {
        let severity = match level {
            Level::Trace => Severity::Trace,
            Level::Debug => Severity::Debug,
            Level::Info => Severity::Info,
            Level::Warn => Severity::Warn,
            Level::Error => Severity::Error,
        };
        if self.budget.take(message.len()) {
            emit(&self.source, severity, &message);
        }
    }
}
