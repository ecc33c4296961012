//! The command line: parse, call the library, print. No driver logic lives here.

mod storage;
mod terminal;

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
        AGMSG_STORAGE_PATH    store directory (else $AGMSG_HOME/db, else ~/.agents/skills/agmsg/db)\n  \
        AGMSG_STORAGE_DRIVER  storage driver (else the `storage` key of $AGMSG_CONFIG, else sqlite)\n  \
        AGMSG_CONFIG          agmsg's config file (default ~/.agents/agmsg/config.json)\n  \
        AGMSG_TERMINAL_DRIVER terminal driver (else the id's placement reference, else detection)\n  \
        AGMSG_CACHE_DIR       compiled-component cache (default ~/.cache/agmsg-host)\n  \
        AGMSG_DRIVER_TIMEOUT_MS, AGMSG_DRIVER_MEMORY_MB   per-call deadline and memory cap\n  \
        AGMSG_PROCESS_TIMEOUT_MS   time limit of one program a terminal driver runs (default 10000)\n  \
        AGMSG_LOG             log level: error, warn (default), info, debug, trace"
)]
struct Cli {
    /// Store directory [env: AGMSG_STORAGE_PATH]
    #[arg(long, global = true, value_name = "DIR")]
    store: Option<PathBuf>,

    /// Driver for the axis the command addresses: a bundled name, or a component file (storage) or
    /// driver directory (terminal) [env: AGMSG_STORAGE_DRIVER / AGMSG_TERMINAL_DRIVER]
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
    /// Run one terminal-driver op (no op: describe the detected driver)
    #[command(long_about = terminal::LONG_HELP)]
    Terminal {
        /// The op, kebab-case or snake_case (peek, poke, pane-state, list, resolve-name, ...)
        op: Option<String>,
        /// The op's arguments, exactly as agmsg passes them
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "ARGS")]
        args: Vec<String>,
    },
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Storage { op, args } => storage::run(cli.store, cli.driver, op.as_deref(), &args),
        Command::Terminal { op, args } => terminal::run(cli.driver, op.as_deref(), &args),
    }
}
