//! Apply-pull and reprocess (agmsg's `storage_sync_apply_pull` / `_reprocess`).
//!
//! A pull page is one `BEGIN IMMEDIATE` transaction from `begin` to `commit`: every message is
//! quarantined with its envelope unchanged, checked against what the store already maps to its wire id
//! and sequence, reconciled when it is the echo of this store's own reservation, and imported once when
//! it is an unmapped importable chat message; the transport cursor moves in the same commit.

use std::collections::BTreeSet;

use agmsg_guest_sdk::ids::new_id;
use agmsg_guest_sdk::storage::{
    ApplyResult, Binding, Envelope, Evaluated, Outcome, OutcomeStatus, PageKey, PullMessage, PullStage, ReprocessCandidate, ReprocessPage,
    ReprocessScope, SyncState, pull_chat,
};
use rusqlite::types::ToSql;
use rusqlite::{Connection, params};

use super::{Db, Key, Pages, SyncError, bind_named, crash_point, open_binding, read_tx, schema, state, write_tx};

/// Execute `sql` with the named parameters it uses out of `values` (agmsg's statements each use a
/// different subset of one message's fields).
fn run(conn: &Connection, sql: &str, values: &[(&str, &dyn ToSql)]) -> rusqlite::Result<usize> {
    let mut stmt = conn.prepare_cached(sql)?;
    bind_named(&mut stmt, values)?;
    stmt.raw_execute()
}

/// Where the binding's key columns are matched against `:server`, `:remote`, `:protocol`.
macro_rules! on_binding {
    ($alias:literal) => {
        concat!($alias, ".server_instance_id=:server AND ", $alias, ".remote_team_id=:remote AND ", $alias, ".protocol_version=:protocol")
    };
}

const CONFLICT_COLUMNS: &str = "INSERT OR IGNORE INTO sync_conflicts(local_team, server_instance_id, remote_team_id, \
    protocol_version, driver_generation, server_seq, wire_id, envelope_v, cipher, key_id, blob, reason, observed_at) \
    SELECT :team, :server, :remote, :protocol, :generation, :seq, :wire, :v, :cipher, :key, :blob, ";

