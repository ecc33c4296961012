//! Agent types' delivery plugs: implement [`DeliveryPlug`] and register it with
//! [`export_agent_plug!`](crate::export_agent_plug).
//!
//! A plug is agmsg's `_delivery.sh` as a component: it computes, the host touches the world. The host
//! reads the type's delivery file (`<project>/<hooks_file>`, validated) and passes its text in; the plug
//! answers what the file becomes ([`FileAnswer`]) and what to tell the user. Every op has a default
//! that answers [`PlugError::NotOverridden`], which makes the host use agmsg's default for that op:
//! override only what your type does differently. A plug has no filesystem and runs no programs.
//!
//! Agent types' delivery plugs.
//!
//! ```
//! use agmsg_guest_sdk::agent::{Applied, DeliveryPlug, FileAnswer, Mode, PlugError, Target, shq};
//!
//! #[derive(Default)]
//! struct Notes;
//!
//! impl DeliveryPlug for Notes {
//!     fn apply(&self, t: &Target, mode: Mode, _current: Option<&str>) -> Result<Applied, PlugError> {
//!         let file = match mode {
//!             Mode::Off => FileAnswer::Remove,
//!             _ => FileAnswer::Write(format!("Run {} after each tool call.\n", shq(&format!("{}/scripts/check-inbox.sh", t.skill_dir)))),
//!         };
//!         Ok(Applied { file, notices: Vec::new() })
//!     }
//! }
//! # let t = Target { agent_type: "x".into(), project: "/p".into(), skill_dir: "/s".into(), hooks_file: "x.md".into() };
//! # assert!(matches!(Notes.apply(&t, Mode::Off, None), Ok(Applied { file: FileAnswer::Remove, .. })));
//! # assert!(matches!(Notes.status(&t, None), Err(PlugError::NotOverridden)));
//! ```

use crate::bindings::agent::exports::agmsg::agent::driver::Guest;

/// agmsg's delivery modes: `Monitor`, `Turn`, `Both`, `Off`.
///
/// ```
/// use agmsg_guest_sdk::agent::Mode;
/// assert_ne!(Mode::Turn, Mode::Off);
/// ```
pub use crate::bindings::agent::agmsg::agent::types::Mode;

/// What an op is about: `agent_type`, `project` (absolute), `skill_dir` (agmsg's install directory) and
/// the type's `hooks_file`.
///
/// ```
/// use agmsg_guest_sdk::agent::Target;
/// let t = Target { agent_type: "cursor".into(), project: "/p".into(), skill_dir: "/s".into(), hooks_file: ".cursor/rules/agmsg.mdc".into() };
/// assert_eq!(t.agent_type, "cursor");
/// ```
pub use crate::bindings::agent::agmsg::agent::types::Target;

/// What the delivery file becomes: `Write(text)`, `Remove` or `Keep`.
///
/// ```
/// use agmsg_guest_sdk::agent::FileAnswer;
/// let _ = FileAnswer::Write("rule\n".into());
/// ```
pub use crate::bindings::agent::agmsg::agent::types::FileAnswer;

/// An apply's answer: the file and lines for the user.
///
/// ```
/// use agmsg_guest_sdk::agent::{Applied, FileAnswer};
/// let _ = Applied { file: FileAnswer::Keep, notices: vec!["nothing to do".into()] };
/// ```
pub use crate::bindings::agent::agmsg::agent::types::Applied;

/// Why an op has no answer: `NotOverridden` (the host uses agmsg's default) or `Failed(reason)` (the
/// file is left as it was).
///
/// ```
/// use agmsg_guest_sdk::agent::PlugError;
/// let _ = PlugError::Failed("the file is not mine".into());
/// ```
pub use crate::bindings::agent::agmsg::agent::types::PlugError;

/// agmsg's `agmsg_shq`: `value` as one POSIX shell word in single quotes (the host's quoting, shared
/// through `agmsg-contract`).
///
/// ```
/// assert_eq!(agmsg_guest_sdk::agent::shq("/p/o'brien"), r"'/p/o'\''brien'");
/// ```
pub use agmsg_contract::shell_quote as shq;

/// bash's `printf %q`, as agmsg quotes each word of a command it prints for an agent to run (the monitor
/// directive's `watch.sh` command): the host's quoting, shared through `agmsg-contract`. Whatever the text
/// holds, the word is one printable line that bash reads back as that text.
///
/// ```
/// use agmsg_guest_sdk::agent::printf_q;
/// assert_eq!(printf_q("/p/o'brien x"), r"/p/o\'brien\ x");
/// assert_eq!(printf_q("a\nb"), r"$'a\nb'");
/// ```
pub use agmsg_contract::printf_q;

/// The command that starts agmsg's inbox watcher for the session `session_id`, as agmsg's monitor
/// directive prints it: `<skill-dir>/scripts/watch.sh <session id> <project> <type>`, each word
/// [`printf_q`]-quoted (agmsg's `printf '%q %q %q %q'`).
///
/// ```
/// use agmsg_guest_sdk::agent::{Target, watch_command};
/// let t = Target { agent_type: "claude-code".into(), project: "/p q".into(), skill_dir: "/s".into(), hooks_file: "x".into() };
/// assert_eq!(watch_command(&t, "abc"), r"/s/scripts/watch.sh abc /p\ q claude-code");
/// ```
pub fn watch_command(target: &Target, session_id: &str) -> String {
    agmsg_contract::delivery_texts::watch_command(&target.skill_dir, session_id, &target.project, &target.agent_type)
}

