//! `agmsg-host storage <op> [args]`: agmsg's argv shapes in, agmsg's framing out. The ops are the
//! library's ([`agmsg_host::storage::op`]); here the help, the dispatch and the failure framing.
//!
//! Framing (spec §2.1): control ops print their status word as the last stdout line and exit with its
//! code; record ops print only records (JSONL, or a bare id / cursor) and report failure by exit code
//! with the message on stderr; `describe` prints `key=value` lines. Usage errors exit 2.

use std::path::PathBuf;
use std::process::ExitCode;

use super::exit;
use super::framing::{Shape, control_failure, record_failure};
use agmsg_host::error::{ExitClass, HostError};
use agmsg_host::storage::location;
use agmsg_host::storage::op::{self, Usage};

/// `storage --help`: each op's argv on a line of its own, what it does indented below it, every line
/// at most 79 columns, so that clap (which wraps at the terminal's width) never re-wraps it at 80 or
/// more (`tests/storage_ops.rs` checks this).
pub const LONG_HELP: &str = "Run one storage-driver op, with agmsg's argv, stdout framing and exit codes.

Ops (snake_case names are accepted too; a leading <team> selects the store,
as agmsg passes it):
  check                            control: ok / missing_deps
  describe [team]                  key=value lines
  init [team]                      control
  store-exists [team]              exit 0 if a store exists, 1 if not
  send <team> <from> <to> <body>
      prints the new id
  send --body-stdin <team> <from> <to>
      the body is read from stdin, byte for byte
  list-unread <team> <agent> [--limit N]
      JSONL, oldest first (--limit: the oldest N)
  mark-read-batch <team> <agent> <id>...
      control
  read-cursor-get <team> <agent>
      prints the pair's cursor
  read-cursor-consume <team> <agent> <cursor> [<id>...]
      control
  watch-tip <team:agent>...
      prints the current cursor
  watch-after <cursor> <team:agent>...
      JSONL, then {\"type\":\"cursor\",...}
  wait-after <cursor> <team:agent>... [--timeout-ms N]
      optional op (agmsg:storage 1.1.0 `live`): block until a message may
      have arrived after <cursor> or N ms (default 1000, at most half the call
      deadline) pass; prints `changed`, `timed-out`, or `unsupported`
  history <team> [agent] [--limit N]
      JSONL, oldest to newest (--limit: the newest N)
  export [team] <file>
      writes the v1 event log to <file> atomically
  import [team] <file>
      all-or-nothing import of a v1 event log
  compact [team]
      control
  record-receipts <team> <agent> <evidence> <id>...
      optional op (agmsg:storage 1.2.0 `receipts`): record that <agent> was
      handed the messages; control
  receipt-status <team> <id>
      optional op (`receipts`): prints receipt, legacy_read or none
  rename-agent <team> <old> <new>
      optional op (1.2.0 `rename`): the store's records of <old> now name
      <new>; control
  rename-team <old> <new>
      optional op (`rename`): on the new team's store (a per-team store still
      under <old> is moved first); control
  purge-store --yes [team]
      optional op (1.2.0 `purge`): delete everything the store holds (a
      database's rows); control
  sync-prepare-push <team> <server-instance-id> <remote-team-id>
      <protocol-version> <limit>
  sync-reconcile-push <team> <server-instance-id> <remote-team-id>
      <protocol-version>
  sync-apply-pull <team> <server-instance-id> <remote-team-id>
      <protocol-version>
  sync-reprocess <team> <server-instance-id> <remote-team-id>
      <protocol-version> <limit> [<seq>:<wire-id>] [malformed]
      optional ops (1.2.0 `sync`, agmsg's Stage-1 remote sync): agmsg's
      sync_* JSONL records on stdin and stdout, parsed strictly (a repeated or
      unknown key is refused); exit 13 for a refused argument or record or a
      runtime failure, 12 for a store the driver finds inconsistent, 14 when
      the driver does not offer sync (`describe` then lacks stage1-sync)
  An optional op the driver does not offer fails with 13 (`unsupported: ...`
  on stderr); `agmsg-host shim storage` defines its function only for a
  driver that offers it.

Choosing the driver (agmsg's config file records the choice):
  list [--json]
      the drivers this host can run; * marks the active one
  switch <driver>
      the driver's check, then make it the configured driver
  switch postgres --url
      postgres://USER@HOST:PORT/DB[?sslmode=verify-full&sslrootcert=CA.pem]
      the same, and record the database (never a password: PGPASSWORD or
      ~/.pgpass; AGMSG_POSTGRES_URL overrides it)
  convert <driver>
      copy the store (its v1 event log) into <driver>, verify, then switch;
      on any failure nothing changes
  convert postgres --url URL
      the same into that (empty) database, recorded as switch does
  switch/convert ... --json
      print a JSON object (status, driver, config; convert: from, to, events,
      store) instead of `ok`; a failure is framed as without it. Convert
      shows its progress on stderr when that is a terminal, and is silent
      otherwise

Exit codes: 0 ok, 10 missing_deps, 12 corrupt_state, 13 runtime_error, 2 usage
error.";

pub fn run(store_flag: Option<PathBuf>, driver_flag: Option<String>, op: Option<&str>, args: &[String]) -> ExitCode {
    let op_name = op.unwrap_or("describe").replace('_', "-");
    if args.first().is_some_and(|a| a == "--help" || a == "-h") {
        println!("{LONG_HELP}");
        return ExitCode::SUCCESS;
    }
    // Choosing the driver rather than running one of its ops.
    match (op_name.as_str(), args) {
        ("list", []) => return super::storage_manage::list(store_flag, false),
        ("list", [flag]) if flag == "--json" => return super::storage_manage::list(store_flag, true),
        ("switch" | "convert", args) if let Some(choice) = super::storage_manage::Choice::parse(args) => {
            return if op_name == "switch" {
                super::storage_manage::switch(store_flag, &choice)
            } else {
                super::storage_manage::convert(store_flag, &choice)
            };
        }
        ("list" | "switch" | "convert", _) => {
            let usage = "usage: storage list [--json] | storage switch <driver> [--url URL] [--json] | storage convert <driver> [--url URL] [--json]";
            return exit::fail(&format!("storage {op_name}"), &HostError::usage(usage));
        }
        _ => {}
    }
    // agmsg's remote-sync ops (Stage-1, and the resync and read-state extensions): records on stdin
    // and stdout, their own argv and exit codes.
    if let Some(sync_op) = op_name.strip_prefix("sync-")
        && super::storage_sync::is_op(sync_op)
    {
        return super::storage_sync::run(store_flag, driver_flag, sync_op, args);
    }
    let op = match op::parse(&op_name, args) {
        Ok(op) => op,
        Err(Usage(message)) => {
            // A second line points to the help: a multi-line usage message, printed as such.
            eprintln!("agmsg-host storage {op_name}: {message}\n(see `agmsg-host storage --help`)");
            return exit::code(ExitClass::Usage);
        }
    };
    let shape = op.shape();
    let result = op::execute(store_flag, driver_flag.clone(), op, &mut std::io::stdin().lock(), &mut std::io::stdout().lock());
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => exit::no(),
        Err(e) if shape == Shape::Control => {
            let driver = driver_flag.or_else(|| location::storage_driver(None).ok()).unwrap_or_default();
            control_failure(&e, &driver)
        }
        Err(e) => record_failure(&e),
    }
}

/// A resident server's spare, before its request: make ready the driver `storage <op> <args>` would
/// run on (`op::warm`), printing nothing. Only a driver's own ops are warmed for: not choosing a
/// driver, not agmsg's remote-sync ops, not an op that does not parse.
pub fn warm(store_flag: Option<PathBuf>, driver_flag: Option<String>, op: Option<&str>, args: &[String]) {
    let op_name = op.unwrap_or("describe").replace('_', "-");
    if matches!(op_name.as_str(), "list" | "switch" | "convert") || op_name.starts_with("sync-") {
        return;
    }
    if let Ok(op) = op::parse(&op_name, args)
        && let Err(e) = op::warm(store_flag, driver_flag, &op)
    {
        agmsg_host::log::host_log::debug(&format!("server: a spare could not warm for `storage {op_name}`: {e}"));
    }
}
