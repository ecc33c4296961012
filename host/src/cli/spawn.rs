//! `agmsg-host spawn <type> <team> <agent> --project P [--terminal T] [--placement ...] [--json]`: an
//! agent started in a new pane and named (the library's [`agmsg_host::spawn`]); prints the placement
//! reference.
//!
//! Exit codes: 0 spawned (a naming failure is a warning: the pane exists, and its reference is what
//! despawns it); 1 the agent cannot be launched as asked (an unknown or unspawnable type, a refused
//! option, a missing project or program), as `types boot-argv`; 10 / 12 / 13 the terminal's own
//! classes (§2.3: unreachable, failed, unsupported, e.g. plain with no window to open); 2 usage.

use std::io::Write;
use std::process::ExitCode;

use serde_json::json;

use super::types::{self, BootArgs};
use agmsg_host::display;
use agmsg_host::log::host_log;
use agmsg_host::runtime::Runtime;
use agmsg_host::spawn::{self, Naming, SpawnError, SpawnRequest};
use agmsg_host::terminal::TerminalSource;
use agmsg_host::terminal::driver::{NamingMode, SpawnTarget, TermFailKind};
use agmsg_host::terminal::TerminalError;

pub const LONG_HELP: &str = "Start an agent in a new pane: the command `types boot-argv` prints, run by a \
    terminal driver's spawn, then the pane named <team>:<agent>.\n\n\
    The terminal is --terminal, else AGMSG_TERMINAL_DRIVER, else the one this session runs under (as \
    `terminal resolve-placement` finds it). The command runs through agmsg's boot script, a private \
    file the pane's shell removes: it enters the project, sets AGMSG_SPAWNED=1, unsets the type's \
    spawn_unset_env, runs the agent and leaves a shell when it exits. AGMSG_TERMINAL_NAMING=off names \
    only the pane's key, not its visible label.\n\n\
    Prints the placement reference (<terminal>:<id>, e.g. tmux:/tmp/tmux-1000/default:@3), which \
    `terminal despawn`, `peek` and `poke` take.\n\n\
    Exit codes: 0 spawned; 1 the agent cannot be launched as asked (unknown or unspawnable type, --model \
    for a type without model_arg, a missing project, its program not on PATH); 10 / 12 / 13 the \
    terminal could not be asked / failed / cannot spawn here; 2 usage.";

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Placement {
    /// A new window (tmux), tab (herdr) or terminal
    Window,
    /// A split to the right of the caller's pane
    PaneH,
    /// A split below the caller's pane
    PaneV,
}

impl Placement {
    fn target(self) -> SpawnTarget {
        match self {
            Placement::Window => SpawnTarget::Window,
            Placement::PaneH => SpawnTarget::PaneH,
            Placement::PaneV => SpawnTarget::PaneV,
        }
    }

    fn word(self) -> &'static str {
        match self {
            Placement::Window => "window",
            Placement::PaneH => "pane-h",
            Placement::PaneV => "pane-v",
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct SpawnArgs {
    #[command(flatten)]
    boot: BootArgs,
    /// The terminal driver (tmux, herdr, orca, plain, a trusted plugin) [env: AGMSG_TERMINAL_DRIVER]
    #[arg(long, value_name = "NAME")]
    terminal: Option<String>,
    /// Where the pane goes
    #[arg(long, value_enum, default_value = "window")]
    placement: Placement,
    /// The result as one JSON object: reference, terminal, id, placement, naming, warnings, and the boot
    /// command as `types boot-argv` prints it
    #[arg(long)]
    json: bool,
}

pub fn run(driver_flag: Option<String>, args: SpawnArgs) -> ExitCode {
    if driver_flag.is_some() {
        eprintln!("agmsg-host spawn: spawn addresses two axes: choose its terminal with --terminal, not --driver");
        return ExitCode::from(2);
    }
    match spawn(args) {
        Ok(code) => code,
        Err(e) => {
            // The message may carry a manifest's or a driver's text: one visible, capped line.
            eprintln!("agmsg-host spawn: {}", display::line(&e.to_string()));
            ExitCode::from(e.exit_code())
        }
    }
}

fn spawn(args: SpawnArgs) -> Result<ExitCode, SpawnError> {
    let SpawnArgs { boot, terminal, placement, json } = args;
    let (type_name, req) = boot.request();
    let reg = types::registry_for(&type_name);
    let t = reg.require(&type_name).map_err(SpawnError::Refused)?;
    let runtime = Runtime::from_env().map_err(|e| SpawnError::Terminal(TerminalError::new(TermFailKind::Unreachable, e)))?;
    let candidates = TerminalSource::available();
    let request = SpawnRequest { boot: req, terminal: terminal.as_deref(), target: placement.target(), naming: spawn::naming_mode_from_env() };
    let spawned = spawn::spawn(&runtime, t, &candidates, request)?;

    let mut warnings = Vec::new();
    if let Naming::Failed(why) = &spawned.naming {
        warnings.push(why.clone());
    }
    for warning in &warnings {
        host_log::warn(warning);
    }
    let text = if json {
        let naming = match &spawned.naming {
            Naming::Named(NamingMode::LabelAndKey) => "label-and-key",
            Naming::Named(NamingMode::KeyOnly) => "key-only",
            Naming::Unsupported => "unsupported",
            Naming::Failed(_) => "failed",
        };
        let value = json!({
            "reference": spawned.reference,
            "terminal": spawned.terminal,
            "id": spawned.id,
            "placement": placement.word(),
            "naming": naming,
            "warnings": warnings,
            "boot": spawned.boot,
        });
        format!("{value}\n")
    } else {
        // The id is the driver's, checked to be one line; shown, never interpreted.
        format!("{}\n", display::line(&spawned.reference))
    };
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        eprintln!("agmsg-host spawn: spawned {}, but cannot write to stdout: {e}", display::line(&spawned.reference));
        return Ok(ExitCode::from(TermFailKind::Failed.exit_code()));
    }
    Ok(ExitCode::SUCCESS)
}
