//! Stage-1 remote sync (capability `stage1-sync`) on the jsonl log, in agmsg 1.2.1's journal format:
//! the state of a binding is the fold of its `sync_*` records in `events.jsonl` ([`fold`]), and every op
//! that changes it appends one journaled, synced write of new records ([`journal`]). A local message's
//! position is the byte offset just after its `message_sent` line, read with the log's generation.
//! Pulled messages are stored as `message_sent` local events inside `sync_pull_commit`, which the index
//! projects like any other message.
//!
//! Every op holds the host's store lock and agmsg's `events.jsonl.lock/` from its read of the log until
//! its answer is fully read (the candidate and page resources keep them), so agmsg's bash writers cannot
//! move the offsets the answer refers to.
//!
//! agmsg's test-only crash hooks (`AGMSG_SYNC_TEST_*`, exit 75) are not offered: a component sees no
//! environment, and the host's own tests kill the process at the same boundaries instead.

pub(crate) mod crash;
pub(crate) mod fold;
mod journal;
pub(crate) mod records;

use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::File;

use agmsg_guest_sdk::ids::new_id;
use agmsg_guest_sdk::storage::{
    ApplyResult, Binding, DriverError, Envelope, Evaluated, Outcome, OutcomeStatus, PageKey, PrepareRequest, Projection, PullMessage,
    PullStage, PushAck, PushCandidate, ReprocessCandidate, ReprocessPage, ReprocessScope, SyncDriver, SyncPages, SyncState, WriteProfile,
};
use serde_json::Value;

use crate::events::io_error;
use crate::{Jsonl, LOG_FILE, LogLock, ensure_store, lock_log, store_path};
use fold::{Array, BLOCKING, Place, State, Target, envelope_digest, seq_cmp};
use journal::{Staged, append_record, record_at};

fn fail(message: impl Into<String>) -> DriverError {
    DriverError::runtime(message)
}

/// agmsg's jsonl sync takes protocol version 1 only.
fn target(b: &Binding) -> Result<Target<'_>, DriverError> {
    if b.protocol_version != "1" || b.local_team.is_empty() {
        return Err(fail("sync binding is invalid"));
    }
    Ok(Target { local_team: &b.local_team, server: &b.server_instance_id, remote: &b.remote_team_id })
}

fn now_iso() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

fn json(text: &str) -> String {
    serde_json::to_string(text).expect("a string serializes")
}

/// Lock the log and bring the store up (an interrupted append is cut back first).
fn open_locked() -> Result<LogLock, DriverError> {
    let lock = lock_log()?;
    ensure_store()?;
    Ok(lock)
}

fn envelope_json(e: &Envelope) -> Value {
    serde_json::json!({ "v": e.v, "cipher": e.cipher, "key_id": e.key_id, "blob": e.blob })
}

fn envelope_of(value: &Value) -> Result<Envelope, DriverError> {
    let bad = || DriverError::corrupt(format!("{LOG_FILE}: a stored sync envelope is not {{v, cipher, key_id, blob}}"));
    let v = value.get("v").and_then(Value::as_u64).and_then(|v| u32::try_from(v).ok()).ok_or_else(bad)?;
    let cipher = value.get("cipher").and_then(Value::as_str).ok_or_else(bad)?.to_owned();
    let key_id = match value.get("key_id") {
        Some(Value::Null) => None,
        Some(Value::String(k)) => Some(k.clone()),
        _ => return Err(bad()),
    };
    let blob = value.get("blob").and_then(Value::as_str).ok_or_else(bad)?.to_owned();
    Ok(Envelope { v, cipher, key_id, blob })
}

/// Envelopes read back from their records, the last record kept parsed (a page's envelopes mostly
/// share a few records).
struct EnvelopeReader {
    file: File,
    cached: Option<(u64, Value)>,
}

