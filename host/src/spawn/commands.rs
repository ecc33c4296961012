//! `agmsg-host spawn` and `despawn` as the command line asks for them: the type found in the
//! environment's registry, its spawn options file, agmsg's install, the terminal candidates, then the
//! report written (the placement reference first: whatever the wait says, the pane exists). A member
//! not ready, or not torn down, in time is an [`ExitClass::TimedOut`] error, after the report.

use std::io::Write;
use std::time::Duration;

use serde_json::json;

use super::despawn::{self, DespawnRequest, Despawned};
use super::join::Joined;
use super::options;
use super::place::{self, Readiness, RunDir};
use super::{Naming, SpawnRequest};
use crate::agent::boot::BootRequest;
use crate::agent::commands::registry_for;
use crate::agent::registry::{self, AgentType, Registry};
use crate::display;
use crate::error::{ExitClass, HostError};
use crate::log::host_log;
use crate::runtime::Runtime;
use crate::terminal::driver::{NamingMode, SpawnTarget, TermFailKind};
use crate::terminal::source::Candidates;

/// What `spawn` is asked.
pub struct SpawnCommand {
    /// The agent type's name.
    pub agent_type: String,
    pub boot: BootRequest,
    /// `--terminal`; `None`: as every terminal op chooses one.
    pub terminal: Option<String>,
    pub target: SpawnTarget,
    /// The spawn options role (`--role`).
    pub role: Option<String>,
    /// Do not wait for the agent's readiness.
    pub no_wait: bool,
    /// How long to wait for it.
    pub ready_timeout: Duration,
    /// The report as one JSON object.
    pub json: bool,
}

/// The word `--json` reports for a placement.
fn placement_word(target: SpawnTarget) -> &'static str {
    match target {
        SpawnTarget::Window => "window",
        SpawnTarget::PaneH => "pane-h",
        SpawnTarget::PaneV => "pane-v",
    }
}

/// What the spawn options file gives this type and agent: tokens (before the `--spawn-arg` ones) and
/// a required role's profile directory to export.
fn file_options(reg: &Registry, t: &AgentType, agent: &str, role: Option<&str>) -> Result<options::AgentOptions, HostError> {
    let file = match options::path_from_env() {
        Some(path) => options::load(&path)?,
        None => None,
    };
    let vendors: Vec<&str> = reg.types().map(|t| t.value("vendor")).filter(|v| !v.is_empty()).collect();
    let contract = options::ProfileContract::of(|key| t.value(key));
    options::resolve(file.as_ref(), &t.name, agent, role, &vendors, contract.as_ref())
}

