//! A PostgreSQL storage driver: one database that a team spread over several machines shares, with the
//! same guarantees as the sqlite driver.
//!
//! The driver has no store directory. The host grants it one TCP endpoint (`network:HOST:PORT`, parsed
//! from the URL the user configured with `agmsg-host storage switch postgres --url ...`) and sets its
//! environment: `PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE`, `PGSSLMODE` (from the URL), `PGPASSWORD`
//! (the user's variable, or the matching line of their password file), `AGMSG_POSTGRES_CA` (the PEM
//! text of `sslrootcert` for `verify-full`), `AGMSG_POSTGRES_PARTITION` (the team of a per-team
//! partition, unset for the shared store) and `AGMSG_POSTGRES_TIMEOUT_MS` (how long an op may take, kept
//! below the host's call deadline).
//!
//! The schema ([`schema`]) keeps agmsg's event log in one table keyed by partition and a dense,
//! commit-ordered `seq`: every write takes its numbers from a single counter row per partition, updated
//! inside the writing transaction. The row lock serializes writers until they commit, so a number
//! becomes visible only after every smaller one has (commit order = cursor order), and a rolled-back
//! writer gives its numbers back. A watcher whose cursor reached N has therefore seen every event up to N.
//! A SEQUENCE would not do: numbers are taken at insert, not at commit, and a reader could pass a
//! number whose transaction is still open.
//!
//! Live delivery (`agmsg:storage/live`): every transaction that writes messages also NOTIFYs the channel
//! of each team it wrote to ([`channel`]), which PostgreSQL delivers at commit; `wait-after` LISTENs on
//! the team's channel, then looks for messages after the cursor, then waits on the socket for a
//! notification until its timeout. The notification is only a wake-up: the host reads through
//! `watch-after` from its cursor afterwards.
//!
//! Every op is one transaction (one round trip where possible: statements are pipelined with a single
//! Sync, which makes them one implicit transaction). An op that fails (the server down, refusing,
//! slow or restarted) answers `runtime_error` naming the endpoint, applies nothing, and drops its
//! connection; the next op connects again.

mod pg;
mod schema;
mod tls;

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use agmsg_guest_sdk::ids::{new_id, now_utc};
use agmsg_guest_sdk::storage::{
    Description, DriverError, Event, EventExporter, EventImporter, LiveDriver, Message, Pair, PurgeDriver, ReadMark, StorageDriver, Wake,
    WatchBatch,
};

use pg::{Conn, Param, SslMode, text_array};

/// How long an op may take when the host does not say (it does: `AGMSG_POSTGRES_TIMEOUT_MS`).
const DEFAULT_BUDGET: Duration = Duration::from_secs(10);

#[derive(Default)]
struct Postgres;

agmsg_guest_sdk::export_storage_driver!(Postgres);
agmsg_guest_sdk::export_storage_live!(Postgres);
agmsg_guest_sdk::export_storage_purge!(Postgres);

/// What the host told this instance: the database and the partition.
struct Settings {
    config: pg::Config,
    /// `''` for the shared store, else the team of a per-team partition.
    part: String,
    budget: Duration,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

impl Settings {
    fn from_env() -> Result<Settings, DriverError> {
        let host = env("PGHOST").ok_or_else(|| {
            DriverError::runtime(
                "postgres: no database is configured: run `agmsg-host storage switch postgres --url \
                 postgres://USER@HOST:PORT/DATABASE` (or set AGMSG_POSTGRES_URL)",
            )
        })?;
        let port = match env("PGPORT") {
            Some(p) => p.parse().map_err(|_| DriverError::runtime(format!("postgres: invalid port {p:?}")))?,
            None => 5432,
        };
        let user = env("PGUSER").unwrap_or_else(|| "postgres".into());
        let sslmode = env("PGSSLMODE").unwrap_or_default();
        let sslmode = SslMode::parse(&sslmode).ok_or_else(|| {
            DriverError::runtime(format!("postgres: sslmode {sslmode:?} is not supported (disable, prefer, require, verify-full)"))
        })?;
        let budget = env("AGMSG_POSTGRES_TIMEOUT_MS").and_then(|ms| ms.parse().ok()).map_or(DEFAULT_BUDGET, Duration::from_millis);
        Ok(Settings {
            config: pg::Config {
                host,
                port,
                dbname: env("PGDATABASE").unwrap_or_else(|| user.clone()),
                user,
                password: std::env::var("PGPASSWORD").ok(),
                sslmode,
                ca_pem: env("AGMSG_POSTGRES_CA"),
            },
            part: env("AGMSG_POSTGRES_PARTITION").unwrap_or_default(),
            budget,
        })
    }

