//! The terminal axis's domain types: what the host, the CLI and `spawn` handle, as plain Rust, owned by
//! the host whatever the WIT version a driver was built against. The seam (`world.rs`) converts the
//! generated bindings' types into these where a call returns, and back where one is made.

use std::fmt;

/// The §2.3 failure classes and their exit codes: the contract's, which the SDK's `TermError` maps to.
pub use agmsg_contract::TermFailKind;

/// A failed op: its §2.3 class and the driver's (or the host's) message.
#[derive(Clone, Debug)]
pub struct TerminalError {
    pub kind: TermFailKind,
    pub message: String,
}

impl TerminalError {
    pub fn new(kind: TermFailKind, message: impl Into<String>) -> TerminalError {
        TerminalError { kind, message: message.into() }
    }
}

impl fmt::Display for TerminalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TerminalError {}

/// `pane-state`: a pane exists, is gone (the terminal said so), or could not be told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PanePresence {
    Present,
    Gone,
    Unknown,
}

/// Where `spawn` puts the new pane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpawnTarget {
    Window,
    PaneH,
    PaneV,
}

/// What `arrange` is asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Intent {
    PlaceBelow,
    PlaceRight,
    Swap,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrangeOutcome {
    Moved,
    Unchanged,
}

/// How `name` labels a pane: the visible label and the key, or the key only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NamingMode {
    LabelAndKey,
    KeyOnly,
}

/// A tri-state answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    Yes,
    No,
    Unknown,
}

/// `detect`'s answer: not this terminal, this terminal but no pane id, or the pane's id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Detection {
    Absent,
    Unresolved(String),
    Resolved(String),
}

/// A driver's `describe`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Description {
    pub name: String,
    pub priority: u32,
    pub backend: String,
    pub capabilities: Vec<String>,
    pub hints: Vec<(String, String)>,
}
