//! A binding's sync state as the fold over its journal records (agmsg 1.2.1's jsonl-sync.mjs `fold`,
//! same rules, same failures): reservations, acknowledgements, pulled outcomes, conflicts and the
//! transport cursor, plus the log's generation and the local team's messages with their byte
//! positions. Envelopes are kept as a digest and the place of their record, never in memory.

use std::collections::{HashMap, HashSet};

use agmsg_guest_sdk::storage::{DriverError, is_lower_uuid, is_sequence};
use serde_json::Value;
use sha2::{Digest, Sha256};

fn fail(message: impl Into<String>) -> DriverError {
    DriverError::runtime(message)
}

/// Where an envelope is: the log offset of its record, which array and the index in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    pub record: u64,
    pub array: Array,
    pub index: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Array {
    Reservations,
    Messages,
}

impl Array {
    pub fn key(self) -> &'static str {
        match self {
            Array::Reservations => "reservations",
            Array::Messages => "messages",
        }
    }
}

/// agmsg compares envelopes field by field (`v`, `cipher`, `key_id`, `blob`, strictly): the digest of
/// those four, a missing field distinct from `null`.
pub type EnvelopeDigest = [u8; 32];

pub fn envelope_digest(envelope: &Value) -> EnvelopeDigest {
    let mut hash = Sha256::new();
    for key in ["v", "cipher", "key_id", "blob"] {
        match envelope.get(key) {
            None => hash.update([0u8]),
            Some(value) => {
                let text = value.to_string();
                hash.update([1u8]);
                hash.update((text.len() as u64).to_be_bytes());
                hash.update(text.as_bytes());
            }
        }
    }
    hash.finalize().into()
}

#[derive(Clone, Debug)]
pub struct Reservation {
    pub generation: String,
    pub position: String,
    pub local_id: String,
    pub payload_digest: Option<String>,
    pub wire: String,
    pub envelope: EnvelopeDigest,
    pub place: Place,
}

#[derive(Clone, Debug)]
pub struct Pulled {
    pub seq: String,
    pub wire: String,
    pub received_at: Option<String>,
    pub envelope: EnvelopeDigest,
    pub place: Place,
    pub status: String,
    pub reason: Option<String>,
    pub has_local_event: bool,
}

/// A local `message_sent` of the binding's team.
#[derive(Clone, Debug)]
pub struct Local {
    /// The byte offset just after its line (agmsg's local position).
    pub position: u64,
    /// Where its line starts.
    pub line: u64,
    pub local_id: String,
    /// agmsg's payload digest, or None when a field it covers is not a string (prepare refuses it).
    pub digest: Option<String>,
}

#[derive(Default)]
pub struct State {
    /// The last `sync_generation.generation` or `driver_generation` of any record.
    pub generation: Option<String>,
    pub reservations: Vec<Reservation>,
    pub by_local: HashMap<String, usize>,
    pub by_wire: HashMap<String, usize>,
    pub positions: HashMap<String, HashSet<String>>,
    /// wire id -> acknowledged server sequence.
    pub acks: HashMap<String, String>,
    pub pulled: HashMap<String, Pulled>,
    pub wire_by_seq: HashMap<String, String>,
    pub local_conflicts: HashSet<String>,
    pub wire_conflicts: HashSet<String>,
    pub transport: String,
    pub locals: Vec<Local>,
}

/// The binding as agmsg's records carry it.
pub struct Target<'a> {
    pub local_team: &'a str,
    pub server: &'a str,
    pub remote: &'a str,
}

impl Target<'_> {
    pub fn json(&self) -> String {
        serde_json::json!({
            "local_team": self.local_team,
            "server_instance_id": self.server,
            "remote_team_id": self.remote,
        })
        .to_string()
        .trim_end_matches('}')
        .to_owned()
            + r#","protocol_version":1}"#
    }

    fn matches(&self, record: &Value) -> bool {
        let Some(b) = record.get("binding") else { return false };
        b.get("local_team").and_then(Value::as_str) == Some(self.local_team)
            && b.get("server_instance_id").and_then(Value::as_str) == Some(self.server)
            && b.get("remote_team_id").and_then(Value::as_str) == Some(self.remote)
            && b.get("protocol_version").and_then(Value::as_f64) == Some(1.0)
    }
}

pub fn sequence<'a>(value: Option<&'a Value>, label: &str) -> Result<&'a str, DriverError> {
    match value.and_then(Value::as_str) {
        Some(text) if is_sequence(text) => Ok(text),
        _ => Err(fail(format!("{label} is invalid"))),
    }
}

fn seq_num(text: &str) -> i64 {
    text.parse().unwrap_or(i64::MAX)
}

