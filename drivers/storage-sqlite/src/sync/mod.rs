//! The optional `sync` interface (agmsg:storage 1.2.0): agmsg's Stage-1 remote sync on agmsg's own
//! `sync_*` tables, so a store agmsg's bash driver synced goes on syncing here and back.
//!
//! The ops are agmsg's `sqlite-sync.sh` transitions, statement for statement, with bound parameters
//! instead of quoted literals: [`push`] (prepare and reconcile) and [`pull`] (apply-pull and reprocess).
//! Each op's core takes a plain [`Connection`], so the crash boundaries are tested natively
//! ([`tests`]); the component wraps it in a [`Session`] (the store lock and the VFS connection).
//!
//! Crash semantics: every transition is one SQLite transaction, so a trap (which drops the instance
//! without committing) or a killed process leaves the store as it was before that transaction.

#[cfg(test)]
mod interop;
mod pull;
mod push;
mod read_state;
mod resync;
mod schema;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_stage2;

use agmsg_guest_sdk::storage::{
    Binding, DriverError, PageKey, PrepareRequest, PullStage, PushAck, PushCandidate, ReprocessCandidate, ReprocessPage, ReprocessScope,
    SyncDriver, SyncPages, SyncState,
};
use rusqlite::{CachedStatement, Connection, ToSql};

use crate::{Session, Sqlite, sql_error};

pub use push::Sealer;

/// A failure inside a sync op, turned into the contract's error at the interface.
#[derive(Debug)]
pub enum SyncError {
    /// 13.
    Runtime(String),
    /// 12: the store disagrees with what it is told (reconcile's refused batch).
    Corrupt(String),
    Sql(rusqlite::Error),
}

impl From<rusqlite::Error> for SyncError {
    fn from(e: rusqlite::Error) -> Self {
        SyncError::Sql(e)
    }
}

impl From<SyncError> for DriverError {
    fn from(e: SyncError) -> Self {
        match e {
            SyncError::Runtime(m) => DriverError::runtime(m),
            SyncError::Corrupt(m) => DriverError::corrupt(m),
            SyncError::Sql(e) => sql_error(e),
        }
    }
}

impl std::fmt::Display for SyncError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SyncError::Runtime(m) | SyncError::Corrupt(m) => f.write_str(m),
            SyncError::Sql(e) => write!(f, "sqlite: {e}"),
        }
    }
}

/// A binding as the tables key it: team, server, remote, protocol and the store's generation.
#[derive(Clone, Debug)]
pub struct Key {
    pub team: String,
    pub server: String,
    pub remote: String,
    pub protocol: i64,
    pub generation: String,
}

impl Key {
    /// `b`'s key under the store's `generation`, its protocol version read by [`protocol`].
    pub fn new(b: &Binding, protocol: i64, generation: String) -> Key {
        Key { team: b.local_team.clone(), server: b.server_instance_id.clone(), remote: b.remote_team_id.clone(), protocol, generation }
    }

    /// The key as the named parameters `:team`, `:server`, `:remote`, `:protocol` and `:generation`.
    pub fn named(&self) -> [(&'static str, &dyn ToSql); 5] {
        [
            (":team", &self.team),
            (":server", &self.server),
            (":remote", &self.remote),
            (":protocol", &self.protocol),
            (":generation", &self.generation),
        ]
    }
}

/// Bind those of `values` that `stmt` names: an op's statements each use a subset of its parameters.
pub fn bind_named<'v>(
    stmt: &mut CachedStatement<'_>,
    values: impl IntoIterator<Item = &'v (&'v str, &'v dyn ToSql)>,
) -> rusqlite::Result<()> {
    for (name, value) in values {
        if let Some(index) = stmt.parameter_index(name)? {
            stmt.raw_bind_parameter(index, value)?;
        }
    }
    Ok(())
}

/// The binding's protocol version as the tables hold it (a number).
pub fn protocol(b: &Binding) -> Result<i64, SyncError> {
    b.protocol_version.parse().map_err(|_| SyncError::Runtime(format!("sync: invalid protocol version {:?}", b.protocol_version)))
}

/// A new lowercase UUIDv4 (wire ids, the store generation), from WASI's random source in a component.
pub fn new_uuid4() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A connection a sync op runs on: the component's [`Session`], or a plain one in native tests.
pub trait Db {
    fn db(&self) -> &Connection;
}

impl Db for Session {
    fn db(&self) -> &Connection {
        self.conn()
    }
}