impl EnvelopeReader {
    fn open() -> Result<EnvelopeReader, DriverError> {
        Ok(EnvelopeReader { file: File::open(store_path(LOG_FILE)).map_err(io_error)?, cached: None })
    }

    fn raw(&mut self, place: Place) -> Result<&Value, DriverError> {
        if self.cached.as_ref().is_none_or(|(at, _)| *at != place.record) {
            self.cached = Some((place.record, record_at(&self.file, place.record)?));
        }
        let record = &self.cached.as_ref().expect("cached above").1;
        record
            .get(place.array.key())
            .and_then(|list| list.get(place.index))
            .and_then(|entry| entry.get("envelope"))
            .ok_or_else(|| DriverError::corrupt(format!("{LOG_FILE}: the record at byte {} lost an envelope", place.record)))
    }

    fn envelope(&mut self, place: Place) -> Result<Envelope, DriverError> {
        envelope_of(self.raw(place)?)
    }
}

struct PushPages {
    items: VecDeque<(u64, String, String, Place)>,
    reader: EnvelopeReader,
    _lock: LogLock,
}

impl SyncPages<PushCandidate> for PushPages {
    fn next_page(&mut self, max_bytes: u32) -> Result<Vec<PushCandidate>, DriverError> {
        let mut page = Vec::new();
        let mut bytes = 0usize;
        while let Some((position, local_id, wire, place)) = self.items.front().cloned() {
            let envelope = self.reader.envelope(place)?;
            if !page.is_empty() && bytes + envelope.blob.len() > max_bytes as usize {
                break;
            }
            bytes += envelope.blob.len();
            self.items.pop_front();
            let local_position = i64::try_from(position).map_err(|_| fail("local position is out of range"))?;
            page.push(PushCandidate { local_position, local_id, wire_id: wire, envelope });
        }
        Ok(page)
    }
}

struct ReprocessPages {
    items: VecDeque<(String, String, String, Place, Evaluated)>,
    reader: EnvelopeReader,
    _lock: LogLock,
}

impl SyncPages<ReprocessCandidate> for ReprocessPages {
    fn next_page(&mut self, max_bytes: u32) -> Result<Vec<ReprocessCandidate>, DriverError> {
        let mut page = Vec::new();
        let mut bytes = 0usize;
        while let Some((seq, wire, received_at, place, prior)) = self.items.front().cloned() {
            let envelope = self.reader.envelope(place)?;
            if !page.is_empty() && bytes + envelope.blob.len() > max_bytes as usize {
                break;
            }
            bytes += envelope.blob.len();
            self.items.pop_front();
            page.push(ReprocessCandidate {
                server_seq: seq,
                wire_id: wire,
                server_received_at: received_at,
                envelope,
                prior_status: prior,
            });
        }
        Ok(page)
    }
}

/// Where a candidate's envelope is: in the log already, or the k-th entry this op commits.
enum At {
    Log(Place),
    Staged(usize),
}

fn seal(target: &Target<'_>, request: &PrepareRequest, wire: &str, message: &Value) -> Result<Envelope, DriverError> {
    let field = |k: &str| message.get(k).and_then(Value::as_str).ok_or_else(|| fail(format!("local message has no string {k:?}")));
    let at = agmsg_sync_seal::canonical_created_at(field("at")?).into_owned();
    let (cipher, key_id, recipients): (&str, Option<&str>, &[String]) = match &request.profile {
        WriteProfile::None => ("none", None, &[]),
        WriteProfile::AgeV1(age) => ("age-v1", Some(age.key_id.as_str()), &age.recipients),
    };
    let sealed = agmsg_sync_seal::seal(
        &agmsg_sync_seal::Message { body: field("body")?, created_at: &at, from_agent: field("from")?, to_agent: field("to")? },
        &agmsg_sync_seal::SealRequest {
            envelope_v: request.envelope_v,
            cipher,
            key_id,
            recipients,
            max_blob_bytes: request.max_blob_bytes,
            team_id: target.remote,
            wire_id: wire,
            protocol_version: 1,
        },
    )
    .map_err(|e| fail(format!("sealing local message failed: {e}")))?;
    Ok(Envelope { v: sealed.v, cipher: sealed.cipher, key_id: sealed.key_id, blob: sealed.blob })
}

