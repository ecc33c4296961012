//! agmsg's jsonl storage driver as a component.
//!
//! Same layout as agmsg's bash driver: `events.jsonl` (one compact JSON event per line, append-only),
//! `read-cursors.tsv` (`team<TAB>agent<TAB>position`, the last matching line wins) and the migration
//! marker `.read-cursor-v1`. A log written by agmsg's driver opens here, and one written here stays
//! valid for agmsg's.
//!
//! The delivery cursor is the ordinal of `message_sent` events (1-based), as in agmsg: compaction never
//! removes or reorders messages, so cursors survive it. Reads go through a persistent index in a sidecar
//! directory that each op brings up to date by parsing only the appended lines (see [`index`]), so no
//! op re-parses the whole log, even in a new process. Every op holds the host's
//! store lock; rewrites (import, compaction, cursors) go through a temp file and a rename.

mod agmsg_lock;
mod cursors;
mod events;
#[cfg(any(test, fuzzing))]
pub mod fuzz_check;
mod generation;
mod host;
mod idtable;
mod index;
mod index_files;
mod rename;
mod sync;

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::time::Duration;

use agmsg_contract::records;
use agmsg_guest_sdk::ids::{new_id, now_utc};
use agmsg_guest_sdk::storage::{
    Description, DriverError, Event, EventExporter, EventImporter, Message, Pair, ReadMark, StorageDriver, StoreFile, StoreLock, WatchBatch,
};

use cursors::Cursors;
use events::{LineReader, io_error, line_at, parse_line, read_full_at, write_all_at};
use idtable::{IdTable, hash_bytes};
use index::{Index, id_hash, index_path};

const LOG_FILE: &str = "events.jsonl";
const CURSORS_FILE: &str = "read-cursors.tsv";
const MIGRATION_MARKER: &str = ".read-cursor-v1";
const LOCK_WAIT: Duration = Duration::from_secs(10);

fn store_path(name: &str) -> String {
    format!("{}/{name}", host::store_dir())
}

#[derive(Default)]
struct Jsonl;

agmsg_guest_sdk::export_storage_driver!(Jsonl);
agmsg_guest_sdk::export_storage_rename!(Jsonl);
agmsg_guest_sdk::export_storage_sync!(Jsonl);

/// The host's store lock and, inside it, agmsg's own `events.jsonl.lock/` (see [`agmsg_lock`]). Fields
/// drop in order: agmsg's lock is released first.
struct LogLock {
    _agmsg: agmsg_lock::AgmsgLock,
    _store: host::HostLock,
}

fn lock_log() -> Result<LogLock, DriverError> {
    let store = host::lock()?;
    Ok(LogLock { _agmsg: agmsg_lock::AgmsgLock::acquire()?, _store: store })
}

fn sent_line(m: &Message) -> String {
    records::message_sent(&m.id, &m.team, &m.from, &m.to, &m.body, &m.at)
}

fn read_line(r: &ReadMark) -> String {
    records::message_read(&r.id, &r.msg_id, &r.team, &r.agent, &r.at)
}

fn parse_cursor(cursor: &str) -> Result<u64, DriverError> {
    if cursor.is_empty() || !cursor.bytes().all(|b| b.is_ascii_digit()) {
        return Err(DriverError::runtime(format!("invalid cursor {cursor:?}: expected a decimal position")));
    }
    Ok(cursor.parse::<u64>().unwrap_or(u64::MAX))
}

/// Append lines to the log in one write (not synced: a message or read mark needs no more than agmsg's
/// own `>>` gives it).
fn append(lines: &[String]) -> Result<(), DriverError> {
    append_to(&store_path(LOG_FILE), lines, false)
}

