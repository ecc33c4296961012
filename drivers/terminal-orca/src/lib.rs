//! agmsg's orca terminal driver as a component: a terminal hosted by the Orca multi-agent IDE, addressed
//! by its own opaque `term_<uuid>` handle.
//!
//! It runs the same orca command lines as agmsg's bash driver (`scripts/drivers/terminals/orca/ops.sh`):
//! every call is `orca terminal <verb> --terminal <handle> ... --json`, and every answer is read from the
//! JSON envelope (`ok`, `result`, `error.code`), never from the exit status alone. The component cannot
//! touch a file or a socket itself: the only way out is `orca`, run by the host with the environment the
//! manifest declares. Every id passes one grammar ([`id`]) before anything runs.
//!
//! Where bash returns 13 with `runtime_error` on stdout (a failed spawn, despawn or name), this driver
//! answers [`TermError::Unsupported`], the variant that keeps that exit code; the host prints the word.
//! There is no `arrange`: orca's CLI has no reordering verb.

mod id;

use agmsg_guest_sdk::export_terminal_driver;
use agmsg_guest_sdk::log;
use agmsg_guest_sdk::process::{self, Output};
use agmsg_guest_sdk::terminal::{
    ArrangeOutcome, Description, Detection, Intent, NamingMode, PanePresence, SpawnTarget, TermError, TerminalDriver,
};
use serde_json::Value;

/// The driver's manifest, the one source of what `describe` says (name, priority, backend, capabilities).
const MANIFEST: &str = include_str!("../terminal.conf");

/// The error code with which a live CLI says the whole Orca runtime is down (it still exits 0).
const RUNTIME_UNAVAILABLE: &str = "runtime_unavailable";

#[derive(Default)]
struct Orca;

export_terminal_driver!(Orca);

/// Validate `id`, or refuse it without running anything; the bare handle is what orca is given.
fn parse_id(id: &str) -> Result<&str, TermError> {
    id::parse(id).ok_or_else(|| TermError::unsupported(format!("unsupported: not an orca terminal handle: {id:?}")))
}

/// A step that failed where agmsg's driver answers `runtime_error` with exit 13.
fn step_failed(what: String) -> TermError {
    TermError::Unsupported(what)
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The boot words as the one command line `--command` takes, which orca hands to a shell (its users
/// pass `cd x && make` there): a word the shell reads as itself (letters, digits, `/._-+:,=@%`) as it
/// is, any other single-quoted, so every word, whatever it holds, reaches the program as given. The
/// host's own boot (`/bin/sh <file>`) is plain words and goes as before.
fn shell_line(words: &[String]) -> String {
    words.iter().map(|w| agmsg_guest_sdk::terminal::shell_word(w)).collect::<Vec<_>>().join(" ")
}

/// `orca <args...>`. Only the verb is logged: the rest may be a user's message.
fn orca(args: &[&str]) -> Result<Output, TermError> {
    log::debug(&format!("orca {}", args.iter().take(2).copied().collect::<Vec<_>>().join(" ")));
    process::run("orca", args).map_err(|e| TermError::from_process("orca", e))
}

fn require_orca() -> Result<(), TermError> {
    if process::available("orca") { Ok(()) } else { Err(TermError::unreachable("orca: not on PATH — cannot reach the terminal")) }
}

/// What an orca call printed, as agmsg reads it: its exit status is never trusted on its own.
enum Reply {
    /// No output at all.
    Empty,
    NotJson,
    /// The envelope said `ok: true`.
    Ok(Value),
    /// The envelope said anything else; the error code when it gave one.
    Refused(Option<String>),
}

fn reply(out: &Output) -> Reply {
    if out.stdout.iter().all(u8::is_ascii_whitespace) {
        return Reply::Empty;
    }
    match serde_json::from_slice::<Value>(&out.stdout) {
        Err(_) => Reply::NotJson,
        Ok(v) if v.get("ok") == Some(&Value::Bool(true)) => Reply::Ok(v),
        Ok(v) => Reply::Refused(at(&v, &["error", "code"]).and_then(Value::as_str).map(str::to_owned)),
    }
}

fn at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, key| v.get(key))
}

/// `orca terminal show --terminal <handle> --json`.
fn show(handle: &str) -> Result<Reply, TermError> {
    orca(&["terminal", "show", "--terminal", handle, "--json"]).map(|out| reply(&out))
}

/// The read/write failure taxonomy of peek and poke: the runtime down is unreachable (10), any other
/// refusal an answered failure (12).
fn refused(code: Option<String>, doing: &str, id: &str) -> TermError {
    if code.as_deref() == Some(RUNTIME_UNAVAILABLE) {
        TermError::unreachable(format!("orca: the Orca runtime is unavailable — cannot reach the terminal to {doing} pane {id:?}"))
    } else {
        let code = code.as_deref().unwrap_or("no error code");
        TermError::failed(format!("orca: could not {doing} terminal {id:?} ({code}; it may no longer exist)"))
    }
}

