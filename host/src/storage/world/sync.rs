//! Optional since 1.2.0: `sync`, agmsg's Stage-1 remote sync (world `storage-sync`, capability
//! `stage1-sync`). Bulk answers and pull pages are resources the host reads or fills a slice at a time.

use wasmtime::Store;
use wasmtime::component::ResourceAny;

use super::super::sync::{
    ApplyResult, Binding, Chat, Disposition, Envelope, Evaluated, Outcome, OutcomeStatus, PageKey, PrepareRequest, Projection, PullMessage,
    PushAck, PushCandidate, ReprocessCandidate, ReprocessPage, ReprocessScope, RosterKind, SyncState, WriteProfile,
};
use super::{Call, answer, same};
use crate::runtime::HostState;

crate::runtime::world::optional_interface! {
    bindings "agmsg:storage/storage-sync@1.2.0" in "../wit/storage" as StorageSync, StorageSyncIndices;
    types "agmsg:storage/types" => agmsg::storage::types
}

use exports::agmsg::storage::sync as wit;

impl StorageSync {
    fn sync(&self) -> &wit::Guest {
        self.agmsg_storage_sync()
    }

    /// `prepare-push`: the state, and the `push-candidates` resource to read.
    pub fn prepare_push(&self, s: &mut Store<HostState>, b: &Binding, limit: u32, request: &PrepareRequest) -> Call<(SyncState, ResourceAny)> {
        let profile = match &request.profile {
            WriteProfile::None => wit::WriteProfile::None,
            WriteProfile::AgeV1 { key_id, recipients } => wit::WriteProfile::AgeV1(wit::AgeProfile { key_id: key_id.clone(), recipients: recipients.clone() }),
        };
        let request = wit::PrepareRequest { envelope_v: request.envelope_v, profile, max_blob_bytes: request.max_blob_bytes, allow_new: request.allow_new };
        answer(self.sync().call_prepare_push(s, &binding(b), limit, &request), |(st, candidates)| (state(st), candidates))
    }

    pub fn push_candidates_page(&self, s: &mut Store<HostState>, candidates: ResourceAny, max_bytes: u32) -> Call<Vec<PushCandidate>> {
        answer(self.sync().push_candidates().call_next_page(s, candidates, max_bytes), |page| {
            page.into_iter()
                .map(|c| PushCandidate { local_position: c.local_position, local_id: c.local_id, wire_id: c.wire_id, envelope: envelope(c.envelope) })
                .collect()
        })
    }

    /// `reconcile-push`: the push cursor.
    pub fn reconcile_push(&self, s: &mut Store<HostState>, b: &Binding, acks: &[PushAck]) -> Call<i64> {
        let acks: Vec<wit::PushAck> = acks
            .iter()
            .map(|a| wit::PushAck {
                local_position: a.local_position,
                wire_id: a.wire_id.clone(),
                server_seq: a.server_seq.clone(),
                disposition: match a.disposition {
                    Disposition::Stored => wit::Disposition::Stored,
                    Disposition::Duplicate => wit::Disposition::Duplicate,
                },
            })
            .collect();
        answer(self.sync().call_reconcile_push(s, &binding(b), &acks), same)
    }

    /// `apply-pull`: a new `pull-page` resource.
    pub fn apply_pull(&self, s: &mut Store<HostState>, b: &Binding) -> Call<ResourceAny> {
        answer(self.sync().call_apply_pull(s, &binding(b)), same)
    }

    /// Stage `messages` (taken by value: bodies and blobs move into the call).
    pub fn pull_page_push(&self, s: &mut Store<HostState>, page: ResourceAny, messages: Vec<PullMessage>) -> Call<()> {
        let messages: Vec<wit::PullMessage> = messages.into_iter().map(pull_message).collect();
        answer(self.sync().pull_page().call_push(s, page, &messages), same)
    }

    pub fn pull_page_commit(&self, s: &mut Store<HostState>, page: ResourceAny, next_after: &str) -> Call<ApplyResult> {
        answer(self.sync().pull_page().call_commit(s, page, next_after), |r| ApplyResult {
            transport_cursor: r.transport_cursor,
            corrupt_count: r.corrupt_count,
            outcomes: r.outcomes.into_iter().map(|o| Outcome { wire_id: o.wire_id, server_seq: o.server_seq, status: outcome_status(o.status) }).collect(),
        })
    }

