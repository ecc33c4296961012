//! agmsg's Stage-1 tables (its `sqlite-sync.sh` `_sqlite_sync_schema`), the driver generation, the
//! one-time projection of legacy rows into the event log and the binding rows. Table and column names
//! are agmsg's: its `rename.sh` and its tests update them directly.

use rusqlite::{Connection, OptionalExtension, params};

use super::{Key, SyncError, new_uuid4};
use crate::schema::has_column;

/// Every sync table agmsg creates, Stage-2's included, so a store looks the same whoever synced it.
const SYNC_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sync_store_metadata (
  singleton INTEGER PRIMARY KEY CHECK(singleton=1),
  generation TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS sync_bindings (
  local_team TEXT NOT NULL,
  server_instance_id TEXT NOT NULL,
  remote_team_id TEXT NOT NULL,
  protocol_version INTEGER NOT NULL,
  driver_generation TEXT NOT NULL,
  push_cursor INTEGER NOT NULL DEFAULT 0,
  transport_cursor TEXT NOT NULL DEFAULT '0',
  PRIMARY KEY(local_team,server_instance_id,remote_team_id,
              protocol_version,driver_generation)
);
CREATE TABLE IF NOT EXISTS sync_messages (
  local_team TEXT NOT NULL,
  server_instance_id TEXT NOT NULL,
  remote_team_id TEXT NOT NULL,
  protocol_version INTEGER NOT NULL,
  driver_generation TEXT NOT NULL,
  local_position INTEGER NOT NULL,
  local_id TEXT NOT NULL,
  wire_id TEXT NOT NULL,
  envelope_v INTEGER NOT NULL,
  cipher TEXT NOT NULL,
  key_id TEXT,
  blob TEXT NOT NULL,
  server_seq TEXT,
  direction TEXT NOT NULL CHECK(direction IN ('push','pull')),
  PRIMARY KEY(local_team,server_instance_id,remote_team_id,
              protocol_version,driver_generation,local_position),
  UNIQUE(server_instance_id,remote_team_id,protocol_version,wire_id)
);
CREATE TABLE IF NOT EXISTS sync_quarantine (
  local_team TEXT NOT NULL,
  server_instance_id TEXT NOT NULL,
  remote_team_id TEXT NOT NULL,
  protocol_version INTEGER NOT NULL,
  driver_generation TEXT NOT NULL,
  server_seq TEXT NOT NULL,
  wire_id TEXT NOT NULL,
  server_received_at TEXT NOT NULL,
  envelope_v INTEGER NOT NULL,
  cipher TEXT NOT NULL,
  key_id TEXT,
  blob TEXT NOT NULL,
  status TEXT NOT NULL,
  policy_revision TEXT,
  local_security_revision TEXT,
  reason TEXT,
  PRIMARY KEY(server_instance_id,remote_team_id,protocol_version,wire_id),
  UNIQUE(server_instance_id,remote_team_id,protocol_version,server_seq)
);
CREATE TABLE IF NOT EXISTS sync_conflicts (
  conflict_id INTEGER PRIMARY KEY AUTOINCREMENT,
  local_team TEXT NOT NULL,
  server_instance_id TEXT NOT NULL,
  remote_team_id TEXT NOT NULL,
  protocol_version INTEGER NOT NULL,
  driver_generation TEXT NOT NULL,
  server_seq TEXT NOT NULL,
  wire_id TEXT NOT NULL,
  envelope_v INTEGER NOT NULL,
  cipher TEXT NOT NULL,
  key_id TEXT,
  blob TEXT NOT NULL,
  reason TEXT NOT NULL,
  observed_at TEXT NOT NULL,
  UNIQUE(server_instance_id,remote_team_id,protocol_version,
         server_seq,wire_id,reason)
);
CREATE TABLE IF NOT EXISTS sync_resync_audits (
  local_team TEXT NOT NULL,
  server_instance_id TEXT NOT NULL,
  remote_team_id TEXT NOT NULL,
  protocol_version INTEGER NOT NULL,
  driver_generation TEXT NOT NULL,
  expected_transport_cursor TEXT NOT NULL,
  accepted_floor TEXT NOT NULL,
  gap_start TEXT NOT NULL,
  gap_end TEXT NOT NULL,
  reason TEXT NOT NULL CHECK(reason='retention-gap-accepted'),
  accepted_at TEXT NOT NULL,
  PRIMARY KEY(local_team,server_instance_id,remote_team_id,
              protocol_version,driver_generation,accepted_floor)
);
CREATE TABLE IF NOT EXISTS sync_read_members (
  local_team TEXT NOT NULL,
  server_instance_id TEXT NOT NULL,
  remote_team_id TEXT NOT NULL,
  protocol_version INTEGER NOT NULL,
  driver_generation TEXT NOT NULL,
  member_id TEXT NOT NULL,
  agent TEXT NOT NULL,
  remote_agent TEXT NOT NULL,
  active INTEGER NOT NULL DEFAULT 1 CHECK(active IN (0,1)),
  name_mismatch INTEGER NOT NULL DEFAULT 0 CHECK(name_mismatch IN (0,1)),
  blocked_reason TEXT,
  remote_server_seq TEXT NOT NULL DEFAULT '0',
  min_available_seq TEXT NOT NULL DEFAULT '0',
  PRIMARY KEY(local_team,server_instance_id,remote_team_id,
              protocol_version,driver_generation,member_id),
  UNIQUE(local_team,server_instance_id,remote_team_id,
         protocol_version,driver_generation,agent)
);
CREATE TABLE IF NOT EXISTS sync_read_remote_exact (
  local_team TEXT NOT NULL,
  server_instance_id TEXT NOT NULL,
  remote_team_id TEXT NOT NULL,
  protocol_version INTEGER NOT NULL,
  driver_generation TEXT NOT NULL,
  member_id TEXT NOT NULL,
  wire_id TEXT NOT NULL,
  PRIMARY KEY(local_team,server_instance_id,remote_team_id,
              protocol_version,driver_generation,member_id,wire_id)
);
CREATE TABLE IF NOT EXISTS sync_read_aliases (
  local_team TEXT NOT NULL,
  server_instance_id TEXT NOT NULL,
  remote_team_id TEXT NOT NULL,
  protocol_version INTEGER NOT NULL,
  driver_generation TEXT NOT NULL,
  agent TEXT NOT NULL,
  local_id TEXT NOT NULL,
  wire_id TEXT NOT NULL,
  server_seq TEXT,
  PRIMARY KEY(local_team,server_instance_id,remote_team_id,
              protocol_version,driver_generation,agent,local_id),
  UNIQUE(server_instance_id,remote_team_id,protocol_version,agent,wire_id)
);
CREATE TABLE IF NOT EXISTS sync_read_prepared (
  local_team TEXT NOT NULL,
  server_instance_id TEXT NOT NULL,
  remote_team_id TEXT NOT NULL,
  protocol_version INTEGER NOT NULL,
  driver_generation TEXT NOT NULL,
  member_id TEXT NOT NULL,
  server_seq TEXT NOT NULL,
  PRIMARY KEY(local_team,server_instance_id,remote_team_id,
              protocol_version,driver_generation,member_id)
);
";

/// This driver's private indexes (agmsg ignores them; its own writes keep them up to date). agmsg's
/// tables put `server_seq` and `status` after the envelope's blob, so a lookup that reads them walks the
/// blob's overflow pages: without these, apply-pull's sequence checks and reconcile's contiguous-prefix
/// query read every stored envelope once per message (quadratic: a 400-message page took 30 s).
const PRIVATE_INDEXES: &str = "
CREATE INDEX IF NOT EXISTS agmsg_host_sync_messages_position ON sync_messages(
  local_team, server_instance_id, remote_team_id, protocol_version, driver_generation, local_position,
  server_seq, wire_id);
CREATE INDEX IF NOT EXISTS agmsg_host_sync_messages_seq ON sync_messages(
  server_instance_id, remote_team_id, protocol_version, server_seq, wire_id);
CREATE INDEX IF NOT EXISTS agmsg_host_sync_quarantine_wire ON sync_quarantine(
  server_instance_id, remote_team_id, protocol_version, wire_id, status, server_seq);
CREATE INDEX IF NOT EXISTS agmsg_host_sync_quarantine_status ON sync_quarantine(
  server_instance_id, remote_team_id, protocol_version, status, local_team, driver_generation, server_seq,
  wire_id);
CREATE INDEX IF NOT EXISTS agmsg_host_sync_conflicts_wire ON sync_conflicts(
  server_instance_id, remote_team_id, protocol_version, wire_id);
";

/// agmsg's columns added to `sync_read_members` after its first release (its in-place migration).
const READ_MEMBERS_MIGRATION: &str = "
ALTER TABLE sync_read_members ADD COLUMN remote_agent TEXT NOT NULL DEFAULT '';
ALTER TABLE sync_read_members ADD COLUMN name_mismatch INTEGER NOT NULL DEFAULT 0
  CHECK(name_mismatch IN (0,1));
ALTER TABLE sync_read_members ADD COLUMN blocked_reason TEXT;
UPDATE sync_read_members SET remote_agent=agent;
";

/// Legacy rows are projected into `events` at `seq = id - OFFSET` (negative, below every live position,
/// stable for a given row): agmsg's constant, so both drivers project a row to the same position.
pub const LEGACY_SEQ_OFFSET: i64 = 1_000_000_000;
/// agmsg's marker that the projection ran.
const LEGACY_PROJECTED_KEY: &str = "legacy_push_projected_v1";

/// Create the sync tables (inside the caller's transaction), migrate `sync_read_members`, and answer the
/// store's persistent generation, made once.
pub fn ensure(conn: &Connection) -> Result<String, SyncError> {
    conn.execute_batch(SYNC_SCHEMA)?;
    conn.execute_batch(PRIVATE_INDEXES)?;
    if !has_column(conn, "sync_read_members", "remote_agent")? {
        conn.execute_batch(READ_MEMBERS_MIGRATION)?;
    }
    if let Some(generation) = generation(conn)? {
        return Ok(generation);
    }
    conn.execute("INSERT OR IGNORE INTO sync_store_metadata(singleton, generation) VALUES(1, ?1)", [new_uuid4()])?;
    generation(conn)?.ok_or_else(|| SyncError::Runtime("sync: the store generation could not be recorded".into()))
}

/// The store's generation, if one was made.
pub fn generation(conn: &Connection) -> Result<Option<String>, SyncError> {
    Ok(conn.prepare_cached("SELECT generation FROM sync_store_metadata WHERE singleton=1")?.query_row([], |r| r.get(0)).optional()?)
}

/// The binding's row (push cursor 0, transport cursor `0` when new).
pub fn ensure_binding(conn: &Connection, key: &Key) -> Result<(), SyncError> {
    conn.prepare_cached(
        "INSERT OR IGNORE INTO sync_bindings(local_team, server_instance_id, remote_team_id, protocol_version, \
         driver_generation) VALUES(?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![key.team, key.server, key.remote, key.protocol, key.generation])?;
    Ok(())
}

/// Once per store: put the legacy `messages` rows that no event mirrors into `events` at their negative
/// projected positions (linked by `legacy_id`), so a team whose history predates the event log pushes it.
/// As agmsg does it, for the first team that prepares.
pub fn project_legacy(conn: &Connection, team: &str) -> Result<(), SyncError> {
    let done: Option<String> = conn
        .prepare_cached("SELECT value FROM storage_metadata WHERE key=?1")?
        .query_row([LEGACY_PROJECTED_KEY], |r| r.get(0))
        .optional()?;
    if done.is_some_and(|v| !v.is_empty()) {
        return Ok(());
    }
    let max_id: i64 = conn.query_row("SELECT COALESCE(MAX(id), 0) FROM messages WHERE team=?1", [team], |r| r.get(0))?;
    if max_id >= LEGACY_SEQ_OFFSET {
        return Err(SyncError::Runtime(format!("sync: legacy message id {max_id} exceeds the projection offset")));
    }
    conn.execute(
        "INSERT INTO events(seq, type, id, team, from_agent, to_agent, body, at, legacy_id) \
         SELECT m.id - ?2, 'message_sent', CAST(m.id AS TEXT), m.team, m.from_agent, m.to_agent, m.body, \
                m.created_at, m.id \
           FROM messages m \
          WHERE m.team=?1 \
            AND NOT EXISTS(SELECT 1 FROM events e WHERE e.seq=m.id - ?2) \
            AND NOT EXISTS(SELECT 1 FROM events e2 WHERE e2.legacy_id=m.id)",
        params![team, LEGACY_SEQ_OFFSET],
    )?;
    conn.execute("INSERT OR REPLACE INTO storage_metadata(key, value) VALUES(?1, '1')", [LEGACY_PROJECTED_KEY])?;
    Ok(())
}

/// Lower the team's push cursors to just under its oldest projected legacy row (acknowledged rows are
/// skipped by the candidate query anyway); a team without legacy rows keeps its cursors.
pub fn rewind_to_legacy(conn: &Connection, team: &str) -> Result<(), SyncError> {
    conn.prepare_cached(
        "UPDATE sync_bindings SET push_cursor = MIN(push_cursor, \
           COALESCE((SELECT MIN(seq) - 1 FROM events WHERE type='message_sent' AND team=?1 AND seq<0), push_cursor)) \
         WHERE local_team=?1",
    )?
    .execute([team])?;
    Ok(())
}
