//! One terminal op as agmsg calls it (§2.4): [`Op::parse`] reads agmsg's argv, [`run`] picks the
//! driver, opens it and makes the call, and answers with a typed [`Reply`] or an [`OpFailure`] that says
//! how agmsg frames it. Printing is the caller's (the CLI's `terminal` command).

use crate::error::{ExitClass, HostError, Shape};
use crate::log::host_log;
use crate::runtime::Runtime;

use super::driver::{Answer, ArrangeOutcome, Description, Detection, Intent, NamingMode, PanePresence, SpawnTarget, TermFailKind};
use super::resolve;
use super::source::Candidates;
use super::{Terminal, TerminalError};

/// A terminal error's class: its §2.3 kind.
impl From<&TerminalError> for ExitClass {
    fn from(e: &TerminalError) -> ExitClass {
        ExitClass::Terminal(e.kind)
    }
}

impl From<TerminalError> for HostError {
    fn from(e: TerminalError) -> HostError {
        HostError::new((&e).into(), e.message)
    }
}

/// A terminal op and its arguments. Ids are as given (a driver id or a placement reference).
#[derive(Debug)]
pub enum Op {
    Check,
    Describe,
    Detect {
        session: String,
    },
    /// `target` is kept as given: an unknown one is the driver's "unsupported", not a usage error.
    Spawn {
        name: String,
        project: String,
        target: String,
        boot: Vec<String>,
    },
    Despawn {
        id: String,
    },
    Peek {
        id: String,
        lines: Option<u32>,
    },
    Poke {
        id: String,
        text: String,
    },
    PaneState {
        id: String,
    },
    Where {
        id: String,
    },
    /// `intent` as given, as `target` of spawn.
    Arrange {
        source: String,
        intent: String,
        target: String,
    },
    Name {
        id: String,
        team: String,
        agent: String,
        mode: NamingMode,
    },
    Capability {
        capability: String,
        id: Option<String>,
    },
    TeamInputReady {
        id: String,
        expected: String,
    },
    TeamObserve {
        id: String,
    },
    FindByLabel {
        label: String,
    },
    LabelOf {
        id: String,
    },
    IdOk {
        id: String,
    },
    PaneProcessObserve {
        id: String,
    },
    EnumeratePanes,
    Fence {
        id: String,
        seat: Option<String>,
    },
    PaneFocused {
        id: String,
    },
    InputClear {
        id: String,
    },
    InputType {
        id: String,
        text: String,
    },
    ExpectedLabel {
        team: String,
        agent: String,
    },
    InstanceForRef {
        reference: String,
    },
    IdSplit {
        id: String,
    },
}

fn exactly<const N: usize>(op: &str, args: &[String], names: &str) -> Result<[String; N], String> {
    if args.len() != N {
        return Err(format!("{op}: expected {names}"));
    }
    Ok(std::array::from_fn(|i| args[i].clone()))
}