/// agmsg's per-message statements, in its order. See `stage` for what they do together.
fn statements() -> [String; 9] {
    let same_envelope = "envelope_v=:v AND cipher=:cipher AND COALESCE(key_id,'')=:keyc AND blob=:blob";
    [
        // A sequence the binding already maps to another wire id.
        format!(
            "{CONFLICT_COLUMNS}'server sequence maps to another wire id', strftime('%Y-%m-%dT%H:%M:%fZ','now') \
             WHERE EXISTS(SELECT 1 FROM sync_quarantine qx WHERE {} AND qx.server_seq=:seq AND qx.wire_id<>:wire) \
                OR EXISTS(SELECT 1 FROM sync_messages mx WHERE {} AND mx.server_seq=:seq AND mx.wire_id<>:wire)",
            on_binding!("qx"),
            on_binding!("mx")
        ),
        // A wire id the binding already holds with another sequence or envelope.
        format!(
            "{CONFLICT_COLUMNS}'wire id maps to another sequence or envelope', strftime('%Y-%m-%dT%H:%M:%fZ','now') \
             WHERE EXISTS(SELECT 1 FROM sync_quarantine qx WHERE {} AND qx.wire_id=:wire \
                   AND (qx.server_seq<>:seq OR qx.envelope_v<>:v OR qx.cipher<>:cipher \
                        OR COALESCE(qx.key_id,'')<>:keyc OR qx.blob<>:blob)) \
                OR EXISTS(SELECT 1 FROM sync_messages mx WHERE {} AND mx.wire_id=:wire \
                   AND (mx.server_seq IS NOT NULL AND mx.server_seq<>:seq OR mx.envelope_v<>:v \
                        OR mx.cipher<>:cipher OR COALESCE(mx.key_id,'')<>:keyc OR mx.blob<>:blob))",
            on_binding!("qx"),
            on_binding!("mx")
        ),
        // Quarantine the envelope as it came (the first sight of a wire id stays).
        "INSERT OR IGNORE INTO sync_quarantine(local_team, server_instance_id, remote_team_id, protocol_version, \
           driver_generation, server_seq, wire_id, server_received_at, envelope_v, cipher, key_id, blob, status, \
           policy_revision, local_security_revision, reason) \
         VALUES(:team, :server, :remote, :protocol, :generation, :seq, :wire, :received, :v, :cipher, :key, :blob, \
           :status, :policy, :localrev, :reason)"
            .to_owned(),
        // The same envelope evaluated again: its new status, unless it is already terminal.
        format!(
            "UPDATE sync_quarantine SET status=:status, policy_revision=:policy, local_security_revision=:localrev, \
               reason=:reason \
             WHERE {} AND wire_id=:wire AND server_seq=:seq AND {same_envelope} \
               AND status NOT IN ('corrupt_state','imported','reconciled')",
            on_binding!("sync_quarantine")
        ),
        format!(
            "UPDATE sync_quarantine SET status='corrupt_state', reason='wire envelope mismatch' \
             WHERE {} AND wire_id=:wire AND (server_seq<>:seq OR envelope_v<>:v OR cipher<>:cipher \
               OR COALESCE(key_id,'')<>:keyc OR blob<>:blob)",
            on_binding!("sync_quarantine")
        ),
        format!(
            "UPDATE sync_quarantine SET status='corrupt_state', reason='binding sequence conflict' \
             WHERE {} AND wire_id=:wire AND EXISTS(SELECT 1 FROM sync_conflicts cx WHERE {} AND cx.wire_id=:wire)",
            on_binding!("sync_quarantine"),
            on_binding!("cx")
        ),
        format!(
            "UPDATE sync_quarantine SET status='corrupt_state', reason='mapped envelope mismatch' \
             WHERE {} AND wire_id=:wire AND EXISTS(SELECT 1 FROM sync_messages m WHERE {} AND m.wire_id=:wire \
               AND (m.envelope_v<>:v OR m.cipher<>:cipher OR COALESCE(m.key_id,'')<>:keyc OR m.blob<>:blob \
                    OR (m.server_seq IS NOT NULL AND m.server_seq<>:seq)))",
            on_binding!("sync_quarantine"),
            on_binding!("m")
        ),
        // The echo of this store's own reservation: record its sequence...
        format!(
            "UPDATE sync_messages SET server_seq=:seq WHERE {} AND wire_id=:wire AND {same_envelope} \
               AND (server_seq IS NULL OR server_seq=:seq) \
               AND EXISTS(SELECT 1 FROM sync_quarantine qx WHERE {} AND qx.wire_id=:wire AND qx.status='importable')",
            on_binding!("sync_messages"),
            on_binding!("qx")
        ),
        // ...and the message is reconciled, not imported.
        format!(
            "UPDATE sync_quarantine SET status='reconciled' WHERE {} AND wire_id=:wire AND status='importable' \
               AND EXISTS(SELECT 1 FROM sync_messages m WHERE {} AND m.wire_id=:wire AND m.server_seq=:seq)",
            on_binding!("sync_quarantine"),
            on_binding!("m")
        ),
    ]
}

/// A pull page being applied: the session holds the store lock and the open write transaction.
pub struct PullPage<D: Db> {
    db: D,
    key: Key,
    statements: [String; 9],
    /// The page's wire ids in first-seen order, for the outcomes.
    wires: Vec<String>,
    seen: BTreeSet<String>,
    /// Set once a push failed or the page committed: nothing more is accepted.
    closed: Option<&'static str>,
}

/// Begin a pull page: the binding, then the transaction every staged message and the cursor share.
pub fn begin<D: Db>(db: D, b: &Binding) -> Result<PullPage<D>, SyncError> {
    let conn = db.db();
    let key = open_binding(conn, b)?;
    write_tx(conn, |conn| schema::ensure_binding(conn, &key))?;
    conn.execute_batch("BEGIN IMMEDIATE")?;
    Ok(PullPage { db, key, statements: statements(), wires: Vec::new(), seen: BTreeSet::new(), closed: None })
}

