//! agmsg's tmux terminal driver as a component.
//!
//! It runs the same tmux command lines as agmsg's bash driver (`scripts/drivers/terminals/tmux/ops.sh`),
//! so a pane spawned, named or recorded by one is addressable by the other: the same `<socket>:%N` /
//! `<socket>:@N` ids, the same `@agmsg_agent` pane option as the resolvable key, the same exit-code
//! taxonomy (10 unreachable, 12 failed, 13 unsupported).
//!
//! The component cannot touch a file or a socket itself: the only way out is `tmux` (and `ps`, for the
//! readiness proof), run by the host with the environment the manifest declares. Every id passes one
//! grammar ([`id`]) before anything runs, and is then split: the socket goes to `-S`, the bare `%N` / `@N`
//! to `-t`.
//!
//! Names, labels, the project path and poked text are data: [`literal`] keeps tmux from reading them as
//! formats (`#(...)` would run a command) or as its own command separators (an argument ending in `;`).
//!
//! Where bash returns 13 with `runtime_error` on stdout (a failed spawn, despawn or name), this driver
//! answers [`TermError::Unsupported`], the variant that keeps that exit code, with tmux's own words in
//! the message; the host prints the status word.

mod geometry;
mod id;
mod literal;
mod observe;
mod run;
mod session;

use std::thread;
use std::time::Duration;

use agmsg_guest_sdk::export_terminal_driver;
use agmsg_guest_sdk::log;
use agmsg_guest_sdk::process;
use agmsg_guest_sdk::terminal::{
    Answer, ArrangeOutcome, Description, Detection, Intent, NamingMode, PanePresence, SpawnTarget, TermError, TerminalDriver,
};

use geometry::Placement;
use id::{Kind, TmuxId};
use run::{Server, captured};

/// The driver's manifest, the one source of what `describe` says (name, priority, backend, capabilities).
const MANIFEST: &str = include_str!("../terminal.conf");

/// The pause between the text burst and the submit burst of a poke (agmsg #619: text and Enter in one
/// burst read as a paste in Codex, and the Enter becomes a newline). Part of the behaviour, not a tunable.
const POKE_GAP: Duration = Duration::from_millis(300);

/// The pane option that carries `<team>:<agent>`: the key agmsg resolves a member's pane by.
const AGENT_OPTION: &str = "@agmsg_agent";

#[derive(Default)]
struct Tmux;

export_terminal_driver!(Tmux);

/// Validate `id`, or refuse it without running anything.
fn parse_id(id: &str) -> Result<TmuxId<'_>, TermError> {
    id::parse(id).ok_or_else(|| TermError::unsupported(format!("unsupported: not a tmux pane/window id: {id:?}")))
}

/// A tmux step that failed where agmsg's driver answers `runtime_error` with exit 13.
fn step_failed(what: String) -> TermError {
    TermError::Unsupported(what)
}

fn require_tmux() -> Result<(), TermError> {
    if process::available("tmux") { Ok(()) } else { Err(TermError::unreachable("tmux not found")) }
}

impl TerminalDriver for Tmux {
    fn check(&self) -> Result<(), TermError> {
        if process::available("tmux") { Ok(()) } else { Err(TermError::MissingDeps("tmux not found".to_owned())) }
    }

    fn describe(&self) -> Description {
        let hint = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        Description {
            hints: vec![
                hint("syntax_help", "tmux list-commands"),
                hint("intent.place_below", "tmux move-pane -s SOURCE -t TARGET -v"),
                hint("intent.place_right", "tmux move-pane -s SOURCE -t TARGET -h"),
                hint("intent.swap", "tmux swap-pane -s SOURCE -t TARGET"),
            ],
            ..Description::from_terminal_conf(MANIFEST)
        }
    }

    /// Presence is `$TMUX` alone; the id is `<socket>:$TMUX_PANE`. The session id is unused: tmux says
    /// which pane this is through the environment.
    fn detect(&self, _session_id: &str) -> Detection {
        let socket = match session::socket() {
            Ok(None) => return Detection::Absent,
            Ok(Some(socket)) => socket,
            Err(why) => return Detection::Unresolved(why),
        };
        match session::pane() {
            Ok(Some(pane)) => Detection::Resolved(id::qualify(Some(&socket), &pane)),
            Ok(None) => Detection::Unresolved("tmux: $TMUX_PANE is unset — cannot identify this pane".to_owned()),
            Err(why) => Detection::Unresolved(why),
        }
    }

