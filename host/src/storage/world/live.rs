//! Optional since 1.1.0: `live`, waking a watcher when the store may have changed (world
//! `storage-live`, exported beside `driver`).

use wasmtime::Store;

use super::super::types::{Pair, Wake};
use super::{Call, answer, wit_pairs};
use crate::runtime::HostState;

crate::runtime::world::optional_interface! {
    bindings "agmsg:storage/storage-live@1.2.0" in "../wit/storage" as StorageLive, StorageLiveIndices;
    types "agmsg:storage/types" => agmsg::storage::types
}

use exports::agmsg::storage::live;

impl StorageLive {
    /// `wait-after`: block until a message to `pairs` may have been written after `cursor`, or
    /// `timeout_ms` passes.
    pub fn wait_after(&self, s: &mut Store<HostState>, cursor: &str, pairs: &[Pair], timeout_ms: u32) -> Call<Wake> {
        let wake = |w| match w {
            live::Wake::Changed => Wake::Changed,
            live::Wake::TimedOut => Wake::TimedOut,
        };
        answer(self.agmsg_storage_live().call_wait_after(s, cursor, &wit_pairs(pairs), timeout_ms), wake)
    }
}