impl<D: Db> PullPage<D> {
    fn stage(&mut self, m: &PullMessage) -> Result<(), SyncError> {
        let conn = self.db.db();
        let key_id = m.envelope.key_id.clone().filter(|k| !k.is_empty());
        let keyc = key_id.clone().unwrap_or_default();
        let v = i64::from(m.envelope.v);
        let status = m.status.name();
        let (policy, localrev, reason) = (
            m.policy_revision.clone().unwrap_or_default(),
            m.local_security_revision.clone().unwrap_or_default(),
            m.reason.clone().unwrap_or_default(),
        );
        // Refused before anything of this message is written (the page is then abandoned).
        let chat = pull_chat(m).map_err(|e| SyncError::Runtime(e.message))?;
        // agmsg's sqlite driver (not its jsonl one) also wants every field of the chat.
        if let Some(chat) = chat
            && [&chat.body, &chat.created_at, &chat.from_agent, &chat.to_agent].iter().any(|f| f.is_empty())
        {
            return Err(SyncError::Runtime(format!("sync: importable message {} has an incomplete projection", m.wire_id)));
        }
        let mut values = self.key.named().to_vec();
        values.extend([
            (":seq", &m.server_seq as &dyn ToSql),
            (":wire", &m.wire_id),
            (":received", &m.server_received_at),
            (":v", &v),
            (":cipher", &m.envelope.cipher),
            (":key", &key_id),
            (":keyc", &keyc),
            (":blob", &m.envelope.blob),
            (":status", &status),
            (":policy", &policy),
            (":localrev", &localrev),
            (":reason", &reason),
        ]);
        for sql in &self.statements {
            run(conn, sql, &values)?;
        }
        if m.status == Evaluated::Importable {
            match chat {
                // A roster record the engine already applied: acknowledged, never a message.
                None => {
                    run(
                        conn,
                        concat!(
                            "UPDATE sync_quarantine SET status='imported' WHERE ",
                            on_binding!("sync_quarantine"),
                            " AND wire_id=:wire AND server_seq=:seq AND status='importable'"
                        ),
                        &values,
                    )?;
                }
                Some(chat) => self.import(&values, chat)?,
            }
        }
        if self.seen.insert(m.wire_id.clone()) {
            self.wires.push(m.wire_id.clone());
        }
        Ok(())
    }

    /// Import an unmapped importable message once: the event (with a fresh local id), its legacy mirror
    /// (linked, as every send), its pull mapping, and the quarantine's `imported`.
    fn import(&self, values: &[(&str, &dyn ToSql)], chat: &agmsg_guest_sdk::storage::Chat) -> Result<(), SyncError> {
        let conn = self.db.db();
        let local_id = new_id();
        let mut values = values.to_vec();
        values.extend([
            (":localid", &local_id as &dyn ToSql),
            (":from", &chat.from_agent),
            (":to", &chat.to_agent),
            (":body", &chat.body),
            (":at", &chat.created_at),
        ]);
        let inserted = run(
            conn,
            concat!(
                "INSERT INTO events(type, id, team, from_agent, to_agent, body, at) \
                 SELECT 'message_sent', :localid, :team, :from, :to, :body, :at \
                 WHERE NOT EXISTS(SELECT 1 FROM sync_messages m WHERE ",
                on_binding!("m"),
                " AND m.wire_id=:wire) \
                   AND NOT EXISTS(SELECT 1 FROM sync_quarantine qx WHERE ",
                on_binding!("qx"),
                " AND qx.wire_id=:wire AND qx.status='corrupt_state') \
                   AND NOT EXISTS(SELECT 1 FROM sync_conflicts cx WHERE ",
                on_binding!("cx"),
                " AND cx.wire_id=:wire)"
            ),
            &values,
        )?;
        if inserted == 1 {
            conn.prepare_cached("INSERT INTO messages(team, from_agent, to_agent, body, created_at) VALUES(?1, ?2, ?3, ?4, ?5)")?
                .execute(params![self.key.team, chat.from_agent, chat.to_agent, chat.body, chat.created_at])?;
            let legacy_id = conn.last_insert_rowid();
            conn.prepare_cached("UPDATE events SET legacy_id=?1 WHERE id=?2 AND legacy_id IS NULL")?
                .execute(params![legacy_id, local_id])?;
            crate::legacy::note_linked(conn, legacy_id)?;
        }
        run(
            conn,
            "INSERT OR IGNORE INTO sync_messages(local_team, server_instance_id, remote_team_id, protocol_version, \
               driver_generation, local_position, local_id, wire_id, envelope_v, cipher, key_id, blob, server_seq, \
               direction) \
             SELECT :team, :server, :remote, :protocol, :generation, seq, id, :wire, :v, :cipher, :key, :blob, :seq, \
               'pull' FROM events WHERE id=:localid",
            &values,
        )?;
        run(
            conn,
            concat!(
                "UPDATE sync_quarantine SET status='imported' WHERE ",
                on_binding!("sync_quarantine"),
                " AND wire_id=:wire AND status<>'corrupt_state' AND EXISTS(SELECT 1 FROM sync_messages m WHERE ",
                on_binding!("m"),
                " AND m.wire_id=:wire AND m.direction='pull')"
            ),
            &values,
        )?;
        Ok(())
    }

