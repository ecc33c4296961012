//! Prepare-push and reconcile-push (agmsg's `storage_sync_prepare_push` / `_reconcile_push`).

use std::collections::BTreeSet;

use agmsg_guest_sdk::storage::{Binding, Envelope, PrepareRequest, PushAck, PushCandidate, SyncState, WriteProfile};
use rusqlite::{Connection, OptionalExtension, params};

use super::{Db, Key, Pages, SyncError, crash_point, new_uuid4, open_binding, read_tx, schema, state, write_tx};

/// Reservations commit in groups rather than one transaction each (agmsg's bounds): what a crash
/// mid-page makes the next prepare seal again is at most this many messages or this much blob.
const GROUP_MESSAGES: usize = 50;
const GROUP_BYTES: usize = 128 * 1024;

/// What one message's seal needs (agmsg's `sync_seal` request), the timestamp already in agmsg's
/// six-digit form.
pub struct SealRequest<'a> {
    pub envelope_v: u32,
    pub profile: &'a WriteProfile,
    pub max_blob_bytes: u64,
    pub wire_id: &'a str,
    /// The remote team id (the envelope's context names it).
    pub team_id: &'a str,
    pub protocol_version: i64,
    pub body: &'a str,
    pub created_at: &'a str,
    pub from_agent: &'a str,
    pub to_agent: &'a str,
}

/// Seals one message: its envelope's base64 blob, or why it cannot be sealed.
pub type Sealer<'s> = dyn FnMut(&SealRequest<'_>) -> Result<String, String> + 's;

/// The component's sealer: agmsg's `sealEnvelope` inside the sandbox (the `none` profile byte for byte,
/// age-v1 to the given public recipients), through the workspace's seal crate.
pub fn seal_with_crate(r: &SealRequest<'_>) -> Result<String, String> {
    let (cipher, key_id, recipients): (&str, Option<&str>, &[String]) = match r.profile {
        WriteProfile::None => ("none", None, &[]),
        WriteProfile::AgeV1(age) => ("age-v1", Some(age.key_id.as_str()), &age.recipients),
    };
    let protocol_version = u32::try_from(r.protocol_version).map_err(|_| format!("unsupported protocol version {}", r.protocol_version))?;
    let message = agmsg_sync_seal::Message { body: r.body, created_at: r.created_at, from_agent: r.from_agent, to_agent: r.to_agent };
    let request = agmsg_sync_seal::SealRequest {
        envelope_v: r.envelope_v,
        cipher,
        key_id,
        recipients,
        max_blob_bytes: r.max_blob_bytes,
        team_id: r.team_id,
        wire_id: r.wire_id,
        protocol_version,
    };
    agmsg_sync_seal::seal(&message, &request).map(|envelope| envelope.blob).map_err(|e| e.to_string())
}

/// agmsg's seal input: a `...:SSZ` timestamp gains a six-digit fraction; anything else goes as it is.
pub fn seal_timestamp(at: &str) -> String {
    agmsg_sync_seal::canonical_created_at(at).into_owned()
}

fn cipher_of(profile: &WriteProfile) -> (&'static str, Option<&str>) {
    match profile {
        WriteProfile::None => ("none", None),
        WriteProfile::AgeV1(age) => ("age-v1", Some(age.key_id.as_str())),
    }
}

/// A message's `body, at, from_agent, to_agent` (the nullable columns as agmsg's schema has them).
type MessageRow = (Option<String>, String, Option<String>, Option<String>);

struct Sealed {
    position: i64,
    local_id: String,
    wire_id: String,
    blob: String,
}

