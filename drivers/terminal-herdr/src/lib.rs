//! agmsg's herdr terminal driver as a component.
//!
//! It runs the same herdr command lines as agmsg's bash driver (`scripts/drivers/terminals/herdr/ops.sh`),
//! so a pane spawned, named or recorded by one is addressable by the other: the same `<socket>:wN:pX`
//! ids, the same `<team>:<agent>` label and SHA-256-derived agent name, the same exit-code taxonomy
//! (10 unreachable, 12 failed, 13 unsupported).
//!
//! The component cannot touch a file or a socket itself: the only way out is `herdr`, run by the host
//! with the environment the manifest declares. Every id passes one grammar ([`id`]) before anything
//! runs; herdr is given the bare `wN:pX` only, and a call about another instance's pane is refused
//! ([`run::reach`]).
//!
//! Where bash exits with a code the contract has no variant for, the nearest one is used: peek's 11
//! ("the read failed, existence undecided") is unreachable (10), spawn's 3 ("the pane never reached its
//! prompt, the boot was not typed") is failed (12), and spawn's 4 ("typed, but the pre-input state was
//! unverified") is success with a warning in the log.

mod answers;
mod id;
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
use sha2::{Digest, Sha256};

use answers::{ArrangeState, Layout, Presence, SessionLookup};
use id::HerdrId;
use run::{herdr, herdr_best_effort, herdr_ok, json_of, reach, require_herdr};

/// The driver's manifest, the one source of what `describe` says (name, priority, backend, capabilities).
const MANIFEST: &str = include_str!("../terminal.conf");

/// How long spawn waits for the new pane's shell to reach its prompt before typing the boot command:
/// agmsg's fixed bound (50 polls, 0.1 s apart). Part of the behaviour, not a tunable.
const READY_POLLS: u32 = 50;
const READY_GAP: Duration = Duration::from_millis(100);

#[derive(Default)]
struct Herdr;

export_terminal_driver!(Herdr);

/// Validate `id`, or refuse it without running anything.
fn parse_id(id: &str) -> Result<HerdrId<'_>, TermError> {
    id::parse(id).ok_or_else(|| TermError::unsupported(format!("unsupported: not a herdr pane id: {id:?}")))
}

/// A step that failed where agmsg's driver answers `runtime_error` with exit 13.
fn step_failed(what: String) -> TermError {
    TermError::Unsupported(what)
}

/// The visible label, in one place: `name` writes it and `spawn` creates the pane with it.
fn label(team: &str, agent: &str) -> String {
    format!("{team}:{agent}")
}

/// herdr's internal agent name for a member: `a` + the first 24 hex digits of SHA-256 over
/// `<team>\n<agent>` (a newline can occur in neither name, so the preimage is unambiguous). It fits herdr's
/// agent-name rule `[a-z][a-z0-9_-]{0,31}`.
fn internal_key(team: &str, agent: &str) -> String {
    let digest = Sha256::digest(format!("{team}\n{agent}").as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("a{}", &hex[..24])
}

/// The boot words as the one command line `pane run` types into the pane's shell: a word the shell
/// reads as itself (letters, digits, `/._-+:,=@%`) as it is, any other single-quoted, so that every
/// word, whatever it holds (a space, `$(...)`, a quote), reaches the program as given. The host's own
/// boot (`/bin/sh <file>`) is plain words and is typed exactly as before.
fn shell_line(words: &[String]) -> String {
    words.iter().map(|w| agmsg_guest_sdk::terminal::shell_word(w)).collect::<Vec<_>>().join(" ")
}

/// Whether the new pane's shell is at its prompt: its foreground process group is the shell itself.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Ready {
    Yes,
    No,
    Unknown,
}

fn input_ready(pane: &str) -> Ready {
    let Ok(out) = herdr(&["pane", "process-info", "--pane", pane]) else { return Ready::Unknown };
    if !out.success() {
        return Ready::Unknown;
    }
    match json_of(&out).as_ref().and_then(answers::shell_and_foreground) {
        Some((shell, foreground)) if shell == foreground => Ready::Yes,
        Some(_) => Ready::No,
        None => Ready::Unknown,
    }
}

impl TerminalDriver for Herdr {
    fn check(&self) -> Result<(), TermError> {
        if process::available("herdr") { Ok(()) } else { Err(TermError::MissingDeps("herdr not found".to_owned())) }
    }

