//! Optional since 1.2.0: `rename`, renames inside a store that keeps names in its records (world
//! `storage-rename`).

use wasmtime::Store;

use super::{Call, answer, same};
use crate::runtime::HostState;

crate::runtime::world::optional_interface! {
    bindings "agmsg:storage/storage-rename@1.2.0" in "../wit/storage" as StorageRename, StorageRenameIndices;
    types "agmsg:storage/types" => agmsg::storage::types
}

impl StorageRename {
    pub fn rename_agent(&self, s: &mut Store<HostState>, team: &str, old: &str, new: &str) -> Call<()> {
        answer(self.agmsg_storage_rename().call_rename_agent(s, team, old, new), same)
    }

    pub fn rename_team(&self, s: &mut Store<HostState>, old: &str, new: &str) -> Call<()> {
        answer(self.agmsg_storage_rename().call_rename_team(s, old, new), same)
    }
}
