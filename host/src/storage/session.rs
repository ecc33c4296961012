//! A store session: the protocol every storage command starts with. Resolve the store directory (the
//! team's partition, as agmsg does), the active driver and the runtime, and open the store for the driver
//! (or an empty stand-in where a read-only op finds no store, so that it never creates the user's).

use std::path::PathBuf;

use super::location::{self, StorePlace};
use super::{Storage, StorageError};
use crate::runtime::sandbox::StoreDir;
use crate::runtime::{DriverSource, Runtime};

/// A resolved store: where it is, which driver, and the runtime to run it in.
pub struct StoreSession {
    pub runtime: Runtime,
    pub source: DriverSource,
    pub dir: PathBuf,
    /// The directory the driver is granted as its store, held open.
    pub grant: StoreDir,
    /// An empty directory granted instead of a store that does not exist (removed on drop).
    empty_stand_in: Option<tempfile::TempDir>,
}

impl StoreSession {
    /// Resolve the store of `team` (its partition) and the active driver, as agmsg does; create the
    /// store directory when `create`.
    pub fn resolve(
        store_flag: Option<PathBuf>,
        driver_flag: Option<String>,
        team: Option<&str>,
        create: bool,
    ) -> Result<StoreSession, StorageError> {
        let place = store_place(store_flag, team)?;
        let source = super::source::resolve_at(&location::storage_driver(driver_flag)?, place.partition.as_deref(), None)?;
        Self::open_at(place, source, create)
    }

    /// [`StoreSession::resolve`] with the driver already resolved (for the shared store, or the
    /// partition of `team`, which `source` must have been resolved for).
    pub fn open(store_flag: Option<PathBuf>, source: DriverSource, team: Option<&str>, create: bool) -> Result<StoreSession, StorageError> {
        Self::open_at(store_place(store_flag, team)?, source, create)
    }

    fn open_at(place: StorePlace, source: DriverSource, create: bool) -> Result<StoreSession, StorageError> {
        let opened = place.open(create)?;
        let runtime = Runtime::from_env().map_err(StorageError::runtime)?;
        // check/describe on a store that does not exist yet get an empty private directory (removed
        // afterwards) instead, so that they never create the user's store.
        let (grant, empty) = match opened {
            Some(dir) => (dir, None),
            None => {
                let empty = tempfile::Builder::new()
                    .prefix("agmsg-host-empty-")
                    .tempdir()
                    .map_err(|e| StorageError::runtime(format!("cannot create an empty sandbox directory: {e}")))?;
                let dir = StoreDir::open(empty.path())
                    .map_err(|e| StorageError::runtime(format!("cannot open an empty sandbox directory: {e}")))?;
                (dir, Some(empty))
            }
        };
        Ok(StoreSession { runtime, source, dir: place.path(), grant, empty_stand_in: empty })
    }

    /// Load the driver on this store (its instance is created on the first call).
    pub fn driver(&self) -> Result<Storage<'_>, StorageError> {
        Storage::open(&self.runtime, &self.source, self.grant.clone())
    }

    /// Whether the store directory exists (else the driver is granted an empty stand-in). A driver
    /// granted no store directory (postgres: its store is a database) is asked instead.
    pub fn exists(&self) -> bool {
        self.empty_stand_in.is_none() || !self.source.capabilities.store()
    }
}

/// The store directory an op on `team` uses (its partition), as agmsg resolves it.
fn store_place(store_flag: Option<PathBuf>, team: Option<&str>) -> Result<StorePlace, StorageError> {
    let root = location::store_dir(store_flag)?;
    match team {
        Some(team) => location::partition(&root, team),
        None => Ok(StorePlace::shared(root)),
    }
}