impl TerminalDriver for Orca {
    fn check(&self) -> Result<(), TermError> {
        if process::available("orca") { Ok(()) } else { Err(TermError::MissingDeps("orca not found".to_owned())) }
    }

    fn describe(&self) -> Description {
        Description {
            hints: vec![("syntax_help".to_owned(), "orca terminal --help".to_owned())],
            ..Description::from_terminal_conf(MANIFEST)
        }
    }

    /// Presence is `TERM_PROGRAM=Orca`; the id is `$ORCA_TERMINAL_HANDLE` when it is a handle of the
    /// grammar. The session id is unused: Orca says which pane this is through the environment.
    fn detect(&self, _session_id: &str) -> Detection {
        if var("TERM_PROGRAM").as_deref() != Some("Orca") {
            return Detection::Absent;
        }
        match var("ORCA_TERMINAL_HANDLE") {
            Some(handle) if id::handle_ok(&handle) => Detection::Resolved(handle),
            _ => Detection::Unresolved("orca: $ORCA_TERMINAL_HANDLE is unset or malformed — cannot identify this pane".to_owned()),
        }
    }

    /// `terminal create` in the project's worktree, with the boot command as the pane's initial command.
    /// orca has no window/split distinction: every target adds one terminal. The title is a courtesy;
    /// `name` is what names the pane.
    fn spawn(&self, name: &str, project: &str, _target: SpawnTarget, boot: &[String]) -> Result<String, TermError> {
        if !process::available("orca") {
            return Err(step_failed(format!("orca: not on PATH — cannot spawn a terminal in {project}")));
        }
        let worktree = format!("path:{project}");
        let command = shell_line(boot);
        let out = orca(&["terminal", "create", "--worktree", &worktree, "--title", name, "--command", &command, "--json"])
            .map_err(|e| step_failed(format!("orca: terminal create for {project}: {e:?}")))?;
        let created = match reply(&out) {
            Reply::Ok(v) => v,
            Reply::Empty => return Err(step_failed(format!("orca: terminal create for {project} produced no output"))),
            Reply::NotJson => return Err(step_failed(format!("orca: terminal create for {project} returned unparsable output"))),
            Reply::Refused(code) => {
                return Err(step_failed(format!("orca: terminal create for {project} failed ({})", code.unwrap_or_default())));
            }
        };
        match at(&created, &["result", "terminal", "handle"]).and_then(Value::as_str) {
            Some(handle) if id::handle_ok(handle) => Ok(handle.to_owned()),
            Some(_) => Err(step_failed(format!("orca: terminal create for {project} answered ok with a malformed handle"))),
            None => Err(step_failed(format!("orca: terminal create for {project} answered ok with no handle"))),
        }
    }

    /// `terminal close`, whose own answer is never trusted (it changed between Orca versions), then
    /// `pane_state`: only a positively confirmed gone is success.
    fn despawn(&self, id: &str) -> Result<(), TermError> {
        let handle = parse_id(id)?;
        if !process::available("orca") {
            return Err(step_failed(format!("orca: not on PATH — cannot despawn terminal {id:?}")));
        }
        if let Err(e) = orca(&["terminal", "close", "--terminal", handle, "--json"]) {
            log::debug(&format!("ignored: orca terminal close: {e:?}"));
        }
        match self.pane_state(id) {
            Ok(PanePresence::Gone) => Ok(()),
            state => Err(step_failed(format!("orca: terminal {id:?} was not confirmed gone after close (pane_state: {state:?})"))),
        }
    }

    /// `terminal read --screen` (with `--limit N` for `--lines N`): the rendered frame's `tail`, one
    /// line each, which must be an array of strings.
    fn peek(&self, id: &str, lines: Option<u32>) -> Result<String, TermError> {
        let handle = parse_id(id)?;
        require_orca()?;
        let limit = lines.map(|n| n.to_string());
        let mut args = vec!["terminal", "read", "--terminal", handle, "--screen"];
        if let Some(limit) = &limit {
            args.extend(["--limit", limit.as_str()]);
        }
        args.push("--json");
        let read = match reply(&orca(&args)?) {
            Reply::Ok(v) => v,
            Reply::Empty => return Err(TermError::failed(format!("orca: could not read terminal {id:?} (it may no longer exist)"))),
            Reply::NotJson => return Err(TermError::failed(format!("orca: read for terminal {id:?} returned unparsable output"))),
            Reply::Refused(code) => return Err(refused(code, "read", id)),
        };
        let tail = at(&read, &["result", "terminal", "tail"])
            .and_then(Value::as_array)
            .ok_or_else(|| TermError::failed(format!("orca: read for terminal {id:?} did not return an array of lines")))?;
        let mut text = String::new();
        for line in tail {
            let line =
                line.as_str().ok_or_else(|| TermError::failed(format!("orca: read for terminal {id:?} returned a non-text line")))?;
            text.push_str(line);
            text.push('\n');
        }
        Ok(text)
    }

