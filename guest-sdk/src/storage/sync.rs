//! The optional `sync` interface (`agmsg:storage` 1.2.0, capability `stage1-sync`): the local half of
//! agmsg's Stage-1 remote sync.

use std::cell::RefCell;

use super::{Component, DriverError, StorageDriver, with_driver};

/// The records of the optional `sync` interface (`agmsg:storage` 1.2.0, agmsg's Stage-1 remote sync):
/// what [`SyncDriver`]'s ops take and answer, agmsg's JSONL records as typed values (the host parses and
/// prints agmsg's lines). Sequences and cursors are canonical decimal strings ([`is_sequence`]), wire
/// ids lowercase UUIDv4, binding ids lowercase UUIDv7 ([`is_lower_uuid`]).
///
/// ```
/// use agmsg_guest_sdk::storage::{Envelope, PushCandidate};
///
/// let candidate = PushCandidate {
///     local_position: 7,
///     local_id: "0196f3a2-7c1e-7000-8000-000000000001".into(),
///     wire_id: "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b".into(),
///     envelope: Envelope { v: 1, cipher: "none".into(), key_id: None, blob: "e30=".into() },
/// };
/// assert_eq!(candidate.envelope.cipher, "none");
/// ```
pub use super::optional_bindings::sync::exports::agmsg::storage::sync::{
    AgeProfile, ApplyResult, Binding, Chat, Disposition, Envelope, Evaluated, Outcome, OutcomeStatus, PageKey, PrepareRequest, Projection,
    PullMessage, PushAck, PushCandidate, ReprocessCandidate, ReprocessPage, ReprocessScope, RosterKind, SyncState, WriteProfile,
};

use super::optional_bindings::sync::exports::agmsg::storage::sync::{
    self as sync_wit, Guest as SyncGuest, GuestPullPage, GuestPushCandidates, GuestReprocessCandidates,
};

/// The most a prepare or reprocess page may hold, and the most acks one reconcile takes (agmsg's bound).
pub const SYNC_PAGE_MAX: u32 = 1000;

/// Every evaluated status (what [`Evaluated::from_name`] looks among).
const EVALUATED: [Evaluated; 6] = [
    Evaluated::Importable,
    Evaluated::UnsupportedCipher,
    Evaluated::PendingKey,
    Evaluated::AuthenticationFailed,
    Evaluated::Malformed,
    Evaluated::PolicyViolation,
];

impl Evaluated {
    /// agmsg's word for the status, as its drivers store it (`sync_quarantine.status`, the jsonl
    /// journal's `status`).
    ///
    /// ```
    /// use agmsg_guest_sdk::storage::Evaluated;
    ///
    /// assert_eq!(Evaluated::PendingKey.name(), "pending_key");
    /// assert_eq!(Evaluated::from_name("pending_key"), Some(Evaluated::PendingKey));
    /// assert_eq!(Evaluated::from_name("imported"), None);
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Evaluated::Importable => "importable",
            Evaluated::UnsupportedCipher => "unsupported_cipher",
            Evaluated::PendingKey => "pending_key",
            Evaluated::AuthenticationFailed => "authentication_failed",
            Evaluated::Malformed => "malformed",
            Evaluated::PolicyViolation => "policy_violation",
        }
    }

    /// The status agmsg's word `name` stands for; none for any other word.
    pub fn from_name(name: &str) -> Option<Evaluated> {
        EVALUATED.into_iter().find(|e| e.name() == name)
    }
}

impl OutcomeStatus {
    /// The outcome agmsg's word `name` stands for (an evaluated status's, or `imported`, `reconciled`,
    /// `corrupt_state`); none for any other word.
    pub fn from_name(name: &str) -> Option<OutcomeStatus> {
        Some(match name {
            "imported" => OutcomeStatus::Imported,
            "reconciled" => OutcomeStatus::Reconciled,
            "corrupt_state" => OutcomeStatus::CorruptState,
            _ => match Evaluated::from_name(name)? {
                Evaluated::Importable => OutcomeStatus::Importable,
                Evaluated::UnsupportedCipher => OutcomeStatus::UnsupportedCipher,
                Evaluated::PendingKey => OutcomeStatus::PendingKey,
                Evaluated::AuthenticationFailed => OutcomeStatus::AuthenticationFailed,
                Evaluated::Malformed => OutcomeStatus::Malformed,
                Evaluated::PolicyViolation => OutcomeStatus::PolicyViolation,
            },
        })
    }
}

