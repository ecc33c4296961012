//! `agmsg-host storage <op> [args]`: agmsg's argv shapes in, agmsg's framing out.
//!
//! Framing (spec §2.1): control ops print their status word as the last stdout line and exit with its
//! code; record ops print only records (JSONL, or a bare id / cursor) and report failure by exit code
//! with the message on stderr; `describe` prints `key=value` lines. Usage errors exit 2.

use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use agmsg_contract::{Status, check_name};

use super::exit;
use super::framing::{Shape, control_failure, record_failure};
use agmsg_host::error::{ExitClass, HostError};
use agmsg_host::log::host_log;
use agmsg_host::storage::driver::{Pair, ReceiptState, Wake};
use agmsg_host::storage::records::{cursor_line, message_line};
use agmsg_host::storage::{StorageError, StoreSession, location};

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

struct Usage(String);

enum Op {
    Check,
    Describe { team: Option<String> },
    Init { team: Option<String> },
    StoreExists { team: Option<String> },
    Send { team: String, from: String, to: String, body: Body },
    ListUnread { team: String, agent: String, limit: Option<u32> },
    MarkReadBatch { team: String, agent: String, ids: Vec<String> },
    CursorGet { team: String, agent: String },
    CursorConsume { team: String, agent: String, cursor: String, ids: Vec<String> },
    WatchTip { pairs: Vec<Pair> },
    WatchAfter { cursor: String, pairs: Vec<Pair> },
    WaitAfter { cursor: String, pairs: Vec<Pair>, timeout: std::time::Duration },
    History { team: String, agent: Option<String>, limit: Option<u32> },
    Export { team: Option<String>, file: PathBuf },
    Import { team: Option<String>, file: PathBuf },
    Compact { team: Option<String> },
    RecordReceipts { team: String, agent: String, evidence: String, ids: Vec<String> },
    ReceiptStatus { team: String, id: String },
    RenameAgent { team: String, old: String, new: String },
    RenameTeam { old: String, new: String },
    PurgeStore { team: Option<String> },
}

enum Body {
    Arg(String),
    Stdin,
}

impl Op {
    fn shape(&self) -> Shape {
        match self {
            Op::Check
            | Op::Init { .. }
            | Op::MarkReadBatch { .. }
            | Op::CursorConsume { .. }
            | Op::Compact { .. }
            | Op::RecordReceipts { .. }
            | Op::RenameAgent { .. }
            | Op::RenameTeam { .. }
            | Op::PurgeStore { .. } => Shape::Control,
            _ => Shape::Record,
        }
    }

    /// The store-creating ops need the directory to exist before the sandbox can preopen it.
    fn creates_store(&self) -> bool {
        // (Purging never creates what it is about to empty.)
        !matches!(self, Op::Check | Op::Describe { .. } | Op::StoreExists { .. } | Op::PurgeStore { .. })
    }

    /// The team whose store the op addresses (agmsg's store selector), if any.
    fn team(&self) -> Option<&str> {
        match self {
            Op::Check => None,
            Op::Describe { team }
            | Op::Init { team }
            | Op::StoreExists { team }
            | Op::Export { team, .. }
            | Op::Import { team, .. }
            | Op::Compact { team }
            | Op::PurgeStore { team } => team.as_deref(),
            Op::Send { team, .. }
            | Op::ListUnread { team, .. }
            | Op::MarkReadBatch { team, .. }
            | Op::CursorGet { team, .. }
            | Op::CursorConsume { team, .. }
            | Op::History { team, .. }
            | Op::RecordReceipts { team, .. }
            | Op::ReceiptStatus { team, .. }
            | Op::RenameAgent { team, .. } => Some(team),
            // The store is the new team's: agmsg's rename-team has moved it (or `execute` does).
            Op::RenameTeam { new, .. } => Some(new),
            Op::WatchTip { pairs } | Op::WatchAfter { pairs, .. } | Op::WaitAfter { pairs, .. } => pairs.first().map(|p| p.team.as_str()),
        }
    }
}

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
    let op = match parse(&op_name, args) {
        Ok(op) => op,
        Err(Usage(message)) => {
            // A second line points to the help: a multi-line usage message, printed as such.
            eprintln!("agmsg-host storage {op_name}: {message}\n(see `agmsg-host storage --help`)");
            return exit::code(ExitClass::Usage);
        }
    };
    let shape = op.shape();
    match execute(store_flag, driver_flag.clone(), op) {
        Ok(code) => code,
        Err(e) if shape == Shape::Control => {
            let driver = driver_flag.or_else(|| location::storage_driver(None).ok()).unwrap_or_default();
            control_failure(&e, &driver)
        }
        Err(e) => record_failure(&e),
    }
}