/// Append lines to `path` in one write, as agmsg's sync journal appends: the size is recorded first and
/// a failed write is cut back to it, so no torn line is left for agmsg's strict reader (which refuses a
/// log ending in an incomplete record); `synced` also syncs the file before returning, for a record
/// that must be on disk once the op reports success.
fn append_to(path: &str, lines: &[String], synced: bool) -> Result<(), DriverError> {
    if lines.is_empty() {
        return Ok(());
    }
    let mut text = String::new();
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    let mut file = std::fs::OpenOptions::new().append(true).create(true).open(path).map_err(io_error)?;
    let size = file.metadata().map_err(io_error)?.len();
    let written = file.write_all(text.as_bytes()).and_then(|()| if synced { file.sync_all() } else { Ok(()) });
    if let Err(e) = written {
        // A WASI append stream may have split the write: undo whatever part of it landed.
        if let Err(undo) = file.set_len(size).and_then(|()| file.sync_all()) {
            return Err(DriverError::runtime(format!("jsonl: {e}; and cutting {path} back to {size} bytes failed: {undo}")));
        }
        return Err(io_error(e));
    }
    Ok(())
}

/// Sync the store directory, so that a rename into it survives a power cut.
fn sync_store_dir() {
    sync_dir(host::store_dir());
}

/// Sync a directory, so that a rename into it or a removal from it survives a power cut (a journal's
/// creation and removal are commit points). WASI can: a directory descriptor's `sync` fsyncs the
/// directory. The change itself has happened either way, so a failure is reported as a warning, not
/// as a failed op.
fn sync_dir(dir: impl AsRef<std::path::Path>) {
    let dir = dir.as_ref();
    if let Err(e) = std::fs::File::open(dir).and_then(|dir| dir.sync_all()) {
        host::warn(&format!("jsonl: syncing {} after a rename or a removal failed: {e}", dir.display()));
    }
}

/// Replace `name` with `content` atomically: a temp file in the store, synced, then renamed.
fn rewrite(name: &str, content: &[u8]) -> Result<(), DriverError> {
    rewrite_with(name, content, true)
}

/// [`rewrite`], synced to disk first or not (`durable`).
fn rewrite_with(name: &str, content: &[u8], durable: bool) -> Result<(), DriverError> {
    let tmp = store_path(&format!("{name}.tmp.{}", new_id()));
    let result = std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(content).and_then(|()| if durable { f.sync_all() } else { Ok(()) }))
        .and_then(|()| {
            sync::crash::crash_point("rewrite:before-rename");
            std::fs::rename(&tmp, store_path(name))
        });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io_error)
}

/// `read-cursors.tsv` read from and written to the store (the text's reader and writer are
/// [`cursors`]'s).
impl Cursors {
    fn load() -> Result<Cursors, DriverError> {
        let text = match std::fs::read_to_string(store_path(CURSORS_FILE)) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(io_error(e)),
        };
        Cursors::parse(&text)
    }

    fn save(&self) -> Result<(), DriverError> {
        rewrite(CURSORS_FILE, self.text().as_bytes())
    }
}

impl Jsonl {
    /// Lock the store, create it if needed (with the one-time cursor migration), and open its index,
    /// brought up to date with the log; then run `f`.
    fn with_store<T>(&self, f: impl FnOnce(&mut Index) -> Result<T, DriverError>) -> Result<T, DriverError> {
        let _lock = lock_store()?;
        f(&mut Index::open()?)
    }
}

/// Lock the store and create it if needed (with the one-time cursor migration); held until dropped.
fn lock_store() -> Result<LogLock, DriverError> {
    let lock = lock_log()?;
    ensure_store()?;
    Ok(lock)
}

/// Create the log if it is missing and run the one-time cursor migration if it has not run. Only the
/// migration needs the index.
fn ensure_store() -> Result<(), DriverError> {
    roll_back_interrupted_import()?;
    if !std::path::Path::new(&store_path(LOG_FILE)).exists() {
        std::fs::OpenOptions::new().append(true).create(true).open(store_path(LOG_FILE)).map_err(io_error)?;
    }
    if !std::path::Path::new(&store_path(MIGRATION_MARKER)).exists() {
        migrate(&mut Index::open()?)?;
    }
    Ok(())
}

