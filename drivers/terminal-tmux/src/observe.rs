//! The optional read-back ops: what one pane carries (key, title, pid), which panes carry a label, and
//! whether an agent, not a shell, holds a pane's foreground.
//!
//! The identity canary. `display-message -p -t <target>` exits 0 with empty output for a pane that does
//! not exist (measured on tmux 3.5 by agmsg), and may fall back to the current pane. So every per-pane
//! query asks for the target's own id in the same format string, and an answer about any other pane, or
//! about none, is "could not observe" (unreachable), never a fact. agmsg's `fence` and
//! `team_input_ready` query without the canary; here they carry it too, so a missing pane reads as
//! unknown rather than as a confident answer about the wrong one.

use agmsg_guest_sdk::log;
use agmsg_guest_sdk::terminal::{Answer, TermError};

use crate::id::{self, Kind, TmuxId};
use crate::run::{self, Server, captured};
use crate::session;

/// `display-message -p -t <bare> '<identity>|<fields>'`, with the canary checked; returns `<fields>`'s
/// values as tmux printed them (one line, split by the caller).
fn display(id: &TmuxId<'_>, fields: &str) -> Result<String, TermError> {
    let format = format!("{}|{fields}", id.kind.identity_field());
    let out = Server::of(id)
        .run_ok(&["display-message", "-p", "-t", id.bare, &format], |why| TermError::unreachable(format!("tmux display-message: {why}")))?;
    let facts = captured(&out);
    match facts.split_once('|') {
        Some((seen, rest)) if seen == id.bare => Ok(rest.to_owned()),
        _ => Err(TermError::unreachable(format!("tmux answered about another pane, or none, when asked about {}", id.bare))),
    }
}

fn has_control(text: &str) -> bool {
    text.chars().any(char::is_control)
}

/// `n/a:unsupported\tn/a:no_independent_field\t<key>\t<title>`: tmux has no activity field and no pane
/// label apart from the title the CLI owns; the key is the `@agmsg_agent` option.
pub fn team_observe(id: TmuxId<'_>) -> Result<String, TermError> {
    let server = Server::of(&id);
    let key = server.run(&["show-options", "-p", "-v", "-t", id.bare, "@agmsg_agent"])?;
    let key = if key.success() { captured(&key) } else { String::new() };
    let title = display(&id, "#{pane_title}")?;
    // The pane is proven reachable now, so an empty key is a decided fact, not a failed read.
    let key = if key.is_empty() { "absent:agent_key_unset".to_owned() } else { key };
    let title = if title.is_empty() { "unknown:terminal_title_missing".to_owned() } else { title };
    if [&key, &title].iter().any(|field| field.contains(['\t', '\n', '\r'])) {
        return Err(TermError::unreachable("tmux: the key or title would break the TAB-separated record"));
    }
    Ok(format!("n/a:unsupported\tn/a:no_independent_field\t{key}\t{title}"))
}

/// The `@agmsg_agent` label of one pane; empty when the pane carries none (agmsg's exit 1, which this
/// op's result type cannot carry). The confirming half of [`find_by_label`], through a different query.
pub fn label_of(id: TmuxId<'_>) -> Result<String, TermError> {
    let label = display(&id, "#{@agmsg_agent}")?;
    // A name never holds a control character, so such a label can match no member; refuse to print it.
    if has_control(&label) {
        return Err(TermError::unreachable("tmux: the pane's label holds control characters"));
    }
    Ok(label)
}

/// Every pane on the caller's server (`$TMUX`) whose `@agmsg_agent` is exactly `label`, as qualified
/// ids. Without `$TMUX` there is no server to ask: searching the default one could return a pane of a
/// different server with the same number (agmsg #1051).
pub fn find_by_label(label: &str) -> Result<Vec<String>, TermError> {
    if label.is_empty() {
        return Ok(Vec::new());
    }
    let socket = session::socket()
        .map_err(TermError::Unreachable)?
        .ok_or_else(|| TermError::unreachable("tmux: not under tmux ($TMUX is unset); no server to search"))?;
    let out = Server::at(&socket).run_ok(&["list-panes", "-a", "-F", "#{pane_id}|#{@agmsg_agent}"], |why| {
        TermError::unreachable(format!("tmux list-panes: {why}"))
    })?;
    // A cut listing could hide a second carrier, and callers rely on "exactly one hit".
    if out.truncated {
        return Err(TermError::unreachable("tmux: the pane listing was cut by the host's output cap"));
    }
    // The id comes first and the row splits at the FIRST '|': a label may itself contain one.
    let listing = out.stdout_text();
    let hits = listing
        .lines()
        .filter_map(|row| row.split_once('|'))
        .filter(|(pane, carried)| *carried == label && id::kind_of(pane) == Some(Kind::Pane))
        .map(|(pane, _)| id::qualify(Some(&socket), pane))
        .collect();
    Ok(hits)
}

