//! The optional `purge` interface (`agmsg:storage` 1.2.0): delete everything the granted store holds.

use super::optional_bindings::purge::exports::agmsg::storage::purge::Guest as PurgeGuest;
use super::{Component, DriverError, StorageDriver, with_driver};

/// The optional `purge` interface (`agmsg:storage` 1.2.0): deleting everything the granted store holds,
/// for a driver whose store is not a directory the host can remove (a database). Register it with
/// [`export_storage_purge!`](crate::export_storage_purge) next to
/// [`export_storage_driver!`](crate::export_storage_driver). `agmsg-host driver test` calls it on each
/// rule's store when the rule ends.
pub trait PurgeDriver {
    /// Delete every record of this store (and nothing of any other), as if it had never been
    /// initialized; a store that does not exist is already purged.
    fn purge_store(&self) -> Result<(), DriverError>;
}

/// Register `$driver` (the type given to [`export_storage_driver!`](crate::export_storage_driver), which
/// also implements [`PurgeDriver`]) as this component's `agmsg:storage/purge` export (1.2.0).
#[macro_export]
macro_rules! export_storage_purge {
    ($driver:ty) => {
        $crate::__export_storage_optional!($driver, purge);
    };
}

impl<D: StorageDriver + PurgeDriver + Default + 'static> PurgeGuest for Component<D> {
    fn purge_store() -> Result<(), DriverError> {
        with_driver::<D, _>(|d| d.purge_store())
    }
}
