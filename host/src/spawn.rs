//! Spawn: an agent of some type started in a new pane, composing the two axes as agmsg's `spawn.sh`
//! does (spec §6.4: `terminal_spawn`, then `terminal_name`).
//!
//! 1. The types axis builds the launch command ([`boot::boot_command`], the one `types boot-argv`
//!    prints) and its program must be on `PATH`.
//! 2. The actas lock: an agent whose role a live session holds is refused ([`actas`]), as agmsg
//!    refuses it, before anything is launched or registered.
//! 3. The terminal is chosen as for every terminal op ([`resolve::choose_driver`]: `--terminal`, else
//!    `AGMSG_TERMINAL_DRIVER`, else §6.3 placement).
//! 4. The pre-join: agmsg's `join.sh` registers the agent in its team for the project ([`join`]).
//! 5. The command becomes agmsg's boot script ([`BootCommand::script`]) in a private temporary file,
//!    and the terminal's `spawn` gets `/bin/sh <file>`. The contract's `boot` is a list of words that
//!    tmux executes as an argv while herdr and orca hand one command line to a shell (each word that
//!    is not plain single-quoted), and it carries no environment: two plain words mean the same to
//!    every driver, and the script carries the working directory, `AGMSG_SPAWNED=1` and the type's
//!    `spawn_unset_env`. A stale readiness sentinel is removed first when spawn will wait for it.
//! 6. The placement record `run/spawn.<team>__<agent>` ([`place`]) is written atomically:
//!    `<terminal>:<id>\t<project>\t<type>`, what despawn by name reads.
//! 7. The pane is named `<team>:<agent>` when the driver advertises `name` (only the key when
//!    `AGMSG_TERMINAL_NAMING=off`), and the key is read back (`label-of`) rather than trusted.
//!
//! The caller then waits for readiness ([`place::wait_ready`]) when [`BootCommand::wait_ready`] says
//! agmsg would. Per-type launch options come from `spawn_options.yaml` ([`options`]). [`commands`]:
//! `spawn` and `despawn` as the command line asks for them, from the environment, with their reports.

pub mod actas;
pub mod commands;
pub mod despawn;
pub mod join;
pub mod options;
pub mod place;

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::agent::boot::{self, BootCommand, BootRequest};
use crate::agent::registry::AgentType;
use crate::capabilities::Capability;
use crate::error::HostError;
use crate::runtime::Runtime;
use crate::terminal::driver::{NamingMode, SpawnTarget, TermFailKind};
use crate::terminal::resolve;
use crate::terminal::source::Candidates;
use crate::terminal::{Terminal, TerminalError};
use actas::LockState;
use join::Joined;
use place::{PlacementRecord, RunDir};

/// The variable that makes naming set only the key, not the visible label (agmsg's).
pub const NAMING_VAR: &str = "AGMSG_TERMINAL_NAMING";

/// The variable agmsg's spawn exports with the team, read by a driver that labels at creation
/// (herdr); passed only to a driver whose manifest declares it.
pub const SPAWN_TEAM_VAR: &str = "AGMSG_SPAWN_TEAM";

/// The interpreter of the boot script.
const SHELL: &str = "/bin/sh";

pub struct SpawnRequest<'a> {
    pub boot: BootRequest,
    /// The terminal driver to use (`--terminal`); `None`: as every terminal op chooses one.
    pub terminal: Option<&'a str>,
    pub target: SpawnTarget,
    pub naming: NamingMode,
    /// Variables the boot script exports besides the type's (a required role's profile directory,
    /// [`options::AgentOptions::env`]).
    pub env: Vec<(String, String)>,
}

/// How the new pane was named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Naming {
    /// Named, and the key read back as written (or the driver cannot read it back).
    Named(NamingMode),
    /// The driver does not advertise `name` (plain): the pane has no name to set.
    Unsupported,
    /// The pane exists but naming it failed, or the key read back differs: why.
    Failed(String),
}

#[derive(Debug)]
pub struct Spawned {
    /// The terminal driver that created the pane.
    pub terminal: String,
    /// The new pane's id, as the driver printed it.
    pub id: String,
    /// The placement reference `<terminal>:<id>` every other op takes.
    pub reference: String,
    pub boot: BootCommand,
    pub naming: Naming,
    /// The pre-join's answer.
    pub joined: Joined,
    /// The placement record's path, or why it could not be written (the pane exists either way).
    pub record: Result<PathBuf, HostError>,
    /// agmsg's run directory, where the readiness sentinel appears.
    pub run: RunDir,
}

/// `AGMSG_TERMINAL_NAMING=off` names only the key, as agmsg's naming does.
pub fn naming_mode_from_env() -> NamingMode {
    match std::env::var(NAMING_VAR) {
        Ok(v) if v == "off" => NamingMode::KeyOnly,
        _ => NamingMode::LabelAndKey,
    }
}

