//! `agmsg-host storage sync-<op>` for the two optional extensions beside Stage-1 sync, with agmsg's argv
//! and record framing (see `storage_sync`): `resync-status <accepted-floor>` and `resync` (capability
//! `stage1-resync`); `prepare-read-state`, `apply-read-state`, `block-read-state` and
//! `unblock-read-state` (capability `stage2-read-state`). 14 when the driver does not offer the
//! extension, 13 for a refused argument or record and any runtime failure, 12 for a store the driver
//! finds inconsistent.

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use agmsg_host::error::{ExitClass, HostError};
use agmsg_host::storage::sync::Binding;
use agmsg_host::storage::sync::{read_state, resync};
use agmsg_host::storage::{StorageError, StoreSession};

use super::exit;
use super::framing::record_failure;
use super::storage_sync::{line_error, parse_binding, records};

/// The ops this module runs (after `sync-`).
pub fn is_op(op: &str) -> bool {
    matches!(op, "resync-status" | "resync" | "prepare-read-state" | "apply-read-state" | "block-read-state" | "unblock-read-state")
}

pub fn run(store_flag: Option<PathBuf>, driver_flag: Option<String>, op: &str, args: &[String]) -> ExitCode {
    let refuse = |message: String| record_failure(&StorageError::runtime(format!("storage sync-{op}: {message}")));
    let (binding, rest) = match parse_binding(args) {
        Ok(parsed) => parsed,
        Err(e) => return refuse(e),
    };
    let floor = match (op, rest) {
        ("resync-status", [floor]) => match resync::parse_floor(floor) {
            Ok(floor) => Some(floor),
            Err(e) => return refuse(e),
        },
        ("resync-status", _) => return refuse("usage: <team> <server-instance-id> <remote-team-id> <protocol-version> <accepted-floor>".into()),
        (_, []) => None,
        _ => return refuse("usage: <team> <server-instance-id> <remote-team-id> <protocol-version>".into()),
    };
    match execute(store_flag, driver_flag, &binding, op, floor) {
        Ok(code) => code,
        Err(e) => record_failure(&e),
    }
}

/// `f` on a numbered line, its error saying which line.
fn parse<T>((number, text): (u64, String), f: impl FnOnce(&str) -> Result<T, String>) -> Result<T, StorageError> {
    f(&text).map_err(|e| line_error(number, e))
}

/// The one record an op reads on stdin (blank lines aside): a second is refused, not ignored.
fn one_record(op: &str, kind: &str) -> Result<(u64, String), StorageError> {
    let mut lines = records(io::stdin().lock());
    let line = lines.next().ok_or_else(|| StorageError::runtime(format!("{op}: no {kind} record on stdin")))??;
    if lines.next().is_some() {
        return Err(StorageError::runtime(format!("{op}: more than one record on stdin")));
    }
    Ok(line)
}

fn execute(store_flag: Option<PathBuf>, driver_flag: Option<String>, b: &Binding, op: &str, floor: Option<String>) -> Result<ExitCode, StorageError> {
    // Every record is read and checked before the driver is loaded: a refused input touches nothing.
    enum Input {
        Status(String),
        Resync(resync::ResyncRequest),
        Prepare(read_state::ReadContext),
        Apply(read_state::Snapshot),
        Block(String, bool),
    }
    let input = match (op, floor) {
        ("resync-status", Some(floor)) => Input::Status(floor),
        ("resync", _) => Input::Resync(parse(one_record(op, "sync_resync")?, resync::parse_resync)?),
        ("prepare-read-state", _) => Input::Prepare(parse(one_record(op, "sync_read_context")?, read_state::parse_context)?),
        ("apply-read-state", _) => {
            let lines = records(io::stdin().lock()).map(|line| line.map_err(|e| e.message));
            Input::Apply(read_state::parse_snapshot(lines).map_err(StorageError::runtime)?)
        }
        ("block-read-state", _) => Input::Block(parse(one_record(op, "sync_read_block")?, read_state::parse_block)?, true),
        ("unblock-read-state", _) => Input::Block(parse(one_record(op, "sync_read_unblock")?, read_state::parse_unblock)?, false),
        _ => return Err(StorageError::runtime(format!("storage: unknown sync op {op:?}"))),
    };
    let store = StoreSession::resolve(store_flag, driver_flag, Some(&b.local_team), true)?;
    let mut driver = store.driver()?;
    let (offered, interface, capability) = match input {
        Input::Status(_) | Input::Resync(_) => (driver.offers_resync(), "resync", "stage1-resync"),
        _ => (driver.offers_read_state(), "read-state", "stage2-read-state"),
    };
    if !offered {
        let why = format!("driver '{}' does not offer {capability} (the optional agmsg:storage/{interface} interface)", driver.name());
        return Ok(exit::fail("storage", &HostError::new(ExitClass::NotOffered, why)));
    }
    let name = driver.name().to_owned();
    // A value the spec refuses, from the driver, is not printed (agmsg's engine would take it as given).
    let checked = |checked: Result<(), String>| checked.map_err(|e| StorageError::runtime(format!("driver '{name}' answered {e}")));
    let mut lines = Vec::new();
    match input {
        Input::Status(floor) => {
            let Some(report) = driver.sync_resync_status(b, &floor)? else {
                // agmsg's contract: an absent binding fails closed, 13 with no output at all (its suite
                // checks that stderr is empty too); the engine then refuses to resync.
                return Ok(ExitCode::from(13));
            };
            checked(resync::check_report(&report, &floor))?;
            lines.push(resync::status_line(&report));
        }
        Input::Resync(request) => {
            let result = driver.sync_resync(b, &request)?;
            checked(resync::check_result(&result, &request))?;
            lines.push(resync::result_line(&result));
        }
        Input::Prepare(context) => {
            let prepared = driver.sync_prepare_read_state(b, &context)?;
            checked(read_state::check_prepared(&prepared, &context))?;
            lines.extend(prepared.frontiers.iter().map(read_state::frontier_line));
            lines.extend(prepared.exacts.iter().map(read_state::exact_line));
            lines.extend(prepared.blocked.iter().map(|x| read_state::blocked_line(&x.member_id, x.reason)));
        }
        Input::Apply(page) => {
            let result = driver.sync_apply_read_state(b, &page)?;
            checked(read_state::check_apply_result(&result, &page))?;
            lines.push(read_state::apply_result_line(&result));
        }
        Input::Block(member, block) => {
            driver.sync_block_read_state(b, &member, block)?;
            lines.push(if block {
                read_state::blocked_line(&member, read_state::BlockedReason::ReadStateLimitExceeded)
            } else {
                read_state::unblocked_line(&member)
            });
        }
    }
    let mut out = BufWriter::new(io::stdout().lock());
    for line in lines {
        writeln!(out, "{line}").map_err(|e| StorageError::runtime(format!("cannot write to stdout: {e}")))?;
    }
    out.flush().map_err(|e| StorageError::runtime(format!("cannot write to stdout: {e}")))?;
    Ok(ExitCode::SUCCESS)
}