/// The pre-cursor backlog counts as consumed: every (team, recipient) moves to the current message
/// count. A new store has no messages and starts at zero.
fn migrate(index: &mut Index) -> Result<(), DriverError> {
    let mut recipients = HashSet::new();
    index.scan(0, |_, record| {
        recipients.insert((record.team, record.to));
        true
    })?;
    let mut cursors = Cursors::load()?;
    let tip = index.tip();
    for (team, agent) in recipients {
        let (team, agent) = (index.name(team), index.name(agent));
        let current = cursors.get(team, agent);
        cursors.set(team, agent, current.max(tip));
    }
    if tip > 0 {
        cursors.save()?;
    }
    std::fs::write(store_path(MIGRATION_MARKER), b"").map_err(io_error)
}

/// The positions (0-based indexes) from `start` of the messages to (team, agent) its recipient has not
/// read, at most `limit` of them and none at index `end` or later.
fn unread_to(index: &mut Index, team: &str, agent: &str, start: u64, end: u64, limit: usize) -> Result<Vec<u64>, DriverError> {
    let (Some(team), Some(agent)) = (index.name_id(team), index.name_id(agent)) else { return Ok(Vec::new()) };
    let mut hits = Vec::new();
    index.scan(start, |position, record| {
        if position >= end || hits.len() >= limit {
            return false;
        }
        if record.team == team && record.to == agent && !record.is_read() {
            hits.push(position);
        }
        true
    })?;
    Ok(hits)
}

/// §2.2 consume: record the exact reads, then max-merge the frontier through the contiguous covered
/// prefix ending no later than min(target, tip); the first still-unread message is a hard gap.
fn consume(index: &mut Index, team: &str, agent: &str, target: u64, ids: &[String]) -> Result<(), DriverError> {
    let at = now_utc();
    let mut lines = Vec::new();
    let mut seen = HashSet::new();
    for msg_id in ids {
        if !seen.insert(msg_id) || index.is_read(team, agent, msg_id)? {
            continue;
        }
        lines.push(read_line(&ReadMark { id: new_id(), msg_id: msg_id.clone(), team: team.into(), agent: agent.into(), at: at.clone() }));
    }
    append(&lines)?;
    index.refresh()?;
    let mut cursors = Cursors::load()?;
    let current = cursors.get(team, agent);
    let cap = target.min(index.tip());
    // Position p is index p - 1: the first unread message in (current, cap] is the gap.
    let gap = unread_to(index, team, agent, current, cap, 1)?.first().map(|&i| i + 1);
    let frontier = current.max(gap.map_or(cap, |g| g - 1));
    if frontier != current || !cursors.positions.contains_key(&(team.to_owned(), agent.to_owned())) {
        cursors.set(team, agent, frontier);
        cursors.save()?;
    }
    Ok(())
}

impl StorageDriver for Jsonl {
    fn describe(&self) -> Description {
        Description {
            name: "jsonl".into(),
            backend: "append-only JSONL event log with a persistent sidecar index (wasm component)".into(),
            // The optional interfaces it exports (agmsg:storage 1.2.0): a caller reads them here.
            capabilities: vec!["rename".into()],
            store_file: Some(StoreFile { key: "log".into(), path: LOG_FILE.into() }),
        }
    }

    fn init(&self) -> Result<(), DriverError> {
        self.with_store(|_| Ok(()))
    }

    fn store_exists(&self) -> Result<bool, DriverError> {
        let _lock = StoreLock::acquire(LOCK_WAIT)?;
        Ok(std::path::Path::new(&store_path(LOG_FILE)).is_file())
    }

    fn send(&self, team: &str, from: &str, to: &str, body: &str) -> Result<String, DriverError> {
        // A send only appends: it never needs the index, so it costs the same at any log size (the next
        // read picks the line up incrementally).
        let _lock = lock_store()?;
        let message = Message { id: new_id(), team: team.into(), from: from.into(), to: to.into(), body: body.into(), at: now_utc() };
        append(&[sent_line(&message)])?;
        Ok(message.id)
    }

    fn list_unread(&self, team: &str, agent: &str, limit: Option<u32>) -> Result<Vec<Message>, DriverError> {
        self.with_store(|index| {
            let frontier = Cursors::load()?.get(team, agent);
            let limit = limit.map_or(usize::MAX, |l| l as usize);
            let positions = unread_to(index, team, agent, frontier, u64::MAX, limit)?;
            index.messages(&positions)
        })
    }

