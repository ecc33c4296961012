//! The fuzz target `sqlite_store` (issue 39): a damaged `messages.db` through this driver's own
//! queries and migrations. Compiled only for the driver's unit tests and for the fuzz build
//! (`--cfg fuzzing`, scripts/fuzz), where the driver runs natively: its VFS registers over the native
//! `unix-none` and takes the host's locks itself (`vfs::native_locks`), as in the unit tests.
//!
//! The input is a whole database file. [`sqlite_store`] writes it to a file of its own, opens it as a
//! session does in the component (`open_connection_at` through the driver's VFS, PERSIST journal or
//! exclusive WAL as the header says) and runs each op the way its `StorageDriver` method does, on a new
//! connection each (a new process's first op): the schema check and its migrations, list-unread,
//! history, read-cursor-get, watch-tip and watch-after, send, mark-read-batch, read-cursor-consume,
//! export's pages, an import of what the export gave, compact, and sync's prepare-push (its sealer's
//! `none` envelopes, every candidate read). Each must
//! answer, a failure as `corrupt_state` or `runtime_error` (a SQLite error through `sql_error`), never
//! a panic; no op may hang (libFuzzer's `-timeout`, the replay's deadline) and the export must end.
//! In the fuzz build SQLite allocates through Rust's allocator, so the fuzz crate's allocation bound
//! counts SQLite's page cache and statements too.

use std::path::{Path, PathBuf};

use agmsg_guest_sdk::ids::{new_id, now_utc};
use agmsg_guest_sdk::storage::{Binding, DriverError, Event, EventExporter, EventImporter, Message, Pair, Status};
use rusqlite::OpenFlags;

use crate::{
    Exporter, Importer, Session, compact, consume, high_water, history, insert_message, read_cursor, sql_error, unread, watch_after,
};

/// The team and agents the ops ask about: the seeds' (`fuzz/corpus/sqlite_store`).
const TEAM: &str = "t";
const AGENTS: [&str; 2] = ["a", "b"];
/// The sync binding's remote team (a UUIDv7, as the sealer requires).
const REMOTE: &str = "01890a5d-ac96-7a4b-bcce-b302099a8057";

/// Run the driver's ops on `data` read as `messages.db`.
pub fn sqlite_store(data: &[u8]) {
    #[cfg(fuzzing)]
    counted::install();
    let path = scratch(data);
    store_ops(path.to_str().expect("a UTF-8 scratch path"), data.len());
}