    fn spawn(&self, name: &str, project: &str, target: SpawnTarget, boot: &[String]) -> Result<String, TermError> {
        if let Some(why) = literal::unshowable(name) {
            return Err(TermError::unsupported(why));
        }
        // Checked before anything is created: the new id is qualified with this socket.
        let socket = session::socket().map_err(TermError::Unsupported)?;
        let created = match target {
            SpawnTarget::Window => spawn_window(name, project, boot)?,
            SpawnTarget::PaneH => spawn_pane("-h", name, project, boot)?,
            SpawnTarget::PaneV => spawn_pane("-v", name, project, boot)?,
        };
        Ok(id::qualify(socket.as_deref(), &created))
    }

    fn despawn(&self, id: &str) -> Result<(), TermError> {
        let parsed = parse_id(id)?;
        let verb = match parsed.kind {
            Kind::Pane => "kill-pane",
            Kind::Window => "kill-window",
        };
        Server::of(&parsed).run_ok(&[verb, "-t", parsed.bare], |why| step_failed(format!("tmux {verb} {id:?}: {why}")))?;
        Ok(())
    }

    fn peek(&self, id: &str, lines: Option<u32>) -> Result<String, TermError> {
        let parsed = parse_id(id)?;
        let start = lines.map(|n| format!("-{n}"));
        let mut args = vec!["capture-pane", "-p", "-t", parsed.bare];
        if let Some(start) = &start {
            args.extend(["-S", start.as_str()]);
        }
        let out = Server::of(&parsed)
            .run_ok(&args, |why| TermError::failed(format!("tmux: could not capture pane {id:?} (it may no longer exist): {why}")))?;
        if out.truncated {
            log::warn(&format!("peek {id:?}: the capture went over the host's output cap and was cut"));
        }
        Ok(out.stdout_text())
    }

