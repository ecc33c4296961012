//! The terminal axis: implement [`TerminalDriver`] and register it with
//! [`export_terminal_driver!`](crate::export_terminal_driver).
//!
//! The required ops (§6.2) have no default. Every optional op defaults to [`TermError::Unsupported`],
//! which the host reports as "unsupported", never as a failure of the driver: implement only the ones
//! your terminal can do. Team and agent names are checked against the contract's name rules before your
//! driver sees them.
//!
//! For terminal drivers. A terminal driver reaches its terminal through
//! [`process`](crate::process) alone, running the programs its manifest declares. Every id it receives
//! comes from the user's command line or from agmsg's records: check it against one grammar before
//! running anything, and answer [`TermError::Unsupported`] for an id it cannot have produced.
//!
//! Each failure reaches agmsg as its class's exit code, [`TermFailKind`] (the contract's):
//!
//! ```
//! use agmsg_guest_sdk::terminal::{TermError, TermFailKind};
//!
//! let e = TermError::unsupported("not a pane id: \"x\"");
//! assert_eq!(e.kind(), TermFailKind::Unsupported);
//! assert_eq!(e.kind().exit_code(), 13);
//! ```

use crate::bindings::terminal::exports::agmsg::terminal::driver::Guest;

/// A tri-state answer, for [`TerminalDriver::capability`] and [`TerminalDriver::team_input_ready`]:
/// agmsg's exit 0 (`Yes`), 1 (`No`) or 2 (`Unknown`). Answer `No` only when the terminal said so;
/// anything unreadable is `Unknown`.
///
/// ```
/// use agmsg_guest_sdk::terminal::Answer;
///
/// fn answer(known: Option<bool>) -> Answer {
///     match known {
///         Some(true) => Answer::Yes,
///         Some(false) => Answer::No,
///         None => Answer::Unknown,
///     }
/// }
/// assert_eq!(answer(None), Answer::Unknown);
/// ```
pub use crate::bindings::terminal::agmsg::terminal::types::Answer;

/// What [`TerminalDriver::arrange`] did: `Moved` the pane, or left it `Unchanged` because it already
/// was where the intent wanted it.
///
/// ```
/// use agmsg_guest_sdk::terminal::ArrangeOutcome;
///
/// let already_below = true;
/// let outcome = if already_below { ArrangeOutcome::Unchanged } else { ArrangeOutcome::Moved };
/// assert_eq!(outcome, ArrangeOutcome::Unchanged);
/// ```
pub use crate::bindings::terminal::agmsg::terminal::types::ArrangeOutcome;

/// The driver's metadata, returned by [`TerminalDriver::describe`]: `name`, `priority` (lower is tried
/// first), a one-line `backend`, its `capabilities`, and extra `key=value` `hints`. It must agree with
/// the driver's `terminal.conf` (the contract suite checks that it does): build it with
/// [`Description::from_terminal_conf`] from that file. A hint is a command an agent may run, so the
/// host accepts only commands of the programs the manifest grants, in plain words, joined by `"; "`
/// (`tmux swap-pane -s SOURCE -t TARGET`); any other hint makes `describe` fail.
///
/// ```
/// use agmsg_guest_sdk::terminal::Description;
///
/// let description = Description {
///     name: "tmux".into(),
///     priority: 20,
///     backend: "tmux pane/window".into(),
///     capabilities: ["spawn", "peek", "poke"].map(String::from).to_vec(),
///     hints: vec![("syntax_help".into(), "tmux list-commands".into())],
/// };
/// # let _ = description;
/// ```
pub use crate::bindings::terminal::agmsg::terminal::types::Description;

/// What [`TerminalDriver::detect`] found: this session does not run under the terminal (`Absent`), it
/// does but its own pane cannot be named (`Unresolved`, with the reason), or it does in the pane whose
/// id this carries (`Resolved`).
///
/// ```
/// use agmsg_guest_sdk::terminal::Detection;
///
/// fn detection(under_terminal: bool, pane: Option<&str>) -> Detection {
///     match (under_terminal, pane) {
///         (false, _) => Detection::Absent,
///         (true, None) => Detection::Unresolved("the pane id is not in the environment".into()),
///         (true, Some(id)) => Detection::Resolved(id.into()),
///     }
/// }
/// assert!(matches!(detection(true, Some("%3")), Detection::Resolved(id) if id == "%3"));
/// ```
pub use crate::bindings::terminal::agmsg::terminal::types::Detection;

/// Where [`TerminalDriver::arrange`] should put the source pane: below the target (`PlaceBelow`), to its
/// right (`PlaceRight`), or in its place, swapping the two (`Swap`).
///
/// ```
/// use agmsg_guest_sdk::terminal::Intent;
///
/// fn tmux_split_flag(intent: Intent) -> Option<&'static str> {
///     match intent {
///         Intent::PlaceBelow => Some("-v"),
///         Intent::PlaceRight => Some("-h"),
///         Intent::Swap => None, // a swap-pane, not a move-pane
///     }
/// }
/// assert_eq!(tmux_split_flag(Intent::PlaceRight), Some("-h"));
/// ```
pub use crate::bindings::terminal::agmsg::terminal::types::Intent;

/// What [`TerminalDriver::name`] sets: the resolvable key and the visible label (`LabelAndKey`), or the
/// key only (`KeyOnly`), leaving what the user sees alone.
///
/// ```
/// use agmsg_guest_sdk::terminal::NamingMode;
///
/// let relabel = |mode: NamingMode| mode == NamingMode::LabelAndKey;
/// assert!(!relabel(NamingMode::KeyOnly));
/// ```
pub use crate::bindings::terminal::agmsg::terminal::types::NamingMode;

/// The answer of [`TerminalDriver::pane_state`]. `Gone` is a fact callers act on (they delete the
/// member's placement record), so it must come from the terminal's own positive answer; when in doubt
/// the answer is `Unknown` or an error.
///
/// ```
/// use agmsg_guest_sdk::terminal::PanePresence;
///
/// fn presence(listed: Option<bool>) -> PanePresence {
///     match listed {
///         Some(true) => PanePresence::Present,
///         Some(false) => PanePresence::Gone, // the complete listing came back without it
///         None => PanePresence::Unknown,     // no listing: say nothing
///     }
/// }
/// assert_eq!(presence(None), PanePresence::Unknown);
/// ```
pub use crate::bindings::terminal::agmsg::terminal::types::PanePresence;

/// What [`TerminalDriver::spawn`] opens: a new `Window`, or a pane split off the caller's, beside it
/// (`PaneH`, tmux's `split-window -h`) or below it (`PaneV`).
///
/// ```
/// use agmsg_guest_sdk::terminal::SpawnTarget;
///
/// fn tmux_verb(target: SpawnTarget) -> &'static str {
///     match target {
///         SpawnTarget::Window => "new-window",
///         SpawnTarget::PaneH | SpawnTarget::PaneV => "split-window",
///     }
/// }
/// assert_eq!(tmux_verb(SpawnTarget::PaneV), "split-window");
/// ```
pub use crate::bindings::terminal::agmsg::terminal::types::SpawnTarget;

/// How a terminal op fails, in the contract's failure classes ([`TermFailKind`], which holds the exit
/// codes): the terminal could not be asked (`Unreachable`), it answered but the operation failed
/// (`Failed`), there is no path at all (`Unsupported`: unsupported here, a malformed or foreign id), or,
/// from [`TerminalDriver::check`] only, a missing program (`MissingDeps`, with an install directive).
///
/// A [`NameError`](crate::NameError) converts into `Unsupported` with `?`.
///
/// ```
/// use agmsg_guest_sdk::terminal::TermError;
///
/// fn pane_id(id: &str) -> Result<u32, TermError> {
///     id.strip_prefix('%')
///         .and_then(|n| n.parse().ok())
///         .ok_or_else(|| TermError::unsupported(format!("not a pane id: {id:?}")))
/// }
/// assert_eq!(pane_id("%7").ok(), Some(7));
/// assert!(matches!(pane_id("%9;kill"), Err(TermError::Unsupported(_))));
/// ```
pub use crate::bindings::terminal::agmsg::terminal::types::TermError;

impl TermError {
    /// The op is not implemented by this driver, or has no path for this id.
    ///
    /// Also the answer for an id the driver cannot have produced: a malformed id never runs
    /// anything.
    ///
    /// ```
    /// use agmsg_guest_sdk::terminal::TermError;
    ///
    /// let e = TermError::unsupported("this terminal cannot arrange panes");
    /// assert!(matches!(e, TermError::Unsupported(m) if m.contains("arrange")));
    /// ```
    pub fn unsupported(what: impl Into<String>) -> TermError {
        TermError::Unsupported(what.into())
    }

    /// The terminal could not be asked.
    ///
    /// For a program that did not run or did not answer, and for an answer that cannot be trusted (cut,
    /// garbled, about another pane).
    ///
    /// ```
    /// use agmsg_guest_sdk::terminal::TermError;
    ///
    /// let e = TermError::unreachable("tmux: no server is listening on this socket");
    /// assert!(matches!(e, TermError::Unreachable(_)));
    /// ```
    pub fn unreachable(what: impl Into<String>) -> TermError {
        TermError::Unreachable(what.into())
    }

    /// The terminal answered, but the operation failed.
    ///
    /// ```
    /// use agmsg_guest_sdk::terminal::TermError;
    ///
    /// let stderr = "can't find pane: %9";
    /// let e = TermError::failed(format!("tmux could not capture pane %9: {stderr}"));
    /// assert!(matches!(e, TermError::Failed(_)));
    /// ```
    pub fn failed(what: impl Into<String>) -> TermError {
        TermError::Failed(what.into())
    }

