//! `agmsg-host delivery set | status | modes`: how an agent type is told of new messages, written
//! into the project's delivery file as agmsg writes it (`agent::delivery`); and agmsg's Template
//! Method functions one by one (`apply`, `on-enable`, `on-disable`, `stop-directive`, with agmsg's
//! argv), which the `_delivery.sh` that `agmsg-host shim types` writes forwards to. Exit codes: 0 done;
//! 1 refused (an unknown type or mode, a mode the type does not accept, a bad target, a file that cannot
//! be read or edited, left as it was, a plug that failed); 2 usage; 3 (the side-effect ops) the type
//! does not override the op: agmsg's default applies.

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::json;

use super::exit;
use agmsg_host::agent::delivery::{self, Mode, SideEffect};
use agmsg_host::agent::registry::{self, Registry};
use agmsg_host::display;
use agmsg_host::error::{ExitClass, HostError};

pub const LONG_HELP: &str = "How an agent type is told of new messages: agmsg's delivery modes, \
    written into the project's delivery file (the type's hooks_file) exactly as agmsg's delivery.sh \
    writes it, so either tool reads what the other wrote.\n\n\
    Modes: monitor (a watcher streams messages into the session), turn (checked between turns), both, \
    off; a type accepts the modes its delivery_modes= lists. Commands name agmsg's scripts in its \
    directory ($AGMSG_SKILL_DIR, else ~/.agents/skills/agmsg). agmsg-host writes that one file and \
    touches no process: the directives it prints are for the running agent.\n\n\
    --driver names a delivery plug component to use instead of the type's own (a .wasm file, a \
    trusted plugin types/<name> or a bundled plug), to try a plug on a project before installing it.\n\n\
    apply, on-enable, on-disable and stop-directive are agmsg's _delivery.sh functions with agmsg's \
    argv (what `agmsg-host shim types` forwards to); the last three exit 3, printing nothing, when the \
    type does not override the op, so agmsg runs its own default.";

#[derive(Debug, clap::Subcommand)]
pub enum DeliveryCommand {
    /// Set a project's delivery mode for a type (monitor, turn, both, off)
    Set {
        mode: String,
        #[arg(value_name = "TYPE")]
        agent_type: String,
        project: PathBuf,
    },
    /// The mode a project's delivery file says for a type
    Status {
        #[arg(value_name = "TYPE")]
        agent_type: String,
        project: PathBuf,
        /// One JSON object
        #[arg(long)]
        json: bool,
    },
    /// agmsg_delivery_apply <type> <project> <mode>: write the type's delivery file for a mode (the
    /// file only: none of set's lines)
    Apply {
        #[arg(value_name = "TYPE")]
        agent_type: String,
        project: PathBuf,
        mode: String,
    },
    /// agmsg_delivery_on_enable <mode> <type> <project>: what the type prints when monitor delivery
    /// starts (exit 3: not overridden)
    OnEnable {
        mode: String,
        #[arg(value_name = "TYPE")]
        agent_type: String,
        project: PathBuf,
    },
    /// agmsg_delivery_on_disable <type> <project>: what the type prints when delivery is turned off
    /// (exit 3: not overridden)
    OnDisable {
        #[arg(value_name = "TYPE")]
        agent_type: String,
        project: PathBuf,
    },
    /// agmsg_delivery_stop_directive, for a type and project: the in-session directive that stops a
    /// watcher (exit 3: not overridden)
    StopDirective {
        #[arg(value_name = "TYPE")]
        agent_type: String,
        project: PathBuf,
    },
    /// The modes a type accepts
    Modes {
        #[arg(value_name = "TYPE")]
        agent_type: String,
        /// A JSON array
        #[arg(long)]
        json: bool,
    },
}

/// `delivery <command>`, with the global `--driver` (a plug component instead of the type's own).
pub fn run(plug: Option<String>, command: DeliveryCommand) -> ExitCode {
    match run_command(plug.as_deref(), command) {
        Ok(()) => ExitCode::SUCCESS,
        // A refusal's message may be several lines (a plug's error with its context).
        Err(e) => exit::fail_lines("delivery", &e),
    }
}

/// One line on stdout. A reader that went away (a closed pipe) loses the rest of the output, never the
/// work already done: no panic, the exit code says what happened to the file.
fn say(line: impl std::fmt::Display) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}

