//! agmsg's schema (its `sqlite.sh`), this driver's private additions, and the one-time cursor migration.

use agmsg_guest_sdk::ids::now_utc;
use rusqlite::{Connection, OptionalExtension, params};

use crate::legacy;

/// Marks a store that carries this driver's additions. Private key: agmsg ignores unknown metadata.
const SCHEMA_KEY: &str = "agmsg_host_schema";
/// 2: agmsg's `message_receipts` table (for the `receipts` interface) is created in stores made before it.
const SCHEMA_REV: &str = "2";
/// agmsg's marker for the one-time delivery-cursor migration (§1.7).
const CURSOR_MIGRATION_KEY: &str = "read_cursor_v1";

/// agmsg's tables and indexes, exactly as its bash driver creates them (`CREATE ... IF NOT EXISTS`, so
/// a store made by agmsg is left as it is).
const AGMSG_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, type TEXT NOT NULL, id TEXT NOT NULL,
  team TEXT, from_agent TEXT, to_agent TEXT, body TEXT, msg_id TEXT, agent TEXT,
  at TEXT NOT NULL, legacy_id INTEGER);
CREATE INDEX IF NOT EXISTS events_sent   ON events(type, team, to_agent, seq);
CREATE INDEX IF NOT EXISTS events_read   ON events(type, team, agent, msg_id);
CREATE INDEX IF NOT EXISTS events_legacy ON events(legacy_id);
CREATE INDEX IF NOT EXISTS events_id     ON events(id);
CREATE TABLE IF NOT EXISTS read_cursors (team TEXT NOT NULL, agent TEXT NOT NULL,
  local_position INTEGER NOT NULL DEFAULT 0 CHECK(local_position >= 0), PRIMARY KEY(team, agent));
CREATE TABLE IF NOT EXISTS storage_metadata (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS messages (
  id INTEGER PRIMARY KEY AUTOINCREMENT, team TEXT NOT NULL, from_agent TEXT NOT NULL,
  to_agent TEXT NOT NULL, body TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')), read_at TEXT);
CREATE TABLE IF NOT EXISTS message_receipts (message_id INTEGER PRIMARY KEY, owner TEXT NOT NULL,
  handed_off_at TEXT NOT NULL, evidence TEXT NOT NULL);
";

/// This driver's additions: an index that serves `history --limit N` from the tail of the log.
const PRIVATE_SCHEMA: &str = "
CREATE INDEX IF NOT EXISTS events_history ON events(type, team, at, seq);
";

fn metadata(conn: &Connection, key: &str) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached("SELECT value FROM storage_metadata WHERE key=?1")?.query_row([key], |r| r.get(0)).optional()
}

/// Make sure the schema, this driver's additions and the cursor migration are in place. The fast path
/// is one metadata lookup (both markers in one query); the slow path runs when either is missing: once
/// per store, and again whenever agmsg's own `read_cursor_v1` marker is gone, since agmsg re-checks it
/// at every init and re-runs the migration without it (our marker says only that our additions exist).
pub fn ensure(conn: &Connection) -> rusqlite::Result<()> {
    if current(conn) {
        return Ok(());
    }
    create(conn)
}

/// [`ensure`] inside a write transaction the caller holds (and commits).
pub fn ensure_in_transaction(conn: &Connection) -> rusqlite::Result<()> {
    if current(conn) {
        return Ok(());
    }
    create_tables(conn)
}

/// Whether the store has this driver's schema (at the current revision) and agmsg's cursor-migration
/// marker: one query on the metadata table's primary key. A store without the metadata table, or one
/// that cannot be read, is not current; the slow path then creates it or reports what is wrong.
pub fn current(conn: &Connection) -> bool {
    markers_present(conn).unwrap_or(false)
}

/// Whether this driver's schema marker (at the current revision) and agmsg's cursor-migration marker
/// are both there.
fn markers_present(conn: &Connection) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT count(*) = 2 FROM storage_metadata WHERE (key = ?1 AND value = ?2) OR key = ?3")?
        .query_row(params![SCHEMA_KEY, SCHEMA_REV, CURSOR_MIGRATION_KEY], |r| r.get(0))
}