    /// This error's class, which decides the exit code agmsg sees.
    ///
    /// ```
    /// use agmsg_guest_sdk::terminal::{TermError, TermFailKind};
    ///
    /// assert_eq!(TermError::failed("tmux said no").kind().exit_code(), 12);
    /// assert_eq!(TermError::MissingDeps("tmux not found".into()).kind(), TermFailKind::MissingDeps);
    /// ```
    pub fn kind(&self) -> TermFailKind {
        match self {
            TermError::Unreachable(_) => TermFailKind::Unreachable,
            TermError::Failed(_) => TermFailKind::Failed,
            TermError::Unsupported(_) => TermFailKind::Unsupported,
            TermError::MissingDeps(_) => TermFailKind::MissingDeps,
        }
    }

    /// A `program` that did not run to completion: the terminal could not be asked (`Unreachable`),
    /// except that a run the host refused is this driver's own fault (`Failed`: it asked for a program
    /// or variable its manifest does not declare).
    ///
    /// ```
    /// use agmsg_guest_sdk::process::ProcessError;
    /// use agmsg_guest_sdk::terminal::TermError;
    ///
    /// let e = TermError::from_process("tmux", ProcessError::TimedOut(10_000));
    /// assert!(matches!(e, TermError::Unreachable(m) if m == "tmux did not answer within 10000 ms"));
    /// let e = TermError::from_process("tmux", ProcessError::NotAllowed("not declared".into()));
    /// assert!(matches!(e, TermError::Failed(_)));
    /// ```
    pub fn from_process(program: &str, e: crate::process::ProcessError) -> TermError {
        use crate::process::ProcessError;
        match e {
            ProcessError::NotFound(_) => TermError::unreachable(format!("{program} not found")),
            ProcessError::TimedOut(ms) => TermError::unreachable(format!("{program} did not answer within {ms} ms")),
            ProcessError::Failed(why) => TermError::unreachable(format!("could not run {program}: {why}")),
            ProcessError::NotAllowed(why) => TermError::failed(format!("the host refused to run {program}: {why}")),
        }
    }
}

/// The contract's terminal failure classes and their exit codes; [`TermError::kind`] gives an error's.
///
/// ```
/// use agmsg_guest_sdk::terminal::TermFailKind;
///
/// assert_eq!(TermFailKind::Unreachable.exit_code(), 10);
/// assert_eq!(TermFailKind::Failed.exit_code(), 12);
/// assert_eq!(TermFailKind::Unsupported.exit_code(), 13);
/// assert_eq!(TermFailKind::MissingDeps.exit_code(), 10);
/// ```
pub use agmsg_contract::TermFailKind;

/// Whether `name` is a driver name (`[a-zA-Z0-9_-]+`, the contract's rule, as agmsg's registry
/// matches terminals): for the `<terminal>` of a placement reference `<terminal>:<id>`.
///
/// ```
/// use agmsg_guest_sdk::terminal::is_driver_name;
///
/// assert!(is_driver_name("herdr"));
/// assert!(!is_driver_name("../tmux"));
/// ```
pub use agmsg_contract::is_driver_name;

/// A shell word for a command line a terminal's shell runs: as it is when it holds nothing a shell reads
/// as syntax, else single-quoted (`shell_quote`). The host's own rule, from `agmsg-contract`.
///
/// ```
/// use agmsg_guest_sdk::terminal::{shell_quote, shell_word};
/// assert_eq!(shell_word("/bin/sh"), "/bin/sh");
/// assert_eq!(shell_word("it's $(x)"), r"'it'\''s $(x)'");
/// assert_eq!(shell_quote("x"), "'x'");
/// ```
pub use agmsg_contract::{shell_quote, shell_word};