fn parse(op: &str, args: &[String]) -> Result<Op, Usage> {
    let usage = |text: &str| Err(Usage(format!("usage: agmsg-host storage {op} {text}")));
    Ok(match op {
        "check" => match args {
            [] => Op::Check,
            _ => return usage(""),
        },
        "describe" => match args {
            [] => Op::Describe { team: None },
            [team] => Op::Describe { team: Some(team.clone()) },
            _ => return usage("[team]"),
        },
        "init" | "store-exists" | "compact" => {
            if args.len() > 1 {
                return usage("[team]");
            }
            // The optional team is agmsg's store selector (it picks the team's partition).
            let team = args.first().cloned();
            if let Some(team) = &team {
                check_name("team", team).map_err(|e| Usage(e.to_string()))?;
            }
            match op {
                "init" => Op::Init { team },
                "store-exists" => Op::StoreExists { team },
                _ => Op::Compact { team },
            }
        }
        "export" | "import" => {
            let (team, file) = match args {
                [file] => (None, file),
                [team, file] => {
                    check_name("team", team).map_err(|e| Usage(e.to_string()))?;
                    (Some(team.clone()), file)
                }
                _ => return usage("[team] <file>"),
            };
            let file = PathBuf::from(file);
            if op == "export" { Op::Export { team, file } } else { Op::Import { team, file } }
        }
        "send" => match args {
            [flag, team, from, to] if flag == "--body-stdin" => {
                Op::Send { team: team.clone(), from: from.clone(), to: to.clone(), body: Body::Stdin }
            }
            // Everything after the third argument is the body, even if it looks like a flag.
            [team, from, to, body] => Op::Send { team: team.clone(), from: from.clone(), to: to.clone(), body: Body::Arg(body.clone()) },
            _ => return usage("<team> <from> <to> <body>  |  send --body-stdin <team> <from> <to>"),
        },
        "list-unread" => {
            let (positional, limit) = split_limit(args)?;
            match positional.as_slice() {
                [team, agent] => Op::ListUnread { team: team.clone(), agent: agent.clone(), limit },
                _ => return usage("<team> <agent> [--limit N]"),
            }
        }
        "history" => {
            let (positional, limit) = split_limit(args)?;
            match positional.as_slice() {
                [team] => Op::History { team: team.clone(), agent: None, limit },
                // An empty agent means team-wide, as in agmsg.
                [team, agent] => Op::History { team: team.clone(), agent: Some(agent.clone()).filter(|a| !a.is_empty()), limit },
                _ => return usage("<team> [agent] [--limit N]"),
            }
        }
        "mark-read-batch" => match args {
            [team, agent, ids @ ..] => Op::MarkReadBatch { team: team.clone(), agent: agent.clone(), ids: ids.to_vec() },
            _ => return usage("<team> <agent> <id>..."),
        },
        "read-cursor-get" => match args {
            [team, agent] => Op::CursorGet { team: team.clone(), agent: agent.clone() },
            _ => return usage("<team> <agent>"),
        },
        "read-cursor-consume" => match args {
            [team, agent, cursor, ids @ ..] => {
                Op::CursorConsume { team: team.clone(), agent: agent.clone(), cursor: cursor.clone(), ids: ids.to_vec() }
            }
            _ => return usage("<team> <agent> <cursor> [<id>...]"),
        },
        "watch-tip" => match args {
            [] => return usage("<team:agent>..."),
            pairs => Op::WatchTip { pairs: parse_pairs(pairs)? },
        },
        "watch-after" => match args {
            [cursor, pairs @ ..] if !pairs.is_empty() => Op::WatchAfter { cursor: cursor.clone(), pairs: parse_pairs(pairs)? },
            _ => return usage("<cursor> <team:agent>..."),
        },
        "wait-after" => {
            let mut timeout_ms: u64 = 1000;
            let mut positional = Vec::new();
            let mut iter = args.iter();
            while let Some(arg) = iter.next() {
                let value = if arg == "--timeout-ms" {
                    Some(iter.next().ok_or_else(|| Usage("--timeout-ms needs a number".into()))?.as_str())
                } else {
                    arg.strip_prefix("--timeout-ms=")
                };
                match value {
                    Some(v) => {
                        timeout_ms =
                            v.parse().map_err(|_| Usage(format!("--timeout-ms needs a whole number of milliseconds, not {v:?}")))?
                    }
                    None if arg.starts_with("--") => return Err(Usage(format!("unknown flag {arg}"))),
                    None => positional.push(arg.clone()),
                }
            }
            match positional.as_slice() {
                [cursor, pairs @ ..] if !pairs.is_empty() => Op::WaitAfter {
                    cursor: cursor.clone(),
                    pairs: parse_pairs(pairs)?,
                    timeout: std::time::Duration::from_millis(timeout_ms),
                },
                _ => return usage("<cursor> <team:agent>... [--timeout-ms N]"),
            }
        }
        "record-receipts" => match args {
            [team, agent, evidence, ids @ ..] => {
                Op::RecordReceipts { team: team.clone(), agent: agent.clone(), evidence: evidence.clone(), ids: ids.to_vec() }
            }
            _ => return usage("<team> <agent> <evidence> <id>..."),
        },
        "receipt-status" => match args {
            [team, id] => Op::ReceiptStatus { team: team.clone(), id: id.clone() },
            _ => return usage("<team> <id>"),
        },
        "rename-agent" => match args {
            [team, old, new] => Op::RenameAgent { team: team.clone(), old: old.clone(), new: new.clone() },
            _ => return usage("<team> <old> <new>"),
        },
        "rename-team" => match args {
            [old, new] => {
                for team in [old, new] {
                    check_name("team", team).map_err(|e| Usage(e.to_string()))?;
                }
                Op::RenameTeam { old: old.clone(), new: new.clone() }
            }
            _ => return usage("<old> <new>"),
        },
        "purge-store" => {
            // Destructive: only with an explicit --yes, so a slip of the op name deletes nothing.
            let team = match args {
                [yes] if yes == "--yes" => None,
                [yes, team] if yes == "--yes" => Some(team.clone()),
                _ => return usage("--yes [team]"),
            };
            if let Some(team) = &team {
                check_name("team", team).map_err(|e| Usage(e.to_string()))?;
            }
            Op::PurgeStore { team }
        }
        other => return Err(Usage(format!("unknown op '{other}'"))),
    })
}