/// The ops, each on a session of its own over the store at `path` (of `len` bytes as given); answers
/// the ops that failed.
fn store_ops(path: &str, len: usize) -> Vec<&'static str> {
    let mut failed = Vec::new();
    answer(&mut failed, "init", session(path).and_then(Session::check_schema).map(drop));
    let mut unread_ids = Vec::new();
    for agent in AGENTS {
        if let Some(messages) = answer(&mut failed, "list-unread", read(path, |s| unread(s.conn(), TEAM, agent, None).map_err(sql_error))) {
            unread_ids.extend(messages.into_iter().map(|m| m.id));
        }
        answer(&mut failed, "list-unread --limit", read(path, |s| unread(s.conn(), TEAM, agent, Some(1)).map_err(sql_error)));
        answer(&mut failed, "history --agent --limit", read(path, |s| history(s.conn(), TEAM, Some(agent), Some(2))));
        answer(&mut failed, "read-cursor-get", read(path, |s| read_cursor(s.conn(), TEAM, agent)));
    }
    answer(&mut failed, "history", read(path, |s| history(s.conn(), TEAM, None, None)));
    answer(&mut failed, "watch-tip", read(path, |s| high_water(s.conn()).map_err(sql_error)));
    let pairs: Vec<Pair> = AGENTS.iter().map(|a| Pair { team: TEAM.into(), agent: (*a).into() }).collect();
    answer(&mut failed, "watch-after", read(path, |s| watch_after(s.conn(), 0, &pairs)));

    let message = Message { id: new_id(), team: TEAM.into(), from: "a".into(), to: "b".into(), body: "hi".into(), at: now_utc() };
    answer(&mut failed, "send", write(path, |tx| insert_message(tx, &message).map_err(sql_error)));
    // mark-read-batch: consume up to the tip, marking what list-unread gave (or an id no store holds).
    if unread_ids.is_empty() {
        unread_ids.push(new_id());
    }
    answer(
        &mut failed,
        "mark-read-batch",
        write(path, |tx| consume(tx, TEAM, "b", high_water(tx).map_err(sql_error)?, &unread_ids).map_err(sql_error)),
    );
    answer(&mut failed, "read-cursor-consume", write(path, |tx| consume(tx, TEAM, "a", u64::MAX, &[]).map_err(sql_error)));

    // export: pages of 2 until an empty one; each page moves past its last event, so there are fewer
    // pages than the store (as the ops left it: database and WAL) has bytes.
    let export = session(path).and_then(Session::check_schema).and_then(Exporter::begin).and_then(|mut exporter| {
        let size = |suffix: &str| std::fs::metadata(format!("{path}{suffix}")).map_or(0, |m| m.len());
        let bytes = size("") + size("-wal");
        let mut events = Vec::new();
        for _ in 0..=bytes {
            let page = exporter.next_page(2)?;
            if page.is_empty() {
                return Ok(events);
            }
            events.extend(page);
        }
        panic!("the export did not end after {} pages of a {bytes}-byte store ({len} bytes as given)", bytes + 1)
    });
    if let Some(events) = answer(&mut failed, "export", export) {
        answer(&mut failed, "import", import(path, events));
    }
    answer(&mut failed, "compact", write(path, |tx| compact(tx).map(drop).map_err(sql_error)));
    let binding =
        Binding { local_team: TEAM.into(), server_instance_id: "s".into(), remote_team_id: REMOTE.into(), protocol_version: "1".into() };
    answer(
        &mut failed,
        "sync prepare-push",
        session(path).and_then(Session::check_schema).and_then(|s| crate::sync::prepare_push_all(s, &binding)),
    );
    failed
}

/// An op's answer: a value, or an error with a status of the contract's for a damaged store (the op
/// then noted in `failed`).
fn answer<T>(failed: &mut Vec<&'static str>, op: &'static str, result: Result<T, DriverError>) -> Option<T> {
    match result {
        Ok(value) => Some(value),
        Err(e) => {
            assert!(matches!(e.status, Status::CorruptState | Status::RuntimeError), "{op}: {:?}: {}", e.status, e.message);
            assert!(e.directive.is_none() && !e.message.is_empty(), "{op}: {e:?}");
            failed.push(op);
            None
        }
    }
}

/// A new connection to `path` as `Session::connect` makes one (no store lock: this process is alone).
fn session(path: &str) -> Result<Session, DriverError> {
    let wal = crate::is_wal_file(path);
    let conn = crate::open_connection_at(path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE, wal)?;
    Ok(Session::on(conn, false, None, !wal, None))
}

/// A read op: `Session::read`, then `op` in its read transaction.
fn read<T>(path: &str, op: impl FnOnce(&Session) -> Result<T, DriverError>) -> Result<T, DriverError> {
    let session = session(path)?.begin_read()?;
    op(&session)
}

/// A write op: `Session::writer`, then `op` in `Session::write`'s transaction, committed.
fn write(path: &str, op: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<(), DriverError>) -> Result<(), DriverError> {
    let mut session = session(path)?;
    let tx = session.write()?;
    op(&tx)?;
    tx.commit().map_err(sql_error)
}

/// `import-events` with `events` as one page, committed.
fn import(path: &str, events: Vec<Event>) -> Result<(), DriverError> {
    let mut importer = Importer::begin(session(path)?.check_schema()?)?;
    importer.push_page(events)?;
    importer.commit()
}

