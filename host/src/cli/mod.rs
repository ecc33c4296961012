//! The command line: parse, call the library, print. No driver logic lives here.

mod caches;
mod delivery;
mod driver;
mod exit;
mod framing;
mod messaging;
mod plugin;
mod scaffold;
mod server;
mod shim;
mod shim_install;
mod spawn;
mod storage;
mod storage_manage;
mod storage_sync;
mod terminal;
mod types;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "agmsg-host",
    version,
    about = "Run agmsg's drivers as sandboxed WebAssembly components",
    long_about = "Run agmsg's drivers as sandboxed WebAssembly components.\n\n\
        Every storage op goes through a wasm32-wasip2 component that sees only its store directory; \
        every terminal op through one that may run only the programs its manifest declares. \
        Argv, stdout framing and exit codes are those of agmsg's bash drivers, so agmsg's scripts can \
        call agmsg-host in their place.",
    after_help = "Environment:\n  \
        AGMSG_STORAGE_PATH    store directory (else ~/.agents/skills/agmsg/db, agmsg's own)\n  \
        AGMSG_STORAGE_DRIVER  storage driver (else the `storage` key of $AGMSG_CONFIG, else sqlite)\n  \
        AGMSG_CONFIG          agmsg's config file (default ~/.agents/agmsg/config.json)\n  \
        AGMSG_TERMINAL_DRIVER terminal driver (else the id's placement reference, else detection)\n  \
        AGMSG_HOME            agmsg-host's home (default ~/.agents/agmsg): plugins/, trusted-plugins.json
                        only; never the store\n  \
        AGMSG_PLUGIN_DIRS     more plugin directories, ':'-separated (later ones win)\n  \
        AGMSG_CACHE_DIR       compiled-component cache (default ~/.cache/agmsg-host)\n  \
        AGMSG_DRIVER_TIMEOUT_MS, AGMSG_DRIVER_MEMORY_MB   per-call deadline and memory cap\n  \
        AGMSG_PROCESS_TIMEOUT_MS   time limit of one program a terminal driver runs (default 10000)\n  \
        AGMSG_WATCH_POLL=1    watch polls even a driver that offers live wake-ups\n  \
        AGMSG_HOST_SERVER=off run every op in-process, not through this user's resident server\n  \
        AGMSG_HOST_SERVER_IDLE   seconds the resident server waits idle before it exits (default 300)\n  \
        AGMSG_LOG             log level: error, warn (default), info, debug, trace"
)]
struct Cli {
    /// Store directory [env: AGMSG_STORAGE_PATH]
    #[arg(long, global = true, value_name = "DIR")]
    store: Option<PathBuf>,