    /// `terminal send --text <text> --enter`. `ok: true` is only the envelope; `result.send.accepted`
    /// (a JSON true) is the receipt.
    fn poke(&self, id: &str, text: &str) -> Result<(), TermError> {
        let handle = parse_id(id)?;
        require_orca()?;
        let sent = match reply(&orca(&["terminal", "send", "--terminal", handle, "--text", text, "--enter", "--json"])?) {
            Reply::Ok(v) => v,
            Reply::Empty => return Err(TermError::failed(format!("orca: could not send to terminal {id:?} (it may no longer exist)"))),
            Reply::NotJson => return Err(TermError::failed(format!("orca: send to terminal {id:?} returned unparsable output"))),
            Reply::Refused(code) => return Err(refused(code, "send to", id)),
        };
        match at(&sent, &["result", "send", "accepted"]) {
            Some(Value::Bool(true)) => Ok(()),
            other => Err(TermError::failed(format!("orca: send to terminal {id:?} was not accepted (accepted={other:?})"))),
        }
    }

    /// Built on `terminal show` alone: `ok: true` with `connected: true` is present, with
    /// `connected: false` gone (a real, closed pane). A stale handle (`ok: false`) is not proof of gone.
    fn pane_state(&self, id: &str) -> Result<PanePresence, TermError> {
        let handle = parse_id(id)?;
        require_orca()?;
        match show(handle)? {
            Reply::Ok(v) => match at(&v, &["result", "terminal", "connected"]) {
                Some(Value::Bool(true)) => Ok(PanePresence::Present),
                Some(Value::Bool(false)) => Ok(PanePresence::Gone),
                _ => Err(TermError::unreachable("orca terminal show: `connected` is not a boolean")),
            },
            Reply::Refused(code) => Err(TermError::unreachable(format!(
                "orca terminal show answered ok:false ({}): an unresolved handle is not proof of gone",
                code.unwrap_or_default()
            ))),
            Reply::Empty | Reply::NotJson => Err(TermError::unreachable("orca terminal show: no readable answer")),
        }
    }

    /// The terminal's tab (`result.terminal.tabId`): the addressable grouping, as a tmux window is.
    fn where_is(&self, id: &str) -> Result<String, TermError> {
        let handle = parse_id(id)?;
        require_orca()?;
        let Reply::Ok(v) = show(handle)? else { return Err(TermError::unreachable("orca terminal show: no usable answer")) };
        match at(&v, &["result", "terminal", "tabId"]).and_then(Value::as_str) {
            Some(tab) if !tab.is_empty() && !tab.chars().any(char::is_control) => Ok(tab.to_owned()),
            _ => Err(TermError::unreachable(format!("orca: the terminal {id:?} answered without a tab id"))),
        }
    }

    fn arrange(&self, _source: &str, _intent: Intent, _target: &str) -> Result<ArrangeOutcome, TermError> {
        Err(TermError::unsupported("unsupported: orca terminal driver does not implement arrange (orca's CLI has no reordering verb)"))
    }

    /// Orca has one name, the tab title `terminal rename --title` sets; it is also the key, so the mode
    /// makes no difference.
    fn name(&self, id: &str, team: &str, agent: &str, _mode: NamingMode) -> Result<(), TermError> {
        let handle = parse_id(id)?;
        if !process::available("orca") {
            return Err(step_failed(format!("orca: not on PATH — cannot rename terminal {id:?}")));
        }
        let label = format!("{team}:{agent}");
        let out = orca(&["terminal", "rename", "--terminal", handle, "--title", &label, "--json"])
            .map_err(|e| step_failed(format!("orca: rename for {id:?}: {e:?}")))?;
        match reply(&out) {
            Reply::Ok(_) => Ok(()),
            Reply::Empty => Err(step_failed(format!("orca: rename for {id:?} produced no output"))),
            Reply::NotJson => Err(step_failed(format!("orca: rename for {id:?} returned unparsable output"))),
            Reply::Refused(code) => Err(step_failed(format!("orca: rename for {id:?} failed ({})", code.unwrap_or_default()))),
        }
    }