    fn poke(&self, id: &str, text: &str) -> Result<(), TermError> {
        let parsed = parse_id(id)?;
        let server = Server::of(&parsed);
        let send_failed = |what: &'static str| {
            move |why: String| TermError::failed(format!("tmux: could not send {what} to pane {id:?} (it may no longer exist): {why}"))
        };
        server.run_ok(&["send-keys", "-l", "-t", parsed.bare, "--", text], send_failed("the text"))?;
        thread::sleep(POKE_GAP);
        server.run_ok(&["send-keys", "-t", parsed.bare, "Right", "Enter"], send_failed("Enter"))?;
        Ok(())
    }

    /// `Gone` only when tmux positively said so: the caller deletes the placement record on it.
    fn pane_state(&self, id: &str) -> Result<PanePresence, TermError> {
        let parsed = parse_id(id)?;
        require_tmux()?;
        // A legacy id names no server, and pane ids repeat across servers: "gone" here could be about
        // somebody else's server (agmsg #1051).
        let Some(socket) = parsed.socket else {
            return Err(TermError::unreachable(format!("{id:?} carries no socket, so no server can be asked about it")));
        };
        let (verb, field) = match parsed.kind {
            Kind::Pane => ("list-panes", "#{pane_id}"),
            Kind::Window => ("list-windows", "#{window_id}"),
        };
        let out = Server::at(socket).run(&[verb, "-a", "-F", field])?;
        if !out.success() {
            // The socket file outlives its server; only tmux saying so proves the server is gone.
            return if out.stderr_text().contains("no server running") {
                Ok(PanePresence::Gone)
            } else {
                Err(TermError::unreachable(format!("tmux {verb}: {}", run::complaint(&out))))
            };
        }
        let listing = out.stdout_text();
        if listing.lines().any(|line| line == parsed.bare) {
            Ok(PanePresence::Present)
        } else if out.truncated {
            Err(TermError::unreachable(format!("the {verb} listing was cut by the host's output cap")))
        } else {
            Ok(PanePresence::Gone)
        }
    }

    /// The window holding `id`, as server-qualified as `id` is.
    fn where_is(&self, id: &str) -> Result<String, TermError> {
        let parsed = parse_id(id)?;
        require_tmux()?;
        if parsed.kind == Kind::Window {
            return Ok(id.to_owned());
        }
        let out = Server::of(&parsed).run_ok(&["list-panes", "-a", "-F", "#{pane_id}|#{window_id}"], |why| {
            TermError::unreachable(format!("tmux list-panes: {why}"))
        })?;
        let listing = out.stdout_text();
        let window = listing
            .lines()
            .filter_map(|row| row.split_once('|'))
            .find(|(pane, _)| *pane == parsed.bare)
            .map(|(_, window)| window)
            .ok_or_else(|| {
                TermError::unreachable(format!(
                    "tmux: the pane listing answered but did not contain {id:?}; pane existence must be checked separately"
                ))
            })?;
        if id::kind_of(window) != Some(Kind::Window) {
            return Err(TermError::unreachable(format!("tmux listed {window:?} as the window of {id:?}")));
        }
        Ok(parsed.sibling(window))
    }

    fn arrange(&self, source: &str, intent: Intent, target: &str) -> Result<ArrangeOutcome, TermError> {
        let (s, t) = (parse_id(source)?, parse_id(target)?);
        if s.kind != Kind::Pane || t.kind != Kind::Pane {
            return Err(TermError::unsupported("unsupported: arrange moves panes (%N), not windows"));
        }
        // A pane cannot move between servers, and a bare id names no server: "same server" must be a
        // fact, because this op mutates.
        if s.socket != t.socket {
            return Err(TermError::unsupported("unsupported: source and target are not on the same tmux server"));
        }
        let server = Server::of(&s);
        let out = server
            .run_ok(&["list-panes", "-a", "-F", geometry::FORMAT], |why| TermError::unreachable(format!("tmux list-panes: {why}")))?;
        let listing = out.stdout_text();
        let (Some(srect), Some(trect)) = (geometry::find(&listing, s.bare), geometry::find(&listing, t.bare)) else {
            return Err(TermError::unreachable("tmux: source or target is not in the pane listing"));
        };
        let (Some(srect), Some(trect)) = (srect, trect) else {
            return Err(TermError::unreachable("tmux listed a pane geometry that is not a number"));
        };
        let moved_failed = |why: String| TermError::failed(format!("tmux could not move the pane: {why}"));
        let placement = match intent {
            Intent::Swap => {
                if s.bare == t.bare {
                    return Err(TermError::unsupported("unsupported: a pane cannot be swapped with itself"));
                }
                server.run_ok(&["swap-pane", "-s", s.bare, "-t", t.bare], moved_failed)?;
                return Ok(ArrangeOutcome::Moved);
            }
            Intent::PlaceBelow => Placement::Below,
            Intent::PlaceRight => Placement::Right,
        };
        if geometry::already_placed(placement, &srect, &trect) {
            return Ok(ArrangeOutcome::Unchanged);
        }
        let split = match placement {
            Placement::Below => "-v",
            Placement::Right => "-h",
        };
        server.run_ok(&["move-pane", "-s", s.bare, "-t", t.bare, split], moved_failed)?;
        Ok(ArrangeOutcome::Moved)
    }

    /// The key (`@agmsg_agent`) is what resolves; the window name or pane title is a visible copy, and
    /// a failure to set it is ignored.
    fn name(&self, id: &str, team: &str, agent: &str, mode: NamingMode) -> Result<(), TermError> {
        let parsed = parse_id(id)?;
        let label = format!("{team}:{agent}");
        let server = Server::of(&parsed);
        server.run_ok(&["set-option", "-p", "-t", parsed.bare, AGENT_OPTION, &label], |why| {
            step_failed(format!("tmux: could not set {AGENT_OPTION} on pane {id:?} ({why})"))
        })?;
        if matches!(mode, NamingMode::KeyOnly) {
            return Ok(());
        }
        // Both expand formats; `--` so that a team starting with `-` is not read as flags.
        let shown = literal::format(&label);
        match parsed.kind {
            Kind::Window => server.run_best_effort(&["rename-window", "-t", parsed.bare, "--", &shown]),
            Kind::Pane => server.run_best_effort(&["select-pane", "-t", parsed.bare, "-T", &shown]),
        }
        Ok(())
    }

    fn team_observe(&self, id: &str) -> Result<String, TermError> {
        observe::team_observe(parse_id(id)?)
    }

    fn team_input_ready(&self, id: &str, expected: &str) -> Result<Answer, TermError> {
        Ok(observe::team_input_ready(parse_id(id)?, expected))
    }

    fn find_by_label(&self, label: &str) -> Result<Vec<String>, TermError> {
        observe::find_by_label(label)
    }

    fn label_of(&self, id: &str) -> Result<String, TermError> {
        observe::label_of(parse_id(id)?)
    }

    fn id_ok(&self, id: &str) -> Result<bool, TermError> {
        Ok(id::parse(id).is_some())
    }

    fn pane_process_observe(&self, id: &str) -> Result<Vec<String>, TermError> {
        observe::pane_process(parse_id(id)?)
    }

    fn fence(&self, id: &str, _seat_pid: Option<&str>) -> Result<String, TermError> {
        observe::fence(parse_id(id)?)
    }

    fn expected_label(&self, team: &str, agent: &str) -> Result<String, TermError> {
        Ok(format!("{team}:{agent}"))
    }

    fn instance_for_ref(&self, reference: &str) -> Result<String, TermError> {
        Ok(instance_for_ref(reference))
    }

    /// `(socket, bare)`. A legacy id names no server and is refused, as agmsg's driver does: a locator
    /// must carry an instance.
    fn id_split(&self, id: &str) -> Result<(String, String), TermError> {
        let parsed = parse_id(id)?;
        let socket = parsed
            .socket
            .ok_or_else(|| TermError::unsupported(format!("unsupported: {id:?} is a legacy id without a socket; a locator needs one")))?;
        Ok((socket.to_owned(), parsed.bare.to_owned()))
    }
}

