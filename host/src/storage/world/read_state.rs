//! Optional since 1.2.0: `read-state`, Stage-2 read-state synchronization (world `storage-read-state`,
//! capability `stage2-read-state`).

use wasmtime::Store;

use super::super::sync::Binding;
use super::super::sync::read_state::{Blocked, BlockedReason, Exact, Frontier, Prepared, ReadApplyResult, ReadContext, Snapshot};
use super::{Call, answer, same};
use crate::runtime::HostState;

crate::runtime::world::optional_interface! {
    bindings "agmsg:storage/storage-read-state@1.2.0" in "../wit/storage" as StorageReadState, StorageReadStateIndices;
    types "agmsg:storage/types" => agmsg::storage::types
}

use exports::agmsg::storage::read_state as wit;

wit_binding!();

fn wit_frontiers(f: &[Frontier]) -> Vec<wit::Frontier> {
    f.iter().map(|f| wit::Frontier { member_id: f.member_id.clone(), server_seq: f.server_seq.clone() }).collect()
}

fn wit_exacts(x: &[Exact]) -> Vec<wit::Exact> {
    x.iter().map(|x| wit::Exact { member_id: x.member_id.clone(), wire_id: x.wire_id.clone() }).collect()
}

impl StorageReadState {
    fn read_state(&self) -> &wit::Guest {
        self.agmsg_storage_read_state()
    }

    pub fn prepare(&self, s: &mut Store<HostState>, b: &Binding, context: &ReadContext) -> Call<Prepared> {
        let context = wit::ReadContext {
            min_available_seq: context.min_available_seq.clone(),
            current_seq: context.current_seq.clone(),
            members: context.members.iter().map(|m| wit::Member { member_id: m.member_id.clone(), name: m.name.clone() }).collect(),
            local_agents: context.local_agents.clone(),
        };
        answer(self.read_state().call_prepare(s, &binding(b), &context), |p| Prepared {
            frontiers: p.frontiers.into_iter().map(|f| Frontier { member_id: f.member_id, server_seq: f.server_seq }).collect(),
            exacts: p.exacts.into_iter().map(|x| Exact { member_id: x.member_id, wire_id: x.wire_id }).collect(),
            blocked: p
                .blocked
                .into_iter()
                .map(|b| Blocked {
                    member_id: b.member_id,
                    reason: match b.reason {
                        wit::BlockedReason::MemberNameMismatch => BlockedReason::MemberNameMismatch,
                        wit::BlockedReason::ReadStateLimitExceeded => BlockedReason::ReadStateLimitExceeded,
                    },
                })
                .collect(),
        })
    }

    pub fn apply(&self, s: &mut Store<HostState>, b: &Binding, page: &Snapshot) -> Call<ReadApplyResult> {
        let page = wit::Snapshot {
            min_available_seq: page.min_available_seq.clone(),
            current_seq: page.current_seq.clone(),
            frontiers: wit_frontiers(&page.frontiers),
            exacts: wit_exacts(&page.exacts),
        };
        answer(self.read_state().call_apply(s, &binding(b), &page), |r| ReadApplyResult {
            min_available_seq: r.min_available_seq,
            member_count: r.member_count,
        })
    }

    pub fn block(&self, s: &mut Store<HostState>, b: &Binding, member_id: &str) -> Call<()> {
        answer(self.read_state().call_block(s, &binding(b), member_id), same)
    }

    pub fn unblock(&self, s: &mut Store<HostState>, b: &Binding, member_id: &str) -> Call<()> {
        answer(self.read_state().call_unblock(s, &binding(b), member_id), same)
    }
}