/// Publish a group of sealed reservations: each wire id with its envelope, in one transaction. `OR
/// IGNORE`: a concurrent sealer that committed first wins, and the answer re-reads the winner. A
/// message its recipient has already read gets its read alias in the same transaction.
fn commit_group(conn: &Connection, key: &Key, request: &PrepareRequest, group: &[Sealed]) -> Result<(), SyncError> {
    let (cipher, key_id) = cipher_of(&request.profile);
    write_tx(conn, |conn| {
        for s in group {
            conn.prepare_cached(
                "INSERT OR IGNORE INTO sync_messages(local_team, server_instance_id, remote_team_id, protocol_version, \
                 driver_generation, local_position, local_id, wire_id, envelope_v, cipher, key_id, blob, direction) \
                 VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 'push')",
            )?
            .execute(params![
                key.team,
                key.server,
                key.remote,
                key.protocol,
                key.generation,
                s.position,
                s.local_id,
                s.wire_id,
                request.envelope_v,
                cipher,
                key_id,
                s.blob
            ])?;
            conn.prepare_cached(
                "INSERT OR IGNORE INTO sync_read_aliases(local_team, server_instance_id, remote_team_id, \
                 protocol_version, driver_generation, agent, local_id, wire_id, server_seq) \
                 SELECT m.local_team, m.server_instance_id, m.remote_team_id, m.protocol_version, m.driver_generation, \
                        e.to_agent, m.local_id, m.wire_id, m.server_seq \
                   FROM sync_messages m JOIN events e ON e.seq=m.local_position \
                  WHERE m.local_team=?1 AND m.server_instance_id=?2 AND m.remote_team_id=?3 AND m.protocol_version=?4 \
                    AND m.driver_generation=?5 AND m.local_position=?6 \
                    AND EXISTS(SELECT 1 FROM events r WHERE r.type='message_read' AND r.team=e.team \
                               AND r.agent=e.to_agent AND r.msg_id=e.id)",
            )?
            .execute(params![key.team, key.server, key.remote, key.protocol, key.generation, s.position])?;
        }
        crash_point("prepare:before-group-commit");
        Ok(())
    })
}