    fn fail(&self, e: pg::Error) -> DriverError {
        DriverError::runtime(format!("postgres at {}: {e}", self.config.endpoint()))
    }
}

/// A connection kept between ops of this instance, and whether this driver's schema and the partition's
/// counter row are known to be there.
struct Idle {
    conn: Conn,
    ensured: bool,
}

thread_local! {
    static IDLE: RefCell<Option<Idle>> = const { RefCell::new(None) };
}

/// One op's connection: the instance's idle one, or a new one. Given back by [`Session::finish`] when it
/// is still usable (idle, outside any transaction); dropped otherwise.
struct Session {
    settings: Settings,
    conn: Option<Conn>,
    ensured: bool,
}

impl Session {
    /// Connect (or reuse), and with `ensure` make sure the schema and this partition exist (creating
    /// them: a store comes into being on first use, as sqlite's does).
    fn open(ensure: bool) -> Result<Session, DriverError> {
        let settings = Settings::from_env()?;
        let deadline = Instant::now() + settings.budget;
        let (mut conn, ensured) = match IDLE.with(|i| i.borrow_mut().take()) {
            Some(Idle { mut conn, ensured }) => {
                conn.set_deadline(deadline);
                (conn, ensured)
            }
            None => (Conn::connect(&settings.config, deadline).map_err(|e| settings.fail(e))?, false),
        };
        let mut ensured = ensured;
        if ensure && !ensured {
            schema::ensure(&mut conn, &settings.part).map_err(|e| settings.fail(e))?;
            ensured = true;
        }
        Ok(Session { settings, conn: Some(conn), ensured })
    }

    fn conn(&mut self) -> &mut Conn {
        self.conn.as_mut().expect("a session holds its connection")
    }

    fn part(&self) -> String {
        self.settings.part.clone()
    }

    /// Run `f` on the connection; a broken connection is dropped, a usable one kept for the next op.
    fn run<T>(mut self, f: impl FnOnce(&mut Conn, &str) -> pg::Result<T>) -> Result<T, DriverError> {
        let part = self.part();
        let result = f(self.conn(), &part);
        let keep = match &result {
            Ok(_) => true,
            Err(pg::Error::Server { .. }) => true,
            Err(pg::Error::Broken(_)) => false,
        };
        let conn = self.conn.take().expect("connection");
        if keep && conn.txn_status == b'I' {
            IDLE.with(|i| *i.borrow_mut() = Some(Idle { conn, ensured: self.ensured }));
        }
        result.map_err(|e| self.settings.fail(e))
    }

    /// The connection, out of the session (an export or an import holds it across calls).
    fn into_conn(mut self) -> (Conn, Settings, bool) {
        (self.conn.take().expect("connection"), self.settings, self.ensured)
    }
}

/// Give a connection back to the instance (after an export or an import), when it is idle.
fn park(conn: Conn, ensured: bool) {
    if conn.txn_status == b'I' {
        IDLE.with(|i| *i.borrow_mut() = Some(Idle { conn, ensured }));
    } else {
        conn.close();
    }
}

/// A cursor token: a decimal position. Beyond `i64` it is still a position, saturated.
fn parse_cursor(cursor: &str) -> Result<i64, DriverError> {
    if cursor.is_empty() || !cursor.bytes().all(|b| b.is_ascii_digit()) {
        return Err(DriverError::runtime(format!("invalid cursor {cursor:?}: expected a decimal position")));
    }
    Ok(cursor.parse::<i64>().unwrap_or(i64::MAX))
}

fn field(row: &[Option<String>], i: usize) -> String {
    row.get(i).cloned().flatten().unwrap_or_default()
}

/// `id, team, from_agent, to_agent, body, at` from column `first` on.
fn message(row: &[Option<String>], first: usize) -> Message {
    Message {
        id: field(row, first),
        team: field(row, first + 1),
        from: field(row, first + 2),
        to: field(row, first + 3),
        body: field(row, first + 4),
        at: field(row, first + 5),
    }
}

fn number(row: &[Option<String>], i: usize) -> pg::Result<i64> {
    field(row, i).parse().map_err(|_| pg::Error::Broken(format!("expected a number in column {i}")))
}

fn same(a: &Message, b: &Message) -> bool {
    (&a.id, &a.team, &a.from, &a.to, &a.body, &a.at) == (&b.id, &b.team, &b.from, &b.to, &b.body, &b.at)
}

/// The channel a message to `team` of partition `part` is announced on: `agmsg_` and a hash of both (team
/// names are user input, and a channel is an identifier of at most 63 bytes), so it is a plain name that
/// needs no quoting. Two teams sharing a channel would only wake each other's watchers for nothing.
fn channel(part: &str, team: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, format!("{part}\0{team}").as_bytes());
    let hex: String = digest.as_ref()[..20].iter().map(|b| format!("{b:02x}")).collect();
    format!("agmsg_{hex}")
}

