//! The optional `rename` interface (`agmsg:storage` 1.2.0): renames inside a store that keeps names in
//! its records.

#[allow(unused_imports)] // named by the docs
use super::StoreLock;
use super::optional_bindings::rename::exports::agmsg::storage::rename::Guest as RenameGuest;
use super::{Component, DriverError, StorageDriver, with_driver};

/// The optional `rename` interface (`agmsg:storage` 1.2.0): renaming an agent or a team inside a store
/// that keeps names in its records. Register it with [`export_storage_rename!`](crate::export_storage_rename)
/// next to [`export_storage_driver!`](crate::export_storage_driver). Hold the [`StoreLock`] for the
/// whole rewrite, and make it all-or-nothing: a rename cut short must leave every message readable
/// under one of the two names.
pub trait RenameDriver {
    /// Every message from or to `old` of `team`, its read marks and its read cursor now name `new`.
    fn rename_agent(&self, team: &str, old: &str, new: &str) -> Result<(), DriverError>;
    /// Every record of team `old` now names team `new`. The store is the new team's (the host moved a
    /// per-team store first).
    fn rename_team(&self, old: &str, new: &str) -> Result<(), DriverError>;
}

/// Register `$driver` (the type given to [`export_storage_driver!`](crate::export_storage_driver), which
/// also implements [`RenameDriver`]) as this component's `agmsg:storage/rename` export (1.2.0).
#[macro_export]
macro_rules! export_storage_rename {
    ($driver:ty) => {
        $crate::__export_storage_optional!($driver, rename);
    };
}

impl<D: StorageDriver + RenameDriver + Default + 'static> RenameGuest for Component<D> {
    fn rename_agent(team: String, old: String, new: String) -> Result<(), DriverError> {
        crate::check_name("team", &team)?;
        crate::check_name("agent", &old)?;
        crate::check_name("agent", &new)?;
        with_driver::<D, _>(|d| d.rename_agent(&team, &old, &new))
    }
    fn rename_team(old: String, new: String) -> Result<(), DriverError> {
        crate::check_name("team", &old)?;
        crate::check_name("team", &new)?;
        with_driver::<D, _>(|d| d.rename_team(&old, &new))
    }
}
