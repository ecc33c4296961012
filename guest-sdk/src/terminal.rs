//! The terminal axis: implement [`TerminalDriver`] and register it with [`export_terminal_driver!`].
//!
//! The required ops (§6.2) have no default. Every optional op defaults to [`TermError::Unsupported`],
//! which the host reports as "unsupported", never as a failure of the driver: implement only the ones
//! your terminal can do. Team and agent names are checked against the contract's name rules before your
//! driver sees them.

use crate::bindings::exports::agmsg::terminal::driver::Guest;

pub use crate::bindings::agmsg::terminal::types::{
    Answer, ArrangeOutcome, Description, Detection, Intent, NamingMode, PanePresence, SpawnTarget, TermError,
};

impl TermError {
    /// The op is not implemented by this driver, or has no path for this id.
    pub fn unsupported(what: impl Into<String>) -> TermError {
        TermError::Unsupported(what.into())
    }
    /// The terminal could not be asked (exit 10).
    pub fn unreachable(what: impl Into<String>) -> TermError {
        TermError::Unreachable(what.into())
    }
    /// The terminal answered, but the operation failed (exit 12).
    pub fn failed(what: impl Into<String>) -> TermError {
        TermError::Failed(what.into())
    }
}

impl From<crate::NameError> for TermError {
    fn from(e: crate::NameError) -> Self {
        TermError::Unsupported(e.to_string())
    }
}

fn not_implemented<T>(op: &str) -> Result<T, TermError> {
    Err(TermError::Unsupported(format!("{op} is not implemented by this driver")))
}

/// A terminal driver: the required §6.2 ops, and whichever optional ones the terminal supports.
pub trait TerminalDriver {
    /// Verify the driver can work here; a missing program is [`TermError::MissingDeps`].
    fn check(&self) -> Result<(), TermError>;
    fn describe(&self) -> Description;
    /// Whether this session runs under this terminal, and its own pane id if it can tell.
    fn detect(&self, session_id: &str) -> Detection;
    fn spawn(&self, name: &str, project: &str, target: SpawnTarget, boot: &[String]) -> Result<String, TermError>;
    fn despawn(&self, id: &str) -> Result<(), TermError>;
    fn peek(&self, id: &str, lines: Option<u32>) -> Result<String, TermError>;
    fn poke(&self, id: &str, text: &str) -> Result<(), TermError>;
    /// `Gone` only when the terminal positively answered so: callers delete placement records on it.
    fn pane_state(&self, id: &str) -> Result<PanePresence, TermError>;
    fn where_is(&self, id: &str) -> Result<String, TermError>;
    fn arrange(&self, source: &str, intent: Intent, target: &str) -> Result<ArrangeOutcome, TermError>;
    fn name(&self, id: &str, team: &str, agent: &str, mode: NamingMode) -> Result<(), TermError>;

    fn capability(&self, _capability: &str, _id: Option<&str>) -> Result<Answer, TermError> {
        not_implemented("capability")
    }
    fn team_observe(&self, _id: &str) -> Result<String, TermError> {
        not_implemented("team-observe")
    }
    fn team_input_ready(&self, _id: &str, _expected: &str) -> Result<Answer, TermError> {
        not_implemented("team-input-ready")
    }
    fn find_by_label(&self, _label: &str) -> Result<Vec<String>, TermError> {
        not_implemented("find-by-label")
    }
    fn label_of(&self, _id: &str) -> Result<String, TermError> {
        not_implemented("label-of")
    }
    fn id_ok(&self, _id: &str) -> Result<bool, TermError> {
        not_implemented("id-ok")
    }
    fn pane_process_observe(&self, _id: &str) -> Result<Vec<String>, TermError> {
        not_implemented("pane-process-observe")
    }
    fn enumerate_panes(&self) -> Result<Vec<String>, TermError> {
        not_implemented("enumerate-panes")
    }
    fn fence(&self, _id: &str, _seat_pid: Option<&str>) -> Result<String, TermError> {
        not_implemented("fence")
    }
    fn pane_focused(&self, _id: &str) -> Result<bool, TermError> {
        not_implemented("pane-focused")
    }
    fn input_clear(&self, _id: &str) -> Result<(), TermError> {
        not_implemented("input-clear")
    }
    fn input_type(&self, _id: &str, _text: &str) -> Result<(), TermError> {
        not_implemented("input-type")
    }
    fn expected_label(&self, _team: &str, _agent: &str) -> Result<String, TermError> {
        not_implemented("expected-label")
    }
    fn instance_for_ref(&self, _reference: &str) -> Result<String, TermError> {
        not_implemented("instance-for-ref")
    }
    fn id_split(&self, _id: &str) -> Result<(String, String), TermError> {
        not_implemented("id-split")
    }
}