impl Description {
    /// `name`, `priority`, `backend` and `capabilities` read from a `terminal.conf` as agmsg reads it
    /// (a missing `priority` is 50), no hints. Embed the driver's own manifest, so that what it
    /// describes and what the host reads cannot disagree.
    ///
    /// ```
    /// use agmsg_guest_sdk::terminal::Description;
    ///
    /// // In a driver: Description::from_terminal_conf(include_str!("../terminal.conf"))
    /// let conf = "name=tmux\npriority=20\nbackend=tmux pane/window\ncapabilities=spawn peek\nprograms=tmux\n";
    /// let d = Description::from_terminal_conf(conf);
    /// assert_eq!((d.name.as_str(), d.priority, d.backend.as_str()), ("tmux", 20, "tmux pane/window"));
    /// assert_eq!(d.capabilities, ["spawn", "peek"]);
    /// ```
    pub fn from_terminal_conf(conf: &str) -> Description {
        use agmsg_contract::terminal_conf::{priority, value, words};
        Description {
            name: value(conf, "name").unwrap_or_default().to_owned(),
            priority: priority(conf),
            backend: value(conf, "backend").unwrap_or_default().to_owned(),
            capabilities: words(conf, "capabilities").into_iter().map(str::to_owned).collect(),
            hints: Vec::new(),
        }
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
///
/// Implement it on a type that is also `Default`, and register that type with
/// [`export_terminal_driver!`](crate::export_terminal_driver). Keep nothing in memory between calls:
/// the host may drop the instance and start a new one at any time. A required op the terminal cannot do
/// still needs a body, which answers [`TermError::unsupported`]. The crate-level docs hold a complete
/// driver; the shape is:
///
/// ```
/// use agmsg_guest_sdk::terminal::{Description, TermError, TerminalDriver};
/// # use agmsg_guest_sdk::terminal::*;
///
/// #[derive(Default)]
/// struct MyTerminal;
///
/// impl TerminalDriver for MyTerminal {
///     fn describe(&self) -> Description {
///         Description {
///             name: "my-terminal".into(),
///             priority: 50,
///             backend: "my terminal's panes".into(),
///             capabilities: Vec::new(),
///             hints: Vec::new(),
///         }
///     }
///     // ... the other required ops; the optional ones default to unsupported
/// #     fn check(&self) -> Result<(), TermError> { unimplemented!() }
/// #     fn detect(&self, _: &str) -> Detection { unimplemented!() }
/// #     fn spawn(&self, _: &str, _: &str, _: SpawnTarget, _: &[String]) -> Result<String, TermError> { unimplemented!() }
/// #     fn despawn(&self, _: &str) -> Result<(), TermError> { unimplemented!() }
/// #     fn peek(&self, _: &str, _: Option<u32>) -> Result<String, TermError> { unimplemented!() }
/// #     fn poke(&self, _: &str, _: &str) -> Result<(), TermError> { unimplemented!() }
/// #     fn pane_state(&self, _: &str) -> Result<PanePresence, TermError> { unimplemented!() }
/// #     fn where_is(&self, _: &str) -> Result<String, TermError> { unimplemented!() }
/// #     fn arrange(&self, _: &str, _: Intent, _: &str) -> Result<ArrangeOutcome, TermError> { unimplemented!() }
/// #     fn name(&self, _: &str, _: &str, _: &str, _: NamingMode) -> Result<(), TermError> { unimplemented!() }
/// }
///
/// assert!(matches!(MyTerminal.enumerate_panes(), Err(TermError::Unsupported(_))));
/// ```
pub trait TerminalDriver {
    /// Verify the driver can work here; a missing program is [`TermError::MissingDeps`].
    ///
    /// For `MissingDeps` the host prints an install directive with the message as its reason. Check
    /// cheaply: [`process::available`](crate::process::available) never runs the program.
    ///
    /// ```no_run
    /// use agmsg_guest_sdk::process;
    /// use agmsg_guest_sdk::terminal::{TermError, TerminalDriver};
    /// # use agmsg_guest_sdk::terminal::*;
    ///
    /// struct Tmux;
    ///
    /// impl TerminalDriver for Tmux {
    ///     fn check(&self) -> Result<(), TermError> {
    ///         if process::available("tmux") {
    ///             Ok(())
    ///         } else {
    ///             Err(TermError::MissingDeps("tmux is not installed".into()))
    ///         }
    ///     }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn detect(&self, _: &str) -> Detection { unimplemented!() }
    /// #     fn spawn(&self, _: &str, _: &str, _: SpawnTarget, _: &[String]) -> Result<String, TermError> { unimplemented!() }
    /// #     fn despawn(&self, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn peek(&self, _: &str, _: Option<u32>) -> Result<String, TermError> { unimplemented!() }
    /// #     fn poke(&self, _: &str, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn pane_state(&self, _: &str) -> Result<PanePresence, TermError> { unimplemented!() }
    /// #     fn where_is(&self, _: &str) -> Result<String, TermError> { unimplemented!() }
    /// #     fn arrange(&self, _: &str, _: Intent, _: &str) -> Result<ArrangeOutcome, TermError> { unimplemented!() }
    /// #     fn name(&self, _: &str, _: &str, _: &str, _: NamingMode) -> Result<(), TermError> { unimplemented!() }
    /// }
    /// ```
    fn check(&self) -> Result<(), TermError>;

    /// The driver's metadata. It never fails, and must agree with `terminal.conf` (the same name, and
    /// every capability the manifest lists).
    ///
    /// ```
    /// use agmsg_guest_sdk::terminal::{Description, TerminalDriver};
    /// # use agmsg_guest_sdk::terminal::*;
    ///
    /// struct Screen;
    ///
    /// impl TerminalDriver for Screen {
    ///     fn describe(&self) -> Description {
    ///         let hint = |k: &str, v: &str| (k.to_owned(), v.to_owned());
    ///         Description {
    ///             name: "screen".into(),
    ///             priority: 30,
    ///             backend: "GNU screen window".into(),
    ///             capabilities: vec!["peek".into(), "poke".into()],
    ///             hints: vec![hint("syntax_help", "screen -X help")],
    ///         }
    ///     }
    /// #     fn check(&self) -> Result<(), TermError> { unimplemented!() }
    /// #     fn detect(&self, _: &str) -> Detection { unimplemented!() }
    /// #     fn spawn(&self, _: &str, _: &str, _: SpawnTarget, _: &[String]) -> Result<String, TermError> { unimplemented!() }
    /// #     fn despawn(&self, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn peek(&self, _: &str, _: Option<u32>) -> Result<String, TermError> { unimplemented!() }
    /// #     fn poke(&self, _: &str, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn pane_state(&self, _: &str) -> Result<PanePresence, TermError> { unimplemented!() }
    /// #     fn where_is(&self, _: &str) -> Result<String, TermError> { unimplemented!() }
    /// #     fn arrange(&self, _: &str, _: Intent, _: &str) -> Result<ArrangeOutcome, TermError> { unimplemented!() }
    /// #     fn name(&self, _: &str, _: &str, _: &str, _: NamingMode) -> Result<(), TermError> { unimplemented!() }
    /// }
    ///
    /// assert_eq!(Screen.describe().capabilities, ["peek", "poke"]);
    /// ```
    fn describe(&self) -> Description;

    /// Whether this session runs under this terminal, and its own pane id if it can tell.
    ///
    /// `session_id` is the caller's session id when it gives one. Most terminals tell through the
    /// environment instead (tmux sets `$TMUX` and `$TMUX_PANE`), which the driver reads through the
    /// variables its manifest declares in `env=`. Outside the terminal the answer must be `Absent`.
    ///
    /// ```
    /// use agmsg_guest_sdk::terminal::{Detection, TerminalDriver};
    /// # use agmsg_guest_sdk::terminal::*;
    ///
    /// struct Tmux;
    ///
    /// impl TerminalDriver for Tmux {
    ///     fn detect(&self, _session_id: &str) -> Detection {
    ///         if std::env::var_os("TMUX").is_none() {
    ///             return Detection::Absent;
    ///         }
    ///         match std::env::var("TMUX_PANE") {
    ///             Ok(pane) => Detection::Resolved(pane),
    ///             Err(_) => Detection::Unresolved("$TMUX_PANE is unset".into()),
    ///         }
    ///     }
    /// #     fn check(&self) -> Result<(), TermError> { unimplemented!() }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn spawn(&self, _: &str, _: &str, _: SpawnTarget, _: &[String]) -> Result<String, TermError> { unimplemented!() }
    /// #     fn despawn(&self, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn peek(&self, _: &str, _: Option<u32>) -> Result<String, TermError> { unimplemented!() }
    /// #     fn poke(&self, _: &str, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn pane_state(&self, _: &str) -> Result<PanePresence, TermError> { unimplemented!() }
    /// #     fn where_is(&self, _: &str) -> Result<String, TermError> { unimplemented!() }
    /// #     fn arrange(&self, _: &str, _: Intent, _: &str) -> Result<ArrangeOutcome, TermError> { unimplemented!() }
    /// #     fn name(&self, _: &str, _: &str, _: &str, _: NamingMode) -> Result<(), TermError> { unimplemented!() }
    /// }
    /// ```
    fn detect(&self, session_id: &str) -> Detection;

    /// Open a new window or pane named `name`, in the directory `project`, running the command `boot`
    /// (an argv, already split), and return the new id.
    ///
    /// The id is what agmsg records and passes to every later op, so it must pass the driver's own id
    /// grammar.
    ///
    /// ```no_run
    /// use agmsg_guest_sdk::process;
    /// use agmsg_guest_sdk::terminal::{SpawnTarget, TermError, TerminalDriver};
    /// # use agmsg_guest_sdk::terminal::*;
    ///
    /// struct Tmux;
    ///
    /// impl TerminalDriver for Tmux {
    ///     fn spawn(&self, name: &str, project: &str, target: SpawnTarget, boot: &[String]) -> Result<String, TermError> {
    ///         let mut args = match target {
    ///             SpawnTarget::Window => vec!["new-window", "-n", name],
    ///             SpawnTarget::PaneH => vec!["split-window", "-h"],
    ///             SpawnTarget::PaneV => vec!["split-window", "-v"],
    ///         };
    ///         args.extend(["-P", "-F", "#{pane_id}", "-c", project]);
    ///         args.extend(boot.iter().map(String::as_str));
    ///         let out = process::run("tmux", &args).map_err(|e| TermError::unreachable(format!("{e:?}")))?;
    ///         if !out.success() {
    ///             return Err(TermError::failed(out.stderr_text()));
    ///         }
    ///         Ok(out.stdout_text().trim_end().to_owned())
    ///     }
    /// #     fn check(&self) -> Result<(), TermError> { unimplemented!() }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn detect(&self, _: &str) -> Detection { unimplemented!() }
    /// #     fn despawn(&self, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn peek(&self, _: &str, _: Option<u32>) -> Result<String, TermError> { unimplemented!() }
    /// #     fn poke(&self, _: &str, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn pane_state(&self, _: &str) -> Result<PanePresence, TermError> { unimplemented!() }
    /// #     fn where_is(&self, _: &str) -> Result<String, TermError> { unimplemented!() }
    /// #     fn arrange(&self, _: &str, _: Intent, _: &str) -> Result<ArrangeOutcome, TermError> { unimplemented!() }
    /// #     fn name(&self, _: &str, _: &str, _: &str, _: NamingMode) -> Result<(), TermError> { unimplemented!() }
    /// }
    /// ```
    fn spawn(&self, name: &str, project: &str, target: SpawnTarget, boot: &[String]) -> Result<String, TermError>;

    /// Close the window or pane `id`.
    ///
    /// ```no_run
    /// use agmsg_guest_sdk::process;
    /// use agmsg_guest_sdk::terminal::{TermError, TerminalDriver};
    /// # use agmsg_guest_sdk::terminal::*;
    /// # fn pane(id: &str) -> Result<&str, TermError> { Ok(id) }
    ///
    /// struct Tmux;
    ///
    /// impl TerminalDriver for Tmux {
    ///     fn despawn(&self, id: &str) -> Result<(), TermError> {
    ///         let id = pane(id)?; // the id grammar first: a malformed id runs nothing
    ///         let out = process::run("tmux", &["kill-pane", "-t", id]).map_err(|e| TermError::unreachable(format!("{e:?}")))?;
    ///         if out.success() { Ok(()) } else { Err(TermError::failed(out.stderr_text())) }
    ///     }
    /// #     fn check(&self) -> Result<(), TermError> { unimplemented!() }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn detect(&self, _: &str) -> Detection { unimplemented!() }
    /// #     fn spawn(&self, _: &str, _: &str, _: SpawnTarget, _: &[String]) -> Result<String, TermError> { unimplemented!() }
    /// #     fn peek(&self, _: &str, _: Option<u32>) -> Result<String, TermError> { unimplemented!() }
    /// #     fn poke(&self, _: &str, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn pane_state(&self, _: &str) -> Result<PanePresence, TermError> { unimplemented!() }
    /// #     fn where_is(&self, _: &str) -> Result<String, TermError> { unimplemented!() }
    /// #     fn arrange(&self, _: &str, _: Intent, _: &str) -> Result<ArrangeOutcome, TermError> { unimplemented!() }
    /// #     fn name(&self, _: &str, _: &str, _: &str, _: NamingMode) -> Result<(), TermError> { unimplemented!() }
    /// }
    /// ```
    fn despawn(&self, id: &str) -> Result<(), TermError>;

    /// The pane's text, verbatim; with `lines`, that many lines of history too.
    ///
    /// ```no_run
    /// use agmsg_guest_sdk::process;
    /// use agmsg_guest_sdk::terminal::{TermError, TerminalDriver};
    /// # use agmsg_guest_sdk::terminal::*;
    /// # fn pane(id: &str) -> Result<&str, TermError> { Ok(id) }
    ///
    /// struct Tmux;
    ///
    /// impl TerminalDriver for Tmux {
    ///     fn peek(&self, id: &str, lines: Option<u32>) -> Result<String, TermError> {
    ///         let start = lines.map(|n| format!("-{n}"));
    ///         let mut args = vec!["capture-pane", "-p", "-t", pane(id)?];
    ///         if let Some(start) = &start {
    ///             args.extend(["-S", start.as_str()]);
    ///         }
    ///         let out = process::run("tmux", &args).map_err(|e| TermError::unreachable(format!("{e:?}")))?;
    ///         if out.success() { Ok(out.stdout_text()) } else { Err(TermError::failed(out.stderr_text())) }
    ///     }
    /// #     fn check(&self) -> Result<(), TermError> { unimplemented!() }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn detect(&self, _: &str) -> Detection { unimplemented!() }
    /// #     fn spawn(&self, _: &str, _: &str, _: SpawnTarget, _: &[String]) -> Result<String, TermError> { unimplemented!() }
    /// #     fn despawn(&self, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn poke(&self, _: &str, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn pane_state(&self, _: &str) -> Result<PanePresence, TermError> { unimplemented!() }
    /// #     fn where_is(&self, _: &str) -> Result<String, TermError> { unimplemented!() }
    /// #     fn arrange(&self, _: &str, _: Intent, _: &str) -> Result<ArrangeOutcome, TermError> { unimplemented!() }
    /// #     fn name(&self, _: &str, _: &str, _: &str, _: NamingMode) -> Result<(), TermError> { unimplemented!() }
    /// }
    /// ```
    fn peek(&self, id: &str, lines: Option<u32>) -> Result<String, TermError>;

    /// Type `text` into the pane and submit it (agmsg's way of waking an agent).
    ///
    /// Type the text literally (never as key names), then submit it with a separate Enter.
    ///
    /// ```no_run
    /// use agmsg_guest_sdk::process;
    /// use agmsg_guest_sdk::terminal::{TermError, TerminalDriver};
    /// # use agmsg_guest_sdk::terminal::*;
    /// # fn pane(id: &str) -> Result<&str, TermError> { Ok(id) }
    ///
    /// struct Tmux;
    ///
    /// fn tmux(args: &[&str]) -> Result<(), TermError> {
    ///     let out = process::run("tmux", args).map_err(|e| TermError::unreachable(format!("{e:?}")))?;
    ///     if out.success() { Ok(()) } else { Err(TermError::failed(out.stderr_text())) }
    /// }
    ///
    /// impl TerminalDriver for Tmux {
    ///     fn poke(&self, id: &str, text: &str) -> Result<(), TermError> {
    ///         let id = pane(id)?;
    ///         tmux(&["send-keys", "-l", "-t", id, "--", text])?;
    ///         tmux(&["send-keys", "-t", id, "Enter"])
    ///     }
    /// #     fn check(&self) -> Result<(), TermError> { unimplemented!() }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn detect(&self, _: &str) -> Detection { unimplemented!() }
    /// #     fn spawn(&self, _: &str, _: &str, _: SpawnTarget, _: &[String]) -> Result<String, TermError> { unimplemented!() }
    /// #     fn despawn(&self, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn peek(&self, _: &str, _: Option<u32>) -> Result<String, TermError> { unimplemented!() }
    /// #     fn pane_state(&self, _: &str) -> Result<PanePresence, TermError> { unimplemented!() }
    /// #     fn where_is(&self, _: &str) -> Result<String, TermError> { unimplemented!() }
    /// #     fn arrange(&self, _: &str, _: Intent, _: &str) -> Result<ArrangeOutcome, TermError> { unimplemented!() }
    /// #     fn name(&self, _: &str, _: &str, _: &str, _: NamingMode) -> Result<(), TermError> { unimplemented!() }
    /// }
    /// ```
    fn poke(&self, id: &str, text: &str) -> Result<(), TermError>;

    /// Whether the pane still exists.
    ///
    /// `Gone` only when the terminal positively answered so: callers delete placement records on it.
    /// An answer that cannot be trusted (a cut listing, a server that did not answer) is `Unknown` or
    /// [`TermError::Unreachable`].
    ///
    /// ```no_run
    /// use agmsg_guest_sdk::process;
    /// use agmsg_guest_sdk::terminal::{PanePresence, TermError, TerminalDriver};
    /// # use agmsg_guest_sdk::terminal::*;
    /// # fn pane(id: &str) -> Result<&str, TermError> { Ok(id) }
    ///
    /// struct Tmux;
    ///
    /// impl TerminalDriver for Tmux {
    ///     fn pane_state(&self, id: &str) -> Result<PanePresence, TermError> {
    ///         let id = pane(id)?;
    ///         let out = process::run("tmux", &["list-panes", "-a", "-F", "#{pane_id}"])
    ///             .map_err(|e| TermError::unreachable(format!("{e:?}")))?;
    ///         if !out.success() || out.truncated {
    ///             return Ok(PanePresence::Unknown); // no complete listing, no verdict
    ///         }
    ///         let listed = out.stdout_text().lines().any(|line| line == id);
    ///         Ok(if listed { PanePresence::Present } else { PanePresence::Gone })
    ///     }
    /// #     fn check(&self) -> Result<(), TermError> { unimplemented!() }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn detect(&self, _: &str) -> Detection { unimplemented!() }
    /// #     fn spawn(&self, _: &str, _: &str, _: SpawnTarget, _: &[String]) -> Result<String, TermError> { unimplemented!() }
    /// #     fn despawn(&self, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn peek(&self, _: &str, _: Option<u32>) -> Result<String, TermError> { unimplemented!() }
    /// #     fn poke(&self, _: &str, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn where_is(&self, _: &str) -> Result<String, TermError> { unimplemented!() }
    /// #     fn arrange(&self, _: &str, _: Intent, _: &str) -> Result<ArrangeOutcome, TermError> { unimplemented!() }
    /// #     fn name(&self, _: &str, _: &str, _: &str, _: NamingMode) -> Result<(), TermError> { unimplemented!() }
    /// }
    /// ```
    fn pane_state(&self, id: &str) -> Result<PanePresence, TermError>;

    /// agmsg's `where` op (a Rust keyword): the id of the container holding `id`, such as the window of
    /// a pane.
    ///
    /// ```
    /// use agmsg_guest_sdk::terminal::{TermError, TerminalDriver};
    /// # use agmsg_guest_sdk::terminal::*;
    ///
    /// /// A terminal whose ids are `<window>.<pane>`: the container is in the id itself.
    /// struct Tiles;
    ///
    /// impl TerminalDriver for Tiles {
    ///     fn where_is(&self, id: &str) -> Result<String, TermError> {
    ///         match id.split_once('.') {
    ///             Some((window, pane)) if !window.is_empty() && !pane.is_empty() => Ok(window.to_owned()),
    ///             _ => Err(TermError::unsupported(format!("not a tiles id: {id:?}"))),
    ///         }
    ///     }
    /// #     fn check(&self) -> Result<(), TermError> { unimplemented!() }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn detect(&self, _: &str) -> Detection { unimplemented!() }
    /// #     fn spawn(&self, _: &str, _: &str, _: SpawnTarget, _: &[String]) -> Result<String, TermError> { unimplemented!() }
    /// #     fn despawn(&self, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn peek(&self, _: &str, _: Option<u32>) -> Result<String, TermError> { unimplemented!() }
    /// #     fn poke(&self, _: &str, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn pane_state(&self, _: &str) -> Result<PanePresence, TermError> { unimplemented!() }
    /// #     fn arrange(&self, _: &str, _: Intent, _: &str) -> Result<ArrangeOutcome, TermError> { unimplemented!() }
    /// #     fn name(&self, _: &str, _: &str, _: &str, _: NamingMode) -> Result<(), TermError> { unimplemented!() }
    /// }
    ///
    /// assert_eq!(Tiles.where_is("w2.p5").ok().as_deref(), Some("w2"));
    /// ```
    fn where_is(&self, id: &str) -> Result<String, TermError>;

    /// Move the pane `source` relative to the pane `target` as `intent` says.
    ///
    /// Answer `Unchanged` when it already is where the intent wants it, so that repeating an arrange
    /// is harmless.
    ///
    /// ```
    /// use agmsg_guest_sdk::terminal::{ArrangeOutcome, Intent, TermError, TerminalDriver};
    /// # use agmsg_guest_sdk::terminal::*;
    ///
    /// /// A terminal that can only swap panes.
    /// struct SwapOnly;
    ///
    /// impl TerminalDriver for SwapOnly {
    ///     fn arrange(&self, source: &str, intent: Intent, target: &str) -> Result<ArrangeOutcome, TermError> {
    ///         match intent {
    ///             Intent::Swap if source == target => Ok(ArrangeOutcome::Unchanged),
    ///             Intent::Swap => {
    ///                 // ... ask the terminal to swap them ...
    ///                 Ok(ArrangeOutcome::Moved)
    ///             }
    ///             Intent::PlaceBelow | Intent::PlaceRight => Err(TermError::unsupported("this terminal can only swap panes")),
    ///         }
    ///     }
    /// #     fn check(&self) -> Result<(), TermError> { unimplemented!() }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn detect(&self, _: &str) -> Detection { unimplemented!() }
    /// #     fn spawn(&self, _: &str, _: &str, _: SpawnTarget, _: &[String]) -> Result<String, TermError> { unimplemented!() }
    /// #     fn despawn(&self, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn peek(&self, _: &str, _: Option<u32>) -> Result<String, TermError> { unimplemented!() }
    /// #     fn poke(&self, _: &str, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn pane_state(&self, _: &str) -> Result<PanePresence, TermError> { unimplemented!() }
    /// #     fn where_is(&self, _: &str) -> Result<String, TermError> { unimplemented!() }
    /// #     fn name(&self, _: &str, _: &str, _: &str, _: NamingMode) -> Result<(), TermError> { unimplemented!() }
    /// }
    ///
    /// assert!(matches!(SwapOnly.arrange("%1", Intent::Swap, "%1"), Ok(ArrangeOutcome::Unchanged)));
    /// ```
    fn arrange(&self, source: &str, intent: Intent, target: &str) -> Result<ArrangeOutcome, TermError>;

    /// Mark the pane as `agent` of `team`: set the key agmsg finds the member's pane by, and with
    /// [`NamingMode::LabelAndKey`] also the label the user sees (a window name, a pane title).
    ///
    /// `team` and `agent` are checked names.
    ///
    /// ```no_run
    /// use agmsg_guest_sdk::process;
    /// use agmsg_guest_sdk::terminal::{NamingMode, TermError, TerminalDriver};
    /// # use agmsg_guest_sdk::terminal::*;
    /// # fn pane(id: &str) -> Result<&str, TermError> { Ok(id) }
    ///
    /// struct Tmux;
    ///
    /// impl TerminalDriver for Tmux {
    ///     fn name(&self, id: &str, team: &str, agent: &str, mode: NamingMode) -> Result<(), TermError> {
    ///         let id = pane(id)?;
    ///         let label = format!("{team}:{agent}");
    ///         let run = |args: &[&str]| process::run("tmux", args).map_err(|e| TermError::unreachable(format!("{e:?}")));
    ///         if !run(&["set-option", "-p", "-t", id, "@agmsg_agent", &label])?.success() {
    ///             return Err(TermError::failed(format!("could not set the key of {id}")));
    ///         }
    ///         if mode == NamingMode::LabelAndKey {
    ///             run(&["select-pane", "-t", id, "-T", &label])?; // cosmetic: its failure is ignored
    ///         }
    ///         Ok(())
    ///     }
    /// #     fn check(&self) -> Result<(), TermError> { unimplemented!() }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn detect(&self, _: &str) -> Detection { unimplemented!() }
    /// #     fn spawn(&self, _: &str, _: &str, _: SpawnTarget, _: &[String]) -> Result<String, TermError> { unimplemented!() }
    /// #     fn despawn(&self, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn peek(&self, _: &str, _: Option<u32>) -> Result<String, TermError> { unimplemented!() }
    /// #     fn poke(&self, _: &str, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn pane_state(&self, _: &str) -> Result<PanePresence, TermError> { unimplemented!() }
    /// #     fn where_is(&self, _: &str) -> Result<String, TermError> { unimplemented!() }
    /// #     fn arrange(&self, _: &str, _: Intent, _: &str) -> Result<ArrangeOutcome, TermError> { unimplemented!() }
    /// }
    /// ```
    fn name(&self, id: &str, team: &str, agent: &str, mode: NamingMode) -> Result<(), TermError>;

    /// Optional: whether `capability` (`spawn`, `peek`, ...) is available, for `id` if given.
    ///
    /// It may narrow the manifest's `capabilities=` for one id, never widen them. Unsupported (the
    /// default), the host answers from the manifest.
    ///
    /// ```
    /// use agmsg_guest_sdk::terminal::{Answer, TermError, TerminalDriver};
    /// # use agmsg_guest_sdk::terminal::*;
    ///
    /// /// Can spawn windows, but they have no handle to peek or poke through.
    /// struct Launcher;
    ///
    /// impl TerminalDriver for Launcher {
    ///     fn capability(&self, capability: &str, _id: Option<&str>) -> Result<Answer, TermError> {
    ///         Ok(if capability == "spawn" { Answer::Yes } else { Answer::No })
    ///     }
    /// #     fn check(&self) -> Result<(), TermError> { unimplemented!() }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn detect(&self, _: &str) -> Detection { unimplemented!() }
    /// #     fn spawn(&self, _: &str, _: &str, _: SpawnTarget, _: &[String]) -> Result<String, TermError> { unimplemented!() }
    /// #     fn despawn(&self, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn peek(&self, _: &str, _: Option<u32>) -> Result<String, TermError> { unimplemented!() }
    /// #     fn poke(&self, _: &str, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn pane_state(&self, _: &str) -> Result<PanePresence, TermError> { unimplemented!() }
    /// #     fn where_is(&self, _: &str) -> Result<String, TermError> { unimplemented!() }
    /// #     fn arrange(&self, _: &str, _: Intent, _: &str) -> Result<ArrangeOutcome, TermError> { unimplemented!() }
    /// #     fn name(&self, _: &str, _: &str, _: &str, _: NamingMode) -> Result<(), TermError> { unimplemented!() }
    /// }
    ///
    /// assert_eq!(Launcher.capability("peek", None).ok(), Some(Answer::No));
    /// ```
    fn capability(&self, _capability: &str, _id: Option<&str>) -> Result<Answer, TermError> {
        not_implemented("capability")
    }

    /// Optional: one TAB-separated record of what the pane shows about its member, for agmsg's team
    /// views: `<activity>\t<label>\t<key>\t<title>`. A field the terminal cannot give is
    /// `<n/a|absent|unknown>:<reason>`.
    ///
    /// ```
    /// use agmsg_guest_sdk::terminal::{TermError, TerminalDriver};
    /// # use agmsg_guest_sdk::terminal::*;
    /// # fn key_and_title(_: &str) -> Result<(String, String), TermError> { Ok(("dev:bob".into(), "bob".into())) }
    ///
    /// struct Tmux;
    ///
    /// impl TerminalDriver for Tmux {
    ///     fn team_observe(&self, id: &str) -> Result<String, TermError> {
    ///         let (key, title) = key_and_title(id)?; // read from the pane
    ///         let key = if key.is_empty() { "absent:agent_key_unset".to_owned() } else { key };
    ///         Ok(format!("n/a:unsupported\tn/a:no_independent_field\t{key}\t{title}"))
    ///     }
    /// #     fn check(&self) -> Result<(), TermError> { unimplemented!() }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn detect(&self, _: &str) -> Detection { unimplemented!() }
    /// #     fn spawn(&self, _: &str, _: &str, _: SpawnTarget, _: &[String]) -> Result<String, TermError> { unimplemented!() }
    /// #     fn despawn(&self, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn peek(&self, _: &str, _: Option<u32>) -> Result<String, TermError> { unimplemented!() }
    /// #     fn poke(&self, _: &str, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn pane_state(&self, _: &str) -> Result<PanePresence, TermError> { unimplemented!() }
    /// #     fn where_is(&self, _: &str) -> Result<String, TermError> { unimplemented!() }
    /// #     fn arrange(&self, _: &str, _: Intent, _: &str) -> Result<ArrangeOutcome, TermError> { unimplemented!() }
    /// #     fn name(&self, _: &str, _: &str, _: &str, _: NamingMode) -> Result<(), TermError> { unimplemented!() }
    /// }
    ///
    /// assert_eq!(Tmux.team_observe("%1")?.split('\t').count(), 4);
    /// # Ok::<(), TermError>(())
    /// ```
    fn team_observe(&self, _id: &str) -> Result<String, TermError> {
        not_implemented("team-observe")
    }

    /// Optional: whether the pane is ready for input from the `expected` agent CLI, that is, that
    /// program (not a shell, not a pager) holds the pane's foreground.
    ///
    /// `No` makes agmsg skip the pane, so anything the driver could not read is `Unknown`.
    ///
    /// ```
    /// use agmsg_guest_sdk::terminal::{Answer, TermError, TerminalDriver};
    /// # use agmsg_guest_sdk::terminal::*;
    /// # fn foreground_command(_: &str) -> Option<String> { Some("codex --full-auto".into()) }
    ///
    /// struct Tmux;
    ///
    /// impl TerminalDriver for Tmux {
    ///     fn team_input_ready(&self, id: &str, expected: &str) -> Result<Answer, TermError> {
    ///         Ok(match foreground_command(id) {
    ///             None => Answer::Unknown,
    ///             Some(argv) if argv.split_whitespace().next() == Some(expected) => Answer::Yes,
    ///             Some(_) => Answer::No,
    ///         })
    ///     }
    /// #     fn check(&self) -> Result<(), TermError> { unimplemented!() }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn detect(&self, _: &str) -> Detection { unimplemented!() }
    /// #     fn spawn(&self, _: &str, _: &str, _: SpawnTarget, _: &[String]) -> Result<String, TermError> { unimplemented!() }
    /// #     fn despawn(&self, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn peek(&self, _: &str, _: Option<u32>) -> Result<String, TermError> { unimplemented!() }
    /// #     fn poke(&self, _: &str, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn pane_state(&self, _: &str) -> Result<PanePresence, TermError> { unimplemented!() }
    /// #     fn where_is(&self, _: &str) -> Result<String, TermError> { unimplemented!() }
    /// #     fn arrange(&self, _: &str, _: Intent, _: &str) -> Result<ArrangeOutcome, TermError> { unimplemented!() }
    /// #     fn name(&self, _: &str, _: &str, _: &str, _: NamingMode) -> Result<(), TermError> { unimplemented!() }
    /// }
    ///
    /// assert_eq!(Tmux.team_input_ready("%1", "codex")?, Answer::Yes);
    /// # Ok::<(), TermError>(())
    /// ```
    fn team_input_ready(&self, _id: &str, _expected: &str) -> Result<Answer, TermError> {
        not_implemented("team-input-ready")
    }

    /// Optional: the ids of every pane whose key (set by [`name`](TerminalDriver::name)) is exactly
    /// `label`. A listing that may be incomplete is an error, not a shorter list: callers rely on
    /// "exactly one hit".
    ///
    /// ```
    /// use agmsg_guest_sdk::terminal::{TermError, TerminalDriver};
    /// # use agmsg_guest_sdk::terminal::*;
    /// # fn keyed_panes() -> Result<Vec<(String, String)>, TermError> { Ok(vec![("%1".into(), "dev:bob".into())]) }
    ///
    /// struct Tmux;
    ///
    /// impl TerminalDriver for Tmux {
    ///     fn find_by_label(&self, label: &str) -> Result<Vec<String>, TermError> {
    ///         Ok(keyed_panes()? // (pane id, key) for every pane
    ///             .into_iter()
    ///             .filter(|(_, key)| key == label)
    ///             .map(|(id, _)| id)
    ///             .collect())
    ///     }
    /// #     fn check(&self) -> Result<(), TermError> { unimplemented!() }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn detect(&self, _: &str) -> Detection { unimplemented!() }
    /// #     fn spawn(&self, _: &str, _: &str, _: SpawnTarget, _: &[String]) -> Result<String, TermError> { unimplemented!() }
    /// #     fn despawn(&self, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn peek(&self, _: &str, _: Option<u32>) -> Result<String, TermError> { unimplemented!() }
    /// #     fn poke(&self, _: &str, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn pane_state(&self, _: &str) -> Result<PanePresence, TermError> { unimplemented!() }
    /// #     fn where_is(&self, _: &str) -> Result<String, TermError> { unimplemented!() }
    /// #     fn arrange(&self, _: &str, _: Intent, _: &str) -> Result<ArrangeOutcome, TermError> { unimplemented!() }
    /// #     fn name(&self, _: &str, _: &str, _: &str, _: NamingMode) -> Result<(), TermError> { unimplemented!() }
    /// }
    ///
    /// assert_eq!(Tmux.find_by_label("dev:bob")?, ["%1"]);
    /// # Ok::<(), TermError>(())
    /// ```
    fn find_by_label(&self, _label: &str) -> Result<Vec<String>, TermError> {
        not_implemented("find-by-label")
    }

    /// Optional: the key one pane carries, empty when it carries none: the confirming half of
    /// [`find_by_label`](TerminalDriver::find_by_label).
    ///
    /// ```
    /// use agmsg_guest_sdk::terminal::{TermError, TerminalDriver};
    /// # use agmsg_guest_sdk::terminal::*;
    /// # fn pane_option(_: &str, _: &str) -> Result<Option<String>, TermError> { Ok(None) }
    ///
    /// struct Tmux;
    ///
    /// impl TerminalDriver for Tmux {
    ///     fn label_of(&self, id: &str) -> Result<String, TermError> {
    ///         let key = pane_option(id, "@agmsg_agent")?.unwrap_or_default();
    ///         // A real name holds no control character: such a key can match no member.
    ///         if key.chars().any(char::is_control) {
    ///             return Err(TermError::unreachable("the pane's key holds control characters"));
    ///         }
    ///         Ok(key)
    ///     }
    /// #     fn check(&self) -> Result<(), TermError> { unimplemented!() }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn detect(&self, _: &str) -> Detection { unimplemented!() }
    /// #     fn spawn(&self, _: &str, _: &str, _: SpawnTarget, _: &[String]) -> Result<String, TermError> { unimplemented!() }
    /// #     fn despawn(&self, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn peek(&self, _: &str, _: Option<u32>) -> Result<String, TermError> { unimplemented!() }
    /// #     fn poke(&self, _: &str, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn pane_state(&self, _: &str) -> Result<PanePresence, TermError> { unimplemented!() }
    /// #     fn where_is(&self, _: &str) -> Result<String, TermError> { unimplemented!() }
    /// #     fn arrange(&self, _: &str, _: Intent, _: &str) -> Result<ArrangeOutcome, TermError> { unimplemented!() }
    /// #     fn name(&self, _: &str, _: &str, _: &str, _: NamingMode) -> Result<(), TermError> { unimplemented!() }
    /// }
    ///
    /// assert_eq!(Tmux.label_of("%1")?, "");
    /// # Ok::<(), TermError>(())
    /// ```
    fn label_of(&self, _id: &str) -> Result<String, TermError> {
        not_implemented("label-of")
    }

    /// Optional: whether `id` is well-formed for this driver. The grammar alone decides: it runs
    /// nothing and says nothing about whether the pane exists.
    ///
    /// ```
    /// use agmsg_guest_sdk::terminal::{TermError, TerminalDriver};
    /// # use agmsg_guest_sdk::terminal::*;
    ///
    /// struct Tmux;
    ///
    /// impl TerminalDriver for Tmux {
    ///     fn id_ok(&self, id: &str) -> Result<bool, TermError> {
    ///         let digits = id.strip_prefix('%').unwrap_or("");
    ///         Ok(!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
    ///     }
    /// #     fn check(&self) -> Result<(), TermError> { unimplemented!() }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn detect(&self, _: &str) -> Detection { unimplemented!() }
    /// #     fn spawn(&self, _: &str, _: &str, _: SpawnTarget, _: &[String]) -> Result<String, TermError> { unimplemented!() }
    /// #     fn despawn(&self, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn peek(&self, _: &str, _: Option<u32>) -> Result<String, TermError> { unimplemented!() }
    /// #     fn poke(&self, _: &str, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn pane_state(&self, _: &str) -> Result<PanePresence, TermError> { unimplemented!() }
    /// #     fn where_is(&self, _: &str) -> Result<String, TermError> { unimplemented!() }
    /// #     fn arrange(&self, _: &str, _: Intent, _: &str) -> Result<ArrangeOutcome, TermError> { unimplemented!() }
    /// #     fn name(&self, _: &str, _: &str, _: &str, _: NamingMode) -> Result<(), TermError> { unimplemented!() }
    /// }
    ///
    /// assert_eq!(Tmux.id_ok("%12")?, true);
    /// assert_eq!(Tmux.id_ok("%9;kill")?, false);
    /// # Ok::<(), TermError>(())
    /// ```
    fn id_ok(&self, _id: &str) -> Result<bool, TermError> {
        not_implemented("id-ok")
    }

    /// Optional: records about the processes running in the pane, for the caller to classify (the op
    /// observes, never judges), such as `<pane>\t<pid>` with the pid of the process the pane runs.
    ///
    /// ```
    /// use agmsg_guest_sdk::terminal::{TermError, TerminalDriver};
    /// # use agmsg_guest_sdk::terminal::*;
    /// # fn pane_pid(_: &str) -> Result<u32, TermError> { Ok(4242) }
    ///
    /// struct Tmux;
    ///
    /// impl TerminalDriver for Tmux {
    ///     fn pane_process_observe(&self, id: &str) -> Result<Vec<String>, TermError> {
    ///         Ok(vec![format!("{id}\t{}", pane_pid(id)?)])
    ///     }
    /// #     fn check(&self) -> Result<(), TermError> { unimplemented!() }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn detect(&self, _: &str) -> Detection { unimplemented!() }
    /// #     fn spawn(&self, _: &str, _: &str, _: SpawnTarget, _: &[String]) -> Result<String, TermError> { unimplemented!() }
    /// #     fn despawn(&self, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn peek(&self, _: &str, _: Option<u32>) -> Result<String, TermError> { unimplemented!() }
    /// #     fn poke(&self, _: &str, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn pane_state(&self, _: &str) -> Result<PanePresence, TermError> { unimplemented!() }
    /// #     fn where_is(&self, _: &str) -> Result<String, TermError> { unimplemented!() }
    /// #     fn arrange(&self, _: &str, _: Intent, _: &str) -> Result<ArrangeOutcome, TermError> { unimplemented!() }
    /// #     fn name(&self, _: &str, _: &str, _: &str, _: NamingMode) -> Result<(), TermError> { unimplemented!() }
    /// }
    ///
    /// assert_eq!(Tmux.pane_process_observe("%1")?, ["%1\t4242"]);
    /// # Ok::<(), TermError>(())
    /// ```
    fn pane_process_observe(&self, _id: &str) -> Result<Vec<String>, TermError> {
        not_implemented("pane-process-observe")
    }

    /// Optional: every pane the terminal has, one `<instance>\t<pane>` record each. When the listing
    /// cannot be trusted, answer the hole `!\t<instance>` instead of a shorter list.
    ///
    /// ```
    /// use agmsg_guest_sdk::terminal::{TermError, TerminalDriver};
    /// # use agmsg_guest_sdk::terminal::*;
    /// # fn listing() -> Option<Vec<String>> { None }
    ///
    /// struct Single;
    ///
    /// impl TerminalDriver for Single {
    ///     fn enumerate_panes(&self) -> Result<Vec<String>, TermError> {
    ///         Ok(match listing() {
    ///             Some(panes) => panes.into_iter().map(|p| format!("local\t{p}")).collect(),
    ///             None => vec!["!\tlocal".to_owned()], // unreadable: a named hole
    ///         })
    ///     }
    /// #     fn check(&self) -> Result<(), TermError> { unimplemented!() }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn detect(&self, _: &str) -> Detection { unimplemented!() }
    /// #     fn spawn(&self, _: &str, _: &str, _: SpawnTarget, _: &[String]) -> Result<String, TermError> { unimplemented!() }
    /// #     fn despawn(&self, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn peek(&self, _: &str, _: Option<u32>) -> Result<String, TermError> { unimplemented!() }
    /// #     fn poke(&self, _: &str, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn pane_state(&self, _: &str) -> Result<PanePresence, TermError> { unimplemented!() }
    /// #     fn where_is(&self, _: &str) -> Result<String, TermError> { unimplemented!() }
    /// #     fn arrange(&self, _: &str, _: Intent, _: &str) -> Result<ArrangeOutcome, TermError> { unimplemented!() }
    /// #     fn name(&self, _: &str, _: &str, _: &str, _: NamingMode) -> Result<(), TermError> { unimplemented!() }
    /// }
    ///
    /// assert_eq!(Single.enumerate_panes()?, ["!\tlocal"]);
    /// # Ok::<(), TermError>(())
    /// ```
    fn enumerate_panes(&self) -> Result<Vec<String>, TermError> {
        not_implemented("enumerate-panes")
    }

    /// Optional: `<instance>\t<token>`, where the token identifies the pane's current occupant, so that
    /// a caller can check just before writing to a pane that it is still the one it saw (a pane closed
    /// and recreated under the same id gives a different token). `seat_pid` is passed on from the
    /// caller when it gives one; the bundled drivers ignore it.
    ///
    /// ```
    /// use agmsg_guest_sdk::terminal::{TermError, TerminalDriver};
    /// # use agmsg_guest_sdk::terminal::*;
    /// # fn pane_pid(_: &str) -> Result<u32, TermError> { Ok(4242) }
    ///
    /// struct Tmux;
    ///
    /// impl TerminalDriver for Tmux {
    ///     fn fence(&self, id: &str, _seat_pid: Option<&str>) -> Result<String, TermError> {
    ///         Ok(format!("default\tpane_pid={}", pane_pid(id)?))
    ///     }
    /// #     fn check(&self) -> Result<(), TermError> { unimplemented!() }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn detect(&self, _: &str) -> Detection { unimplemented!() }
    /// #     fn spawn(&self, _: &str, _: &str, _: SpawnTarget, _: &[String]) -> Result<String, TermError> { unimplemented!() }
    /// #     fn despawn(&self, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn peek(&self, _: &str, _: Option<u32>) -> Result<String, TermError> { unimplemented!() }
    /// #     fn poke(&self, _: &str, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn pane_state(&self, _: &str) -> Result<PanePresence, TermError> { unimplemented!() }
    /// #     fn where_is(&self, _: &str) -> Result<String, TermError> { unimplemented!() }
    /// #     fn arrange(&self, _: &str, _: Intent, _: &str) -> Result<ArrangeOutcome, TermError> { unimplemented!() }
    /// #     fn name(&self, _: &str, _: &str, _: &str, _: NamingMode) -> Result<(), TermError> { unimplemented!() }
    /// }
    ///
    /// assert_eq!(Tmux.fence("%1", None)?, "default\tpane_pid=4242");
    /// # Ok::<(), TermError>(())
    /// ```
    fn fence(&self, _id: &str, _seat_pid: Option<&str>) -> Result<String, TermError> {
        not_implemented("fence")
    }

    /// Optional: whether the pane has the terminal's focus.
    ///
    /// ```no_run
    /// use agmsg_guest_sdk::process;
    /// use agmsg_guest_sdk::terminal::{TermError, TerminalDriver};
    /// # use agmsg_guest_sdk::terminal::*;
    ///
    /// struct Tmux;
    ///
    /// impl TerminalDriver for Tmux {
    ///     fn pane_focused(&self, id: &str) -> Result<bool, TermError> {
    ///         let out = process::run("tmux", &["display-message", "-p", "-t", id, "#{pane_active}"])
    ///             .map_err(|e| TermError::unreachable(format!("{e:?}")))?;
    ///         Ok(out.success() && out.stdout_text().trim_end() == "1")
    ///     }
    /// #     fn check(&self) -> Result<(), TermError> { unimplemented!() }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn detect(&self, _: &str) -> Detection { unimplemented!() }
    /// #     fn spawn(&self, _: &str, _: &str, _: SpawnTarget, _: &[String]) -> Result<String, TermError> { unimplemented!() }
    /// #     fn despawn(&self, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn peek(&self, _: &str, _: Option<u32>) -> Result<String, TermError> { unimplemented!() }
    /// #     fn poke(&self, _: &str, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn pane_state(&self, _: &str) -> Result<PanePresence, TermError> { unimplemented!() }
    /// #     fn where_is(&self, _: &str) -> Result<String, TermError> { unimplemented!() }
    /// #     fn arrange(&self, _: &str, _: Intent, _: &str) -> Result<ArrangeOutcome, TermError> { unimplemented!() }
    /// #     fn name(&self, _: &str, _: &str, _: &str, _: NamingMode) -> Result<(), TermError> { unimplemented!() }
    /// }
    /// ```
    fn pane_focused(&self, _id: &str) -> Result<bool, TermError> {
        not_implemented("pane-focused")
    }

    /// Optional: clear what is typed on the pane's input line, without submitting it.
    ///
    /// ```no_run
    /// use agmsg_guest_sdk::process;
    /// use agmsg_guest_sdk::terminal::{TermError, TerminalDriver};
    /// # use agmsg_guest_sdk::terminal::*;
    ///
    /// struct Tmux;
    ///
    /// impl TerminalDriver for Tmux {
    ///     fn input_clear(&self, id: &str) -> Result<(), TermError> {
    ///         let out = process::run("tmux", &["send-keys", "-t", id, "C-u"])
    ///             .map_err(|e| TermError::unreachable(format!("{e:?}")))?;
    ///         if out.success() { Ok(()) } else { Err(TermError::failed(out.stderr_text())) }
    ///     }
    /// #     fn check(&self) -> Result<(), TermError> { unimplemented!() }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn detect(&self, _: &str) -> Detection { unimplemented!() }
    /// #     fn spawn(&self, _: &str, _: &str, _: SpawnTarget, _: &[String]) -> Result<String, TermError> { unimplemented!() }
    /// #     fn despawn(&self, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn peek(&self, _: &str, _: Option<u32>) -> Result<String, TermError> { unimplemented!() }
    /// #     fn poke(&self, _: &str, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn pane_state(&self, _: &str) -> Result<PanePresence, TermError> { unimplemented!() }
    /// #     fn where_is(&self, _: &str) -> Result<String, TermError> { unimplemented!() }
    /// #     fn arrange(&self, _: &str, _: Intent, _: &str) -> Result<ArrangeOutcome, TermError> { unimplemented!() }
    /// #     fn name(&self, _: &str, _: &str, _: &str, _: NamingMode) -> Result<(), TermError> { unimplemented!() }
    /// }
    /// ```
    fn input_clear(&self, _id: &str) -> Result<(), TermError> {
        not_implemented("input-clear")
    }

    /// Optional: type `text` into the pane without submitting it (unlike [`poke`](TerminalDriver::poke)).
    ///
    /// ```no_run
    /// use agmsg_guest_sdk::process;
    /// use agmsg_guest_sdk::terminal::{TermError, TerminalDriver};
    /// # use agmsg_guest_sdk::terminal::*;
    ///
    /// struct Tmux;
    ///
    /// impl TerminalDriver for Tmux {
    ///     fn input_type(&self, id: &str, text: &str) -> Result<(), TermError> {
    ///         let out = process::run("tmux", &["send-keys", "-l", "-t", id, "--", text])
    ///             .map_err(|e| TermError::unreachable(format!("{e:?}")))?;
    ///         if out.success() { Ok(()) } else { Err(TermError::failed(out.stderr_text())) }
    ///     }
    /// #     fn check(&self) -> Result<(), TermError> { unimplemented!() }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn detect(&self, _: &str) -> Detection { unimplemented!() }
    /// #     fn spawn(&self, _: &str, _: &str, _: SpawnTarget, _: &[String]) -> Result<String, TermError> { unimplemented!() }
    /// #     fn despawn(&self, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn peek(&self, _: &str, _: Option<u32>) -> Result<String, TermError> { unimplemented!() }
    /// #     fn poke(&self, _: &str, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn pane_state(&self, _: &str) -> Result<PanePresence, TermError> { unimplemented!() }
    /// #     fn where_is(&self, _: &str) -> Result<String, TermError> { unimplemented!() }
    /// #     fn arrange(&self, _: &str, _: Intent, _: &str) -> Result<ArrangeOutcome, TermError> { unimplemented!() }
    /// #     fn name(&self, _: &str, _: &str, _: &str, _: NamingMode) -> Result<(), TermError> { unimplemented!() }
    /// }
    /// ```
    fn input_type(&self, _id: &str, _text: &str) -> Result<(), TermError> {
        not_implemented("input-type")
    }

    /// Optional: the key [`name`](TerminalDriver::name) gives the pane of `agent` of `team`, so that
    /// agmsg can search for it with [`find_by_label`](TerminalDriver::find_by_label). Both names are
    /// checked before the call.
    ///
    /// ```
    /// use agmsg_guest_sdk::terminal::{TermError, TerminalDriver};
    /// # use agmsg_guest_sdk::terminal::*;
    ///
    /// struct Tmux;
    ///
    /// impl TerminalDriver for Tmux {
    ///     fn expected_label(&self, team: &str, agent: &str) -> Result<String, TermError> {
    ///         Ok(format!("{team}:{agent}"))
    ///     }
    /// #     fn check(&self) -> Result<(), TermError> { unimplemented!() }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn detect(&self, _: &str) -> Detection { unimplemented!() }
    /// #     fn spawn(&self, _: &str, _: &str, _: SpawnTarget, _: &[String]) -> Result<String, TermError> { unimplemented!() }
    /// #     fn despawn(&self, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn peek(&self, _: &str, _: Option<u32>) -> Result<String, TermError> { unimplemented!() }
    /// #     fn poke(&self, _: &str, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn pane_state(&self, _: &str) -> Result<PanePresence, TermError> { unimplemented!() }
    /// #     fn where_is(&self, _: &str) -> Result<String, TermError> { unimplemented!() }
    /// #     fn arrange(&self, _: &str, _: Intent, _: &str) -> Result<ArrangeOutcome, TermError> { unimplemented!() }
    /// #     fn name(&self, _: &str, _: &str, _: &str, _: NamingMode) -> Result<(), TermError> { unimplemented!() }
    /// }
    ///
    /// assert_eq!(Tmux.expected_label("dev", "bob")?, "dev:bob");
    /// # Ok::<(), TermError>(())
    /// ```
    fn expected_label(&self, _team: &str, _agent: &str) -> Result<String, TermError> {
        not_implemented("expected-label")
    }

    /// Optional: which terminal instance a placement reference (`<terminal>:<id>`) points at, from the
    /// reference alone: `<instance>\t<pane>`, or `n/a:<reason>` when the id names no instance, or
    /// `unknown:<reason>` (for example `unknown:wrong_terminal`).
    ///
    /// ```
    /// use agmsg_guest_sdk::terminal::{TermError, TerminalDriver};
    /// # use agmsg_guest_sdk::terminal::*;
    ///
    /// /// One instance per machine, so every valid reference is to `local`.
    /// struct Single;
    ///
    /// impl TerminalDriver for Single {
    ///     fn instance_for_ref(&self, reference: &str) -> Result<String, TermError> {
    ///         Ok(match reference.split_once(':') {
    ///             Some(("single", pane)) if !pane.is_empty() => format!("local\t{pane}"),
    ///             Some(_) => "unknown:wrong_terminal".to_owned(),
    ///             None => "unknown:invalid_locator".to_owned(),
    ///         })
    ///     }
    /// #     fn check(&self) -> Result<(), TermError> { unimplemented!() }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn detect(&self, _: &str) -> Detection { unimplemented!() }
    /// #     fn spawn(&self, _: &str, _: &str, _: SpawnTarget, _: &[String]) -> Result<String, TermError> { unimplemented!() }
    /// #     fn despawn(&self, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn peek(&self, _: &str, _: Option<u32>) -> Result<String, TermError> { unimplemented!() }
    /// #     fn poke(&self, _: &str, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn pane_state(&self, _: &str) -> Result<PanePresence, TermError> { unimplemented!() }
    /// #     fn where_is(&self, _: &str) -> Result<String, TermError> { unimplemented!() }
    /// #     fn arrange(&self, _: &str, _: Intent, _: &str) -> Result<ArrangeOutcome, TermError> { unimplemented!() }
    /// #     fn name(&self, _: &str, _: &str, _: &str, _: NamingMode) -> Result<(), TermError> { unimplemented!() }
    /// }
    ///
    /// assert_eq!(Single.instance_for_ref("single:7")?, "local\t7");
    /// # Ok::<(), TermError>(())
    /// ```
    fn instance_for_ref(&self, _reference: &str) -> Result<String, TermError> {
        not_implemented("instance-for-ref")
    }

    /// Optional: split `id` into the terminal instance it lives in and the pane's id within that
    /// instance. An id that names no instance is [`TermError::Unsupported`].
    ///
    /// ```
    /// use agmsg_guest_sdk::terminal::{TermError, TerminalDriver};
    /// # use agmsg_guest_sdk::terminal::*;
    ///
    /// /// Ids are `<socket>:%N`.
    /// struct Tmux;
    ///
    /// impl TerminalDriver for Tmux {
    ///     fn id_split(&self, id: &str) -> Result<(String, String), TermError> {
    ///         match id.rsplit_once(':') {
    ///             Some((socket, pane)) if !socket.is_empty() && pane.starts_with('%') => {
    ///                 Ok((socket.to_owned(), pane.to_owned()))
    ///             }
    ///             _ => Err(TermError::unsupported(format!("{id:?} names no tmux server"))),
    ///         }
    ///     }
    /// #     fn check(&self) -> Result<(), TermError> { unimplemented!() }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn detect(&self, _: &str) -> Detection { unimplemented!() }
    /// #     fn spawn(&self, _: &str, _: &str, _: SpawnTarget, _: &[String]) -> Result<String, TermError> { unimplemented!() }
    /// #     fn despawn(&self, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn peek(&self, _: &str, _: Option<u32>) -> Result<String, TermError> { unimplemented!() }
    /// #     fn poke(&self, _: &str, _: &str) -> Result<(), TermError> { unimplemented!() }
    /// #     fn pane_state(&self, _: &str) -> Result<PanePresence, TermError> { unimplemented!() }
    /// #     fn where_is(&self, _: &str) -> Result<String, TermError> { unimplemented!() }
    /// #     fn arrange(&self, _: &str, _: Intent, _: &str) -> Result<ArrangeOutcome, TermError> { unimplemented!() }
    /// #     fn name(&self, _: &str, _: &str, _: &str, _: NamingMode) -> Result<(), TermError> { unimplemented!() }
    /// }
    ///
    /// let (socket, pane) = Tmux.id_split("/tmp/tmux-1000/default:%3")?;
    /// assert_eq!((socket.as_str(), pane.as_str()), ("/tmp/tmux-1000/default", "%3"));
    /// # Ok::<(), TermError>(())
    /// ```
    fn id_split(&self, _id: &str) -> Result<(String, String), TermError> {
        not_implemented("id-split")
    }
}

/// Register `$driver` (a type implementing [`TerminalDriver`] and `Default`) as this component's
/// terminal driver.
///
/// Call it once, at the top level of the driver crate. It generates the
/// component's exports, the `agmsg:terminal/driver` interface, in the driver crate: invoking this macro is
/// what makes the component a terminal driver, and nothing of the other axis is exported; each instance
/// creates its driver value with `Default::default()`.
///
/// ```rust,standalone_crate
/// use agmsg_guest_sdk::terminal::{TermError, TerminalDriver};
/// # use agmsg_guest_sdk::terminal::*;
///
/// #[derive(Default)]
/// struct MyTerminal;
///
/// impl TerminalDriver for MyTerminal {
///     fn check(&self) -> Result<(), TermError> {
///         Ok(())
///     }
///     // ... the other required ops
/// #     fn describe(&self) -> Description { unimplemented!() }
/// #     fn detect(&self, _: &str) -> Detection { unimplemented!() }
/// #     fn spawn(&self, _: &str, _: &str, _: SpawnTarget, _: &[String]) -> Result<String, TermError> { unimplemented!() }
/// #     fn despawn(&self, _: &str) -> Result<(), TermError> { unimplemented!() }
/// #     fn peek(&self, _: &str, _: Option<u32>) -> Result<String, TermError> { unimplemented!() }
/// #     fn poke(&self, _: &str, _: &str) -> Result<(), TermError> { unimplemented!() }
/// #     fn pane_state(&self, _: &str) -> Result<PanePresence, TermError> { unimplemented!() }
/// #     fn where_is(&self, _: &str) -> Result<String, TermError> { unimplemented!() }
/// #     fn arrange(&self, _: &str, _: Intent, _: &str) -> Result<ArrangeOutcome, TermError> { unimplemented!() }
/// #     fn name(&self, _: &str, _: &str, _: &str, _: NamingMode) -> Result<(), TermError> { unimplemented!() }
/// }
///
/// agmsg_guest_sdk::export_terminal_driver!(MyTerminal);
/// ```
#[macro_export]
macro_rules! export_terminal_driver {
    ($driver:ty) => {
        // The world's exports, expanded here in the driver crate: with them, and only with them, the
        // world's type information (its exports) reaches this component. A native build (a driver's unit
        // tests) is no component: it exports nothing, and only checks that `$driver` is a driver.
        const _: () = {
            type __AgmsgComponent = $crate::terminal::Component<$driver>;
            #[cfg(target_arch = "wasm32")]
    $crate::bindings::terminal::export!(__AgmsgComponent with_types_in $crate::bindings::terminal);
            #[cfg(not(target_arch = "wasm32"))]
            const _: fn() -> $crate::terminal::Description =
                <__AgmsgComponent as $crate::bindings::terminal::exports::agmsg::terminal::driver::Guest>::describe;
        };
    };
}

thread_local! {
    /// This instance's driver value, made by the first call.
    static DRIVER: std::cell::OnceCell<Box<dyn TerminalDriver>> = const { std::cell::OnceCell::new() };
}

fn with_driver<D: TerminalDriver + Default + 'static, T>(f: impl FnOnce(&dyn TerminalDriver) -> T) -> T {
    DRIVER.with(|driver| f(driver.get_or_init(|| Box::new(D::default())).as_ref()))
}

/// The exports of a component whose driver is `D`: what [`export_terminal_driver!`](crate::export_terminal_driver)
/// registers.
#[doc(hidden)]
pub struct Component<D>(std::marker::PhantomData<D>);

impl<D: TerminalDriver + Default + 'static> Guest for Component<D> {
    fn check() -> Result<(), TermError> {
        with_driver::<D, _>(|d| d.check())
    }
    fn describe() -> Description {
        with_driver::<D, _>(|d| d.describe())
    }
    fn detect(session_id: String) -> Detection {
        with_driver::<D, _>(|d| d.detect(&session_id))
    }
    fn spawn(name: String, project: String, target: SpawnTarget, boot: Vec<String>) -> Result<String, TermError> {
        with_driver::<D, _>(|d| d.spawn(&name, &project, target, &boot))
    }
    fn despawn(id: String) -> Result<(), TermError> {
        with_driver::<D, _>(|d| d.despawn(&id))
    }
    fn peek(id: String, lines: Option<u32>) -> Result<String, TermError> {
        with_driver::<D, _>(|d| d.peek(&id, lines))
    }
    fn poke(id: String, text: String) -> Result<(), TermError> {
        with_driver::<D, _>(|d| d.poke(&id, &text))
    }
    fn pane_state(id: String) -> Result<PanePresence, TermError> {
        with_driver::<D, _>(|d| d.pane_state(&id))
    }
    fn where_is(id: String) -> Result<String, TermError> {
        with_driver::<D, _>(|d| d.where_is(&id))
    }
    fn arrange(source: String, intent: Intent, target: String) -> Result<ArrangeOutcome, TermError> {
        with_driver::<D, _>(|d| d.arrange(&source, intent, &target))
    }
    fn name(id: String, team: String, agent: String, mode: NamingMode) -> Result<(), TermError> {
        crate::check_name("team", &team)?;
        crate::check_name("agent", &agent)?;
        with_driver::<D, _>(|d| d.name(&id, &team, &agent, mode))
    }
    fn capability(capability: String, id: Option<String>) -> Result<Answer, TermError> {
        with_driver::<D, _>(|d| d.capability(&capability, id.as_deref()))
    }
    fn team_observe(id: String) -> Result<String, TermError> {
        with_driver::<D, _>(|d| d.team_observe(&id))
    }
    fn team_input_ready(id: String, expected: String) -> Result<Answer, TermError> {
        with_driver::<D, _>(|d| d.team_input_ready(&id, &expected))
    }
    fn find_by_label(label: String) -> Result<Vec<String>, TermError> {
        with_driver::<D, _>(|d| d.find_by_label(&label))
    }
    fn label_of(id: String) -> Result<String, TermError> {
        with_driver::<D, _>(|d| d.label_of(&id))
    }
    fn id_ok(id: String) -> Result<bool, TermError> {
        with_driver::<D, _>(|d| d.id_ok(&id))
    }
    fn pane_process_observe(id: String) -> Result<Vec<String>, TermError> {
        with_driver::<D, _>(|d| d.pane_process_observe(&id))
    }
    fn enumerate_panes() -> Result<Vec<String>, TermError> {
        with_driver::<D, _>(|d| d.enumerate_panes())
    }
    fn fence(id: String, seat_pid: Option<String>) -> Result<String, TermError> {
        with_driver::<D, _>(|d| d.fence(&id, seat_pid.as_deref()))
    }
    fn pane_focused(id: String) -> Result<bool, TermError> {
        with_driver::<D, _>(|d| d.pane_focused(&id))
    }
    fn input_clear(id: String) -> Result<(), TermError> {
        with_driver::<D, _>(|d| d.input_clear(&id))
    }
    fn input_type(id: String, text: String) -> Result<(), TermError> {
        with_driver::<D, _>(|d| d.input_type(&id, &text))
    }
    fn expected_label(team: String, agent: String) -> Result<String, TermError> {
        crate::check_name("team", &team)?;
        crate::check_name("agent", &agent)?;
        with_driver::<D, _>(|d| d.expected_label(&team, &agent))
    }
    fn instance_for_ref(reference: String) -> Result<String, TermError> {
        with_driver::<D, _>(|d| d.instance_for_ref(&reference))
    }
    fn id_split(id: String) -> Result<(String, String), TermError> {
        with_driver::<D, _>(|d| d.id_split(&id))
    }
}
