//! The optional `resync` interface (`agmsg:storage` 1.2.0, capability `stage1-resync`): agmsg's
//! retention-gap resynchronization, beside [`SyncDriver`](super::SyncDriver). The interface carries its
//! own copy of the binding record; the SDK hands the driver the `sync` one ([`Binding`]), so a driver
//! keys all three the same way.

use super::optional_bindings::resync::exports::agmsg::storage::resync::{self as resync_wit, Guest as ResyncGuest};
use super::sync::{check_sequence, check_window, le, refuse, sync_binding};
use super::{Binding, Component, DriverError, StorageDriver, with_driver};

pub use super::optional_bindings::resync::exports::agmsg::storage::resync::{ResyncAudit, ResyncReport, ResyncRequest, ResyncResult};

/// The one reason a resync audit records.
pub const RESYNC_REASON: &str = "retention-gap-accepted";

/// The optional `resync` interface (capability `stage1-resync`): accept a retention gap the relay
/// reports. Register it with [`export_storage_resync!`](crate::export_storage_resync).
///
/// The SDK refuses, before the driver sees them, a binding as [`SyncDriver`](super::SyncDriver) does, a
/// floor or cursor that is not a canonical decimal, and a request whose expected cursor is not below
/// its floor or whose floor is above the current sequence.
pub trait ResyncDriver {
    /// Strictly read-only: the binding's generation and transport cursor and the audit of
    /// `accepted_floor`, if any. `None` when the store never synced or has no such binding; nothing is
    /// created.
    fn resync_status(&self, binding: &Binding, accepted_floor: &str) -> Result<Option<ResyncReport>, DriverError>;
    /// One transaction: record the audit (`gap_start` = expected + 1, `gap_end` = the floor) and move
    /// the transport cursor to the floor, only if the cursor is still the expected one and the floor was
    /// not accepted before; else change nothing and fail.
    fn resync(&self, binding: &Binding, request: &ResyncRequest) -> Result<ResyncResult, DriverError>;
}

/// Register `$driver` (which also implements [`ResyncDriver`]) as this component's
/// `agmsg:storage/resync` export (1.2.0).
#[macro_export]
macro_rules! export_storage_resync {
    ($driver:ty) => {
        $crate::__export_storage_optional!($driver, resync);
    };
}

impl<D: StorageDriver + ResyncDriver + Default + 'static> ResyncGuest for Component<D> {
    fn resync_status(b: resync_wit::Binding, accepted_floor: String) -> Result<Option<ResyncReport>, DriverError> {
        let b = sync_binding(b.local_team, b.server_instance_id, b.remote_team_id, b.protocol_version)?;
        check_sequence("accepted floor", &accepted_floor)?;
        with_driver::<D, _>(|d| d.resync_status(&b, &accepted_floor))
    }

    fn resync(b: resync_wit::Binding, request: ResyncRequest) -> Result<ResyncResult, DriverError> {
        let b = sync_binding(b.local_team, b.server_instance_id, b.remote_team_id, b.protocol_version)?;
        check_sequence("expected_transport_cursor", &request.expected_transport_cursor)?;
        check_window(&request.min_available_seq, &request.current_seq)?;
        if le(&request.min_available_seq, &request.expected_transport_cursor) {
            return Err(refuse("the accepted floor must be above the expected transport cursor"));
        }
        with_driver::<D, _>(|d| d.resync(&b, &request))
    }
}
