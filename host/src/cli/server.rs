//! `agmsg-host server`: the resident server's status, stop, and the server itself.

use std::ffi::OsString;
use std::process::ExitCode;

use agmsg_host::server::{self, Served};

use super::exit;

pub const LONG_HELP: &str = "The resident server: this user's one process per agmsg-host build that keeps the engine and \
the bundled drivers' machine code ready, and runs each op in a child of its own with the caller's argv, environment, \
working directory, umask, limits and stdin/stdout/stderr, so that answers are those of an op run in-process. \
A spare child forked ahead of each request makes ready the driver instances of the last storage op and the last \
terminal op, which the next op takes only for the same driver, store and grants (`warm_ops` in `status` counts them).\n\n\
On by default: the first op starts it (and runs in-process meanwhile); it leaves after AGMSG_HOST_SERVER_IDLE seconds \
without an op (default 300). AGMSG_HOST_SERVER=off runs every op in-process. A caller that is confined (seccomp, no-new-privileges, \
other namespaces) or cannot reach the socket runs in-process.";

#[derive(clap::Subcommand, Debug)]
pub enum ServerCommand {
    /// Whether a server runs for this build, and what it holds (exit 1: none runs)
    Status {
        /// JSON instead of text
        #[arg(long)]
        json: bool,
    },
    /// Stop the server (the ops running finish first)
    Stop,
    /// Be the server (in the foreground unless --detach) until idle or stopped
    Run {
        /// Leave the caller at once and serve in the background
        #[arg(long)]
        detach: bool,
    },
}

/// Run `command`; a server's child runs its client's argv through `run_args`, and a spare makes ready
/// for its last op's argv through `warm_for` while it waits.
pub fn run(command: ServerCommand, run_args: fn(Vec<OsString>) -> ExitCode, warm_for: fn(Vec<OsString>)) -> ExitCode {
    match command {
        ServerCommand::Run { detach } => serve_as(server::serve(detach), run_args, warm_for),
        ServerCommand::Status { json } => match server::status() {
            Err(e) => exit::fail("server status", &e),
            Ok(status) => {
                match (&status.json, json) {
                    (Some(text), true) => println!("{text}"),
                    (None, true) => println!("{}", serde_json::json!({ "running": false, "socket": status.socket })),
                    (Some(text), false) => {
                        println!("running: {}", status.socket.display());
                        if let Ok(serde_json::Value::Object(fields)) = serde_json::from_str::<serde_json::Value>(text) {
                            for (key, value) in fields {
                                println!("{key}: {value}");
                            }
                        }
                    }
                    (None, false) => println!("not running ({})", status.socket.display()),
                }
                if status.json.is_some() { ExitCode::SUCCESS } else { exit::no() }
            }
        },
        ServerCommand::Stop => match server::stop() {
            Err(e) => exit::fail("server stop", &e),
            Ok(status) if status.json.is_some() => {
                println!("stopping");
                ExitCode::SUCCESS
            }
            Ok(_) => {
                println!("not running");
                ExitCode::SUCCESS
            }
        },
    }
}

/// What this process does with what `serve` gave it: a spare first makes ready, then waits for its
/// request and runs it as a child does; a child whose op is done may be a spare again, still warm.
fn serve_as(mut served: Served, run_args: fn(Vec<OsString>) -> ExitCode, warm_for: fn(Vec<OsString>)) -> ExitCode {
    loop {
        served = match served {
            Served::Child(args) => {
                let code = run_args(args);
                let number = exit::number(code);
                server::op_ended(number);
                match server::serve_again(number) {
                    Some(spare) => Served::Spare(spare),
                    None => return code,
                }
            }
            Served::Spare(mut spare) => {
                while let Some(args) = spare.next_warm_up() {
                    warm_for(args);
                }
                spare.wait()
            }
            Served::Ended(result) => return exit::report("server run", result),
        }
    }
}
