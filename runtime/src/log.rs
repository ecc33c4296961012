//! The host's log: its own diagnostics and drivers' log lines, on stderr, one rule for both.
//!
//! The level shown is `AGMSG_LOG` (`error`, `warn`, `info`, `debug`, `trace`; default `warn`, or `info`
//! when stderr is a terminal). Every line goes through [`crate::display::line`], since much of what is
//! logged is text a driver supplied.

use std::sync::atomic::{AtomicU8, Ordering};

/// One log message (all its lines) is cut at this length.
const MAX_MESSAGE: usize = 4096;

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

/// The level shown, read from the environment on first use: 0 until then, else the severity's index + 1.
static THRESHOLD: AtomicU8 = AtomicU8::new(0);

const SEVERITIES: [Severity; 5] = [Severity::Trace, Severity::Debug, Severity::Info, Severity::Warn, Severity::Error];

fn threshold() -> Severity {
    match THRESHOLD.load(Ordering::Relaxed) {
        0 => {
            let level = match std::env::var("AGMSG_LOG").as_deref() {
                Ok("trace") => Severity::Trace,
                Ok("debug") => Severity::Debug,
                Ok("info") => Severity::Info,
                Ok("error") => Severity::Error,
                // A person watching: info lines too (a long first op, such as indexing a big jsonl log, says
                // what it is doing). Scripts and pipes see warnings and errors only.
                Err(_) if std::io::IsTerminal::is_terminal(&std::io::stderr()) => Severity::Info,
                _ => Severity::Warn,
            };
            let index = SEVERITIES.iter().position(|&s| s == level).unwrap_or(3);
            THRESHOLD.store(index as u8 + 1, Ordering::Relaxed);
            level
        }
        n => SEVERITIES[usize::from(n - 1).min(SEVERITIES.len() - 1)],
    }
}

/// Read the level again at the next line: for a process whose environment and stderr have just become
/// another's (the resident server's child, which takes on its caller's).
pub fn reread_level() {
    THRESHOLD.store(0, Ordering::Relaxed);
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
