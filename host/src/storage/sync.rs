//! agmsg's Stage-1 remote sync (spec §2.8, capability `stage1-sync`) on the host: the domain types of the
//! optional `sync` interface, and agmsg's JSONL records for them, parsed strictly and printed in agmsg's
//! key order. The engine (agmsg's `remote-sync.mjs`) writes the records a driver reads on stdin and reads
//! what it prints; a record the host refuses never reaches a driver (exit 13, saying which line and why).
//!
//! Strict means: one JSON object per line and nothing after it, no key twice (at any depth), no key the
//! record does not define (a roster projection excepted: the engine has applied it, the driver only
//! acknowledges its kind), every value of its type, and sequences and cursors canonical decimals no
//! greater than 2^63-1. One leniency, agmsg's sqlite driver's: `sync_prepare` without `recipients` is `[]`.

pub mod read_state;
pub mod resync;
pub mod sealing;
pub mod serve;
pub mod spool;

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// What a sync op acts for: the local team and the binding key (server instance, remote team, version).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    pub local_team: String,
    pub server_instance_id: String,
    pub remote_team_id: String,
    pub protocol_version: String,
}

/// A sealed message as it travels (`blob` is base64).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    pub v: u32,
    pub cipher: String,
    pub key_id: Option<String>,
    pub blob: String,
}

/// The write profile the engine chose.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteProfile {
    None,
    AgeV1 { key_id: String, recipients: Vec<String> },
}

/// agmsg's `sync_prepare` record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrepareRequest {
    pub envelope_v: u32,
    pub profile: WriteProfile,
    pub max_blob_bytes: u64,
    pub allow_new: bool,
}

/// agmsg's `sync_state` record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncState {
    pub driver_generation: String,
    pub transport_cursor: String,
}

/// agmsg's `sync_push_candidate`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushCandidate {
    pub local_position: i64,
    pub local_id: String,
    pub wire_id: String,
    pub envelope: Envelope,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disposition {
    Stored,
    Duplicate,
}

/// agmsg's `sync_push_ack`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushAck {
    pub local_position: i64,
    pub wire_id: String,
    pub server_seq: String,
    pub disposition: Disposition,
}

/// What the engine concluded about a pulled envelope.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Evaluated {
    Importable,
    UnsupportedCipher,
    PendingKey,
    AuthenticationFailed,
    Malformed,
    PolicyViolation,
}

const EVALUATED: [(Evaluated, &str); 6] = [
    (Evaluated::Importable, "importable"),
    (Evaluated::UnsupportedCipher, "unsupported_cipher"),
    (Evaluated::PendingKey, "pending_key"),
    (Evaluated::AuthenticationFailed, "authentication_failed"),
    (Evaluated::Malformed, "malformed"),
    (Evaluated::PolicyViolation, "policy_violation"),
];

impl Evaluated {
    pub fn word(self) -> &'static str {
        EVALUATED.iter().find(|(e, _)| *e == self).map(|(_, w)| *w).unwrap_or("malformed")
    }
}

/// An importable chat message, decrypted by the engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chat {
    pub body: String,
    pub created_at: String,
    pub from_agent: String,
    pub to_agent: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RosterKind {
    MemberJoined,
    MemberLeft,
    MemberRenamed,
    KeyRotated,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Projection {
    Message(Chat),
    Roster(RosterKind),
}

/// agmsg's `sync_pull_message`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PullMessage {
    pub server_seq: String,
    pub wire_id: String,
    pub server_received_at: String,
    pub envelope: Envelope,
    pub status: Evaluated,
    pub reason: Option<String>,
    pub policy_revision: Option<String>,
    pub local_security_revision: Option<String>,
    pub projection: Option<Projection>,
}

/// Where a pulled message stands after its page committed: an [`Evaluated`] status, or one of these.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OutcomeStatus {
    Evaluated(Evaluated),
    Imported,
    Reconciled,
    CorruptState,
}

impl OutcomeStatus {
    pub fn word(self) -> &'static str {
        match self {
            OutcomeStatus::Evaluated(e) => e.word(),
            OutcomeStatus::Imported => "imported",
            OutcomeStatus::Reconciled => "reconciled",
            OutcomeStatus::CorruptState => "corrupt_state",
        }
    }
}

/// agmsg's `sync_apply_outcome`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub wire_id: String,
    pub server_seq: String,
    pub status: OutcomeStatus,
}

/// agmsg's `sync_apply_result` and its outcomes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApplyResult {
    pub transport_cursor: String,
    pub corrupt_count: u64,
    pub outcomes: Vec<Outcome>,
}

/// Which quarantined statuses `reprocess` walks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReprocessScope {
    Recoverable,
    Malformed,
}

/// A `(server_seq, wire_id)` keyset position, agmsg's `"<seq>:<wire-id>"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageKey {
    pub server_seq: String,
    pub wire_id: String,
}

/// agmsg's `sync_reprocess_page` trailer and the `sync_state` before the candidates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReprocessPage {
    pub state: SyncState,
    pub next_after: Option<PageKey>,
    pub has_more: bool,
}