    fn finish(&mut self, next_after: &str) -> Result<ApplyResult, SyncError> {
        let conn = self.db.db();
        let k = &self.key;
        conn.prepare_cached(
            "UPDATE sync_bindings SET transport_cursor=?6 WHERE local_team=?1 AND server_instance_id=?2 \
             AND remote_team_id=?3 AND protocol_version=?4 AND driver_generation=?5",
        )?
        .execute(params![k.team, k.server, k.remote, k.protocol, k.generation, next_after])?;
        let corrupt: i64 = conn
            .prepare_cached(
                "SELECT (SELECT COUNT(*) FROM sync_quarantine WHERE server_instance_id=?1 AND remote_team_id=?2 \
                   AND protocol_version=?3 AND status='corrupt_state') \
                 + (SELECT COUNT(*) FROM sync_conflicts WHERE server_instance_id=?1 AND remote_team_id=?2 \
                   AND protocol_version=?3)",
            )?
            .query_row(params![k.server, k.remote, k.protocol], |r| r.get(0))?;
        let mut outcomes = Vec::with_capacity(self.wires.len());
        for wire in &self.wires {
            let quarantined: Option<(String, String)> = rusqlite::OptionalExtension::optional(
                conn.prepare_cached(
                    "SELECT server_seq, status FROM sync_quarantine WHERE server_instance_id=?1 AND remote_team_id=?2 \
                     AND protocol_version=?3 AND wire_id=?4",
                )?
                .query_row(params![k.server, k.remote, k.protocol, wire], |r| Ok((r.get(0)?, r.get(1)?))),
            )?;
            match quarantined {
                Some((server_seq, status)) => {
                    let status = OutcomeStatus::from_name(&status)
                        .ok_or_else(|| SyncError::Corrupt(format!("sync: quarantined wire id {wire} has an unknown status {status:?}")))?;
                    outcomes.push(Outcome { wire_id: wire.clone(), server_seq, status });
                }
                // Its sequence belongs to another wire id: only its conflicts speak for it.
                None => {
                    let seqs: Vec<String> = conn
                        .prepare_cached(
                            "SELECT DISTINCT server_seq FROM sync_conflicts WHERE server_instance_id=?1 \
                             AND remote_team_id=?2 AND protocol_version=?3 AND wire_id=?4 ORDER BY conflict_id",
                        )?
                        .query_map(params![k.server, k.remote, k.protocol, wire], |r| r.get(0))?
                        .collect::<rusqlite::Result<_>>()?;
                    outcomes.extend(seqs.into_iter().map(|server_seq| Outcome {
                        wire_id: wire.clone(),
                        server_seq,
                        status: OutcomeStatus::CorruptState,
                    }));
                }
            }
        }
        let transport_cursor = state(conn, k)?.transport_cursor;
        crash_point("apply:before-commit");
        conn.execute_batch("COMMIT")?;
        Ok(ApplyResult { transport_cursor, corrupt_count: corrupt.max(0) as u64, outcomes })
    }

    /// Stage messages (see [`PullStage::push`]).
    pub fn push_messages(&mut self, messages: &[PullMessage]) -> Result<(), SyncError> {
        if let Some(why) = self.closed {
            return Err(SyncError::Runtime(format!("sync: this pull page {why}")));
        }
        for m in messages {
            if let Err(e) = self.stage(m) {
                self.abandon("was abandoned after a failed message");
                return Err(e);
            }
            crash_point("apply:after-message");
        }
        Ok(())
    }

    /// Commit (see [`PullStage::commit`]).
    pub fn commit_page(&mut self, next_after: &str) -> Result<ApplyResult, SyncError> {
        if let Some(why) = self.closed {
            return Err(SyncError::Runtime(format!("sync: this pull page {why}")));
        }
        match self.finish(next_after) {
            Ok(result) => {
                self.closed = Some("is already committed");
                Ok(result)
            }
            Err(e) => {
                self.abandon("was abandoned after a failed commit");
                Err(e)
            }
        }
    }