    fn describe(&self) -> Description {
        let hint = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        Description {
            hints: vec![
                hint("syntax_help", "herdr --help"),
                hint("skill_help", "herdr --skill"),
                hint(
                    "intent.place_below",
                    "herdr pane move SOURCE --new-tab; herdr pane move SOURCE --tab CONTAINER --split down --target-pane TARGET",
                ),
                hint(
                    "intent.place_right",
                    "herdr pane move SOURCE --new-tab; herdr pane move SOURCE --tab CONTAINER --split right --target-pane TARGET",
                ),
                hint("intent.swap", "herdr pane swap --source-pane SOURCE --target-pane TARGET"),
            ],
            ..Description::from_terminal_conf(MANIFEST)
        }
    }

    /// Presence is `HERDR_ENV=1` alone. The id is `<socket>:$HERDR_PANE_ID`; without a usable
    /// `HERDR_PANE_ID`, the session id is looked up in `herdr agent list`. Present but unresolved leaves
    /// the resolver free to let a live tmux underneath win the naming.
    fn detect(&self, session_id: &str) -> Detection {
        if !session::present() {
            return Detection::Absent;
        }
        let socket = match session::socket() {
            Ok(socket) => socket,
            Err(why) => return Detection::Unresolved(why),
        };
        if let Some(pane) = session::pane() {
            return Detection::Resolved(id::qualify(&socket, &pane));
        }
        if session_id.is_empty() {
            return Detection::Unresolved(
                "herdr: no HERDR_PANE_ID in the environment and no session id to resolve this pane by".to_owned(),
            );
        }
        let listed = match herdr(&["agent", "list"]) {
            Ok(out) if out.success() => json_of(&out),
            _ => None,
        };
        match listed.map(|list| answers::pane_for_session(&list, session_id)) {
            Some(SessionLookup::Found(pane)) => Detection::Resolved(id::qualify(&socket, &pane)),
            Some(SessionLookup::NotAmong) => {
                Detection::Unresolved(format!("herdr: session '{session_id}' is not among the live agents — cannot resolve this pane"))
            }
            _ => Detection::Unresolved(
                "herdr: 'agent list' did not answer (herdr not on PATH or errored) — cannot resolve this pane".to_owned(),
            ),
        }
    }

    /// `tab create` (window) or `pane split` of the caller's pane, the label at creation, a bounded wait
    /// for the shell prompt, then `pane run` with the boot command. Prints the socket-qualified id.
    fn spawn(&self, name: &str, project: &str, target: SpawnTarget, boot: &[String]) -> Result<String, TermError> {
        let label = session::spawn_team().map_or_else(|| name.to_owned(), |team| label(&team, name));
        // The instance first: a pane that cannot be qualified must not be created at all.
        let socket = session::socket().map_err(step_failed)?;
        let created = match target {
            SpawnTarget::Window => {
                let workspace =
                    session::workspace().ok_or_else(|| TermError::unsupported("unsupported: window target needs HERDR_WORKSPACE_ID"))?;
                herdr_ok(&["tab", "create", "--workspace", &workspace, "--label", &label, "--cwd", project], |why| {
                    step_failed(format!("herdr tab create: {why}"))
                })?
            }
            SpawnTarget::PaneH | SpawnTarget::PaneV => {
                let direction = if target == SpawnTarget::PaneH { "right" } else { "down" };
                // Split the caller's own pane, never whichever one has focus.
                let caller = session::pane()
                    .ok_or_else(|| TermError::unsupported("unsupported: a herdr split needs HERDR_PANE_ID to name the caller's pane"))?;
                herdr_ok(&["pane", "split", &caller, "--direction", direction, "--no-focus", "--cwd", project], |why| {
                    step_failed(format!("herdr pane split: {why}"))
                })?
            }
        };
        let pane = json_of(&created)
            .as_ref()
            .and_then(answers::new_pane)
            .ok_or_else(|| step_failed("unsupported: herdr answered the creation without a pane id of the grammar".to_owned()))?;
        // `pane rename <pane> --clear` clears the label: a name that is exactly that is kept as data by
        // not sending it (a tab has it from its creation; `name` later sets `<team>:<agent>`).
        if label == "--clear" {
            log::debug("spawn: the label `--clear` would clear the pane's label in `pane rename`; not renamed");
        } else {
            herdr_best_effort(&["pane", "rename", &pane, &label]);
        }

        let mut ready = Ready::Unknown;
        for attempt in 0..READY_POLLS {
            ready = input_ready(&pane);
            if ready != Ready::No {
                break;
            }
            if attempt + 1 < READY_POLLS {
                thread::sleep(READY_GAP);
            }
        }
        if ready == Ready::No {
            herdr_best_effort(&["pane", "close", &pane]);
            return Err(TermError::failed(format!(
                "herdr: pane {pane} never returned to its shell prompt (a foreground process is still running); \
                 the boot was NOT typed, and the pane was closed"
            )));
        }
        let command = shell_line(boot);
        herdr_ok(&["pane", "run", &pane, &command], |why| step_failed(format!("herdr pane run {pane}: {why}")))?;
        if ready == Ready::Unknown {
            log::warn(&format!(
                "spawn: the boot command was typed into {pane}, but whether its shell was at the prompt could not be verified"
            ));
        }
        Ok(id::qualify(&socket, &pane))
    }