/// Announce a write to `$1`, a [`channel`]: delivered when (and only if) the transaction commits.
const NOTIFY: &str = "SELECT pg_notify($1, '')";

/// Whether a message to the pairs (one team) after the cursor is unread by its recipient: `watch-after`'s
/// condition, as one answer.
const PENDING: &str = "SELECT EXISTS (SELECT 1 FROM agmsg_events e \
    WHERE e.part = $1 AND e.type = 'message_sent' AND e.team = $2 AND e.to_agent = ANY($3::text[]) AND e.seq > $4::bigint \
    AND NOT EXISTS (SELECT 1 FROM agmsg_events r WHERE r.part = $1 AND r.type = 'message_read' AND r.team = e.team \
      AND r.agent = e.to_agent AND r.msg_id = e.id))";

/// The partition's tip: its counter, the high-water of every event ever written (reads too). Deletes
/// never move it back.
const TIP: &str = "SELECT last FROM agmsg_counter WHERE part = $1";

/// Append one message: the counter's next number, taken and used in the same (autocommit) statement.
const SEND: &str = "WITH s AS (UPDATE agmsg_counter SET last = last + 1 WHERE part = $1 RETURNING last) \
    INSERT INTO agmsg_events (part, seq, type, id, team, from_agent, to_agent, body, at) \
    SELECT $1, s.last, 'message_sent', $2, $3, $4, $5, $6, $7 FROM s";

/// Lock the partition's counter: every writer of read marks holds it until commit, so what a later
/// statement of the same transaction sees of the read marks is final.
const LOCK_COUNTER: &str = "SELECT last FROM agmsg_counter WHERE part = $1 FOR UPDATE";

/// Record read marks for the ids not already read by the pair (each once, in the order given), with
/// numbers from the counter. $4: msg ids, $5: the new events' ids, $6: at.
const INSERT_READS: &str = "WITH input AS (SELECT m, n, o FROM unnest($4::text[], $5::text[]) WITH ORDINALITY AS u(m, n, o)), \
    first AS (SELECT DISTINCT ON (m) m, n, o FROM input ORDER BY m, o), \
    fresh AS (SELECT m, n, row_number() OVER (ORDER BY o) AS k FROM first f WHERE NOT EXISTS \
      (SELECT 1 FROM agmsg_events r WHERE r.part = $1 AND r.type = 'message_read' AND r.team = $2 AND r.agent = $3 AND r.msg_id = f.m)), \
    bump AS (UPDATE agmsg_counter SET last = last + (SELECT count(*) FROM fresh) WHERE part = $1 \
      RETURNING last - (SELECT count(*) FROM fresh) AS base) \
    INSERT INTO agmsg_events (part, seq, type, id, team, msg_id, agent, at) \
    SELECT $1, bump.base + fresh.k, 'message_read', fresh.n, $2, fresh.m, $3, $6 FROM fresh CROSS JOIN bump \
    ON CONFLICT DO NOTHING";

const CURSOR_ROW: &str = "INSERT INTO agmsg_read_cursors (part, team, agent, local_position) VALUES ($1, $2, $3, 0) \
    ON CONFLICT DO NOTHING";

