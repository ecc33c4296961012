//! `agmsg-host terminal <op> [args]`: agmsg's terminal ops (§2.4) with their outputs and exit codes
//! (§2.3), plus `list` and the two §6.3 resolvers.
//!
//! The driver for an op on an id: `--driver`, else `AGMSG_TERMINAL_DRIVER`, else the scheme of a
//! placement reference given as the id (`tmux:/tmp/s:%3`; a legacy bare `%N`/`@N` is tmux), else the
//! placement resolver's answer for this session.

use std::io::{self, Write};
use std::process::ExitCode;

use super::exit;
use super::framing::Shape;
use agmsg_host::display;
use agmsg_host::error::ExitClass;
use agmsg_host::terminal::TerminalError;
use agmsg_host::terminal::driver::{ArrangeOutcome, Detection, PanePresence, TermFailKind};
use agmsg_host::terminal::list;
use agmsg_host::terminal::op::{self, Op, OpFailure, Reply};
use agmsg_host::terminal::resolve::{self, Resolved};
use agmsg_host::terminal::source::Candidates;

/// `terminal --help`: as `storage --help`, every line at most 79 columns, so clap never re-wraps it.
pub const LONG_HELP: &str = "Run one terminal-driver op, with agmsg's argv, outputs and exit codes.

Ops (snake_case names are accepted too). <id> is a driver id or a placement
reference <terminal>:<id>:
  check                            ok / missing_deps (10)
  describe                         key=value lines
  detect [session-id]
      exit 0 if under this terminal; stdout: this pane's id (may be empty)
  spawn <name> <project> window|pane-h|pane-v <boot>...
      prints the new id
  despawn <id>                     ok / runtime_error
  peek <id> [--lines N]            the pane's text, verbatim
  poke <id> <text>
      types the text and submits it: ok / runtime_error
  pane-state <id>
      present / gone (0), unknown (10, 12 or 13)
  where <id>
      the container id; unknown (10) / unsupported (13)
  arrange <source> place_below|place_right|swap <target>
      moved / unchanged; unknown / unsupported / runtime_error
  name <id> <team> <agent> [key]
      ok / runtime_error (key: set only the key, not the label)
  optional: capability <cap> [id] (exit 0 yes / 1 no / 2 unknown),
    team-observe <id>, team-input-ready <id> <expected> (exit 0/1/2),
    find-by-label <label>, label-of <id>, id-ok <id>,
    pane-process-observe <id>, enumerate-panes, fence <id> [seat-pid],
    pane-focused <id>, input-clear <id>, input-type <id> <text>,
    expected-label <team> <agent>, instance-for-ref <ref>, id-split <id>
  list [--json]
      the drivers, in resolution order, with their capabilities
  resolve-placement [session-id]
      <terminal>TAB<id>: where a new pane goes (exit 1: no terminal)
  resolve-name [session-id]
      <terminal>TAB<id>: this session's own pane (exit 1: none)

Exit codes: 0 ok, 10 unreachable or missing deps, 12 failed, 13 unsupported,
2 usage error. An optional op a driver does not implement is unsupported (13).";

fn session_arg(args: &[String]) -> &str {
    args.first().map_or("", String::as_str)
}

/// Why `terminal` printed no answer: its command line, or a failure framed as agmsg frames it.
enum NoAnswer {
    Usage(String),
    Failed(OpFailure),
}

impl NoAnswer {
    fn failed(shape: Shape, error: TerminalError) -> NoAnswer {
        NoAnswer::Failed(OpFailure { shape, error, directive: None })
    }
}

/// Parse, run (the library's [`op::run`]), print.
pub fn run(driver_flag: Option<String>, op: Option<&str>, args: &[String]) -> ExitCode {
    let op = op.unwrap_or("describe").replace('_', "-");
    match run_op(driver_flag.as_deref(), &op, args) {
        Ok(code) => code,
        Err(NoAnswer::Usage(message)) => {
            eprintln!("agmsg-host: terminal {op}: {message} (see agmsg-host terminal --help)");
            exit::code(ExitClass::Usage)
        }
        Err(NoAnswer::Failed(OpFailure { shape, error, directive })) => {
            if let Some(line) = directive {
                // Nothing more to say if stdout is gone: the exit code still tells.
                let _ = print(&format!("{line}\n"));
            }
            // The message may carry the driver's text (its error, its panic): one visible, capped line.
            eprintln!("agmsg-host: terminal {op}: {}", display::line(&error.message));
            let word = match (shape, error.kind) {
                (Shape::Control, TermFailKind::MissingDeps) => Some("missing_deps"),
                (Shape::Control, _) => Some("runtime_error"),
                (Shape::Record, _) => None,
                (Shape::Token, TermFailKind::Unsupported) => Some("unsupported"),
                (Shape::Token, _) | (Shape::Presence, _) => Some("unknown"),
            };
            if let Some(word) = word {
                println!("{word}");
            }
            exit::code((&error).into())
        }
    }
}

