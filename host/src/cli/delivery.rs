//! `agmsg-host delivery set | status | modes`: how an agent type is told of new messages, written
//! into the project's delivery file as agmsg writes it (`agent::delivery`). Exit codes: 0 done; 1
//! refused (an unknown type or mode, a mode the type does not accept, a bad target, a file that cannot
//! be read or edited, left as it was); 2 usage.

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::json;

use agmsg_host::agent::delivery::{self, Mode};
use agmsg_host::agent::registry::{self, Registry};
use agmsg_host::display;

pub const LONG_HELP: &str = "How an agent type is told of new messages: agmsg's delivery modes, \
    written into the project's delivery file (the type's hooks_file) exactly as agmsg's delivery.sh \
    writes it, so either tool reads what the other wrote.\n\n\
    Modes: monitor (a watcher streams messages into the session), turn (checked between turns), both, \
    off; a type accepts the modes its delivery_modes= lists. Commands name agmsg's scripts in its \
    directory ($AGMSG_SKILL_DIR, else ~/.agents/skills/agmsg). agmsg-host writes that one file and \
    touches no process: the directives it prints are for the running agent.";

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
    /// The modes a type accepts
    Modes {
        #[arg(value_name = "TYPE")]
        agent_type: String,
        /// A JSON array
        #[arg(long)]
        json: bool,
    },
}

pub fn run(command: DeliveryCommand) -> ExitCode {
    match run_command(command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            for line in message.lines() {
                eprintln!("agmsg-host delivery: {}", display::line(line));
            }
            ExitCode::from(1)
        }
    }
}

fn skill_dir() -> Result<PathBuf, String> {
    registry::skill_dir().ok_or_else(|| "agmsg's directory is unknown: set AGMSG_SKILL_DIR (or HOME)".to_owned())
}

fn run_command(command: DeliveryCommand) -> Result<(), String> {
    let registry = Registry::from_env();
    match command {
        DeliveryCommand::Set { mode, agent_type, project } => {
            let mode = Mode::parse(&mode)?;
            let t = registry.require(&agent_type)?;
            let report = delivery::set(t, mode, &project, &skill_dir()?)?;
            for line in &report.warnings {
                eprintln!("{}", display::line(line));
            }
            for line in &report.notices {
                println!("{}", display::text(line));
            }
        }
        DeliveryCommand::Status { agent_type, project, json } => {
            let t = registry.require(&agent_type)?;
            let report = delivery::status(t, &project, &skill_dir()?)?;
            if json {
                let entries = report.status.entries.as_ref().map(|e| e.iter().map(|(k, n)| (k.to_string(), json!(n))).collect::<serde_json::Map<_, _>>());
                let value = json!({
                    "type": t.name,
                    "mode": report.status.mode.name(),
                    "file": report.file.as_ref().map(|f| f.display().to_string()),
                    "exists": report.exists,
                    "entries": entries,
                });
                println!("{value}");
            } else {
                println!("mode: {}", report.status.mode);
                if let (Some(file), Some(entries), true) = (&report.file, &report.status.entries, report.exists) {
                    println!("settings hooks file: {}", display::line(&file.display().to_string()));
                    for (event, n) in entries {
                        println!("  {:<22}{n}", format!("{event} entries:"));
                    }
                }
            }
        }
        DeliveryCommand::Modes { agent_type, json } => {
            let t = registry.require(&agent_type)?;
            let modes: Vec<&str> = delivery::modes(t).into_iter().map(Mode::name).collect();
            if json {
                println!("{}", json!(modes));
            } else {
                println!("{}", modes.join(" "));
            }
        }
    }
    Ok(())
}