impl Db for Connection {
    fn db(&self) -> &Connection {
        self
    }
}

/// Run `f` in one `BEGIN IMMEDIATE` transaction: committed if it succeeds, rolled back if not.
pub fn write_tx<T>(conn: &Connection, f: impl FnOnce(&Connection) -> Result<T, SyncError>) -> Result<T, SyncError> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    match f(conn) {
        Ok(value) => {
            conn.execute_batch("COMMIT")?;
            Ok(value)
        }
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// Run `f` in a `BEGIN` (read) transaction that is left open when it succeeds, for the [`Pages`] of its
/// answer to end with their last slice; rolled back if it fails.
pub fn read_tx<T>(conn: &Connection, f: impl FnOnce(&Connection) -> Result<T, SyncError>) -> Result<T, SyncError> {
    conn.execute_batch("BEGIN")?;
    let answer = f(conn);
    if answer.is_err() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    answer
}

/// Create the sync tables if needed and key the binding with the store's generation (one transaction).
pub fn open_binding(conn: &Connection, b: &Binding) -> Result<Key, SyncError> {
    let protocol = protocol(b)?;
    write_tx(conn, |conn| Ok(Key::new(b, protocol, schema::ensure(conn)?)))
}

/// The binding's `sync_state` record.
pub fn state(conn: &Connection, key: &Key) -> Result<SyncState, SyncError> {
    let cursor: String = conn
        .prepare_cached(
            "SELECT transport_cursor FROM sync_bindings WHERE local_team=?1 AND server_instance_id=?2 \
             AND remote_team_id=?3 AND protocol_version=?4 AND driver_generation=?5",
        )?
        .query_row(rusqlite::params![key.team, key.server, key.remote, key.protocol, key.generation], |r| r.get(0))?;
    Ok(SyncState { driver_generation: key.generation.clone(), transport_cursor: cursor })
}

/// The sealer of the component: agmsg's envelopes, sealed inside the sandbox.
fn component_sealer() -> Box<Sealer<'static>> {
    Box::new(push::seal_with_crate)
}

/// `prepare-push` as the component runs it on `session` (its sealer; `none` envelopes, new reservations
/// allowed), every candidate read in slices of 4 KiB: for the fuzz check ([`crate::fuzz_check`]).
#[cfg(any(test, fuzzing))]
pub fn prepare_push_all(session: Session, binding: &Binding) -> Result<(SyncState, Vec<PushCandidate>), DriverError> {
    let request =
        PrepareRequest { envelope_v: 1, profile: agmsg_guest_sdk::storage::WriteProfile::None, max_blob_bytes: 1 << 16, allow_new: true };
    let mut sealer = component_sealer();
    let (state, mut pages) = push::prepare(session, binding, 100, &request, &mut *sealer)?;
    let mut candidates = Vec::new();
    loop {
        let page = pages.next_page(4096)?;
        if page.is_empty() {
            return Ok((state, candidates));
        }
        candidates.extend(page);
    }
}

impl SyncDriver for Sqlite {
    fn prepare_push(
        &self,
        binding: &Binding,
        limit: u32,
        request: &PrepareRequest,
    ) -> Result<(SyncState, Box<dyn SyncPages<PushCandidate>>), DriverError> {
        let session = Session::open()?;
        let mut sealer = component_sealer();
        let (state, pages) = push::prepare(session, binding, limit, request, &mut *sealer)?;
        Ok((state, Box::new(pages)))
    }

    fn reconcile_push(&self, binding: &Binding, acks: &[PushAck]) -> Result<i64, DriverError> {
        let session = Session::open()?;
        Ok(push::reconcile(session.conn(), binding, acks)?)
    }

    fn apply_pull(&self, binding: &Binding) -> Result<Box<dyn PullStage>, DriverError> {
        let session = Session::open()?;
        Ok(Box::new(pull::begin(session, binding)?))
    }

    fn reprocess(
        &self,
        binding: &Binding,
        limit: u32,
        after: Option<&PageKey>,
        scope: ReprocessScope,
    ) -> Result<(ReprocessPage, Box<dyn SyncPages<ReprocessCandidate>>), DriverError> {
        let session = Session::open()?;
        let (page, pages) = pull::reprocess(session, binding, limit, after, scope)?;
        Ok((page, Box::new(pages)))
    }
}

