//! `agmsg-host terminal <op> [args]`: agmsg's terminal ops (§2.4) with their outputs and exit codes
//! (§2.3), plus `list` and the two §6.3 resolvers.
//!
//! The driver for an op on an id: `--driver`, else `AGMSG_TERMINAL_DRIVER`, else the scheme of a
//! placement reference given as the id (`tmux:/tmp/s:%3`; a legacy bare `%N`/`@N` is tmux), else the
//! placement resolver's answer for this session.

use std::io::{self, Write};
use std::process::ExitCode;

use super::framing::Shape;
use agmsg_host::axis::Axis;
use agmsg_host::catalog::{self, Entry, Origin};
use agmsg_host::display;
use agmsg_host::log::host_log;
use agmsg_host::runtime::Runtime;
use agmsg_host::terminal::driver::{Answer, ArrangeOutcome, Detection, TermFailKind, Intent, NamingMode, PanePresence, SpawnTarget};
use agmsg_host::terminal::resolve::{self, Resolved};
use agmsg_host::terminal::{TerminalError, Terminal, TerminalSource};

pub const LONG_HELP: &str = "Run one terminal-driver op, with agmsg's argv, outputs and exit codes.

Ops (snake_case names are accepted too). <id> is a driver id or a placement reference <terminal>:<id>:
  check                                   ok / missing_deps (10)
  describe                                key=value lines
  detect [session-id]                     exit 0 if under this terminal; stdout: this pane's id (may be empty)
  spawn <name> <project> window|pane-h|pane-v <boot>...   prints the new id
  despawn <id>                            ok / runtime_error
  peek <id> [--lines N]                   the pane's text, verbatim
  poke <id> <text>                        types the text and submits it: ok / runtime_error
  pane-state <id>                         present / gone (0), unknown (10, 12 or 13)
  where <id>                              the container id; unknown (10) / unsupported (13)
  arrange <source> place_below|place_right|swap <target>   moved / unchanged; unknown / unsupported / runtime_error
  name <id> <team> <agent> [key]          ok / runtime_error (key: set only the key, not the label)
  optional: capability <cap> [id] (exit 0 yes / 1 no / 2 unknown), team-observe <id>,
    team-input-ready <id> <expected> (exit 0/1/2), find-by-label <label>, label-of <id>, id-ok <id>,
    pane-process-observe <id>, enumerate-panes, fence <id> [seat-pid], pane-focused <id>, input-clear <id>,
    input-type <id> <text>, expected-label <team> <agent>, instance-for-ref <ref>, id-split <id>
  list [--json]                           the drivers, in resolution order, with their capabilities
  resolve-placement [session-id]          <terminal>TAB<id>: where a new pane goes (exit 1: no terminal)
  resolve-name [session-id]               <terminal>TAB<id>: this session's own pane (exit 1: none)

Exit codes: 0 ok, 10 unreachable or missing deps, 12 failed, 13 unsupported, 2 usage error.
An optional op a driver does not implement is unsupported (13).";

struct Usage(String);

fn usage<T>(message: impl Into<String>) -> Result<T, Usage> {
    Err(Usage(message.into()))
}

fn exactly<'a, const N: usize>(op: &str, args: &'a [String], names: &str) -> Result<[&'a str; N], Usage> {
    if args.len() != N {
        return usage(format!("{op}: expected {names}"));
    }
    Ok(std::array::from_fn(|i| args[i].as_str()))
}

fn session_arg(args: &[String]) -> &str {
    args.first().map_or("", String::as_str)
}