    fn despawn(&self, id: &str) -> Result<(), TermError> {
        let parsed = parse_id(id)?;
        let _route = reach(&parsed);
        herdr_ok(&["pane", "close", parsed.bare], |why| step_failed(format!("herdr pane close {id:?}: {why}")))?;
        Ok(())
    }

    /// `pane read` with `--source visible`, or `--source recent --lines N`. Only herdr's own
    /// `pane_not_found` about this pane is "gone" (12); any other failed read leaves existence undecided.
    fn peek(&self, id: &str, lines: Option<u32>) -> Result<String, TermError> {
        let parsed = parse_id(id)?;
        require_herdr()?;
        let _route = reach(&parsed);
        let lines = lines.map(|n| n.to_string());
        let mut args = vec!["pane", "read", parsed.bare, "--source"];
        match &lines {
            Some(n) => args.extend(["recent", "--lines", n.as_str()]),
            None => args.push("visible"),
        }
        let out = herdr(&args)?;
        if out.success() {
            if out.truncated {
                log::warn(&format!("peek {id:?}: the read went over the host's output cap and was cut"));
            }
            return Ok(out.stdout_text());
        }
        if answers::says_pane_not_found(&out.stdout, parsed.bare) {
            Err(TermError::failed(format!("herdr: could not read pane {id:?}: the terminal reports it no longer exists")))
        } else {
            Err(TermError::unreachable(format!("herdr: could not read pane {id:?}: {}", run::complaint(&out))))
        }
    }

    /// One `agent prompt` call: herdr submits on its own, so there is no separate Enter.
    fn poke(&self, id: &str, text: &str) -> Result<(), TermError> {
        let parsed = parse_id(id)?;
        require_herdr()?;
        let _route = reach(&parsed);
        herdr_ok(&["agent", "prompt", parsed.bare, text], |why| {
            TermError::failed(format!("herdr: could not deliver to pane {id:?} — it may be gone, or have no live agent to receive ({why})"))
        })?;
        Ok(())
    }

    /// `Gone` only when herdr positively said so: the agent list was read in full, every entry a
    /// decidable pane, and this one is not among them. A bare id names no instance, so its absence from
    /// the ambient one proves nothing and is `unknown`.
    fn pane_state(&self, id: &str) -> Result<PanePresence, TermError> {
        let parsed = parse_id(id)?;
        require_herdr()?;
        let _route = reach(&parsed);
        let out = herdr(&["agent", "list"])?;
        if !out.success() {
            return Err(TermError::unreachable(format!("herdr agent list: {}", run::complaint(&out))));
        }
        let list = json_of(&out).ok_or_else(|| TermError::unreachable("herdr agent list: empty or not JSON"))?;
        match answers::presence(&list, parsed.bare) {
            Presence::Listed => Ok(PanePresence::Present),
            Presence::NotListed if parsed.socket.is_some() => Ok(PanePresence::Gone),
            Presence::NotListed => {
                Err(TermError::unreachable(format!("herdr: {id:?} names no instance, so its absence from this one does not prove it gone")))
            }
            Presence::Undecidable => Err(TermError::unreachable("herdr agent list: an entry could not be read, so absence is undecided")),
        }
    }

    /// The tab holding the pane, from `pane layout --pane P`. A layout without the pane is an unanswered
    /// location query (unknown), never a claim that the pane is gone.
    fn where_is(&self, id: &str) -> Result<String, TermError> {
        let parsed = parse_id(id)?;
        require_herdr()?;
        let _route = reach(&parsed);
        let answer = layout_of(&parsed)?;
        let layout = Layout::of(&answer);
        match layout.tab {
            Some(tab) if layout.has(parsed.bare) && !tab.is_empty() && !tab.chars().any(char::is_control) => Ok(tab.to_owned()),
            _ => Err(TermError::unreachable(format!(
                "herdr: the layout answered but did not contain {id:?}; pane existence must be checked separately"
            ))),
        }
    }

