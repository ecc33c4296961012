//! `agmsg-host spawn <type> <team> <agent> --project P [--terminal T] [--placement ...] [--role R]
//! [--no-wait] [--ready-timeout N] [--json]`: an agent started in a new pane and named (the library's
//! [`agmsg_host::spawn`]), then waited for; prints the placement reference. And `agmsg-host despawn
//! <team> <from> <agent> [--force] [--timeout N]`, agmsg's despawn by name.
//!
//! Exit codes: 0 spawned (a naming failure, a record not written or no agmsg to pre-join in are
//! warnings: the pane exists); 1 the agent cannot be launched as asked (an unknown or unspawnable type,
//! a refused option, a missing project or program, a malformed spawn options file, its role held by a
//! live session, the pre-join failed), as agmsg's spawn; 3 the agent did not signal ready in time (it
//! may still be booting); 10 / 12 / 13 the terminal's own classes (§2.3: unreachable, failed,
//! unsupported, e.g. plain with no window to open); 2 usage.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use serde_json::json;

use super::exit;
use super::types::{self, BootArgs};
use agmsg_host::agent::registry::{self, AgentType, Registry};
use agmsg_host::display;
use agmsg_host::error::{ExitClass, HostError};
use agmsg_host::log::host_log;
use agmsg_host::runtime::Runtime;
use agmsg_host::spawn::despawn::{self, DespawnRequest, Despawned};
use agmsg_host::spawn::join::Joined;
use agmsg_host::spawn::options;
use agmsg_host::spawn::place::{self, Readiness, RunDir};
use agmsg_host::spawn::{self, Naming, SpawnRequest};
use agmsg_host::terminal::driver::{NamingMode, SpawnTarget, TermFailKind};
use agmsg_host::terminal::source::Candidates;

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
    // The message may carry a manifest's or a driver's text: exit::fail prints one visible, capped line.
    spawn(args).unwrap_or_else(|e| exit::fail("spawn", &e))
}

/// What the spawn options file gives this type and agent: tokens (before the `--spawn-arg` ones) and
/// a required role's profile directory to export.
fn file_options(reg: &Registry, t: &AgentType, agent: &str, role: Option<&str>) -> Result<options::Resolved, HostError> {
    let file = match options::path_from_env() {
        Some(path) => options::load(&path)?,
        None => None,
    };
    let vendors: Vec<&str> = reg.types().map(|t| t.value("vendor")).filter(|v| !v.is_empty()).collect();
    let contract = options::ProfileContract::of(|key| t.value(key));
    options::resolve(file.as_ref(), &t.name, agent, role, &vendors, contract.as_ref())
}