/// A thread's scratch directory, removed when the thread ends (a test's; libFuzzer's process exits
/// without running it, and leaves its one store behind).
struct ScratchDir(PathBuf);

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// This thread's scratch store, holding `data` as `messages.db` and no journal (in /dev/shm when there
/// is one: the fuzzer writes it at every input).
fn scratch(data: &[u8]) -> PathBuf {
    thread_local! {
        static DIR: ScratchDir = {
            static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let shm = Path::new("/dev/shm");
            let base = if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() };
            let dir = base.join(format!("agmsg-sqlite-store-{}-{n}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("the scratch directory");
            ScratchDir(dir)
        };
    }
    let dir = DIR.with(|d| d.0.clone());
    for suffix in ["-journal", "-wal", "-shm"] {
        let _ = std::fs::remove_file(dir.join(format!("messages.db{suffix}")));
    }
    let path = dir.join("messages.db");
    std::fs::write(&path, data).expect("the scratch store");
    path
}

/// SQLite's allocations through Rust's global allocator (the fuzz binaries' counting one), so that the
/// fuzz crate's allocation bound covers them. Installed before SQLite initializes, once per process.
///
/// A block over [`counted::LARGEST`] fails, as any would in a component at its memory limit (SQLite
/// then answers `SQLITE_NOMEM`, which the driver must report as an error). SQLite sizes one block by
/// what a damaged cell claims: the overflow-page cache of a record (`aOverflow`), 8 bytes per page of
/// the claimed payload, up to 2^32 / (usable page size - 4) x 8 bytes, about 70 MB with 512-byte pages,
/// allocated before it reads the chain and finds it corrupt (`regress-sqlite-overflow-cache`: 30 MB at
/// once for a store of 10 kB). Within the component's memory limit (256 MiB), and SQLite's, not the
/// driver's; the fuzz check fails it instead of counting it.
#[cfg(fuzzing)]
mod counted {
    use std::alloc::Layout;
    use std::ffi::{c_int, c_void};

    use rusqlite::ffi;

    /// Each block starts with its size, padded to keep SQLite's 8-byte alignment (16 here).
    const HEADER: usize = 16;
    /// The largest block SQLite gets (see the module's doc).
    pub const LARGEST: usize = 8 << 20;

    /// A block of `size` bytes and its header; none past [`LARGEST`].
    fn layout(size: usize) -> Option<Layout> {
        if size > LARGEST {
            return None;
        }
        Layout::from_size_align(size.checked_add(HEADER)?, HEADER).ok()
    }

    unsafe extern "C" fn malloc(size: c_int) -> *mut c_void {
        let Some(layout) = usize::try_from(size).ok().and_then(layout) else { return std::ptr::null_mut() };
        // SAFETY: a layout of at least HEADER bytes; the size is written in the header it reserved.
        unsafe {
            let base = std::alloc::alloc(layout);
            if base.is_null() {
                return base.cast();
            }
            base.cast::<usize>().write(size as usize);
            base.add(HEADER).cast()
        }
    }

    /// # Safety
    /// `p`: a block [`malloc`] or [`realloc`] returned.
    unsafe fn base(p: *mut c_void) -> (*mut u8, usize) {
        unsafe {
            let base = p.cast::<u8>().sub(HEADER);
            (base, base.cast::<usize>().read())
        }
    }

    unsafe extern "C" fn free(p: *mut c_void) {
        if p.is_null() {
            return;
        }
        // SAFETY: SQLite frees only what its xMalloc/xRealloc gave, once.
        unsafe {
            let (base, size) = base(p);
            std::alloc::dealloc(base, layout(size).expect("the layout it was allocated with"));
        }
    }

    unsafe extern "C" fn realloc(p: *mut c_void, size: c_int) -> *mut c_void {
        let Some(new) = usize::try_from(size).ok().filter(|n| layout(*n).is_some()) else { return std::ptr::null_mut() };
        // SAFETY: `p` is a live block of ours (SQLite never passes null here); the old layout is its own.
        unsafe {
            let (base, old) = base(p);
            let moved = std::alloc::realloc(base, layout(old).expect("its layout"), new + HEADER);
            if moved.is_null() {
                return moved.cast();
            }
            moved.cast::<usize>().write(new);
            moved.add(HEADER).cast()
        }
    }

    unsafe extern "C" fn size(p: *mut c_void) -> c_int {
        if p.is_null() {
            return 0;
        }
        // SAFETY: as in `free`.
        unsafe { base(p).1 as c_int }
    }

    unsafe extern "C" fn roundup(size: c_int) -> c_int {
        size.checked_add(7).map_or(size, |n| n & !7)
    }

    unsafe extern "C" fn init(_: *mut c_void) -> c_int {
        ffi::SQLITE_OK
    }

    unsafe extern "C" fn shutdown(_: *mut c_void) {}

    pub fn install() {
        static INSTALLED: std::sync::Once = std::sync::Once::new();
        INSTALLED.call_once(|| {
            let methods = ffi::sqlite3_mem_methods {
                xMalloc: Some(malloc),
                xFree: Some(free),
                xRealloc: Some(realloc),
                xSize: Some(size),
                xRoundup: Some(roundup),
                xInit: Some(init),
                xShutdown: Some(shutdown),
                pAppData: std::ptr::null_mut(),
            };
            // SAFETY: before SQLite initializes (nothing in the fuzz binary used it yet); SQLite copies
            // the methods.
            let rc = unsafe { ffi::sqlite3_config(ffi::SQLITE_CONFIG_MALLOC, &raw const methods) };
            assert_eq!(rc, ffi::SQLITE_OK, "SQLite's allocator could not be set");
        });
    }
}

/// `fuzz/corpus/sqlite_store` replayed through the check (CI does not fuzz; scripts/fuzz does), and
/// the corpus's seeds: small stores made by this driver's code, written to the corpus with
/// `AGMSG_WRITE_SQLITE_SEEDS=<dir>`.
#[cfg(test)]
mod tests {
    use std::path::Path;

    use rusqlite::{Connection, OpenFlags, params};

    use super::{REMOTE, sqlite_store};
    use crate::{insert_message, schema};

    fn replay(name: &str, data: &[u8]) {
        let started = std::time::Instant::now();
        if let Err(e) = std::panic::catch_unwind(|| sqlite_store(data)) {
            let why = e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()));
            panic!("{name}: {}", why.unwrap_or_default());
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "{name}: a hang");
    }

    #[test]
    fn the_kept_corpus_replays() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/sqlite_store");
        let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        assert!(!files.is_empty(), "{} holds no input", dir.display());
        for file in files {
            replay(&file.display().to_string(), &std::fs::read(&file).unwrap());
        }
    }

    /// A new store at `path` in 512-byte pages (the seeds stay small: 2 to 33 KiB, the sync tables
    /// being 40 tables and indexes of a page each at least), through the driver's VFS.
    fn create(path: &Path) -> Connection {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
        let conn = crate::open_connection_at(path.to_str().unwrap(), flags, false).unwrap();
        conn.execute_batch("PRAGMA page_size=512; PRAGMA journal_mode=PERSIST;").unwrap();
        conn
    }

    fn send(conn: &Connection, from: &str, to: &str, body: &str, at: &str) -> String {
        let m = agmsg_guest_sdk::storage::Message {
            id: agmsg_guest_sdk::ids::new_id(),
            team: "t".into(),
            from: from.into(),
            to: to.into(),
            body: body.into(),
            at: at.into(),
        };
        insert_message(conn, &m).unwrap();
        m.id
    }

    /// The driver's schema with a few messages, a read and cursors.
    fn messages(conn: &Connection) {
        schema::ensure(conn).unwrap();
        let first = send(conn, "a", "b", "hello", "2026-01-02T03:04:05Z");
        send(conn, "b", "a", "hi there", "2026-01-02T03:04:06Z");
        send(conn, "a", "b", "a second line\nwith a newline", "2026-01-02T03:04:07Z");
        crate::consume(conn, "t", "b", 1, std::slice::from_ref(&first)).unwrap();
        crate::consume(conn, "t", "a", 2, &[]).unwrap();
    }

    /// agmsg's bash driver before its event log: the `messages` table alone, one row read.
    fn legacy(conn: &Connection) {
        conn.execute_batch(
            "CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, team TEXT NOT NULL, from_agent TEXT NOT NULL,
               to_agent TEXT NOT NULL, body TEXT NOT NULL,
               created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')), read_at TEXT);",
        )
        .unwrap();
        for (from, to, body, at, read) in [
            ("a", "b", "legacy one", "2025-12-01T10:00:00Z", Some("2025-12-01T10:05:00Z")),
            ("b", "a", "legacy two", "2025-12-01T10:01:00Z", None),
            ("a", "b", "legacy three", "2025-12-01T10:02:00Z", None),
        ] {
            conn.execute(
                "INSERT INTO messages(team, from_agent, to_agent, body, created_at, read_at) VALUES('t', ?1, ?2, ?3, ?4, ?5)",
                params![from, to, body, at, read],
            )
            .unwrap();
        }
    }

    /// How a seed is made on a new store.
    type Make = fn(&Connection);

    /// Each seed: its name and how it is made.
    fn seeds() -> Vec<(&'static str, Make)> {
        vec![
            ("seed-new-store", |conn| schema::ensure(conn).unwrap()),
            ("seed-messages", messages),
            ("seed-legacy-only", legacy),
            ("seed-legacy-migrated", |conn| {
                legacy(conn);
                schema::ensure(conn).unwrap();
                send(conn, "b", "a", "after the migration", "2026-01-01T00:00:00Z");
            }),
            // A store of this driver's first revision (no `message_receipts`), without agmsg's cursor
            // migration marker: the slow path migrates it.
            ("seed-old-revision", |conn| {
                messages(conn);
                conn.execute_batch(
                    "DROP TABLE message_receipts; UPDATE storage_metadata SET value='1' WHERE key='agmsg_host_schema';
                     DELETE FROM storage_metadata WHERE key='read_cursor_v1';",
                )
                .unwrap();
            }),
            // An event log from before `legacy_id`, which the schema check adds: it indexed the column
            // before adding it, so no op could open such a store.
            ("regress-events-without-legacy-id", |conn| {
                messages(conn);
                conn.execute_batch(
                    "DROP INDEX events_legacy; ALTER TABLE events DROP COLUMN legacy_id;
                     DELETE FROM storage_metadata WHERE key='agmsg_host_schema';",
                )
                .unwrap();
            }),
            ("seed-sync-tables", |conn| {
                messages(conn);
                let binding = agmsg_guest_sdk::storage::Binding {
                    local_team: "t".into(),
                    server_instance_id: "s".into(),
                    remote_team_id: REMOTE.into(),
                    protocol_version: "1".into(),
                };
                crate::sync::open_binding(conn, &binding).unwrap();
            }),
            // agmsg's stores may be in WAL mode; this VFS has no shared memory, so WAL takes exclusive
            // locking (as `open_connection_at` sets it for a WAL store).
            ("seed-wal", |conn| {
                conn.execute_batch("PRAGMA locking_mode=EXCLUSIVE").unwrap();
                assert_eq!(conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0)).unwrap(), "wal");
                messages(conn);
            }),
        ]
    }

    /// Makes the seeds and replays them; with `AGMSG_WRITE_SQLITE_SEEDS=<dir>` also writes them there
    /// (`fuzz/corpus/sqlite_store` to refresh the corpus's).
    #[test]
    fn the_seeds_replay() {
        let dir = tempfile::tempdir().unwrap();
        let out = std::env::var_os("AGMSG_WRITE_SQLITE_SEEDS");
        // libFuzzer's first input: an empty file, which SQLite reads as an empty database.
        replay("the empty input", b"");
        for (name, make) in seeds() {
            let path = dir.path().join(name).join("messages.db");
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let conn = create(&path);
            make(&conn);
            drop(conn);
            let data = std::fs::read(&path).unwrap();
            assert!(data.len() <= 40 << 10, "{name}: {} bytes", data.len());
            replay(name, &data);
            // A sound store: every op answers.
            let path = super::scratch(&data);
            assert_eq!(super::store_ops(path.to_str().unwrap(), data.len()), Vec::<&str>::new(), "{name}");
            if let Some(out) = &out {
                std::fs::write(Path::new(out).join(name), &data).unwrap();
            }
        }
    }
}