    fn abandon(&mut self, why: &'static str) {
        self.closed = Some(why);
        let _ = self.db.db().execute_batch("ROLLBACK");
    }
}

impl<D: Db> PullStage for PullPage<D> {
    fn push(&mut self, messages: Vec<PullMessage>) -> Result<(), agmsg_guest_sdk::storage::DriverError> {
        Ok(self.push_messages(&messages)?)
    }
    fn commit(&mut self, next_after: &str) -> Result<ApplyResult, agmsg_guest_sdk::storage::DriverError> {
        Ok(self.commit_page(next_after)?)
    }
}

impl<D: Db> Drop for PullPage<D> {
    fn drop(&mut self) {
        // Dropped uncommitted: nothing it staged stays.
        if self.closed.is_none() {
            let _ = self.db.db().execute_batch("ROLLBACK");
        }
    }
}

/// One keyset page of blocking quarantine rows in `scope`, after `after`, from one read snapshot: the
/// state and the trailer now, the candidates through the pages. The transport cursor is not touched.
pub fn reprocess<D: Db>(
    db: D,
    b: &Binding,
    limit: u32,
    after: Option<&PageKey>,
    scope: ReprocessScope,
) -> Result<(ReprocessPage, Pages<D, PageKey, ReprocessCandidate>), SyncError> {
    let conn = db.db();
    let key = open_binding(conn, b)?;
    write_tx(conn, |conn| schema::ensure_binding(conn, &key))?;
    let statuses = match scope {
        ReprocessScope::Recoverable => "'unsupported_cipher','pending_key','authentication_failed','malformed','policy_violation'",
        ReprocessScope::Malformed => "'malformed'",
    };
    let (after_seq, after_wire) = match after {
        Some(k) => (
            Some(k.server_seq.parse::<i64>().map_err(|_| SyncError::Runtime(format!("sync: invalid page-after {:?}", k.server_seq)))?),
            k.wire_id.clone(),
        ),
        None => (None, String::new()),
    };
    let sql = format!(
        "SELECT server_seq, wire_id FROM sync_quarantine \
          WHERE local_team=?1 AND server_instance_id=?2 AND remote_team_id=?3 AND protocol_version=?4 \
            AND driver_generation=?5 AND status IN ({statuses}) \
            AND (?6 IS NULL OR CAST(server_seq AS INTEGER)>?6 OR (CAST(server_seq AS INTEGER)=?6 AND wire_id>?7)) \
          ORDER BY CAST(server_seq AS INTEGER), wire_id LIMIT ?8"
    );
    let (page, keys) = read_tx(conn, |conn| {
        let state: SyncState = state(conn, &key)?;
        let mut keys: Vec<PageKey> = conn
            .prepare_cached(&sql)?
            .query_map(params![key.team, key.server, key.remote, key.protocol, key.generation, after_seq, after_wire, limit + 1], |r| {
                Ok(PageKey { server_seq: r.get(0)?, wire_id: r.get(1)? })
            })?
            .collect::<rusqlite::Result<_>>()?;
        let has_more = keys.len() > limit as usize;
        keys.truncate(limit as usize);
        let next_after = if has_more { keys.last().cloned() } else { None };
        Ok((ReprocessPage { state, next_after, has_more }, keys))
    })?;
    Ok((page, Pages::new(db, key, keys, fetch_quarantined, |c: &ReprocessCandidate| c.envelope.blob.len())))
}

fn fetch_quarantined(conn: &Connection, key: &Key, at: &PageKey) -> Result<ReprocessCandidate, SyncError> {
    let (received, v, cipher, key_id, blob, status): (String, u32, String, Option<String>, String, String) = conn
        .prepare_cached(
            "SELECT server_received_at, envelope_v, cipher, key_id, blob, status FROM sync_quarantine \
             WHERE server_instance_id=?1 AND remote_team_id=?2 AND protocol_version=?3 AND wire_id=?4",
        )?
        .query_row(params![key.server, key.remote, key.protocol, at.wire_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))
        })?;
    let prior_status = Evaluated::from_name(&status)
        .ok_or_else(|| SyncError::Corrupt(format!("sync: quarantined wire id {} has status {status:?}", at.wire_id)))?;
    Ok(ReprocessCandidate {
        server_seq: at.server_seq.clone(),
        wire_id: at.wire_id.clone(),
        server_received_at: received,
        envelope: Envelope { v, cipher, key_id, blob },
        prior_status,
    })
}