fn spawn(args: SpawnArgs) -> Result<ExitCode, HostError> {
    let SpawnArgs { boot, terminal, placement, role, no_wait, ready_timeout, json } = args;
    let (type_name, mut req) = boot.request();
    let reg = types::registry_for(&type_name);
    let t = reg.require(&type_name)?;
    let options::Resolved { mut tokens, env } = file_options(&reg, t, &req.agent, role.as_deref())?;
    tokens.append(&mut req.spawn_options);
    req.spawn_options = tokens;
    let skill_dir = registry::require_skill_dir()?;
    let runtime = Runtime::from_env().map_err(|e| HostError::new(ExitClass::Terminal(TermFailKind::Unreachable), e))?;
    let candidates = Candidates::new();
    let (team, agent) = (req.team.clone(), req.agent.clone());
    let env = env.into_iter().collect();
    let request =
        SpawnRequest { boot: req, terminal: terminal.as_deref(), target: placement.target(), naming: spawn::naming_mode_from_env(), env };
    let spawned = spawn::spawn(&runtime, t, &candidates, &skill_dir, request)?;

    let mut warnings = Vec::new();
    if let Naming::Failed(why) = &spawned.naming {
        warnings.push(why.clone());
    }
    if let Joined::NoAgmsg(script) = &spawned.joined {
        warnings.push(format!(
            "{} is not there (agmsg is not installed): {agent} was not pre-joined to {team}, its actas will ask for a team",
            script.display()
        ));
    }
    if let Err(why) = &spawned.record {
        warnings.push(format!("{why}: despawn by name will not find this pane"));
    }
    if !spawned.boot.wait_ready && !no_wait {
        eprintln!("agmsg-host spawn: agent type {type_name} has no readiness handshake (monitor=no): not waiting for it");
    }
    for warning in &warnings {
        host_log::warn(warning);
    }
    let mut out = std::io::stdout().lock();
    // The reference first: whatever the wait says, the pane exists.
    if !json && let Err(e) = writeln!(out, "{}", display::line(&spawned.reference)).and_then(|()| out.flush()) {
        return Err(unwritten(&spawned.reference, e));
    }
    let readiness =
        (spawned.boot.wait_ready && !no_wait).then(|| place::wait_ready(&spawned.run, &team, &agent, Duration::from_secs(ready_timeout)));
    let (ready_word, after) = match readiness {
        None => ("skipped", None),
        Some(Readiness::Ready(after)) => ("ready", Some(after.as_secs())),
        // The whole timeout: that is how long was waited.
        Some(Readiness::TimedOut(_)) => ("timeout", Some(ready_timeout)),
    };
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
            "joined": spawned.joined == Joined::Joined,
            "record": spawned.record.as_ref().ok(),
            "ready": ready_word,
            "ready_after_s": after,
            "warnings": warnings,
            "boot": spawned.boot,
        });
        format!("{value}\n")
    } else if let Some(after) = after {
        // Names may hold anything valid in a name: shown as one visible line.
        format!("{}\n", display::line(&format!("status={ready_word} name={agent} team={team} after={after}s")))
    } else {
        String::new()
    };
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        return Err(unwritten(&spawned.reference, e));
    }
    if ready_word == "timeout" {
        eprintln!(
            "agmsg-host spawn: {} did not signal ready within {ready_timeout}s; it may still be booting (its pane stays: despawn it, or raise --ready-timeout)",
            display::line(&agent)
        );
        return Ok(exit::code(ExitClass::TimedOut));
    }
    Ok(ExitCode::SUCCESS)
}

/// The pane exists but its reference could not be printed: the terminal's "failed" (§2.3), as a
/// driver op whose answer is lost.
fn unwritten(reference: &str, e: std::io::Error) -> HostError {
    HostError::new(ExitClass::Terminal(TermFailKind::Failed), format!("spawned {reference}, but cannot write to stdout: {e}"))
}

pub fn run_despawn(driver_flag: Option<String>, args: DespawnArgs) -> ExitCode {
    if driver_flag.is_some() {
        return exit::fail("despawn", &HostError::usage("the pane's terminal comes from its placement record, not --driver"));
    }
    let DespawnArgs { team, from, agent, force, timeout } = args;
    let skill_dir = match registry::require_skill_dir() {
        Ok(dir) => dir,
        Err(e) => return exit::fail("despawn", &e),
    };
    let run = RunDir::new(&skill_dir);
    let req = DespawnRequest { team: &team, from: &from, agent: &agent, force, timeout: Duration::from_secs(timeout) };
    let outcome = match despawn::despawn(&run, &skill_dir, &req) {
        Ok(outcome) => outcome,
        Err(e) => return exit::fail("despawn", &e),
    };
    for warning in &outcome.warnings {
        host_log::warn(warning);
    }
    let (line, timed_out) = match outcome.despawned {
        Despawned::Forced => (format!("status=forced name={agent} team={team}"), false),
        Despawned::NoLiveLock => {
            eprintln!(
                "agmsg-host despawn: no live session holds {}'s actas lock: its recorded pane, if any, is closed and its registration dropped from here",
                display::line(&agent)
            );
            (format!("status=ok name={agent} team={team} note=no-live-lock"), false)
        }
        Despawned::Released(after) => (format!("status=ok name={agent} team={team} after={}s", after.as_secs()), false),
        Despawned::TimedOut(_) => {
            eprintln!(
                "agmsg-host despawn: {} did not tear down within {timeout}s; its watcher may be dead: retry with --force",
                display::line(&agent)
            );
            (format!("status=timeout name={agent} team={team} after={timeout}s"), true)
        }
    };
    println!("{}", display::line(&line));
    if timed_out { exit::code(ExitClass::TimedOut) } else { ExitCode::SUCCESS }
}