    /// `reprocess`: the page's trailer (with the state), and the `reprocess-candidates` resource to read.
    pub fn reprocess(&self, s: &mut Store<HostState>, b: &Binding, limit: u32, after: Option<&PageKey>, scope: ReprocessScope) -> Call<(ReprocessPage, ResourceAny)> {
        let after = after.map(|k| wit::PageKey { server_seq: k.server_seq.clone(), wire_id: k.wire_id.clone() });
        let scope = match scope {
            ReprocessScope::Recoverable => wit::ReprocessScope::Recoverable,
            ReprocessScope::Malformed => wit::ReprocessScope::Malformed,
        };
        answer(self.sync().call_reprocess(s, &binding(b), limit, after.as_ref(), scope), |(page, candidates)| {
            let page = ReprocessPage {
                state: state(page.state),
                next_after: page.next_after.map(|k| PageKey { server_seq: k.server_seq, wire_id: k.wire_id }),
                has_more: page.has_more,
            };
            (page, candidates)
        })
    }

    pub fn reprocess_candidates_page(&self, s: &mut Store<HostState>, candidates: ResourceAny, max_bytes: u32) -> Call<Vec<ReprocessCandidate>> {
        answer(self.sync().reprocess_candidates().call_next_page(s, candidates, max_bytes), |page| {
            page.into_iter()
                .map(|c| ReprocessCandidate {
                    server_seq: c.server_seq,
                    wire_id: c.wire_id,
                    server_received_at: c.server_received_at,
                    envelope: envelope(c.envelope),
                    prior_status: evaluated(c.prior_status),
                })
                .collect()
        })
    }
}

wit_binding!();

fn state(s: wit::SyncState) -> SyncState {
    SyncState { driver_generation: s.driver_generation, transport_cursor: s.transport_cursor }
}

fn envelope(e: wit::Envelope) -> Envelope {
    Envelope { v: e.v, cipher: e.cipher, key_id: e.key_id, blob: e.blob }
}

fn evaluated(e: wit::Evaluated) -> Evaluated {
    match e {
        wit::Evaluated::Importable => Evaluated::Importable,
        wit::Evaluated::UnsupportedCipher => Evaluated::UnsupportedCipher,
        wit::Evaluated::PendingKey => Evaluated::PendingKey,
        wit::Evaluated::AuthenticationFailed => Evaluated::AuthenticationFailed,
        wit::Evaluated::Malformed => Evaluated::Malformed,
        wit::Evaluated::PolicyViolation => Evaluated::PolicyViolation,
    }
}

fn outcome_status(s: wit::OutcomeStatus) -> OutcomeStatus {
    use wit::OutcomeStatus as W;
    match s {
        W::Importable => OutcomeStatus::Evaluated(Evaluated::Importable),
        W::UnsupportedCipher => OutcomeStatus::Evaluated(Evaluated::UnsupportedCipher),
        W::PendingKey => OutcomeStatus::Evaluated(Evaluated::PendingKey),
        W::AuthenticationFailed => OutcomeStatus::Evaluated(Evaluated::AuthenticationFailed),
        W::Malformed => OutcomeStatus::Evaluated(Evaluated::Malformed),
        W::PolicyViolation => OutcomeStatus::Evaluated(Evaluated::PolicyViolation),
        W::Imported => OutcomeStatus::Imported,
        W::Reconciled => OutcomeStatus::Reconciled,
        W::CorruptState => OutcomeStatus::CorruptState,
    }
}

fn pull_message(m: PullMessage) -> wit::PullMessage {
    let e = m.envelope;
    wit::PullMessage {
        server_seq: m.server_seq,
        wire_id: m.wire_id,
        server_received_at: m.server_received_at,
        envelope: wit::Envelope { v: e.v, cipher: e.cipher, key_id: e.key_id, blob: e.blob },
        status: match m.status {
            Evaluated::Importable => wit::Evaluated::Importable,
            Evaluated::UnsupportedCipher => wit::Evaluated::UnsupportedCipher,
            Evaluated::PendingKey => wit::Evaluated::PendingKey,
            Evaluated::AuthenticationFailed => wit::Evaluated::AuthenticationFailed,
            Evaluated::Malformed => wit::Evaluated::Malformed,
            Evaluated::PolicyViolation => wit::Evaluated::PolicyViolation,
        },
        reason: m.reason,
        policy_revision: m.policy_revision,
        local_security_revision: m.local_security_revision,
        projection: m.projection.map(|p| match p {
            Projection::Message(Chat { body, created_at, from_agent, to_agent }) => wit::Projection::Message(wit::Chat { body, created_at, from_agent, to_agent }),
            Projection::Roster(kind) => wit::Projection::Roster(match kind {
                RosterKind::MemberJoined => wit::RosterKind::MemberJoined,
                RosterKind::MemberLeft => wit::RosterKind::MemberLeft,
                RosterKind::MemberRenamed => wit::RosterKind::MemberRenamed,
                RosterKind::KeyRotated => wit::RosterKind::KeyRotated,
            }),
        }),
    }
}
