//! agmsg's actas lock, read only: whether `(team, agent)` is held by a live session, decided as
//! agmsg's `actas_lock_state` decides it, so that spawn refuses exactly when agmsg's would.
//!
//! The lock is `run/actas.<team>__<agent>.session`, its first line the owner token: either
//! `<session>.<pid>` (alive while that pid is, and, when `run/cc-instance.<pid>` exists, while that
//! file still names this token) or a bare `<session>` (alive while some `run/cc-instance.<pid>` of a
//! live pid names it, or names `<session>.<n>`). An empty, missing or unreadable lock is free, and so
//! is one whose owner is dead.

use super::place::{RunDir, lock_name};

/// A lock's state as seen by a caller that holds no session of its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockState {
    Free,
    /// Held by this live owner token.
    Held(String),
}

/// The state of `(team, agent)`'s actas lock.
pub fn lock_state(run: &RunDir, team: &str, agent: &str) -> LockState {
    // `head -1` of a regular file; anything else reads as no owner, as agmsg's `[ -f ]` does.
    let owner = run.read(&lock_name(team, agent)).ok().flatten().and_then(|t| t.lines().next().map(str::to_owned)).unwrap_or_default();
    if !owner.is_empty() && instance_alive(run, &owner) { LockState::Held(owner) } else { LockState::Free }
}

/// `<prefix>.<digits>` with a non-empty prefix: the composite form of an owner token.
fn composite(token: &str) -> Option<(&str, &str)> {
    let (prefix, pid) = token.rsplit_once('.')?;
    (!prefix.is_empty() && !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit())).then_some((prefix, pid))
}

fn instance_alive(run: &RunDir, token: &str) -> bool {
    if let Some((_, pid)) = composite(token) {
        if !pid_alive(pid) {
            return false;
        }
        // A pid shared by several sessions: its instance file says which one is current.
        return match run.read(&format!("cc-instance.{pid}")) {
            Ok(None) => true,
            Ok(Some(text)) => trim_newlines(&text) == token,
            Err(_) => false,
        };
    }
    run.names_with_prefix("cc-instance.").iter().any(|name| {
        let pid = &name["cc-instance.".len()..];
        if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) || !pid_alive(pid) {
            return false;
        }
        let Ok(Some(text)) = run.read(name) else { return false };
        let held = trim_newlines(&text);
        held == token || composite(held).is_some_and(|(prefix, _)| prefix == token)
    })
}

/// What `$(cat file)` gives: the text without its trailing newlines.
fn trim_newlines(text: &str) -> &str {
    text.trim_end_matches('\n')
}

/// agmsg's liveness of an owner's pid field: its pid text, and signal 0 answers.
fn pid_alive(text: &str) -> bool {
    crate::pid::parse(text).is_some_and(crate::pid::alive)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pid::test_pid::dead_pid;

    #[test]
    fn agmsgs_liveness_rules() {
        let skill = tempfile::tempdir().unwrap();
        let run = RunDir::new(skill.path());
        let me = std::process::id();
        let lock = |text: &str| run.write(&lock_name("t", "bob"), text).unwrap();
        assert_eq!(lock_state(&run, "t", "bob"), LockState::Free, "no lock");
        lock(&format!("sid.{me}\n"));
        assert_eq!(lock_state(&run, "t", "bob"), LockState::Held(format!("sid.{me}")), "a live pid, no instance file");
        run.write(&format!("cc-instance.{me}"), "other.1\n").unwrap();
        assert_eq!(lock_state(&run, "t", "bob"), LockState::Free, "the pid now belongs to another session");
        run.write(&format!("cc-instance.{me}"), &format!("sid.{me}\n")).unwrap();
        assert_eq!(lock_state(&run, "t", "bob"), LockState::Held(format!("sid.{me}")));
        lock(&format!("sid.{}\n", dead_pid()));
        assert_eq!(lock_state(&run, "t", "bob"), LockState::Free, "a dead owner");
        for odd in ["sid.0", "sid.00123", "sid.99999999999", ""] {
            lock(odd);
            assert_eq!(lock_state(&run, "t", "bob"), LockState::Free, "{odd:?}");
        }
        // A bare session id: alive through a live instance file naming it, bare or composite.
        lock("sid\n");
        assert_eq!(lock_state(&run, "t", "bob"), LockState::Held("sid".into()), "cc-instance.<me> holds sid.<me>");
        run.remove(&format!("cc-instance.{me}")).unwrap();
        assert_eq!(lock_state(&run, "t", "bob"), LockState::Free);
        run.write(&format!("cc-instance.{}", dead_pid()), "sid").unwrap();
        assert_eq!(lock_state(&run, "t", "bob"), LockState::Free, "only a dead pid names it");
    }
}
