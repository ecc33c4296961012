//! agmsg's sync ops served whole: from agmsg's argv and the records its engine writes on stdin, through
//! the store's driver, to the records it reads on stdout, or a typed failure. The one place every
//! `storage sync-<op>` runs (Stage-1 sync, resync, read state); the binary parses its command line,
//! calls [`serve`] with its stdin and stdout, and prints a failure.
//!
//! agmsg's framing: JSONL records in and out, a failure is an exit code and a message on stderr, never
//! a status word. A driver that does not offer the op's interface is refused first (agmsg's adapter's
//! 14, whatever the input); then every input record is read and checked before the driver is called,
//! but apply-pull's page, which the driver stages as it is read; every answer is checked by the storage handle before it is written, and held
//! back ([`Spooled`]) until the op has succeeded, so a refused op prints nothing.

use std::cell::RefCell;
use std::io::{self, BufRead, Write};
use std::path::PathBuf;

use agmsg_contract::check_name;

use super::spool::Spooled;
use super::{Binding, PageKey, ReprocessScope, read_state, resync};
use crate::error::{ExitClass, HostError};
use crate::storage::world::{self, Offers, Optional};
use crate::storage::{StorageError, StoreSession};

/// The longest stdin line (a pulled envelope of 1 MiB is ~1.4 MB of base64, plus its body).
const MAX_LINE: u64 = 8 << 20;
/// The most acknowledgements one reconcile takes (agmsg's engine sends at most 1,000).
const MAX_ACKS: usize = 1000;

/// One sync op and its own arguments (after the binding's four).
#[derive(Debug)]
pub enum SyncOp {
    PreparePush { limit: u32 },
    ReconcilePush,
    ApplyPull,
    Reprocess { limit: u32, after: Option<PageKey>, scope: ReprocessScope },
    ResyncStatus { accepted_floor: String },
    Resync,
    PrepareReadState,
    ApplyReadState,
    BlockReadState,
    UnblockReadState,
}

/// How a sync op failed, to agmsg's engine.
#[derive(Debug)]
pub enum SyncFailure {
    /// Refused or failed: the message on stderr, the status's exit code (13, or 12, 10).
    Store(StorageError),
    /// The driver does not offer the op's interface: agmsg's adapter's 14.
    NotOffered(HostError),
    /// agmsg's fail-closed answer for a binding the store does not have (`resync-status`): 13, and no
    /// output at all (its suite checks that stderr is empty too).
    Silent(ExitClass),
}

impl From<StorageError> for SyncFailure {
    fn from(e: StorageError) -> SyncFailure {
        SyncFailure::Store(e)
    }
}

/// Whether `op` (after `sync-`) is a sync op.
pub fn is_op(op: &str) -> bool {
    matches!(
        op,
        "prepare-push"
            | "reconcile-push"
            | "apply-pull"
            | "reprocess"
            | "resync-status"
            | "resync"
            | "prepare-read-state"
            | "apply-read-state"
            | "block-read-state"
            | "unblock-read-state"
    )
}

const BINDING_USAGE: &str = "<team> <server-instance-id> <remote-team-id> <protocol-version>";

/// agmsg's argv of `sync-<op>`: the binding's four words, then the op's own.
pub fn parse(op: &str, args: &[String]) -> Result<(Binding, SyncOp), StorageError> {
    let refuse = |message: String| StorageError::runtime(format!("storage sync-{op}: {message}"));
    let (binding, rest) = parse_binding(args).map_err(refuse)?;
    let usage = |more: &str| Err(format!("usage: {BINDING_USAGE}{more}"));
    let parsed = match (op, rest) {
        ("prepare-push", [limit]) => parse_limit(limit).map(|limit| SyncOp::PreparePush { limit }),
        ("prepare-push", _) => usage(" <limit>"),
        ("reprocess", [limit, more @ ..]) if more.len() <= 2 => (|| {
            let after = match more.first().map(String::as_str) {
                None | Some("") => None,
                Some(key) => Some(super::parse_page_key(key)?),
            };
            let scope = super::parse_scope(more.get(1).map(String::as_str).unwrap_or(""))?;
            Ok(SyncOp::Reprocess { limit: parse_limit(limit)?, after, scope })
        })(),
        ("reprocess", _) => usage(" <limit> [<seq>:<wire-id>] [malformed]"),
        ("resync-status", [floor]) => resync::parse_floor(floor).map(|accepted_floor| SyncOp::ResyncStatus { accepted_floor }),
        ("resync-status", _) => usage(" <accepted-floor>"),
        (_, [_, ..]) => usage(""),
        ("reconcile-push", []) => Ok(SyncOp::ReconcilePush),
        ("apply-pull", []) => Ok(SyncOp::ApplyPull),
        ("resync", []) => Ok(SyncOp::Resync),
        ("prepare-read-state", []) => Ok(SyncOp::PrepareReadState),
        ("apply-read-state", []) => Ok(SyncOp::ApplyReadState),
        ("block-read-state", []) => Ok(SyncOp::BlockReadState),
        ("unblock-read-state", []) => Ok(SyncOp::UnblockReadState),
        _ => Err(format!("unknown sync op {op:?}")),
    };
    parsed.map(|op| (binding, op)).map_err(refuse)
}

