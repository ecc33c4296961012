//! `agmsg-host storage sync-<op>`: agmsg's Stage-1 remote-sync ops (spec §2.8) for its Node engine,
//! with agmsg's argv (`<local-team> <server-instance-id> <remote-team-id> <protocol-version>`, then the
//! op's own) and record framing: JSONL records in on stdin, JSONL records out on stdout, a failure is an
//! exit code and a message on stderr, never a status word. Exit codes are agmsg's adapter's: 13 for any
//! refused argument or record and any runtime failure, 12 when the driver finds the store inconsistent
//! (a reconcile that matches no reservation), 14 when the driver does not offer the op.

use std::cell::RefCell;
use std::io::{self, BufRead};
use std::path::PathBuf;
use std::process::ExitCode;

use agmsg_contract::check_name;
use agmsg_host::error::{ExitClass, HostError};
use agmsg_host::storage::sync::spool::Spooled;
use agmsg_host::storage::sync::{self, Binding, ReprocessScope};
use agmsg_host::storage::{StorageError, StoreSession};

use super::exit;
use super::framing::record_failure;

/// The longest stdin line (a pulled envelope of 1 MiB is ~1.4 MB of base64, plus its body).
const MAX_LINE: u64 = 8 << 20;

enum Op {
    PreparePush { limit: u32 },
    ReconcilePush,
    ApplyPull,
    Reprocess { limit: u32, after: Option<sync::PageKey>, scope: ReprocessScope },
}

/// Whether `op` (after `sync-`) is one of these Stage-1 ops (the resync and read-state extensions are
/// `storage_sync_stage2`'s, which shares this file's framing).
pub fn is_op(op: &str) -> bool {
    matches!(op, "prepare-push" | "reconcile-push" | "apply-pull" | "reprocess")
}

pub fn run(store_flag: Option<PathBuf>, driver_flag: Option<String>, op: &str, args: &[String]) -> ExitCode {
    let refuse = |message: String| record_failure(&StorageError::runtime(format!("storage sync-{op}: {message}")));
    let (binding, rest) = match parse_binding(args) {
        Ok(parsed) => parsed,
        Err(e) => return refuse(e),
    };
    let parsed = match (op, rest) {
        ("prepare-push", [limit]) => parse_limit(limit).map(|limit| Op::PreparePush { limit }),
        ("reconcile-push", []) => Ok(Op::ReconcilePush),
        ("apply-pull", []) => Ok(Op::ApplyPull),
        ("reprocess", [limit, more @ ..]) if more.len() <= 2 => (|| {
            let after = match more.first().map(String::as_str) {
                None | Some("") => None,
                Some(key) => Some(sync::parse_page_key(key)?),
            };
            Ok(Op::Reprocess { limit: parse_limit(limit)?, after, scope: sync::parse_scope(more.get(1).map(String::as_str).unwrap_or(""))? })
        })(),
        ("prepare-push", _) => Err("usage: <team> <server-instance-id> <remote-team-id> <protocol-version> <limit>".into()),
        ("reprocess", _) => Err("usage: <team> <server-instance-id> <remote-team-id> <protocol-version> <limit> [<seq>:<wire-id>] [malformed]".into()),
        _ => Err("usage: <team> <server-instance-id> <remote-team-id> <protocol-version>".into()),
    };
    let op_parsed = match parsed {
        Ok(parsed) => parsed,
        Err(e) => return refuse(e),
    };
    match execute(store_flag, driver_flag, &binding, op_parsed) {
        Ok(code) => code,
        Err(e) => record_failure(&e),
    }
}