/// The directives a plug may print, exactly as the host accepts them (`start_watch_directive`,
/// `STOP_TASK_DIRECTIVE`, `STOP_MONITOR_TOOL_DIRECTIVE`): a line that reads as an `AGMSG-DIRECTIVE`
/// and is not one of these, word for word, makes the host refuse the plug's answer.
///
/// ```
/// use agmsg_guest_sdk::agent::{Target, delivery_texts, watch_command};
/// let t = Target { agent_type: "claude-code".into(), project: "/p".into(), skill_dir: "/s".into(), hooks_file: "x".into() };
/// let lines = delivery_texts::start_watch_directive("Monitor", &watch_command(&t, "abc"));
/// assert_eq!(lines[1], "  command: /s/scripts/watch.sh abc /p claude-code");
/// ```
pub use agmsg_contract::delivery_texts;

/// The agent session's id for a watcher: the variable `var` (the plug must declare it in its manifest
/// to see it), else a new `agmsg-<uuid>`, as agmsg makes one when the runtime exports none, so the
/// agent never has to invent a value.
///
/// ```
/// let id = agmsg_guest_sdk::agent::session_id("AGMSG_SDK_DOC_UNSET_VAR");
/// assert!(id.starts_with("agmsg-"));
/// ```
pub fn session_id(var: &str) -> String {
    std::env::var(var).ok().filter(|id| !id.is_empty()).unwrap_or_else(|| format!("agmsg-{}", crate::ids::new_id()))
}

/// A type's delivery plug: agmsg's `_delivery.sh` functions, each optional.
///
/// ```
/// use agmsg_guest_sdk::agent::DeliveryPlug;
/// #[derive(Default)]
/// struct Defaults;
/// impl DeliveryPlug for Defaults {}
/// ```
pub trait DeliveryPlug {
    /// `agmsg_delivery_apply`: the file for `mode`, from its current text (`None`: no file).
    fn apply(&self, target: &Target, mode: Mode, current: Option<&str>) -> Result<Applied, PlugError> {
        let _ = (target, mode, current);
        Err(PlugError::NotOverridden)
    }

    /// `agmsg_delivery_status`: the mode the file says, and detail lines.
    fn status(&self, target: &Target, current: Option<&str>) -> Result<(Mode, Vec<String>), PlugError> {
        let _ = (target, current);
        Err(PlugError::NotOverridden)
    }

    /// `agmsg_delivery_on_enable` (monitor, both): lines for the user.
    fn on_enable(&self, target: &Target, mode: Mode) -> Result<Vec<String>, PlugError> {
        let _ = (target, mode);
        Err(PlugError::NotOverridden)
    }

    /// `agmsg_delivery_on_disable` (off): lines for the user.
    fn on_disable(&self, target: &Target) -> Result<Vec<String>, PlugError> {
        let _ = target;
        Err(PlugError::NotOverridden)
    }

    /// `agmsg_delivery_stop_directive` (turn, off): the in-session directive to stop a watcher.
    fn stop_directive(&self, target: &Target) -> Result<String, PlugError> {
        let _ = target;
        Err(PlugError::NotOverridden)
    }
}

/// Register `$plug` (a [`DeliveryPlug`] + `Default` type) as this component's exports.
///
/// ```
/// #[derive(Default)]
/// struct Plug;
/// impl agmsg_guest_sdk::agent::DeliveryPlug for Plug {}
/// agmsg_guest_sdk::export_agent_plug!(Plug);
/// ```
#[macro_export]
macro_rules! export_agent_plug {
    ($plug:ty) => {
        const _: () = {
            type __AgmsgComponent = $crate::agent::Component<$plug>;
            #[cfg(target_arch = "wasm32")]
    $crate::bindings::agent::export!(__AgmsgComponent with_types_in $crate::bindings::agent);
            #[cfg(not(target_arch = "wasm32"))]
            const _: fn($crate::agent::Target) -> Result<Vec<String>, $crate::agent::PlugError> =
                <__AgmsgComponent as $crate::bindings::agent::exports::agmsg::agent::driver::Guest>::on_disable;
        };
    };
}

thread_local! {
    static PLUG: std::cell::OnceCell<Box<dyn DeliveryPlug>> = const { std::cell::OnceCell::new() };
}

fn with_plug<P: DeliveryPlug + Default + 'static, T>(f: impl FnOnce(&dyn DeliveryPlug) -> T) -> T {
    PLUG.with(|plug| f(plug.get_or_init(|| Box::new(P::default())).as_ref()))
}

/// The exports of a component whose plug is `P`: what [`export_agent_plug!`](crate::export_agent_plug)
/// registers.
#[doc(hidden)]
pub struct Component<P>(std::marker::PhantomData<P>);

impl<P: DeliveryPlug + Default + 'static> Guest for Component<P> {
    fn apply(target: Target, mode: Mode, current: Option<String>) -> Result<Applied, PlugError> {
        with_plug::<P, _>(|p| p.apply(&target, mode, current.as_deref()))
    }
    fn status(target: Target, current: Option<String>) -> Result<(Mode, Vec<String>), PlugError> {
        with_plug::<P, _>(|p| p.status(&target, current.as_deref()))
    }
    fn on_enable(target: Target, mode: Mode) -> Result<Vec<String>, PlugError> {
        with_plug::<P, _>(|p| p.on_enable(&target, mode))
    }
    fn on_disable(target: Target) -> Result<Vec<String>, PlugError> {
        with_plug::<P, _>(|p| p.on_disable(&target))
    }
    fn stop_directive(target: Target) -> Result<String, PlugError> {
        with_plug::<P, _>(|p| p.stop_directive(&target))
    }
}