    fn mark_read_batch(&self, team: &str, agent: &str, ids: &[String]) -> Result<(), DriverError> {
        if ids.is_empty() {
            return Ok(());
        }
        self.with_store(|index| {
            let tip = index.tip();
            consume(index, team, agent, tip, ids)
        })
    }

    fn read_cursor_get(&self, team: &str, agent: &str) -> Result<String, DriverError> {
        // The cursor file alone: no need to catch the index up (a watch round asks this first, and its
        // `watch-after` then catches up once).
        let _lock = lock_store()?;
        Ok(Cursors::load()?.get(team, agent).to_string())
    }

    fn read_cursor_consume(&self, team: &str, agent: &str, cursor: &str, ids: &[String]) -> Result<(), DriverError> {
        let target = parse_cursor(cursor)?;
        self.with_store(|index| consume(index, team, agent, target, ids))
    }

    fn watch_tip(&self, _pairs: &[Pair]) -> Result<String, DriverError> {
        self.with_store(|index| Ok(index.tip().to_string()))
    }

    fn watch_after(&self, cursor: &str, pairs: &[Pair]) -> Result<WatchBatch, DriverError> {
        let after = parse_cursor(cursor)?;
        self.with_store(|index| {
            // Subscriptions naming someone no message names cannot match anything.
            let subscribed: HashSet<(u32, u32)> =
                pairs.iter().filter_map(|p| Some((index.name_id(&p.team)?, index.name_id(&p.agent)?))).collect();
            let mut hits = Vec::new();
            if !subscribed.is_empty() {
                index.scan(after, |position, record| {
                    if !record.is_read() && subscribed.contains(&(record.team, record.to)) {
                        hits.push(position);
                    }
                    true
                })?;
            }
            Ok(WatchBatch {
                messages: index.messages(&hits)?,
                // Never regress: a cursor beyond the tip comes back unchanged.
                cursor: index.tip().max(after).to_string(),
            })
        })
    }

    fn history(&self, team: &str, agent: Option<&str>, limit: Option<u32>) -> Result<Vec<Message>, DriverError> {
        self.with_store(|index| {
            let Some(team) = index.name_id(team) else { return Ok(Vec::new()) };
            let member = match agent {
                Some(agent) => match index.name_id(agent) {
                    Some(id) => Some(id),
                    None => return Ok(Vec::new()),
                },
                None => None,
            };
            let limit = limit.map_or(usize::MAX, |l| l as usize);
            // The last `limit` in log order: scan back from the tip.
            let mut positions = Vec::new();
            index.scan_back(|position, record| {
                if positions.len() >= limit {
                    return false;
                }
                if record.team == team && member.is_none_or(|m| record.from == m || record.to == m) {
                    positions.push(position);
                }
                true
            })?;
            positions.reverse();
            index.messages(&positions)
        })
    }

    fn export_events(&self) -> Result<Box<dyn EventExporter>, DriverError> {
        let lock = lock_log()?;
        roll_back_interrupted_import()?;
        let lines = match std::fs::File::open(store_path(LOG_FILE)) {
            Ok(file) => Some(LineReader::new(file, 0)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io_error(e)),
        };
        Ok(Box::new(Exporter { lines, number: 0, queued: std::collections::VecDeque::new(), _lock: lock }))
    }

    fn import_events(&self) -> Result<Box<dyn EventImporter>, DriverError> {
        let lock = lock_log()?;
        ensure_store()?;
        Ok(Box::new(Importer::new(lock)?))
    }

    fn compact(&self) -> Result<(), DriverError> {
        self.with_store(|_| compact_log())
    }
}