/// agmsg's `sync_reprocess_candidate`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReprocessCandidate {
    pub server_seq: String,
    pub wire_id: String,
    pub server_received_at: String,
    pub envelope: Envelope,
    pub prior_status: Evaluated,
}

// ---- values ----

use agmsg_contract::sync::is_key_id;
pub use agmsg_contract::sync::{is_lower_uuid, is_sequence};

/// A local position: a canonical decimal, negative allowed (sqlite's projected legacy rows).
pub fn parse_position(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits == "0" && text.starts_with('-') || !is_sequence(digits) {
        return None;
    }
    text.parse().ok()
}

/// agmsg's `"<seq>:<wire-id>"` page position.
pub fn parse_page_key(text: &str) -> Result<PageKey, String> {
    let (seq, wire) = text.split_once(':').ok_or_else(|| format!("page position {text:?}: expected <server_seq>:<wire id>"))?;
    if !is_sequence(seq) || !is_lower_uuid(wire, 4) {
        return Err(format!("page position {text:?}: expected a canonical sequence, ':' and a lowercase UUIDv4"));
    }
    Ok(PageKey { server_seq: seq.to_owned(), wire_id: wire.to_owned() })
}

// ---- what a driver hands back ----
//
// The host prints a driver's values for agmsg's engine, which takes them as the spec's: a sequence or
// cursor a canonical decimal, a wire id a lowercase UUIDv4 (so `<seq>:<wire>` splits one way only).
// JSON escaping keeps every record on its line; these checks keep a driver from handing the engine a
// value the spec refuses (a record with one is not printed: the op fails with 13).

/// A driver's value quoted in a refusal, cut to its first 64 characters: a driver can hand back a value
/// as large as its memory, and the message must stay one short line.
fn quoted(text: &str) -> String {
    const SHOWN: usize = 64;
    match text.char_indices().nth(SHOWN) {
        Some((end, _)) => format!("{:?}... ({} bytes)", &text[..end], text.len()),
        None => format!("{text:?}"),
    }
}

fn answer_sequence(what: &str, text: &str) -> Result<(), String> {
    if is_sequence(text) { Ok(()) } else { Err(format!("{what} {} is not a canonical decimal no greater than 2^63-1", quoted(text))) }
}

fn answer_wire(what: &str, text: &str) -> Result<(), String> {
    if is_lower_uuid(text, 4) { Ok(()) } else { Err(format!("{what} {} is not a lowercase UUIDv4", quoted(text))) }
}

/// A driver generation as agmsg's drivers make it: a lowercase UUID (v4 from sqlite and jsonl; jsonl's
/// journal also takes v7).
fn answer_generation(what: &str, text: &str) -> Result<(), String> {
    if is_lower_uuid(text, 4) || is_lower_uuid(text, 7) {
        Ok(())
    } else {
        Err(format!("{what} {} is not a lowercase UUID (v4 or v7)", quoted(text)))
    }
}

pub fn check_state(s: &SyncState) -> Result<(), String> {
    answer_generation("sync_state.driver_generation", &s.driver_generation)?;
    answer_sequence("sync_state.transport_cursor", &s.transport_cursor)
}

/// The start of every age v1 file.
const AGE_HEADER: &[u8] = b"age-encryption.org/v1\n";

/// A candidate prepare hands back for `request`. Its local id is a stored message id (the rule import
/// applies; sqlite's projected legacy rows use their decimal row id); its envelope is of the request's
/// version, a well-formed profile, and a canonical base64 blob of 1..=`max_blob_bytes` decoded bytes.
///
/// A reservation made by an earlier prepare is re-emitted as it was sealed (agmsg's stage-1 spec and its
/// age-v1 profile forbid re-sealing a published wire id), so after a key rotation its `key_id`, or after
/// a switch from `age-v1` to `none` its cipher, may differ from the request's: both are taken. A `none`
/// envelope where the engine asked for `age-v1` is not: that would push plaintext to the relay when the
/// team's policy is end-to-end encryption, and an `age-v1` blob must be an age file.
pub fn check_candidate(c: &PushCandidate, request: &PrepareRequest) -> Result<(), String> {
    answer_wire("sync_push_candidate.id", &c.wire_id)?;
    if !agmsg_contract::is_transport_token(&c.local_id) {
        return Err(format!("sync_push_candidate.local_id {:?} is not a stored message id", c.local_id));
    }
    let e = &c.envelope;
    if e.v != request.envelope_v {
        return Err(format!("sync_push_candidate.envelope.v {} where the engine asked for {}", e.v, request.envelope_v));
    }
    match (e.cipher.as_str(), &e.key_id) {
        ("none", None) => {
            if matches!(request.profile, WriteProfile::AgeV1 { .. }) {
                return Err(
                    "sync_push_candidate.envelope.cipher \"none\" where the engine asked for \"age-v1\" (a plaintext envelope)".into()
                );
            }
        }
        ("none", Some(_)) => return Err("sync_push_candidate.envelope.key_id is set for cipher \"none\"".into()),
        ("age-v1", Some(key)) if is_key_id(key) => {}
        ("age-v1", key) => return Err(format!("sync_push_candidate.envelope.key_id {key:?} is not an age-v1 key id")),
        (other, _) => return Err(format!("sync_push_candidate.envelope.cipher {other:?} is neither \"none\" nor \"age-v1\"")),
    }
    let (size, head) = base64_size_and_head(&e.blob).ok_or("sync_push_candidate.envelope.blob is not canonical base64")?;
    if size == 0 || size > request.max_blob_bytes {
        return Err(format!("sync_push_candidate.envelope.blob holds {size} bytes, not 1 to max_blob_bytes ({})", request.max_blob_bytes));
    }
    if e.cipher == "age-v1" && !head.starts_with(AGE_HEADER) {
        return Err("sync_push_candidate.envelope.blob is not an age v1 file".into());
    }
    Ok(())
}

