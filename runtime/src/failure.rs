//! The one place where a failed call into a driver (trap, timeout, memory, panic, host error) becomes
//! an error message naming the driver and what happened.

use std::fmt;

use wasmtime::Trap;

use super::engine::Limits;

/// Why a call into a driver did not return normally.
#[derive(Debug, Clone)]
pub struct CallFailure {
    pub message: String,
}

impl fmt::Display for CallFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CallFailure {}

/// Explain `error` from calling `op` on driver `driver`. `memory_hit` says whether the memory limiter
/// refused a growth; `stderr` is what the driver printed (a Rust panic message ends up there).
pub fn explain(driver: &str, op: &str, error: &wasmtime::Error, limits: &Limits, memory_hit: bool, stderr: &str) -> CallFailure {
    let what = if memory_hit {
        format!("exceeded its memory limit of {} MiB", limits.memory_bytes >> 20)
    } else {
        match error.downcast_ref::<Trap>() {
            _ if error.downcast_ref::<super::caps::deadline::DeadlineExceeded>().is_some() => {
                format!("exceeded its time limit of {} ms (blocked in a host call)", limits.call_timeout.as_millis())
            }
            Some(Trap::Interrupt) => format!("exceeded its time limit of {} ms", limits.call_timeout.as_millis()),
            Some(Trap::StackOverflow) => "overflowed its stack (unbounded recursion?)".to_owned(),
            // Rust and C keep their stack in linear memory: running off its end is an out-of-bounds access.
            Some(Trap::MemoryOutOfBounds) => {
                "trapped on an out-of-bounds memory access (a stack overflow from unbounded recursion, or a memory bug)".to_owned()
            }
            Some(Trap::UnreachableCodeReached) if stderr.contains("panicked") => {
                format!("panicked: {}", panic_message(stderr))
            }
            Some(trap) => format!("trapped: {trap}"),
            None if error.downcast_ref::<super::caps::output::OutputCapExceeded>().is_some() => {
                format!("wrote more than {} bytes to its stdout or stderr", super::sandbox::MAX_CAPTURED_OUTPUT)
            }
            None => format!("failed: {error:#}"),
        }
    };
    CallFailure { message: format!("driver '{driver}' {what} (during {op})") }
}

/// The first line of a Rust panic report, without the location prefix noise.
fn panic_message(stderr: &str) -> String {
    let mut lines = stderr.lines().skip_while(|l| !l.contains("panicked"));
    let head = lines.next().unwrap_or_default().trim();
    let detail = lines.next().unwrap_or_default().trim();
    if detail.is_empty() { head.to_owned() } else { format!("{head} {detail}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::caps::output::CapturedOutput;
    use wasmtime_wasi::p2::{OutputStream, StreamError};

    /// The trap a captured stream makes past its cap is the one reported as the output limit.
    #[test]
    fn a_write_past_the_output_cap_is_reported_as_that_limit() {
        let mut guest = CapturedOutput::new(2);
        let Err(StreamError::Trap(trap)) = guest.write(wasmtime_wasi_io::bytes::Bytes::from_static(b"abc")) else { panic!("no trap") };
        let limits = Limits {
            call_timeout: std::time::Duration::from_secs(1),
            memory_bytes: 1 << 20,
            process_timeout: std::time::Duration::from_secs(1),
            op_timeout: std::time::Duration::from_secs(1),
            max_export_bytes: 1,
        };
        let failure = explain("d", "op", &trap, &limits, false, "");
        assert!(failure.message.contains("wrote more than"), "{}", failure.message);
    }
}
