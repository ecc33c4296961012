//! The optional `resync` and `read-state` interfaces (`agmsg:storage` 1.2.0, capabilities
//! `stage1-resync` and `stage2-read-state`): agmsg's retention-gap resynchronization and Stage-2
//! read-state synchronization, beside [`SyncDriver`](super::SyncDriver). Each interface carries its own
//! copy of the binding record; the SDK hands the driver the `sync` one ([`Binding`]), so a driver keys
//! all three the same way.

use super::{Binding, DriverError, StorageDriver, check_binding, check_sequence, check_wire_id, refuse, with_driver};
use crate::bindings::storage_read_state::exports::agmsg::storage::read_state::{self as read_wit, Guest as ReadStateGuest};
use crate::bindings::storage_resync::exports::agmsg::storage::resync::{self as resync_wit, Guest as ResyncGuest};

pub use crate::bindings::storage_read_state::exports::agmsg::storage::read_state::{
    ApplyResult as ReadApplyResult, Blocked, BlockedReason, Exact, Frontier, Member, Prepared, ReadContext, Snapshot,
};
pub use crate::bindings::storage_resync::exports::agmsg::storage::resync::{ResyncAudit, ResyncReport, ResyncRequest, ResyncResult};

/// The one reason a resync audit records.
pub const RESYNC_REASON: &str = "retention-gap-accepted";

/// The most members (and local agents) a read context holds: agmsg's bound.
pub const READ_MEMBERS_MAX: usize = 1000;

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

/// The optional `read-state` interface (capability `stage2-read-state`): which remote messages each
/// member read, both ways. Register it with [`export_storage_read_state!`](crate::export_storage_read_state).
///
/// The SDK refuses a floor above the current sequence, more than 1,000 members or local agents, a
/// member id that is not a lowercase UUIDv7, an empty name, a repeated local agent, a frontier beyond
/// the current sequence and a wire id that is not a lowercase UUIDv4.
pub trait ReadStateDriver {
    /// One transaction: upsert the members (a name no local agent has, or a member renamed on one side
    /// only, is blocked as `member-name-mismatch`), then derive each unblocked member's frontier and exact
    /// reads from local read marks.
    fn prepare_read_state(&self, binding: &Binding, context: &ReadContext) -> Result<Prepared, DriverError>;
    /// One transaction: max-merge the frontiers, union the exact reads, then mark read locally every
    /// imported, reconciled or pushed message they cover. A record for a member that is not active fails
    /// the whole page.
    fn apply_read_state(&self, binding: &Binding, page: &Snapshot) -> Result<ReadApplyResult, DriverError>;
    /// Block an active member's read state (`read-state-limit-exceeded`); an unknown member fails.
    fn block_read_state(&self, binding: &Binding, member_id: &str) -> Result<(), DriverError>;
    /// Lift that block; an unknown member fails.
    fn unblock_read_state(&self, binding: &Binding, member_id: &str) -> Result<(), DriverError>;
}

/// Register `$driver` (which also implements [`ResyncDriver`]) as this component's
/// `agmsg:storage/resync` export (1.2.0).
#[macro_export]
macro_rules! export_storage_resync {
    ($driver:ty) => {
        const _: () = {
            type __AgmsgResyncComponent = $crate::storage::Component<$driver>;
            #[cfg(target_arch = "wasm32")]
            $crate::bindings::storage_resync::export!(__AgmsgResyncComponent with_types_in $crate::bindings::storage_resync);
            #[cfg(not(target_arch = "wasm32"))]
            const _: fn(
                $crate::bindings::storage_resync::exports::agmsg::storage::resync::Binding,
                String,
            ) -> Result<Option<$crate::storage::ResyncReport>, $crate::storage::DriverError> =
                <__AgmsgResyncComponent as $crate::bindings::storage_resync::exports::agmsg::storage::resync::Guest>::resync_status;
        };
    };
}

/// Register `$driver` (which also implements [`ReadStateDriver`]) as this component's
/// `agmsg:storage/read-state` export (1.2.0).
#[macro_export]
macro_rules! export_storage_read_state {
    ($driver:ty) => {
        const _: () = {
            type __AgmsgReadStateComponent = $crate::storage::Component<$driver>;
            #[cfg(target_arch = "wasm32")]
            $crate::bindings::storage_read_state::export!(__AgmsgReadStateComponent with_types_in $crate::bindings::storage_read_state);
            #[cfg(not(target_arch = "wasm32"))]
            const _: fn(
                $crate::bindings::storage_read_state::exports::agmsg::storage::read_state::Binding,
                String,
            ) -> Result<(), $crate::storage::DriverError> =
                <__AgmsgReadStateComponent as $crate::bindings::storage_read_state::exports::agmsg::storage::read_state::Guest>::block;
        };
    };
}

