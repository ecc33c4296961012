//! The pre-join: before launching, the agent is registered in its team for the project, so that its
//! `actas` only claims the role instead of asking for a team.
//!
//! Membership is agmsg's team registry (`teams/<team>/config.json` and its roster journal, under a
//! registry lock), written by agmsg's core, not by a storage driver: no axis of agmsg-host owns it.
//! So spawn asks agmsg's own `scripts/join.sh`, as agmsg's spawn does, with the project kept exactly
//! as given (`AGMSG_RESOLVE_PROJECT=0`). Without an agmsg install there is nothing to join and spawn
//! says so.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::HostError;

/// How long join.sh may take (it waits on agmsg's registry lock); it is killed after that.
const JOIN_TIMEOUT: Duration = Duration::from_secs(60);

/// What the pre-join did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Joined {
    /// agmsg's join.sh registered the agent.
    Joined,
    /// No agmsg install: this join.sh does not exist, so nothing was registered.
    NoAgmsg(PathBuf),
}

/// Run `<skill>/scripts/join.sh <team> <agent> <type> <project>`.
pub fn pre_join(skill_dir: &Path, team: &str, agent: &str, agent_type: &str, project: &Path) -> Result<Joined, HostError> {
    let script = skill_dir.join("scripts/join.sh");
    if !script.is_file() {
        return Ok(Joined::NoAgmsg(script));
    }
    let mut child = Command::new(&script)
        .args([team, agent, agent_type])
        .arg(project)
        .env("AGMSG_RESOLVE_PROJECT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| HostError::refused(format!("cannot run agmsg's {}: {e}", script.display())))?;
    // stderr is read on its own thread so a chatty join cannot block on a full pipe while we wait.
    let mut stderr = child.stderr.take().expect("piped");
    let (sender, said) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = (&mut stderr).take(64 * 1024).read_to_end(&mut text);
        let _ = sender.send(text);
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < JOIN_TIMEOUT => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(HostError::refused(format!(
                    "agmsg's join.sh did not finish within {}s: {team}/{agent} was not joined",
                    JOIN_TIMEOUT.as_secs()
                )));
            }
            Err(e) => return Err(HostError::refused(format!("waiting for agmsg's join.sh: {e}"))),
        }
    };
    // A process join.sh left behind may hold its stderr open: what was said is not waited for long.
    let said = said.recv_timeout(Duration::from_secs(2)).unwrap_or_default();
    let said = String::from_utf8_lossy(&said).trim().to_owned();
    if status.success() {
        Ok(Joined::Joined)
    } else {
        let code = status.code().map_or_else(|| "a signal".to_owned(), |c| format!("exit {c}"));
        Err(HostError::refused(format!("pre-joining {agent} to team {team} failed (agmsg's join.sh, {code}): {said}")))
    }
}