/// Keep the first `message_read` of each (team, agent, msg_id) and every other line, streaming the log
/// into a temp file that is renamed over it if anything was removed. The keys seen are looked up in an
/// on-disk table checked against the kept lines, so memory stays bounded whatever the log's size.
///
/// A log that holds sync state is always rewritten, as agmsg's compaction always is, and the replacement
/// gets a fresh sync generation (appended and synced before the rename, so there is no moment with
/// rewritten offsets under the old generation): agmsg's engine then rebinds its unacknowledged
/// reservations to the new offsets.
fn compact_log() -> Result<(), DriverError> {
    // A tuple key, as JSON: ("a b", "c") and ("a", "b c") stay distinct.
    fn read_key(value: &serde_json::Value) -> Option<String> {
        (value.get("type").and_then(|t| t.as_str()) == Some("message_read"))
            .then(|| serde_json::json!([value.get("team"), value.get("agent"), value.get("msg_id")]).to_string())
    }
    let mut reader = LineReader::new(std::fs::File::open(store_path(LOG_FILE)).map_err(io_error)?, 0);
    let tmp = store_path(&format!("{LOG_FILE}.tmp.{}", new_id()));
    let seen_path = index_path("compact-reads.bin");
    let result = (|| {
        let out = std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&tmp).map_err(io_error)?;
        let seen_file =
            std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&seen_path).map_err(io_error)?;
        let mut seen = IdTable::new(seen_file, Vec::new(), 1 << 12);
        let (mut written, mut buffer) = (0u64, Vec::new());
        let mut removed = 0usize;
        let mut number = 0u64;
        let mut sync_state = false;
        while let Some((_, line)) = reader.next_line().map_err(io_error)? {
            number += 1;
            let value: serde_json::Value = match serde_json::from_slice(line) {
                Ok(value) => value,
                Err(_) if line.iter().all(u8::is_ascii_whitespace) => continue,
                Err(e) => return Err(DriverError::corrupt(format!("{LOG_FILE} line {number}: invalid JSON: {e}"))),
            };
            sync_state = sync_state || generation::is_sync_record(line, &value);
            let at = written + buffer.len() as u64;
            if let Some(key) = read_key(&value) {
                let hash = hash_bytes(&[key.as_bytes()]);
                let candidates = seen.candidates(hash)?;
                if !candidates.is_empty() {
                    // Only a true duplicate is dropped: read back the kept line the hash points at.
                    write_all_at(&out, &buffer, written).map_err(io_error)?;
                    written += buffer.len() as u64;
                    buffer.clear();
                }
                let mut duplicate = false;
                for offset in candidates {
                    let kept = line_at(&out, offset).map_err(io_error)?;
                    if serde_json::from_slice::<serde_json::Value>(&kept).ok().and_then(|v| read_key(&v)).as_ref() == Some(&key) {
                        duplicate = true;
                        break;
                    }
                }
                if duplicate {
                    removed += 1;
                    continue;
                }
                seen.insert(hash, at)?;
            }
            buffer.extend_from_slice(line);
            buffer.push(b'\n');
            if buffer.len() >= 1 << 20 {
                write_all_at(&out, &buffer, written).map_err(io_error)?;
                written += buffer.len() as u64;
                buffer.clear();
            }
        }
        if removed == 0 && !sync_state {
            return Ok(false);
        }
        write_all_at(&out, &buffer, written).map_err(io_error)?;
        if sync_state {
            // As agmsg's rotation: one synced append to the replacement, which syncs all of it.
            drop(out);
            append_to(&tmp, &[generation::line()], true)?;
        } else {
            out.sync_all().map_err(io_error)?;
        }
        std::fs::rename(&tmp, store_path(LOG_FILE)).map_err(io_error)?;
        sync_store_dir();
        Ok(true)
    })();
    let _ = std::fs::remove_file(&tmp);
    let _ = std::fs::remove_file(&seen_path);
    if result? {
        // Lines moved: rebuild the index now rather than in the next op.
        Index::open()?;
    }
    Ok(())
}

fn same_message(a: &Message, b: &Message) -> bool {
    (&a.id, &a.team, &a.from, &a.to, &a.body, &a.at) == (&b.id, &b.team, &b.from, &b.to, &b.body, &b.at)
}

/// Pages of the log's v1 events, in log order, read as they are asked for.
struct Exporter {
    lines: Option<LineReader>,
    number: u64,
    /// Events of a line that held more than the page had room for (a `sync_pull_commit`).
    queued: std::collections::VecDeque<Event>,
    _lock: LogLock,
}

