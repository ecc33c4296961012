//! The optional `read-state` interface (capability `stage2-read-state`): agmsg's Stage-2 overlay tables
//! (`sync_read_members`, `_remote_exact`, `_aliases`, `_prepared`), so a store agmsg's bash driver
//! synced goes on here and back. Every op is one transaction.
//!
//! - prepare: upsert the server's members (a member whose remote name no local agent holds, or whose
//!   name changed on one side only, is `name_mismatch`), then derive each usable member's frontier: the
//!   longest run of server sequences after its last frontier that are all here, durably imported or
//!   reconciled, and read locally when addressed to it; its exact reads are the read aliases beyond.
//! - apply: frontiers max-merge, exact reads union, then every pushed, imported or reconciled message a
//!   member's coverage reaches becomes a local read mark, and its read cursor moves over them.
//! - block / unblock: the operator's `read-state-limit-exceeded` hold on one active member.

use agmsg_guest_sdk::ids::new_id;
use agmsg_guest_sdk::storage::{Binding, Blocked, BlockedReason, Exact, Frontier, Prepared, ReadApplyResult, ReadContext, Snapshot};
use rusqlite::{Connection, ToSql};

use super::{Key, SyncError, schema, write_tx};

/// One op's statements: its transaction's connection and the binding key every statement is bound with.
struct Op<'c> {
    conn: &'c Connection,
    key: Key,
}

impl<'c> Op<'c> {
    /// The binding's key under the store's generation (tables made if needed), inside the caller's
    /// transaction; prepare also makes its `sync_bindings` row (its frontiers are capped by its cursor).
    fn open(conn: &'c Connection, b: &Binding, with_binding: bool) -> Result<Self, SyncError> {
        let key = Key::new(b, super::protocol(b)?, schema::ensure(conn)?);
        if with_binding {
            schema::ensure_binding(conn, &key)?;
        }
        Ok(Op { conn, key })
    }

    /// Run `sql` with those of the binding's parameters (`:team`, `:server`, `:remote`, `:protocol`,
    /// `:generation`) and of `extra` that it names.
    fn run(&self, sql: &str, extra: &[(&str, &dyn ToSql)]) -> rusqlite::Result<usize> {
        let mut stmt = self.conn.prepare_cached(sql)?;
        self.bind(&mut stmt, extra)?;
        stmt.raw_execute()
    }