/// A resident server's spare, before its request: make ready the driver `terminal <op> <args>` would
/// run on (`op::warm`), printing nothing. Not for `list` or the resolvers, nor an op that does not
/// parse.
pub fn warm(driver_flag: Option<String>, op: Option<&str>, args: &[String]) {
    let op_name = op.unwrap_or("describe").replace('_', "-");
    if let Ok(op) = Op::parse(&op_name, args)
        && let Err(e) = op::warm(&Candidates::new(), driver_flag.as_deref(), &op)
    {
        agmsg_host::log::host_log::debug(&format!("server: a spare could not warm for `terminal {op_name}`: {e}"));
    }
}

fn print(text: &str) -> Result<(), NoAnswer> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| NoAnswer::failed(Shape::Record, TerminalError::new(TermFailKind::Failed, format!("cannot write to stdout: {e}"))))
}

fn run_op(driver_flag: Option<&str>, op: &str, args: &[String]) -> Result<ExitCode, NoAnswer> {
    let candidates = Candidates::new();
    match op {
        "list" => return list(args),
        "resolve-placement" | "resolve-name" => {
            let runtime = op::runtime().map_err(|e| NoAnswer::failed(Shape::Record, e))?;
            let session = session_arg(args);
            let resolved = if op == "resolve-name" {
                resolve::resolve_name(&runtime, &candidates, session)
            } else {
                resolve::resolve_placement(&runtime, &candidates, session)
            }
            .map_err(|e| NoAnswer::failed(Shape::Record, e))?;
            return match resolved {
                Some(Resolved { driver, id }) => {
                    print(&format!("{driver}\t{id}\n"))?;
                    Ok(ExitCode::SUCCESS)
                }
                None => {
                    eprintln!("agmsg-host: terminal {op}: not running under any terminal driver");
                    Ok(exit::no())
                }
            };
        }
        _ => {}
    }
    let parsed = Op::parse(op, args).map_err(NoAnswer::Usage)?;
    let reply = op::run(&candidates, driver_flag, parsed).map_err(NoAnswer::Failed)?;
    print_reply(op, reply)
}

/// A reply as agmsg's driver prints it, and its exit code.
fn print_reply(op: &str, reply: Reply) -> Result<ExitCode, NoAnswer> {
    match reply {
        Reply::Ok => print("ok\n")?,
        Reply::Text(text) => print(&text)?,
        Reply::Line(line) => print(&format!("{line}\n"))?,
        Reply::Lines(lines) => print(&lines.iter().map(|l| format!("{l}\n")).collect::<String>())?,
        Reply::Described { description: d, priority } => {
            let mut text =
                format!("name={}\npriority={priority}\nbackend={}\ncapabilities={}\n", d.name, d.backend, d.capabilities.join(" "));
            for (key, value) in d.hints {
                text.push_str(&format!("{key}={value}\n"));
            }
            print(&text)?;
        }
        Reply::Detected { driver, detection } => match detection {
            Detection::Absent => return Ok(exit::no()),
            Detection::Unresolved(reason) => {
                eprintln!("agmsg-host: terminal detect: {driver}: present, but {}", display::line(&reason));
            }
            Detection::Resolved(id) => print(&format!("{id}\n"))?,
        },
        Reply::PaneState(state) => {
            print(match state {
                PanePresence::Present => "present\n",
                PanePresence::Gone => "gone\n",
                PanePresence::Unknown => "unknown\n",
            })?;
            if state == PanePresence::Unknown {
                // Could not tell: the code of a terminal that could not be asked.
                return Ok(exit::code(ExitClass::Terminal(TermFailKind::Unreachable)));
            }
        }
        Reply::Arranged(outcome) => print(match outcome {
            ArrangeOutcome::Moved => "moved\n",
            ArrangeOutcome::Unchanged => "unchanged\n",
        })?,
        Reply::Answer { answer, note } => {
            if let Some(note) = note {
                eprintln!("agmsg-host: terminal {op}: {}", display::line(&note));
            }
            return Ok(exit::answer(answer));
        }
        Reply::Focused(focused) => print(if focused { "yes\n" } else { "no\n" })?,
        Reply::Split(instance, pane) => print(&format!("{instance}\t{pane}\n"))?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `terminal list [--json]` (the library's [`list::list`]).
fn list(args: &[String]) -> Result<ExitCode, NoAnswer> {
    let json = match args {
        [] => false,
        [flag] if flag == "--json" => true,
        _ => return Err(NoAnswer::Usage("list: expected [--json]".into())),
    };
    let text = list::list(json).map_err(|e| NoAnswer::failed(Shape::Record, TerminalError::new(TermFailKind::Unreachable, e)))?;
    print(&text)?;
    Ok(ExitCode::SUCCESS)
}