/// Take `--limit N` (or `--limit=N`) out of `args`; any other flag is an error.
fn split_limit(args: &[String]) -> Result<(Vec<String>, Option<u32>), Usage> {
    let mut positional = Vec::new();
    let mut limit = None;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let value = if arg == "--limit" {
            Some(iter.next().ok_or_else(|| Usage("--limit needs a number".into()))?.as_str())
        } else if let Some(v) = arg.strip_prefix("--limit=") {
            Some(v)
        } else if arg.starts_with("--") {
            return Err(Usage(format!("unknown flag {arg}")));
        } else {
            None
        };
        match value {
            Some(v) => {
                let n = v.parse::<u32>().map_err(|_| Usage(format!("--limit needs a non-negative whole number, not {v:?}")))?;
                limit = Some(n);
            }
            None => positional.push(arg.clone()),
        }
    }
    Ok((positional, limit))
}

/// Split `<team>:<agent>` pairs by the contract's rule (the SDK checks the same): one team for all.
fn parse_pairs(args: &[String]) -> Result<Vec<Pair>, Usage> {
    let pairs = agmsg_contract::split_pairs(args).map_err(|e| Usage(e.to_string()))?;
    Ok(pairs.into_iter().map(|(team, agent)| Pair { team: team.to_owned(), agent: agent.to_owned() }).collect())
}

