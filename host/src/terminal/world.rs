//! The terminal axis's version seam: the bindings of `agmsg:terminal/terminal-driver` (generated from
//! the list below, sharing the `agmsg:host` interfaces of every axis) and the typed calls the host makes
//! on them, in the host's own types ([`super::types`]). This file is the only one that names a generated
//! type; the conversions are here, where a value enters or leaves a driver.

use wasmtime::Store;

use super::types::{
    Answer, ArrangeOutcome, Description, Detection, Intent, NamingMode, PanePresence, SpawnTarget, TermFailKind, TerminalError,
};
use crate::runtime::HostState;

crate::runtime::world::driver_world! {
    /// A terminal driver's instance (not to be confused with the guest SDK's trait).
    world TerminalWorld, pre TerminalPre, axis Terminal;
    bindings "agmsg:terminal/terminal-driver@1.0.0" in "../wit/terminal" as TerminalDriver, TerminalDriverIndices;
    host {
        "agmsg:host/log" => log,
        "agmsg:host/process" => process,
    }
    optional {}
}

use bindings::agmsg::terminal::types as wit;

/// A call's outcome: a trap (`Err`), or the driver's own answer, its error in the host's type.
pub type Call<T> = wasmtime::Result<Result<T, TerminalError>>;

fn answer<T, U>(result: wasmtime::Result<Result<T, wit::TermError>>, convert: impl FnOnce(T) -> U) -> Call<U> {
    result.map(|answer| answer.map(convert).map_err(TerminalError::from))
}

fn same<T>(value: T) -> T {
    value
}

type S<'a> = &'a mut Store<HostState>;

impl TerminalWorld {
    fn driver(&self) -> &bindings::exports::agmsg::terminal::driver::Guest {
        self.core.agmsg_terminal_driver()
    }

    pub fn check(&self, s: S<'_>) -> Call<()> {
        answer(self.driver().call_check(s), same)
    }

    pub fn describe(&self, s: S<'_>) -> wasmtime::Result<Description> {
        let d = self.driver().call_describe(s)?;
        Ok(Description { name: d.name, priority: d.priority, backend: d.backend, capabilities: d.capabilities, hints: d.hints })
    }

    pub fn detect(&self, s: S<'_>, session_id: &str) -> wasmtime::Result<Detection> {
        Ok(match self.driver().call_detect(s, session_id)? {
            wit::Detection::Absent => Detection::Absent,
            wit::Detection::Unresolved(why) => Detection::Unresolved(why),
            wit::Detection::Resolved(id) => Detection::Resolved(id),
        })
    }

    pub fn spawn(&self, s: S<'_>, name: &str, project: &str, target: SpawnTarget, boot: &[String]) -> Call<String> {
        let target = match target {
            SpawnTarget::Window => wit::SpawnTarget::Window,
            SpawnTarget::PaneH => wit::SpawnTarget::PaneH,
            SpawnTarget::PaneV => wit::SpawnTarget::PaneV,
        };
        answer(self.driver().call_spawn(s, name, project, target, boot), same)
    }

    pub fn despawn(&self, s: S<'_>, id: &str) -> Call<()> {
        answer(self.driver().call_despawn(s, id), same)
    }

    pub fn peek(&self, s: S<'_>, id: &str, lines: Option<u32>) -> Call<String> {
        answer(self.driver().call_peek(s, id, lines), same)
    }

    pub fn poke(&self, s: S<'_>, id: &str, text: &str) -> Call<()> {
        answer(self.driver().call_poke(s, id, text), same)
    }

    pub fn pane_state(&self, s: S<'_>, id: &str) -> Call<PanePresence> {
        answer(self.driver().call_pane_state(s, id), |p| match p {
            wit::PanePresence::Present => PanePresence::Present,
            wit::PanePresence::Gone => PanePresence::Gone,
            wit::PanePresence::Unknown => PanePresence::Unknown,
        })
    }

    pub fn where_is(&self, s: S<'_>, id: &str) -> Call<String> {
        answer(self.driver().call_where_is(s, id), same)
    }