/// Whether `text` is a canonical decimal sequence or cursor as agmsg's sync records carry them: digits,
/// no leading zero (but `0` itself), at most 2^63-1.
///
/// ```
/// use agmsg_guest_sdk::storage::is_sequence;
///
/// assert!(is_sequence("0") && is_sequence("42") && is_sequence("9223372036854775807"));
/// for bad in ["", "007", "-1", "+1", "1.0", "9223372036854775808", " 1"] {
///     assert!(!is_sequence(bad), "{bad:?}");
/// }
/// ```
pub use agmsg_contract::sync::is_sequence;

/// Whether `text` is a lowercase hyphenated UUID of `version` (7 for binding ids, 4 for wire ids) with
/// the RFC 9562 variant, the only form agmsg's sync accepts.
///
/// ```
/// use agmsg_guest_sdk::storage::is_lower_uuid;
///
/// assert!(is_lower_uuid("0196f3a2-7c1e-7000-8000-000000000000", 7));
/// assert!(is_lower_uuid("6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b", 4));
/// assert!(!is_lower_uuid("0196F3A2-7C1E-7000-8000-000000000000", 7), "uppercase");
/// assert!(!is_lower_uuid("6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b", 7), "another version");
/// assert!(!is_lower_uuid("6f1c2a3b-4d5e-4f60-ca7b-9c0d1e2f3a4b", 4), "another variant");
/// ```
pub use agmsg_contract::sync::is_lower_uuid;

/// The optional `sync` interface (`agmsg:storage` 1.2.0, capability `stage1-sync`): the local half of
/// agmsg's Stage-1 remote sync (spec §2.8). agmsg's engine does the HTTP, decryption and policy; the
/// driver owns the durable transitions, and has the host seal each push envelope
/// ([`crate::seal::seal`]): the host refuses an `age-v1` answer holding an envelope it did not seal.
/// Register it with
/// [`export_storage_sync!`](crate::export_storage_sync) next to
/// [`export_storage_driver!`](crate::export_storage_driver).
///
/// The SDK refuses, before the driver sees them, a binding whose team is not a valid name, whose ids are
/// not lowercase UUIDv7 or whose protocol version is not digits; a limit outside 1..1000; a prepare
/// request other than envelope version 1 with `none`, or `age-v1` with a key id of
/// `[a-z0-9][a-z0-9._-]{0,63}` and 1 to 256 distinct `age1` recipients; a sequence, cursor or wire id
/// not in its canonical form; an empty or oversized ack batch.
///
/// What each op must guarantee (agmsg's crash boundaries): a wire id is never visible before its
/// envelope is durably stored with it, and a stored reservation is never resealed; reconcile is all or
/// nothing; a pull page's outcomes and its transport cursor commit together. A crash (a trap drops the
/// instance) anywhere must lose and duplicate nothing.
pub trait SyncDriver {
    /// Reserve up to `limit` new messages (unless `request.allow_new` is false), each under the wire id and
    /// envelope [`crate::seal::seal`] returns, stored together; then answer the binding's state and every
    /// unacknowledged reservation in local order, at most `limit`, each as it was stored.
    fn prepare_push(
        &self,
        binding: &Binding,
        limit: u32,
        request: &PrepareRequest,
    ) -> Result<(SyncState, Box<dyn SyncPages<PushCandidate>>), DriverError>;
    /// Record `acks` (1..1000) and answer the push cursor, advanced through the contiguous acknowledged
    /// prefix. An ack that matches no durable reservation refuses the whole batch (`corrupt_state`). An
    /// ack that conflicts with a recorded one (another sequence for its wire id, or another wire id's
    /// sequence) is the driver's to handle as its agmsg driver does: refuse the whole batch
    /// (`corrupt_state`, sqlite), or record the conflict beside the valid acks, the wire id then blocked
    /// (jsonl). What the call records, it records in one commit.
    fn reconcile_push(&self, binding: &Binding, acks: &[PushAck]) -> Result<i64, DriverError>;
    /// Begin a pull page: the returned stage takes its messages and commits them with the cursor.
    fn apply_pull(&self, binding: &Binding) -> Result<Box<dyn PullStage>, DriverError>;
    /// One keyset page of quarantined envelopes in `scope` after `after`: its trailer (with the state)
    /// and its candidates.
    fn reprocess(
        &self,
        binding: &Binding,
        limit: u32,
        after: Option<&PageKey>,
        scope: ReprocessScope,
    ) -> Result<(ReprocessPage, Box<dyn SyncPages<ReprocessCandidate>>), DriverError>;
}

