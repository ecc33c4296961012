//! The optional `receipts` interface (agmsg:storage 1.2.0): agmsg's `message_receipts` table, hand-off
//! evidence for legacy readers. Read state stays in the event log; a receipt is an audit row keyed by
//! the message's row in the legacy `messages` table (every send is dual-written there and linked by
//! `events.legacy_id`), so a message the store cannot map to such a row gets none, as in agmsg.

use agmsg_guest_sdk::ids::now_utc;
use agmsg_guest_sdk::storage::{DriverError, ReceiptState, ReceiptsDriver};
use rusqlite::{Connection, OptionalExtension, params};

use crate::{Session, Sqlite, sql_error};

/// The legacy row of message `id` of `team`: the one its event links, else a legacy message whose own
/// id is `id` (history shows pre-event-log rows by their number).
fn legacy_row(conn: &Connection, team: &str, id: &str) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached(
        "SELECT COALESCE( \
           (SELECT e.legacy_id FROM events e WHERE e.type='message_sent' AND e.team=?1 AND e.id=?2 \
              AND e.legacy_id IS NOT NULL LIMIT 1), \
           (SELECT m.id FROM messages m WHERE m.team=?1 AND CAST(m.id AS TEXT)=?2))",
    )?
    .query_row(params![team, id], |r| r.get::<_, Option<i64>>(0))
}

impl ReceiptsDriver for Sqlite {
    fn record_receipts(&self, team: &str, agent: &str, evidence: &str, ids: &[String]) -> Result<(), DriverError> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut session = Session::writer()?;
        let tx = session.write()?;
        let at = now_utc();
        for id in ids {
            // An unknown id is skipped; the first receipt of a message stays (agmsg's INSERT OR IGNORE).
            if let Some(row) = legacy_row(&tx, team, id).map_err(sql_error)? {
                tx.prepare_cached(
                    "INSERT OR IGNORE INTO message_receipts(message_id, owner, handed_off_at, evidence) VALUES(?1, ?2, ?3, ?4)",
                )
                .and_then(|mut stmt| stmt.execute(params![row, agent, at, evidence]))
                .map_err(sql_error)?;
            }
        }
        tx.commit().map_err(sql_error)
    }

    fn receipt_status(&self, team: &str, id: &str) -> Result<ReceiptState, DriverError> {
        let session = Session::read()?;
        let conn = session.conn();
        let Some(row) = legacy_row(conn, team, id).map_err(sql_error)? else {
            return Ok(ReceiptState::None);
        };
        let receipt = conn
            .prepare_cached("SELECT 1 FROM message_receipts WHERE message_id=?1")
            .and_then(|mut stmt| stmt.query_row([row], |_| Ok(())).optional())
            .map_err(sql_error)?;
        if receipt.is_some() {
            return Ok(ReceiptState::Receipt);
        }
        let read = conn
            .prepare_cached("SELECT 1 FROM messages WHERE id=?1 AND team=?2 AND read_at IS NOT NULL")
            .and_then(|mut stmt| stmt.query_row(params![row, team], |_| Ok(())).optional())
            .map_err(sql_error)?;
        Ok(if read.is_some() { ReceiptState::LegacyRead } else { ReceiptState::None })
    }
}