/// §2.2: max-merge the pair's frontier through the contiguous covered prefix ending no later than
/// min(target, tip); the first still-unread message to the pair is a hard gap it never crosses. Messages
/// up to the tip are all visible in the statement's snapshot (they commit in counter order).
const ADVANCE_FRONTIER: &str = "UPDATE agmsg_read_cursors c SET local_position = GREATEST(c.local_position, COALESCE( \
      (SELECT min(e.seq) - 1 FROM agmsg_events e WHERE e.part = $1 AND e.type = 'message_sent' AND e.team = $2 \
        AND e.to_agent = $3 AND e.seq > c.local_position AND e.seq <= LEAST($4::bigint, t.last) \
        AND NOT EXISTS (SELECT 1 FROM agmsg_events r WHERE r.part = $1 AND r.type = 'message_read' AND r.team = $2 \
          AND r.agent = $3 AND r.msg_id = e.id)), \
      LEAST($4::bigint, t.last))) \
    FROM (SELECT COALESCE((SELECT last FROM agmsg_counter WHERE part = $1), 0) AS last) t \
    WHERE c.part = $1 AND c.team = $2 AND c.agent = $3";

const UNREAD: &str = "SELECT e.id, e.team, e.from_agent, e.to_agent, e.body, e.at FROM agmsg_events e \
    WHERE e.part = $1 AND e.type = 'message_sent' AND e.team = $2 AND e.to_agent = $3 \
    AND e.seq > COALESCE((SELECT local_position FROM agmsg_read_cursors WHERE part = $1 AND team = $2 AND agent = $3), 0) \
    AND NOT EXISTS (SELECT 1 FROM agmsg_events r WHERE r.part = $1 AND r.type = 'message_read' AND r.team = $2 \
      AND r.agent = $3 AND r.msg_id = e.id) \
    ORDER BY e.at, e.seq LIMIT $4::bigint";

/// Messages after the cursor to the pairs (one team), unread by their recipient, and the tip: one
/// statement, so one snapshot. The tip row comes first, with no message.
const WATCH: &str = "SELECT t.last, NULL, NULL, NULL, NULL, NULL, NULL FROM agmsg_counter t WHERE t.part = $1 \
    UNION ALL \
    (SELECT e.seq, e.id, e.team, e.from_agent, e.to_agent, e.body, e.at FROM agmsg_events e \
      WHERE e.part = $1 AND e.type = 'message_sent' AND e.team = $2 AND e.to_agent = ANY($3::text[]) AND e.seq > $4::bigint \
      AND NOT EXISTS (SELECT 1 FROM agmsg_events r WHERE r.part = $1 AND r.type = 'message_read' AND r.team = e.team \
        AND r.agent = e.to_agent AND r.msg_id = e.id) \
      ORDER BY e.seq)";

/// The most recent N (all without a limit) of the team's messages, or one agent's, oldest first.
const HISTORY: &str = "SELECT id, team, from_agent, to_agent, body, at FROM \
    (SELECT id, team, from_agent, to_agent, body, at, seq FROM agmsg_events WHERE part = $1 AND type = 'message_sent' \
      AND team = $2 AND ($3::text IS NULL OR to_agent = $3 OR from_agent = $3) \
      ORDER BY at DESC, seq DESC LIMIT $4::bigint) h ORDER BY at, seq";

const EXPORT_PAGE: &str = "SELECT seq, type, id, team, from_agent, to_agent, body, msg_id, agent, at FROM agmsg_events \
    WHERE part = $1 AND seq > $2::bigint ORDER BY seq LIMIT $3::bigint";