/// Spawn as `command` asks, writing the report to `out` and notes to `err`; warnings (a naming
/// failure, a record not written, no agmsg to pre-join in: the pane exists) go to the host log.
pub fn spawn(command: SpawnCommand, out: &mut dyn Write, err: &mut dyn Write) -> Result<(), HostError> {
    let SpawnCommand { agent_type: type_name, boot: mut req, terminal, target, role, no_wait, ready_timeout, json } = command;
    let reg = registry_for(&type_name);
    let t = reg.require(&type_name)?;
    let options::AgentOptions { mut tokens, env } = file_options(&reg, t, &req.agent, role.as_deref())?;
    tokens.append(&mut req.spawn_options);
    req.spawn_options = tokens;
    let skill_dir = registry::require_skill_dir()?;
    let runtime = Runtime::from_env().map_err(|e| HostError::new(ExitClass::Terminal(TermFailKind::Unreachable), e))?;
    let candidates = Candidates::new();
    let (team, agent) = (req.team.clone(), req.agent.clone());
    let env = env.into_iter().collect();
    let request = SpawnRequest { boot: req, terminal: terminal.as_deref(), target, naming: super::naming_mode_from_env(), env };
    let spawned = super::spawn(&runtime, t, &candidates, &skill_dir, request)?;

    let mut warnings = Vec::new();
    if let Naming::Failed(why) = &spawned.naming {
        warnings.push(why.clone());
    }
    if let Joined::NoAgmsg(script) = &spawned.joined {
        warnings.push(format!(
            "{} is not there (agmsg is not installed): {agent} was not pre-joined to {team}, its actas will ask for a team",
            script.display()
        ));
    }
    if let Err(why) = &spawned.record {
        warnings.push(format!("{why}: despawn by name will not find this pane"));
    }
    if !spawned.boot.wait_ready && !no_wait {
        let _ = writeln!(err, "agmsg-host spawn: agent type {type_name} has no readiness handshake (monitor=no): not waiting for it");
    }
    for warning in &warnings {
        host_log::warn(warning);
    }
    // The reference first: whatever the wait says, the pane exists.
    if !json && let Err(e) = writeln!(out, "{}", display::line(&spawned.reference)).and_then(|()| out.flush()) {
        return Err(unwritten(&spawned.reference, e));
    }
    let readiness = (spawned.boot.wait_ready && !no_wait).then(|| place::wait_ready(&spawned.run, &team, &agent, ready_timeout));
    let (ready_word, after) = match readiness {
        None => ("skipped", None),
        Some(Readiness::Ready(after)) => ("ready", Some(after.as_secs())),
        // The whole timeout: that is how long was waited.
        Some(Readiness::TimedOut(_)) => ("timeout", Some(ready_timeout.as_secs())),
    };
    let text = if json {
        let naming = match &spawned.naming {
            Naming::Named(NamingMode::LabelAndKey) => "label-and-key",
            Naming::Named(NamingMode::KeyOnly) => "key-only",
            Naming::Unsupported => "unsupported",
            Naming::Failed(_) => "failed",
        };
        let value = json!({
            "reference": spawned.reference,
            "terminal": spawned.terminal,
            "id": spawned.id,
            "placement": placement_word(target),
            "naming": naming,
            "joined": spawned.joined == Joined::Joined,
            "record": spawned.record.as_ref().ok(),
            "ready": ready_word,
            "ready_after_s": after,
            "warnings": warnings,
            "boot": spawned.boot,
        });
        format!("{value}\n")
    } else if let Some(after) = after {
        // Names may hold anything valid in a name: shown as one visible line.
        format!("{}\n", display::line(&format!("status={ready_word} name={agent} team={team} after={after}s")))
    } else {
        String::new()
    };
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        return Err(unwritten(&spawned.reference, e));
    }
    if ready_word == "timeout" {
        return Err(HostError::new(
            ExitClass::TimedOut,
            format!(
                "{agent} did not signal ready within {}s; it may still be booting (its pane stays: despawn it, or raise --ready-timeout)",
                ready_timeout.as_secs()
            ),
        ));
    }
    Ok(())
}

/// The pane exists but its reference could not be printed: the terminal's "failed" (§2.3), as a
/// driver op whose answer is lost.
fn unwritten(reference: &str, e: std::io::Error) -> HostError {
    HostError::new(ExitClass::Terminal(TermFailKind::Failed), format!("spawned {reference}, but cannot write to stdout: {e}"))
}

/// Despawn `agent` of `team` (the control message from `from`) as agmsg's despawn.sh, writing
/// `status=...` to `out` and notes to `err`; warnings go to the host log.
pub fn despawn(
    team: &str,
    from: &str,
    agent: &str,
    force: bool,
    timeout: Duration,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), HostError> {
    let skill_dir = registry::require_skill_dir()?;
    let run = RunDir::new(&skill_dir);
    let req = DespawnRequest { team, from, agent, force, timeout };
    let outcome = despawn::despawn(&run, &skill_dir, &req)?;
    for warning in &outcome.warnings {
        host_log::warn(warning);
    }
    let seconds = timeout.as_secs();
    let (line, timed_out) = match outcome.despawned {
        Despawned::Forced => (format!("status=forced name={agent} team={team}"), false),
        Despawned::NoLiveLock => {
            let _ = writeln!(
                err,
                "agmsg-host despawn: no live session holds {}'s actas lock: its recorded pane, if any, is closed and its registration dropped from here",
                display::line(agent)
            );
            (format!("status=ok name={agent} team={team} note=no-live-lock"), false)
        }
        Despawned::Released(after) => (format!("status=ok name={agent} team={team} after={}s", after.as_secs()), false),
        Despawned::TimedOut(_) => (format!("status=timeout name={agent} team={team} after={seconds}s"), true),
    };
    writeln!(out, "{}", display::line(&line)).map_err(|e| HostError::refused(format!("cannot write to stdout: {e}")))?;
    if timed_out {
        return Err(HostError::new(
            ExitClass::TimedOut,
            format!("{agent} did not tear down within {seconds}s; its watcher may be dead: retry with --force"),
        ));
    }
    Ok(())
}
