//! The host's error model: every failure the library reports carries its [`ExitClass`], what kind of
//! failure it is to a caller; the binary turns a class into a process exit code in one place
//! (`cli/exit.rs`) and the library never picks a number.
//!
//! A driver op's own error keeps its area's type, which already says its class:
//! [`crate::storage::StorageError`]'s §1.4 status (with a §1.6 directive) and
//! [`crate::terminal::TerminalError`]'s §2.3 kind. [`HostError`] is the error of everything else the
//! host does (agent types, delivery, plugins, shims, scaffolds), and what either area's error becomes
//! when a command spans more than a driver op. This module is a leaf: each area converts its own error
//! (`storage::manage`, `terminal::op`), so nothing here names an axis.

use std::fmt;

use agmsg_contract::{Status, TermFailKind};

/// What kind of failure an error is, to whoever ran the command. agmsg's codes: 1 and 2 are those of its
/// scripts (failure, usage), 3 its delivery engine's "not overridden" and its spawn's and despawn's
/// timeout, 10/12/13 a driver's (§1.4 storage, §2.3 terminal).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitClass {
    /// The request cannot be met: an unknown name, a refused option, a file that cannot be read or
    /// written (a host command's failure).
    Refused,
    /// The command line is wrong: a missing or malformed argument.
    Usage,
    /// A delivery side-effect op the type does not override: agmsg's default applies.
    NotOverridden,
    /// Waited for an agent and it did not answer in time (spawn's readiness, despawn's lock
    /// release): it may still; agmsg's spawn and despawn exit 3 for it too.
    TimedOut,
    /// An op of an optional interface the driver does not export, where the caller tells it apart from
    /// a failure: agmsg's sync adapter's 14 (`storage sync-*`).
    NotOffered,
    /// A storage driver's status ([`Status::Ok`] never is an error).
    Storage(Status),
    /// A terminal driver's failure kind.
    Terminal(TermFailKind),
}

impl ExitClass {
    /// A storage driver's `runtime_error`: the class of a store workflow's own failures.
    pub const RUNTIME: ExitClass = ExitClass::Storage(Status::RuntimeError);
}

/// How an op reports its outcome on stdout, as agmsg's drivers do (spec §2.1, §6.2): part of a
/// failure, beside its class.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Shape {
    /// The status word as the last stdout line (`ok`, or the failure's word), its exit code.
    Control,
    /// Data only on stdout; a failure prints nothing there, its message on stderr.
    Record,
    /// A terminal token op: `unknown` for 10 and 12, `unsupported` for 13.
    Token,
    /// A terminal pane-state: `unknown` whatever the failure.
    Presence,
}

/// A failure of a host command: its class and a message for a person (it may quote a driver's or a
/// manifest's text: print it through [`crate::display`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostError {
    pub class: ExitClass,
    pub message: String,
}

impl HostError {
    pub fn new(class: ExitClass, message: impl Into<String>) -> HostError {
        HostError { class, message: message.into() }
    }

    pub fn refused(message: impl Into<String>) -> HostError {
        HostError::new(ExitClass::Refused, message)
    }

    pub fn usage(message: impl Into<String>) -> HostError {
        HostError::new(ExitClass::Usage, message)
    }

    /// The same failure said within `context` (`<context>: <message>`): its class stays the one
    /// given where it was found.
    pub fn context(self, context: impl fmt::Display) -> HostError {
        HostError { class: self.class, message: format!("{context}: {}", self.message) }
    }
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HostError {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `T: From<F>`, answered at compile time without requiring it: the inherent const is
    /// only there when the bound holds, else the trait's default is found.
    struct Probe<T, F>(std::marker::PhantomData<(T, F)>);
    trait Otherwise {
        const CONVERTS: bool = false;
    }
    impl<T, F> Otherwise for Probe<T, F> {}
    impl<T: From<F>, F> Probe<T, F> {
        const CONVERTS: bool = true;
    }

    /// Text never becomes a failure by itself: a blanket conversion would give every `?` on a
    /// `String` one class (a refusal), wherever the failure was (issue 26). Each site says its class.
    #[test]
    #[allow(clippy::assertions_on_constants, reason = "a test, not a const block, so a failure names what came back")]
    fn text_does_not_convert_into_a_failure() {
        assert!(Probe::<HostError, HostError>::CONVERTS, "the probe answers yes for a conversion that exists");
        assert!(!Probe::<HostError, String>::CONVERTS, "From<String> for HostError is back");
        assert!(!Probe::<HostError, &str>::CONVERTS, "From<&str> for HostError is back");
    }

    #[test]
    fn context_keeps_the_class() {
        let e = HostError::usage("bad").context("while reading x");
        assert_eq!((e.class, e.message.as_str()), (ExitClass::Usage, "while reading x: bad"));
    }
}