fn execute(store_flag: Option<PathBuf>, driver_flag: Option<String>, b: &Binding, op: Op) -> Result<ExitCode, StorageError> {
    let store = StoreSession::resolve(store_flag, driver_flag, Some(&b.local_team), true)?;
    let mut driver = store.driver()?;
    if !driver.offers_sync() {
        let why = format!("driver '{}' does not offer Stage-1 sync (the optional agmsg:storage/sync interface)", driver.name());
        return Ok(exit::fail("storage", &HostError::new(ExitClass::NotOffered, why)));
    }
    // Both callbacks of an op print: the writer is shared through a RefCell. Output is held back
    // (spooled to a file past 16 MiB), so an op refused part-way prints nothing.
    let out = RefCell::new(Spooled::new(io::stdout().lock()));
    let print = |line: String| out.borrow_mut().line(&line);
    // A value the spec refuses, from the driver, is not printed (agmsg's engine would take it as given).
    let name = driver.name().to_owned();
    let checked = |checked: Result<(), String>| checked.map_err(|e| StorageError::runtime(format!("driver '{name}' answered {e}")));
    let stdin = io::stdin();
    let mut lines = records(stdin.lock());
    match op {
        Op::PreparePush { limit } => {
            let line = lines.next().ok_or_else(|| StorageError::runtime("prepare-push: no sync_prepare record on stdin"))??;
            if lines.next().is_some() {
                return Err(StorageError::runtime("prepare-push: more than one record on stdin"));
            }
            let request = sync::parse_prepare(&line.1).map_err(|e| line_error(line.0, e))?;
            driver.sync_prepare_push(
                b,
                limit,
                &request,
                |state| print(sync::state_line(state)),
                |c| print(sync::candidate_line(c)),
            )?;
        }
        Op::ReconcilePush => {
            let mut acks = Vec::new();
            for line in lines {
                let (number, text) = line?;
                acks.push(sync::parse_ack(&text).map_err(|e| line_error(number, e))?);
                if acks.len() > 1000 {
                    return Err(StorageError::runtime("reconcile-push: more than 1000 sync_push_ack records"));
                }
            }
            if acks.is_empty() {
                return Err(StorageError::runtime("reconcile-push: no sync_push_ack record on stdin"));
            }
            let cursor = driver.sync_reconcile_push(b, &acks)?;
            print(sync::reconcile_line(cursor))?;
        }
        Op::ApplyPull => {
            // What the page held, to check the driver's outcomes against.
            let mut sent = sync::PageSent::default();
            let parsed = lines
                .map(|line| line.and_then(|(number, text)| sync::parse_pull_line(&text).map_err(|e| line_error(number, e))))
                .inspect(|line| if let Ok(line) = line { sent.note(line) });
            let result = driver.sync_apply_pull(b, parsed)?;
            checked(sync::check_apply_result(&result, &sent))?;
            print(sync::apply_result_line(&result))?;
            for outcome in &result.outcomes {
                print(sync::outcome_line(outcome))?;
            }
        }
        Op::Reprocess { limit, after, scope } => {
            let page = driver.sync_reprocess(
                b,
                limit,
                after.as_ref(),
                scope,
                |state| checked(sync::check_state(state)).and_then(|()| print(sync::state_line(state))),
                |c| checked(sync::check_reprocess_candidate(c, scope)).and_then(|()| print(sync::reprocess_candidate_line(c))),
            )?;
            checked(sync::check_reprocess_page(&page))?;
            print(sync::reprocess_page_line(&page))?;
        }
    }
    out.into_inner().finish()?;
    Ok(ExitCode::SUCCESS)
}

pub(super) fn line_error(number: u64, e: String) -> StorageError {
    StorageError::runtime(format!("stdin line {number}: {e}"))
}

/// stdin's non-blank lines with their numbers, each at most [`MAX_LINE`] bytes, UTF-8.
pub(super) fn records(mut reader: impl BufRead) -> impl Iterator<Item = Result<(u64, String), StorageError>> {
    let mut number = 0u64;
    std::iter::from_fn(move || loop {
        let mut line = Vec::new();
        let read = match io::Read::take(&mut reader, MAX_LINE + 1).read_until(b'\n', &mut line) {
            Ok(read) => read,
            Err(e) => return Some(Err(StorageError::runtime(format!("cannot read stdin: {e}")))),
        };
        if read == 0 {
            return None;
        }
        number += 1;
        if line.last() == Some(&b'\n') {
            line.pop();
        } else if line.len() as u64 > MAX_LINE {
            return Some(Err(line_error(number, format!("longer than {} MiB", MAX_LINE >> 20))));
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        return Some(String::from_utf8(line).map(|text| (number, text)).map_err(|_| line_error(number, "not UTF-8".into())));
    })
}

/// agmsg's four binding words: a team name, two lowercase UUIDv7 ids, a version of digits.
pub(super) fn parse_binding(args: &[String]) -> Result<(Binding, &[String]), String> {
    let [team, server, remote, version, rest @ ..] = args else {
        return Err("usage: <team> <server-instance-id> <remote-team-id> <protocol-version> ...".into());
    };
    check_name("team", team).map_err(|e| e.to_string())?;
    for (what, id) in [("server-instance-id", server), ("remote-team-id", remote)] {
        if !sync::is_lower_uuid(id, 7) {
            return Err(format!("{what} {id:?} is not a lowercase UUIDv7"));
        }
    }
    if version.is_empty() || version.len() > 9 || !version.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("protocol-version {version:?} is not a number"));
    }
    let binding = Binding { local_team: team.clone(), server_instance_id: server.clone(), remote_team_id: remote.clone(), protocol_version: version.clone() };
    Ok((binding, rest))
}

fn parse_limit(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(n) if (1..=1000).contains(&n) && !text.starts_with('0') => Ok(n),
        _ => Err(format!("limit {text:?} is not a whole number from 1 to 1000")),
    }
}