pub fn run(driver_flag: Option<String>, op: Option<&str>, args: &[String]) -> ExitCode {
    let op = op.unwrap_or("describe").replace('_', "-");
    match run_op(driver_flag.as_deref(), &op, args) {
        Ok(code) => code,
        Err(Outcome::Usage(Usage(message))) => {
            eprintln!("agmsg-host: terminal {op}: {message} (see agmsg-host terminal --help)");
            ExitCode::from(2)
        }
        Err(Outcome::Failed(shape, failure)) => {
            // The message may carry the driver's text (its error, its panic): one visible, capped line.
            eprintln!("agmsg-host: terminal {op}: {}", display::line(&failure.message));
            let word = match (shape, failure.kind) {
                (Shape::Control, TermFailKind::MissingDeps) => Some("missing_deps"),
                (Shape::Control, _) => Some("runtime_error"),
                (Shape::Record, _) => None,
                (Shape::Token, TermFailKind::Unsupported) => Some("unsupported"),
                (Shape::Token, _) | (Shape::Presence, _) => Some("unknown"),
            };
            if let Some(word) = word {
                println!("{word}");
            }
            ExitCode::from(failure.kind.exit_code())
        }
    }
}

enum Outcome {
    Usage(Usage),
    Failed(Shape, TerminalError),
}

impl From<Usage> for Outcome {
    fn from(u: Usage) -> Outcome {
        Outcome::Usage(u)
    }
}

trait Framed<T> {
    fn framed(self, shape: Shape) -> Result<T, Outcome>;
}

impl<T> Framed<T> for Result<T, TerminalError> {
    fn framed(self, shape: Shape) -> Result<T, Outcome> {
        self.map_err(|f| Outcome::Failed(shape, f))
    }
}

fn runtime() -> Result<Runtime, TerminalError> {
    Runtime::from_env().map_err(|e| TerminalError::new(TermFailKind::Unreachable, e))
}

fn print(text: &str) -> Result<(), Outcome> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| Outcome::Failed(Shape::Record, TerminalError::new(TermFailKind::Failed, format!("cannot write to stdout: {e}"))))
}

fn answer_code(answer: Answer) -> ExitCode {
    ExitCode::from(match answer {
        Answer::Yes => 0,
        Answer::No => 1,
        Answer::Unknown => 2,
    })
}