    /// Driver for the axis the command addresses: a bundled or trusted plugin's name, or a component
    /// file (storage, delivery) or driver directory (terminal) [env: AGMSG_STORAGE_DRIVER /
    /// AGMSG_TERMINAL_DRIVER]
    #[arg(long, global = true, value_name = "NAME")]
    driver: Option<String>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run one storage-driver op (no op: describe the active driver)
    #[command(long_about = storage::LONG_HELP)]
    Storage {
        /// The op, kebab-case or snake_case (send, list-unread, ...)
        op: Option<String>,
        /// The op's arguments, exactly as agmsg passes them
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "ARGS")]
        args: Vec<String>,
    },
    /// Send a message; prints its id (body `-`: read from stdin)
    #[command(long_about = "Send a message; prints its id.\n\n\
        Where agmsg is installed, the team, the sender and the recipient must be registered in agmsg's \
        team registry (its join.sh registers them), as agmsg's send.sh requires: a typo'd name is refused \
        (exit 1) and nothing is sent, unless --force.")]
    Send {
        team: String,
        from: String,
        to: String,
        /// The message, or `-` to read it from stdin (trailing newlines dropped, as `"$(cat)"` would)
        body: String,
        /// Send even to a team, sender or recipient agmsg's registry does not list
        #[arg(long)]
        force: bool,
    },
    /// Show an agent's unread messages, then mark exactly those read
    Inbox {
        team: String,
        agent: String,
        /// JSONL records instead of text
        #[arg(long)]
        json: bool,
    },
    /// A team's messages (or those to or from one agent), oldest to newest
    History {
        team: String,
        agent: Option<String>,
        /// Only the newest N
        #[arg(long, value_name = "N")]
        limit: Option<u32>,
        /// JSONL records instead of text
        #[arg(long)]
        json: bool,
    },
    /// Print an agent's messages as they arrive, marking each read once printed (Ctrl-C stops)
    Watch {
        team: String,
        agent: String,
        /// The longest wait between reads (seconds); a watcher woken by its store (postgres, sqlite, jsonl) reads sooner
        #[arg(long, default_value = "1", value_name = "SECONDS")]
        interval: seconds::Seconds,
        /// JSONL records instead of text
        #[arg(long)]
        json: bool,
    },
    /// For driver authors: check a driver against the contract suite
    #[command(subcommand)]
    Driver(DriverCommand),
    /// Third-party drivers: install, list, inspect, trust, untrust, remove, publish, update, keys
    #[command(
        subcommand,
        long_about = "Third-party drivers: install, list, inspect, trust, untrust, remove, publish, update, keys.\n\n\
            A plugin is a directory <axis>/<name>/ holding agmsg-driver.toml (its manifest) and its \
            component, under $AGMSG_HOME/plugins (default ~/.agents/agmsg/plugins) or a directory of \
            AGMSG_PLUGIN_DIRS. It runs only once trusted, with what it asks for AND you granted; a \
            changed component, or an update that asks for more, is untrusted until you trust it again. \
            Drivers published to an OCI registry (oci://...) are verified (digests, and the signature \
            against the publisher keys you pinned) before the same consent, which names the publisher."
    )]
    Plugin(plugin::PluginCommand),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    #[command(after_help = "For example: agmsg-host completions bash > ~/.local/share/bash-completion/completions/agmsg-host")]
    Completions { shell: clap_complete::Shell },
    /// Write the bash driver file agmsg's core sources to use agmsg-host
    #[command(subcommand)]
    Shim(ShimAxis),
    /// Run one terminal-driver op (no op: describe the detected driver)
    #[command(long_about = terminal::LONG_HELP)]
    Terminal {
        /// The op, kebab-case or snake_case (peek, poke, pane-state, list, resolve-name, ...)
        op: Option<String>,
        /// The op's arguments, exactly as agmsg passes them
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "ARGS")]
        args: Vec<String>,
    },
    /// The agent types (claude-code, codex, ...): list, describe, get a key, detect the caller, boot argv
    #[command(subcommand, long_about = types::LONG_HELP)]
    Types(types::TypesCommand),
    /// A project's delivery mode for an agent type: set, status, modes
    #[command(subcommand, long_about = delivery::LONG_HELP)]
    Delivery(delivery::DeliveryCommand),
    /// Start an agent of a type in a new pane (a terminal driver's spawn) and name the pane; prints
    /// its placement reference
    #[command(long_about = spawn::LONG_HELP)]
    Spawn(spawn::SpawnArgs),
    /// Tear down a member started by spawn, by its team and name (agmsg's despawn.sh)
    #[command(long_about = spawn::DESPAWN_HELP)]
    Despawn(spawn::DespawnArgs),
    /// The resident server that runs ops without starting the engine each time: status, stop, run
    #[command(subcommand, long_about = server::LONG_HELP)]
    Server(server::ServerCommand),
}

#[derive(Subcommand, Debug)]
enum DriverCommand {
    /// Create a cargo project for a new driver: a small working store (storage), a driver that
    /// answers "unsupported" to every op (terminal) or a delivery plug that overrides nothing
    /// (types); each passes `driver test` as generated
    New {
        /// The driver's axis
        #[arg(value_parser = axis_parser())]
        axis: agmsg_host::axis::Axis,
        /// The driver's name (lowercase letters, digits, '-' and '_', starting with a letter)
        name: String,
        /// Where to create it [default: ./<name>]
        #[arg(long, value_name = "DIR")]
        path: Option<PathBuf>,
        /// A guest-sdk checkout to depend on by path [default: a copy of the SDK this binary was built
        /// from, written into the project's vendor/]
        #[arg(long, value_name = "DIR")]
        sdk: Option<PathBuf>,
    },
    /// Run the contract suite the bundled drivers pass against a driver: a bundled name, a storage
    /// .wasm component or a delivery plug's, a terminal driver directory, an agent type (a name or a
    /// directory with type.conf) or a delivery plug package directory; one line per rule, exit 1 if
    /// any fails
    Test { driver: String },
}