fn create(conn: &Connection) -> rusqlite::Result<()> {
    // A new database stays in rollback-journal mode, which lets a warm process keep its connection
    // (see Session); a store agmsg put in WAL mode keeps WAL.
    conn.execute_batch("BEGIN IMMEDIATE")?;
    match create_tables(conn) {
        Ok(()) => conn.execute_batch("COMMIT"),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// Whether `table` has `column`: what decides an `ALTER TABLE ... ADD COLUMN` migration (SQLite has no
/// `ADD COLUMN IF NOT EXISTS`).
pub fn has_column(conn: &Connection, table: &str, column: &str) -> rusqlite::Result<bool> {
    conn.query_row("SELECT EXISTS(SELECT 1 FROM pragma_table_info(?1) WHERE name=?2)", params![table, column], |r| r.get(0))
}

/// The schema, the additions and the migration, in the caller's write transaction.
fn create_tables(conn: &Connection) -> rusqlite::Result<()> {
    // An `events` table from before `legacy_id` gets the column first: AGMSG_SCHEMA indexes it (added
    // after it, the index failed with "no such column" and no op could open such a store; found by a
    // seed of fuzz/corpus/sqlite_store, `regress-events-without-legacy-id`).
    if has_column(conn, "events", "seq")? && !has_column(conn, "events", "legacy_id")? {
        conn.execute_batch("ALTER TABLE events ADD COLUMN legacy_id INTEGER")?;
    }
    conn.execute_batch(AGMSG_SCHEMA)?;
    conn.execute_batch(PRIVATE_SCHEMA)?;
    legacy::create(conn)?;
    if metadata(conn, CURSOR_MIGRATION_KEY)?.is_none() {
        migrate_cursors(conn)?;
    }
    conn.execute("INSERT OR REPLACE INTO storage_metadata(key, value) VALUES(?1, ?2)", params![SCHEMA_KEY, SCHEMA_REV])?;
    Ok(())
}

/// The one-time migration: the backlog that predates the delivery cursor counts as consumed, so the
/// first watch does not replay the whole history. A new store has no backlog and starts at zero.
fn migrate_cursors(conn: &Connection) -> rusqlite::Result<()> {
    let now = now_utc();
    // Unread legacy rows (not linked to an event) get exact read markers...
    conn.execute(
        "INSERT INTO events(type, id, team, msg_id, agent, at) \
         SELECT 'message_read', 'read-cursor-v1:' || m.team || ':' || m.to_agent || ':' || m.id, m.team, \
                CAST(m.id AS TEXT), m.to_agent, ?1 \
         FROM messages m WHERE m.read_at IS NULL \
         AND NOT EXISTS (SELECT 1 FROM events l WHERE l.legacy_id = m.id) \
         AND NOT EXISTS (SELECT 1 FROM events r WHERE r.type='message_read' AND r.team=m.team \
                         AND r.agent=m.to_agent AND r.msg_id=CAST(m.id AS TEXT))",
        [&now],
    )?;
    // ...and every recipient's frontier moves to the current high-water.
    let high_water = crate::high_water(conn)?;
    conn.execute(
        "INSERT INTO read_cursors(team, agent, local_position) \
         SELECT DISTINCT team, to_agent, ?1 FROM events \
         WHERE type='message_sent' AND team IS NOT NULL AND to_agent IS NOT NULL \
         ON CONFLICT(team, agent) DO UPDATE SET local_position = MAX(local_position, excluded.local_position)",
        [high_water as i64],
    )?;
    conn.execute("INSERT OR REPLACE INTO storage_metadata(key, value) VALUES(?1, '1')", [CURSOR_MIGRATION_KEY])?;
    Ok(())
}