/// Whether `text` is canonical padded standard base64 (what agmsg's cipher helper writes and reads:
/// re-encoding the bytes gives the text back): its decoded size and first bytes (up to 24), or None.
/// Checked in place, so a 1 MiB blob is never decoded into a copy.
fn base64_size_and_head(text: &str) -> Option<(u64, Vec<u8>)> {
    fn value(c: u8) -> Option<u32> {
        match c {
            b'A'..=b'Z' => Some(u32::from(c - b'A')),
            b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
            b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
            b'+' => Some(62),
            b'/' => Some(63),
            _ => None,
        }
    }
    let b = text.as_bytes();
    if !b.len().is_multiple_of(4) {
        return None;
    }
    let mut head = Vec::new();
    let quads = b.len() / 4;
    for (i, quad) in b.chunks_exact(4).enumerate() {
        let last = i + 1 == quads;
        let pad = if last { quad.iter().rev().take_while(|c| **c == b'=').count() } else { 0 };
        if pad > 2 {
            return None;
        }
        let mut bits = 0u32;
        for c in &quad[..4 - pad] {
            bits = bits << 6 | value(*c)?;
        }
        bits <<= 6 * pad as u32;
        // Canonical: the bits a padded quad does not carry are zero.
        if pad > 0 && bits & ((1 << (8 * pad)) - 1) != 0 {
            return None;
        }
        if head.len() < 24 {
            head.extend_from_slice(&bits.to_be_bytes()[1..4 - pad]);
        }
    }
    let pad = b.iter().rev().take_while(|c| **c == b'=').count() as u64;
    Some(((b.len() / 4 * 3) as u64 - pad, head))
}

/// What an apply-pull page held, for checking the driver's answer against it.
#[derive(Debug, Default)]
pub struct PageSent {
    /// The page's messages: by wire id, each `server_seq` with what the engine concluded of it.
    pub messages: std::collections::HashMap<String, Vec<(String, Evaluated)>>,
    pub count: u64,
    pub next_after: Option<String>,
}

impl PageSent {
    /// Note one line of the page as it goes to the driver.
    pub fn note(&mut self, line: &PullLine) {
        match line {
            PullLine::Message(m) => {
                self.messages.entry(m.wire_id.clone()).or_default().push((m.server_seq.clone(), m.status));
                self.count += 1;
            }
            PullLine::Cursor(c) => self.next_after = Some(c.clone()),
        }
    }
}

/// agmsg's conflict reasons (its `sync_conflicts` rows for a pulled wire id are unique by reason): a
/// message's outcomes are its own and at most this many `corrupt_state` ones beside it.
const CONFLICT_REASONS: u64 = 3;
/// The largest count agmsg's engine reads exactly (it parses JSON numbers as doubles).
const MAX_SAFE_COUNT: u64 = (1 << 53) - 1;

