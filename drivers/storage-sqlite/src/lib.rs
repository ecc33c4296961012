//! agmsg's sqlite storage driver as a component.
//!
//! The store is agmsg's own `messages.db` (tables `events`, `read_cursors`, `storage_metadata` and the
//! legacy `messages`), so a database made by agmsg's bash driver opens here and one made here keeps
//! working for agmsg. Two additions are private to this driver and invisible to agmsg: the index
//! `events_history` and the table `legacy_unlinked` (see [`legacy`]), which keep history and unread
//! queries independent of the size of the store.
//!
//! Locking, two layers: every operation, reads included, holds the host's store lock (components
//! exclude each other for its whole span; see [`Session`] for how connections are kept or reopened);
//! and SQLite itself locks `messages.db` through the [`vfs`] shim, with the host taking real byte-range
//! locks on SQLite's lock bytes, so native `sqlite3` processes (agmsg's scripts) and components exclude
//! each other as two native processes do. Busy waits follow agmsg's 5000 ms.

#[cfg(any(test, fuzzing))]
pub mod fuzz_check;
mod legacy;
mod receipts;
mod schema;
mod sync;
mod vfs;

use std::time::Duration;

use agmsg_guest_sdk::ids::{new_id, now_utc};
use agmsg_guest_sdk::storage::{
    Description, DriverError, Event, EventExporter, EventImporter, Message, Pair, ReadMark, StorageDriver, StoreFile, StoreLock, WatchBatch,
};
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, Transaction, TransactionBehavior, params};

const DB_FILE: &str = "messages.db";
/// How long an operation waits for another holder of the store lock.
const LOCK_WAIT: Duration = Duration::from_secs(10);
/// How long SQLite waits for a native process's lock on the database, as agmsg's scripts do.
const BUSY_TIMEOUT: Duration = Duration::from_millis(5000);

#[derive(Default)]
struct Sqlite;

agmsg_guest_sdk::export_storage_driver!(Sqlite);
agmsg_guest_sdk::export_storage_receipts!(Sqlite);
agmsg_guest_sdk::export_storage_sync!(Sqlite);
agmsg_guest_sdk::export_storage_resync!(Sqlite);
agmsg_guest_sdk::export_storage_read_state!(Sqlite);

fn db_path() -> String {
    format!("{}/{DB_FILE}", agmsg_guest_sdk::STORE_DIR)
}

/// Map a SQLite failure to the contract's statuses: an unreadable database is `corrupt_state`.
fn sql_error(e: rusqlite::Error) -> DriverError {
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
            DriverError::corrupt(format!("sqlite: {DB_FILE} is not a usable SQLite database: {e}"))
        }
        _ => DriverError::runtime(format!("sqlite: {e}")),
    }
}

thread_local! {
    /// A connection kept between operations (rollback-journal stores only; see [`Session`]), with the
    /// identity of the file at the database's path when it was opened.
    static IDLE_CONNECTION: std::cell::RefCell<Option<(Connection, FileIdentity)>> = const { std::cell::RefCell::new(None) };
}

/// A file's device and inode (through WASI, the host's hash of them), `None` when it cannot be had.
type FileIdentity = Option<(u64, u64)>;

/// The identity of the file at `path` now. A kept connection reads the file it opened even after
/// another is renamed over its name (a restore from a backup): one whose file is no longer the one at
/// the path is closed, not reused.
fn file_identity(path: &str) -> FileIdentity {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(target_os = "wasi")]
    {
        // std's inode accessors are unstable on WASI; wasi-libc's stat (what SQLite's VFS uses) is not.
        let path = std::ffi::CString::new(path).ok()?;
        let mut buf = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: a NUL-terminated path and a buffer of the stat struct's size.
        if unsafe { libc::stat(path.as_ptr(), buf.as_mut_ptr()) } != 0 {
            return None;
        }
        // SAFETY: stat filled it.
        let buf = unsafe { buf.assume_init() };
        Some((buf.st_dev, buf.st_ino))
    }
    #[cfg(not(any(unix, target_os = "wasi")))]
    {
        let _ = path;
        None
    }
}