/// `<socket|default>\tpane_pid=<pid>`: the pane's shell pid, which a pane closed and recreated under the
/// same id does not keep. A preflight check before a self-write, not an atomic fence.
pub fn fence(id: TmuxId<'_>) -> Result<String, TermError> {
    let instance = id.socket.unwrap_or("default");
    let pid = display(&id, "#{pane_pid}").map_err(|e| TermError::unreachable(format!("{instance}\tunknown:pane_query_failed ({e:?})")))?;
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return Err(TermError::unreachable(format!("{instance}\tunknown:pane_pid_missing")));
    }
    Ok(format!("{instance}\tpane_pid={pid}"))
}

/// One record, `<bare id>\t<pane pid>`, as agmsg prints it. The op observes and never classifies; the
/// caller pairs the pid with its process ancestry.
pub fn pane_process(id: TmuxId<'_>) -> Result<Vec<String>, TermError> {
    let pid = display(&id, "#{pane_pid}")?;
    if !pid_ok(&pid) {
        return Err(TermError::unreachable(format!("tmux: no usable pane pid for {} ({pid:?})", id.bare)));
    }
    Ok(vec![format!("{}\t{pid}", id.bare)])
}

/// A positive pid: non-empty decimal without a leading zero.
fn pid_ok(pid: &str) -> bool {
    !pid.is_empty() && !pid.starts_with('0') && pid.bytes().all(|b| b.is_ascii_digit())
}

/// Whether the pane's foreground process-group leader runs the `expected` CLI. `pane_current_command`
/// is only a display hint, so the proof goes pane pid → tty's foreground group (`ps -o tpgid`) → that
/// leader's argv (`ps -o command`). Every unreadable step is `Unknown`, never `No`: `No` skips the pane,
/// `Unknown` reports that it could not tell.
pub fn team_input_ready(id: TmuxId<'_>, expected: &str) -> Answer {
    match readiness(&id, expected) {
        Ok(answer) => answer,
        Err(reason) => {
            log::debug(&format!("team-input-ready {}: unknown:{reason}", id.bare));
            Answer::Unknown
        }
    }
}

fn readiness(id: &TmuxId<'_>, expected: &str) -> Result<Answer, String> {
    if expected.is_empty() {
        return Err("no_expected_cli".to_owned());
    }
    let facts = display(id, "#{pane_in_mode}|#{pane_pid}|#{pane_tty}").map_err(|e| format!("pane_query_failed ({e:?})"))?;
    let mut fields = facts.splitn(3, '|');
    let (in_mode, pane_pid, pane_tty) = (fields.next(), fields.next(), fields.next());
    if in_mode != Some("0") {
        log::debug(&format!("team-input-ready {}: not_ready:copy_mode", id.bare));
        return Ok(Answer::No);
    }
    let pane_pid = pane_pid.filter(|p| pid_ok(p)).ok_or("pane_pid_invalid")?;
    pane_tty.filter(|t| t.starts_with("/dev/")).ok_or("pane_tty_invalid")?;
    let tpgid = ps(&["-o", "tpgid=", "-p", pane_pid]).ok_or("foreground_pgid_unavailable")?;
    let tpgid: String = tpgid.chars().filter(|c| !c.is_whitespace()).collect();
    if !pid_ok(&tpgid) {
        return Err("foreground_pgid_invalid".to_owned());
    }
    let command = ps(&["-o", "command=", "-p", &tpgid]).ok_or("foreground_argv_unavailable")?;
    let program = command.split(' ').next().unwrap_or_default();
    if program == expected || program.strip_suffix(expected).is_some_and(|dir| dir.ends_with('/')) {
        Ok(Answer::Yes)
    } else {
        log::debug(&format!("team-input-ready {}: not_ready:foreground_cli_mismatch", id.bare));
        Ok(Answer::No)
    }
}

/// `ps <args>`'s captured stdout, or `None` when it could not be run or failed.
fn ps(args: &[&str]) -> Option<String> {
    match run::run_program("ps", args) {
        Ok(out) if out.success() => Some(captured(&out)),
        Ok(out) => {
            log::debug(&format!("ps failed: {}", run::complaint(&out)));
            None
        }
        Err(e) => {
            log::debug(&format!("ps: {e:?}"));
            None
        }
    }
}