    fn arrange(&self, source: &str, intent: Intent, target: &str) -> Result<ArrangeOutcome, TermError> {
        let (s, t) = (parse_id(source)?, parse_id(target)?);
        // A pane moves only within one instance; a bare id and a qualified one are not "the same".
        if s.socket != t.socket {
            return Err(TermError::unreachable(format!("herdr: cannot arrange across instances ({source:?} vs {target:?})")));
        }
        require_herdr()?;
        let _route = reach(&s);
        let direction = match intent {
            Intent::Swap => return swap(&s, &t),
            Intent::PlaceBelow => "down",
            Intent::PlaceRight => "right",
        };
        let answer = layout_of(&t)?;
        let layout = Layout::of(&answer);
        match answers::arrange_state(&layout, s.bare, t.bare, direction) {
            ArrangeState::Unchanged => return Ok(ArrangeOutcome::Unchanged),
            ArrangeState::Ambiguous => {
                return Err(TermError::failed("herdr: ambiguous_layout: more than one split holds the pair in that relation"));
            }
            ArrangeState::Unknown => return Err(TermError::unreachable("herdr: the target's layout does not list the pair once each")),
            ArrangeState::Different => {}
            // `pane layout --pane TARGET` describes the target's tab only: a source in another tab is still
            // a valid move, once herdr confirms it exists.
            ArrangeState::SourceMissing => {
                if !Layout::of(&layout_of(&s)?).has(s.bare) {
                    return Err(TermError::unreachable(format!("herdr: the layout of {source:?} does not contain it")));
                }
            }
        }
        let tab = layout.tab.filter(|tab| !tab.is_empty());
        let tab = tab.ok_or_else(|| TermError::unreachable("herdr: the target's layout names no tab"))?;
        let first = herdr_ok(&["pane", "move", s.bare, "--new-tab", "--no-focus"], |why| {
            TermError::failed(format!("herdr: failed before moving {source:?} to a temporary tab: {why}"))
        })?;
        let first = json_of(&first).unwrap_or_default();
        if !answers::moved(&first) {
            return Err(TermError::failed(format!("herdr: the temporary-tab move for {source:?} did not report changed=true")));
        }
        let temporary = answers::text(&first, &["result", "move_result", "created_tab", "tab_id"]).unwrap_or("<new tab id unavailable>");
        let left_behind = |why: String| {
            TermError::failed(format!(
                "herdr: {source:?} is left in temporary tab {temporary:?}: \
                 placing it back in tab {tab:?} relative to {target:?} failed ({why})"
            ))
        };
        let back = ["pane", "move", s.bare, "--tab", tab, "--split", direction, "--target-pane", t.bare, "--no-focus"];
        let second = herdr_ok(&back, left_behind)?;
        if !json_of(&second).is_some_and(|answer| answers::moved(&answer)) {
            return Err(TermError::failed(format!(
                "herdr: {source:?} may be left in temporary tab {temporary:?}: the move back to tab {tab:?} did not report changed=true"
            )));
        }
        Ok(ArrangeOutcome::Moved)
    }

    /// The key first (`agent rename` to the internal name), and its failure is fatal; then the visible
    /// label (`pane rename` to `<team>:<agent>`), whose failure is ignored.
    fn name(&self, id: &str, team: &str, agent: &str, mode: NamingMode) -> Result<(), TermError> {
        let parsed = parse_id(id)?;
        let _route = reach(&parsed);
        let key = internal_key(team, agent);
        herdr_ok(&["agent", "rename", parsed.bare, &key], |why| {
            step_failed(format!("herdr: 'agent rename' for '{team}/{agent}' on pane {id:?} failed ({why})"))
        })?;
        if mode == NamingMode::LabelAndKey {
            herdr_best_effort(&["pane", "rename", parsed.bare, &label(team, agent)]);
        }
        Ok(())
    }

    fn team_observe(&self, id: &str) -> Result<String, TermError> {
        let parsed = parse_id(id)?;
        require_herdr()?;
        let _route = reach(&parsed);
        observe::team_observe(&parsed)
    }

    fn team_input_ready(&self, id: &str, expected: &str) -> Result<Answer, TermError> {
        let parsed = parse_id(id)?;
        if !process::available("herdr") {
            return Ok(Answer::Unknown);
        }
        let _route = reach(&parsed);
        Ok(observe::team_input_ready(&parsed, expected))
    }

