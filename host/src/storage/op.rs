//! agmsg's storage ops (`agmsg-host storage <op> [args]`): agmsg's argv shapes parsed into an [`Op`],
//! and the op run on the store's driver with its answer written as agmsg frames it (spec §2.1): a
//! control op its status word, a record op only records (JSONL, or a bare id / cursor), `describe`
//! `key=value` lines. How a failure is framed (the status word, the exit code) is the caller's.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use agmsg_contract::{Status, check_name};

use super::driver::{Pair, ReceiptState, Wake};
use super::records::{cursor_line, message_line};
use super::{StorageError, StoreSession, location};
use crate::error::Shape;
use crate::log::host_log;

/// A malformed op: the usage message.
pub struct Usage(pub String);

/// One storage op, as agmsg's argv gives it.
pub enum Op {
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

/// Where `send`'s body comes from.
pub enum Body {
    Arg(String),
    Stdin,
}

impl Op {
    /// How its answer and its failure are framed.
    pub fn shape(&self) -> Shape {
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

/// Parse op `op` (kebab-case) with agmsg's arguments `args`.
pub fn parse(op: &str, args: &[String]) -> Result<Op, Usage> {
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

/// What a resident server's spare does before its request arrives: open the store `op` would use (as
/// [`execute`] resolves it, never creating it; not a relative one) and make its driver's instance
/// ready, kept for the op that follows in this process ([`super::Storage::warm`]). Nothing is printed;
/// a store that does not exist is left alone.
pub fn warm(store_flag: Option<PathBuf>, driver_flag: Option<String>, op: &Op) -> Result<(), StorageError> {
    let store = StoreSession::resolve(store_flag, driver_flag, op.team(), false)?;
    // A relative store was the caller's working directory's, which the spare does not have.
    if !store.exists() || !store.dir.is_absolute() {
        return Ok(());
    }
    store.driver()?.warm(op.team().unwrap_or("warm"))
}

/// Run `op` on the store's driver (the store `store_flag` names or the environment's, the driver
/// `driver_flag` names or the configured one), writing its answer to `out` (a `send --body-stdin`
/// body is read from `input`). `Ok(false)`: the op's answer is no (`store-exists` where there is no
/// store), which agmsg reads from exit 1.
pub fn execute(
    store_flag: Option<PathBuf>,
    driver_flag: Option<String>,
    op: Op,
    input: &mut dyn Read,
    out: &mut dyn Write,
) -> Result<bool, StorageError> {
    let started = std::time::Instant::now();
    if let Op::RenameTeam { old, new } = &op {
        move_team_store(store_flag.as_deref(), old, new)?;
    }
    if let Op::RecordReceipts { ids, .. } = &op
        && ids.is_empty()
    {
        // Nothing to record, as agmsg answers: no store is opened or created.
        writeln!(out, "{}", Status::Ok.word()).map_err(|e| StorageError::runtime(format!("cannot write to stdout: {e}")))?;
        return Ok(true);
    }
    let store = StoreSession::resolve(store_flag, driver_flag, op.team(), op.creates_store())?;
    if matches!(op, Op::StoreExists { .. }) && !store.exists() {
        // The store directory is the driver's whole world: where it does not exist, no store does.
        return Ok(false);
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

    let mut out = io::BufWriter::new(out);
    let print = |out: &mut io::BufWriter<&mut dyn Write>, line: &str| -> Result<(), StorageError> {
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
                return Ok(false);
            }
        }
        Op::Send { team, from, to, body } => {
            let body = match body {
                Body::Arg(body) => body,
                Body::Stdin => read_body(input)?,
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
    Ok(true)
}

fn read_body(input: &mut dyn Read) -> Result<String, StorageError> {
    let mut bytes = Vec::new();
    input.read_to_end(&mut bytes).map_err(|e| StorageError::runtime(format!("cannot read the body from stdin: {e}")))?;
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
