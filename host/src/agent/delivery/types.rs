//! Delivery's vocabulary, a leaf: the modes, what becomes of the target file, and what a type's plug
//! component is asked and answers. The types axis's seam (`agent/world.rs`) converts the plug's WIT
//! types into these, so nothing else names a generated type.

use std::fmt;

use crate::error::HostError;

/// A delivery mode (agmsg's four).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Monitor,
    Turn,
    Both,
    Off,
}

impl Mode {
    pub const ALL: [Mode; 4] = [Mode::Monitor, Mode::Turn, Mode::Both, Mode::Off];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Monitor => "monitor",
            Mode::Turn => "turn",
            Mode::Both => "both",
            Mode::Off => "off",
        }
    }

    /// agmsg's mode names; anything else is `Unknown mode: X (use monitor|turn|both|off)`.
    pub fn parse(text: &str) -> Result<Mode, HostError> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == text)
            .ok_or_else(|| HostError::refused(format!("Unknown mode: {text} (use monitor|turn|both|off)")))
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What to do with the target file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileAnswer {
    /// Replace (or create) it with this text.
    Write(String),
    /// Remove it (nothing when it is absent).
    Remove,
    /// Leave it as it is.
    Keep,
}

/// What a plug is asked about: the type, the project, agmsg's directory and the type's `hooks_file`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlugTarget {
    pub agent_type: String,
    pub project: String,
    pub skill_dir: String,
    pub hooks_file: String,
}

/// A plug's `apply`: the file's fate and the notices to print.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlugApplied {
    pub file: FileAnswer,
    pub notices: Vec<String>,
}

/// A plug op that gives no answer: not overridden (agmsg's default applies), or failed saying why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlugError {
    NotOverridden,
    Failed(String),
}