#[derive(Subcommand, Debug)]
enum ShimAxis {
    /// A storage driver for agmsg: every storage_* function forwards to `agmsg-host --driver <driver>`
    /// (by name: each call checks a plugin's trust again), same argv, framing and exit codes; bodies
    /// go through stdin. agmsg loads it as <agmsg>/scripts/drivers/storage/<name>.sh
    Storage {
        /// The driver name agmsg selects it by (AGMSG_STORAGE_DRIVER), which is the file's name without
        /// .sh [default: --output's, else host-<driver>]
        #[arg(long)]
        name: Option<String>,
        /// Write the file here (atomically) instead of to stdout
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// An agent type's _delivery.sh for agmsg's delivery engine: every agmsg_delivery_* function it
    /// calls forwards to `agmsg-host delivery`, same argv, output and exit codes (the type's plug
    /// component, else agmsg-host's behaviour for it, writes the file); agmsg's defaults where the
    /// type overrides no on_enable, on_disable or stop_directive
    Types {
        /// The agent type
        #[arg(value_name = "TYPE")]
        agent_type: String,
        /// Write the file here (atomically) instead of to stdout
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// A terminal driver directory for agmsg, <name>/ holding terminal.conf (the driver's manifest) and
    /// ops.sh, whose every terminal_* function forwards to `agmsg-host --driver <name> terminal`, same
    /// argv, framing and exit codes
    Terminal {
        /// The terminal driver (tmux, plain, herdr, orca, or a trusted plugin's name)
        name: String,
        /// Write <name>/ in this directory [default: the current directory]
        #[arg(long, short, value_name = "DIR")]
        output: Option<PathBuf>,
    },
    /// Put every shim in an agmsg install: every storage driver agmsg-host runs by name (bundled and
    /// trusted plugins), every bundled type's _delivery.sh, the terminal drivers; agmsg's originals are kept in <dir>/agmsg-host-shims/ for
    /// uninstall. Idempotent; symlinks are never followed
    Install(ShimInstallArgs),
    /// Take the shims out of an agmsg install again: agmsg's originals back byte for byte, what install
    /// added removed; a file changed since install is left as it is
    Uninstall(ShimInstallArgs),
}

#[derive(clap::Args, Debug)]
struct ShimInstallArgs {
    /// agmsg's install directory (the one holding scripts/, e.g. ~/.agents/skills/agmsg)
    #[arg(value_name = "AGMSG_DIR")]
    dir: PathBuf,
    /// Only say what would be done
    #[arg(long)]
    dry_run: bool,
    /// Print what was (or would be) done as JSON
    #[arg(long)]
    json: bool,
    /// uninstall: also remove what agmsg-host keeps in agmsg's store that is only a cache (jsonl's
    /// .events-index/). Without it, asked on a terminal; elsewhere the caches are kept
    #[arg(long)]
    remove_caches: bool,
    /// The global `--store` and `--driver` choose a store and a driver, which install and uninstall
    /// use neither of: declared here (so clap does not add the global ones to this command's help),
    /// hidden, and refused when given (before or after `shim`).
    #[arg(long, hide = true)]
    store: Option<PathBuf>,
    #[arg(long, hide = true)]
    driver: Option<String>,
}

impl ShimInstallArgs {
    /// A usage error (2) when `--store` or `--driver` was given: they would do nothing here.
    fn refuse_selectors(&self, action: &str) -> Option<ExitCode> {
        let given: Vec<&str> = [(self.store.is_some(), "--store"), (self.driver.is_some(), "--driver")]
            .into_iter()
            .filter_map(|(set, flag)| set.then_some(flag))
            .collect();
        (!given.is_empty()).then(|| {
            let why = format!(
                "{} does nothing here (install and uninstall write every shim agmsg-host has, for every store)",
                given.join(" and ")
            );
            exit::fail(&format!("shim {action}"), &agmsg_host::error::HostError::usage(why))
        })
    }
}

/// An axis named on the command line: one of the axes' names, listed in `--help`.
fn axis_parser() -> impl clap::builder::TypedValueParser<Value = agmsg_host::axis::Axis> {
    use agmsg_host::axis::Axis;
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(Axis::ALL.map(Axis::as_str)).map(|s| Axis::parse(&s).expect("only an axis's name gets here"))
}

/// A positive number of seconds, fractions allowed (`--interval 0.2`).
mod seconds {
    use std::time::Duration;

    #[derive(Clone, Debug)]
    pub struct Seconds(pub Duration);

    impl std::str::FromStr for Seconds {
        type Err = String;
        fn from_str(s: &str) -> Result<Self, String> {
            match s.parse::<f64>() {
                Ok(v) if v > 0.0 && v.is_finite() && v <= 86_400.0 => Ok(Seconds(Duration::from_secs_f64(v))),
                _ => Err(format!("expected a number of seconds between 0 and 86400, not {s:?}")),
            }
        }
    }
}

/// The process's entry: the op goes to this user's resident server when one takes it, else runs here.
/// Run by the small `agmsg-host` (`front.rs`), which offered it already, it runs here.
pub fn main() -> ExitCode {
    let offered = agmsg_host::server::offered_already();
    let args: Vec<OsString> = std::env::args_os().collect();
    let engine = match std::env::current_exe() {
        Ok(engine) if !offered => engine,
        _ => return run(args),
    };
    match agmsg_host::server::forward(&args, &engine) {
        agmsg_host::server::Forward::InProcess => run(args),
        agmsg_host::server::Forward::Answered(code) => ExitCode::from(code),
        agmsg_host::server::Forward::Lost(e) => exit::fail("server", &e),
    }
}

/// In a resident server's spare: make ready what the op `args` (one of its last ops' argv) would run on,
/// so that its next op, likely the same kind on the same store or terminal, starts warm. Prints nothing.
fn warm(args: Vec<OsString>) {
    match parse(&args).map(|cli| (cli.store, cli.driver, cli.command)) {
        Some((store, driver, Command::Storage { op, args })) => storage::warm(store, driver, op.as_deref(), &args),
        Some((_, driver, Command::Terminal { op, args })) => terminal::warm(driver, op.as_deref(), &args),
        _ => {}
    }
}

/// `args` parsed by this process's one built parser: building clap's tree of commands was 4% of a warm
/// op's CPU, and a resident server's spare serves op after op (and builds it while it warms up). The
/// parser is built anew for another program name than the one it parsed (clap keeps it for its usage
/// lines: a server's, forked from `agmsg-host-engine server run`, has the engine's). `None` for anything
/// but a successful parse (an error, help, version: printed by a fresh parse, as always).
fn parse(args: &[OsString]) -> Option<Cli> {
    static PARSER: std::sync::Mutex<Option<(Option<OsString>, clap::Command)>> = std::sync::Mutex::new(None);
    let program = args.first().and_then(|arg0| std::path::Path::new(arg0).file_name()).map(OsString::from);
    let mut parser = PARSER.lock().ok()?;
    if parser.as_ref().is_none_or(|(named, _)| *named != program) {
        *parser = Some((program, <Cli as clap::CommandFactory>::command()));
    }
    let (_, command) = parser.as_mut()?;
    let mut matches = command.try_get_matches_from_mut(args).ok()?;
    <Cli as clap::FromArgMatches>::from_arg_matches_mut(&mut matches).ok()
}

/// Parse `args` and run the command (in this process, or in a server's child for its client).
fn run(args: Vec<OsString>) -> ExitCode {
    let cli = parse(&args).unwrap_or_else(|| Cli::parse_from(args));
    match cli.command {
        Command::Storage { op, args } => storage::run(cli.store, cli.driver, op.as_deref(), &args),
        Command::Terminal { op, args } => terminal::run(cli.driver, op.as_deref(), &args),
        Command::Send { team, from, to, body, force } => messaging::send(cli.store, cli.driver, &team, &from, &to, &body, force),
        Command::Inbox { team, agent, json } => messaging::inbox(cli.store, cli.driver, &team, &agent, json),
        Command::History { team, agent, limit, json } => messaging::history(cli.store, cli.driver, &team, agent.as_deref(), limit, json),
        Command::Watch { team, agent, interval, json } => messaging::watch(cli.store, cli.driver, &team, &agent, interval.0, json),
        Command::Shim(ShimAxis::Storage { name, output }) => shim::run(cli.driver, name, output),
        Command::Shim(ShimAxis::Types { agent_type, output }) => shim::run_types(&agent_type, output),
        Command::Shim(ShimAxis::Terminal { name, output }) => shim::run_terminal(&name, output),
        Command::Shim(ShimAxis::Install(a)) if a.remove_caches => {
            exit::fail("shim install", &agmsg_host::error::HostError::usage("--remove-caches is uninstall's"))
        }
        Command::Shim(ShimAxis::Install(a)) => {
            a.refuse_selectors("install").unwrap_or_else(|| shim_install::run(shim_install::Action::Install, &a.dir, a.dry_run, a.json))
        }
        Command::Shim(ShimAxis::Uninstall(a)) => a.refuse_selectors("uninstall").unwrap_or_else(|| {
            let code = shim_install::run(shim_install::Action::Uninstall, &a.dir, a.dry_run, a.json);
            if code == ExitCode::SUCCESS && !a.dry_run { caches::after_uninstall(&a.dir, a.remove_caches, a.json) } else { code }
        }),
        Command::Driver(DriverCommand::Test { driver }) => driver::test(&driver),
        Command::Plugin(command) => plugin::run(command),
        Command::Types(command) => types::run(command),
        Command::Delivery(command) => delivery::run(cli.driver, command),
        Command::Spawn(args) => spawn::run(cli.driver, args),
        Command::Despawn(args) => spawn::run_despawn(cli.driver, args),
        Command::Driver(DriverCommand::New { axis, name, path, sdk }) => scaffold::new(axis, &name, path, sdk),
        Command::Server(command) => server::run(command, run, warm),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut <Cli as clap::CommandFactory>::command(), "agmsg-host", &mut std::io::stdout());
            ExitCode::SUCCESS
        }
    }
}