/// Spawn an agent of type `t` in a new pane of one of `candidates`, agmsg's install being at
/// `skill_dir` (its `run/` and `scripts/join.sh`). A failure is [`ExitClass::Refused`] when the agent
/// cannot be launched as asked (not spawnable, a refused option, a missing project or program, its
/// role held, the pre-join failed), else the terminal's own class (§2.3) when it could not be chosen
/// or could not create the pane.
///
/// [`ExitClass::Refused`]: crate::error::ExitClass::Refused
pub fn spawn(
    runtime: &Runtime,
    t: &AgentType,
    candidates: &Candidates,
    skill_dir: &Path,
    req: SpawnRequest<'_>,
) -> Result<Spawned, HostError> {
    // The names are checked here, before any file is named after them or anything runs.
    let mut boot = boot::boot_command(t, &req.boot)?;
    boot.env_set.extend(req.env.iter().cloned());
    let script = boot.script()?;
    check_program(&boot)?;
    let project = boot.cwd.to_str().ok_or_else(|| HostError::refused(format!("project {} is not UTF-8", boot.cwd.display())))?.to_owned();
    let (team, agent) = (req.boot.team.as_str(), req.boot.agent.as_str());
    let run = RunDir::new(skill_dir);
    // The child's actas would refuse a role a live session holds: refused here, before launching it.
    if let LockState::Held(owner) = actas::lock_state(&run, team, agent) {
        return Err(HostError::refused(format!(
            "actas '{agent}' in team '{team}' is held by a live session ({owner}); drop it there first"
        )));
    }

    let (mut source, _) = resolve::choose_driver(runtime, candidates, req.terminal, None).map_err(HostError::from)?;
    let name = source.manifest.name.clone();
    if !source.manifest.capabilities.iter().any(|c| c == "spawn") {
        return Err(TerminalError::new(
            TermFailKind::Unsupported,
            format!("terminal driver '{name}' cannot spawn (its manifest does not list spawn)"),
        )
        .into());
    }
    if source.driver.capabilities.covers(&Capability::Env { name: SPAWN_TEAM_VAR.to_owned() }) {
        source.driver.settings.push((SPAWN_TEAM_VAR.to_owned(), req.boot.team.clone()));
    }
    let mut terminal = Terminal::open(runtime, &source).map_err(HostError::from)?;

    let joined = join::pre_join(skill_dir, team, agent, &t.name, &boot.cwd)?;
    if boot.wait_ready {
        // Only this launch's watcher may answer the wait.
        place::clear_ready(&run, team, agent)
            .map_err(|e| HostError::refused(format!("cannot remove the stale readiness sentinel in {}: {e}", run.path().display())))?;
    }
    let file = BootFile::write(&script)?;
    let words = [SHELL.to_owned(), file.path_text().to_owned()];
    let id = terminal
        .spawn(&req.boot.agent, &project, req.target, &words)
        .map_err(|e| HostError::from(TerminalError::new(e.kind, format!("terminal '{name}' could not spawn: {}", e.message))))?;
    // The pane runs the script, which removes its own file.
    file.keep();

    let reference = format!("{name}:{id}");
    let record = PlacementRecord { reference: reference.clone(), project, agent_type: t.name.clone() };
    let record = place::write_record(&run, team, agent, &record);

    let naming = name_pane(&mut terminal, &id, team, agent, req.naming);
    Ok(Spawned { reference, terminal: name, id, boot, naming, joined, record, run })
}

/// agmsg's check of the launch command: its first word must be on `PATH` (a path: an executable file).
fn check_program(boot: &BootCommand) -> Result<(), HostError> {
    let program = &boot.argv[0];
    let found = if program.contains('/') {
        crate::runtime::caps::process::is_executable_file(Path::new(program))
    } else {
        crate::runtime::caps::process::find_on_path(program, &std::env::var_os("PATH").unwrap_or_default()).is_some()
    };
    if found {
        Ok(())
    } else {
        Err(HostError::refused(format!("{program} (the launch command of agent type {}) is not an executable on PATH", boot.agent_type)))
    }
}

/// `name`, then the key read back: a write the terminal did not keep is reported, not trusted.
fn name_pane(terminal: &mut Terminal<'_>, id: &str, team: &str, agent: &str, mode: NamingMode) -> Naming {
    if !terminal.manifest().capabilities.iter().any(|c| c == "name") {
        return Naming::Unsupported;
    }
    if let Err(e) = terminal.name_pane(id, team, agent, mode) {
        return Naming::Failed(format!("naming {id} failed: {}", e.message));
    }
    let key = format!("{team}:{agent}");
    match terminal.label_of(id) {
        Ok(read) if read == key => Naming::Named(mode),
        Ok(read) => Naming::Failed(format!("named {id} {key}, but its key reads back as {read:?}")),
        // No way to read it back: the write's own answer is all there is.
        Err(e) if e.kind == TermFailKind::Unsupported => Naming::Named(mode),
        Err(e) => Naming::Failed(format!("named {id} {key}, but reading it back failed: {}", e.message)),
    }
}

/// The boot script's file: created private (0600, a fresh random name) in the temporary directory,
/// removed again unless a pane took it over.
struct BootFile(tempfile::TempPath);

impl BootFile {
    fn write(script: &str) -> Result<BootFile, HostError> {
        let dir = shell_safe_temp_dir();
        let failed = |e: std::io::Error| HostError::refused(format!("cannot write the boot script in {}: {e}", dir.display()));
        let mut file = tempfile::Builder::new().prefix("agmsg-boot.").suffix(".sh").tempfile_in(&dir).map_err(failed)?;
        file.write_all(script.as_bytes()).and_then(|()| file.as_file().sync_all()).map_err(failed)?;
        Ok(BootFile(file.into_temp_path()))
    }

    fn path_text(&self) -> &str {
        self.0.to_str().expect("a shell-safe path is UTF-8")
    }

    fn keep(self) {
        let _ = self.0.keep();
    }
}

/// `TMPDIR` (the platform's temporary directory) when its path is plain enough to survive being
/// joined into a shell command line, else `/tmp`.
fn shell_safe_temp_dir() -> PathBuf {
    let dir = std::env::temp_dir();
    let plain = dir.is_absolute() && dir.to_str().is_some_and(crate::shell::is_plain);
    if plain { dir } else { PathBuf::from("/tmp") }
}