/// agmsg's four binding words: a team name, two lowercase UUIDv7 ids, a version of digits.
fn parse_binding(args: &[String]) -> Result<(Binding, &[String]), String> {
    let [team, server, remote, version, rest @ ..] = args else {
        return Err(format!("usage: {BINDING_USAGE} ..."));
    };
    check_name("team", team).map_err(|e| e.to_string())?;
    for (what, id) in [("server-instance-id", server), ("remote-team-id", remote)] {
        if !super::is_lower_uuid(id, 7) {
            return Err(format!("{what} {id:?} is not a lowercase UUIDv7"));
        }
    }
    if version.is_empty() || version.len() > 9 || !version.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("protocol-version {version:?} is not a number"));
    }
    let binding = Binding {
        local_team: team.clone(),
        server_instance_id: server.clone(),
        remote_team_id: remote.clone(),
        protocol_version: version.clone(),
    };
    Ok((binding, rest))
}

fn parse_limit(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(n) if (1..=1000).contains(&n) && !text.starts_with('0') => Ok(n),
        _ => Err(format!("limit {text:?} is not a whole number from 1 to 1000")),
    }
}

fn line_error(number: u64, e: String) -> StorageError {
    StorageError::runtime(format!("stdin line {number}: {e}"))
}

/// The input's non-blank lines with their numbers, each at most [`MAX_LINE`] bytes, UTF-8.
fn records(mut reader: impl BufRead) -> impl Iterator<Item = Result<(u64, String), StorageError>> {
    let mut number = 0u64;
    std::iter::from_fn(move || {
        loop {
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
        }
    })
}

/// The one record an op reads (blank lines aside), parsed by `f`: a second is refused, not ignored.
fn one_record<T>(input: impl BufRead, op: &str, kind: &str, f: impl FnOnce(&str) -> Result<T, String>) -> Result<T, StorageError> {
    let mut lines = records(input);
    let (number, text) = lines.next().ok_or_else(|| StorageError::runtime(format!("{op}: no {kind} record on stdin")))??;
    if lines.next().is_some() {
        return Err(StorageError::runtime(format!("{op}: more than one record on stdin")));
    }
    f(&text).map_err(|e| line_error(number, e))
}