impl Op {
    /// agmsg's op (kebab-case) and argv; `Err`: a usage error's message. `list` and the resolvers are
    /// not driver ops.
    pub fn parse(op: &str, args: &[String]) -> Result<Op, String> {
        let one = |names| exactly::<1>(op, args, names).map(|[a]| a);
        Ok(match op {
            "check" => {
                exactly::<0>(op, args, "no arguments")?;
                Op::Check
            }
            "describe" => Op::Describe,
            "detect" => Op::Detect { session: args.first().cloned().unwrap_or_default() },
            "spawn" => match args {
                [name, project, target, boot @ ..] => {
                    Op::Spawn { name: name.clone(), project: project.clone(), target: target.clone(), boot: boot.to_vec() }
                }
                _ => return Err("spawn: expected <name> <project> <target> <boot>...".into()),
            },
            "despawn" => Op::Despawn { id: one("<id>")? },
            "peek" => match args {
                [id] => Op::Peek { id: id.clone(), lines: None },
                // A non-numeric --lines is ignored, as agmsg's drivers do.
                [id, flag, n] if flag == "--lines" => Op::Peek { id: id.clone(), lines: n.parse::<u32>().ok() },
                _ => return Err("peek: expected <id> [--lines N]".into()),
            },
            "poke" => {
                let [id, text] = exactly::<2>(op, args, "<id> <text>")?;
                Op::Poke { id, text }
            }
            "pane-state" => Op::PaneState { id: one("<id>")? },
            "where" => Op::Where { id: one("<id>")? },
            "arrange" => {
                let [source, intent, target] = exactly::<3>(op, args, "<source> place_below|place_right|swap <target>")?;
                Op::Arrange { source, intent, target }
            }
            "name" => match args {
                [id, team, agent] => Op::Name { id: id.clone(), team: team.clone(), agent: agent.clone(), mode: NamingMode::LabelAndKey },
                [id, team, agent, key] if key == "key" => {
                    Op::Name { id: id.clone(), team: team.clone(), agent: agent.clone(), mode: NamingMode::KeyOnly }
                }
                _ => return Err("name: expected <id> <team> <agent> [key]".into()),
            },
            "capability" => match args {
                [capability] => Op::Capability { capability: capability.clone(), id: None },
                [capability, id] => Op::Capability { capability: capability.clone(), id: Some(id.clone()) },
                _ => return Err("capability: expected <capability> [id]".into()),
            },
            "team-input-ready" => {
                let [id, expected] = exactly::<2>(op, args, "<id> <expected>")?;
                Op::TeamInputReady { id, expected }
            }
            "team-observe" => Op::TeamObserve { id: one("<id>")? },
            "find-by-label" => Op::FindByLabel { label: one("<label>")? },
            "label-of" => Op::LabelOf { id: one("<id>")? },
            "id-ok" => Op::IdOk { id: one("<id>")? },
            "pane-process-observe" => Op::PaneProcessObserve { id: one("<id>")? },
            "enumerate-panes" => {
                exactly::<0>(op, args, "no arguments")?;
                Op::EnumeratePanes
            }
            "fence" => match args {
                [id] => Op::Fence { id: id.clone(), seat: None },
                [id, seat] => Op::Fence { id: id.clone(), seat: Some(seat.clone()) },
                _ => return Err("fence: expected <id> [seat-pid]".into()),
            },
            "pane-focused" => Op::PaneFocused { id: one("<id>")? },
            "input-clear" => Op::InputClear { id: one("<id>")? },
            "input-type" => {
                let [id, text] = exactly::<2>(op, args, "<id> <text>")?;
                Op::InputType { id, text }
            }
            "expected-label" => {
                let [team, agent] = exactly::<2>(op, args, "<team> <agent>")?;
                Op::ExpectedLabel { team, agent }
            }
            "instance-for-ref" => Op::InstanceForRef { reference: one("<ref>")? },
            "id-split" => Op::IdSplit { id: one("<id>")? },
            other => return Err(format!("unknown op {other:?}")),
        })
    }

    /// The argument that picks the driver when nothing else does (its first, for an op on an id; a
    /// placement reference names its terminal).
    fn driver_hint(&self) -> Option<&str> {
        match self {
            Op::Check
            | Op::Describe
            | Op::Detect { .. }
            | Op::Spawn { .. }
            | Op::EnumeratePanes
            | Op::ExpectedLabel { .. }
            | Op::InstanceForRef { .. } => None,
            Op::Capability { capability, .. } => Some(capability),
            Op::FindByLabel { label } => Some(label),
            Op::Arrange { source: id, .. }
            | Op::Despawn { id }
            | Op::Peek { id, .. }
            | Op::Poke { id, .. }
            | Op::PaneState { id }
            | Op::Where { id }
            | Op::Name { id, .. }
            | Op::TeamInputReady { id, .. }
            | Op::TeamObserve { id }
            | Op::LabelOf { id }
            | Op::IdOk { id }
            | Op::PaneProcessObserve { id }
            | Op::Fence { id, .. }
            | Op::PaneFocused { id }
            | Op::InputClear { id }
            | Op::InputType { id, .. }
            | Op::IdSplit { id } => Some(id),
        }
    }
}