fn reservation_entry(generation: &str, position: u64, local_id: &str, digest: &str, wire: &str, envelope: &Value) -> String {
    format!(
        r#"{{"driver_generation":{},"local_position":"{position}","local_id":{},"payload_digest":"{digest}","id":"{wire}","envelope":{envelope}}}"#,
        json(generation),
        json(local_id),
    )
}

impl SyncDriver for Jsonl {
    fn prepare_push(
        &self,
        b: &Binding,
        limit: u32,
        request: &PrepareRequest,
    ) -> Result<(SyncState, Box<dyn SyncPages<PushCandidate>>), DriverError> {
        let target = target(b)?;
        let lock = open_locked()?;
        let state = State::load(&target)?;
        let generation_missing = state.generation.is_none();
        let generation = state.generation.clone().unwrap_or_else(|| uuid::Uuid::new_v4().to_string());

        // One local id whose immutable payload differs from what was seen or reserved for it before is a
        // durable conflict: it is never pushed.
        let mut observed: HashMap<&str, &str> = HashMap::new();
        let mut conflicts: Vec<String> = Vec::new();
        let mut conflicted: HashSet<&str> = HashSet::new();
        for local in &state.locals {
            let digest = local.digest.as_deref().ok_or_else(|| fail("a local message_sent lacks a string field"))?;
            let id = local.local_id.as_str();
            let prior = observed.get(id).copied().or_else(|| state.reservation_of(id).and_then(|r| r.payload_digest.as_deref()));
            if let Some(prior) = prior
                && prior != digest
                && !state.local_conflicts.contains(id)
                && conflicted.insert(id)
            {
                conflicts.push(format!(
                    r#"{{"kind":"local_payload_conflict","status":"corrupt_state","reason":"the local message's payload changed under the same id","local_id":{},"expected_digest":"{prior}","observed_digest":"{digest}"}}"#,
                    json(id)
                ));
            }
            observed.entry(id).or_insert(digest);
        }

        let mut staged = Staged::new("sync-prepare-entries")?;
        let mut pending: Vec<(u64, String, String, At)> = Vec::new();
        let mut reader = EnvelopeReader::open()?;
        let mut reserved_now: HashSet<&str> = HashSet::new();
        for local in &state.locals {
            if pending.len() >= limit as usize {
                break;
            }
            let id = local.local_id.as_str();
            if state.local_conflicts.contains(id) || conflicted.contains(id) || reserved_now.contains(id) {
                continue;
            }
            let digest = local.digest.as_deref().unwrap_or_default();
            if let Some(r) = state.reservation_of(id) {
                if state.acks.contains_key(&r.wire) {
                    continue;
                }
                reserved_now.insert(id);
                if r.generation != generation || r.position != local.position.to_string() {
                    // Rebind the unacknowledged reservation to this generation's offset, same wire id and envelope.
                    let envelope = reader.raw(r.place)?.clone();
                    staged.push(reservation_entry(&generation, local.position, id, digest, &r.wire, &envelope).as_bytes())?;
                    pending.push((local.position, id.to_owned(), r.wire.clone(), At::Staged(staged.count() - 1)));
                } else {
                    pending.push((local.position, id.to_owned(), r.wire.clone(), At::Log(r.place)));
                }
                continue;
            }
            if !request.allow_new {
                continue;
            }
            let message = record_at(&reader.file, local.line)?;
            let wire = uuid::Uuid::new_v4().to_string();
            let envelope = seal(&target, request, &wire, &message)?;
            reserved_now.insert(id);
            staged.push(reservation_entry(&generation, local.position, id, digest, &wire, &envelope_json(&envelope)).as_bytes())?;
            crash::crash_point("prepare:sealed");
            pending.push((local.position, id.to_owned(), wire, At::Staged(staged.count() - 1)));
        }

        let mut placed = Vec::new();
        if generation_missing || staged.count() > 0 || !conflicts.is_empty() {
            let (binding, committed_at) = (target.json(), now_iso());
            let conflicts = conflicts.join(",");
            crash::crash_point("prepare:before-append");
            placed = staged.commit(|group, _| {
                (
                    format!(
                        r#"{{"type":"sync_prepare_commit","binding":{binding},"driver_generation":{},"reservations":["#,
                        json(&generation)
                    ),
                    format!(r#"],"conflicts":[{}],"committed_at":"{committed_at}"}}"#, if group == 0 { conflicts.as_str() } else { "" }),
                )
            })?;
        }
        let items = pending
            .into_iter()
            .map(|(position, id, wire, at)| {
                let place = match at {
                    At::Log(place) => place,
                    At::Staged(k) => Place { record: placed[k].0, array: Array::Reservations, index: placed[k].1 },
                };
                (position, id, wire, place)
            })
            .collect();
        let sync_state = SyncState { driver_generation: generation, transport_cursor: state.transport.clone() };
        Ok((sync_state, Box::new(PushPages { items, reader: EnvelopeReader::open()?, _lock: lock })))
    }

    fn reconcile_push(&self, b: &Binding, acks: &[PushAck]) -> Result<i64, DriverError> {
        let target = target(b)?;
        let (mut positions, mut wires, mut seqs) = (HashSet::new(), HashSet::new(), HashSet::new());
        let mut previous: Option<&str> = None;
        for ack in acks {
            if ack.local_position < 0 {
                return Err(fail("ack local_position is invalid"));
            }
            let ordered = previous.is_none_or(|p| seq_cmp(p, &ack.server_seq).is_lt());
            if !positions.insert(ack.local_position) || !wires.insert(&ack.wire_id) || !seqs.insert(&ack.server_seq) || !ordered {
                return Err(fail("ack mapping is not unique and ordered"));
            }
            previous = Some(&ack.server_seq);
        }
        let _lock = open_locked()?;
        let mut state = State::load(&target)?;
        let generation = state.generation.clone().unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let (mut accepted, mut conflicts) = (Vec::new(), Vec::new());
        for ack in acks {
            let position = ack.local_position.to_string();
            if state.reservation_by_wire(&ack.wire_id).is_none()
                || !state.positions.get(&ack.wire_id).is_some_and(|p| p.contains(&position))
            {
                return Err(DriverError::corrupt("ack does not match a durable reservation"));
            }
            if state.wire_conflicts.contains(&ack.wire_id) {
                continue;
            }
            if let Some(prior) = state.acks.get(&ack.wire_id).filter(|s| **s != ack.server_seq) {
                conflicts.push((ack.wire_id.clone(), format!(
                    r#"{{"kind":"ack_sequence_conflict","status":"corrupt_state","reason":"the server acknowledged this wire id at another sequence","id":"{}","expected_server_seq":"{prior}","observed_server_seq":"{}"}}"#,
                    ack.wire_id, ack.server_seq
                )));
                continue;
            }
            if let Some(other) = state.wire_by_seq.get(&ack.server_seq).filter(|w| **w != ack.wire_id) {
                conflicts.push((ack.wire_id.clone(), format!(
                    r#"{{"kind":"ack_wire_conflict","status":"corrupt_state","reason":"this server sequence is already another wire id's","id":"{}","expected_id":"{other}","server_seq":"{}"}}"#,
                    ack.wire_id, ack.server_seq
                )));
                continue;
            }
            let disposition = match ack.disposition {
                agmsg_guest_sdk::storage::Disposition::Stored => "stored",
                agmsg_guest_sdk::storage::Disposition::Duplicate => "duplicate",
            };
            accepted.push((
                ack,
                format!(
                    r#"{{"type":"sync_push_ack","local_position":"{position}","id":"{}","server_seq":"{}","disposition":"{disposition}"}}"#,
                    ack.wire_id, ack.server_seq
                ),
            ));
        }
        for (ack, _) in &accepted {
            state.acks.insert(ack.wire_id.clone(), ack.server_seq.clone());
        }
        for (wire, _) in &conflicts {
            state.wire_conflicts.insert(wire.clone());
        }
        let cursor = state.push_cursor();
        if !accepted.is_empty() || !conflicts.is_empty() {
            let acks: Vec<&str> = accepted.iter().map(|(_, text)| text.as_str()).collect();
            let conflicts: Vec<&str> = conflicts.iter().map(|(_, text)| text.as_str()).collect();
            crash::crash_point("reconcile:before-append");
            append_record(format!(
                r#"{{"type":"sync_reconcile_commit","binding":{},"driver_generation":{},"acks":[{}],"conflicts":[{}],"push_cursor":"{cursor}","committed_at":"{}"}}"#,
                target.json(),
                json(&generation),
                acks.join(","),
                conflicts.join(","),
                now_iso()
            ))?;
        }
        i64::try_from(cursor).map_err(|_| fail("push cursor is out of range"))
    }

    fn apply_pull(&self, b: &Binding) -> Result<Box<dyn PullStage>, DriverError> {
        let target = target(b)?;
        let lock = open_locked()?;
        let state = State::load(&target)?;
        Ok(Box::new(Pull {
            binding: target.json(),
            local_team: b.local_team.clone(),
            generation: state.generation.clone().unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
            durable: state.transport.clone(),
            state,
            staged: Staged::new("sync-pull-entries")?,
            outcomes: Vec::new(),
            last: None,
            without_prior: false,
            committed: false,
            _lock: lock,
        }))
    }

    fn reprocess(
        &self,
        b: &Binding,
        limit: u32,
        after: Option<&PageKey>,
        scope: ReprocessScope,
    ) -> Result<(ReprocessPage, Box<dyn SyncPages<ReprocessCandidate>>), DriverError> {
        let target = target(b)?;
        let lock = open_locked()?;
        let state = State::load(&target)?;
        let generation = match &state.generation {
            Some(g) => g.clone(),
            None => {
                // As agmsg: the first sync op on a log gives it a generation.
                let g = uuid::Uuid::new_v4().to_string();
                append_record(format!(
                    r#"{{"type":"sync_prepare_commit","binding":{},"driver_generation":"{g}","reservations":[],"conflicts":[],"committed_at":"{}"}}"#,
                    target.json(),
                    now_iso()
                ))?;
                g
            }
        };
        let statuses: &[&str] = match scope {
            ReprocessScope::Recoverable => &BLOCKING,
            ReprocessScope::Malformed => &["malformed"],
        };
        let mut eligible: Vec<_> = state
            .pulled
            .values()
            .filter(|p| statuses.contains(&p.status.as_str()))
            .filter(|p| after.is_none_or(|a| seq_cmp(&p.seq, &a.server_seq).then_with(|| p.wire.cmp(&a.wire_id)).is_gt()))
            .collect();
        eligible.sort_by(|a, b| seq_cmp(&a.seq, &b.seq).then_with(|| a.wire.cmp(&b.wire)));
        let has_more = eligible.len() > limit as usize;
        eligible.truncate(limit as usize);
        let next_after =
            has_more.then(|| eligible.last().map(|p| PageKey { server_seq: p.seq.clone(), wire_id: p.wire.clone() })).flatten();
        let items = eligible
            .iter()
            .map(|p| {
                let prior = Evaluated::from_name(&p.status).unwrap_or(Evaluated::Malformed);
                (p.seq.clone(), p.wire.clone(), p.received_at.clone().unwrap_or_default(), p.place, prior)
            })
            .collect();
        let page = ReprocessPage {
            state: SyncState { driver_generation: generation, transport_cursor: state.transport.clone() },
            next_after,
            has_more,
        };
        Ok((page, Box::new(ReprocessPages { items, reader: EnvelopeReader::open()?, _lock: lock })))
    }
}

/// A pull page being applied: outcomes are decided as messages arrive (against the fold and the page
/// so far) and staged in a file; `commit` appends them with the cursor.
struct Pull {
    binding: String,
    local_team: String,
    generation: String,
    durable: String,
    state: State,
    staged: Staged,
    outcomes: Vec<Outcome>,
    /// The last server sequence staged.
    last: Option<String>,
    /// A message with no prior outcome: a replay of the durable cursor may not carry one.
    without_prior: bool,
    committed: bool,
    _lock: LogLock,
}

impl PullStage for Pull {
    fn push(&mut self, messages: Vec<PullMessage>) -> Result<(), DriverError> {
        if self.committed {
            return Err(fail("pull page already committed"));
        }
        for m in messages {
            if self.last.as_deref().is_some_and(|last| !seq_cmp(last, &m.server_seq).is_lt()) {
                return Err(fail("pull messages are not ordered"));
            }
            self.last = Some(m.server_seq.clone());
            self.stage(m)?;
        }
        Ok(())
    }

