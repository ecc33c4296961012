//! The optional `resync` interface (capability `stage1-resync`): accepting a retention gap on agmsg's
//! `sync_resync_audits` table. `status` only reads (it creates no table, generation or binding, so asking
//! about a store that never synced changes nothing); `resync` is one transaction.

use agmsg_guest_sdk::storage::{Binding, RESYNC_REASON, ResyncAudit, ResyncReport, ResyncRequest, ResyncResult};
use rusqlite::{Connection, OptionalExtension, named_params};

use super::{Key, SyncError, protocol, schema, write_tx};

/// The binding's transport cursor and the audit of `floor`, if any, under the store's generation.
/// `None` (nothing created) when the store has no sync tables, no generation or no such binding.
pub fn status(conn: &Connection, b: &Binding, floor: &str) -> Result<Option<ResyncReport>, SyncError> {
    let tables: i64 = conn.query_row(
        "SELECT COUNT(*) FROM sqlite_master WHERE type='table' \
         AND name IN ('sync_store_metadata','sync_bindings','sync_resync_audits')",
        [],
        |r| r.get(0),
    )?;
    if tables != 3 {
        return Ok(None);
    }
    let Some(generation) = schema::generation(conn)? else { return Ok(None) };
    let row = conn
        .prepare_cached(
            "SELECT b.transport_cursor, a.expected_transport_cursor, a.accepted_floor, a.gap_start, a.gap_end, a.reason \
               FROM sync_bindings b LEFT JOIN sync_resync_audits a \
                 ON a.local_team=b.local_team AND a.server_instance_id=b.server_instance_id \
                AND a.remote_team_id=b.remote_team_id AND a.protocol_version=b.protocol_version \
                AND a.driver_generation=b.driver_generation AND a.accepted_floor=:floor \
              WHERE b.local_team=:team AND b.server_instance_id=:server AND b.remote_team_id=:remote \
                AND b.protocol_version=:protocol AND b.driver_generation=:generation",
        )?
        .query_row(
            named_params! {
                ":floor": floor, ":team": b.local_team, ":server": b.server_instance_id,
                ":remote": b.remote_team_id, ":protocol": protocol(b)?, ":generation": generation,
            },
            |r| {
                let cursor: String = r.get(0)?;
                let audit = match r.get::<_, Option<String>>(2)? {
                    None => None,
                    Some(accepted_floor) => Some(ResyncAudit {
                        expected_transport_cursor: r.get(1)?,
                        accepted_floor,
                        gap_start: r.get(3)?,
                        gap_end: r.get(4)?,
                        reason: r.get(5)?,
                    }),
                };
                Ok((cursor, audit))
            },
        )
        .optional()?;
    Ok(row.map(|(transport_cursor, audit)| ResyncReport { driver_generation: generation, transport_cursor, audit }))
}

/// Record the accepted gap and move the transport cursor to the floor, in one transaction, only while
/// the cursor is still the expected one; an audit for the same floor already there fails (it is
/// immutable) and changes nothing.
pub fn resync(conn: &Connection, b: &Binding, request: &ResyncRequest) -> Result<ResyncResult, SyncError> {
    let protocol = protocol(b)?;
    let expected: i64 = request
        .expected_transport_cursor
        .parse()
        .map_err(|_| SyncError::Runtime(format!("resync: invalid expected cursor {:?}", request.expected_transport_cursor)))?;
    let gap_start =
        expected.checked_add(1).ok_or_else(|| SyncError::Runtime("resync: the expected cursor has no successor".into()))?.to_string();
    write_tx(conn, |conn| {
        let generation = schema::ensure(conn)?;
        let key = Key::new(b, protocol, generation);
        let moved = conn
            .prepare_cached(
                "UPDATE sync_bindings SET transport_cursor=:floor WHERE local_team=:team AND server_instance_id=:server \
                 AND remote_team_id=:remote AND protocol_version=:protocol AND driver_generation=:generation \
                 AND transport_cursor=:expected",
            )?
            .execute(named_params! {
                ":floor": request.min_available_seq, ":team": key.team, ":server": key.server, ":remote": key.remote,
                ":protocol": key.protocol, ":generation": key.generation, ":expected": request.expected_transport_cursor,
            })?;
        if moved != 1 {
            return Err(SyncError::Runtime(format!(
                "resync: the binding's transport cursor is not {} (or the binding does not exist)",
                request.expected_transport_cursor
            )));
        }
        let inserted = conn
            .prepare_cached(
                "INSERT OR IGNORE INTO sync_resync_audits(local_team, server_instance_id, remote_team_id, protocol_version, \
                   driver_generation, expected_transport_cursor, accepted_floor, gap_start, gap_end, reason, accepted_at) \
                 VALUES(:team, :server, :remote, :protocol, :generation, :expected, :floor, :gap_start, :floor, :reason, \
                   strftime('%Y-%m-%dT%H:%M:%fZ','now'))",
            )?
            .execute(named_params! {
                ":team": key.team, ":server": key.server, ":remote": key.remote, ":protocol": key.protocol,
                ":generation": key.generation, ":expected": request.expected_transport_cursor,
                ":floor": request.min_available_seq, ":gap_start": gap_start, ":reason": RESYNC_REASON,
            })?;
        if inserted != 1 {
            return Err(SyncError::Runtime(format!("resync: the gap up to {} was already accepted", request.min_available_seq)));
        }
        super::crash_point("resync:before-commit");
        Ok(ResyncResult {
            driver_generation: key.generation.clone(),
            audit: ResyncAudit {
                expected_transport_cursor: request.expected_transport_cursor.clone(),
                accepted_floor: request.min_available_seq.clone(),
                gap_start: gap_start.clone(),
                gap_end: request.min_available_seq.clone(),
                reason: RESYNC_REASON.into(),
            },
        })
    })
}