/// An open store for the span of one operation: the host lock, and a connection.
///
/// A rollback-journal database keeps its connection between operations: SQLite re-validates its page
/// cache (the file change counter) at the start of every transaction, so changes other processes made
/// in between are seen. A WAL database cannot: without shared memory SQLite needs
/// `locking_mode=EXCLUSIVE` for WAL and keeps the WAL index on the heap, which would go stale, so its
/// connection is opened and closed (checkpointing) within each operation.
///
/// Every statement outside a transaction takes and drops SQLite's shared lock, and each time SQLite
/// looks for a hot journal (in PERSIST mode: open it, read its header, close it) and re-validates its
/// cache: a dozen WASI calls. So the hot ops run in one transaction from the schema check on:
/// [`Session::read`] for reads, [`Session::writer`] for writes.
struct Session {
    conn: Option<Connection>,
    reusable: bool,
    /// The identity of the database file the connection was opened on (kept with it when parked).
    identity: FileIdentity,
    /// Whether the schema check has run ([`Session::writer`] defers it into its write transaction).
    checked: bool,
    /// A new connection still to be put in PERSIST mode (done in the op's first transaction).
    persist_pending: bool,
    /// A read transaction ([`Session::read`]) to end when the session ends.
    reading: bool,
    /// The host's store lock (none natively: the fuzz check's sessions, in a process of their own).
    _lock: Option<StoreLock>,
}

impl Session {
    /// Lock the store, open `messages.db` and make sure its schema (and the one-time cursor migration)
    /// is in place.
    fn open() -> Result<Session, DriverError> {
        Session::connect()?.check_schema()
    }

    /// [`Session::open`] on a connected session.
    fn check_schema(mut self) -> Result<Session, DriverError> {
        self.set_journal_mode()?;
        // A failure here closes the connection rather than keeping one in an unknown state.
        schema::ensure(self.conn()).map_err(sql_error)?;
        self.checked = true;
        Ok(self)
    }

    /// [`Session::open`] for an op that only reads: the schema check and the op's statements in one
    /// read transaction, ended when the session is dropped.
    fn read() -> Result<Session, DriverError> {
        Session::connect()?.begin_read()
    }

    /// [`Session::read`] on a connected session.
    fn begin_read(mut self) -> Result<Session, DriverError> {
        self.conn().execute_batch("BEGIN").map_err(sql_error)?;
        self.reading = true;
        self.set_journal_mode()?;
        if !schema::current(self.conn()) {
            // Creating or migrating the schema needs a write transaction of its own.
            self.conn().execute_batch("ROLLBACK").map_err(sql_error)?;
            schema::ensure(self.conn()).map_err(sql_error)?;
            self.conn().execute_batch("BEGIN").map_err(sql_error)?;
        }
        self.checked = true;
        Ok(self)
    }

    /// [`Session::open`] for an op that writes: the schema check waits for [`Session::write`], which
    /// makes it inside the op's write transaction.
    fn writer() -> Result<Session, DriverError> {
        Session::connect()
    }

    /// The store lock and a connection (the idle one if it is still on the file at the database's
    /// path, else a new one), nothing read yet.
    fn connect() -> Result<Session, DriverError> {
        let lock = StoreLock::acquire(LOCK_WAIT)?;
        let path = db_path();
        let wal = is_wal_file(&path);
        // Taken before a new connection opens the path: a file renamed in between makes the next op
        // open again, never keep a connection on a file that is gone from the path.
        let identity = file_identity(&path);
        let idle = if wal { None } else { IDLE_CONNECTION.with(|c| c.borrow_mut().take()) };
        let (conn, persist_pending) = match idle {
            Some((conn, opened_on)) if opened_on.is_some() && opened_on == identity => (conn, false),
            // Dropped (closed) here, under the lock, when it is on another file.
            _ => (open_connection(OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE, wal)?, !wal),
        };
        Ok(Session::on(conn, !wal, identity, persist_pending, Some(lock)))
    }

