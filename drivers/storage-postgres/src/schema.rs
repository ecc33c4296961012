//! The schema, created on first use (`CREATE ... IF NOT EXISTS` under an advisory lock, so concurrent
//! first uses do not trip over each other), and one counter row per partition.
//!
//! Tables live in the connecting user's `search_path` (usually `public`), prefixed `agmsg_`:
//! - `agmsg_events`: agmsg's v1 event log, one row per `message_sent` / `message_read`, keyed by
//!   (`part`, `seq`). `part` is the partition: `''` for the shared store, the team's name for a per-team
//!   partition, so each partition is a store of its own (its own numbers, cursors, export and import).
//!   Text columns compare bytewise (`COLLATE "C"`), as SQLite does, so orders do not depend on the
//!   database's locale.
//! - `agmsg_counter`: per partition, the last number given out. Every writer takes its numbers by
//!   updating this row inside its transaction (see the crate docs): the delivery cursor's high-water.
//! - `agmsg_read_cursors`: each (team, agent)'s contiguous read frontier, per partition.
//! - `agmsg_meta`: the schema revision.
//!
//! A message id is unique in its partition, and so is a read mark's (team, agent, msg_id): a second mark
//! for the same message is a conflicting insert that does nothing.

use crate::pg::{self, Conn};

const SCHEMA_REV: &str = "1";

/// Any number: the advisory lock that serializes schema creation across sessions.
const SCHEMA_LOCK: &str = "SELECT pg_advisory_xact_lock(7155087261419311937)";

const CREATE: &str = r#"
CREATE TABLE IF NOT EXISTS agmsg_meta (
  key text COLLATE "C" PRIMARY KEY,
  value text NOT NULL);
CREATE TABLE IF NOT EXISTS agmsg_counter (
  part text COLLATE "C" PRIMARY KEY,
  last bigint NOT NULL CHECK (last >= 0));
CREATE TABLE IF NOT EXISTS agmsg_events (
  part text COLLATE "C" NOT NULL,
  seq bigint NOT NULL,
  type text COLLATE "C" NOT NULL CHECK (type IN ('message_sent', 'message_read')),
  id text COLLATE "C" NOT NULL,
  team text COLLATE "C" NOT NULL,
  from_agent text COLLATE "C",
  to_agent text COLLATE "C",
  body text,
  msg_id text COLLATE "C",
  agent text COLLATE "C",
  at text COLLATE "C" NOT NULL,
  PRIMARY KEY (part, seq));
CREATE UNIQUE INDEX IF NOT EXISTS agmsg_events_message_id ON agmsg_events (part, id) WHERE type = 'message_sent';
CREATE UNIQUE INDEX IF NOT EXISTS agmsg_events_read_once ON agmsg_events (part, team, agent, msg_id) WHERE type = 'message_read';
CREATE INDEX IF NOT EXISTS agmsg_events_inbox ON agmsg_events (part, team, to_agent, seq) WHERE type = 'message_sent';
CREATE INDEX IF NOT EXISTS agmsg_events_history ON agmsg_events (part, team, at, seq) WHERE type = 'message_sent';
CREATE TABLE IF NOT EXISTS agmsg_read_cursors (
  part text COLLATE "C" NOT NULL,
  team text COLLATE "C" NOT NULL,
  agent text COLLATE "C" NOT NULL,
  local_position bigint NOT NULL DEFAULT 0 CHECK (local_position >= 0),
  PRIMARY KEY (part, team, agent));
INSERT INTO agmsg_meta (key, value) VALUES ('schema', '1') ON CONFLICT DO NOTHING;
"#;

/// Make sure the schema and the partition's counter row exist. The fast path is one round trip.
pub fn ensure(conn: &mut Conn, part: &str) -> pg::Result<()> {
    let probe = conn.batch(&[
        ("SELECT value FROM agmsg_meta WHERE key = 'schema'", &[]),
        ("SELECT EXISTS (SELECT 1 FROM agmsg_counter WHERE part = $1)", &[Some(part)]),
    ]);
    match probe {
        Ok(outcomes) => {
            let rev = outcomes.first().and_then(|o| o.rows.first()).and_then(|r| r.first().cloned().flatten());
            let has_part = outcomes.get(1).and_then(|o| o.rows.first()).and_then(|r| r.first().cloned().flatten());
            if let Some(rev) = &rev
                && rev.parse::<u32>().unwrap_or(u32::MAX) > SCHEMA_REV.parse().unwrap()
            {
                return Err(pg::Error::Broken(format!(
                    "the database's agmsg schema is revision {rev}, newer than this driver's {SCHEMA_REV}: update agmsg-host"
                )));
            }
            if rev.as_deref() == Some(SCHEMA_REV) && has_part.as_deref() == Some("t") {
                return Ok(());
            }
        }
        // Not created yet.
        Err(e) if e.code() == Some("42P01") => {}
        Err(e) => return Err(e),
    }
    create(conn, part)
}

fn create(conn: &mut Conn, part: &str) -> pg::Result<()> {
    conn.simple("BEGIN")?;
    let result = conn
        .simple(SCHEMA_LOCK)
        .and_then(|_| conn.simple(CREATE))
        .and_then(|_| conn.query("INSERT INTO agmsg_counter (part, last) VALUES ($1, 0) ON CONFLICT DO NOTHING", &[Some(part)]));
    match result {
        Ok(_) => conn.simple("COMMIT").map(drop),
        Err(e) => {
            let _ = conn.simple("ROLLBACK");
            Err(e)
        }
    }
}

/// Whether the store (the schema and this partition) exists; nothing is created.
pub fn exists(conn: &mut Conn, part: &str) -> pg::Result<bool> {
    match conn.query("SELECT EXISTS (SELECT 1 FROM agmsg_counter WHERE part = $1)", &[Some(part)]) {
        Ok(outcome) => Ok(outcome.rows.first().and_then(|r| r.first().cloned().flatten()).as_deref() == Some("t")),
        Err(e) if e.code() == Some("42P01") => Ok(false),
        Err(e) => Err(e),
    }
}
