//! The limits every call and every instance runs under, from their defaults and the user's environment.

use std::time::Duration;

use wasmtime::Result;
use wasmtime::error::Context;

/// How often the epoch advances: the granularity of call deadlines.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Limits every call and every instance runs under.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Wall-clock deadline of one call into a driver.
    pub call_timeout: Duration,
    /// Cap on a driver instance's linear memory (and tables).
    pub memory_bytes: usize,
    /// Time limit of one program a terminal driver runs (kept below the call deadline).
    pub process_timeout: Duration,
    /// Wall-clock limit of a whole op made of many calls (an export, a convert): each call has its own
    /// deadline, and this bounds a driver that keeps answering forever.
    pub op_timeout: Duration,
    /// How much an export (or a convert) may carry: a driver whose exporter never ends cannot fill the
    /// user's disk or the host's memory.
    pub max_export_bytes: u64,
}

impl Limits {
    pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(30);
    pub const DEFAULT_MEMORY_BYTES: usize = 256 << 20;
    pub const DEFAULT_PROCESS_TIMEOUT: Duration = Duration::from_secs(10);
    pub const DEFAULT_OP_TIMEOUT: Duration = Duration::from_secs(600);
    pub const DEFAULT_MAX_EXPORT_BYTES: u64 = 1 << 30;

    /// Defaults, overridden by `AGMSG_DRIVER_TIMEOUT_MS`, `AGMSG_DRIVER_MEMORY_MB`,
    /// `AGMSG_PROCESS_TIMEOUT_MS`, `AGMSG_OP_TIMEOUT_MS` and `AGMSG_EXPORT_MAX_MB`.
    pub fn from_env() -> Result<Limits> {
        let mut limits = Limits {
            call_timeout: Self::DEFAULT_CALL_TIMEOUT,
            memory_bytes: Self::DEFAULT_MEMORY_BYTES,
            process_timeout: Self::DEFAULT_PROCESS_TIMEOUT,
            op_timeout: Self::DEFAULT_OP_TIMEOUT,
            max_export_bytes: Self::DEFAULT_MAX_EXPORT_BYTES,
        };
        if let Some(ms) = env_number("AGMSG_OP_TIMEOUT_MS")? {
            limits.op_timeout = Duration::from_millis(ms);
        }
        if let Some(mb) = env_number("AGMSG_EXPORT_MAX_MB")? {
            limits.max_export_bytes = mb.saturating_mul(1 << 20);
        }
        if let Some(ms) = env_number("AGMSG_PROCESS_TIMEOUT_MS")? {
            limits.process_timeout = Duration::from_millis(ms);
        }
        if let Some(ms) = env_number("AGMSG_DRIVER_TIMEOUT_MS")? {
            limits.call_timeout = Duration::from_millis(ms);
        }
        if let Some(mb) = env_number("AGMSG_DRIVER_MEMORY_MB")? {
            limits.memory_bytes = usize::try_from(mb).unwrap_or(usize::MAX).saturating_mul(1 << 20);
        }
        Ok(limits)
    }

    /// The call deadline in epoch ticks (at least one).
    pub fn deadline_ticks(&self) -> u64 {
        (self.call_timeout.as_millis() / EPOCH_TICK.as_millis()).max(1) as u64
    }
}

fn env_number(name: &str) -> Result<Option<u64>> {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|n| *n > 0)
            .map(Some)
            .with_context(|| format!("{name} must be a positive whole number, not {v:?}")),
        Err(_) => Ok(None),
    }
}