fn run_op(driver_flag: Option<&str>, op: &str, args: &[String]) -> Result<ExitCode, Outcome> {
    let candidates = TerminalSource::available();
    match op {
        "list" => return list(&candidates, args),
        "resolve-placement" | "resolve-name" => {
            let runtime = runtime().framed(Shape::Record)?;
            let session = session_arg(args);
            let resolved = if op == "resolve-name" {
                resolve::resolve_name(&runtime, &candidates, session)
            } else {
                resolve::resolve_placement(&runtime, &candidates, session)
            }
            .framed(Shape::Record)?;
            return match resolved {
                Some(Resolved { driver, id }) => {
                    print(&format!("{driver}\t{id}\n"))?;
                    Ok(ExitCode::SUCCESS)
                }
                None => {
                    eprintln!("agmsg-host: terminal {op}: not running under any terminal driver");
                    Ok(ExitCode::from(1))
                }
            };
        }
        _ => {}
    }

    let started = std::time::Instant::now();
    let runtime = runtime().framed(Shape::Record)?;
    let runtime_ready = started.elapsed();
    // The id argument, if the op has one, picks the driver when nothing else does.
    let id_arg = match op {
        "check" | "describe" | "detect" | "spawn" | "enumerate-panes" | "expected-label" | "instance-for-ref" => None,
        "arrange" => args.first(),
        _ => args.first(),
    };
    let (source, scheme) = resolve::choose_driver(&runtime, &candidates, driver_flag, id_arg.map(String::as_str)).framed(Shape::Record)?;
    let mut driver = Terminal::open(&runtime, &source).framed(Shape::Record)?;
    host_log::debug(&format!(
        "timing: runtime {:.2} ms, driver chosen, loaded and linked {:.2} ms",
        runtime_ready.as_secs_f64() * 1e3,
        (started.elapsed() - runtime_ready).as_secs_f64() * 1e3
    ));
    let known = TerminalSource::names(&candidates);
    // A placement reference of this driver is passed on as its bare id.
    let id = |raw: &str| -> Result<String, Outcome> {
        resolve::bare_id(raw, &known, &source.manifest.name, scheme.as_deref()).framed(Shape::Record)
    };

    match op {
        "check" => {
            exactly::<0>(op, args, "no arguments")?;
            if let Err(failure) = driver.check() {
                if failure.kind == TermFailKind::MissingDeps {
                    // §1.6's directive line, as agmsg's tmux driver prints it (no commands).
                    let driver = format!("terminals/{}", source.manifest.name);
                    let line = agmsg_contract::records::directive("install_deps", &driver, None, &display::line(&failure.message));
                    print(&format!("{line}\n"))?;
                }
                return Err(Outcome::Failed(Shape::Control, failure));
            }
            print("ok\n")?;
        }
        "describe" => {
            let d = driver.describe().framed(Shape::Record)?;
            let mut text = format!(
                "name={}\npriority={}\nbackend={}\ncapabilities={}\n",
                d.name,
                source.manifest.priority,
                d.backend,
                d.capabilities.join(" ")
            );
            for (key, value) in d.hints {
                text.push_str(&format!("{key}={value}\n"));
            }
            print(&text)?;
        }
        "detect" => match driver.detect(session_arg(args)).framed(Shape::Record)? {
            Detection::Absent => return Ok(ExitCode::from(1)),
            Detection::Unresolved(reason) => {
                eprintln!("agmsg-host: terminal detect: {}: present, but {}", source.manifest.name, display::line(&reason));
            }
            Detection::Resolved(id) => print(&format!("{id}\n"))?,
        },
        "spawn" => {
            if args.len() < 3 {
                return Err(usage::<()>("spawn: expected <name> <project> <target> <boot>...").unwrap_err().into());
            }
            let target = match args[2].as_str() {
                "window" => SpawnTarget::Window,
                "pane-h" => SpawnTarget::PaneH,
                "pane-v" => SpawnTarget::PaneV,
                other => {
                    return Err(Outcome::Failed(Shape::Record, TerminalError::new(TermFailKind::Unsupported, format!("unknown spawn target {other:?}"))));
                }
            };
            let new_id = driver.spawn(&args[0], &args[1], target, &args[3..]).framed(Shape::Record)?;
            print(&format!("{new_id}\n"))?;
        }
        "despawn" => {
            let [raw] = exactly::<1>(op, args, "<id>")?;
            driver.despawn(&id(raw)?).framed(Shape::Control)?;
            print("ok\n")?;
        }
        "peek" => {
            let (raw, lines) = match args {
                [raw] => (raw, None),
                // A non-numeric --lines is ignored, as agmsg's drivers do.
                [raw, flag, n] if flag == "--lines" => (raw, n.parse::<u32>().ok()),
                _ => return Err(usage::<()>("peek: expected <id> [--lines N]").unwrap_err().into()),
            };
            let text = driver.peek(&id(raw)?, lines).framed(Shape::Record)?;
            print(&text)?;
        }
        "poke" => {
            let [raw, text] = exactly::<2>(op, args, "<id> <text>")?;
            driver.poke(&id(raw)?, text).framed(Shape::Control)?;
            print("ok\n")?;
        }
        "pane-state" => {
            let [raw] = exactly::<1>(op, args, "<id>")?;
            let state = driver.pane_state(&id(raw)?).framed(Shape::Presence)?;
            print(match state {
                PanePresence::Present => "present\n",
                PanePresence::Gone => "gone\n",
                PanePresence::Unknown => "unknown\n",
            })?;
            if state == PanePresence::Unknown {
                // Could not tell: the code of a terminal that could not be asked.
                return Ok(ExitCode::from(TermFailKind::Unreachable.exit_code()));
            }
        }
        "where" => {
            let [raw] = exactly::<1>(op, args, "<id>")?;
            let container = driver.where_is(&id(raw)?).framed(Shape::Token)?;
            print(&format!("{container}\n"))?;
        }
        "arrange" => {
            let [source_raw, intent, target_raw] = exactly::<3>(op, args, "<source> place_below|place_right|swap <target>")?;
            let intent = match intent.replace('-', "_").as_str() {
                "place_below" => Intent::PlaceBelow,
                "place_right" => Intent::PlaceRight,
                "swap" => Intent::Swap,
                other => {
                    return Err(Outcome::Failed(Shape::Token, TerminalError::new(TermFailKind::Unsupported, format!("unknown intent {other:?}"))));
                }
            };
            let (source_id, target_id) = (id(source_raw)?, id(target_raw)?);
            let outcome = match driver.arrange(&source_id, intent, &target_id) {
                Err(f) if f.kind == TermFailKind::Failed => return Err(Outcome::Failed(Shape::Control, f)),
                other => other.framed(Shape::Token)?,
            };
            print(match outcome {
                ArrangeOutcome::Moved => "moved\n",
                ArrangeOutcome::Unchanged => "unchanged\n",
            })?;
        }
        "name" => {
            let (raw, team, agent, mode) = match args {
                [raw, team, agent] => (raw, team, agent, NamingMode::LabelAndKey),
                [raw, team, agent, key] if key == "key" => (raw, team, agent, NamingMode::KeyOnly),
                _ => return Err(usage::<()>("name: expected <id> <team> <agent> [key]").unwrap_err().into()),
            };
            driver.name_pane(&id(raw)?, team, agent, mode).framed(Shape::Control)?;
            print("ok\n")?;
        }
        "capability" => {
            let (capability, raw) = match args {
                [capability] => (capability, None),
                [capability, raw] => (capability, Some(id(raw)?)),
                _ => return Err(usage::<()>("capability: expected <capability> [id]").unwrap_err().into()),
            };
            return Ok(match driver.capability(capability, raw.as_deref()) {
                Ok(answer) => answer_code(answer),
                // No narrowing op: the manifest's ceiling holds for every id.
                Err(f) if f.kind == TermFailKind::Unsupported => {
                    answer_code(if source.manifest.capabilities.contains(capability) { Answer::Yes } else { Answer::No })
                }
                Err(f) => {
                    eprintln!("agmsg-host: terminal capability: {}", display::line(&f.message));
                    answer_code(Answer::Unknown)
                }
            });
        }
        "team-input-ready" => {
            let [raw, expected] = exactly::<2>(op, args, "<id> <expected>")?;
            return Ok(answer_code(driver.team_input_ready(&id(raw)?, expected).framed(Shape::Record)?));
        }
        "team-observe" => {
            let [raw] = exactly::<1>(op, args, "<id>")?;
            print(&format!("{}\n", driver.team_observe(&id(raw)?).framed(Shape::Record)?))?;
        }
        "find-by-label" => {
            let [label] = exactly::<1>(op, args, "<label>")?;
            print_lines(driver.find_by_label(label).framed(Shape::Record)?)?;
        }
        "label-of" => {
            let [raw] = exactly::<1>(op, args, "<id>")?;
            print(&format!("{}\n", driver.label_of(&id(raw)?).framed(Shape::Record)?))?;
        }
        "id-ok" => {
            let [raw] = exactly::<1>(op, args, "<id>")?;
            return Ok(if driver.id_ok(&id(raw)?).framed(Shape::Record)? { ExitCode::SUCCESS } else { ExitCode::from(1) });
        }
        "pane-process-observe" => {
            let [raw] = exactly::<1>(op, args, "<id>")?;
            print_lines(driver.pane_process_observe(&id(raw)?).framed(Shape::Record)?)?;
        }
        "enumerate-panes" => {
            exactly::<0>(op, args, "no arguments")?;
            print_lines(driver.enumerate_panes().framed(Shape::Record)?)?;
        }
        "fence" => {
            let (raw, seat) = match args {
                [raw] => (raw, None),
                [raw, seat] => (raw, Some(seat.as_str())),
                _ => return Err(usage::<()>("fence: expected <id> [seat-pid]").unwrap_err().into()),
            };
            print(&format!("{}\n", driver.fence(&id(raw)?, seat).framed(Shape::Record)?))?;
        }
        "pane-focused" => {
            let [raw] = exactly::<1>(op, args, "<id>")?;
            print(if driver.pane_focused(&id(raw)?).framed(Shape::Record)? { "yes\n" } else { "no\n" })?;
        }
        "input-clear" => {
            let [raw] = exactly::<1>(op, args, "<id>")?;
            driver.input_clear(&id(raw)?).framed(Shape::Control)?;
            print("ok\n")?;
        }
        "input-type" => {
            let [raw, text] = exactly::<2>(op, args, "<id> <text>")?;
            driver.input_type(&id(raw)?, text).framed(Shape::Control)?;
            print("ok\n")?;
        }
        "expected-label" => {
            let [team, agent] = exactly::<2>(op, args, "<team> <agent>")?;
            print(&format!("{}\n", driver.expected_label(team, agent).framed(Shape::Record)?))?;
        }
        "instance-for-ref" => {
            let [reference] = exactly::<1>(op, args, "<ref>")?;
            print(&format!("{}\n", driver.instance_for_ref(reference).framed(Shape::Record)?))?;
        }
        "id-split" => {
            let [raw] = exactly::<1>(op, args, "<id>")?;
            let (instance, pane) = driver.id_split(&id(raw)?).framed(Shape::Record)?;
            print(&format!("{instance}\t{pane}\n"))?;
        }
        other => return Err(usage::<()>(format!("unknown op {other:?}")).unwrap_err().into()),
    }
    Ok(ExitCode::SUCCESS)
}