/// Reserve and seal up to `limit` unacknowledged messages of the team after the push cursor, then
/// answer the state and every unacknowledged reservation (up to `limit`) from one read snapshot.
///
/// A message that cannot be sealed stays unreserved and the op fails (13) after the others committed,
/// as agmsg's does; a crash between a seal and its group's commit publishes nothing of that group.
pub fn prepare<D: Db>(
    db: D,
    b: &Binding,
    limit: u32,
    request: &PrepareRequest,
    sealer: &mut Sealer<'_>,
) -> Result<(SyncState, Pages<D, i64, PushCandidate>), SyncError> {
    let conn = db.db();
    let key = open_binding(conn, b)?;
    write_tx(conn, |conn| {
        schema::project_legacy(conn, &key.team)?;
        crate::sync::forget_projected_legacy(conn)?;
        schema::ensure_binding(conn, &key)?;
        schema::rewind_to_legacy(conn, &key.team)
    })?;

    // Positions and ids only: a body is fetched when its turn comes, so a page of large bodies is
    // never in memory at once.
    let pending: Vec<(i64, String)> = conn
        .prepare_cached(
            "SELECT e.seq, e.id, m.wire_id IS NOT NULL FROM events e \
               JOIN sync_bindings b ON b.local_team=?1 AND b.server_instance_id=?2 AND b.remote_team_id=?3 \
                AND b.protocol_version=?4 AND b.driver_generation=?5 \
               LEFT JOIN sync_messages m ON m.local_team=b.local_team AND m.server_instance_id=b.server_instance_id \
                AND m.remote_team_id=b.remote_team_id AND m.protocol_version=b.protocol_version \
                AND m.driver_generation=b.driver_generation AND m.local_position=e.seq \
              WHERE e.type='message_sent' AND e.team=?1 AND e.seq>b.push_cursor AND m.server_seq IS NULL \
                AND (?6 OR m.wire_id IS NOT NULL) \
              ORDER BY e.seq LIMIT ?7",
        )?
        .query_map(params![key.team, key.server, key.remote, key.protocol, key.generation, request.allow_new, limit], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, bool>(2)?))
        })?
        .filter_map(|row| match row {
            Ok((seq, id, false)) => Some(Ok((seq, id))),
            Ok(_) => None,
            Err(e) => Some(Err(e)),
        })
        .collect::<rusqlite::Result<_>>()?;

    let mut group: Vec<Sealed> = Vec::new();
    let mut group_bytes = 0usize;
    let mut unsealed: Vec<String> = Vec::new();
    for (position, local_id) in pending {
        let row: Option<MessageRow> = conn
            .prepare_cached("SELECT body, at, from_agent, to_agent FROM events WHERE seq=?1")?
            .query_row([position], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .optional()?;
        let Some((body, at, from, to)) = row else { continue };
        let body = body.unwrap_or_default();
        if body.is_empty() {
            unsealed.push(format!("{position} (empty message body)"));
            continue;
        }
        let wire_id = new_uuid4();
        let created_at = seal_timestamp(&at);
        let sealed = sealer(&SealRequest {
            envelope_v: request.envelope_v,
            profile: &request.profile,
            max_blob_bytes: request.max_blob_bytes,
            wire_id: &wire_id,
            team_id: &key.remote,
            protocol_version: key.protocol,
            body: &body,
            created_at: &created_at,
            from_agent: from.as_deref().unwrap_or_default(),
            to_agent: to.as_deref().unwrap_or_default(),
        });
        let blob = match sealed {
            Ok(blob) if !blob.is_empty() => blob,
            Ok(_) => {
                unsealed.push(format!("{position} (empty envelope)"));
                continue;
            }
            Err(why) => {
                unsealed.push(format!("{position} ({why})"));
                continue;
            }
        };
        crash_point("prepare:after-seal");
        group_bytes += blob.len();
        group.push(Sealed { position, local_id, wire_id, blob });
        if group.len() >= GROUP_MESSAGES || group_bytes >= GROUP_BYTES {
            commit_group(conn, &key, request, &group)?;
            group.clear();
            group_bytes = 0;
        }
    }
    if !group.is_empty() {
        commit_group(conn, &key, request, &group)?;
    }
    if !unsealed.is_empty() {
        return Err(SyncError::Runtime(format!(
            "sync: {} message(s) could not be sealed and stay unreserved: position {}",
            unsealed.len(),
            unsealed.join(", position ")
        )));
    }

    // The answer: re-read from committed rows (so byte-stable), in one read transaction that the pages
    // keep until the last one.
    let (state, positions) = read_tx(conn, |conn| {
        let state = state(conn, &key)?;
        let positions: Vec<i64> = conn
            .prepare_cached(
                "SELECT m.local_position FROM sync_messages m JOIN sync_bindings b \
                   ON b.local_team=m.local_team AND b.server_instance_id=m.server_instance_id \
                  AND b.remote_team_id=m.remote_team_id AND b.protocol_version=m.protocol_version \
                  AND b.driver_generation=m.driver_generation \
                WHERE m.local_team=?1 AND m.server_instance_id=?2 AND m.remote_team_id=?3 AND m.protocol_version=?4 \
                  AND m.driver_generation=?5 AND m.local_position>b.push_cursor AND m.server_seq IS NULL \
                ORDER BY m.local_position LIMIT ?6",
            )?
            .query_map(params![key.team, key.server, key.remote, key.protocol, key.generation, limit], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        Ok((state, positions))
    })?;
    Ok((state, Pages::new(db, key, positions, fetch_candidate, |c: &PushCandidate| c.envelope.blob.len())))
}

fn fetch_candidate(conn: &Connection, key: &Key, position: &i64) -> Result<PushCandidate, SyncError> {
    Ok(conn
        .prepare_cached(
            "SELECT local_id, wire_id, envelope_v, cipher, key_id, blob FROM sync_messages \
             WHERE local_team=?1 AND server_instance_id=?2 AND remote_team_id=?3 AND protocol_version=?4 \
               AND driver_generation=?5 AND local_position=?6",
        )?
        .query_row(params![key.team, key.server, key.remote, key.protocol, key.generation, position], |r| {
            Ok(PushCandidate {
                local_position: *position,
                local_id: r.get(0)?,
                wire_id: r.get(1)?,
                envelope: Envelope { v: r.get(2)?, cipher: r.get(3)?, key_id: r.get(4)?, blob: r.get(5)? },
            })
        })?)
}

/// Record the acknowledgements, all or nothing, and advance the push cursor through the contiguous
/// acknowledged prefix. An ack that names no reservation of the binding at its position, carries another
/// sequence than one already recorded, or repeats a position, wire id or sequence of the batch refuses
/// the whole batch (`corrupt_state`, agmsg's 12) and changes nothing.
pub fn reconcile(conn: &Connection, b: &Binding, acks: &[PushAck]) -> Result<i64, SyncError> {
    let key = open_binding(conn, b)?;
    let (mut positions, mut wires, mut seqs) = (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    for ack in acks {
        if !positions.insert(ack.local_position) || !wires.insert(&ack.wire_id) || !seqs.insert(&ack.server_seq) {
            return Err(SyncError::Corrupt(format!(
                "sync: the ack batch repeats a position, wire id or sequence (position {}, wire id {})",
                ack.local_position, ack.wire_id
            )));
        }
    }
    // The reservation an ack names: the binding's (?1-?5) row at the ack's position (?6) with its wire
    // id (?7); ?8 is the ack's sequence. The check and the write below name the same row.
    macro_rules! acked_reservation {
        () => {
            "local_team=?1 AND server_instance_id=?2 AND remote_team_id=?3 AND protocol_version=?4 \
             AND driver_generation=?5 AND local_position=?6 AND wire_id=?7"
        };
    }
    write_tx(conn, |conn| {
        for ack in acks {
            let ack_params =
                params![key.team, key.server, key.remote, key.protocol, key.generation, ack.local_position, ack.wire_id, ack.server_seq];
            let matches: bool = conn
                .prepare_cached(concat!(
                    "SELECT EXISTS(SELECT 1 FROM sync_messages WHERE ",
                    acked_reservation!(),
                    " AND (server_seq IS NULL OR server_seq=?8))"
                ))?
                .query_row(ack_params, |r| r.get(0))?;
            if !matches {
                return Err(SyncError::Corrupt(format!(
                    "sync: ack of wire id {} at position {} (server_seq {}) matches no reservation; nothing recorded",
                    ack.wire_id, ack.local_position, ack.server_seq
                )));
            }
            conn.prepare_cached(concat!("UPDATE sync_messages SET server_seq=?8 WHERE ", acked_reservation!()))?.execute(ack_params)?;
        }
        let binding = params![key.team, key.server, key.remote, key.protocol, key.generation];
        conn.prepare_cached(
            "UPDATE sync_read_aliases AS x SET server_seq=( \
               SELECT m.server_seq FROM sync_messages m \
                WHERE m.local_team=x.local_team AND m.server_instance_id=x.server_instance_id \
                  AND m.remote_team_id=x.remote_team_id AND m.protocol_version=x.protocol_version \
                  AND m.driver_generation=x.driver_generation AND m.local_id=x.local_id AND m.wire_id=x.wire_id) \
             WHERE x.local_team=?1 AND x.server_instance_id=?2 AND x.remote_team_id=?3 AND x.protocol_version=?4 \
               AND x.driver_generation=?5",
        )?
        .execute(binding)?;
        advance_push_cursor(conn, &key)?;
        crash_point("reconcile:before-commit");
        push_cursor(conn, &key)?.ok_or_else(|| SyncError::Corrupt("sync: reconcile for a binding that was never prepared".into()))
    })
}

/// Move the binding's push cursor to the end of the contiguous acknowledged prefix after it: agmsg's
/// `MAX(e.seq)` with no unacknowledged message in between, computed as one walk in local order that
/// stops at the first gap (agmsg's correlated query is quadratic in the messages after the cursor: 1,000
/// acknowledgements took longer than the call deadline).
fn advance_push_cursor(conn: &Connection, key: &Key) -> Result<(), SyncError> {
    let Some(start) = push_cursor(conn, key)? else {
        return Ok(());
    };
    let mut cursor = start;
    {
        let mut stmt = conn.prepare_cached(
            "SELECT e.seq, EXISTS(SELECT 1 FROM sync_messages gm WHERE gm.local_team=?1 AND gm.server_instance_id=?2 \
               AND gm.remote_team_id=?3 AND gm.protocol_version=?4 AND gm.driver_generation=?5 \
               AND gm.local_position=e.seq AND gm.server_seq IS NOT NULL) \
             FROM events e WHERE e.type='message_sent' AND e.team=?1 AND e.seq>?6 ORDER BY e.seq",
        )?;
        let mut rows = stmt.query(params![key.team, key.server, key.remote, key.protocol, key.generation, start])?;
        while let Some(row) = rows.next()? {
            if !row.get::<_, bool>(1)? {
                break;
            }
            cursor = row.get(0)?;
        }
    }
    if cursor != start {
        conn.prepare_cached(
            "UPDATE sync_bindings SET push_cursor=?6 WHERE local_team=?1 AND server_instance_id=?2 \
             AND remote_team_id=?3 AND protocol_version=?4 AND driver_generation=?5",
        )?
        .execute(params![key.team, key.server, key.remote, key.protocol, key.generation, cursor])?;
    }
    Ok(())
}

/// The binding's push cursor; none when the binding has no row (it was never prepared).
fn push_cursor(conn: &Connection, key: &Key) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached(
        "SELECT push_cursor FROM sync_bindings WHERE local_team=?1 AND server_instance_id=?2 \
         AND remote_team_id=?3 AND protocol_version=?4 AND driver_generation=?5",
    )?
    .query_row(params![key.team, key.server, key.remote, key.protocol, key.generation], |r| r.get(0))
    .optional()
}
