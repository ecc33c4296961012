//! `agmsg-host`, the program users and agmsg's scripts run: a small one, since starting the whole host
//! (wasmtime, Cranelift, every driver's machine code: a 60 MB file) costs about as much CPU as the op a
//! resident server runs for it. It offers its argv to this user's server of its build (the build is
//! the engine's: `agmsg-host-engine`, the whole host, in the same directory), exits as the op did when
//! one took it, and otherwise becomes the engine (exec: same process, argv, environment and
//! descriptors), which runs the op in-process and starts a server for the next. It links the server's
//! client and the exit codes' one map, nothing that runs a driver.

#[allow(dead_code)] // The front uses the one map of codes and the failure line; the engine the rest.
#[path = "cli/exit.rs"]
mod exit;

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use agmsg_host::error::{ExitClass, HostError};
use agmsg_host::server::{self, Forward};

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    let engine = match this_program(args.first()) {
        // Beside this program's file, links resolved: where an install placed the two.
        Ok(front) => front.with_file_name(server::ENGINE),
        Err(e) => return exit::fail("engine", &HostError::new(ExitClass::RUNTIME, format!("cannot locate agmsg-host itself: {e}"))),
    };
    match server::forward(&args, &engine) {
        Forward::Answered(code) => ExitCode::from(code),
        Forward::Lost(e) => exit::fail("server", &e),
        Forward::InProcess => {
            let mut command = std::process::Command::new(&engine);
            // The user's argv[0], as the engine reads it (the path shims name, agent detection).
            command.arg0(args.first().cloned().unwrap_or_else(|| server::FRONT.into()));
            command.args(args.iter().skip(1)).env(server::OFFERED, "1");
            let e = command.exec();
            exit::fail(
                "engine",
                &HostError::new(
                    ExitClass::RUNTIME,
                    format!(
                        "cannot run {} ({e}): agmsg-host runs its engine from its own directory; install both programs there (README, \
                         \"Install\")",
                        engine.display()
                    ),
                ),
            )
        }
    }
}

/// This program's file, links resolved: `/proc/self/exe`, else (a sandbox without /proc) where
/// `argv[0]` leads as a shell ran it.
fn this_program(arg0: Option<&OsString>) -> std::io::Result<PathBuf> {
    std::env::current_exe().or_else(|no_proc| {
        let path = std::env::var_os("PATH");
        match arg0.and_then(|arg0| agmsg_host::shim::invoked_path(Path::new(arg0), path.as_deref())) {
            Some(invoked) => invoked.canonicalize(),
            None => Err(no_proc),
        }
    })
}