fn print_report(report: &delivery::SetReport) {
    for line in &report.warnings {
        eprintln!("{}", display::line(line));
    }
    for line in &report.notices {
        say(display::text(line));
    }
}

/// A side-effect op's answer: its lines, or, printing nothing, "not overridden" for agmsg's default.
fn print_side_effect(lines: Option<Vec<String>>) -> Result<(), HostError> {
    let lines = lines.ok_or_else(|| HostError::new(ExitClass::NotOverridden, ""))?;
    for line in &lines {
        say(display::text(line));
    }
    Ok(())
}

/// The type `name`; skipped plugin candidates of that name (an untrusted or broken `types/<name>`,
/// which may have been meant) are warned about on the log.
fn require<'r>(registry: &'r Registry, name: &str) -> Result<&'r agmsg_host::agent::AgentType, HostError> {
    let t = registry.require(name)?;
    for warning in registry.ignored(name) {
        agmsg_host::log::host_log::warn(warning);
    }
    Ok(t)
}

fn run_command(plug: Option<&str>, command: DeliveryCommand) -> Result<(), HostError> {
    let registry = Registry::from_env();
    let plug = plug.map(delivery::component::source_named).transpose()?;
    let plug = plug.as_ref();
    match command {
        DeliveryCommand::Set { mode, agent_type, project } => {
            let mode = Mode::parse(&mode)?;
            let t = require(&registry, &agent_type)?;
            print_report(&delivery::set(t, mode, &project, &registry::require_skill_dir()?, plug)?);
        }
        DeliveryCommand::Apply { agent_type, project, mode } => {
            let mode = Mode::parse(&mode)?;
            let t = require(&registry, &agent_type)?;
            print_report(&delivery::apply(t, mode, &project, &registry::require_skill_dir()?, plug)?);
        }
        DeliveryCommand::OnEnable { mode, agent_type, project } => {
            let mode = Mode::parse(&mode)?;
            let t = require(&registry, &agent_type)?;
            print_side_effect(delivery::side_effect(t, SideEffect::OnEnable(mode), &project, &registry::require_skill_dir()?, plug)?)?;
        }
        DeliveryCommand::OnDisable { agent_type, project } => {
            let t = require(&registry, &agent_type)?;
            print_side_effect(delivery::side_effect(t, SideEffect::OnDisable, &project, &registry::require_skill_dir()?, plug)?)?;
        }
        DeliveryCommand::StopDirective { agent_type, project } => {
            let t = require(&registry, &agent_type)?;
            print_side_effect(delivery::side_effect(t, SideEffect::StopDirective, &project, &registry::require_skill_dir()?, plug)?)?;
        }
        DeliveryCommand::Status { agent_type, project, json } => {
            let t = require(&registry, &agent_type)?;
            let report = delivery::status(t, &project, &registry::require_skill_dir()?, plug)?;
            if json {
                let entries = report
                    .status
                    .entries
                    .as_ref()
                    .map(|e| e.iter().map(|(k, n)| (k.to_string(), json!(n))).collect::<serde_json::Map<_, _>>());
                let off = report.status.off.map(|why| match why {
                    delivery::OffDetail::NoHooks => "no_hooks",
                    delivery::OffDetail::NoFile => "no_file",
                    delivery::OffDetail::NotJson => "not_json",
                });
                let value = json!({
                    "type": t.name,
                    "mode": report.status.mode.name(),
                    "off": off,
                    "file": report.file.as_ref().map(|f| f.display().to_string()),
                    "exists": report.exists,
                    "entries": entries,
                    "notes": report.notes,
                });
                say(value);
            } else {
                say(format_args!("mode: {}", report.status.words(report.file.as_deref())));
                if let (Some(file), Some(entries), true) = (&report.file, &report.status.entries, report.exists) {
                    say(format_args!("settings hooks file: {}", display::line(&file.display().to_string())));
                    for (event, n) in entries {
                        say(format_args!("  {:<22}{n}", format!("{event} entries:")));
                    }
                }
                for note in &report.notes {
                    say(note);
                }
            }
        }
        DeliveryCommand::Modes { agent_type, json } => {
            let t = require(&registry, &agent_type)?;
            let modes: Vec<&str> = delivery::modes(t).into_iter().map(Mode::name).collect();
            if json {
                say(json!(modes));
            } else {
                say(modes.join(" "));
            }
        }
    }
    Ok(())
}
