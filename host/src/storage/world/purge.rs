//! Optional since 1.2.0: `purge`, removing the granted store's data (world `storage-purge`, capability
//! `purge`), for a store the host cannot remove itself (a database).

use wasmtime::Store;

use super::{Call, answer, same};
use crate::runtime::HostState;

crate::runtime::world::optional_interface! {
    bindings "agmsg:storage/storage-purge@1.2.0" in "../wit/storage" as StoragePurge, StoragePurgeIndices;
    types "agmsg:storage/types" => agmsg::storage::types
}

impl StoragePurge {
    pub fn purge_store(&self, s: &mut Store<HostState>) -> Call<()> {
        answer(self.agmsg_storage_purge().call_purge_store(s), same)
    }
}