/// An answer read in slices: prepare's push candidates, reprocess's candidates.
pub trait SyncPages<T> {
    /// The next items, together at most `max_bytes` of envelope blob but at least one while any are
    /// left; empty at the end.
    fn next_page(&mut self, max_bytes: u32) -> Result<Vec<T>, DriverError>;
}

/// A pull page being applied: messages staged in slices, then committed with the transport cursor.
/// Dropped without `commit`, nothing it staged remains.
pub trait PullStage {
    /// Stage the next messages of the page, in server order.
    fn push(&mut self, messages: Vec<PullMessage>) -> Result<(), DriverError>;
    /// Commit everything staged and set the transport cursor to `next_after`.
    fn commit(&mut self, next_after: &str) -> Result<ApplyResult, DriverError>;
}

/// Register `$driver` (the type given to [`export_storage_driver!`](crate::export_storage_driver), which
/// also implements [`SyncDriver`]) as this component's `agmsg:storage/sync` export (1.2.0).
#[macro_export]
macro_rules! export_storage_sync {
    ($driver:ty) => {
        $crate::__export_storage_optional!($driver, sync);
    };
}

pub(super) fn refuse(what: impl std::fmt::Display) -> DriverError {
    DriverError::runtime(format!("sync: {what}"))
}

/// The binding rules agmsg's sqlite driver applies (the team by the contract's name rules).
pub(super) fn check_binding(b: &Binding) -> Result<(), DriverError> {
    crate::check_name("team", &b.local_team)?;
    for (what, id) in [("server instance id", &b.server_instance_id), ("remote team id", &b.remote_team_id)] {
        if !is_lower_uuid(id, 7) {
            return Err(refuse(format!("invalid {what} {id:?}: expected a lowercase UUIDv7")));
        }
    }
    let v = &b.protocol_version;
    if v.is_empty() || !v.bytes().all(|c| c.is_ascii_digit()) || v.parse::<i64>().is_err() {
        return Err(refuse(format!("invalid protocol version {v:?}: expected digits")));
    }
    Ok(())
}

fn check_limit(limit: u32) -> Result<(), DriverError> {
    if !(1..=SYNC_PAGE_MAX).contains(&limit) {
        return Err(refuse(format!("invalid limit {limit}: expected 1..{SYNC_PAGE_MAX}")));
    }
    Ok(())
}

pub(super) fn check_sequence(what: &str, text: &str) -> Result<(), DriverError> {
    if !is_sequence(text) {
        return Err(refuse(format!("invalid {what} {text:?}: expected a canonical decimal up to 2^63-1")));
    }
    Ok(())
}

pub(super) fn check_wire_id(text: &str) -> Result<(), DriverError> {
    if !is_lower_uuid(text, 4) {
        return Err(refuse(format!("invalid wire id {text:?}: expected a lowercase UUIDv4")));
    }
    Ok(())
}

