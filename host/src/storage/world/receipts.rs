//! Optional since 1.2.0: `receipts`, the hand-off evidence agmsg's sqlite store keeps per message
//! (world `storage-receipts`).

use wasmtime::Store;

use super::super::types::ReceiptState;
use super::{Call, answer, same};
use crate::runtime::HostState;

crate::runtime::world::optional_interface! {
    bindings "agmsg:storage/storage-receipts@1.2.0" in "../wit/storage" as StorageReceipts, StorageReceiptsIndices;
    types "agmsg:storage/types" => agmsg::storage::types
}

use exports::agmsg::storage::receipts;

impl StorageReceipts {
    pub fn record_receipts(&self, s: &mut Store<HostState>, team: &str, agent: &str, evidence: &str, ids: &[String]) -> Call<()> {
        answer(self.agmsg_storage_receipts().call_record_receipts(s, team, agent, evidence, ids), same)
    }

    pub fn receipt_status(&self, s: &mut Store<HostState>, team: &str, id: &str) -> Call<ReceiptState> {
        let state = |r| match r {
            receipts::ReceiptState::Receipt => ReceiptState::Receipt,
            receipts::ReceiptState::LegacyRead => ReceiptState::LegacyRead,
            receipts::ReceiptState::None => ReceiptState::None,
        };
        answer(self.agmsg_storage_receipts().call_receipt_status(s, team, id), state)
    }
}