impl EventExporter for Exporter {
    fn next_page(&mut self, max: u32) -> Result<Vec<Event>, DriverError> {
        let max = max as usize;
        let mut page = Vec::new();
        while page.len() < max {
            if let Some(event) = self.queued.pop_front() {
                page.push(event);
                continue;
            }
            let Some(lines) = self.lines.as_mut() else { break };
            let Some((_, line)) = lines.next_line().map_err(io_error)? else {
                self.lines = None;
                break;
            };
            self.number += 1;
            self.queued.extend(parse_line(line, self.number)?);
        }
        Ok(page)
    }
}

/// While an import's lines or a sync commit are being appended to the log: the log's length before, so
/// that an append cut short (a kill, the call deadline) is undone by the next op.
const IMPORT_JOURNAL: &str = "import-commit";
const APPEND_JOURNAL: &str = IMPORT_JOURNAL;
/// Staging files of an import, in the index directory.
const STAGED_LINES: &str = "import-lines.jsonl";
const STAGED_IDS: &str = "import-ids.bin";
const STAGED_READS: &str = "import-reads.bin";

/// Undo the append of an import that did not finish, and drop a killed import's staging files. Runs
/// under the store lock, before any op reads the log.
fn roll_back_interrupted_import() -> Result<(), DriverError> {
    let journal = index_path(IMPORT_JOURNAL);
    let text = match std::fs::read_to_string(&journal) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_error(e)),
    };
    let length: u64 =
        text.trim().parse().map_err(|_| DriverError::corrupt(format!("jsonl: {DIR_NAME}/{IMPORT_JOURNAL} is not a length")))?;
    let log = std::fs::OpenOptions::new().write(true).open(store_path(LOG_FILE)).map_err(io_error)?;
    if log.metadata().map_err(io_error)?.len() > length {
        log.set_len(length).map_err(io_error)?;
        log.sync_all().map_err(io_error)?;
    }
    sync::crash::crash_point("recover:cut-back");
    host::warn("jsonl: an import was interrupted (or a sync commit) while it was being written; its lines were removed from the log");
    std::fs::remove_file(&journal).map_err(io_error)?;
    sync_dir(index_path(""));
    for staged in [STAGED_LINES, STAGED_IDS, STAGED_READS] {
        let _ = std::fs::remove_file(index_path(staged));
    }
    Ok(())
}

const DIR_NAME: &str = index::DIR;

/// An import in progress. Each page is checked against the log (through its index) and what is
/// staged already, and its new lines are appended to a staging file; `commit` appends that file to the
/// log. Memory stays bounded: the staged ids and read marks are looked up in on-disk tables, checked
/// against the staged lines. Dropped without a commit, it removes its staging files, and the log is as
/// it was.
struct Importer {
    index: Index,
    lines: std::fs::File,
    lines_len: u64,
    /// Staged message ids -> offset of their line in `lines`; staged read keys the same.
    ids: IdTable,
    reads: IdTable,
    /// This page's staged lines and table entries, written at the end of the page (one write, one
    /// batch insert each) rather than per event: at most a page of each.
    page_lines: Vec<u8>,
    page_ids: HashMap<u64, Vec<u64>>,
    page_reads: HashMap<u64, Vec<u64>>,
    committed: bool,
    _lock: LogLock,
}

impl Importer {
    fn new(lock: LogLock) -> Result<Importer, DriverError> {
        let index = Index::open()?;
        let create = |name: &str| {
            std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(index_path(name)).map_err(io_error)
        };
        // The lock is held: any staging file here belongs to an import that was killed.
        let lines = create(STAGED_LINES)?;
        let ids = IdTable::new(create(STAGED_IDS)?, Vec::new(), 1 << 12);
        let reads = IdTable::new(create(STAGED_READS)?, Vec::new(), 1 << 12);
        Ok(Importer {
            index,
            lines,
            lines_len: 0,
            ids,
            reads,
            page_lines: Vec::new(),
            page_ids: HashMap::new(),
            page_reads: HashMap::new(),
            committed: false,
            _lock: lock,
        })
    }

    /// The staged line at `offset`, parsed.
    fn staged_event(&mut self, offset: u64) -> Result<Event, DriverError> {
        self.write_page_lines()?;
        let line = line_at(&self.lines, offset).map_err(io_error)?;
        parse_line(&line, 0)?.into_iter().next().ok_or_else(|| DriverError::runtime("jsonl import: a staged line holds no event"))
    }