/// What an op answered, to be printed as agmsg's driver prints it.
#[derive(Debug)]
pub enum Reply {
    /// A control op that succeeded: `ok`.
    Ok,
    /// Text printed verbatim (peek).
    Text(String),
    /// One line.
    Line(String),
    /// One line each.
    Lines(Vec<String>),
    /// `describe`'s key=value lines; `priority` is the manifest's.
    Described {
        description: Description,
        priority: u32,
    },
    /// `detect`: absent (exit 1), present without an id (`reason` on stderr), or this pane's id.
    Detected {
        driver: String,
        detection: Detection,
    },
    /// `pane-state`: its word; `unknown` exits as a terminal that could not be asked.
    PaneState(PanePresence),
    Arranged(ArrangeOutcome),
    /// A question answered by the exit code alone (capability, team-input-ready, id-ok); `note`: why it
    /// could not tell, for stderr.
    Answer {
        answer: Answer,
        note: Option<String>,
    },
    /// `pane-focused`: `yes` / `no`.
    Focused(bool),
    /// `id-split`: instance TAB pane.
    Split(String, String),
}

/// A failed op: the driver's (or the host's) error, how agmsg frames it on stdout, and for a
/// `check` that found a dependency missing, the §1.6 directive line to print first.
#[derive(Debug)]
pub struct OpFailure {
    pub shape: Shape,
    pub error: TerminalError,
    pub directive: Option<String>,
}

trait Framed<T> {
    fn framed(self, shape: Shape) -> Result<T, OpFailure>;
}

impl<T> Framed<T> for Result<T, TerminalError> {
    fn framed(self, shape: Shape) -> Result<T, OpFailure> {
        self.map_err(|error| OpFailure { shape, error, directive: None })
    }
}

fn unsupported<T>(shape: Shape, message: String) -> Result<T, OpFailure> {
    Err(TerminalError::new(TermFailKind::Unsupported, message)).framed(shape)
}

/// The runtime for terminal ops: one that cannot be built leaves the terminal unreachable.
pub fn runtime() -> Result<Runtime, TerminalError> {
    Runtime::from_env().map_err(|e| TerminalError::new(TermFailKind::Unreachable, e))
}

/// What a resident server's spare does before its request arrives: make ready the instance of the driver
/// `op` would run on, when that driver is named (`driver_flag`, the override variable, the op's
/// placement reference; never by asking drivers whether they are present), kept for the op that follows
/// in this process ([`Terminal::warm`]). Nothing is called in the driver, nothing printed.
pub fn warm(candidates: &Candidates, driver_flag: Option<&str>, op: &Op) -> Result<(), TerminalError> {
    let Some((source, _)) = resolve::chosen_driver(candidates, driver_flag, op.driver_hint())? else { return Ok(()) };
    let runtime = runtime()?;
    Terminal::open(&runtime, &source)?.warm()
}