    /// `n/a:no_activity_concept\t<tab title>\tn/a:no_independent_key\tn/a:no_independent_title`. The
    /// durable title is the tab's, in `terminal list --include-visual-layouts`, keyed by tab and worktree.
    fn team_observe(&self, id: &str) -> Result<String, TermError> {
        let handle = parse_id(id)?;
        require_orca()?;
        let Reply::Ok(list) = reply(&orca(&["terminal", "list", "--include-visual-layouts", "--json"])?) else {
            return Err(TermError::unreachable("orca terminal list: no usable answer"));
        };
        let unreadable = || TermError::unreachable(format!("orca: the layout of {id:?} could not be read"));
        let terminal = at(&list, &["result", "terminals"])
            .and_then(Value::as_array)
            .and_then(|ts| ts.iter().find(|t| t.get("handle").and_then(Value::as_str) == Some(handle)))
            .ok_or_else(unreadable)?;
        let (tab, worktree) = (terminal.get("tabId").ok_or_else(unreadable)?, terminal.get("worktreeId").ok_or_else(unreadable)?);
        let tabs = at(&list, &["result", "visualLayouts"])
            .and_then(Value::as_array)
            .and_then(|layouts| layouts.iter().find(|l| l.get("worktreeId") == Some(worktree)))
            .and_then(|layout| at(layout, &["root", "tabs"]))
            .and_then(Value::as_array)
            .ok_or_else(unreadable)?;
        let entry = tabs.iter().find(|t| t.get("tabId") == Some(tab)).ok_or_else(unreadable)?;
        let title = entry.get("title").and_then(Value::as_str).filter(|t| !t.is_empty()).unwrap_or("unknown:title_missing");
        if title.contains(['\t', '\n', '\r']) {
            return Err(TermError::unreachable("orca: the tab title would break the TAB-separated record"));
        }
        Ok(format!("n/a:no_activity_concept\t{title}\tn/a:no_independent_key\tn/a:no_independent_title"))
    }

    fn id_ok(&self, id: &str) -> Result<bool, TermError> {
        Ok(id::parse(id).is_some())
    }

    /// Every terminal `terminal list` shows, as `local\t<handle>`; one unreadable or repeated entry makes
    /// the whole runtime a named hole (`!\tlocal`) rather than a shorter list.
    fn enumerate_panes(&self) -> Result<Vec<String>, TermError> {
        require_orca()?;
        let hole = vec![format!("!\t{}", id::INSTANCE)];
        let Reply::Ok(list) = reply(&orca(&["terminal", "list", "--json"])?) else { return Ok(hole) };
        let Some(terminals) = at(&list, &["result", "terminals"]).and_then(Value::as_array) else { return Ok(hole) };
        let mut rows: Vec<String> = Vec::new();
        for terminal in terminals {
            match terminal.get("handle").and_then(Value::as_str) {
                Some(handle) if id::handle_ok(handle) => {
                    let row = format!("{}\t{handle}", id::INSTANCE);
                    if rows.contains(&row) {
                        return Ok(hole);
                    }
                    rows.push(row);
                }
                _ => return Ok(hole),
            }
        }
        Ok(rows)
    }

    fn expected_label(&self, team: &str, agent: &str) -> Result<String, TermError> {
        Ok(format!("{team}:{agent}"))
    }

    /// `local\t<handle>` for `orca:<id>`, `unknown:<reason>` otherwise; never asks the environment or orca.
    fn instance_for_ref(&self, reference: &str) -> Result<String, TermError> {
        Ok(match reference.split_once(':') {
            Some(("orca", rest)) => match id::parse(rest) {
                Some(handle) => format!("{}\t{handle}", id::INSTANCE),
                None => "unknown:invalid_orca_id".to_owned(),
            },
            Some((terminal, _)) if agmsg_guest_sdk::terminal::is_driver_name(terminal) => "unknown:wrong_terminal".to_owned(),
            _ => "unknown:invalid_locator".to_owned(),
        })
    }

    /// `(local, handle)`: orca has one runtime, so every handle belongs to it.
    fn id_split(&self, id: &str) -> Result<(String, String), TermError> {
        let handle = parse_id(id)?;
        Ok((id::INSTANCE.to_owned(), handle.to_owned()))
    }
}

#[cfg(test)]
mod describe_tests {
    use super::*;

    #[test]
    fn describe_reads_terminal_conf() {
        let d = Orca.describe();
        assert_eq!((d.name.as_str(), d.priority, d.backend.as_str()), ("orca", 5, "orca terminal pane"));
        assert_eq!(d.capabilities, ["peek", "where", "spawn", "despawn", "name", "poke"]);
    }
}

#[cfg(test)]
mod command_tests {
    use super::*;

    #[test]
    fn boot_words_become_shell_words() {
        let words = |list: &[&str]| list.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
        assert_eq!(shell_line(&words(&["/bin/sh", "/tmp/agmsg-boot.x1.sh"])), "/bin/sh /tmp/agmsg-boot.x1.sh");
        assert_eq!(shell_line(&words(&["echo", "a b", "$(id)", "it's", ""])), r"echo 'a b' '$(id)' 'it'\''s' ''");
    }
}