    /// Stage a line; returns its offset in the staging file.
    fn stage(&mut self, line: &str) -> u64 {
        let offset = self.lines_len + self.page_lines.len() as u64;
        self.page_lines.extend_from_slice(line.as_bytes());
        self.page_lines.push(b'\n');
        offset
    }

    fn write_page_lines(&mut self) -> Result<(), DriverError> {
        if !self.page_lines.is_empty() {
            write_all_at(&self.lines, &self.page_lines, self.lines_len).map_err(io_error)?;
            self.lines_len += self.page_lines.len() as u64;
            self.page_lines.clear();
        }
        Ok(())
    }

    /// Write the page: its lines, then its table entries.
    fn write_page(&mut self) -> Result<(), DriverError> {
        self.write_page_lines()?;
        for (table, page) in [(&mut self.ids, &mut self.page_ids), (&mut self.reads, &mut self.page_reads)] {
            let mut entries: Vec<(u64, u64)> =
                page.drain().flat_map(|(hash, offsets)| offsets.into_iter().map(move |o| (hash, o))).collect();
            table.insert_batch(&mut entries)?;
        }
        Ok(())
    }

    fn push_event(&mut self, event: Event) -> Result<(), DriverError> {
        match event {
            Event::MessageSent(m) => {
                let hash = id_hash(&m.id);
                let mut existing = None;
                let mut candidates = self.ids.candidates(hash)?;
                candidates.extend(self.page_ids.get(&hash).into_iter().flatten());
                for offset in candidates {
                    if let Event::MessageSent(staged) = self.staged_event(offset)?
                        && staged.id == m.id
                    {
                        existing = Some(staged);
                        break;
                    }
                }
                let existing = match existing {
                    Some(staged) => Some(staged),
                    None => self.index.message_with_id(&m.id)?,
                };
                match existing {
                    Some(old) if same_message(&old, &m) => {}
                    Some(_) => {
                        return Err(DriverError::runtime(format!(
                            "import conflict: message {} already exists with different content",
                            m.id
                        )));
                    }
                    None => {
                        let offset = self.stage(&sent_line(&m));
                        self.page_ids.entry(hash).or_default().push(offset);
                    }
                }
            }
            Event::MessageRead(r) => {
                let hash = hash_bytes(&[r.team.as_bytes(), r.agent.as_bytes(), r.msg_id.as_bytes()]);
                let mut candidates = self.reads.candidates(hash)?;
                candidates.extend(self.page_reads.get(&hash).into_iter().flatten());
                for offset in candidates {
                    if let Event::MessageRead(staged) = self.staged_event(offset)?
                        && (&staged.team, &staged.agent, &staged.msg_id) == (&r.team, &r.agent, &r.msg_id)
                    {
                        return Ok(());
                    }
                }
                if !self.index.is_read(&r.team, &r.agent, &r.msg_id)? {
                    let offset = self.stage(&read_line(&r));
                    self.page_reads.entry(hash).or_default().push(offset);
                }
            }
        }
        Ok(())
    }

    fn remove_staging(&self) {
        for staged in [STAGED_LINES, STAGED_IDS, STAGED_READS] {
            let _ = std::fs::remove_file(index_path(staged));
        }
    }
}

impl EventImporter for Importer {
    fn push_page(&mut self, events: Vec<Event>) -> Result<(), DriverError> {
        if self.committed {
            return Err(DriverError::runtime("import already committed"));
        }
        for event in events {
            self.push_event(event)?;
        }
        self.write_page()
    }

    /// Append the staged lines to the log. The journal written first makes it all or nothing: an append
    /// cut short is undone by the next op (`roll_back_interrupted_import`).
    fn commit(&mut self) -> Result<(), DriverError> {
        if self.committed {
            return Ok(());
        }
        if self.lines_len > 0
            && let Err(e) = self.append_staged()
        {
            // Undo a partial append now (a kill or the deadline leaves it to the next op).
            let _ = roll_back_interrupted_import();
            return Err(e);
        }
        self.committed = true;
        self.remove_staging();
        Ok(())
    }
}

