//! `agmsg-host spawn <type> <team> <agent> --project P [--terminal T] [--placement ...] [--role R]
//! [--no-wait] [--ready-timeout N] [--json]`: an agent started in a new pane and named (the library's
//! [`agmsg_host::spawn`], run as [`agmsg_host::spawn::commands`] says), then waited for; prints the placement reference. And `agmsg-host despawn
//! <team> <from> <agent> [--force] [--timeout N]`, agmsg's despawn by name.
//!
//! Exit codes: 0 spawned (a naming failure, a record not written or no agmsg to pre-join in are
//! warnings: the pane exists); 1 the agent cannot be launched as asked (an unknown or unspawnable type,
//! a refused option, a missing project or program, a malformed spawn options file, its role held by a
//! live session, the pre-join failed), as agmsg's spawn; 3 the agent did not signal ready in time (it
//! may still be booting); 10 / 12 / 13 the terminal's own classes (§2.3: unreachable, failed,
//! unsupported, e.g. plain with no window to open); 2 usage.

use std::process::ExitCode;
use std::time::Duration;

use super::exit;
use super::types::BootArgs;
use agmsg_host::error::HostError;
use agmsg_host::spawn::commands::{self, SpawnCommand};
use agmsg_host::terminal::driver::SpawnTarget;

pub const LONG_HELP: &str = "Start an agent in a new pane: the command `types boot-argv` prints, run by a \
    terminal driver's spawn, then the pane named <team>:<agent>.\n\n\
    The terminal is --terminal, else AGMSG_TERMINAL_DRIVER, else the one this session runs under (as \
    `terminal resolve-placement` finds it). The command runs through agmsg's boot script, a private \
    file the pane's shell removes: it enters the project, sets AGMSG_SPAWNED=1, unsets the type's \
    spawn_unset_env, runs the agent and leaves a shell when it exits. AGMSG_TERMINAL_NAMING=off names \
    only the pane's key, not its visible label.\n\n\
    Prints the placement reference (<terminal>:<id>, e.g. tmux:/tmp/tmux-1000/default:@3), which \
    `terminal despawn`, `peek` and `poke` take.\n\n\
    Before launching, as agmsg's spawn: a role whose actas lock a live session holds is refused; the \
    agent is joined to its team for the project by agmsg's own scripts/join.sh (under AGMSG_SKILL_DIR, \
    else ~/.agents/skills/agmsg; without it nothing is joined, with a warning); the type's options \
    from spawn_options.yaml (AGMSG_SPAWN_OPTIONS_FILE, else ~/.agmsg/config/spawn_options.yaml; its \
    <type>@<role> section for --role or an agent named <...>_<role>_<vendor>) go on the command line \
    before any --spawn-arg. After: the placement record run/spawn.<team>__<agent> \
    (<id> TAB <project> TAB <type>, the id as agmsg's despawn.sh reads it: a tmux pane's bare %N or \
    window's @N; the whole reference in run/agmsg-host.spawn.<team>__<agent>) is written for despawn, and spawn waits until the agent's \
    watcher signals ready (run/ready.<team>__<agent>), at most --ready-timeout seconds (default 90), \
    unless --no-wait or the type has no readiness handshake (monitor=no); it prints \
    status=ready|timeout name=<agent> team=<team> after=<N>s after the reference.\n\n\
    Exit codes: 0 spawned; 1 the agent cannot be launched as asked (unknown or unspawnable type, --model \
    for a type without model_arg, a missing project, its program not on PATH, a malformed spawn \
    options file, a missing --role section, its actas role held by a live session, the pre-join \
    failed); 3 not ready within the timeout (the pane and the record stay); 10 / 12 / 13 the terminal \
    could not be asked / failed / cannot spawn here; 2 usage.";

pub const DESPAWN_HELP: &str = "Tear down a member started by spawn, by its team and name, as agmsg's despawn.sh: \
    graceful by default (send ctrl:despawn from <from>, then wait until its actas lock is released, at \
    most --timeout seconds, default 30); when no live session holds the lock, or with --force, close \
    the pane its placement record names and drop its registration (agmsg's reset.sh) from here. The \
    placement record is removed when done.\n\n\
    Prints status=ok|forced|timeout name=<agent> team=<team> [after=<N>s | note=no-live-lock].\n\n\
    Exit codes: 0 done; 1 refused (an invalid name, --force with no placement record, the message \
    could not be sent); 3 the member did not release its lock in time (retry with --force); 2 usage.";

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
    /// The spawn options role: its <type>@<role> section of spawn_options.yaml, which must exist
    /// (default: read from an agent named <...>_<role>_<vendor>)
    #[arg(long, value_name = "ROLE")]
    role: Option<String>,
    /// Do not wait for the agent's readiness
    #[arg(long)]
    no_wait: bool,
    /// Seconds to wait for the agent's readiness before giving up (exit 3)
    #[arg(long, value_name = "SECONDS", default_value_t = 90)]
    ready_timeout: u64,
    /// The result as one JSON object: reference, terminal, id, placement, naming, joined, record, ready,
    /// warnings, and the boot command as `types boot-argv` prints it
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
pub struct DespawnArgs {
    /// The member's team
    team: String,
    /// The sender of the control message (the leader's own name)
    from: String,
    /// The member to tear down
    agent: String,
    /// Tear it down from here through its placement record, without asking it
    #[arg(long)]
    force: bool,
    /// Seconds to wait for a graceful despawn
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    timeout: u64,
}

pub fn run(driver_flag: Option<String>, args: SpawnArgs) -> ExitCode {
    if driver_flag.is_some() {
        return exit::fail("spawn", &HostError::usage("spawn addresses two axes: choose its terminal with --terminal, not --driver"));
    }
    let SpawnArgs { boot, terminal, placement, role, no_wait, ready_timeout, json } = args;
    let (agent_type, boot) = boot.request();
    let command = SpawnCommand {
        agent_type,
        boot,
        terminal,
        target: placement.target(),
        role,
        no_wait,
        ready_timeout: Duration::from_secs(ready_timeout),
        json,
    };
    // The message may carry a manifest's or a driver's text: exit::fail prints one visible, capped line.
    exit::report("spawn", commands::spawn(command, &mut std::io::stdout().lock(), &mut std::io::stderr()))
}

pub fn run_despawn(driver_flag: Option<String>, args: DespawnArgs) -> ExitCode {
    if driver_flag.is_some() {
        return exit::fail("despawn", &HostError::usage("the pane's terminal comes from its placement record, not --driver"));
    }
    let DespawnArgs { team, from, agent, force, timeout } = args;
    let done = commands::despawn(&team, &from, &agent, force, Duration::from_secs(timeout), &mut std::io::stdout(), &mut std::io::stderr());
    exit::report("despawn", done)
}
