//! `agmsg-host driver new <axis> <name>`: a ready cargo project for a driver (the library's
//! [`agmsg_host::scaffold`]). As generated, the storage driver is a small working store, the terminal
//! driver answers "unsupported" to every op, and the delivery plug (types) overrides nothing (agmsg's
//! defaults); each passes `driver test`. Exit codes: 0 written, 2 a bad argument, 1 not written.

use std::path::PathBuf;
use std::process::ExitCode;

use super::exit;
use agmsg_host::axis::Axis;

pub fn new(axis: Axis, name: &str, path: Option<PathBuf>, sdk: Option<PathBuf>) -> ExitCode {
    match agmsg_host::scaffold::create(axis, name, path, sdk) {
        Ok(dir) => {
            println!("created the {axis} driver '{name}' in {}", dir.display());
            println!("next: cd {} && cargo build --release --target wasm32-wasip2  (then see README.md)", dir.display());
            ExitCode::SUCCESS
        }
        Err(e) => exit::fail("driver new", &e),
    }
}