    /// A session on `conn` (opened on the file of `identity`), nothing read yet; `reusable`: parked for
    /// the next op when it ends; `persist_pending`: a new rollback-journal connection, put in PERSIST
    /// mode by the first transaction.
    fn on(conn: Connection, reusable: bool, identity: FileIdentity, persist_pending: bool, lock: Option<StoreLock>) -> Session {
        Session { conn: Some(conn), reusable, identity, checked: false, persist_pending, reading: false, _lock: lock }
    }

    /// Rollback journal kept between transactions with its header zeroed (PERSIST) rather than deleted
    /// or truncated: no directory update and no truncate per write. Per connection; the file format does
    /// not change, and a zeroed journal is never "hot" for any reader. Set before the connection's
    /// first write (SQLite allows the change in a transaction that has written nothing yet).
    fn set_journal_mode(&mut self) -> Result<(), DriverError> {
        if std::mem::take(&mut self.persist_pending) {
            self.conn().query_row("PRAGMA journal_mode=PERSIST", [], |r| r.get::<_, String>(0)).map_err(sql_error)?;
        }
        Ok(())
    }

    fn conn(&self) -> &Connection {
        self.conn.as_ref().expect("a session holds its connection until dropped")
    }

    fn write(&mut self) -> Result<Transaction<'_>, DriverError> {
        if std::mem::take(&mut self.reading) {
            // A read session that now writes: end the read first (BEGIN IMMEDIATE cannot nest).
            self.conn().execute_batch("COMMIT").map_err(sql_error)?;
        }
        let checked = std::mem::replace(&mut self.checked, true);
        // Computed before the transaction borrows the connection; the pragma itself runs inside it.
        let persist = std::mem::take(&mut self.persist_pending);
        let tx = self.conn.as_mut().expect("connection").transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql_error)?;
        if persist {
            tx.query_row("PRAGMA journal_mode=PERSIST", [], |r| r.get::<_, String>(0)).map_err(sql_error)?;
        }
        if !checked {
            // Inside the write transaction: the check costs no lock of its own, and the slow path
            // (create or migrate) runs in the same transaction.
            schema::ensure_in_transaction(&tx).map_err(sql_error)?;
        }
        Ok(tx)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Runs before the lock field is dropped: the connection is parked or closed under the lock.
        if let Some(conn) = self.conn.take() {
            // Ending a read transaction cannot fail in a way that matters: a connection still in one
            // is closed, not parked.
            if self.reading && !conn.is_autocommit() {
                let _ = conn.execute_batch("COMMIT");
            }
            if self.reusable && conn.is_autocommit() {
                IDLE_CONNECTION.with(|c| *c.borrow_mut() = Some((conn, self.identity)));
            }
        }
    }
}

/// Whether the database file is in WAL mode (header bytes 18 and 19 are 2), read before SQLite opens it.
fn is_wal_file(path: &str) -> bool {
    use std::io::Read;
    let mut header = [0u8; 20];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut header)).is_ok() && header[18] == 2 && header[19] == 2
}

fn open_connection(flags: OpenFlags, wal: bool) -> Result<Connection, DriverError> {
    open_connection_at(&db_path(), flags, wal)
}

/// [`open_connection`] on the database at `path` (natively: a unit test's store, through the same VFS).
fn open_connection_at(path: &str, flags: OpenFlags, wal: bool) -> Result<Connection, DriverError> {
    vfs::register().map_err(DriverError::runtime)?;
    let conn = Connection::open_with_flags_and_vfs(path, flags | OpenFlags::SQLITE_OPEN_NO_MUTEX, vfs::VFS_NAME).map_err(sql_error)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(sql_error)?;
    // The sandbox has no /tmp, so temporary data stays in memory.
    conn.execute_batch("PRAGMA temp_store=MEMORY;").map_err(sql_error)?;
    // A rollback-journal database is put in PERSIST mode by the session (`Session::set_journal_mode`),
    // in the op's first transaction, rather than here in a lock cycle of its own.
    if wal {
        // Exclusive locking mode: WAL without shared memory. SQLite then holds an EXCLUSIVE lock on the
        // database (real, through the VFS) for the connection's life, which is one operation: native
        // WAL connections hold SHARED while open, so neither side sees the other's WAL index half-made. NORMAL sync is durable across process crashes (closing checkpoints with
        // fsync), and keeping the emptied WAL file spares every write a file creation.
        conn.execute_batch("PRAGMA locking_mode=EXCLUSIVE; PRAGMA synchronous=NORMAL; PRAGMA journal_size_limit=0;").map_err(sql_error)?;
        let mut persist: std::ffi::c_int = 1;
        // SAFETY: a valid open handle, the "main" schema, and a pointer to an int, as the opcode requires.
        unsafe {
            rusqlite::ffi::sqlite3_file_control(
                conn.handle(),
                c"main".as_ptr(),
                rusqlite::ffi::SQLITE_FCNTL_PERSIST_WAL,
                (&raw mut persist).cast(),
            );
        }
    }
    Ok(conn)
}

