//! The optional `read-state` interface (`agmsg:storage` 1.2.0, capability `stage2-read-state`): agmsg's
//! Stage-2 read-state synchronization, beside [`SyncDriver`](super::SyncDriver), keyed by the `sync`
//! binding ([`Binding`]) as `resync` is.

use super::optional_bindings::read_state::exports::agmsg::storage::read_state::{self as read_wit, Guest as ReadStateGuest};
use super::sync::{check_sequence, check_window, check_wire_id, le, refuse, sync_binding};
use super::{Binding, Component, DriverError, StorageDriver, with_driver};

pub use super::optional_bindings::read_state::exports::agmsg::storage::read_state::{
    ApplyResult as ReadApplyResult, Blocked, BlockedReason, Exact, Frontier, Member, Prepared, ReadContext, Snapshot,
};

/// The most members (and local agents) a read context holds: agmsg's bound.
pub const READ_MEMBERS_MAX: usize = 1000;

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

/// Register `$driver` (which also implements [`ReadStateDriver`]) as this component's
/// `agmsg:storage/read-state` export (1.2.0).
#[macro_export]
macro_rules! export_storage_read_state {
    ($driver:ty) => {
        $crate::__export_storage_optional!($driver, read_state);
    };
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

impl<D: StorageDriver + ReadStateDriver + Default + 'static> ReadStateGuest for Component<D> {
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
