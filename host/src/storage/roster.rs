//! agmsg's team registry, as its `send.sh` reads it before a send: the sender and the recipient must be
//! agents registered in the team (the keys of `agents` in `<teams>/<team>/config.json`, which agmsg's
//! `join.sh` writes), unless the send is forced. A typo'd recipient would otherwise get a message no
//! one ever reads. agmsg-host's `send` keeps the same rule wherever agmsg's registry is: agmsg installed
//! (its `teams/` beside its `scripts/`, or `AGMSG_TEAMS_DIR`). With no agmsg at all there is no registry
//! (agmsg-host registers no agents), and nothing is checked.

use std::path::{Path, PathBuf};

use crate::error::HostError;

use super::location;

/// Where agmsg's registry is, when agmsg is there: `AGMSG_TEAMS_DIR`, else `teams/` of agmsg's
/// default install, when that install (its `scripts/send.sh`) or its `teams/` exists.
fn registry() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("AGMSG_TEAMS_DIR").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    let teams = location::teams_dir()?;
    let installed = teams.is_dir() || teams.parent().is_some_and(|skill| skill.join("scripts/send.sh").is_file());
    installed.then_some(teams)
}

/// The agents registered in `team`, in the registry's order; `None` when the team has no registry
/// file. A file that is not a JSON object with an `agents` object registers no one (as agmsg reads it).
fn members(teams: &Path, team: &str) -> Result<Option<Vec<String>>, HostError> {
    let config = teams.join(team).join("config.json");
    let text = match std::fs::read(&config) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(HostError::refused(format!("cannot read team '{team}''s registry {}: {e}", config.display()))),
    };
    Ok(Some(registered(&text)))
}

/// The agents a team's `config.json` registers: the keys of its `agents` object (as [`members`] lists them);
/// no one when it is not a JSON object with an `agents` object (as agmsg reads it).
pub fn registered(config: &[u8]) -> Vec<String> {
    let value: serde_json::Value = serde_json::from_slice(config).unwrap_or(serde_json::Value::Null);
    value.get("agents").and_then(|a| a.as_object()).map(|agents| agents.keys().cloned().collect()).unwrap_or_default()
}

/// Refuse a send from `from` to `to` in `team` that agmsg's `send.sh` would refuse without `--force`:
/// a team with no registry, or a sender or recipient not registered in it. Nothing is checked where
/// agmsg is not installed (see the module's note).
pub fn check_send(team: &str, from: &str, to: &str) -> Result<(), HostError> {
    let Some(teams) = registry() else { return Ok(()) };
    let Some(members) = members(&teams, team)? else {
        return Err(HostError::refused(format!(
            "no agent is registered in team '{team}' (no {}): nothing was sent. Join the team with agmsg's join.sh first, or send with --force",
            teams.join(team).join("config.json").display()
        )));
    };
    for (role, name) in [("sender", from), ("recipient", to)] {
        if !members.iter().any(|m| m == name) {
            let registered = if members.is_empty() { "no one".to_owned() } else { members.join(", ") };
            return Err(HostError::refused(format!(
                "the {role} '{name}' is not registered in team '{team}' (registered: {registered}): nothing was sent. Check the name, or send with --force"
            )));
        }
    }
    Ok(())
}