/// Run `op` on the driver agmsg would pick ([`resolve::choose_driver`]: `driver_flag`, the override
/// variable, the op's placement reference, the session's terminal) among `candidates`.
pub fn run(candidates: &Candidates, driver_flag: Option<&str>, op: Op) -> Result<Reply, OpFailure> {
    let started = std::time::Instant::now();
    let runtime = runtime().framed(Shape::Record)?;
    let runtime_ready = started.elapsed();
    let (source, scheme) = resolve::choose_driver(&runtime, candidates, driver_flag, op.driver_hint()).framed(Shape::Record)?;
    let mut driver = Terminal::open(&runtime, &source).framed(Shape::Record)?;
    host_log::debug(&format!(
        "timing: runtime {:.2} ms, driver chosen, loaded and linked {:.2} ms",
        runtime_ready.as_secs_f64() * 1e3,
        (started.elapsed() - runtime_ready).as_secs_f64() * 1e3
    ));
    let known = candidates.names();
    // A placement reference of this driver is passed on as its bare id.
    let id = |raw: &str| resolve::bare_id(raw, &known, &source.manifest.name, scheme.as_deref()).framed(Shape::Record);
    let d = &mut driver;
    Ok(match op {
        Op::Check => match d.check() {
            Ok(()) => Reply::Ok,
            Err(error) => {
                // §1.6's directive line, as agmsg's tmux driver prints it (no commands).
                let directive = (error.kind == TermFailKind::MissingDeps).then(|| {
                    let driver = format!("terminals/{}", source.manifest.name);
                    agmsg_contract::records::directive("install_deps", &driver, None, &crate::display::line(&error.message))
                });
                return Err(OpFailure { shape: Shape::Control, error, directive });
            }
        },
        Op::Describe => Reply::Described { description: d.describe().framed(Shape::Record)?, priority: source.manifest.priority },
        Op::Detect { session } => {
            Reply::Detected { driver: source.manifest.name.clone(), detection: d.detect(&session).framed(Shape::Record)? }
        }
        Op::Spawn { name, project, target, boot } => {
            let target = match target.as_str() {
                "window" => SpawnTarget::Window,
                "pane-h" => SpawnTarget::PaneH,
                "pane-v" => SpawnTarget::PaneV,
                other => return unsupported(Shape::Record, format!("unknown spawn target {other:?}")),
            };
            Reply::Line(d.spawn(&name, &project, target, &boot).framed(Shape::Record)?)
        }
        Op::Despawn { id: raw } => {
            d.despawn(&id(&raw)?).framed(Shape::Control)?;
            Reply::Ok
        }
        Op::Peek { id: raw, lines } => Reply::Text(d.peek(&id(&raw)?, lines).framed(Shape::Record)?),
        Op::Poke { id: raw, text } => {
            d.poke(&id(&raw)?, &text).framed(Shape::Control)?;
            Reply::Ok
        }
        Op::PaneState { id: raw } => Reply::PaneState(d.pane_state(&id(&raw)?).framed(Shape::Presence)?),
        Op::Where { id: raw } => Reply::Line(d.where_is(&id(&raw)?).framed(Shape::Token)?),
        Op::Arrange { source: source_raw, intent, target: target_raw } => {
            let intent = match intent.replace('-', "_").as_str() {
                "place_below" => Intent::PlaceBelow,
                "place_right" => Intent::PlaceRight,
                "swap" => Intent::Swap,
                other => return unsupported(Shape::Token, format!("unknown intent {other:?}")),
            };
            let (source_id, target_id) = (id(&source_raw)?, id(&target_raw)?);
            match d.arrange(&source_id, intent, &target_id) {
                // It tried and failed: a control op's failure; anything else a token op's.
                Err(f) if f.kind == TermFailKind::Failed => return Err(f).framed(Shape::Control),
                other => Reply::Arranged(other.framed(Shape::Token)?),
            }
        }
        Op::Name { id: raw, team, agent, mode } => {
            d.name_pane(&id(&raw)?, &team, &agent, mode).framed(Shape::Control)?;
            Reply::Ok
        }
        Op::Capability { capability, id: raw } => {
            let raw = raw.map(|raw| id(&raw)).transpose()?;
            match d.capability(&capability, raw.as_deref()) {
                Ok(answer) => Reply::Answer { answer, note: None },
                // No narrowing op: the manifest's ceiling holds for every id.
                Err(f) if f.kind == TermFailKind::Unsupported => {
                    let answer = if source.manifest.capabilities.contains(&capability) { Answer::Yes } else { Answer::No };
                    Reply::Answer { answer, note: None }
                }
                Err(f) => Reply::Answer { answer: Answer::Unknown, note: Some(f.message) },
            }
        }
        Op::TeamInputReady { id: raw, expected } => {
            Reply::Answer { answer: d.team_input_ready(&id(&raw)?, &expected).framed(Shape::Record)?, note: None }
        }
        Op::TeamObserve { id: raw } => Reply::Line(d.team_observe(&id(&raw)?).framed(Shape::Record)?),
        Op::FindByLabel { label } => Reply::Lines(d.find_by_label(&label).framed(Shape::Record)?),
        Op::LabelOf { id: raw } => Reply::Line(d.label_of(&id(&raw)?).framed(Shape::Record)?),
        Op::IdOk { id: raw } => {
            let ok = d.id_ok(&id(&raw)?).framed(Shape::Record)?;
            Reply::Answer { answer: if ok { Answer::Yes } else { Answer::No }, note: None }
        }
        Op::PaneProcessObserve { id: raw } => Reply::Lines(d.pane_process_observe(&id(&raw)?).framed(Shape::Record)?),
        Op::EnumeratePanes => Reply::Lines(d.enumerate_panes().framed(Shape::Record)?),
        Op::Fence { id: raw, seat } => Reply::Line(d.fence(&id(&raw)?, seat.as_deref()).framed(Shape::Record)?),
        Op::PaneFocused { id: raw } => Reply::Focused(d.pane_focused(&id(&raw)?).framed(Shape::Record)?),
        Op::InputClear { id: raw } => {
            d.input_clear(&id(&raw)?).framed(Shape::Control)?;
            Reply::Ok
        }
        Op::InputType { id: raw, text } => {
            d.input_type(&id(&raw)?, &text).framed(Shape::Control)?;
            Reply::Ok
        }
        Op::ExpectedLabel { team, agent } => Reply::Line(d.expected_label(&team, &agent).framed(Shape::Record)?),
        Op::InstanceForRef { reference } => Reply::Line(d.instance_for_ref(&reference).framed(Shape::Record)?),
        Op::IdSplit { id: raw } => {
            let (instance, pane) = d.id_split(&id(&raw)?).framed(Shape::Record)?;
            Reply::Split(instance, pane)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(op: &str, args: &[&str]) -> Result<Op, String> {
        Op::parse(op, &args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn argv_is_parsed_as_agmsg_passes_it() {
        assert!(matches!(parse("peek", &["%1", "--lines", "x"]), Ok(Op::Peek { lines: None, .. })), "a non-numeric --lines is ignored");
        assert!(matches!(parse("peek", &["%1", "--lines", "5"]), Ok(Op::Peek { lines: Some(5), .. })));
        assert!(matches!(parse("name", &["%1", "t", "a", "key"]), Ok(Op::Name { mode: NamingMode::KeyOnly, .. })));
        // An unknown spawn target or intent is the driver's "unsupported", answered after parsing.
        assert!(matches!(parse("spawn", &["n", "/p", "sideways", "boot"]), Ok(Op::Spawn { .. })));
        assert!(matches!(parse("arrange", &["%1", "diagonal", "%2"]), Ok(Op::Arrange { .. })));
        assert!(matches!(parse("detect", &[]), Ok(Op::Detect { session }) if session.is_empty()));
    }

    #[test]
    fn a_wrong_command_line_is_a_usage_error_naming_the_op() {
        for (op, args) in
            [("check", &["x"][..]), ("poke", &["%1"]), ("spawn", &["n", "/p"]), ("name", &["%1", "t", "a", "label"]), ("bogus", &[])]
        {
            let message = parse(op, args).unwrap_err();
            assert!(message.contains(op), "{op}: {message}");
        }
    }

    #[test]
    fn the_driver_is_picked_by_the_first_argument_of_an_op_on_an_id_only() {
        assert_eq!(parse("peek", &["tmux:/s:%1"]).unwrap().driver_hint(), Some("tmux:/s:%1"));
        assert_eq!(parse("arrange", &["a", "swap", "b"]).unwrap().driver_hint(), Some("a"));
        assert_eq!(parse("spawn", &["tmux:/s:%1", "/p", "window"]).unwrap().driver_hint(), None);
        assert_eq!(parse("expected-label", &["t", "a"]).unwrap().driver_hint(), None);
    }
}
