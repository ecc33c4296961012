//! The legacy `messages` table (§2.4): rows that predate the event log stay visible in unread and
//! history. Every new send is dual-written there and linked by `events.legacy_id`; only rows *not*
//! linked to an event are legacy messages in their own right.
//!
//! Finding the unlinked rows by anti-join costs a scan of the whole table on every read. Instead the
//! driver keeps a private classification: `legacy_unlinked` lists the unlinked rows up to the id in the
//! metadata key `legacy_classified_upto`, and rows above it (written since by someone else, for example
//! agmsg's own bash driver) are classified on the fly. Reads therefore touch only legacy messages and
//! the recent tail, whatever the size of the store.

use rusqlite::{Connection, OptionalExtension, params};

use agmsg_guest_sdk::storage::Message;

const UPTO_KEY: &str = "legacy_classified_upto";

/// Create the classification and fill it from the whole table (once per store).
pub fn create(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS legacy_unlinked (id INTEGER PRIMARY KEY);
         DELETE FROM legacy_unlinked;
         INSERT INTO legacy_unlinked(id) SELECT m.id FROM messages m
           WHERE NOT EXISTS (SELECT 1 FROM events l WHERE l.legacy_id = m.id);",
    )?;
    conn.execute(
        "INSERT OR REPLACE INTO storage_metadata(key, value) \
         VALUES(?1, CAST(COALESCE((SELECT MAX(id) FROM messages), 0) AS TEXT))",
        [UPTO_KEY],
    )?;
    Ok(())
}

/// After dual-writing legacy row `legacy_id` (linked), classify everything up to it.
pub fn note_linked(conn: &Connection, legacy_id: i64) -> rusqlite::Result<()> {
    let upto: i64 =
        conn.prepare_cached("SELECT CAST(value AS INTEGER) FROM storage_metadata WHERE key=?1")?.query_row([UPTO_KEY], |r| r.get(0))?;
    if legacy_id <= upto {
        return Ok(());
    }
    if legacy_id > upto + 1 {
        // Rows someone else wrote since the last classification.
        conn.prepare_cached(
            "INSERT OR IGNORE INTO legacy_unlinked(id) SELECT m.id FROM messages m WHERE m.id > ?1 AND m.id < ?2 \
             AND NOT EXISTS (SELECT 1 FROM events l WHERE l.legacy_id = m.id)",
        )?
        .execute(params![upto, legacy_id])?;
    }
    conn.prepare_cached("UPDATE storage_metadata SET value=CAST(?2 AS TEXT) WHERE key=?1")?.execute(params![UPTO_KEY, legacy_id])?;
    Ok(())
}

fn message(row: &rusqlite::Row<'_>) -> rusqlite::Result<(Message, u8, i64)> {
    Ok((crate::message_from_row(row)?, 0, row.get(6)?))
}

/// The ids of unlinked legacy rows: the classified set plus the unclassified tail. Usually empty, and
/// small when not: legacy messages are those written before the event log or by outside tools.
fn candidates(conn: &Connection) -> rusqlite::Result<Vec<i64>> {
    let upto: i64 = conn
        .prepare_cached("SELECT CAST(value AS INTEGER) FROM storage_metadata WHERE key=?1")?
        .query_row([UPTO_KEY], |r| r.get(0))
        .optional()?
        .unwrap_or(0);
    conn.prepare_cached(
        "SELECT id FROM legacy_unlinked UNION SELECT m.id FROM messages m WHERE m.id > ?1 \
         AND NOT EXISTS (SELECT 1 FROM events l WHERE l.legacy_id = m.id)",
    )?
    .query_map([upto], |r| r.get(0))?
    .collect()
}

/// Unread legacy messages for the pair: `read_at` unset and no exact read marker.
pub fn unread(conn: &Connection, team: &str, agent: &str) -> rusqlite::Result<Vec<(Message, u8, i64)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT CAST(m.id AS TEXT), m.team, m.from_agent, m.to_agent, m.body, m.created_at, m.id FROM messages m \
         WHERE m.id=?3 AND m.team=?1 AND m.to_agent=?2 AND m.read_at IS NULL \
         AND NOT EXISTS (SELECT 1 FROM events r WHERE r.type='message_read' AND r.team=?1 AND r.agent=?2 \
                         AND r.msg_id=CAST(m.id AS TEXT))",
    )?;
    // Plus the pair's rows projected for push (sync): their events sit at negative positions, below
    // every read cursor, so the event branch never lists them and, as in agmsg, the legacy row stays
    // the unread copy. They left `legacy_unlinked` (history shows their event), so not counted twice.
    let mut ids: std::collections::BTreeSet<i64> = candidates(conn)?.into_iter().collect();
    ids.extend(
        conn.prepare_cached(
            "SELECT legacy_id FROM events WHERE type='message_sent' AND team=?1 AND to_agent=?2 AND seq<0 \
             AND legacy_id IS NOT NULL",
        )?
        .query_map(params![team, agent], |r| r.get::<_, i64>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?,
    );
    let mut rows = Vec::new();
    for id in ids {
        rows.extend(stmt.query_row(params![team, agent, id], message).optional()?);
    }
    Ok(rows)
}

/// The most recent `limit` (all when `None`) legacy messages of the team, or of one agent's
/// conversations, newest first.
pub fn history(conn: &Connection, team: &str, agent: Option<&str>, limit: Option<u32>) -> rusqlite::Result<Vec<(Message, u8, i64)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT CAST(m.id AS TEXT), m.team, m.from_agent, m.to_agent, m.body, m.created_at, m.id FROM messages m \
         WHERE m.id=?3 AND m.team=?1 AND (?2 IS NULL OR m.to_agent=?2 OR m.from_agent=?2)",
    )?;
    let mut rows = Vec::new();
    for id in candidates(conn)? {
        rows.extend(stmt.query_row(params![team, agent, id], message).optional()?);
    }
    rows.sort_by(|a, b| (&b.0.at, b.2).cmp(&(&a.0.at, a.2)));
    if let Some(limit) = limit {
        rows.truncate(limit as usize);
    }
    Ok(rows)
}
