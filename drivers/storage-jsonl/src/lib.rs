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

mod events;
mod index;

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::time::Duration;

use agmsg_guest_sdk::ids::{new_id, now_utc};
use agmsg_guest_sdk::storage::{
    Description, DriverError, Event, EventExporter, EventImporter, Message, Pair, ReadMark, StorageDriver, StoreFile,
    StoreLock, WatchBatch,
};
use agmsg_contract::records;

use events::{io_error, parse_line};
use index::Index;

const LOG_FILE: &str = "events.jsonl";
const CURSORS_FILE: &str = "read-cursors.tsv";
const MIGRATION_MARKER: &str = ".read-cursor-v1";
const LOCK_WAIT: Duration = Duration::from_secs(10);

fn store_path(name: &str) -> String {
    format!("{}/{name}", agmsg_guest_sdk::STORE_DIR)
}

#[derive(Default)]
struct Jsonl;

agmsg_guest_sdk::export_storage_driver!(Jsonl);

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

/// Append lines to the log in one write.
fn append(lines: &[String]) -> Result<(), DriverError> {
    if lines.is_empty() {
        return Ok(());
    }
    let mut text = String::new();
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    let mut file = std::fs::OpenOptions::new().append(true).create(true).open(store_path(LOG_FILE)).map_err(io_error)?;
    file.write_all(text.as_bytes()).map_err(io_error)
}

/// Replace `name` with `content` atomically: a temp file in the store, synced, then renamed.
fn rewrite(name: &str, content: &[u8]) -> Result<(), DriverError> {
    let tmp = store_path(&format!("{name}.tmp.{}", new_id()));
    let result = std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(content).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&tmp, store_path(name)));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io_error)
}

/// `read-cursors.tsv`: pair -> position, in first-seen order; the last line for a pair wins.
struct Cursors {
    order: Vec<(String, String)>,
    positions: HashMap<(String, String), u64>,
}

impl Cursors {
    fn load() -> Result<Cursors, DriverError> {
        let text = match std::fs::read_to_string(store_path(CURSORS_FILE)) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(io_error(e)),
        };
        let mut cursors = Cursors { order: Vec::new(), positions: HashMap::new() };
        for (n, line) in text.lines().enumerate() {
            if line.is_empty() {
                continue;
            }
            let mut fields = line.split('\t');
            let (Some(team), Some(agent), Some(position), None) = (fields.next(), fields.next(), fields.next(), fields.next()) else {
                return Err(DriverError::corrupt(format!("{CURSORS_FILE} line {}: expected team<TAB>agent<TAB>position", n + 1)));
            };
            let position = position
                .parse::<u64>()
                .map_err(|_| DriverError::corrupt(format!("{CURSORS_FILE} line {}: bad position {position:?}", n + 1)))?;
            cursors.set(team, agent, position);
        }
        Ok(cursors)
    }

    fn get(&self, team: &str, agent: &str) -> u64 {
        self.positions.get(&(team.to_owned(), agent.to_owned())).copied().unwrap_or(0)
    }

    fn set(&mut self, team: &str, agent: &str, position: u64) {
        let key = (team.to_owned(), agent.to_owned());
        if self.positions.insert(key.clone(), position).is_none() {
            self.order.push(key);
        }
    }

    fn save(&self) -> Result<(), DriverError> {
        let mut text = String::new();
        for key in &self.order {
            text.push_str(&format!("{}\t{}\t{}\n", key.0, key.1, self.positions[key]));
        }
        rewrite(CURSORS_FILE, text.as_bytes())
    }
}

impl Jsonl {
    /// Lock the store, create it if needed (with the one-time cursor migration), and open its index,
    /// brought up to date with the log; then run `f`.
    fn with_store<T>(&self, f: impl FnOnce(&mut Index) -> Result<T, DriverError>) -> Result<T, DriverError> {
        let _lock = StoreLock::acquire(LOCK_WAIT)?;
        ensure_store()?;
        f(&mut Index::open()?)
    }
}

