//! The storage axis's world as the host calls it: the bindings of `agmsg:storage/storage-driver`, which
//! share the `agmsg:host` interfaces of every axis (`runtime::caps::wit`), the bindings of the optional
//! `agmsg:storage/storage-live` (1.1.0) and of `storage-receipts` and `storage-rename` (1.2.0), which
//! share the first's types, and their [`DriverWorld`].
//!
//! A component built against 1.0.0 exports `agmsg:storage/driver@1.0.0` and no `live`: wasmtime finds
//! exports by semver-compatible name (`driver@1.1.0` is looked up as `driver@1`), so it loads, and
//! [`StorageWorld::live`] is `None`; the same holds for the 1.2.0 interfaces and 1.0.0/1.1.0 drivers.

use wasmtime::Store;
use wasmtime::component::InstancePre;

use crate::axis::Axis;
use crate::runtime::{DriverWorld, HostState};

mod bindings {
    wasmtime::component::bindgen!({
        world: "agmsg:storage/storage-driver@1.2.0",
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
        world: "agmsg:storage/storage-live@1.2.0",
        path: ["../wit/host", "../wit/storage"],
        with: {
            "agmsg:storage/types": super::bindings::agmsg::storage::types,
        },
    });
}

mod receipts_bindings {
    wasmtime::component::bindgen!({
        world: "agmsg:storage/storage-receipts@1.2.0",
        path: ["../wit/host", "../wit/storage"],
        with: {
            "agmsg:storage/types": super::bindings::agmsg::storage::types,
        },
    });
}

mod rename_bindings {
    wasmtime::component::bindgen!({
        world: "agmsg:storage/storage-rename@1.2.0",
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
/// The optional `receipts` interface's answer (`receipt`, `legacy-read`, `none`).
pub use receipts_bindings::exports::agmsg::storage::receipts::ReceiptState;

/// The optional interface, looked up by semver-compatible name (any 1.x from 1.1.0 on).
const LIVE_INTERFACE: &str = "agmsg:storage/live@1.1.0";
/// The optional 1.2.0 interfaces, looked up the same way (any 1.x from 1.2.0 on).
const RECEIPTS_INTERFACE: &str = "agmsg:storage/receipts@1.2.0";
const RENAME_INTERFACE: &str = "agmsg:storage/rename@1.2.0";

/// A storage driver's instance: its `driver` exports, and its `live` exports when it offers them.
pub struct StorageWorld {
    driver: bindings::StorageDriver,
    live: Option<live_bindings::StorageLive>,
    receipts: Option<receipts_bindings::StorageReceipts>,
    rename: Option<rename_bindings::StorageRename>,
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

    /// The optional `receipts` ops, if the driver exports them.
    pub fn receipts(&self) -> Option<&receipts_bindings::exports::agmsg::storage::receipts::Guest> {
        self.receipts.as_ref().map(|r| r.agmsg_storage_receipts())
    }

    /// The optional `rename` ops, if the driver exports them.
    pub fn rename(&self) -> Option<&rename_bindings::exports::agmsg::storage::rename::Guest> {
        self.rename.as_ref().map(|r| r.agmsg_storage_rename())
    }
}

/// A pre-linked storage driver: where its exports are, found once at load.
pub struct StoragePre {
    instance_pre: InstancePre<HostState>,
    driver: bindings::StorageDriverIndices,
    /// `None`: the component does not export `agmsg:storage/live` (a 1.0.0 driver, or one that polls).
    live: Option<live_bindings::StorageLiveIndices>,
    receipts: Option<receipts_bindings::StorageReceiptsIndices>,
    rename: Option<rename_bindings::StorageRenameIndices>,
}

impl StoragePre {
    /// Whether the driver offers the optional `live` interface.
    pub fn offers_live(&self) -> bool {
        self.live.is_some()
    }

    /// Whether the driver offers the optional `receipts` interface (1.2.0).
    pub fn offers_receipts(&self) -> bool {
        self.receipts.is_some()
    }

    /// Whether the driver offers the optional `rename` interface (1.2.0).
    pub fn offers_rename(&self) -> bool {
        self.rename.is_some()
    }
}

impl DriverWorld for StorageWorld {
    const AXIS: Axis = Axis::Storage;
    type Pre = StoragePre;

    fn pre(instance_pre: InstancePre<HostState>) -> wasmtime::Result<Self::Pre> {
        let driver = bindings::StorageDriverIndices::new(&instance_pre)?;
        // The probe: a component without the export has no `live`; one whose export has another shape
        // is refused, as a malformed `driver` is.
        let exports = |name: &str| instance_pre.component().get_export_index(None, name).is_some();
        let live = if exports(LIVE_INTERFACE) { Some(live_bindings::StorageLiveIndices::new(&instance_pre)?) } else { None };
        let receipts =
            if exports(RECEIPTS_INTERFACE) { Some(receipts_bindings::StorageReceiptsIndices::new(&instance_pre)?) } else { None };
        let rename = if exports(RENAME_INTERFACE) { Some(rename_bindings::StorageRenameIndices::new(&instance_pre)?) } else { None };
        Ok(StoragePre { instance_pre, driver, live, receipts, rename })
    }

    fn instantiate(pre: &Self::Pre, store: &mut Store<HostState>) -> wasmtime::Result<Self> {
        let instance = pre.instance_pre.instantiate(&mut *store)?;
        let driver = pre.driver.load(&mut *store, &instance)?;
        let live = pre.live.as_ref().map(|indices| indices.load(&mut *store, &instance)).transpose()?;
        let receipts = pre.receipts.as_ref().map(|indices| indices.load(&mut *store, &instance)).transpose()?;
        let rename = pre.rename.as_ref().map(|indices| indices.load(&mut *store, &instance)).transpose()?;
        Ok(StorageWorld { driver, live, receipts, rename })
    }
}