    fn find_by_label(&self, label: &str) -> Result<Vec<String>, TermError> {
        if label.is_empty() {
            return Ok(Vec::new());
        }
        let socket = session::socket().map_err(TermError::Unreachable)?;
        require_herdr()?;
        observe::find_by_label(&socket, label)
    }

    fn label_of(&self, id: &str) -> Result<String, TermError> {
        let parsed = parse_id(id)?;
        require_herdr()?;
        let _route = reach(&parsed);
        observe::label_of(&parsed)
    }

    fn id_ok(&self, id: &str) -> Result<bool, TermError> {
        Ok(id::parse(id).is_some())
    }

    fn pane_process_observe(&self, id: &str) -> Result<Vec<String>, TermError> {
        let parsed = parse_id(id)?;
        require_herdr()?;
        let _route = reach(&parsed);
        observe::pane_process(id, &parsed).map(|record| vec![record])
    }

    fn fence(&self, id: &str, _seat_pid: Option<&str>) -> Result<String, TermError> {
        observe::fence(id)
    }

    /// `(socket, bare)`. A bare id names no instance and is refused, as agmsg's driver does: a locator
    /// must carry one.
    fn id_split(&self, id: &str) -> Result<(String, String), TermError> {
        let parsed = parse_id(id)?;
        let socket = parsed.socket.ok_or_else(|| {
            TermError::unsupported(format!("unsupported: {id:?} is a bare herdr id without an instance; a locator needs one"))
        })?;
        Ok((socket.to_owned(), parsed.bare.to_owned()))
    }
}

/// `pane layout --pane <bare>`, answered and JSON.
fn layout_of(id: &HerdrId<'_>) -> Result<serde_json::Value, TermError> {
    let out = herdr_ok(&["pane", "layout", "--pane", id.bare], |why| TermError::unreachable(format!("herdr pane layout: {why}")))?;
    json_of(&out).ok_or_else(|| TermError::unreachable("herdr pane layout: empty or not JSON"))
}

/// Swap needs a positive existence observation of both panes (each asked through its own layout, as
/// they may live in different tabs), then `pane swap`; herdr's `changed` says moved or unchanged.
fn swap(s: &HerdrId<'_>, t: &HerdrId<'_>) -> Result<ArrangeOutcome, TermError> {
    if s.bare == t.bare {
        return Err(TermError::unsupported("unsupported: a pane cannot be swapped with itself"));
    }
    for pane in [t, s] {
        if !Layout::of(&layout_of(pane)?).has(pane.bare) {
            return Err(TermError::unreachable(format!("herdr: the layout of {} does not contain it", pane.bare)));
        }
    }
    let out = herdr_ok(&["pane", "swap", "--source-pane", s.bare, "--target-pane", t.bare], |why| {
        TermError::failed(format!("herdr pane swap: {why}"))
    })?;
    match json_of(&out).as_ref().and_then(answers::swapped) {
        Some(true) => Ok(ArrangeOutcome::Moved),
        Some(false) => Ok(ArrangeOutcome::Unchanged),
        None => Err(TermError::failed("herdr pane swap: the answer did not say whether anything changed")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boot_words_are_typed_as_shell_words() {
        let words = |list: &[&str]| list.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
        assert_eq!(shell_line(&words(&["/bin/sh", "/tmp/agmsg-boot.x1.sh"])), "/bin/sh /tmp/agmsg-boot.x1.sh");
        assert_eq!(shell_line(&words(&["echo", "a b", "$(id)", "it's", ""])), r"echo 'a b' '$(id)' 'it'\''s' ''");
    }

    #[test]
    fn the_internal_key_matches_agmsg() {
        // printf '%s\n%s' crew builder | sha256sum
        let key = internal_key("crew", "builder");
        assert_eq!(key.len(), 25);
        assert!(key.starts_with('a') && key[1..].bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        assert_ne!(internal_key("a-b", "c"), internal_key("a", "b-c"));
    }
}

#[cfg(test)]
mod describe_tests {
    use super::*;

    #[test]
    fn describe_reads_terminal_conf() {
        let d = Herdr.describe();
        assert_eq!((d.name.as_str(), d.priority, d.backend.as_str()), ("herdr", 10, "herdr pane"));
        assert_eq!(d.capabilities, ["spawn", "despawn", "peek", "poke", "where", "arrange", "name"]);
    }
}
