//! Optional since 1.2.0: `resync`, accepting a retention gap (world `storage-resync`, capability
//! `stage1-resync`).

use wasmtime::Store;

use super::super::sync::Binding;
use super::super::sync::resync::{ResyncAudit, ResyncReport, ResyncRequest, ResyncResult};
use super::{Call, answer};
use crate::runtime::HostState;

crate::runtime::world::optional_interface! {
    bindings "agmsg:storage/storage-resync@1.2.0" in "../wit/storage" as StorageResync, StorageResyncIndices;
    types "agmsg:storage/types" => agmsg::storage::types
}

use exports::agmsg::storage::resync as wit;

wit_binding!();

fn audit(a: wit::ResyncAudit) -> ResyncAudit {
    ResyncAudit {
        expected_transport_cursor: a.expected_transport_cursor,
        accepted_floor: a.accepted_floor,
        gap_start: a.gap_start,
        gap_end: a.gap_end,
        reason: a.reason,
    }
}

impl StorageResync {
    pub fn resync_status(&self, s: &mut Store<HostState>, b: &Binding, accepted_floor: &str) -> Call<Option<ResyncReport>> {
        answer(self.agmsg_storage_resync().call_resync_status(s, &binding(b), accepted_floor), |r| {
            r.map(|r| ResyncReport { driver_generation: r.driver_generation, transport_cursor: r.transport_cursor, audit: r.audit.map(audit) })
        })
    }

    pub fn resync(&self, s: &mut Store<HostState>, b: &Binding, request: &ResyncRequest) -> Call<ResyncResult> {
        let request = wit::ResyncRequest {
            expected_transport_cursor: request.expected_transport_cursor.clone(),
            min_available_seq: request.min_available_seq.clone(),
            current_seq: request.current_seq.clone(),
        };
        answer(self.agmsg_storage_resync().call_resync(s, &binding(b), &request), |r| ResyncResult {
            driver_generation: r.driver_generation,
            audit: audit(r.audit),
        })
    }
}