fn sync_binding(local_team: String, server_instance_id: String, remote_team_id: String, protocol_version: String) -> Result<Binding, DriverError> {
    let b = Binding { local_team, server_instance_id, remote_team_id, protocol_version };
    check_binding(&b)?;
    Ok(b)
}

/// `a <= b` for canonical decimals (checked first).
fn le(a: &str, b: &str) -> bool {
    (a.len(), a) <= (b.len(), b)
}

/// A read-state floor and current sequence, floor <= current.
pub(super) fn check_window(floor: &str, current: &str) -> Result<(), DriverError> {
    check_sequence("min_available_seq", floor)?;
    check_sequence("current_seq", current)?;
    if !le(floor, current) {
        return Err(refuse(format!("min_available_seq {floor} is above current_seq {current}")));
    }
    Ok(())
}

fn check_member_id(id: &str) -> Result<(), DriverError> {
    if !super::is_lower_uuid(id, 7) {
        return Err(refuse(format!("invalid member id {id:?}: expected a lowercase UUIDv7")));
    }
    Ok(())
}

fn check_context(c: &ReadContext) -> Result<(), DriverError> {
    check_window(&c.min_available_seq, &c.current_seq)?;
    if c.members.len() > READ_MEMBERS_MAX || c.local_agents.len() > READ_MEMBERS_MAX {
        return Err(refuse(format!("a read context holds at most {READ_MEMBERS_MAX} members and local agents")));
    }
    for m in &c.members {
        check_member_id(&m.member_id)?;
        if m.name.is_empty() {
            return Err(refuse(format!("member {} has an empty name", m.member_id)));
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for a in &c.local_agents {
        if a.is_empty() || !seen.insert(a) {
            return Err(refuse(format!("local agent {a:?} is empty or repeated")));
        }
    }
    Ok(())
}

fn check_snapshot(s: &Snapshot) -> Result<(), DriverError> {
    check_window(&s.min_available_seq, &s.current_seq)?;
    for f in &s.frontiers {
        check_member_id(&f.member_id)?;
        check_sequence("frontier server_seq", &f.server_seq)?;
        if !le(&f.server_seq, &s.current_seq) {
            return Err(refuse(format!("frontier {} is above current_seq {}", f.server_seq, s.current_seq)));
        }
    }
    for x in &s.exacts {
        check_member_id(&x.member_id)?;
        check_wire_id(&x.wire_id)?;
    }
    Ok(())
}

impl<D: StorageDriver + ResyncDriver + Default + 'static> ResyncGuest for super::Component<D> {
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

impl<D: StorageDriver + ReadStateDriver + Default + 'static> ReadStateGuest for super::Component<D> {
    fn prepare(b: read_wit::Binding, context: ReadContext) -> Result<Prepared, DriverError> {
        let b = sync_binding(b.local_team, b.server_instance_id, b.remote_team_id, b.protocol_version)?;
        check_context(&context)?;
        with_driver::<D, _>(|d| d.prepare_read_state(&b, &context))
    }

    fn apply(b: read_wit::Binding, page: Snapshot) -> Result<ReadApplyResult, DriverError> {
        let b = sync_binding(b.local_team, b.server_instance_id, b.remote_team_id, b.protocol_version)?;
        check_snapshot(&page)?;
        with_driver::<D, _>(|d| d.apply_read_state(&b, &page))
    }

    fn block(b: read_wit::Binding, member_id: String) -> Result<(), DriverError> {
        let b = sync_binding(b.local_team, b.server_instance_id, b.remote_team_id, b.protocol_version)?;
        check_member_id(&member_id)?;
        with_driver::<D, _>(|d| d.block_read_state(&b, &member_id))
    }

    fn unblock(b: read_wit::Binding, member_id: String) -> Result<(), DriverError> {
        let b = sync_binding(b.local_team, b.server_instance_id, b.remote_team_id, b.protocol_version)?;
        check_member_id(&member_id)?;
        with_driver::<D, _>(|d| d.unblock_read_state(&b, &member_id))
    }
}