fn print_lines(lines: Vec<String>) -> Result<(), Outcome> {
    print(&lines.iter().map(|l| format!("{l}\n")).collect::<String>())
}

/// `terminal list [--json]`: the drivers detection may pick, in resolution order, then the plugins that
/// run once trusted, with the command that trusts them (the catalog's rows, as `storage list` shows them).
fn list(candidates: &[TerminalSource], args: &[String]) -> Result<ExitCode, Outcome> {
    let json = match args {
        [] => false,
        [flag] if flag == "--json" => true,
        _ => return Err(usage::<()>("list: expected [--json]").unwrap_err().into()),
    };
    let entries = catalog::entries(Axis::Terminal, &[]).map_err(|e| TerminalError::new(TermFailKind::Unreachable, e)).framed(Shape::Record)?;
    let origin_of = |name: &str| entries.iter().find(|e| e.name == name && e.origin.runs()).cloned();
    let untrusted = entries.iter().filter(|e| !e.origin.runs());
    if json {
        let mut rows: Vec<_> = candidates
            .iter()
            .map(|c| {
                let entry = origin_of(&c.manifest.name).unwrap_or(Entry { name: c.manifest.name.clone(), origin: Origin::Bundled });
                let mut row = entry.json_fields();
                row.insert("priority".into(), c.manifest.priority.into());
                row.insert("backend".into(), c.manifest.backend.clone().into());
                row.insert("capabilities".into(), c.manifest.capabilities.clone().into());
                row.insert("programs".into(), c.manifest.programs.clone().into());
                row.insert("env".into(), c.manifest.env.clone().into());
                row.insert("bundled".into(), (entry.origin == Origin::Bundled).into());
                serde_json::Value::Object(row)
            })
            .collect();
        rows.extend(untrusted.map(|e| serde_json::Value::Object(e.json_fields())));
        print(&format!("{}\n", serde_json::Value::Array(rows)))?;
    } else {
        let mut text = format!("{:<10} {:>8}  {:<44} {:<24} {}\n", "DRIVER", "PRIORITY", "CAPABILITIES", "RUNS", "SOURCE");
        for c in candidates {
            let origin = origin_of(&c.manifest.name).map_or("bundled", |e| e.origin.word());
            // Manifest text (a plugin's, a driver directory's): shown, never sent to the terminal.
            text.push_str(&format!(
                "{:<10} {:>8}  {:<44} {:<24} {origin}\n",
                display::line(&c.manifest.name),
                c.manifest.priority,
                display::line(&c.manifest.capabilities.join(" ")),
                display::line(&c.manifest.programs.join(" "))
            ));
        }
        for e in untrusted {
            if let Origin::Untrusted { trust_command, .. } = &e.origin {
                text.push_str(&format!("{:<10} {:>8}  {:<44} {:<24} untrusted: {trust_command}\n", display::line(&e.name), "-", "-", "-"));
            }
        }
        print(&text)?;
    }
    Ok(ExitCode::SUCCESS)
}