/// Register `$driver` (a type implementing [`TerminalDriver`] and `Default`) as this component's
/// terminal driver.
#[macro_export]
macro_rules! export_terminal_driver {
    ($driver:ty) => {
        #[doc(hidden)]
        #[unsafe(no_mangle)]
        pub fn __agmsg_new_terminal_driver() -> ::std::boxed::Box<dyn $crate::terminal::TerminalDriver> {
            ::std::boxed::Box::new(<$driver as ::core::default::Default>::default())
        }
    };
}

unsafe extern "Rust" {
    fn __agmsg_new_terminal_driver() -> Box<dyn TerminalDriver>;
}

thread_local! {
    static DRIVER: Box<dyn TerminalDriver> = unsafe { __agmsg_new_terminal_driver() };
}

fn with_driver<T>(f: impl FnOnce(&dyn TerminalDriver) -> T) -> T {
    DRIVER.with(|driver| f(driver.as_ref()))
}

#[doc(hidden)]
pub struct Component;

impl Guest for Component {
    fn check() -> Result<(), TermError> {
        with_driver(|d| d.check())
    }
    fn describe() -> Description {
        with_driver(|d| d.describe())
    }
    fn detect(session_id: String) -> Detection {
        with_driver(|d| d.detect(&session_id))
    }
    fn spawn(name: String, project: String, target: SpawnTarget, boot: Vec<String>) -> Result<String, TermError> {
        with_driver(|d| d.spawn(&name, &project, target, &boot))
    }
    fn despawn(id: String) -> Result<(), TermError> {
        with_driver(|d| d.despawn(&id))
    }
    fn peek(id: String, lines: Option<u32>) -> Result<String, TermError> {
        with_driver(|d| d.peek(&id, lines))
    }
    fn poke(id: String, text: String) -> Result<(), TermError> {
        with_driver(|d| d.poke(&id, &text))
    }
    fn pane_state(id: String) -> Result<PanePresence, TermError> {
        with_driver(|d| d.pane_state(&id))
    }
    fn where_is(id: String) -> Result<String, TermError> {
        with_driver(|d| d.where_is(&id))
    }
    fn arrange(source: String, intent: Intent, target: String) -> Result<ArrangeOutcome, TermError> {
        with_driver(|d| d.arrange(&source, intent, &target))
    }
    fn name(id: String, team: String, agent: String, mode: NamingMode) -> Result<(), TermError> {
        crate::check_name("team", &team)?;
        crate::check_name("agent", &agent)?;
        with_driver(|d| d.name(&id, &team, &agent, mode))
    }
    fn capability(capability: String, id: Option<String>) -> Result<Answer, TermError> {
        with_driver(|d| d.capability(&capability, id.as_deref()))
    }
    fn team_observe(id: String) -> Result<String, TermError> {
        with_driver(|d| d.team_observe(&id))
    }
    fn team_input_ready(id: String, expected: String) -> Result<Answer, TermError> {
        with_driver(|d| d.team_input_ready(&id, &expected))
    }
    fn find_by_label(label: String) -> Result<Vec<String>, TermError> {
        with_driver(|d| d.find_by_label(&label))
    }
    fn label_of(id: String) -> Result<String, TermError> {
        with_driver(|d| d.label_of(&id))
    }
    fn id_ok(id: String) -> Result<bool, TermError> {
        with_driver(|d| d.id_ok(&id))
    }
    fn pane_process_observe(id: String) -> Result<Vec<String>, TermError> {
        with_driver(|d| d.pane_process_observe(&id))
    }
    fn enumerate_panes() -> Result<Vec<String>, TermError> {
        with_driver(|d| d.enumerate_panes())
    }
    fn fence(id: String, seat_pid: Option<String>) -> Result<String, TermError> {
        with_driver(|d| d.fence(&id, seat_pid.as_deref()))
    }
    fn pane_focused(id: String) -> Result<bool, TermError> {
        with_driver(|d| d.pane_focused(&id))
    }
    fn input_clear(id: String) -> Result<(), TermError> {
        with_driver(|d| d.input_clear(&id))
    }
    fn input_type(id: String, text: String) -> Result<(), TermError> {
        with_driver(|d| d.input_type(&id, &text))
    }
    fn expected_label(team: String, agent: String) -> Result<String, TermError> {
        crate::check_name("team", &team)?;
        crate::check_name("agent", &agent)?;
        with_driver(|d| d.expected_label(&team, &agent))
    }
    fn instance_for_ref(reference: String) -> Result<String, TermError> {
        with_driver(|d| d.instance_for_ref(&reference))
    }
    fn id_split(id: String) -> Result<(String, String), TermError> {
        with_driver(|d| d.id_split(&id))
    }
}

crate::bindings::export!(Component with_types_in crate::bindings);
