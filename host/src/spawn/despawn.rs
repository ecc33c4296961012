//! Despawn by name, agmsg's `despawn.sh <team> <from> <agent> [--force] [--timeout N]`: the member
//! is found through its placement record, never through the environment.
//!
//! - Graceful, while a live session holds the member's actas lock: `ctrl:despawn` is sent to it from
//!   `<from>` (its watcher drops the role and closes its own pane), and the lock is waited on, at most
//!   the timeout; then the record is removed. A timeout leaves everything in place (exit 3).
//! - Graceful with no live lock (never claimed, or its owner died): nothing can answer the message, so
//!   the recorded pane is closed and the registration dropped, as `--force` does.
//! - `--force`: the recorded pane is closed, the registration dropped (agmsg's `reset.sh`, when agmsg
//!   is installed), the lock removed, and the record removed. No record: nothing to force (exit 1).
//!
//! Closing the pane and dropping the registration are best-effort, as in agmsg: a pane already gone
//! is not an error, and what failed is reported as a warning.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::actas::{self, LockState};
use super::place::{self, PlacementRecord, RunDir};
use crate::error::HostError;
use crate::runtime::Runtime;
use crate::terminal::Terminal;
use crate::terminal::resolve::split_reference;
use crate::terminal::source::Candidates;

/// agmsg's control message that asks a member's watcher to tear it down.
pub const DESPAWN_MESSAGE: &str = "ctrl:despawn";

/// agmsg's default wait for a graceful despawn.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

pub struct DespawnRequest<'a> {
    pub team: &'a str,
    /// The sender of the control message (the leader's own name).
    pub from: &'a str,
    pub agent: &'a str,
    pub force: bool,
    pub timeout: Duration,
}

/// How a despawn ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Despawned {
    /// `--force`: torn down from here.
    Forced,
    /// No live lock: torn down from here, best-effort.
    NoLiveLock,
    /// The member released its lock after this long.
    Released(Duration),
    /// The member still held its lock when the timeout passed (exit 3).
    TimedOut(Duration),
}

#[derive(Debug)]
pub struct DespawnReport {
    pub despawned: Despawned,
    /// What the best-effort steps could not do.
    pub warnings: Vec<String>,
}

/// A despawn, or why it could not be attempted ([`ExitClass::Refused`]: an invalid name, `--force`
/// with no placement record, the message not sent). A timeout is an outcome, not an error: the
/// caller reports it as [`ExitClass::TimedOut`].
///
/// [`ExitClass::Refused`]: crate::error::ExitClass::Refused
/// [`ExitClass::TimedOut`]: crate::error::ExitClass::TimedOut
pub fn despawn(run: &RunDir, skill_dir: &Path, req: &DespawnRequest<'_>) -> Result<DespawnReport, HostError> {
    for (what, name) in [("team", req.team), ("from", req.from), ("agent", req.agent)] {
        agmsg_contract::check_name(what, name).map_err(|e| HostError::refused(e.to_string()))?;
    }
    let record = place::read_record(run, req.team, req.agent)?;
    let mut warnings = Vec::new();
    if req.force {
        let Some(record) = record else {
            return Err(HostError::refused(format!(
                "no placement record for '{}/{}': nothing to force (was it started by spawn? a graceful despawn does not need one)",
                req.team, req.agent
            )));
        };
        tear_down(skill_dir, req.agent, &record, &mut warnings);
        if let Err(e) = run.remove(&place::lock_name(req.team, req.agent)) {
            warnings.push(format!("cannot remove the actas lock: {e}"));
        }
        remove_record(run, req, &mut warnings);
        return Ok(DespawnReport { despawned: Despawned::Forced, warnings });
    }

    if actas::lock_state(run, req.team, req.agent) == LockState::Free {
        if let Some(record) = record {
            tear_down(skill_dir, req.agent, &record, &mut warnings);
        }
        remove_record(run, req, &mut warnings);
        return Ok(DespawnReport { despawned: Despawned::NoLiveLock, warnings });
    }

    let sent = crate::storage::StoreSession::resolve(None, None, Some(req.team), true)
        .and_then(|store| store.driver()?.send(req.team, req.from, req.agent, DESPAWN_MESSAGE));
    if let Err(e) = sent {
        return Err(HostError::refused(format!("cannot send {DESPAWN_MESSAGE} to {}: {e}", req.agent)));
    }
    let started = Instant::now();
    loop {
        if actas::lock_state(run, req.team, req.agent) == LockState::Free {
            remove_record(run, req, &mut warnings);
            return Ok(DespawnReport { despawned: Despawned::Released(started.elapsed()), warnings });
        }
        if started.elapsed() >= req.timeout {
            return Ok(DespawnReport { despawned: Despawned::TimedOut(started.elapsed()), warnings });
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn remove_record(run: &RunDir, req: &DespawnRequest<'_>, warnings: &mut Vec<String>) {
    if let Err(e) = place::remove_record(run, req.team, req.agent) {
        warnings.push(format!("cannot remove the placement record: {e}"));
    }
}

/// Close the recorded pane and drop the member's registration, each best-effort.
fn tear_down(skill_dir: &Path, agent: &str, record: &PlacementRecord, warnings: &mut Vec<String>) {
    if let Err(e) = close_pane(&record.reference) {
        warnings.push(format!("could not close {}: {e}", record.reference));
    }
    if record.project.is_empty() || record.agent_type.is_empty() {
        return;
    }
    let reset = skill_dir.join("scripts/reset.sh");
    if !reset.is_file() {
        warnings.push(format!("agmsg's {} is not there: {agent}'s registration was not dropped", reset.display()));
        return;
    }
    // `--` first: reset.sh takes any `--*` word as its option wherever it stands, and a record's
    // fields are whatever the file holds (a planted `--no-resolve` would shift the arguments).
    let status = Command::new(&reset)
        .args(["--", record.project.as_str(), record.agent_type.as_str(), agent])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => warnings.push(format!("agmsg's reset.sh failed ({s}): {agent}'s registration may remain")),
        Err(e) => warnings.push(format!("cannot run agmsg's reset.sh: {e}")),
    }
}

/// The terminal's `despawn` of the pane the reference names, on the driver the reference names.
fn close_pane(reference: &str) -> Result<(), String> {
    let candidates = Candidates::new();
    let known = candidates.names();
    let Some((scheme, _)) = split_reference(reference, &known) else {
        return Err("it is not a placement reference of a known terminal driver".to_owned());
    };
    let source = candidates.resolve(scheme)?;
    let id = crate::terminal::resolve::bare_id(reference, &known, scheme, Some(scheme)).map_err(|e| e.message)?;
    let runtime = Runtime::from_env()?;
    let mut terminal = Terminal::open(&runtime, &source).map_err(|e| e.message)?;
    terminal.despawn(&id).map_err(|e| e.message)
}
