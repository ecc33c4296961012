//! `agmsg-host storage sync-<op>`: agmsg's remote-sync ops (spec §2.8: Stage-1 sync, resync, read
//! state) for its Node engine, served by the library (`storage::sync::serve`) on stdin and stdout. This
//! file parses and prints: a failure's message on stderr and agmsg's adapter's exit code (13 for any
//! refused argument or record and any runtime failure, 12 when the driver finds the store inconsistent,
//! 14 when the driver does not offer the op).

use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use agmsg_host::storage::sync::serve::{self, SyncFailure};

use super::exit;
use super::framing::record_failure;

pub use serve::is_op;

pub fn run(store_flag: Option<PathBuf>, driver_flag: Option<String>, op: &str, args: &[String]) -> ExitCode {
    let (binding, op) = match serve::parse(op, args) {
        Ok(parsed) => parsed,
        Err(e) => return record_failure(&e),
    };
    match serve::serve(store_flag, driver_flag, &binding, &op, io::stdin().lock(), io::stdout().lock()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(SyncFailure::Store(e)) => record_failure(&e),
        Err(SyncFailure::NotOffered(e)) => exit::fail("storage", &e),
        Err(SyncFailure::Silent(class)) => exit::code(class),
    }
}