/// `new-window` in the caller's session; automatic-rename off so the window keeps the agent's name.
/// The name and the start directory are expanded as formats by tmux; the command is not, and follows
/// `--`.
fn spawn_window(name: &str, project: &str, boot: &[String]) -> Result<String, TermError> {
    let (name, project) = (literal::format(name), literal::format(project));
    let mut args = vec!["new-window", "-P", "-F", "#{window_id}", "-n", &name, "-c", &project, "--"];
    args.extend(boot.iter().map(String::as_str));
    let window = created_id(&args, Kind::Window)?;
    Server::ambient().run_best_effort(&["set-window-option", "-t", &window, "automatic-rename", "off"]);
    Ok(window)
}

/// Split the CALLER's pane (agmsg #990): without `-t`, tmux splits the attached client's active pane,
/// which may be another agent's. Without `$TMUX_PANE` there is no caller pane to name, so refuse.
fn spawn_pane(direction: &str, name: &str, project: &str, boot: &[String]) -> Result<String, TermError> {
    let caller = session::pane()
        .map_err(TermError::Unsupported)?
        .ok_or_else(|| TermError::unsupported("unsupported: a tmux split needs $TMUX_PANE to target the caller pane (#990)"))?;
    let project = literal::format(project);
    let mut args = vec!["split-window", direction, "-t", &caller, "-P", "-F", "#{pane_id}", "-c", &project, "--"];
    args.extend(boot.iter().map(String::as_str));
    let pane = created_id(&args, Kind::Pane)?;
    Server::ambient().run_best_effort(&["select-pane", "-t", &pane, "-T", &literal::format(name)]);
    Ok(pane)
}

/// Run a creating command and return the id it printed, which must be of the expected kind: anything
/// else (garbage, a wrong kind, a second line) would be recorded as a placement nothing can address.
fn created_id(args: &[&str], kind: Kind) -> Result<String, TermError> {
    let out = Server::ambient().run_ok(args, |why| step_failed(format!("tmux {}: {why}", args[0])))?;
    let created = captured(&out);
    if id::kind_of(&created) == Some(kind) {
        Ok(created)
    } else {
        Err(TermError::unsupported(format!("unsupported: tmux {} printed {created:?}, not a {kind:?} id", args[0])))
    }
}

/// Resolve a canonical ref (`tmux:<id>`, or a legacy bare `%N` / `@N`, which reads as tmux) to
/// `<socket>\t<bare>`, `n/a:bare` for an id that names no server, or `unknown:<reason>`. It never asks
/// the environment or tmux: the ref alone decides.
fn instance_for_ref(reference: &str) -> String {
    let id = if id::kind_of(reference).is_some() {
        reference
    } else {
        match reference.split_once(':') {
            Some(("tmux", id)) => id,
            Some((terminal, _)) if agmsg_guest_sdk::terminal::is_driver_name(terminal) => return "unknown:wrong_terminal".to_owned(),
            _ => return "unknown:invalid_locator".to_owned(),
        }
    };
    match id::parse(id) {
        None => "unknown:invalid_tmux_id".to_owned(),
        Some(TmuxId { socket: None, .. }) => "n/a:bare".to_owned(),
        Some(TmuxId { socket: Some(socket), bare, .. }) => format!("{socket}\t{bare}"),
    }
}

#[cfg(test)]
mod describe_tests {
    use super::*;

    #[test]
    fn describe_reads_terminal_conf() {
        let d = Tmux.describe();
        assert_eq!((d.name.as_str(), d.priority, d.backend.as_str()), ("tmux", 20, "tmux pane/window"));
        assert_eq!(d.capabilities, ["spawn", "despawn", "peek", "poke", "where", "arrange", "name"]);
    }
}
