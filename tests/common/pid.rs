//! A pid no process has, for liveness tests: shared by the integration tests (`common::pid`) and the
//! library's unit tests (included by path), so both mean the same by "dead".

/// The pid of a child that exited and was reaped.
pub fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}