/// The consume transaction's statements, pipelined: one round trip, one implicit transaction.
fn consume(conn: &mut Conn, part: &str, team: &str, agent: &str, target: i64, ids: &[String]) -> pg::Result<()> {
    let target = target.to_string();
    let at = now_utc();
    let (msg_ids, new_ids);
    let mut statements: Vec<(&str, Vec<Param<'_>>)> = Vec::new();
    if !ids.is_empty() {
        msg_ids = text_array(ids.iter().map(|s| Some(s.as_str())));
        let fresh: Vec<String> = ids.iter().map(|_| new_id()).collect();
        new_ids = text_array(fresh.iter().map(|s| Some(s.as_str())));
        statements.push((LOCK_COUNTER, vec![Some(part)]));
        statements.push((
            INSERT_READS,
            vec![Some(part), Some(team), Some(agent), Some(msg_ids.as_str()), Some(new_ids.as_str()), Some(at.as_str())],
        ));
    }
    statements.push((CURSOR_ROW, vec![Some(part), Some(team), Some(agent)]));
    statements.push((ADVANCE_FRONTIER, vec![Some(part), Some(team), Some(agent), Some(target.as_str())]));
    let borrowed: Vec<(&str, &[Param<'_>])> = statements.iter().map(|(sql, p)| (*sql, p.as_slice())).collect();
    conn.batch(&borrowed).map(drop)
}

impl StorageDriver for Postgres {
    fn check(&self) -> Result<(), DriverError> {
        // The database answers, and this user may log in. Nothing is created.
        Session::open(false)?.run(|conn, _| conn.simple("SELECT 1").map(drop))
    }

    fn describe(&self) -> Description {
        let backend = match Settings::from_env() {
            Ok(s) => {
                let part = if s.part.is_empty() { String::new() } else { format!(", partition '{}'", s.part) };
                format!(
                    "PostgreSQL event log in database '{}' at {} as '{}' (sslmode {:?}{part}; wasm component)",
                    s.config.dbname,
                    s.config.endpoint(),
                    s.config.user,
                    s.config.sslmode
                )
            }
            Err(_) => "PostgreSQL event log (no database configured: storage switch postgres --url ...)".into(),
        };
        // The optional interfaces it exports: `live` (agmsg:storage 1.1.0, wait-after on LISTEN/NOTIFY).
        Description { name: "postgres".into(), backend, capabilities: vec!["live".into()], store_file: None }
    }

    fn init(&self) -> Result<(), DriverError> {
        Session::open(true)?.run(|_, _| Ok(()))
    }

    fn store_exists(&self) -> Result<bool, DriverError> {
        Session::open(false)?.run(schema::exists)
    }

    fn send(&self, team: &str, from: &str, to: &str, body: &str) -> Result<String, DriverError> {
        let id = new_id();
        let at = now_utc();
        Session::open(true)?.run(|conn, part| {
            // One implicit transaction: the notification goes out when the message is committed.
            let channel = channel(part, team);
            let outcomes = conn.batch(&[
                (SEND, &[Some(part), Some(&id), Some(team), Some(from), Some(to), Some(body), Some(&at)]),
                (NOTIFY, &[Some(&channel)]),
            ])?;
            if outcomes.first().map_or(0, pg::Outcome::affected) != 1 {
                return Err(pg::Error::Broken(format!("the counter row of partition {part:?} is missing")));
            }
            Ok(id.clone())
        })
    }

    fn list_unread(&self, team: &str, agent: &str, limit: Option<u32>) -> Result<Vec<Message>, DriverError> {
        let limit = limit.map(|n| n.to_string());
        Session::open(true)?.run(|conn, part| {
            let rows = conn.query(UNREAD, &[Some(part), Some(team), Some(agent), limit.as_deref()])?.rows;
            Ok(rows.iter().map(|r| message(r, 0)).collect())
        })
    }

    fn mark_read_batch(&self, team: &str, agent: &str, ids: &[String]) -> Result<(), DriverError> {
        if ids.is_empty() {
            return Ok(());
        }
        // As agmsg does: consume up to the tip (the statement caps the target at it).
        Session::open(true)?.run(|conn, part| consume(conn, part, team, agent, i64::MAX, ids))
    }

    fn read_cursor_get(&self, team: &str, agent: &str) -> Result<String, DriverError> {
        Session::open(true)?.run(|conn, part| {
            let rows = conn
                .query(
                    "SELECT local_position FROM agmsg_read_cursors WHERE part = $1 AND team = $2 AND agent = $3",
                    &[Some(part), Some(team), Some(agent)],
                )?
                .rows;
            Ok(rows.first().map_or_else(|| "0".to_owned(), |r| field(r, 0)))
        })
    }

    fn read_cursor_consume(&self, team: &str, agent: &str, cursor: &str, ids: &[String]) -> Result<(), DriverError> {
        let target = parse_cursor(cursor)?;
        Session::open(true)?.run(|conn, part| consume(conn, part, team, agent, target, ids))
    }

    fn watch_tip(&self, _pairs: &[Pair]) -> Result<String, DriverError> {
        Session::open(true)?.run(|conn, part| {
            let rows = conn.query(TIP, &[Some(part)])?.rows;
            Ok(rows.first().map_or_else(|| "0".to_owned(), |r| field(r, 0)))
        })
    }

    fn watch_after(&self, cursor: &str, pairs: &[Pair]) -> Result<WatchBatch, DriverError> {
        let after = parse_cursor(cursor)?;
        let Some(team) = pairs.first().map(|p| p.team.clone()) else {
            return Err(DriverError::runtime("watch needs at least one team:agent pair"));
        };
        let agents = text_array(pairs.iter().map(|p| Some(p.agent.as_str())));
        let after_text = after.to_string();
        Session::open(true)?.run(|conn, part| {
            let rows = conn.query(WATCH, &[Some(part), Some(&team), Some(&agents), Some(&after_text)])?.rows;
            let mut tip = 0i64;
            let mut messages = Vec::new();
            for row in &rows {
                if row.get(1).is_some_and(Option::is_none) {
                    tip = number(row, 0)?;
                } else {
                    messages.push((number(row, 0)?, message(row, 1)));
                }
            }
            messages.sort_by_key(|(seq, _)| *seq);
            // Never regress: a cursor beyond the tip comes back unchanged.
            Ok(WatchBatch { messages: messages.into_iter().map(|(_, m)| m).collect(), cursor: tip.max(after).to_string() })
        })
    }

    fn history(&self, team: &str, agent: Option<&str>, limit: Option<u32>) -> Result<Vec<Message>, DriverError> {
        let limit = limit.map(|n| n.to_string());
        Session::open(true)?.run(|conn, part| {
            let rows = conn.query(HISTORY, &[Some(part), Some(team), agent, limit.as_deref()])?.rows;
            Ok(rows.iter().map(|r| message(r, 0)).collect())
        })
    }

    fn export_events(&self) -> Result<Box<dyn EventExporter>, DriverError> {
        let session = Session::open(true)?;
        let (mut conn, settings, ensured) = session.into_conn();
        // One snapshot for the whole export, however many pages.
        conn.simple("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY").map_err(|e| settings.fail(e))?;
        Ok(Box::new(Exporter { conn: Some(conn), settings, ensured, after: 0 }))
    }

    fn import_events(&self) -> Result<Box<dyn EventImporter>, DriverError> {
        let session = Session::open(true)?;
        let (mut conn, settings, ensured) = session.into_conn();
        // The counter stays locked until the commit: the import's numbers follow every committed write,
        // and no writer slips in between.
        let begun = conn.simple("BEGIN").and_then(|_| conn.query(LOCK_COUNTER, &[Some(settings.part.as_str())]));
        let last = match begun {
            Ok(outcome) => match outcome.rows.first() {
                Some(row) => number(row, 0).map_err(|e| settings.fail(e))?,
                None => return Err(settings.fail(pg::Error::Broken("the partition's counter row is missing".into()))),
            },
            Err(e) => return Err(settings.fail(e)),
        };
        Ok(Box::new(Importer { conn: Some(conn), settings, ensured, last, teams: BTreeSet::new(), committed: false }))
    }

    fn compact(&self) -> Result<(), DriverError> {
        // Nothing to fold: a unique index makes a second read mark of one (team, agent, msg_id)
        // impossible (conflicting inserts do nothing), and message_sent rows are never touched. The
        // store is made sure of, so compact on a new store behaves as on sqlite.
        Session::open(true)?.run(|_, _| Ok(()))
    }
}

impl PurgeDriver for Postgres {
    fn purge_store(&self) -> Result<(), DriverError> {
        // Every row of this partition, in one implicit transaction; the shared `agmsg_meta` (the
        // schema's revision) and every other partition stay.
        let mut session = Session::open(false)?;
        // The counter row goes too: the next op on this instance must create it again.
        session.ensured = false;
        session.run(|conn, part| {
            let p: &[Param] = &[Some(part)];
            let deleted = conn.batch(&[
                ("DELETE FROM agmsg_events WHERE part = $1", p),
                ("DELETE FROM agmsg_read_cursors WHERE part = $1", p),
                ("DELETE FROM agmsg_counter WHERE part = $1", p),
            ]);
            match deleted {
                // No schema in this database: no store to purge.
                Err(e) if e.code() == Some("42P01") => Ok(()),
                other => other.map(drop),
            }
        })
    }
}

impl LiveDriver for Postgres {
    fn wait_after(&self, cursor: &str, pairs: &[Pair], timeout_ms: u32) -> Result<Wake, DriverError> {
        let until = Instant::now() + Duration::from_millis(timeout_ms.into());
        let after = parse_cursor(cursor)?.to_string();
        let Some(team) = pairs.first().map(|p| p.team.clone()) else {
            return Err(DriverError::runtime("wait-after needs at least one team:agent pair"));
        };
        let agents = text_array(pairs.iter().map(|p| Some(p.agent.as_str())));
        Session::open(true)?.run(|conn, part| {
            let channel = channel(part, &team);
            // Listening before looking: a message committed after the look is notified, one committed
            // before it is seen by the look.
            conn.listen(&channel)?;
            let pending = conn.query(PENDING, &[Some(part), Some(&team), Some(&agents), Some(&after)])?;
            if pending.rows.first().and_then(|r| r.first().cloned().flatten()).as_deref() == Some("t") {
                return Ok(Wake::Changed);
            }
            // Bounded by the op's budget too (`wait_notification` stops at the earlier of both).
            Ok(if conn.wait_notification(&channel, until)? { Wake::Changed } else { Wake::TimedOut })
        })
    }
}

/// An export: a REPEATABLE READ transaction held across pages on this export's connection.
struct Exporter {
    conn: Option<Conn>,
    settings: Settings,
    ensured: bool,
    after: i64,
}

impl EventExporter for Exporter {
    fn next_page(&mut self, max: u32) -> Result<Vec<Event>, DriverError> {
        let conn = self.conn.as_mut().ok_or_else(|| DriverError::runtime("the export's connection is gone"))?;
        conn.set_deadline(Instant::now() + self.settings.budget);
        let rows = match conn.query(EXPORT_PAGE, &[Some(&self.settings.part), Some(&self.after.to_string()), Some(&max.to_string())]) {
            Ok(outcome) => outcome.rows,
            Err(e) => {
                self.conn = None;
                return Err(self.settings.fail(e));
            }
        };
        let mut events = Vec::with_capacity(rows.len());
        for row in &rows {
            self.after = number(row, 0).map_err(|e| self.settings.fail(e))?;
            events.push(if field(row, 1) == "message_sent" {
                Event::MessageSent(Message {
                    id: field(row, 2),
                    team: field(row, 3),
                    from: field(row, 4),
                    to: field(row, 5),
                    body: field(row, 6),
                    at: field(row, 9),
                })
            } else {
                Event::MessageRead(ReadMark {
                    id: field(row, 2),
                    team: field(row, 3),
                    msg_id: field(row, 7),
                    agent: field(row, 8),
                    at: field(row, 9),
                })
            });
        }
        Ok(events)
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        if let Some(mut conn) = self.conn.take() {
            conn.set_deadline(Instant::now() + Duration::from_secs(2));
            if conn.simple("ROLLBACK").is_ok() {
                park(conn, self.ensured);
            }
        }
    }
}

/// An import: one transaction holding the counter's lock from the first page to the commit. Dropping it
/// uncommitted rolls everything back.
struct Importer {
    conn: Option<Conn>,
    settings: Settings,
    ensured: bool,
    /// The last number given out (the counter, locked, plus what the import staged).
    last: i64,
    /// The teams of the messages staged: their watchers are notified at the commit.
    teams: BTreeSet<String>,
    committed: bool,
}

impl Importer {
    fn stage(&mut self, events: Vec<Event>) -> pg::Result<()> {
        let conn = self.conn.as_mut().ok_or_else(|| pg::Error::Broken("the import's connection is gone".into()))?;
        conn.set_deadline(Instant::now() + self.settings.budget);
        let part = self.settings.part.as_str();
        // Messages the store already holds (earlier pages included): the same content is skipped, other
        // content is a conflict.
        let sent_ids: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                Event::MessageSent(m) => Some(m.id.as_str()),
                Event::MessageRead(_) => None,
            })
            .collect();
        let mut known: HashMap<String, Message> = HashMap::new();
        if !sent_ids.is_empty() {
            let ids = text_array(sent_ids.iter().map(|s| Some(*s)));
            let rows = conn
                .query(
                    "SELECT id, team, from_agent, to_agent, body, at FROM agmsg_events \
                     WHERE part = $1 AND type = 'message_sent' AND id = ANY($2::text[])",
                    &[Some(part), Some(&ids)],
                )?
                .rows;
            for row in &rows {
                let m = message(row, 0);
                known.insert(m.id.clone(), m);
            }
        }
        let mut columns: [Vec<Option<String>>; 10] = Default::default();
        for event in events {
            let row: [Option<String>; 9] = match event {
                Event::MessageSent(m) => {
                    if let Some(existing) = known.get(&m.id) {
                        if same(existing, &m) {
                            continue;
                        }
                        return Err(pg::Error::Broken(format!("import conflict: message {} already exists with different content", m.id)));
                    }
                    known.insert(m.id.clone(), m.clone());
                    self.teams.insert(m.team.clone());
                    [Some("message_sent".into()), Some(m.id), Some(m.team), Some(m.from), Some(m.to), Some(m.body), None, None, Some(m.at)]
                }
                Event::MessageRead(r) => {
                    [Some("message_read".into()), Some(r.id), Some(r.team), None, None, None, Some(r.msg_id), Some(r.agent), Some(r.at)]
                }
            };
            self.last += 1;
            columns[0].push(Some(self.last.to_string()));
            for (i, value) in row.into_iter().enumerate() {
                columns[i + 1].push(value);
            }
        }
        if columns[0].is_empty() {
            return Ok(());
        }
        let arrays: Vec<String> = columns.iter().map(|c| text_array(c.iter().map(|v| v.as_deref()))).collect();
        let mut params: Vec<Param<'_>> = vec![Some(part)];
        params.extend(arrays.iter().map(|a| Some(a.as_str())));
        conn.query(
            "INSERT INTO agmsg_events (part, seq, type, id, team, from_agent, to_agent, body, msg_id, agent, at) \
             SELECT $1, u.seq, u.type, u.id, u.team, u.from_agent, u.to_agent, u.body, u.msg_id, u.agent, u.at \
             FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], \
               $9::text[], $10::text[], $11::text[]) AS u(seq, type, id, team, from_agent, to_agent, body, msg_id, agent, at) \
             ORDER BY u.seq ON CONFLICT DO NOTHING",
            &params,
        )?;
        Ok(())
    }
}

impl EventImporter for Importer {
    fn push_page(&mut self, events: Vec<Event>) -> Result<(), DriverError> {
        if self.committed {
            return Err(DriverError::runtime("import already committed"));
        }
        self.stage(events).map_err(|e| {
            // Nothing of the import survives a failed page: the transaction is rolled back on drop.
            self.settings.fail(e)
        })
    }

    fn commit(&mut self) -> Result<(), DriverError> {
        if self.committed {
            return Ok(());
        }
        let conn = self.conn.as_mut().ok_or_else(|| DriverError::runtime("the import's connection is gone"))?;
        conn.set_deadline(Instant::now() + self.settings.budget);
        let last = self.last.to_string();
        let part = self.settings.part.as_str();
        let channels: Vec<String> = self.teams.iter().map(|team| channel(part, team)).collect();
        let counter = [Some(part), Some(last.as_str())];
        let notifies: Vec<[pg::Param<'_>; 1]> = channels.iter().map(|c| [Some(c.as_str())]).collect();
        let mut statements: Vec<(&str, &[pg::Param<'_>])> =
            vec![("UPDATE agmsg_counter SET last = GREATEST(last, $2::bigint) WHERE part = $1", &counter)];
        // Inside the import's transaction: the watchers hear of it at the commit.
        statements.extend(notifies.iter().map(|n| (NOTIFY, n.as_slice())));
        conn.batch(&statements).and_then(|_| conn.simple("COMMIT")).map_err(|e| self.settings.fail(e))?;
        if conn.txn_status != b'I' {
            return Err(DriverError::runtime("postgres: the import did not commit"));
        }
        self.committed = true;
        Ok(())
    }
}

impl Drop for Importer {
    fn drop(&mut self) {
        if let Some(mut conn) = self.conn.take() {
            conn.set_deadline(Instant::now() + Duration::from_secs(2));
            if self.committed || conn.simple("ROLLBACK").is_ok() {
                park(conn, self.ensured);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::channel;

    #[test]
    fn channels_are_plain_short_names_one_per_partition_and_team() {
        let long = "t".repeat(500);
        let teams = ["dev", "Dev", "we\"ird; LISTEN x", long.as_str(), "ü"];
        let mut seen = std::collections::HashSet::new();
        for part in ["", "ns:dev"] {
            for team in teams {
                let c = channel(part, team);
                assert!(c.len() <= 63 && c.starts_with("agmsg_"), "{c}");
                assert!(c.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'), "{c}");
                assert_eq!(c, channel(part, team), "stable");
                assert!(seen.insert(c), "distinct for {part:?}/{team:?}");
            }
        }
        // The separator keeps (part, team) pairs apart that would concatenate alike.
        assert_ne!(channel("a", "bc"), channel("ab", "c"));
    }
}