fn check_prepare(request: &PrepareRequest) -> Result<(), DriverError> {
    if request.envelope_v != 1 {
        return Err(refuse(format!("unsupported envelope version {}", request.envelope_v)));
    }
    if let WriteProfile::AgeV1(age) = &request.profile {
        let key = age.key_id.as_bytes();
        let key_ok = !key.is_empty()
            && key.len() <= 64
            && (key[0].is_ascii_lowercase() || key[0].is_ascii_digit())
            && key.iter().all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'.' | b'_' | b'-'));
        if !key_ok {
            return Err(refuse(format!("invalid key id {:?}", age.key_id)));
        }
        if !(1..=256).contains(&age.recipients.len()) {
            return Err(refuse(format!("age-v1 needs 1 to 256 recipients, not {}", age.recipients.len())));
        }
        let mut seen = std::collections::BTreeSet::new();
        for r in &age.recipients {
            let ok = r.len() == 62 && r.starts_with("age1") && r.bytes().skip(4).all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
            if !ok {
                return Err(refuse(format!("invalid age recipient {r:?}")));
            }
            if !seen.insert(r) {
                return Err(refuse(format!("duplicate age recipient {r:?}")));
            }
        }
    }
    Ok(())
}

fn check_pull_message(m: &PullMessage) -> Result<(), DriverError> {
    check_sequence("server_seq", &m.server_seq)?;
    check_wire_id(&m.wire_id)?;
    pull_chat(m).map(drop)
}

/// The chat message a pull record brings to import: an importable record's message projection; none
/// for a roster projection (the engine applied it, the driver only acknowledges it) or any other
/// status. An importable record with no projection is refused, as agmsg's drivers both refuse the page
/// at it. The SDK checks every record so before [`PullStage::push`] sees it.
///
/// ```
/// use agmsg_guest_sdk::storage::{Chat, Envelope, Evaluated, Projection, PullMessage, pull_chat};
///
/// let chat = Chat { body: "hi".into(), created_at: "2026-01-01T00:00:00Z".into(), from_agent: "a".into(), to_agent: "b".into() };
/// let mut m = PullMessage {
///     server_seq: "1".into(),
///     wire_id: "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b".into(),
///     server_received_at: "2026-01-01T00:00:00Z".into(),
///     envelope: Envelope { v: 1, cipher: "none".into(), key_id: None, blob: "e30=".into() },
///     status: Evaluated::Importable,
///     reason: None,
///     policy_revision: None,
///     local_security_revision: None,
///     projection: Some(Projection::Message(chat.clone())),
/// };
/// assert_eq!(pull_chat(&m).unwrap(), Some(&chat));
/// m.projection = None;
/// assert!(pull_chat(&m).is_err());
/// m.status = Evaluated::PendingKey;
/// assert_eq!(pull_chat(&m).unwrap(), None);
/// ```
pub fn pull_chat(m: &PullMessage) -> Result<Option<&Chat>, DriverError> {
    match (m.status, &m.projection) {
        (Evaluated::Importable, None) => Err(refuse(format!("importable pull message {} has no projection", m.wire_id))),
        (Evaluated::Importable, Some(Projection::Message(chat))) => Ok(Some(chat)),
        _ => Ok(None),
    }
}

fn check_page_key(key: &PageKey) -> Result<(), DriverError> {
    check_sequence("page-after sequence", &key.server_seq)?;
    check_wire_id(&key.wire_id)
}

#[doc(hidden)]
pub struct PushCandidatesResource(RefCell<Box<dyn SyncPages<PushCandidate>>>);

#[doc(hidden)]
pub struct ReprocessCandidatesResource(RefCell<Box<dyn SyncPages<ReprocessCandidate>>>);

#[doc(hidden)]
pub struct PullPageResource(RefCell<Box<dyn PullStage>>);

impl GuestPushCandidates for PushCandidatesResource {
    fn next_page(&self, max_bytes: u32) -> Result<Vec<PushCandidate>, DriverError> {
        self.0.borrow_mut().next_page(max_bytes)
    }
}