    /// The rows of `sql` (bound as [`Op::run`] binds), each read by `row`.
    fn rows<T>(
        &self,
        sql: &str,
        extra: &[(&str, &dyn ToSql)],
        row: impl Fn(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<Vec<T>> {
        let mut stmt = self.conn.prepare_cached(sql)?;
        self.bind(&mut stmt, extra)?;
        let mut out = Vec::new();
        let mut cursor = stmt.raw_query();
        while let Some(r) = cursor.next()? {
            out.push(row(r)?);
        }
        Ok(out)
    }

    fn bind(&self, stmt: &mut rusqlite::CachedStatement<'_>, extra: &[(&str, &dyn ToSql)]) -> rusqlite::Result<()> {
        super::bind_named(stmt, self.key.named().iter().chain(extra))
    }

    /// Refuse `member` unless it is an active member of the binding.
    fn require_active(&self, member: &str) -> Result<(), SyncError> {
        let sql = format!("SELECT 1 FROM sync_read_members rm WHERE {THE_ACTIVE_MEMBER}");
        if self.rows(&sql, &[(":member", &member)], |_| Ok(()))?.is_empty() {
            return Err(not_active(member));
        }
        Ok(())
    }
}

fn not_active(member: &str) -> SyncError {
    SyncError::Runtime(format!("read-state: {member} is not an active member of this binding"))
}

fn sequence(text: &str) -> Result<i64, SyncError> {
    text.parse().map_err(|_| SyncError::Runtime(format!("read-state: invalid sequence {text:?}")))
}

/// The row aliased `$a` is this binding's under the store's generation (the statement's `:team`,
/// `:server`, `:remote`, `:protocol` and `:generation`): the five key columns every Stage-2 table shares.
macro_rules! of_binding {
    ($a:literal) => {
        concat!(
            $a,
            ".local_team=:team AND ",
            $a,
            ".server_instance_id=:server AND ",
            $a,
            ".remote_team_id=:remote AND ",
            $a,
            ".protocol_version=:protocol AND ",
            $a,
            ".driver_generation=:generation"
        )
    };
}

/// `rm` is this binding's member row (alias `rm`).
const MEMBER_OF_BINDING: &str = of_binding!("rm");
/// `rm` is an active member of the binding.
const ACTIVE_MEMBER: &str = concat!(of_binding!("rm"), " AND rm.active=1");
/// `rm` is the active member `:member` of the binding.
const THE_ACTIVE_MEMBER: &str = concat!(of_binding!("rm"), " AND rm.member_id=:member AND rm.active=1");

/// The rows aliased `a` and `b` are of one binding and generation (as `of_binding!`, a join's
/// condition, with whatever else ties the two rows).
fn same_binding(a: &str, b: &str) -> String {
    format!(
        "{a}.local_team={b}.local_team AND {a}.server_instance_id={b}.server_instance_id \
         AND {a}.remote_team_id={b}.remote_team_id AND {a}.protocol_version={b}.protocol_version \
         AND {a}.driver_generation={b}.driver_generation"
    )
}

pub fn prepare(conn: &Connection, b: &Binding, context: &ReadContext) -> Result<Prepared, SyncError> {
    let floor = sequence(&context.min_available_seq)?;
    let current = sequence(&context.current_seq)?;
    write_tx(conn, |conn| {
        let op = Op::open(conn, b, true)?;
        // The incoming roster, as two scratch tables of this transaction (dropped before it commits; a
        // failure rolls their creation back with everything else). A name or id given twice fails here.
        conn.execute_batch(
            "CREATE TEMP TABLE agmsg_read_incoming(member_id TEXT UNIQUE, agent TEXT UNIQUE); \
             CREATE TEMP TABLE agmsg_read_local(agent TEXT PRIMARY KEY);",
        )?;
        for m in &context.members {
            conn.prepare_cached("INSERT INTO temp.agmsg_read_incoming(member_id, agent) VALUES(?1, ?2)")?
                .execute([&m.member_id, &m.name])
                .map_err(|e| SyncError::Runtime(format!("read-state: member {} ({:?}) is given twice: {e}", m.member_id, m.name)))?;
        }
        for agent in &context.local_agents {
            conn.prepare_cached("INSERT OR IGNORE INTO temp.agmsg_read_local(agent) VALUES(?1)")?.execute([agent])?;
        }
        let window: [(&str, &dyn ToSql); 2] = [(":floor", &floor), (":current", &current)];
        // Every member goes inactive, then the roster's come back: a new one keyed by its remote name; a
        // known one keeps its local name, and matches only while both names agree and it is local.
        op.run(&format!("UPDATE sync_read_members AS rm SET active=0 WHERE {MEMBER_OF_BINDING}"), &[])?;
        op.run(
            "INSERT INTO sync_read_members(local_team, server_instance_id, remote_team_id, protocol_version, \
               driver_generation, member_id, agent, remote_agent, active, name_mismatch, remote_server_seq, \
               min_available_seq) \
             SELECT :team, :server, :remote, :protocol, :generation, i.member_id, i.agent, i.agent, 1, \
                    NOT EXISTS(SELECT 1 FROM temp.agmsg_read_local l WHERE l.agent=i.agent), \
                    CAST(:floor AS TEXT), CAST(:floor AS TEXT) \
               FROM temp.agmsg_read_incoming i WHERE true \
             ON CONFLICT(local_team, server_instance_id, remote_team_id, protocol_version, driver_generation, member_id) \
             DO UPDATE SET remote_agent=excluded.agent, active=1, \
               name_mismatch=NOT (sync_read_members.agent=excluded.agent \
                 AND EXISTS(SELECT 1 FROM temp.agmsg_read_local l WHERE l.agent=excluded.agent)), \
               remote_server_seq=CAST(MAX(CAST(sync_read_members.remote_server_seq AS INTEGER), :floor) AS TEXT), \
               min_available_seq=CAST(MAX(CAST(sync_read_members.min_available_seq AS INTEGER), :floor) AS TEXT)",
            &window,
        )?;
        conn.execute_batch("DROP TABLE temp.agmsg_read_incoming; DROP TABLE temp.agmsg_read_local;")?;
        // Read aliases: an acknowledged message of this binding its recipient has read here.
        op.run(
            &format!(
                "INSERT OR IGNORE INTO sync_read_aliases(local_team, server_instance_id, remote_team_id, protocol_version, \
                   driver_generation, agent, local_id, wire_id, server_seq) \
                 SELECT m.local_team, m.server_instance_id, m.remote_team_id, m.protocol_version, m.driver_generation, \
                        e.to_agent, m.local_id, m.wire_id, m.server_seq \
                   FROM sync_messages m JOIN events e ON e.seq=m.local_position \
                  WHERE {} AND m.server_seq IS NOT NULL \
                    AND EXISTS(SELECT 1 FROM events r WHERE r.type='message_read' AND r.team=e.team \
                               AND r.agent=e.to_agent AND r.msg_id=e.id)",
                of_binding!("m")
            ),
            &[],
        )?;
        op.run(
            &format!(
                "UPDATE sync_read_aliases AS x SET server_seq=( \
                   SELECT m.server_seq FROM sync_messages m WHERE {} \
                      AND m.local_id=x.local_id AND m.wire_id=x.wire_id) \
                 WHERE {} AND x.server_seq IS NULL",
                same_binding("m", "x"),
                of_binding!("x")
            ),
            &[],
        )?;
        // Frontiers. For each usable member, walk the quarantined sequences after its frontier up to
        // min(transport cursor, current), numbered from 1; the first that is missing (a hole), not
        // imported or reconciled, not mapped to a local message, or addressed to the member and unread
        // here stops the walk. The frontier ends just before it (never moving back).
        op.run(&format!("DELETE FROM sync_read_prepared AS rm WHERE {MEMBER_OF_BINDING}"), &[])?;
        op.run(
            &format!(
                "INSERT INTO sync_read_prepared(local_team, server_instance_id, remote_team_id, protocol_version, \
                   driver_generation, member_id, server_seq) \
                 WITH usable AS ( \
                   SELECT rm.member_id, rm.agent, CAST(rm.remote_server_seq AS INTEGER) AS base, \
                          MIN(CAST(bd.transport_cursor AS INTEGER), :current) AS top \
                     FROM sync_read_members rm JOIN sync_bindings bd ON {} \
                    WHERE {ACTIVE_MEMBER} AND rm.name_mismatch=0), \
                 walk AS ( \
                   SELECT u.member_id, u.agent, u.base, CAST(q.server_seq AS INTEGER) AS seq, q.status, \
                          m.local_position AS position, e.to_agent, e.id AS event_id, \
                          ROW_NUMBER() OVER (PARTITION BY u.member_id ORDER BY CAST(q.server_seq AS INTEGER)) AS n \
                     FROM usable u \
                     LEFT JOIN sync_quarantine q ON {} \
                      AND CAST(q.server_seq AS INTEGER)>u.base AND CAST(q.server_seq AS INTEGER)<=u.top \
                     LEFT JOIN sync_messages m ON m.server_instance_id=:server AND m.remote_team_id=:remote \
                      AND m.protocol_version=:protocol AND m.wire_id=q.wire_id \
                     LEFT JOIN events e ON e.seq=m.local_position), \
                 stop AS ( \
                   SELECT member_id, MIN(base+n) AS at FROM walk \
                    WHERE seq IS NULL OR seq<>base+n OR status NOT IN ('imported','reconciled') OR position IS NULL \
                       OR (to_agent=agent \
                           AND position>COALESCE((SELECT c.local_position FROM read_cursors c \
                                                   WHERE c.team=:team AND c.agent=walk.agent), 0) \
                           AND NOT EXISTS(SELECT 1 FROM events r WHERE r.type='message_read' AND r.team=:team \
                                          AND r.agent=walk.agent AND r.msg_id=walk.event_id)) \
                    GROUP BY member_id) \
                 SELECT :team, :server, :remote, :protocol, :generation, u.member_id, \
                        CAST(MAX(u.base, MIN(u.top, COALESCE(s.at-1, :current))) AS TEXT) \
                   FROM usable u LEFT JOIN stop s ON s.member_id=u.member_id",
                same_binding("bd", "rm"),
                of_binding!("q")
            ),
            &window,
        )?;
        let frontiers = op.rows(
            &format!(
                "SELECT f.member_id, f.server_seq FROM sync_read_prepared f JOIN sync_read_members rm \
                   ON {} AND rm.member_id=f.member_id \
                 WHERE {MEMBER_OF_BINDING} AND rm.blocked_reason IS NULL ORDER BY f.member_id",
                same_binding("rm", "f")
            ),
            &[],
            |r| Ok(Frontier { member_id: r.get(0)?, server_seq: r.get(1)? }),
        )?;
        let exacts = op.rows(
            &format!(
                "SELECT rm.member_id, x.wire_id FROM sync_read_aliases x JOIN sync_read_members rm \
                   ON {} AND rm.agent=x.agent \
                 JOIN sync_read_prepared f ON {} AND f.member_id=rm.member_id \
                 WHERE {ACTIVE_MEMBER} AND rm.blocked_reason IS NULL \
                   AND x.server_seq IS NOT NULL AND CAST(x.server_seq AS INTEGER)>CAST(f.server_seq AS INTEGER) \
                 ORDER BY rm.member_id, x.wire_id",
                same_binding("rm", "x"),
                same_binding("f", "rm")
            ),
            &[],
            |r| Ok(Exact { member_id: r.get(0)?, wire_id: r.get(1)? }),
        )?;
        let blocked = op
            .rows(
                &format!(
                    "SELECT rm.member_id, rm.name_mismatch, rm.blocked_reason FROM sync_read_members rm \
                 WHERE {ACTIVE_MEMBER} AND (rm.name_mismatch=1 OR rm.blocked_reason IS NOT NULL) \
                 ORDER BY rm.member_id"
                ),
                &[],
                |r| Ok((r.get::<_, String>(0)?, r.get::<_, bool>(1)?, r.get::<_, Option<String>>(2)?)),
            )?
            .into_iter()
            .map(|(member_id, mismatch, reason)| {
                let reason = match (mismatch, reason.as_deref()) {
                    (true, _) => BlockedReason::MemberNameMismatch,
                    (false, Some("read-state-limit-exceeded")) => BlockedReason::ReadStateLimitExceeded,
                    (false, other) => {
                        return Err(SyncError::Corrupt(format!(
                            "read-state: member {member_id} is blocked for an unknown reason {other:?}"
                        )));
                    }
                };
                Ok(Blocked { member_id, reason })
            })
            .collect::<Result<Vec<_>, SyncError>>()?;
        super::crash_point("read-state:prepare-before-commit");
        Ok(Prepared { frontiers, exacts, blocked })
    })
}

pub fn apply(conn: &Connection, b: &Binding, page: &Snapshot) -> Result<ReadApplyResult, SyncError> {
    let floor = sequence(&page.min_available_seq)?;
    write_tx(conn, |conn| {
        let op = Op::open(conn, b, false)?;
        for f in &page.frontiers {
            op.require_active(&f.member_id)?;
            let seq = sequence(&f.server_seq)?;
            op.run(
                &format!(
                    "UPDATE sync_read_members AS rm SET remote_server_seq=CAST(MAX(CAST(remote_server_seq AS INTEGER), :seq) AS TEXT) \
                     WHERE {THE_ACTIVE_MEMBER}"
                ),
                &[(":seq", &seq), (":member", &f.member_id)],
            )?;
        }
        for x in &page.exacts {
            op.require_active(&x.member_id)?;
            op.run(
                "INSERT OR IGNORE INTO sync_read_remote_exact(local_team, server_instance_id, remote_team_id, \
                   protocol_version, driver_generation, member_id, wire_id) \
                 VALUES(:team, :server, :remote, :protocol, :generation, :member, :wire)",
                &[(":member", &x.member_id), (":wire", &x.wire_id)],
            )?;
        }
        // The page's floor raises every active member's.
        op.run(
            &format!(
                "UPDATE sync_read_members AS rm SET \
                   min_available_seq=CAST(MAX(CAST(min_available_seq AS INTEGER), :floor) AS TEXT), \
                   remote_server_seq=CAST(MAX(CAST(remote_server_seq AS INTEGER), :floor) AS TEXT) \
                 WHERE {ACTIVE_MEMBER}"
            ),
            &[(":floor", &floor)],
        )?;
        // What the members' coverage reaches: their messages of this binding that were pushed from here
        // or durably imported or reconciled, at or below the frontier or read exactly.
        let covered = op.rows(
            &format!(
                "SELECT DISTINCT e.team, rm.agent, e.id FROM sync_read_members rm \
                   JOIN sync_messages m ON {} AND m.server_seq IS NOT NULL \
                   JOIN events e ON e.seq=m.local_position \
                   LEFT JOIN sync_quarantine q ON q.server_instance_id=m.server_instance_id \
                    AND q.remote_team_id=m.remote_team_id AND q.protocol_version=m.protocol_version AND q.wire_id=m.wire_id \
                 WHERE {ACTIVE_MEMBER} AND e.to_agent=rm.agent \
                   AND (m.direction='push' OR q.status IN ('imported','reconciled')) \
                   AND (CAST(m.server_seq AS INTEGER)<=CAST(rm.remote_server_seq AS INTEGER) \
                        OR EXISTS(SELECT 1 FROM sync_read_remote_exact x WHERE {} \
                          AND x.member_id=rm.member_id AND x.wire_id=m.wire_id)) \
                 ORDER BY e.seq",
                same_binding("m", "rm"),
                same_binding("x", "rm")
            ),
            &[],
            |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?)),
        )?;
        let at: String = conn.query_row("SELECT strftime('%Y-%m-%dT%H:%M:%SZ','now')", [], |r| r.get(0))?;
        for (team, agent, msg_id) in &covered {
            // The driver's own read mark (once per reader, the linked legacy row's read_at too).
            crate::insert_read(conn, team, agent, msg_id, &new_id(), &at)?;
        }
        // Each member's read cursor moves over the now-covered prefix, up to the first message to it
        // that is still unread (or the event high-water), never back.
        op.run(
            &format!(
                "INSERT OR IGNORE INTO read_cursors(team, agent, local_position) \
                 SELECT :team, rm.agent, 0 FROM sync_read_members rm WHERE {ACTIVE_MEMBER}"
            ),
            &[],
        )?;
        op.run(
            &format!(
                "UPDATE read_cursors SET local_position=MAX(local_position, COALESCE(( \
                   SELECT MIN(e.seq)-1 FROM events e WHERE e.type='message_sent' AND e.team=:team \
                      AND e.to_agent=read_cursors.agent AND e.seq>read_cursors.local_position \
                      AND NOT EXISTS(SELECT 1 FROM events r WHERE r.type='message_read' AND r.team=e.team \
                                     AND r.agent=read_cursors.agent AND r.msg_id=e.id)), \
                   COALESCE((SELECT seq FROM sqlite_sequence WHERE name='events'), 0))) \
                 WHERE team=:team AND agent IN (SELECT rm.agent FROM sync_read_members rm \
                   WHERE {ACTIVE_MEMBER})"
            ),
            &[],
        )?;
        // Exact reads and read aliases the frontier now covers are dropped.
        op.run(
            &format!(
                "DELETE FROM sync_read_remote_exact AS x WHERE {} \
                   AND EXISTS(SELECT 1 FROM sync_messages m JOIN sync_read_members rm ON {} \
                       AND rm.member_id=x.member_id \
                     WHERE m.server_instance_id=x.server_instance_id AND m.remote_team_id=x.remote_team_id \
                       AND m.protocol_version=x.protocol_version AND m.wire_id=x.wire_id AND m.server_seq IS NOT NULL \
                       AND CAST(m.server_seq AS INTEGER)<=CAST(rm.remote_server_seq AS INTEGER))",
                of_binding!("x"),
                same_binding("rm", "x")
            ),
            &[],
        )?;
        op.run(
            &format!(
                "DELETE FROM sync_read_aliases AS x WHERE {} AND x.server_seq IS NOT NULL \
                   AND EXISTS(SELECT 1 FROM sync_read_members rm WHERE {} \
                       AND rm.agent=x.agent AND CAST(x.server_seq AS INTEGER)<=CAST(rm.remote_server_seq AS INTEGER))",
                of_binding!("x"),
                same_binding("rm", "x")
            ),
            &[],
        )?;
        // The members' floor, compared as numbers (text order would put "9" above "10").
        let (floor, count) = op
            .rows(
                &format!(
                    "SELECT CAST(MAX(CAST(rm.min_available_seq AS INTEGER)) AS TEXT), COUNT(*) FROM sync_read_members rm \
                 WHERE {ACTIVE_MEMBER}"
                ),
                &[],
                |r| Ok((r.get::<_, Option<String>>(0)?, r.get::<_, u32>(1)?)),
            )?
            .pop()
            .unwrap_or((None, 0));
        super::crash_point("read-state:apply-before-commit");
        Ok(ReadApplyResult { min_available_seq: floor, member_count: count })
    })
}

/// Hold back an active member's read state until the operator lifts it.
pub fn block(conn: &Connection, b: &Binding, member: &str) -> Result<(), SyncError> {
    write_tx(conn, |conn| {
        let op = Op::open(conn, b, false)?;
        let changed = op.run(
            &format!(
                "UPDATE sync_read_members AS rm SET blocked_reason='read-state-limit-exceeded' \
                 WHERE {THE_ACTIVE_MEMBER}"
            ),
            &[(":member", &member)],
        )?;
        if changed != 1 {
            return Err(not_active(member));
        }
        Ok(())
    })
}

/// Lift the limit hold of an active member (a name mismatch stays: only a roster change ends it).
pub fn unblock(conn: &Connection, b: &Binding, member: &str) -> Result<(), SyncError> {
    write_tx(conn, |conn| {
        let op = Op::open(conn, b, false)?;
        op.require_active(member)?;
        op.run(
            &format!(
                "UPDATE sync_read_members AS rm SET blocked_reason=NULL \
                 WHERE {THE_ACTIVE_MEMBER} AND rm.blocked_reason='read-state-limit-exceeded'"
            ),
            &[(":member", &member)],
        )?;
        Ok(())
    })
}
