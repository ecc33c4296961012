//! The storage axis's world as the host calls it: the bindings of `agmsg:storage/storage-driver`, which
//! share the `agmsg:host` interfaces of every axis (`runtime::caps::wit`), and their [`DriverWorld`].

use wasmtime::Store;
use wasmtime::component::InstancePre;

use crate::axis::Axis;
use crate::runtime::{DriverWorld, HostState};

mod bindings {
    wasmtime::component::bindgen!({
        world: "agmsg:storage/storage-driver@1.0.0",
        path: ["../wit/host", "../wit/storage"],
        with: {
            "agmsg:host/log": crate::runtime::caps::wit::log,
            "agmsg:host/lock": crate::runtime::caps::wit::lock,
            "agmsg:host/file-lock": crate::runtime::caps::wit::file_lock,
        },
    });
}

/// The generated bindings of the storage world (not to be confused with the guest SDK's trait).
pub use bindings::StorageDriver as StorageWorld;
/// The contract's types (`agmsg:storage/types`), as the host sees them.
pub use bindings::agmsg::storage::types as wit;

impl DriverWorld for StorageWorld {
    const AXIS: Axis = Axis::Storage;
    type Pre = bindings::StorageDriverPre<HostState>;

    fn pre(instance_pre: InstancePre<HostState>) -> wasmtime::Result<Self::Pre> {
        bindings::StorageDriverPre::new(instance_pre)
    }

    fn instantiate(pre: &Self::Pre, store: &mut Store<HostState>) -> wasmtime::Result<Self> {
        pre.instantiate(store)
    }
}