/// An apply-pull answer for the page `sent`: the transport cursor is the page's; every message of the
/// page has an outcome, and every outcome is for a message of the page, none twice. A `corrupt_state`
/// outcome may carry another sequence of that wire id (the conflict it reports, as agmsg's sqlite driver
/// lists them, one per reason); any other outcome is the pair sent in, and `imported` only for a message
/// the engine found importable. The corrupt count is the binding's (not only this page's), so only its
/// range is checked.
pub fn check_apply_result(r: &ApplyResult, sent: &PageSent) -> Result<(), String> {
    answer_sequence("sync_apply_result.transport_cursor", &r.transport_cursor)?;
    if sent.next_after.as_deref() != Some(r.transport_cursor.as_str()) {
        return Err(format!(
            "sync_apply_result.transport_cursor {:?}, not the page's next_after {:?}",
            r.transport_cursor,
            sent.next_after.as_deref().unwrap_or("")
        ));
    }
    if r.corrupt_count > MAX_SAFE_COUNT {
        return Err(format!("sync_apply_result.corrupt_count {} is beyond any store's count", r.corrupt_count));
    }
    let most = sent.count.saturating_mul(1 + CONFLICT_REASONS);
    if r.outcomes.len() as u64 > most {
        return Err(format!("{} sync_apply_outcome records for a page of {} messages", r.outcomes.len(), sent.count));
    }
    let mut seen = std::collections::HashSet::new();
    let mut answered = std::collections::HashSet::new();
    for o in &r.outcomes {
        answer_wire("sync_apply_outcome.id", &o.wire_id)?;
        answer_sequence("sync_apply_outcome.server_seq", &o.server_seq)?;
        let not_of_page = || format!("sync_apply_outcome for id {} server_seq {}, which the page did not hold", o.wire_id, o.server_seq);
        let sent_as = sent.messages.get(&o.wire_id).ok_or_else(not_of_page)?;
        let exact = sent_as.iter().find(|(seq, _)| *seq == o.server_seq);
        match (o.status, exact) {
            (OutcomeStatus::CorruptState, _) => {}
            (OutcomeStatus::Imported, Some((_, evaluated))) if *evaluated != Evaluated::Importable => {
                return Err(format!("sync_apply_outcome \"imported\" for id {}, which the engine found {}", o.wire_id, evaluated.word()));
            }
            (_, Some(_)) => {}
            (_, None) => return Err(not_of_page()),
        }
        if !seen.insert((o.wire_id.as_str(), o.server_seq.as_str(), o.status)) {
            return Err(format!("a second sync_apply_outcome {} for id {} server_seq {}", o.status.word(), o.wire_id, o.server_seq));
        }
        answered.insert(o.wire_id.as_str());
    }
    match sent.messages.keys().find(|wire| !answered.contains(wire.as_str())) {
        Some(wire) => Err(format!("no sync_apply_outcome for id {wire}, which the page held")),
        None => Ok(()),
    }
}

/// A reprocess candidate: its keys of the spec's forms, and in the malformed scope only malformed rows.
pub fn check_reprocess_candidate(c: &ReprocessCandidate, scope: ReprocessScope) -> Result<(), String> {
    answer_wire("sync_reprocess_candidate.id", &c.wire_id)?;
    answer_sequence("sync_reprocess_candidate.server_seq", &c.server_seq)?;
    if scope == ReprocessScope::Malformed && c.prior_status != Evaluated::Malformed {
        return Err(format!("sync_reprocess_candidate.prior_status {:?} in the malformed scope", c.prior_status.word()));
    }
    Ok(())
}

pub fn check_reprocess_page(p: &ReprocessPage) -> Result<(), String> {
    check_state(&p.state)?;
    match &p.next_after {
        Some(k) => {
            answer_sequence("sync_reprocess_page.next_after's server_seq", &k.server_seq)?;
            answer_wire("sync_reprocess_page.next_after's wire id", &k.wire_id)
        }
        None => Ok(()),
    }
}

// ---- strict parsing ----