/// An op with what it read before the driver is called (all of its input, but for apply-pull's page,
/// which the driver stages as it is read).
enum Input<'op> {
    Prepare(u32, super::PrepareRequest),
    Acks(Vec<super::PushAck>),
    Pull,
    Reprocess(u32, Option<&'op PageKey>, ReprocessScope),
    Status(&'op str),
    Resync(resync::ResyncRequest),
    ReadContext(read_state::ReadContext),
    Snapshot(read_state::Snapshot),
    Block(String, bool),
}

/// Serve `op` for binding `b` on the store that `store_flag` / `driver_flag` resolve (as agmsg does,
/// the team's partition): its records from `input`, its answer to `output`, written only once the op
/// has succeeded.
/// Whether `offers` has the optional interface `I`, its capability word, and its name without the
/// version (`agmsg:storage/sync`).
fn optional<I: Optional>(offers: &Offers) -> (bool, &'static str, &'static str) {
    (I::offered(offers), I::WORD, I::INTERFACE.split('@').next().unwrap_or(I::INTERFACE))
}

pub fn serve(
    store_flag: Option<PathBuf>,
    driver_flag: Option<String>,
    b: &Binding,
    op: &SyncOp,
    input: impl BufRead,
    output: impl Write,
) -> Result<(), SyncFailure> {
    let mut input = Some(input);
    let mut take = || input.take().expect("the input is read once");
    let store = StoreSession::resolve(store_flag, driver_flag, Some(&b.local_team), true)?;
    let mut driver = store.driver()?;
    // The op's interface, named by the world's one list (its capability word and name from there).
    let offers = driver.offers();
    let (offered, word, interface) = match op {
        SyncOp::ResyncStatus { .. } | SyncOp::Resync => optional::<world::resync::Exports>(&offers),
        SyncOp::PrepareReadState | SyncOp::ApplyReadState | SyncOp::BlockReadState | SyncOp::UnblockReadState => {
            optional::<world::read_state::Exports>(&offers)
        }
        _ => optional::<world::sync::Exports>(&offers),
    };
    if !offered {
        let why = format!("driver '{}' does not offer {word} (the optional {interface} interface)", driver.name());
        return Err(SyncFailure::NotOffered(HostError::new(ExitClass::NotOffered, why)));
    }

    // The op's records, read and checked before the driver is called (apply-pull's as it stages them).
    let read = match op {
        SyncOp::PreparePush { limit } => Input::Prepare(*limit, one_record(take(), "prepare-push", "sync_prepare", super::parse_prepare)?),
        SyncOp::ReconcilePush => {
            let mut acks = Vec::new();
            for line in records(take()) {
                let (number, text) = line?;
                acks.push(super::parse_ack(&text).map_err(|e| line_error(number, e))?);
                if acks.len() > MAX_ACKS {
                    return Err(StorageError::runtime(format!("reconcile-push: more than {MAX_ACKS} sync_push_ack records")).into());
                }
            }
            if acks.is_empty() {
                return Err(StorageError::runtime("reconcile-push: no sync_push_ack record on stdin").into());
            }
            Input::Acks(acks)
        }
        SyncOp::ApplyPull => Input::Pull,
        SyncOp::Reprocess { limit, after, scope } => Input::Reprocess(*limit, after.as_ref(), *scope),
        SyncOp::ResyncStatus { accepted_floor } => Input::Status(accepted_floor),
        SyncOp::Resync => Input::Resync(one_record(take(), "resync", "sync_resync", resync::parse_resync)?),
        SyncOp::PrepareReadState => {
            Input::ReadContext(one_record(take(), "prepare-read-state", "sync_read_context", read_state::parse_context)?)
        }
        SyncOp::ApplyReadState => {
            let lines = records(take()).map(|line| line.map_err(|e| e.message));
            Input::Snapshot(read_state::parse_snapshot(lines).map_err(StorageError::runtime)?)
        }
        SyncOp::BlockReadState => Input::Block(one_record(take(), "block-read-state", "sync_read_block", read_state::parse_block)?, true),
        SyncOp::UnblockReadState => {
            Input::Block(one_record(take(), "unblock-read-state", "sync_read_unblock", read_state::parse_unblock)?, false)
        }
    };

    // Both callbacks of an op print: the spool is shared through a RefCell.
    let out = RefCell::new(Spooled::new(output));
    let print = |line: String| out.borrow_mut().line(&line);
    match read {
        Input::Prepare(limit, request) => {
            driver.sync_prepare_push(b, limit, &request, |state| print(super::state_line(state)), |c| print(super::candidate_line(c)))?;
        }
        Input::Acks(acks) => print(super::reconcile_line(driver.sync_reconcile_push(b, &acks)?))?,
        Input::Pull => {
            let lines = records(take())
                .map(|line| line.and_then(|(number, text)| super::parse_pull_line(&text).map_err(|e| line_error(number, e))));
            let result = driver.sync_apply_pull(b, lines)?;
            print(super::apply_result_line(&result))?;
            result.outcomes.iter().try_for_each(|outcome| print(super::outcome_line(outcome)))?;
        }
        Input::Reprocess(limit, after, scope) => {
            let page = driver.sync_reprocess(
                b,
                limit,
                after,
                scope,
                |state| print(super::state_line(state)),
                |c| print(super::reprocess_candidate_line(c)),
            )?;
            print(super::reprocess_page_line(&page))?;
        }
        Input::Status(accepted_floor) => match driver.sync_resync_status(b, accepted_floor)? {
            Some(report) => print(resync::status_line(&report))?,
            // An absent binding fails closed; the engine then refuses to resync.
            None => return Err(SyncFailure::Silent(ExitClass::RUNTIME)),
        },
        Input::Resync(request) => print(resync::result_line(&driver.sync_resync(b, &request)?))?,
        Input::ReadContext(context) => {
            let prepared = driver.sync_prepare_read_state(b, &context)?;
            prepared.frontiers.iter().try_for_each(|f| print(read_state::frontier_line(f)))?;
            prepared.exacts.iter().try_for_each(|x| print(read_state::exact_line(x)))?;
            prepared.blocked.iter().try_for_each(|x| print(read_state::blocked_line(&x.member_id, x.reason)))?;
        }
        Input::Snapshot(page) => print(read_state::apply_result_line(&driver.sync_apply_read_state(b, &page)?))?,
        Input::Block(member, block) => {
            driver.sync_block_read_state(b, &member, block)?;
            print(if block {
                read_state::blocked_line(&member, read_state::BlockedReason::ReadStateLimitExceeded)
            } else {
                read_state::unblocked_line(&member)
            })?;
        }
    }
    out.into_inner().finish()?;
    Ok(())
}