fn execute(store_flag: Option<PathBuf>, driver_flag: Option<String>, op: Op) -> Result<ExitCode, StorageError> {
    let started = std::time::Instant::now();
    if let Op::RenameTeam { old, new } = &op {
        move_team_store(store_flag.as_deref(), old, new)?;
    }
    if let Op::RecordReceipts { ids, .. } = &op
        && ids.is_empty()
    {
        // Nothing to record, as agmsg answers: no store is opened or created.
        println!("{}", Status::Ok.word());
        return Ok(ExitCode::SUCCESS);
    }
    let store = StoreSession::resolve(store_flag, driver_flag, op.team(), op.creates_store())?;
    if matches!(op, Op::StoreExists { .. }) && !store.exists() {
        // The store directory is the driver's whole world: where it does not exist, no store does.
        return Ok(exit::no());
    }
    let store_dir = store.dir.clone();
    let runtime_ready = started.elapsed();
    let mut driver = store.driver()?;
    host_log::debug(&format!(
        "timing: runtime {:.2} ms, driver loaded and linked {:.2} ms",
        runtime_ready.as_secs_f64() * 1e3,
        (started.elapsed() - runtime_ready).as_secs_f64() * 1e3
    ));
    let op_started = std::time::Instant::now();

    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let print = |out: &mut BufWriter<io::StdoutLock<'_>>, line: &str| -> Result<(), StorageError> {
        writeln!(out, "{line}").map_err(|e| StorageError::runtime(format!("cannot write to stdout: {e}")))
    };

    match op {
        Op::Check => {
            driver.check()?;
            print(&mut out, Status::Ok.word())?;
        }
        Op::Describe { team } => {
            let d = driver.describe()?;
            // The driver's describe() checked every value and that the store file is a relative path;
            // this checks that the path, symlinks resolved, stays inside this store. All before the
            // first line: a refused answer prints nothing.
            let store_file = match (team, &d.store_file) {
                (Some(_), Some(file)) => Some((&file.key, driver.store_file_path(&absolute(&store_dir), file)?)),
                _ => None,
            };
            print(&mut out, &format!("name={}", d.name))?;
            print(&mut out, &format!("backend={}", d.backend))?;
            print(&mut out, &format!("capabilities={}", d.capabilities.join(",")))?;
            if let Some((key, path)) = store_file {
                print(&mut out, &format!("{key}={}", path.display()))?;
            }
        }
        Op::Init { .. } => {
            driver.init()?;
            print(&mut out, Status::Ok.word())?;
        }
        Op::StoreExists { .. } => {
            if !driver.store_exists()? {
                return Ok(exit::no());
            }
        }
        Op::Send { team, from, to, body } => {
            let body = match body {
                Body::Arg(body) => body,
                Body::Stdin => read_stdin_body()?,
            };
            let id = driver.send(&team, &from, &to, &body)?;
            print(&mut out, &id)?;
        }
        Op::ListUnread { team, agent, limit } => {
            for m in driver.list_unread(&team, &agent, limit)? {
                print(&mut out, &message_line(&m))?;
            }
        }
        Op::MarkReadBatch { team, agent, ids } => {
            driver.mark_read_batch(&team, &agent, &ids)?;
            print(&mut out, Status::Ok.word())?;
        }
        Op::CursorGet { team, agent } => {
            let cursor = driver.read_cursor_get(&team, &agent)?;
            print(&mut out, &cursor)?;
        }
        Op::CursorConsume { team, agent, cursor, ids } => {
            driver.read_cursor_consume(&team, &agent, &cursor, &ids)?;
            print(&mut out, Status::Ok.word())?;
        }
        Op::WatchTip { pairs } => {
            let cursor = driver.watch_tip(&pairs)?;
            print(&mut out, &cursor)?;
        }
        Op::WatchAfter { cursor, pairs } => {
            let batch = driver.watch_after(&cursor, &pairs)?;
            for m in &batch.messages {
                print(&mut out, &message_line(m))?;
            }
            print(&mut out, &cursor_line(&batch.cursor))?;
        }
        Op::WaitAfter { cursor, pairs, timeout } => {
            let answer = match driver.wait_after(&cursor, &pairs, timeout)? {
                Some(Wake::Changed) => "changed",
                Some(Wake::TimedOut) => "timed-out",
                None => "unsupported",
            };
            print(&mut out, answer)?;
        }
        Op::History { team, agent, limit } => {
            for m in driver.history(&team, agent.as_deref(), limit)? {
                print(&mut out, &message_line(&m))?;
            }
        }
        Op::Export { file, .. } => driver.export_to_file(&file)?,
        Op::Import { file, .. } => {
            driver.import_file(&file)?;
        }
        Op::Compact { .. } => {
            driver.compact()?;
            print(&mut out, Status::Ok.word())?;
        }
        Op::RecordReceipts { team, agent, evidence, ids } => {
            driver.record_receipts(&team, &agent, &evidence, &ids)?;
            print(&mut out, Status::Ok.word())?;
        }
        Op::ReceiptStatus { team, id } => {
            // agmsg's words (history prints them).
            let word = match driver.receipt_status(&team, &id)? {
                ReceiptState::Receipt => "receipt",
                ReceiptState::LegacyRead => "legacy_read",
                ReceiptState::None => "none",
            };
            print(&mut out, word)?;
        }
        Op::RenameAgent { team, old, new } => {
            driver.rename_agent(&team, &old, &new)?;
            print(&mut out, Status::Ok.word())?;
        }
        Op::RenameTeam { old, new } => {
            driver.rename_team(&old, &new)?;
            print(&mut out, Status::Ok.word())?;
        }
        Op::PurgeStore { .. } => {
            driver.purge_store()?;
            print(&mut out, Status::Ok.word())?;
        }
    }
    out.flush().map_err(|e| StorageError::runtime(format!("cannot write to stdout: {e}")))?;
    host_log::debug(&format!("timing: op (with instantiation) {:.2} ms", op_started.elapsed().as_secs_f64() * 1e3));
    Ok(ExitCode::SUCCESS)
}