impl GuestReprocessCandidates for ReprocessCandidatesResource {
    fn next_page(&self, max_bytes: u32) -> Result<Vec<ReprocessCandidate>, DriverError> {
        self.0.borrow_mut().next_page(max_bytes)
    }
}

impl GuestPullPage for PullPageResource {
    fn push(&self, messages: Vec<PullMessage>) -> Result<(), DriverError> {
        messages.iter().try_for_each(check_pull_message)?;
        self.0.borrow_mut().push(messages)
    }
    fn commit(&self, next_after: String) -> Result<ApplyResult, DriverError> {
        check_sequence("next_after", &next_after)?;
        self.0.borrow_mut().commit(&next_after)
    }
}

impl<D: StorageDriver + SyncDriver + Default + 'static> SyncGuest for Component<D> {
    type PushCandidates = PushCandidatesResource;
    type PullPage = PullPageResource;
    type ReprocessCandidates = ReprocessCandidatesResource;

    fn prepare_push(b: Binding, limit: u32, request: PrepareRequest) -> Result<(SyncState, sync_wit::PushCandidates), DriverError> {
        check_binding(&b)?;
        check_limit(limit)?;
        check_prepare(&request)?;
        let (state, pages) = with_driver::<D, _>(|d| d.prepare_push(&b, limit, &request))?;
        Ok((state, sync_wit::PushCandidates::new(PushCandidatesResource(RefCell::new(pages)))))
    }

    fn reconcile_push(b: Binding, acks: Vec<PushAck>) -> Result<i64, DriverError> {
        check_binding(&b)?;
        if acks.is_empty() || acks.len() > SYNC_PAGE_MAX as usize {
            return Err(refuse(format!("reconcile takes 1..{SYNC_PAGE_MAX} acks, not {}", acks.len())));
        }
        for ack in &acks {
            check_sequence("server_seq", &ack.server_seq)?;
            check_wire_id(&ack.wire_id)?;
        }
        with_driver::<D, _>(|d| d.reconcile_push(&b, &acks))
    }

    fn apply_pull(b: Binding) -> Result<sync_wit::PullPage, DriverError> {
        check_binding(&b)?;
        let stage = with_driver::<D, _>(|d| d.apply_pull(&b))?;
        Ok(sync_wit::PullPage::new(PullPageResource(RefCell::new(stage))))
    }

    fn reprocess(
        b: Binding,
        limit: u32,
        after: Option<PageKey>,
        scope: ReprocessScope,
    ) -> Result<(ReprocessPage, sync_wit::ReprocessCandidates), DriverError> {
        check_binding(&b)?;
        check_limit(limit)?;
        if let Some(key) = &after {
            check_page_key(key)?;
        }
        let (page, pages) = with_driver::<D, _>(|d| d.reprocess(&b, limit, after.as_ref(), scope))?;
        Ok((page, sync_wit::ReprocessCandidates::new(ReprocessCandidatesResource(RefCell::new(pages)))))
    }
}

// What `resync` and `read-state` share with `sync`: the binding, sequences compared, a window.

pub(super) fn sync_binding(
    local_team: String,
    server_instance_id: String,
    remote_team_id: String,
    protocol_version: String,
) -> Result<Binding, DriverError> {
    let b = Binding { local_team, server_instance_id, remote_team_id, protocol_version };
    check_binding(&b)?;
    Ok(b)
}

/// `a <= b` for canonical decimals (checked first).
pub(super) fn le(a: &str, b: &str) -> bool {
    (a.len(), a) <= (b.len(), b)
}

/// A read-state floor and current sequence, floor <= current.
pub(super) fn check_window(floor: &str, current: &str) -> Result<(), DriverError> {
    check_sequence("min_available_seq", floor)?;
    check_sequence("current_seq", current)?;
    if !le(floor, current) {
        return Err(refuse(format!("min_available_seq {floor} is above current_seq {current}")));
    }
    Ok(())
}