    pub fn arrange(&self, s: S<'_>, source: &str, intent: Intent, target: &str) -> Call<ArrangeOutcome> {
        let intent = match intent {
            Intent::PlaceBelow => wit::Intent::PlaceBelow,
            Intent::PlaceRight => wit::Intent::PlaceRight,
            Intent::Swap => wit::Intent::Swap,
        };
        answer(self.driver().call_arrange(s, source, intent, target), |o| match o {
            wit::ArrangeOutcome::Moved => ArrangeOutcome::Moved,
            wit::ArrangeOutcome::Unchanged => ArrangeOutcome::Unchanged,
        })
    }

    pub fn name(&self, s: S<'_>, id: &str, team: &str, agent: &str, mode: NamingMode) -> Call<()> {
        let mode = match mode {
            NamingMode::LabelAndKey => wit::NamingMode::LabelAndKey,
            NamingMode::KeyOnly => wit::NamingMode::KeyOnly,
        };
        answer(self.driver().call_name(s, id, team, agent, mode), same)
    }

    pub fn capability(&self, s: S<'_>, capability: &str, id: Option<&str>) -> Call<Answer> {
        answer(self.driver().call_capability(s, capability, id), tri_state)
    }

    pub fn team_observe(&self, s: S<'_>, id: &str) -> Call<String> {
        answer(self.driver().call_team_observe(s, id), same)
    }

    pub fn team_input_ready(&self, s: S<'_>, id: &str, expected: &str) -> Call<Answer> {
        answer(self.driver().call_team_input_ready(s, id, expected), tri_state)
    }

    pub fn find_by_label(&self, s: S<'_>, label: &str) -> Call<Vec<String>> {
        answer(self.driver().call_find_by_label(s, label), same)
    }

    pub fn label_of(&self, s: S<'_>, id: &str) -> Call<String> {
        answer(self.driver().call_label_of(s, id), same)
    }

    pub fn id_ok(&self, s: S<'_>, id: &str) -> Call<bool> {
        answer(self.driver().call_id_ok(s, id), same)
    }

    pub fn pane_process_observe(&self, s: S<'_>, id: &str) -> Call<Vec<String>> {
        answer(self.driver().call_pane_process_observe(s, id), same)
    }

    pub fn enumerate_panes(&self, s: S<'_>) -> Call<Vec<String>> {
        answer(self.driver().call_enumerate_panes(s), same)
    }

    pub fn fence(&self, s: S<'_>, id: &str, seat_pid: Option<&str>) -> Call<String> {
        answer(self.driver().call_fence(s, id, seat_pid), same)
    }

    pub fn pane_focused(&self, s: S<'_>, id: &str) -> Call<bool> {
        answer(self.driver().call_pane_focused(s, id), same)
    }

    pub fn input_clear(&self, s: S<'_>, id: &str) -> Call<()> {
        answer(self.driver().call_input_clear(s, id), same)
    }

    pub fn input_type(&self, s: S<'_>, id: &str, text: &str) -> Call<()> {
        answer(self.driver().call_input_type(s, id, text), same)
    }

    pub fn expected_label(&self, s: S<'_>, team: &str, agent: &str) -> Call<String> {
        answer(self.driver().call_expected_label(s, team, agent), same)
    }

    pub fn instance_for_ref(&self, s: S<'_>, reference: &str) -> Call<String> {
        answer(self.driver().call_instance_for_ref(s, reference), same)
    }

    pub fn id_split(&self, s: S<'_>, id: &str) -> Call<(String, String)> {
        answer(self.driver().call_id_split(s, id), same)
    }
}

fn tri_state(a: wit::Answer) -> Answer {
    match a {
        wit::Answer::Yes => Answer::Yes,
        wit::Answer::No => Answer::No,
        wit::Answer::Unknown => Answer::Unknown,
    }
}

impl From<wit::TermError> for TerminalError {
    fn from(e: wit::TermError) -> TerminalError {
        match e {
            wit::TermError::Unreachable(m) => TerminalError::new(TermFailKind::Unreachable, m),
            wit::TermError::Failed(m) => TerminalError::new(TermFailKind::Failed, m),
            wit::TermError::Unsupported(m) => TerminalError::new(TermFailKind::Unsupported, m),
            wit::TermError::MissingDeps(m) => TerminalError::new(TermFailKind::MissingDeps, m),
        }
    }
}