impl agmsg_guest_sdk::storage::ResyncDriver for Sqlite {
    fn resync_status(
        &self,
        binding: &Binding,
        accepted_floor: &str,
    ) -> Result<Option<agmsg_guest_sdk::storage::ResyncReport>, DriverError> {
        // Read only: a store that does not exist yet is not made by asking about it.
        if std::fs::metadata(crate::db_path()).is_err() {
            return Ok(None);
        }
        let session = Session::read()?;
        Ok(resync::status(session.conn(), binding, accepted_floor)?)
    }

    fn resync(
        &self,
        binding: &Binding,
        request: &agmsg_guest_sdk::storage::ResyncRequest,
    ) -> Result<agmsg_guest_sdk::storage::ResyncResult, DriverError> {
        let session = Session::open()?;
        Ok(resync::resync(session.conn(), binding, request)?)
    }
}

impl agmsg_guest_sdk::storage::ReadStateDriver for Sqlite {
    fn prepare_read_state(
        &self,
        binding: &Binding,
        context: &agmsg_guest_sdk::storage::ReadContext,
    ) -> Result<agmsg_guest_sdk::storage::Prepared, DriverError> {
        let session = Session::open()?;
        Ok(read_state::prepare(session.conn(), binding, context)?)
    }

    fn apply_read_state(
        &self,
        binding: &Binding,
        page: &agmsg_guest_sdk::storage::Snapshot,
    ) -> Result<agmsg_guest_sdk::storage::ReadApplyResult, DriverError> {
        let session = Session::open()?;
        Ok(read_state::apply(session.conn(), binding, page)?)
    }

    fn block_read_state(&self, binding: &Binding, member_id: &str) -> Result<(), DriverError> {
        let session = Session::open()?;
        Ok(read_state::block(session.conn(), binding, member_id)?)
    }

    fn unblock_read_state(&self, binding: &Binding, member_id: &str) -> Result<(), DriverError> {
        let session = Session::open()?;
        Ok(read_state::unblock(session.conn(), binding, member_id)?)
    }
}

/// Crash injection for the native tests (the SDK's: a child aborts at `point`; nothing in a component).
pub use agmsg_guest_sdk::crash::crash_point;

/// After the legacy projection: the rows now mirrored by an event leave this driver's private
/// `legacy_unlinked` list, or history and unread would show them twice (once per branch).
pub fn forget_projected_legacy(conn: &Connection) -> Result<(), SyncError> {
    conn.execute("DELETE FROM legacy_unlinked WHERE id IN (SELECT legacy_id FROM events WHERE seq<0 AND legacy_id IS NOT NULL)", [])?;
    Ok(())
}

/// An answer read in slices (push or reprocess candidates) from the read transaction its op opened:
/// the keys were read up front (small), each item is read when its slice is asked for, and the read
/// transaction ends with the last slice (or when the pages are dropped with their connection).
pub struct Pages<D: Db, K, T> {
    db: D,
    key: Key,
    keys: std::vec::IntoIter<K>,
    stash: Option<T>,
    fetch: fn(&Connection, &Key, &K) -> Result<T, SyncError>,
    size: fn(&T) -> usize,
    open: bool,
}

impl<D: Db, K, T> Pages<D, K, T> {
    pub fn new(db: D, key: Key, keys: Vec<K>, fetch: fn(&Connection, &Key, &K) -> Result<T, SyncError>, size: fn(&T) -> usize) -> Self {
        Pages { db, key, keys: keys.into_iter(), stash: None, fetch, size, open: true }
    }

    fn next_slice(&mut self, max_bytes: u32) -> Result<Vec<T>, SyncError> {
        let budget = max_bytes as usize;
        let (mut slice, mut bytes) = (Vec::new(), 0usize);
        loop {
            let item = match self.stash.take() {
                Some(item) => item,
                None => match self.keys.next() {
                    Some(k) => (self.fetch)(self.db.db(), &self.key, &k)?,
                    None => break,
                },
            };
            let size = (self.size)(&item);
            if !slice.is_empty() && bytes + size > budget {
                self.stash = Some(item);
                break;
            }
            bytes += size;
            slice.push(item);
        }
        if slice.is_empty() && self.open {
            self.open = false;
            self.db.db().execute_batch("COMMIT")?;
        }
        Ok(slice)
    }
}

impl<D: Db, K, T> SyncPages<T> for Pages<D, K, T> {
    fn next_page(&mut self, max_bytes: u32) -> Result<Vec<T>, DriverError> {
        Ok(self.next_slice(max_bytes)?)
    }
}