    fn commit(&mut self, next_after: &str) -> Result<ApplyResult, DriverError> {
        if self.committed {
            return Err(fail("pull page already committed"));
        }
        if seq_cmp(next_after, &self.durable).is_lt() {
            return Err(fail("pull cursor cannot move backwards"));
        }
        let replay = self.staged.count() > 0 && next_after == self.durable;
        if !replay {
            if self.last.as_deref().is_some_and(|last| seq_cmp(next_after, last).is_lt()) {
                return Err(fail("pull cursor does not cover the page"));
            }
        } else if self.last.as_deref().is_some_and(|last| seq_cmp(last, &self.durable).is_gt()) {
            return Err(fail("pull replay exceeds the durable cursor"));
        } else if self.without_prior {
            return Err(fail("pull replay has no durable prior outcome"));
        }
        let committed_at = now_iso();
        let (binding, generation, durable) = (&self.binding, json(&self.generation), &self.durable);
        // Entries past the first record's size bound continue in more records of the same append; only the
        // last moves the cursor.
        crash::crash_point("apply:before-append");
        self.staged.commit(|_, last| {
            (
                format!(r#"{{"type":"sync_pull_commit","binding":{binding},"driver_generation":{generation},"messages":["#),
                format!(r#"],"transport_cursor":"{}","committed_at":"{committed_at}"}}"#, if last { next_after } else { durable }),
            )
        })?;
        self.committed = true;
        let corrupt_count = self.state.pulled.values().filter(|p| p.status == "corrupt_state").count() as u64;
        Ok(ApplyResult { transport_cursor: next_after.to_owned(), corrupt_count, outcomes: std::mem::take(&mut self.outcomes) })
    }
}

impl Pull {
    /// Decide one message's outcome as agmsg does, stage its stored form, and fold it into the state.
    fn stage(&mut self, m: PullMessage) -> Result<(), DriverError> {
        let state = &self.state;
        let envelope = envelope_json(&m.envelope);
        let digest = envelope_digest(&envelope);
        let prior = state.pulled.get(&m.wire_id);
        if prior.is_none() {
            self.without_prior = true;
        }
        let reservation = state.reservation_by_wire(&m.wire_id);
        let conflict = state.wire_by_seq.get(&m.server_seq).is_some_and(|w| *w != m.wire_id)
            || state.acks.get(&m.wire_id).is_some_and(|s| *s != m.server_seq)
            || prior.is_some_and(|p| p.seq != m.server_seq || p.envelope != digest)
            || reservation.is_some_and(|r| r.envelope != digest);
        let importable = m.status == Evaluated::Importable;
        let mut status = m.status.name().to_owned();
        let mut reason = m.reason.clone().unwrap_or_default();
        let mut local_event = None;
        if conflict {
            status = "corrupt_state".into();
            reason = "conflicts with the stored wire id, sequence or envelope".into();
        } else if let Some(p) = prior.filter(|p| ["imported", "reconciled", "corrupt_state"].contains(&p.status.as_str())) {
            status = p.status.clone();
            reason = p.reason.clone().unwrap_or(reason);
        } else if reservation.is_some() && importable {
            status = "reconciled".into();
        } else if reservation.is_none() && importable {
            if let Some(Projection::Message(chat)) = &m.projection
                && !prior.is_some_and(|p| p.has_local_event)
            {
                local_event = Some(serde_json::json!({
                    "type": "message_sent",
                    "id": new_id(),
                    "team": self.local_team,
                    "from": chat.from_agent,
                    "to": chat.to_agent,
                    "body": chat.body,
                    "at": chat.created_at,
                }));
            }
            status = "imported".into();
        }
        let mut entry = serde_json::Map::new();
        entry.insert("type".into(), "sync_pull_message".into());
        entry.insert("server_seq".into(), m.server_seq.clone().into());
        entry.insert("id".into(), m.wire_id.clone().into());
        entry.insert("server_received_at".into(), m.server_received_at.clone().into());
        entry.insert("envelope".into(), envelope);
        entry.insert("status".into(), status.clone().into());
        entry.insert("reason".into(), reason.clone().into());
        if let Some(p) = &m.policy_revision {
            entry.insert("policy_revision".into(), p.clone().into());
        }
        if let Some(p) = &m.local_security_revision {
            entry.insert("local_security_revision".into(), p.clone().into());
        }
        match &m.projection {
            Some(Projection::Message(chat)) => {
                let projection = serde_json::json!({
                    "body": chat.body, "created_at": chat.created_at, "from_agent": chat.from_agent, "to_agent": chat.to_agent,
                });
                entry.insert("projection".into(), projection);
            }
            Some(Projection::Roster(kind)) => {
                let kind = match kind {
                    agmsg_guest_sdk::storage::RosterKind::MemberJoined => "member_joined",
                    agmsg_guest_sdk::storage::RosterKind::MemberLeft => "member_left",
                    agmsg_guest_sdk::storage::RosterKind::MemberRenamed => "member_renamed",
                    agmsg_guest_sdk::storage::RosterKind::KeyRotated => "key_rotated",
                };
                entry.insert("projection".into(), serde_json::json!({ "kind": kind }));
            }
            None => {}
        }
        let has_local_event = local_event.is_some() || prior.is_some_and(|p| p.has_local_event);
        entry.insert("local_event".into(), local_event.unwrap_or(Value::Null));
        self.staged.push(Value::Object(entry).to_string().as_bytes())?;
        crash::crash_point("apply:staged");

        let pulled = fold::Pulled {
            seq: m.server_seq.clone(),
            wire: m.wire_id.clone(),
            received_at: Some(m.server_received_at.clone()),
            envelope: digest,
            place: Place { record: u64::MAX, array: Array::Messages, index: 0 },
            status: status.clone(),
            reason: Some(reason),
            has_local_event,
        };
        self.state.pulled.insert(m.wire_id.clone(), pulled);
        self.state.wire_by_seq.entry(m.server_seq.clone()).or_insert_with(|| m.wire_id.clone());
        // A status outside agmsg's words (a prior outcome from some other writer's journal) reads as importable.
        let status = OutcomeStatus::from_name(&status).unwrap_or(OutcomeStatus::Importable);
        self.outcomes.push(Outcome { wire_id: m.wire_id, server_seq: m.server_seq, status });
        Ok(())
    }
}

#[cfg(test)]
mod tests;
