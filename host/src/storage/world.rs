//! The storage axis's world as the host calls it: the bindings of `agmsg:storage/storage-driver`, which
//! share the `agmsg:host` interfaces of every axis (`runtime::caps::wit`), the bindings of the optional
//! `agmsg:storage/storage-live` (1.1.0), which share the first's types, and their [`DriverWorld`].
//!
//! A component built against 1.0.0 exports `agmsg:storage/driver@1.0.0` and no `live`: wasmtime finds
//! exports by semver-compatible name (`driver@1.1.0` is looked up as `driver@1`), so it loads, and
//! [`StorageWorld::live`] is `None`.

use wasmtime::Store;
use wasmtime::component::InstancePre;

use crate::axis::Axis;
use crate::runtime::{DriverWorld, HostState};

mod bindings {
    wasmtime::component::bindgen!({
        world: "agmsg:storage/storage-driver@1.1.0",
        path: ["../wit/host", "../wit/storage"],
        with: {
            "agmsg:host/log": crate::runtime::caps::wit::log,
            "agmsg:host/lock": crate::runtime::caps::wit::lock,
            "agmsg:host/file-lock": crate::runtime::caps::wit::file_lock,
        },
    });
}

mod live_bindings {
    wasmtime::component::bindgen!({
        world: "agmsg:storage/storage-live@1.1.0",
        path: ["../wit/host", "../wit/storage"],
        with: {
            "agmsg:storage/types": super::bindings::agmsg::storage::types,
        },
    });
}

/// The contract's types (`agmsg:storage/types`), as the host sees them.
pub use bindings::agmsg::storage::types as wit;
/// The optional `live` interface's own types (`wake`).
pub use live_bindings::exports::agmsg::storage::live::Wake;

/// The optional interface, looked up by semver-compatible name (any 1.x from 1.1.0 on).
const LIVE_INTERFACE: &str = "agmsg:storage/live@1.1.0";

/// A storage driver's instance: its `driver` exports, and its `live` exports when it offers them.
pub struct StorageWorld {
    driver: bindings::StorageDriver,
    live: Option<live_bindings::StorageLive>,
}

impl StorageWorld {
    /// The contract's ops.
    pub fn agmsg_storage_driver(&self) -> &bindings::exports::agmsg::storage::driver::Guest {
        self.driver.agmsg_storage_driver()
    }

    /// The optional `live` ops, if the driver exports them.
    pub fn live(&self) -> Option<&live_bindings::exports::agmsg::storage::live::Guest> {
        self.live.as_ref().map(|l| l.agmsg_storage_live())
    }
}

/// A pre-linked storage driver: where its exports are, found once at load.
pub struct StoragePre {
    instance_pre: InstancePre<HostState>,
    driver: bindings::StorageDriverIndices,
    /// `None`: the component does not export `agmsg:storage/live` (a 1.0.0 driver, or one that polls).
    live: Option<live_bindings::StorageLiveIndices>,
}

impl StoragePre {
    /// Whether the driver offers the optional `live` interface.
    pub fn offers_live(&self) -> bool {
        self.live.is_some()
    }
}

impl DriverWorld for StorageWorld {
    const AXIS: Axis = Axis::Storage;
    type Pre = StoragePre;

    fn pre(instance_pre: InstancePre<HostState>) -> wasmtime::Result<Self::Pre> {
        let driver = bindings::StorageDriverIndices::new(&instance_pre)?;
        // The probe: a component without the export has no `live`; one whose export has another shape
        // is refused, as a malformed `driver` is.
        let exports_live = instance_pre.component().get_export_index(None, LIVE_INTERFACE).is_some();
        let live = if exports_live { Some(live_bindings::StorageLiveIndices::new(&instance_pre)?) } else { None };
        Ok(StoragePre { instance_pre, driver, live })
    }

    fn instantiate(pre: &Self::Pre, store: &mut Store<HostState>) -> wasmtime::Result<Self> {
        let instance = pre.instance_pre.instantiate(&mut *store)?;
        let driver = pre.driver.load(&mut *store, &instance)?;
        let live = pre.live.as_ref().map(|indices| indices.load(&mut *store, &instance)).transpose()?;
        Ok(StorageWorld { driver, live })
    }
}