fn message_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Message> {
    Ok(Message { id: row.get(0)?, team: row.get(1)?, from: row.get(2)?, to: row.get(3)?, body: row.get(4)?, at: row.get(5)? })
}

/// The AUTOINCREMENT high-water of `events`: agmsg's delivery cursor. It counts every event ever
/// inserted (reads too) and never goes back, even when compaction deletes rows.
fn high_water(conn: &Connection) -> rusqlite::Result<u64> {
    let seq: i64 = conn.query_row("SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name='events'), 0)", [], |r| r.get(0))?;
    Ok(u64::try_from(seq).unwrap_or(0))
}

fn parse_cursor(cursor: &str) -> Result<u64, DriverError> {
    if cursor.is_empty() || !cursor.bytes().all(|b| b.is_ascii_digit()) {
        return Err(DriverError::runtime(format!("invalid cursor {cursor:?}: expected a decimal position")));
    }
    // A decimal beyond u64 is still a valid (if absurd) position: saturate rather than fail.
    Ok(cursor.parse::<u64>().unwrap_or(u64::MAX))
}

fn as_sql_position(position: u64) -> i64 {
    i64::try_from(position).unwrap_or(i64::MAX)
}

/// Insert a `message_sent`, dual-written to the legacy `messages` table and linked by `legacy_id`.
fn insert_message(tx: &Connection, m: &Message) -> rusqlite::Result<()> {
    tx.prepare_cached("INSERT INTO messages(team, from_agent, to_agent, body, created_at) VALUES(?1, ?2, ?3, ?4, ?5)")?
        .execute(params![m.team, m.from, m.to, m.body, m.at])?;
    let legacy_id = tx.last_insert_rowid();
    tx.prepare_cached(
        "INSERT INTO events(type, id, team, from_agent, to_agent, body, at, legacy_id) \
         VALUES('message_sent', ?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![m.id, m.team, m.from, m.to, m.body, m.at, legacy_id])?;
    legacy::note_linked(tx, legacy_id)
}

/// Record that `agent` read `msg_id`, once: re-marking is idempotent. A linked legacy row gets its
/// `read_at` too (for outside readers of `messages`); a pure legacy row is never mutated.
fn insert_read(tx: &Connection, team: &str, agent: &str, msg_id: &str, id: &str, at: &str) -> rusqlite::Result<bool> {
    let already: bool = tx
        .prepare_cached("SELECT EXISTS(SELECT 1 FROM events WHERE type='message_read' AND team=?1 AND agent=?2 AND msg_id=?3)")?
        .query_row(params![team, agent, msg_id], |r| r.get(0))?;
    if already {
        return Ok(false);
    }
    tx.prepare_cached("INSERT INTO events(type, id, team, msg_id, agent, at) VALUES('message_read', ?1, ?2, ?3, ?4, ?5)")?
        .execute(params![id, team, msg_id, agent, at])?;
    // Look the link up by id (the planner would otherwise walk the recipient's messages in events_sent),
    // then update by primary key.
    let linked: Vec<i64> = tx
        .prepare_cached(
            "SELECT legacy_id FROM events INDEXED BY events_id WHERE type='message_sent' AND id=?1 AND team=?2 AND to_agent=?3 \
             AND legacy_id IS NOT NULL",
        )?
        .query_map(params![msg_id, team, agent], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for legacy_id in linked {
        tx.prepare_cached("UPDATE messages SET read_at=?1 WHERE id=?2 AND read_at IS NULL")?.execute(params![at, legacy_id])?;
    }
    Ok(true)
}

/// §2.2 consume: record the exact reads, then max-merge the pair's frontier through the contiguous
/// covered prefix that ends no later than `min(target, high-water)`. The first still-unread message
/// addressed to the pair is a hard gap the frontier never crosses.
/// `list-unread` on an open store: the pair's events past its read cursor and its unread legacy rows.
fn unread(conn: &Connection, team: &str, agent: &str, limit: Option<u32>) -> rusqlite::Result<Vec<Message>> {
    let mut unread: Vec<(Message, u8, i64)> = conn
        .prepare_cached(
            "SELECT e.id, e.team, e.from_agent, e.to_agent, e.body, e.at, e.seq FROM events e \
             WHERE e.type='message_sent' AND e.team=?1 AND e.to_agent=?2 \
             AND e.seq > COALESCE((SELECT local_position FROM read_cursors WHERE team=?1 AND agent=?2), 0) \
             AND NOT EXISTS (SELECT 1 FROM events r WHERE r.type='message_read' AND r.team=?1 AND r.agent=?2 \
             AND r.msg_id=e.id) ORDER BY e.seq",
        )
        .and_then(|mut stmt| {
            stmt.query_map(params![team, agent], |r| Ok((message_from_row(r)?, 1u8, r.get(6)?)))?.collect::<rusqlite::Result<Vec<_>>>()
        })?;
    unread.extend(legacy::unread(conn, team, agent)?);
    // agmsg's order: time, then source (legacy first), then store order. --limit keeps the oldest N.
    unread.sort_by(|a, b| (&a.0.at, a.1, a.2).cmp(&(&b.0.at, b.1, b.2)));
    if let Some(limit) = limit {
        unread.truncate(limit as usize);
    }
    Ok(unread.into_iter().map(|(m, _, _)| m).collect())
}

fn consume(tx: &Connection, team: &str, agent: &str, target: u64, ids: &[String]) -> rusqlite::Result<()> {
    let at = now_utc();
    for msg_id in ids {
        insert_read(tx, team, agent, msg_id, &new_id(), &at)?;
    }
    tx.prepare_cached("INSERT OR IGNORE INTO read_cursors(team, agent, local_position) VALUES(?1, ?2, 0)")?
        .execute(params![team, agent])?;
    let current: i64 = tx
        .prepare_cached("SELECT local_position FROM read_cursors WHERE team=?1 AND agent=?2")?
        .query_row(params![team, agent], |r| r.get(0))?;
    let cap = as_sql_position(target.min(high_water(tx)?));
    let gap: Option<i64> = tx
        .prepare_cached(
            "SELECT e.seq FROM events e WHERE e.type='message_sent' AND e.team=?1 AND e.to_agent=?2 \
             AND e.seq > ?3 AND e.seq <= ?4 AND NOT EXISTS (SELECT 1 FROM events r WHERE r.type='message_read' \
             AND r.team=?1 AND r.agent=?2 AND r.msg_id=e.id) ORDER BY e.seq LIMIT 1",
        )?
        .query_row(params![team, agent, current, cap], |r| r.get(0))
        .optional()?;
    let frontier = current.max(gap.map_or(cap, |g| g - 1));
    tx.prepare_cached("UPDATE read_cursors SET local_position=?3 WHERE team=?1 AND agent=?2")?.execute(params![team, agent, frontier])?;
    Ok(())
}

impl StorageDriver for Sqlite {
    fn check(&self) -> Result<(), DriverError> {
        // SQLite is compiled into the component: there is nothing to install. Prove the engine works.
        let conn = Connection::open_in_memory().map_err(sql_error)?;
        conn.query_row("SELECT sqlite_version()", [], |r| r.get::<_, String>(0)).map_err(sql_error)?;
        Ok(())
    }

    fn describe(&self) -> Description {
        Description {
            name: "sqlite".into(),
            backend: format!("SQLite {} event log + legacy messages table (wasm component)", rusqlite::version()),
            // The optional interfaces it exports (agmsg:storage 1.2.0).
            capabilities: vec!["receipts".into()],
            store_file: Some(StoreFile { key: "db".into(), path: DB_FILE.into() }),
        }
    }

    fn init(&self) -> Result<(), DriverError> {
        Session::open().map(drop)
    }

    /// agmsg's answer: the database file is there. It is not opened: agmsg's callers (check-inbox,
    /// history, remote pull) ask this to tell "no store yet" from a store, and a store that is damaged,
    /// or holds only agmsg's pre-event-log `messages` table, must reach the op that reports it or
    /// migrates it, not pass for no store at all.
    fn store_exists(&self) -> Result<bool, DriverError> {
        Ok(std::path::Path::new(&db_path()).is_file())
    }

    fn send(&self, team: &str, from: &str, to: &str, body: &str) -> Result<String, DriverError> {
        let mut session = Session::writer()?;
        let message = Message { id: new_id(), team: team.into(), from: from.into(), to: to.into(), body: body.into(), at: now_utc() };
        let tx = session.write()?;
        insert_message(&tx, &message).map_err(sql_error)?;
        tx.commit().map_err(sql_error)?;
        Ok(message.id)
    }

    fn list_unread(&self, team: &str, agent: &str, limit: Option<u32>) -> Result<Vec<Message>, DriverError> {
        let session = Session::read()?;
        unread(session.conn(), team, agent, limit).map_err(sql_error)
    }

    fn mark_read_batch(&self, team: &str, agent: &str, ids: &[String]) -> Result<(), DriverError> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut session = Session::writer()?;
        let tx = session.write()?;
        // As agmsg does: consume up to the current tip, so marking read also advances the frontier.
        let tip = high_water(&tx).map_err(sql_error)?;
        consume(&tx, team, agent, tip, ids).map_err(sql_error)?;
        tx.commit().map_err(sql_error)
    }

    fn read_cursor_get(&self, team: &str, agent: &str) -> Result<String, DriverError> {
        let session = Session::read()?;
        read_cursor(session.conn(), team, agent)
    }

    fn read_cursor_consume(&self, team: &str, agent: &str, cursor: &str, ids: &[String]) -> Result<(), DriverError> {
        let target = parse_cursor(cursor)?;
        let mut session = Session::writer()?;
        let tx = session.write()?;
        consume(&tx, team, agent, target, ids).map_err(sql_error)?;
        tx.commit().map_err(sql_error)
    }

    fn watch_tip(&self, _pairs: &[Pair]) -> Result<String, DriverError> {
        let session = Session::read()?;
        Ok(high_water(session.conn()).map_err(sql_error)?.to_string())
    }

    fn watch_after(&self, cursor: &str, pairs: &[Pair]) -> Result<WatchBatch, DriverError> {
        let after = parse_cursor(cursor)?;
        // One read transaction: the messages and the trailing cursor come from one snapshot.
        let session = Session::read()?;
        watch_after(session.conn(), after, pairs)
    }

    fn history(&self, team: &str, agent: Option<&str>, limit: Option<u32>) -> Result<Vec<Message>, DriverError> {
        let session = Session::read()?;
        history(session.conn(), team, agent, limit)
    }

    fn export_events(&self) -> Result<Box<dyn EventExporter>, DriverError> {
        Ok(Box::new(Exporter::begin(Session::open()?)?))
    }

    fn import_events(&self) -> Result<Box<dyn EventImporter>, DriverError> {
        Ok(Box::new(Importer::begin(Session::open()?)?))
    }

    fn compact(&self) -> Result<(), DriverError> {
        let mut session = Session::open()?;
        let tx = session.write()?;
        compact(&tx).map_err(sql_error)?;
        tx.commit().map_err(sql_error)
    }
}

/// `read-cursor-get` on an open store: the pair's delivery cursor (0 when it has none).
fn read_cursor(conn: &Connection, team: &str, agent: &str) -> Result<String, DriverError> {
    let position: Option<i64> = conn
        .query_row("SELECT local_position FROM read_cursors WHERE team=?1 AND agent=?2", params![team, agent], |r| r.get(0))
        .optional()
        .map_err(sql_error)?;
    Ok(position.unwrap_or(0).to_string())
}

/// `watch-after` on an open store (in one read transaction): the pairs' unread messages past `after`,
/// and the cursor to watch from next.
fn watch_after(tx: &Connection, after: u64, pairs: &[Pair]) -> Result<WatchBatch, DriverError> {
    let mut messages = Vec::new();
    {
        let mut stmt = tx
            .prepare_cached(
                "SELECT e.id, e.team, e.from_agent, e.to_agent, e.body, e.at, e.seq FROM events e \
                     WHERE e.type='message_sent' AND e.team=?1 AND e.to_agent=?2 AND e.seq > ?3 \
                     AND NOT EXISTS (SELECT 1 FROM events r WHERE r.type='message_read' AND r.team=?1 \
                     AND r.agent=?2 AND r.msg_id=e.id) ORDER BY e.seq",
            )
            .map_err(sql_error)?;
        let mut seen = std::collections::BTreeSet::new();
        for pair in pairs {
            if !seen.insert((&pair.team, &pair.agent)) {
                continue;
            }
            let rows = stmt
                .query_map(params![pair.team, pair.agent, as_sql_position(after)], |r| Ok((r.get::<_, i64>(6)?, message_from_row(r)?)))
                .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
                .map_err(sql_error)?;
            messages.extend(rows);
        }
    }
    messages.sort_by_key(|(seq, _)| *seq);
    // Never regress: a cursor beyond the tip comes back unchanged.
    let tip = high_water(tx).map_err(sql_error)?.max(after);
    Ok(WatchBatch { messages: messages.into_iter().map(|(_, m)| m).collect(), cursor: tip.to_string() })
}

/// `history` on an open store: the team's (or one agent's) last `limit` messages, oldest first.
fn history(conn: &Connection, team: &str, agent: Option<&str>, limit: Option<u32>) -> Result<Vec<Message>, DriverError> {
    let sql_limit = limit.map_or(-1, i64::from);
    // Walk the history index newest first; with a limit this touches only the tail of the log.
    let mut rows: Vec<(Message, u8, i64)> = conn
        .prepare_cached(
            "SELECT id, team, from_agent, to_agent, body, at, seq FROM events INDEXED BY events_history \
                 WHERE type='message_sent' AND team=?1 AND (?2 IS NULL OR to_agent=?2 OR from_agent=?2) \
                 ORDER BY at DESC, seq DESC LIMIT ?3",
        )
        .and_then(|mut stmt| {
            stmt.query_map(params![team, agent, sql_limit], |r| Ok((message_from_row(r)?, 1u8, r.get(6)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(sql_error)?;
    rows.extend(legacy::history(conn, team, agent, limit).map_err(sql_error)?);
    // Most recent N by (time, source, store order), then oldest to newest.
    rows.sort_by(|a, b| (&b.0.at, b.1, b.2).cmp(&(&a.0.at, a.1, a.2)));
    if let Some(limit) = limit {
        rows.truncate(limit as usize);
    }
    rows.reverse();
    Ok(rows.into_iter().map(|(m, _, _)| m).collect())
}

/// `compact` in the caller's write transaction: keep the earliest marker of each (team, agent,
/// msg_id); message_sent is never touched, and the AUTOINCREMENT high-water (the cursor) is unaffected
/// by deletes.
fn compact(tx: &Connection) -> rusqlite::Result<usize> {
    tx.execute(
        "DELETE FROM events WHERE type='message_read' AND seq NOT IN \
         (SELECT MIN(seq) FROM events WHERE type='message_read' GROUP BY team, agent, msg_id)",
        [],
    )
}

/// An export: one read transaction held across pages, under the store lock.
struct Exporter {
    session: Session,
    after: i64,
}

impl Exporter {
    /// The export's read transaction on a checked session ([`Session::open`]).
    fn begin(session: Session) -> Result<Exporter, DriverError> {
        session.conn().execute_batch("BEGIN").map_err(sql_error)?;
        Ok(Exporter { session, after: 0 })
    }
}

impl EventExporter for Exporter {
    fn next_page(&mut self, max: u32) -> Result<Vec<Event>, DriverError> {
        let mut stmt = self
            .session
            .conn()
            .prepare_cached(
                "SELECT seq, type, id, team, from_agent, to_agent, body, msg_id, agent, at FROM events \
                 WHERE seq > ?1 AND type IN ('message_sent', 'message_read') ORDER BY seq LIMIT ?2",
            )
            .map_err(sql_error)?;
        let rows = stmt
            .query_map(params![self.after, max], |r| {
                let seq: i64 = r.get(0)?;
                let kind: String = r.get(1)?;
                let event = if kind == "message_sent" {
                    Event::MessageSent(Message {
                        id: r.get(2)?,
                        team: r.get::<_, Option<String>>(3)?.unwrap_or_default(),
                        from: r.get::<_, Option<String>>(4)?.unwrap_or_default(),
                        to: r.get::<_, Option<String>>(5)?.unwrap_or_default(),
                        body: r.get::<_, Option<String>>(6)?.unwrap_or_default(),
                        at: r.get(9)?,
                    })
                } else {
                    Event::MessageRead(ReadMark {
                        id: r.get(2)?,
                        msg_id: r.get::<_, Option<String>>(7)?.unwrap_or_default(),
                        team: r.get::<_, Option<String>>(3)?.unwrap_or_default(),
                        agent: r.get::<_, Option<String>>(8)?.unwrap_or_default(),
                        at: r.get(9)?,
                    })
                };
                Ok((seq, event))
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(sql_error)?;
        if let Some((seq, _)) = rows.last() {
            self.after = *seq;
        }
        Ok(rows.into_iter().map(|(_, e)| e).collect())
    }
}

/// An import: one write transaction held across pages, under the store lock. Dropping it without a
/// commit rolls everything back (closing a connection with an open transaction rolls it back).
struct Importer {
    session: Session,
    committed: bool,
}

impl Importer {
    /// The import's write transaction on a checked session ([`Session::open`]).
    fn begin(session: Session) -> Result<Importer, DriverError> {
        session.conn().execute_batch("BEGIN IMMEDIATE").map_err(sql_error)?;
        Ok(Importer { session, committed: false })
    }
}

impl EventImporter for Importer {
    fn push_page(&mut self, events: Vec<Event>) -> Result<(), DriverError> {
        if self.committed {
            return Err(DriverError::runtime("import already committed"));
        }
        // Runs inside the BEGIN IMMEDIATE transaction that import_events opened.
        import_page(self.session.conn(), events)
    }

    fn commit(&mut self) -> Result<(), DriverError> {
        if self.committed {
            return Ok(());
        }
        self.session.conn().execute_batch("COMMIT").map_err(sql_error)?;
        self.committed = true;
        Ok(())
    }
}

/// Apply a page of a validated import. Already-present records are skipped, so importing the same file
/// twice changes nothing; a message id that exists with different content is a conflict.
fn import_page(tx: &Connection, events: Vec<Event>) -> Result<(), DriverError> {
    for event in events {
        match event {
            Event::MessageSent(m) => {
                // By id: without the hint the planner may walk every message_sent in events_sent.
                let existing: Option<(String, String, String, String, String)> = tx
                    .prepare_cached(
                        "SELECT team, from_agent, to_agent, body, at FROM events INDEXED BY events_id WHERE type='message_sent' AND id=?1 LIMIT 1",
                    )
                    .and_then(|mut s| s.query_row([&m.id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))).optional())
                    .map_err(sql_error)?;
                match existing {
                    None => insert_message(tx, &m).map_err(sql_error)?,
                    Some(row) if row == (m.team.clone(), m.from.clone(), m.to.clone(), m.body.clone(), m.at.clone()) => {}
                    Some(_) => {
                        return Err(DriverError::runtime(format!(
                            "import conflict: message {} already exists with different content",
                            m.id
                        )));
                    }
                }
            }
            Event::MessageRead(r) => {
                insert_read(tx, &r.team, &r.agent, &r.msg_id, &r.id, &r.at).map_err(sql_error)?;
            }
        }
    }
    Ok(())
}