fn read_stdin_body() -> Result<String, StorageError> {
    let mut bytes = Vec::new();
    io::stdin().read_to_end(&mut bytes).map_err(|e| StorageError::runtime(format!("cannot read the body from stdin: {e}")))?;
    String::from_utf8(bytes).map_err(|_| StorageError::runtime("the body on stdin is not valid UTF-8"))
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

/// `rename-team` called on its own: a per-team store still under the old name moves to the new one
/// first (agmsg's rename-team.sh has usually done it), so the driver rewrites the store that stays. Only
/// a real directory moves, and never onto an existing one (that store's history is not merged).
fn move_team_store(store_flag: Option<&Path>, old: &str, new: &str) -> Result<(), StorageError> {
    let root = location::store_dir(store_flag.map(Path::to_owned))?;
    let place = location::partition(&root, new)?;
    if place.partition.is_none() || old == new {
        return Ok(());
    }
    let teams = place.root.join("teams");
    let (from, to) = (teams.join(old), teams.join(new));
    match (std::fs::symlink_metadata(&from), std::fs::symlink_metadata(&to)) {
        (Ok(meta), Err(e)) if meta.is_dir() && e.kind() == io::ErrorKind::NotFound => std::fs::rename(&from, &to)
            .map_err(|e| StorageError::runtime(format!("cannot move the store {} to {}: {e}", from.display(), to.display()))),
        _ => Ok(()),
    }
}