/// A JSON value read with every object's keys checked for repeats (serde_json keeps the last silently).
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Strict, D::Error> {
        deserializer.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Strict;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Strict, E> {
        Ok(Strict(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Strict, E> {
        Ok(Strict(Value::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Strict, E> {
        Ok(Strict(Value::from(v)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Strict, E> {
        Ok(Strict(Value::from(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Strict, E> {
        Ok(Strict(Value::String(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Strict, E> {
        Ok(Strict(Value::String(v)))
    }
    fn visit_unit<E>(self) -> Result<Strict, E> {
        Ok(Strict(Value::Null))
    }
    fn visit_none<E>(self) -> Result<Strict, E> {
        Ok(Strict(Value::Null))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Strict, A::Error> {
        let mut items = Vec::new();
        while let Some(Strict(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Strict(Value::Array(items)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Strict, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(de::Error::custom(format!("duplicate key {key:?}")));
            }
            let Strict(value) = map.next_value()?;
            object.insert(key, value);
        }
        Ok(Strict(Value::Object(object)))
    }
}

/// One record's object, its type checked, and the keys it may have.
struct Record<'a> {
    kind: &'a str,
    object: &'a Map<String, Value>,
}

impl<'a> Record<'a> {
    /// `object` of record type `kind`, refused if it lacks one of `required` or has a key in neither list.
    fn new(kind: &'a str, object: &'a Map<String, Value>, required: &[&str], optional: &[&str]) -> Result<Record<'a>, String> {
        if let Some(unknown) = object.keys().find(|k| !required.contains(&k.as_str()) && !optional.contains(&k.as_str())) {
            return Err(format!("{kind}: unknown key {unknown:?}"));
        }
        if let Some(missing) = required.iter().find(|k| !object.contains_key(**k)) {
            return Err(format!("{kind}: missing key {missing:?}"));
        }
        Ok(Record { kind, object })
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.object.get(key).filter(|v| !v.is_null())
    }

    fn string(&self, key: &str) -> Result<String, String> {
        self.opt_string(key)?.ok_or_else(|| format!("{}: {key:?} must be a string", self.kind))
    }

    fn opt_string(&self, key: &str) -> Result<Option<String>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("{}: {key:?} must be a string", self.kind)),
        }
    }

    /// A canonical decimal string.
    fn sequence(&self, key: &str) -> Result<String, String> {
        let text = self.string(key)?;
        if !is_sequence(&text) {
            return Err(format!("{}: {key:?} must be a canonical decimal no greater than 2^63-1, not {text:?}", self.kind));
        }
        Ok(text)
    }

    fn wire_id(&self, key: &str) -> Result<String, String> {
        let text = self.string(key)?;
        if !is_lower_uuid(&text, 4) {
            return Err(format!("{}: {key:?} must be a lowercase UUIDv4, not {text:?}", self.kind));
        }
        Ok(text)
    }

    fn position(&self, key: &str) -> Result<i64, String> {
        let text = self.string(key)?;
        parse_position(&text).ok_or_else(|| format!("{}: {key:?} must be a canonical decimal position, not {text:?}", self.kind))
    }

    fn unsigned(&self, key: &str) -> Result<u64, String> {
        self.get(key).and_then(Value::as_u64).ok_or_else(|| format!("{}: {key:?} must be a whole number", self.kind))
    }

    fn boolean(&self, key: &str) -> Result<bool, String> {
        self.get(key).and_then(Value::as_bool).ok_or_else(|| format!("{}: {key:?} must be true or false", self.kind))
    }

    fn object(&self, key: &str) -> Result<&'a Map<String, Value>, String> {
        self.get(key).and_then(Value::as_object).ok_or_else(|| format!("{}: {key:?} must be an object", self.kind))
    }

    fn word<T: Copy>(&self, key: &str, words: &[(T, &str)]) -> Result<T, String> {
        let text = self.string(key)?;
        words.iter().find(|(_, w)| *w == text).map(|(t, _)| *t).ok_or_else(|| {
            let known: Vec<&str> = words.iter().map(|(_, w)| *w).collect();
            format!("{}: {key:?} must be one of {}, not {text:?}", self.kind, known.join(", "))
        })
    }
}

/// One line: a JSON object and nothing after it, no key twice, its `type` returned with it.
fn object_line(line: &str) -> Result<(String, Map<String, Value>), String> {
    let Strict(value) = serde_json::from_str(line).map_err(|e| format!("not one JSON record: {e}"))?;
    let Value::Object(object) = value else {
        return Err("not a JSON object".into());
    };
    let kind = object.get("type").and_then(Value::as_str).ok_or("no string \"type\"")?.to_owned();
    Ok((kind, object))
}

fn expect_kind(kind: &str, want: &str) -> Result<(), String> {
    if kind == want { Ok(()) } else { Err(format!("expected a {want} record, not {kind:?}")) }
}

fn envelope(object: &Map<String, Value>) -> Result<Envelope, String> {
    let r = Record::new("envelope", object, &["v", "cipher", "key_id", "blob"], &[])?;
    let v = u32::try_from(r.unsigned("v")?).map_err(|_| "envelope: \"v\" is out of range".to_owned())?;
    Ok(Envelope { v, cipher: r.string("cipher")?, key_id: r.opt_string("key_id")?, blob: r.string("blob")? })
}

/// The `sync_prepare` record prepare reads on stdin.
pub fn parse_prepare(line: &str) -> Result<PrepareRequest, String> {
    let (kind, object) = object_line(line)?;
    expect_kind(&kind, "sync_prepare")?;
    let r = Record::new(&kind, &object, &["type", "envelope_v", "cipher", "key_id", "max_blob_bytes", "allow_new"], &["recipients"])?;
    let recipients: Vec<String> = match r.get("recipients") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(str::to_owned).ok_or_else(|| "sync_prepare: \"recipients\" must hold strings".to_owned()))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("sync_prepare: \"recipients\" must be a list".into()),
    };
    let key_id = r.opt_string("key_id")?;
    let profile = match r.string("cipher")?.as_str() {
        "none" if key_id.is_none() && recipients.is_empty() => WriteProfile::None,
        "none" => return Err("sync_prepare: cipher \"none\" takes key_id null and no recipients".into()),
        "age-v1" => match key_id {
            Some(key_id) if !recipients.is_empty() => WriteProfile::AgeV1 { key_id, recipients },
            _ => return Err("sync_prepare: cipher \"age-v1\" needs a key_id and at least one recipient".into()),
        },
        other => return Err(format!("sync_prepare: unknown cipher {other:?} (none or age-v1)")),
    };
    let envelope_v = u32::try_from(r.unsigned("envelope_v")?).map_err(|_| "sync_prepare: \"envelope_v\" is out of range".to_owned())?;
    Ok(PrepareRequest { envelope_v, profile, max_blob_bytes: r.unsigned("max_blob_bytes")?, allow_new: r.boolean("allow_new")? })
}

/// One `sync_push_ack` record.
pub fn parse_ack(line: &str) -> Result<PushAck, String> {
    let (kind, object) = object_line(line)?;
    expect_kind(&kind, "sync_push_ack")?;
    let r = Record::new(&kind, &object, &["type", "local_position", "id", "server_seq", "disposition"], &[])?;
    Ok(PushAck {
        local_position: r.position("local_position")?,
        wire_id: r.wire_id("id")?,
        server_seq: r.sequence("server_seq")?,
        disposition: r.word("disposition", &[(Disposition::Stored, "stored"), (Disposition::Duplicate, "duplicate")])?,
    })
}

/// A line of apply-pull's stdin: a message, or the page's closing cursor.
#[derive(Debug)]
pub enum PullLine {
    Message(Box<PullMessage>),
    Cursor(String),
}

/// One line of apply-pull's stdin: `sync_pull_message` or `sync_pull_cursor`.
pub fn parse_pull_line(line: &str) -> Result<PullLine, String> {
    let (kind, object) = object_line(line)?;
    match kind.as_str() {
        "sync_pull_cursor" => {
            let r = Record::new(&kind, &object, &["type", "next_after"], &[])?;
            Ok(PullLine::Cursor(r.sequence("next_after")?))
        }
        "sync_pull_message" => {
            let r = Record::new(
                &kind,
                &object,
                &["type", "server_seq", "id", "server_received_at", "envelope", "status"],
                &["reason", "policy_revision", "local_security_revision", "projection"],
            )?;
            let status = r.word("status", &EVALUATED)?;
            let projection = match r.get("projection") {
                None => None,
                Some(Value::Object(p)) => Some(projection(p)?),
                Some(_) => return Err("sync_pull_message: \"projection\" must be an object".into()),
            };
            if status == Evaluated::Importable && projection.is_none() {
                return Err("sync_pull_message: an importable message needs a projection".into());
            }
            Ok(PullLine::Message(Box::new(PullMessage {
                server_seq: r.sequence("server_seq")?,
                wire_id: r.wire_id("id")?,
                server_received_at: r.string("server_received_at")?,
                envelope: envelope(r.object("envelope")?)?,
                status,
                reason: r.opt_string("reason")?,
                policy_revision: r.opt_string("policy_revision")?,
                local_security_revision: r.opt_string("local_security_revision")?,
                projection,
            })))
        }
        other => Err(format!("expected a sync_pull_message or sync_pull_cursor record, not {other:?}")),
    }
}

fn projection(object: &Map<String, Value>) -> Result<Projection, String> {
    if object.contains_key("kind") {
        // A roster record: the engine applied it; only its kind reaches the driver.
        let kinds = [
            (RosterKind::MemberJoined, "member_joined"),
            (RosterKind::MemberLeft, "member_left"),
            (RosterKind::MemberRenamed, "member_renamed"),
            (RosterKind::KeyRotated, "key_rotated"),
        ];
        let r = Record { kind: "projection", object };
        return Ok(Projection::Roster(r.word("kind", &kinds)?));
    }
    let r = Record::new("projection", object, &["body", "created_at", "from_agent", "to_agent"], &[])?;
    Ok(Projection::Message(Chat {
        body: r.string("body")?,
        created_at: r.string("created_at")?,
        from_agent: r.string("from_agent")?,
        to_agent: r.string("to_agent")?,
    }))
}

/// `reprocess`'s optional scope argument: empty = every recoverable status, `malformed` = those only.
pub fn parse_scope(text: &str) -> Result<ReprocessScope, String> {
    match text {
        "" | "recoverable" => Ok(ReprocessScope::Recoverable),
        "malformed" => Ok(ReprocessScope::Malformed),
        other => Err(format!("unknown reprocess scope {other:?} (empty or malformed)")),
    }
}

// ---- printing, in agmsg's key order ----

fn js(text: &str) -> String {
    serde_json::to_string(text).expect("a string serializes")
}

fn opt_js(text: &Option<String>) -> String {
    text.as_deref().map(js).unwrap_or_else(|| "null".into())
}

fn envelope_json(e: &Envelope) -> String {
    format!("{{\"v\":{},\"cipher\":{},\"key_id\":{},\"blob\":{}}}", e.v, js(&e.cipher), opt_js(&e.key_id), js(&e.blob))
}

pub fn state_line(s: &SyncState) -> String {
    format!(
        "{{\"type\":\"sync_state\",\"driver_generation\":{},\"transport_cursor\":{}}}",
        js(&s.driver_generation),
        js(&s.transport_cursor)
    )
}

pub fn candidate_line(c: &PushCandidate) -> String {
    format!(
        "{{\"type\":\"sync_push_candidate\",\"local_position\":\"{}\",\"local_id\":{},\"id\":{},\"envelope\":{}}}",
        c.local_position,
        js(&c.local_id),
        js(&c.wire_id),
        envelope_json(&c.envelope)
    )
}

pub fn reconcile_line(push_cursor: i64) -> String {
    format!("{{\"type\":\"sync_reconcile_result\",\"push_cursor\":\"{push_cursor}\"}}")
}

pub fn apply_result_line(r: &ApplyResult) -> String {
    format!("{{\"type\":\"sync_apply_result\",\"transport_cursor\":{},\"corrupt_count\":{}}}", js(&r.transport_cursor), r.corrupt_count)
}

pub fn outcome_line(o: &Outcome) -> String {
    format!(
        "{{\"type\":\"sync_apply_outcome\",\"id\":{},\"server_seq\":{},\"status\":\"{}\"}}",
        js(&o.wire_id),
        js(&o.server_seq),
        o.status.word()
    )
}

pub fn reprocess_candidate_line(c: &ReprocessCandidate) -> String {
    format!(
        "{{\"type\":\"sync_reprocess_candidate\",\"server_seq\":{},\"id\":{},\"server_received_at\":{},\"envelope\":{},\"prior_status\":\"{}\"}}",
        js(&c.server_seq),
        js(&c.wire_id),
        js(&c.server_received_at),
        envelope_json(&c.envelope),
        c.prior_status.word()
    )
}

pub fn reprocess_page_line(p: &ReprocessPage) -> String {
    let next = p.next_after.as_ref().map(|k| js(&format!("{}:{}", k.server_seq, k.wire_id))).unwrap_or_else(|| "null".into());
    format!("{{\"type\":\"sync_reprocess_page\",\"next_after\":{next},\"has_more\":{}}}", p.has_more)
}

#[cfg(test)]
mod tests {
    use super::*;

    const WIRE: &str = "0b9a7c1e-2f3d-4a5b-8c6d-7e8f9a0b1c2d";

    #[test]
    fn records_are_refused_for_a_repeated_or_unknown_key_or_a_second_value() {
        let ack = format!(r#"{{"type":"sync_push_ack","local_position":"3","id":"{WIRE}","server_seq":"7","disposition":"stored"}}"#);
        assert_eq!(parse_ack(&ack).unwrap().local_position, 3);
        let twice = ack.replacen(r#""server_seq":"7""#, r#""server_seq":"7","server_seq":"8""#, 1);
        assert!(parse_ack(&twice).unwrap_err().contains("duplicate key"), "{twice}");
        let unknown = ack.replacen(r#""disposition""#, r#""extra":1,"disposition""#, 1);
        assert!(parse_ack(&unknown).unwrap_err().contains("unknown key"));
        assert!(parse_ack(&format!("{ack} {ack}")).is_err());
        for bad in [r#""server_seq":"07""#, r#""server_seq":"9223372036854775808""#, r#""server_seq":7"#] {
            assert!(parse_ack(&ack.replacen(r#""server_seq":"7""#, bad, 1)).is_err(), "{bad}");
        }
        assert_eq!(parse_ack(&ack.replacen(r#""local_position":"3""#, r#""local_position":"-4""#, 1)).unwrap().local_position, -4);
        assert!(parse_ack(&ack.replacen(WIRE, &WIRE.to_uppercase(), 1)).is_err());
    }

    #[test]
    fn a_nested_repeated_key_is_refused_and_a_roster_projection_keeps_only_its_kind() {
        let message = format!(
            r#"{{"type":"sync_pull_message","server_seq":"1","id":"{WIRE}","server_received_at":"t","envelope":{{"v":1,"cipher":"none","key_id":null,"blob":"eA=="}},"status":"importable","projection":{{"body":"hi","created_at":"t","from_agent":"a","to_agent":"b"}}}}"#
        );
        assert!(matches!(parse_pull_line(&message), Ok(PullLine::Message(_))));
        let nested = message.replacen(r#""blob":"eA==""#, r#""blob":"eA==","blob":"eQ==""#, 1);
        assert!(parse_pull_line(&nested).unwrap_err().contains("duplicate key"));
        let roster = message.replacen(
            r#"{"body":"hi","created_at":"t","from_agent":"a","to_agent":"b"}"#,
            r#"{"kind":"member_joined","member_id":"m"}"#,
            1,
        );
        match parse_pull_line(&roster) {
            Ok(PullLine::Message(m)) => assert_eq!(m.projection, Some(Projection::Roster(RosterKind::MemberJoined))),
            _ => panic!("{roster}"),
        }
        let no_projection = message.replacen(r#","projection":{"body":"hi","created_at":"t","from_agent":"a","to_agent":"b"}"#, "", 1);
        assert!(parse_pull_line(&no_projection).is_err());
        assert!(matches!(parse_pull_line(r#"{"type":"sync_pull_cursor","next_after":"12"}"#), Ok(PullLine::Cursor(c)) if c == "12"));
    }

    #[test]
    fn prepare_takes_none_or_age_v1_and_defaults_missing_recipients() {
        let none = r#"{"type":"sync_prepare","envelope_v":1,"cipher":"none","key_id":null,"max_blob_bytes":1048576,"allow_new":true}"#;
        assert_eq!(parse_prepare(none).unwrap().profile, WriteProfile::None);
        let age = r#"{"type":"sync_prepare","envelope_v":1,"cipher":"age-v1","key_id":"k1","recipients":["age1x"],"max_blob_bytes":10,"allow_new":false}"#;
        assert!(matches!(parse_prepare(age).unwrap().profile, WriteProfile::AgeV1 { .. }));
        assert!(parse_prepare(&none.replace(r#""key_id":null"#, r#""key_id":"k""#)).is_err());
        assert!(parse_prepare(&none.replace("none", "rot13")).is_err());
    }

    #[test]
    fn blobs_are_canonical_padded_base64_measured_without_a_copy() {
        assert_eq!(base64_size_and_head("eA=="), Some((1, b"x".to_vec())));
        assert_eq!(base64_size_and_head("eHk="), Some((2, b"xy".to_vec())));
        assert_eq!(base64_size_and_head("eHl6"), Some((3, b"xyz".to_vec())));
        assert_eq!(base64_size_and_head("").map(|(n, _)| n), Some(0));
        // Unpadded, padding inside, a bit the padding drops set, the URL alphabet, whitespace.
        for bad in ["eA", "eA==eA==", "eB==", "eHm=", "-_-_", "eA==\n", "e===", "===="] {
            assert_eq!(base64_size_and_head(bad), None, "{bad}");
        }
        let age = "YWdlLWVuY3J5cHRpb24ub3JnL3YxCi0+IFgyNTUxOQ==";
        let (size, head) = base64_size_and_head(age).unwrap();
        assert_eq!(size, 31);
        assert!(head.starts_with(AGE_HEADER), "{head:?}");
    }

    #[test]
    fn a_candidate_is_checked_against_the_request() {
        let none =
            parse_prepare(r#"{"type":"sync_prepare","envelope_v":1,"cipher":"none","key_id":null,"max_blob_bytes":3,"allow_new":true}"#)
                .unwrap();
        let age = PrepareRequest {
            profile: WriteProfile::AgeV1 { key_id: "k1".into(), recipients: vec!["age1x".into()] },
            max_blob_bytes: 64,
            ..none.clone()
        };
        let candidate = |cipher: &str, key_id: Option<&str>, blob: &str| PushCandidate {
            local_position: -5,
            local_id: "42".into(),
            wire_id: WIRE.into(),
            envelope: Envelope { v: 1, cipher: cipher.into(), key_id: key_id.map(str::to_owned), blob: blob.into() },
        };
        let age_blob = "YWdlLWVuY3J5cHRpb24ub3JnL3YxCi0+IFgyNTUxOQ==";
        assert_eq!(check_candidate(&candidate("none", None, "eHl6"), &none), Ok(()));
        assert_eq!(check_candidate(&candidate("age-v1", Some("k1"), age_blob), &age), Ok(()));
        // Sealed before a rotation or a switch to none: re-emitted as sealed, and taken.
        assert_eq!(check_candidate(&candidate("age-v1", Some("k0"), age_blob), &age), Ok(()));
        assert_eq!(
            check_candidate(&candidate("age-v1", Some("k0"), age_blob), &PrepareRequest { max_blob_bytes: 64, ..none.clone() }),
            Ok(())
        );
        for (c, request, why) in [
            (candidate("none", None, "eHl6eA=="), &none, "holds 4 bytes"),
            (candidate("none", None, ""), &none, "holds 0 bytes"),
            (candidate("none", None, "eB=="), &none, "canonical base64"),
            (candidate("none", Some("k1"), "eA=="), &none, "key_id is set"),
            (candidate("rot13", None, "eA=="), &none, "neither"),
            (candidate("none", None, "eA=="), &age, "plaintext"),
            (candidate("age-v1", Some("K1"), age_blob), &age, "not an age-v1 key id"),
            (candidate("age-v1", None, age_blob), &age, "not an age-v1 key id"),
            (candidate("age-v1", Some("k1"), "eHl6"), &age, "not an age v1 file"),
            (PushCandidate { local_id: "a b".into(), ..candidate("none", None, "eA==") }, &none, "local_id"),
            (
                PushCandidate {
                    envelope: Envelope { v: 2, ..candidate("none", None, "eA==").envelope },
                    ..candidate("none", None, "eA==")
                },
                &none,
                "envelope.v 2",
            ),
        ] {
            let refused = check_candidate(&c, request).unwrap_err();
            assert!(refused.contains(why), "{why}: {refused}");
        }
    }

    #[test]
    fn printed_records_keep_agmsgs_key_order() {
        let envelope = Envelope { v: 1, cipher: "none".into(), key_id: None, blob: "eA==".into() };
        let c = PushCandidate { local_position: -2, local_id: "l".into(), wire_id: WIRE.into(), envelope };
        assert_eq!(
            candidate_line(&c),
            format!(
                r#"{{"type":"sync_push_candidate","local_position":"-2","local_id":"l","id":"{WIRE}","envelope":{{"v":1,"cipher":"none","key_id":null,"blob":"eA=="}}}}"#
            )
        );
        let page = ReprocessPage {
            state: SyncState { driver_generation: "g".into(), transport_cursor: "0".into() },
            next_after: Some(parse_page_key(&format!("5:{WIRE}")).unwrap()),
            has_more: true,
        };
        assert_eq!(reprocess_page_line(&page), format!(r#"{{"type":"sync_reprocess_page","next_after":"5:{WIRE}","has_more":true}}"#));
    }
}