impl Importer {
    fn append_staged(&mut self) -> Result<(), DriverError> {
        let log = std::fs::OpenOptions::new().read(true).write(true).open(store_path(LOG_FILE)).map_err(io_error)?;
        let mut at = log.metadata().map_err(io_error)?.len();
        // The journal first: from here until it is removed, the next op undoes what was appended.
        rewrite(&format!("{DIR_NAME}/{IMPORT_JOURNAL}"), at.to_string().as_bytes())?;
        sync_dir(index_path(""));
        if at > 0 {
            let mut last = [0u8; 1];
            read_full_at(&log, &mut last, at - 1).map_err(io_error)?;
            if last[0] != b'\n' {
                write_all_at(&log, b"\n", at).map_err(io_error)?;
                at += 1;
            }
        }
        let mut buf = vec![0u8; 1 << 20];
        let mut copied = 0;
        while copied < self.lines_len {
            let n = read_full_at(&self.lines, &mut buf, copied).map_err(io_error)?;
            if n == 0 {
                return Err(DriverError::runtime("jsonl import: the staged lines ended early"));
            }
            write_all_at(&log, &buf[..n], at + copied).map_err(io_error)?;
            copied += n as u64;
        }
        log.sync_all().map_err(io_error)?;
        std::fs::remove_file(index_path(IMPORT_JOURNAL)).map_err(io_error)?;
        // The commit point: a journal that came back after a power cut would cut the import away.
        sync_dir(index_path(""));
        Ok(())
    }
}

impl Drop for Importer {
    fn drop(&mut self) {
        if !self.committed {
            self.remove_staging();
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::append_to;

    /// A write that lands only in part (here: the process's file-size limit stops it after five bytes)
    /// is cut back, so the log keeps no torn line. The limit is process-wide: the test restores it at
    /// once, and no other unit test of this crate writes a file.
    #[test]
    fn a_failed_append_is_cut_back_to_the_old_size() {
        // RLIMIT_FSIZE is per process: set in this test binary it would also make the harness's own
        // report fail to write when its stdout is a file (CI's log), killing the run. So the limited
        // append runs in a child: this binary again, running only this test, its output a pipe.
        const CHILD: &str = "AGMSG_JSONL_FSIZE_CHILD";
        if let Some(path) = std::env::var_os(CHILD) {
            return append_under_a_file_size_limit(std::path::Path::new(&path));
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        std::fs::write(&path, "{\"type\":\"message_sent\"}\n").unwrap();
        let before = std::fs::read(&path).unwrap();
        let child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["tests::a_failed_append_is_cut_back_to_the_old_size", "--exact", "--test-threads=1"])
            .env(CHILD, &path)
            .output()
            .unwrap();
        assert!(child.status.success(), "{}{}", String::from_utf8_lossy(&child.stdout), String::from_utf8_lossy(&child.stderr));
        assert!(String::from_utf8_lossy(&child.stdout).contains("1 passed"), "the child ran the test");
        assert_eq!(std::fs::read(&path).unwrap(), before, "the partial record was cut away");
        // And without a limit the same append lands whole.
        append_to(path.to_str().unwrap(), &["{}".into()], true).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), [before.as_slice(), b"{}\n"].concat());
    }

    /// The child's half: an append that a file-size limit 5 bytes above the log stops part way.
    fn append_under_a_file_size_limit(path: &std::path::Path) {
        let size = std::fs::metadata(path).unwrap().len();
        let mut old = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: plain libc calls with valid pointers; SIGXFSZ ignored so the write fails with EFBIG.
        let result = unsafe {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            assert_eq!(libc::getrlimit(libc::RLIMIT_FSIZE, &mut old), 0);
            let limit = libc::rlimit { rlim_cur: size as libc::rlim_t + 5, rlim_max: old.rlim_max };
            assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &limit), 0);
            let result = append_to(path.to_str().unwrap(), &["a record longer than five bytes".into()], true);
            assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &old), 0);
            result
        };
        let error = result.expect_err("the limit stops the write");
        assert!(error.message.contains("jsonl:"), "{error:?}");
    }
}
