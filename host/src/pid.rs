//! Whether a process id names a live process, as agmsg's scripts decide it with `kill -0`: the one
//! liveness check of the host (spawn's actas lock, delivery's watcher pidfile). A leaf: nothing here
//! names the host's areas.

/// An agmsg pid field: a plain positive decimal that fits a pid, no sign and no leading zero (0
/// names a process group, and `007` is not the text agmsg writes).
pub fn parse(text: &str) -> Option<i32> {
    if text.is_empty() || text.starts_with('0') || !text.bytes().all(|b| b.is_ascii_digit()) || text.len() > 10 {
        return None;
    }
    text.parse::<i32>().ok().filter(|pid| *pid > 0)
}

/// Signal 0 reaches `pid`, or is refused for permission (a process in another sandbox is still
/// alive). No signal is sent. A zombie answers too, as it does to agmsg's `kill -0`.
pub fn alive(pid: i32) -> bool {
    let Some(pid) = rustix::process::Pid::from_raw(pid) else { return false };
    matches!(rustix::process::test_kill_process(pid), Ok(()) | Err(rustix::io::Errno::PERM))
}

/// `/proc/<pid>/stat` says the process has exited and waits to be reaped.
pub fn zombie(pid: i32) -> bool {
    // "<pid> (<comm>) <state> ...", the comm possibly holding spaces and parentheses.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z'))
}

/// The tests' dead-pid helper, shared with the integration tests (one copy) and `spawn::actas`'s tests.
#[cfg(test)]
#[path = "../../tests/common/pid.rs"]
pub(crate) mod test_pid;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agmsgs_pid_text_and_liveness() {
        for odd in ["", "0", "00123", "-5", "+5", "99999999999", "12a", " 12"] {
            assert_eq!(parse(odd), None, "{odd:?}");
        }
        assert_eq!(parse("4242"), Some(4242));
        assert!(alive(std::process::id() as i32), "this process");
        assert!(!alive(test_pid::dead_pid() as i32), "a reaped child");
        assert!(!zombie(std::process::id() as i32));
    }

    #[test]
    fn an_unreaped_child_is_a_zombie_but_answers_signal_0() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        // Until reaped, the exited child stays in the table as a zombie.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !zombie(pid) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(zombie(pid) && alive(pid));
        child.wait().unwrap();
        assert!(!alive(pid));
    }
}
