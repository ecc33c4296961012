//! agmsg's plain terminal driver as a component: the fallback when no multiplexer is around.
//!
//! It follows agmsg's bash driver (`scripts/drivers/terminals/plain/ops.sh`). `detect` always matches
//! with the `-` sentinel id, which the resolver ranks last. `spawn` opens an OS terminal window and runs
//! the boot command in it, and that window has no handle: nothing can peek, poke, name, arrange or close
//! it afterwards, so those ops answer unsupported (13), and `despawn` is a no-op that succeeds.
//!
//! agmsg can also reach a macOS iTerm or Terminal window by its tty (`iterm:/dev/ttysN`), through
//! AppleScript adapters run by `osascript`. Those adapters are files beside agmsg's driver, and this
//! component has no filesystem to ship or read them from, so here such ids are valid but their peek and
//! poke are unsupported, as on any machine without the adapter.

mod id;
mod launch;
mod quote;

use agmsg_guest_sdk::export_terminal_driver;
use agmsg_guest_sdk::terminal::{
    Answer, ArrangeOutcome, Description, Detection, Intent, NamingMode, PanePresence, SpawnTarget, TermError, TerminalDriver,
};

use id::PlainId;

/// The driver's manifest, the one source of what `describe` says (name, priority, backend, capabilities).
const MANIFEST: &str = include_str!("../terminal.conf");

#[derive(Default)]
struct Plain;

export_terminal_driver!(Plain);

fn no_pane(op: &str) -> TermError {
    TermError::unsupported(format!("unsupported: plain terminal has no addressable pane ({op})"))
}

/// Why `op` (peek or poke) has no path to `id`; `sentinel` is the answer for `-`.
fn no_path(id: &str, sentinel: TermError, op: &str) -> TermError {
    match id::parse(id) {
        Some(PlainId::Sentinel) => sentinel,
        Some(PlainId::Tty { emulator, .. }) => TermError::unsupported(format!(
            "unsupported: plain {op} on {emulator} needs agmsg's macOS osascript adapter, which this driver does not ship"
        )),
        None => TermError::unsupported(format!("unsupported: plain {op} needs an emulator-qualified tty reference, not {id:?}")),
    }
}

impl TerminalDriver for Plain {
    fn check(&self) -> Result<(), TermError> {
        Ok(())
    }

    fn describe(&self) -> Description {
        Description { hints: Vec::new(), ..Description::from_terminal_conf(MANIFEST) }
    }

    /// Always present, never with a nameable pane: the `-` sentinel, which the resolver treats as the
    /// last resort.
    fn detect(&self, _session_id: &str) -> Detection {
        Detection::Resolved(id::SENTINEL.to_owned())
    }

    /// The target is ignored: an OS window is the only thing plain can open.
    fn spawn(&self, _name: &str, project: &str, _target: SpawnTarget, boot: &[String]) -> Result<String, TermError> {
        launch::open_window(project, boot)?;
        Ok(id::SENTINEL.to_owned())
    }

    /// The window closes when its process exits; there is no handle to close it by, and nothing to report.
    /// A no-op, as agmsg's: a plain window is closed by its user. An id plain cannot have produced is
    /// still refused, like every other op's.
    fn despawn(&self, id: &str) -> Result<(), TermError> {
        match id::parse(id) {
            Some(_) => Ok(()),
            None => Err(TermError::unsupported(format!("unsupported: not a plain placement id: {id:?}"))),
        }
    }

    fn peek(&self, id: &str, _lines: Option<u32>) -> Result<String, TermError> {
        Err(no_path(id, no_pane("peek"), "peek"))
    }

    /// The sentinel's message points at the way that may still work: the agent type's own channel.
    fn poke(&self, id: &str, _text: &str) -> Result<(), TermError> {
        let sentinel = TermError::unsupported(concat!(
            "unsupported: plain terminal has no addressable pane (poke) — not a dead end: ",
            "the member's agent type may offer a native channel; the type template says which",
        ));
        Err(no_path(id, sentinel, "poke"))
    }

    /// Unanswerable rather than unknown-for-now: callers must never read it as "closed".
    fn pane_state(&self, _id: &str) -> Result<PanePresence, TermError> {
        Err(TermError::unsupported("plain terminal has no addressable pane to ask about"))
    }

    fn where_is(&self, _id: &str) -> Result<String, TermError> {
        Err(TermError::unsupported("unsupported: plain: no addressable pane has a container"))
    }

    fn arrange(&self, _source: &str, _intent: Intent, _target: &str) -> Result<ArrangeOutcome, TermError> {
        Err(TermError::unsupported("unsupported: plain: no addressable panes can be arranged"))
    }

    fn name(&self, _id: &str, _team: &str, _agent: &str, _mode: NamingMode) -> Result<(), TermError> {
        Err(no_pane("name"))
    }

    /// Narrows the manifest per id, never widens it. `despawn` is "no" although the op succeeds: it
    /// closes nothing, and teardown would need a witness of the owner process (agmsg answers the same).
    fn capability(&self, capability: &str, _id: Option<&str>) -> Result<Answer, TermError> {
        Ok(match capability {
            "spawn" => Answer::Yes,
            // peek and poke would need the macOS adapter for an emulator tty, and nothing reaches `-`.
            _ => Answer::No,
        })
    }

    fn team_observe(&self, _id: &str) -> Result<String, TermError> {
        Ok("n/a:unsupported\tn/a:no_addressable_pane\tn/a:no_addressable_pane\tn/a:no_addressable_pane".to_owned())
    }

    fn find_by_label(&self, _label: &str) -> Result<Vec<String>, TermError> {
        Err(no_pane("find_by_label"))
    }

    fn label_of(&self, _id: &str) -> Result<String, TermError> {
        Err(no_pane("label_of"))
    }

    fn id_ok(&self, id: &str) -> Result<bool, TermError> {
        Ok(id::parse(id).is_some())
    }

    /// No pane, so nothing to fence a self-write against (agmsg prints `n/a:unsupported` twice, rc 3).
    fn fence(&self, _id: &str, _seat_pid: Option<&str>) -> Result<String, TermError> {
        Err(TermError::unsupported("n/a:unsupported\tn/a:unsupported"))
    }

    /// `(emulator, tty)`. The `-` sentinel names no place and is refused, as agmsg's driver does: a
    /// locator must carry one.
    fn id_split(&self, id: &str) -> Result<(String, String), TermError> {
        match id::parse(id) {
            Some(PlainId::Tty { emulator, tty }) => Ok((emulator.to_owned(), tty.to_owned())),
            Some(PlainId::Sentinel) => Err(TermError::unsupported("unsupported: the plain sentinel '-' names no place")),
            None => Err(TermError::unsupported(format!("unsupported: not a plain terminal id: {id:?}"))),
        }
    }
}

#[cfg(test)]
mod describe_tests {
    use super::*;

    #[test]
    fn describe_reads_terminal_conf() {
        let d = Plain.describe();
        assert_eq!((d.name.as_str(), d.priority, d.backend.as_str()), ("plain", 100, "OS terminal window (no addressable pane)"));
        assert_eq!(d.capabilities, ["spawn", "despawn", "peek", "poke"]);
    }
}