fn is_digest(value: Option<&Value>) -> bool {
    value.and_then(Value::as_str).is_some_and(|d| d.len() == 64 && d.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
}

fn str_of(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn is_envelope(value: Option<&Value>) -> bool {
    // JavaScript's `!record.envelope`: absent, null, false, 0 and "" are refused.
    match value {
        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
        Some(Value::Number(n)) => n.as_f64() != Some(0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

/// agmsg's payload digest: SHA-256 over the u32be-length-prefixed local id, sender, recipient, body
/// and six-digit timestamp.
pub fn payload_digest(local_id: &str, from: &str, to: &str, body: &str, at: &str) -> String {
    let mut hash = Sha256::new();
    let at = agmsg_sync_seal::canonical_created_at(at);
    for field in [local_id, from, to, body, at.as_ref()] {
        hash.update((field.len() as u32).to_be_bytes());
        hash.update(field.as_bytes());
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

pub const BLOCKING: [&str; 5] = ["unsupported_cipher", "pending_key", "authentication_failed", "malformed", "policy_violation"];

impl State {
    /// Fold `target`'s records, as `records` visits them: the store's log ([`State::load`], in
    /// `journal`), or a buffer's (`records::records_in`, what the fuzz target reads).
    pub fn fold(
        target: &Target<'_>,
        records: impl FnOnce(&mut dyn FnMut(u64, u64, Value) -> Result<(), DriverError>) -> Result<(), DriverError>,
    ) -> Result<State, DriverError> {
        let mut state = State { transport: "0".into(), ..State::default() };
        records(&mut |start, end, record| state.record(target, start, end, &record))?;
        Ok(state)
    }

    fn record(&mut self, target: &Target<'_>, start: u64, end: u64, record: &Value) -> Result<(), DriverError> {
        let kind = record.get("type").and_then(Value::as_str);
        let generation = if kind == Some("sync_generation") { record.get("generation") } else { record.get("driver_generation") };
        if let Some(g) = generation {
            match g.as_str() {
                Some(g) if is_lower_uuid(g, 4) || is_lower_uuid(g, 7) => self.generation = Some(g.to_owned()),
                _ => return Err(fail("JSONL sync generation is invalid")),
            }
        }
        if kind == Some("message_sent") && record.get("team").and_then(Value::as_str) == Some(target.local_team) {
            let field = |k: &str| record.get(k).and_then(Value::as_str);
            let local_id = field("id").unwrap_or_default().to_owned();
            let digest = match (field("id"), field("from"), field("to"), field("body"), field("at")) {
                (Some(id), Some(from), Some(to), Some(body), Some(at)) => Some(payload_digest(id, from, to, body, at)),
                _ => None,
            };
            self.locals.push(Local { position: end, line: start, local_id, digest });
            return Ok(());
        }
        if !target.matches(record) {
            return Ok(());
        }
        match kind {
            Some("sync_prepare_commit") => self.prepare_commit(start, record),
            Some("sync_conflict_commit") => match record.get("conflicts").and_then(Value::as_array) {
                Some(list) if !list.is_empty() => self.conflicts(list),
                _ => Err(fail("JSONL conflict commit is invalid")),
            },
            Some("sync_reconcile_commit") => self.reconcile_commit(record),
            Some("sync_pull_commit") => self.pull_commit(start, record),
            _ => Ok(()),
        }
    }

    fn conflicts(&mut self, list: &[Value]) -> Result<(), DriverError> {
        for c in list {
            let kind = c.get("kind").and_then(Value::as_str);
            let corrupt = c.get("status").and_then(Value::as_str) == Some("corrupt_state");
            let wire = c.get("id").and_then(Value::as_str).filter(|id| is_lower_uuid(id, 4));
            match (kind, corrupt) {
                (Some("local_payload_conflict"), true)
                    if c.get("local_id").is_some_and(Value::is_string)
                        && is_digest(c.get("expected_digest"))
                        && is_digest(c.get("observed_digest"))
                        && c.get("expected_digest") != c.get("observed_digest") =>
                {
                    self.local_conflicts.insert(str_of(c, "local_id").unwrap_or_default());
                }
                (Some("ack_sequence_conflict"), true) if wire.is_some() => {
                    let expected = sequence(c.get("expected_server_seq"), "conflict expected_server_seq")?;
                    let observed = sequence(c.get("observed_server_seq"), "conflict observed_server_seq")?;
                    if expected == observed {
                        return Err(fail("JSONL acknowledgement conflict is not conflicting"));
                    }
                    self.wire_conflicts.insert(wire.unwrap_or_default().to_owned());
                }
                (Some("ack_wire_conflict"), true)
                    if wire.is_some()
                        && c.get("expected_id").and_then(Value::as_str).is_some_and(|e| is_lower_uuid(e, 4) && Some(e) != wire) =>
                {
                    sequence(c.get("server_seq"), "conflict server_seq")?;
                    self.wire_conflicts.insert(wire.unwrap_or_default().to_owned());
                }
                _ => return Err(fail("JSONL conflict is invalid")),
            }
        }
        Ok(())
    }

    fn prepare_commit(&mut self, start: u64, record: &Value) -> Result<(), DriverError> {
        let (Some(list), conflicts) = (record.get("reservations").and_then(Value::as_array), record.get("conflicts")) else {
            return Err(fail("JSONL reservation commit is invalid"));
        };
        match conflicts {
            None => {}
            Some(Value::Array(conflicts)) => self.conflicts(conflicts)?,
            Some(_) => return Err(fail("JSONL reservation commit is invalid")),
        }
        for (index, r) in list.iter().enumerate() {
            let wire = r.get("id").and_then(Value::as_str).filter(|id| is_lower_uuid(id, 4));
            let digest = r.get("payload_digest");
            let (Some(wire), Some(local_id), Some(generation)) =
                (wire, r.get("local_id").and_then(Value::as_str), r.get("driver_generation").and_then(Value::as_str))
            else {
                return Err(fail("JSONL reservation is invalid"));
            };
            if (digest.is_some() && !is_digest(digest)) || !is_envelope(r.get("envelope")) {
                return Err(fail("JSONL reservation is invalid"));
            }
            let position = sequence(r.get("local_position"), "reservation local_position")?;
            let envelope = envelope_digest(&r["envelope"]);
            let payload_digest = digest.and_then(Value::as_str).map(str::to_owned);
            let prior_local = self.by_local.get(local_id).map(|&i| &self.reservations[i]);
            let prior_wire = self.by_wire.get(wire).map(|&i| &self.reservations[i]);
            let local_clash = prior_local.is_some_and(|p| {
                p.wire != wire || matches!((&p.payload_digest, &payload_digest), (Some(a), Some(b)) if a != b) || p.envelope != envelope
            });
            let wire_clash = prior_wire.is_some_and(|p| p.local_id != local_id || p.envelope != envelope);
            if local_clash || wire_clash {
                return Err(fail("JSONL reservation identity conflicts with prior state"));
            }
            let reservation = Reservation {
                generation: generation.to_owned(),
                position: position.to_owned(),
                local_id: local_id.to_owned(),
                payload_digest,
                wire: wire.to_owned(),
                envelope,
                place: Place { record: start, array: Array::Reservations, index },
            };
            self.reservations.push(reservation);
            let i = self.reservations.len() - 1;
            self.by_local.insert(local_id.to_owned(), i);
            self.by_wire.insert(wire.to_owned(), i);
            self.positions.entry(wire.to_owned()).or_default().insert(position.to_owned());
        }
        Ok(())
    }

    fn reconcile_commit(&mut self, record: &Value) -> Result<(), DriverError> {
        let Some(acks) = record.get("acks").and_then(Value::as_array) else {
            return Err(fail("JSONL acknowledgement commit is invalid"));
        };
        let conflicts = match record.get("conflicts") {
            None => None,
            Some(Value::Array(list)) => Some(list),
            Some(_) => return Err(fail("JSONL acknowledgement commit is invalid")),
        };
        sequence(record.get("push_cursor"), "stored push_cursor")?;
        for ack in acks {
            let seq = sequence(ack.get("server_seq"), "stored acknowledgement server_seq")?;
            let position = sequence(ack.get("local_position"), "stored acknowledgement local_position")?;
            let wire = ack.get("id").and_then(Value::as_str).unwrap_or_default();
            let reserved = self.by_wire.contains_key(wire) && self.positions.get(wire).is_some_and(|p| p.contains(position));
            let prior_clash = self.acks.get(wire).is_some_and(|s| s != seq);
            let seq_clash = self.wire_by_seq.get(seq).is_some_and(|w| w != wire);
            if !reserved || prior_clash || seq_clash {
                return Err(fail("JSONL acknowledgement conflicts with prior state"));
            }
            self.acks.insert(wire.to_owned(), seq.to_owned());
            self.wire_by_seq.insert(seq.to_owned(), wire.to_owned());
        }
        if let Some(list) = conflicts {
            self.conflicts(list)?;
        }
        Ok(())
    }

    fn pull_commit(&mut self, start: u64, record: &Value) -> Result<(), DriverError> {
        let cursor = sequence(record.get("transport_cursor"), "stored transport_cursor")?;
        let messages = record.get("messages").and_then(Value::as_array);
        let Some(messages) = messages.filter(|_| seq_num(cursor) >= seq_num(&self.transport)) else {
            return Err(fail("JSONL pull commit is invalid"));
        };
        const STORED: [&str; 8] = [
            "imported",
            "reconciled",
            "corrupt_state",
            "unsupported_cipher",
            "pending_key",
            "authentication_failed",
            "malformed",
            "policy_violation",
        ];
        for (index, m) in messages.iter().enumerate() {
            let seq = sequence(m.get("server_seq"), "stored pull server_seq")?;
            let wire = m.get("id").and_then(Value::as_str).filter(|id| is_lower_uuid(id, 4));
            let status = m.get("status").and_then(Value::as_str).filter(|s| STORED.contains(s));
            let (Some(wire), Some(status)) = (wire, status) else { return Err(fail("JSONL pull outcome is invalid")) };
            if !is_envelope(m.get("envelope")) {
                return Err(fail("JSONL pull outcome is invalid"));
            }
            let envelope = envelope_digest(&m["envelope"]);
            let prior = self.pulled.get(wire);
            let clash =
                self.wire_by_seq.get(seq).is_some_and(|w| w != wire) || prior.is_some_and(|p| p.seq != seq || p.envelope != envelope);
            if clash && status != "corrupt_state" {
                return Err(fail("JSONL pull outcome hides an immutable conflict"));
            }
            let local_event = !matches!(m.get("local_event"), None | Some(Value::Null));
            let has_local_event = local_event || prior.is_some_and(|p| p.has_local_event);
            // agmsg merges the outcome over the prior one: a field this record lacks keeps its old value.
            let received_at = str_of(m, "server_received_at").or_else(|| prior.and_then(|p| p.received_at.clone()));
            let reason = str_of(m, "reason").or_else(|| prior.and_then(|p| p.reason.clone()));
            self.pulled.insert(
                wire.to_owned(),
                Pulled {
                    seq: seq.to_owned(),
                    wire: wire.to_owned(),
                    received_at,
                    envelope,
                    place: Place { record: start, array: Array::Messages, index },
                    status: status.to_owned(),
                    reason,
                    has_local_event,
                },
            );
            self.wire_by_seq.entry(seq.to_owned()).or_insert_with(|| wire.to_owned());
            if status == "reconciled"
                && let Some(&i) = self.by_wire.get(wire)
            {
                if self.acks.get(wire).is_some_and(|s| s != seq) {
                    return Err(fail("JSONL pull echo conflicts with its acknowledgement"));
                }
                let _ = &self.reservations[i];
                self.acks.insert(wire.to_owned(), seq.to_owned());
            }
        }
        self.transport = cursor.to_owned();
        Ok(())
    }

    /// The reservation of a local id, if any.
    pub fn reservation_of(&self, local_id: &str) -> Option<&Reservation> {
        self.by_local.get(local_id).map(|&i| &self.reservations[i])
    }

    pub fn reservation_by_wire(&self, wire: &str) -> Option<&Reservation> {
        self.by_wire.get(wire).map(|&i| &self.reservations[i])
    }

    /// The push cursor: the position of the last message of the contiguous acknowledged prefix.
    pub fn push_cursor(&self) -> u64 {
        let mut cursor = 0;
        for local in &self.locals {
            if self.local_conflicts.contains(&local.local_id) {
                break;
            }
            match self.reservation_of(&local.local_id) {
                Some(r) if self.acks.contains_key(&r.wire) => cursor = local.position,
                _ => break,
            }
        }
        cursor
    }
}

/// Whether server sequence `a` sorts before `b` (numerically).
pub fn seq_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    seq_num(a).cmp(&seq_num(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// agmsg's digest: u32be length + bytes of local id, from, to, body and the six-digit timestamp
    /// (the expected value computed independently, with Python's hashlib and struct).
    #[test]
    fn payload_digest_is_agmsgs() {
        let digest = payload_digest("0192aaaa-0000-7000-8000-000000000001", "alice", "bob", "first", "2026-05-30T19:00:01Z");
        assert_eq!(digest, "b9ac22983c1137e0ad2a006d4043527ad66a40b9b783f869cc0c5f52bc93ac5c");
        let same = payload_digest("0192aaaa-0000-7000-8000-000000000001", "alice", "bob", "first", "2026-05-30T19:00:01.000000Z");
        assert_eq!(digest, same, "a seconds timestamp is read in its six-digit form");
    }

    /// Envelopes compare field by field, as agmsg's strict equality: `null` and a missing key differ.
    #[test]
    fn envelope_digest_compares_the_four_fields() {
        let d = |text: &str| envelope_digest(&serde_json::from_str(text).unwrap());
        let base = d(r#"{"v":1,"cipher":"none","key_id":null,"blob":"e30="}"#);
        assert_eq!(base, d(r#"{"blob":"e30=","key_id":null,"cipher":"none","v":1,"extra":true}"#));
        assert_ne!(base, d(r#"{"v":1,"cipher":"none","blob":"e30="}"#));
        assert_ne!(base, d(r#"{"v":1,"cipher":"none","key_id":null,"blob":"e31="}"#));
    }
}