/// Create the log if it is missing and run the one-time cursor migration if it has not run. Only the
/// migration needs the index.
fn ensure_store() -> Result<(), DriverError> {
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
            capabilities: Vec::new(),
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
        let _lock = StoreLock::acquire(LOCK_WAIT)?;
        ensure_store()?;
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
        self.with_store(|_| Ok(Cursors::load()?.get(team, agent).to_string()))
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
        let lock = StoreLock::acquire(LOCK_WAIT)?;
        let events = read_v1_events()?;
        Ok(Box::new(Exporter { events: events.into_iter(), _lock: lock }))
    }

    fn import_events(&self) -> Result<Box<dyn EventImporter>, DriverError> {
        let lock = StoreLock::acquire(LOCK_WAIT)?;
        Ok(Box::new(Importer { staged: Vec::new(), committed: false, _lock: lock }))
    }

    fn compact(&self) -> Result<(), DriverError> {
        self.with_store(|_| {
            let text = std::fs::read(store_path(LOG_FILE)).map_err(io_error)?;
            let mut kept = Vec::with_capacity(text.len());
            let mut seen_reads = HashSet::new();
            let mut removed = 0usize;
            for (n, line) in text.split_inclusive(|&b| b == b'\n').enumerate() {
                let body = line.strip_suffix(b"\n").unwrap_or(line);
                let value: serde_json::Value = match serde_json::from_slice(body) {
                    Ok(value) => value,
                    Err(_) if body.iter().all(u8::is_ascii_whitespace) => continue,
                    Err(e) => return Err(DriverError::corrupt(format!("{LOG_FILE} line {}: invalid JSON: {e}", n + 1))),
                };
                if value.get("type").and_then(|t| t.as_str()) == Some("message_read") {
                    // A tuple key: ("a b", "c") and ("a", "b c") stay distinct.
                    let key = (value.get("team").cloned(), value.get("agent").cloned(), value.get("msg_id").cloned());
                    if !seen_reads.insert(key) {
                        removed += 1;
                        continue;
                    }
                }
                kept.extend_from_slice(body);
                kept.push(b'\n');
            }
            if removed > 0 {
                rewrite(LOG_FILE, &kept)?;
                // Lines moved: rebuild the index now rather than in the next op.
                Index::open()?;
            }
            Ok(())
        })
    }
}

fn same_message(a: &Message, b: &Message) -> bool {
    (&a.id, &a.team, &a.from, &a.to, &a.body, &a.at) == (&b.id, &b.team, &b.from, &b.to, &b.body, &b.at)
}

/// The v1 events of the log, in log order.
fn read_v1_events() -> Result<Vec<Event>, DriverError> {
    let text = match std::fs::read(store_path(LOG_FILE)) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error(e)),
    };
    let mut events = Vec::new();
    for (n, line) in text.split(|&b| b == b'\n').enumerate() {
        events.extend(parse_line(line, n as u64 + 1)?);
    }
    Ok(events)
}

struct Exporter {
    events: std::vec::IntoIter<Event>,
    _lock: StoreLock,
}

impl EventExporter for Exporter {
    fn next_page(&mut self, max: u32) -> Result<Vec<Event>, DriverError> {
        Ok(self.events.by_ref().take(max as usize).collect())
    }
}

/// Staged events; `commit` writes the old log plus the new lines to a temp file and renames it into
/// place, so an import is all or nothing.
struct Importer {
    staged: Vec<Event>,
    committed: bool,
    _lock: StoreLock,
}

impl EventImporter for Importer {
    fn push_page(&mut self, events: Vec<Event>) -> Result<(), DriverError> {
        self.staged.extend(events);
        Ok(())
    }

    fn commit(&mut self) -> Result<(), DriverError> {
        if self.committed {
            return Ok(());
        }
        ensure_store()?;
        let mut index = Index::open()?;
        let mut lines = Vec::new();
        let mut new_ids: HashMap<String, Message> = HashMap::new();
        let mut new_reads = HashSet::new();
        for event in self.staged.drain(..) {
            match event {
                Event::MessageSent(m) => {
                    let existing = match new_ids.get(&m.id) {
                        Some(staged) => Some(staged.clone()),
                        None => index.message_with_id(&m.id)?,
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
                            lines.push(sent_line(&m));
                            new_ids.insert(m.id.clone(), m);
                        }
                    }
                }
                Event::MessageRead(r) => {
                    let key = (r.team.clone(), r.agent.clone(), r.msg_id.clone());
                    if !new_reads.contains(&key) && !index.is_read(&r.team, &r.agent, &r.msg_id)? && new_reads.insert(key) {
                        lines.push(read_line(&r));
                    }
                }
            }
        }
        if !lines.is_empty() {
            let mut content = match std::fs::read(store_path(LOG_FILE)) {
                Ok(content) => content,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
                Err(e) => return Err(io_error(e)),
            };
            if !content.is_empty() && !content.ends_with(b"\n") {
                content.push(b'\n');
            }
            for line in lines {
                content.extend_from_slice(line.as_bytes());
                content.push(b'\n');
            }
            rewrite(LOG_FILE, &content)?;
        }
        self.committed = true;
        Ok(())
    }
}
