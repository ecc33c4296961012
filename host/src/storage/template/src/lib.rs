//! {{name}}: an agmsg storage driver.
//!
//! The whole store is one JSON file in the store directory: the event log (messages and exact read
//! marks, in arrival order) and each recipient's delivery frontier. Every op takes the store lock,
//! reads the file, and writes it back through a temp file and a rename, so a crash never leaves half a
//! store. Simple and correct; a big store wants an index (see agmsg-host's jsonl and sqlite drivers).
//!
//! The delivery cursor is the ordinal of a message in the log (1-based), a decimal string.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::time::Duration;

use agmsg_guest_sdk::STORE_DIR;
use agmsg_guest_sdk::ids::{new_id, now_utc};
use agmsg_guest_sdk::storage::{
    Description, DriverError, Event, EventExporter, EventImporter, Message, Pair, ReadMark, StorageDriver, StoreFile,
    StoreLock, WatchBatch,
};
use serde::{Deserialize, Serialize};

const STORE_FILE: &str = "store.json";
const LOCK_WAIT: Duration = Duration::from_secs(10);

#[derive(Serialize, Deserialize, Clone, PartialEq)]
struct Sent {
    id: String,
    team: String,
    from: String,
    to: String,
    body: String,
    at: String,
}

#[derive(Serialize, Deserialize, Clone)]
struct Read {
    id: String,
    msg_id: String,
    team: String,
    agent: String,
    at: String,
}

#[derive(Serialize, Deserialize, Clone)]
enum Stored {
    Sent(Sent),
    Read(Read),
}

#[derive(Serialize, Deserialize, Default)]
struct Store {
    events: Vec<Stored>,
    /// Delivery frontier by "team\tagent".
    frontiers: BTreeMap<String, u64>,
}

fn path() -> String {
    format!("{STORE_DIR}/{STORE_FILE}")
}

fn io_error(e: std::io::Error) -> DriverError {
    DriverError::runtime(format!("{{name}}: {e}"))
}

impl Store {
    fn load() -> Result<Store, DriverError> {
        match std::fs::read(path()) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| DriverError::corrupt(format!("{STORE_FILE}: {e}"))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Store::default()),
            Err(e) => Err(io_error(e)),
        }
    }

    /// Write the whole store to a temp file, then rename it into place.
    fn save(&self) -> Result<(), DriverError> {
        let tmp = format!("{STORE_DIR}/.{STORE_FILE}.{}", new_id());
        let bytes = serde_json::to_vec(self).map_err(|e| DriverError::runtime(e.to_string()))?;
        let written = std::fs::File::create(&tmp)
            .and_then(|mut f| f.write_all(&bytes).and_then(|()| f.sync_all()))
            .and_then(|()| std::fs::rename(&tmp, path()));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written.map_err(io_error)
    }

    /// Messages with their delivery positions.
    fn messages(&self) -> impl Iterator<Item = (u64, &Sent)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Stored::Sent(m) => Some(m),
                Stored::Read(_) => None,
            })
            .enumerate()
            .map(|(i, m)| (i as u64 + 1, m))
    }

    fn tip(&self) -> u64 {
        self.messages().count() as u64
    }

    fn is_read(&self, team: &str, agent: &str, msg_id: &str) -> bool {
        self.events.iter().any(|e| matches!(e, Stored::Read(r) if r.team == team && r.agent == agent && r.msg_id == msg_id))
    }

    fn frontier(&self, team: &str, agent: &str) -> u64 {
        self.frontiers.get(&format!("{team}\t{agent}")).copied().unwrap_or(0)
    }

    /// Messages to (team, agent) after position `after` that their recipient has not read.
    fn unread_after(&self, team: &str, agent: &str, after: u64) -> Vec<(u64, Sent)> {
        self.messages()
            .filter(|(p, m)| *p > after && m.team == team && m.to == agent && !self.is_read(team, agent, &m.id))
            .map(|(p, m)| (p, m.clone()))
            .collect()
    }

    /// §2.2: record the exact reads, then move the frontier over the read prefix ending no later than
    /// min(target, tip); the first message to (team, agent) still unread stops it.
    fn consume(&mut self, team: &str, agent: &str, target: u64, ids: &[String]) {
        let at = now_utc();
        let mut seen = HashSet::new();
        for msg_id in ids {
            if seen.insert(msg_id) && !self.is_read(team, agent, msg_id) {
                self.events.push(Stored::Read(Read { id: new_id(), msg_id: msg_id.clone(), team: team.into(), agent: agent.into(), at: at.clone() }));
            }
        }
        let current = self.frontier(team, agent);
        let cap = target.min(self.tip());
        let gap = self.unread_after(team, agent, current).into_iter().map(|(p, _)| p).find(|p| *p <= cap);
        let frontier = current.max(gap.map_or(cap, |g| g - 1));
        self.frontiers.insert(format!("{team}\t{agent}"), frontier);
    }
}

fn message(m: &Sent) -> Message {
    Message { id: m.id.clone(), team: m.team.clone(), from: m.from.clone(), to: m.to.clone(), body: m.body.clone(), at: m.at.clone() }
}

/// A cursor is a decimal position; one beyond any position saturates (and is capped at the tip).
fn parse_cursor(cursor: &str) -> Result<u64, DriverError> {
    if cursor.is_empty() || !cursor.bytes().all(|b| b.is_ascii_digit()) {
        return Err(DriverError::runtime(format!("invalid cursor {cursor:?}: expected a decimal position")));
    }
    Ok(cursor.parse().unwrap_or(u64::MAX))
}

/// Run `f` on the store under the lock; write it back if `f` says it changed.
fn with_store<T>(f: impl FnOnce(&mut Store) -> Result<(T, bool), DriverError>) -> Result<T, DriverError> {
    let _lock = StoreLock::acquire(LOCK_WAIT)?;
    let mut store = Store::load()?;
    let (value, changed) = f(&mut store)?;
    if changed {
        store.save()?;
    }
    Ok(value)
}

#[derive(Default)]
struct Driver;

agmsg_guest_sdk::export_storage_driver!(Driver);

impl StorageDriver for Driver {
    fn describe(&self) -> Description {
        Description {
            name: "{{name}}".into(),
            backend: "one JSON file, rewritten atomically".into(),
            capabilities: Vec::new(),
            store_file: Some(StoreFile { key: "file".into(), path: STORE_FILE.into() }),
        }
    }

    fn init(&self) -> Result<(), DriverError> {
        with_store(|_| Ok(((), !std::path::Path::new(&path()).exists())))
    }

    fn store_exists(&self) -> Result<bool, DriverError> {
        let _lock = StoreLock::acquire(LOCK_WAIT)?;
        Ok(std::path::Path::new(&path()).is_file())
    }

    fn send(&self, team: &str, from: &str, to: &str, body: &str) -> Result<String, DriverError> {
        with_store(|store| {
            let id = new_id();
            store.events.push(Stored::Sent(Sent { id: id.clone(), team: team.into(), from: from.into(), to: to.into(), body: body.into(), at: now_utc() }));
            Ok((id, true))
        })
    }

    fn list_unread(&self, team: &str, agent: &str, limit: Option<u32>) -> Result<Vec<Message>, DriverError> {
        with_store(|store| {
            let unread = store.unread_after(team, agent, store.frontier(team, agent));
            let limit = limit.map_or(usize::MAX, |l| l as usize);
            Ok((unread.iter().take(limit).map(|(_, m)| message(m)).collect(), false))
        })
    }

    fn mark_read_batch(&self, team: &str, agent: &str, ids: &[String]) -> Result<(), DriverError> {
        with_store(|store| {
            let tip = store.tip();
            store.consume(team, agent, tip, ids);
            Ok(((), true))
        })
    }

    fn read_cursor_get(&self, team: &str, agent: &str) -> Result<String, DriverError> {
        with_store(|store| Ok((store.frontier(team, agent).to_string(), false)))
    }

    fn read_cursor_consume(&self, team: &str, agent: &str, cursor: &str, ids: &[String]) -> Result<(), DriverError> {
        let target = parse_cursor(cursor)?;
        with_store(|store| {
            store.consume(team, agent, target, ids);
            Ok(((), true))
        })
    }

    fn watch_tip(&self, _pairs: &[Pair]) -> Result<String, DriverError> {
        with_store(|store| Ok((store.tip().to_string(), false)))
    }

    fn watch_after(&self, cursor: &str, pairs: &[Pair]) -> Result<WatchBatch, DriverError> {
        let after = parse_cursor(cursor)?;
        with_store(|store| {
            let wanted = |m: &Sent| pairs.iter().any(|p| p.team == m.team && p.agent == m.to);
            let messages = store
                .messages()
                .filter(|(p, m)| *p > after && wanted(m) && !store.is_read(&m.team, &m.to, &m.id))
                .map(|(_, m)| message(m))
                .collect();
            // Never regress: a cursor beyond the tip comes back unchanged.
            Ok((WatchBatch { messages, cursor: store.tip().max(after).to_string() }, false))
        })
    }

    fn history(&self, team: &str, agent: Option<&str>, limit: Option<u32>) -> Result<Vec<Message>, DriverError> {
        with_store(|store| {
            let matching: Vec<Message> = store
                .messages()
                .filter(|(_, m)| m.team == team && agent.is_none_or(|a| m.from == a || m.to == a))
                .map(|(_, m)| message(m))
                .collect();
            let skip = limit.map_or(0, |l| matching.len().saturating_sub(l as usize));
            Ok((matching.into_iter().skip(skip).collect(), false))
        })
    }

    fn export_events(&self) -> Result<Box<dyn EventExporter>, DriverError> {
        let lock = StoreLock::acquire(LOCK_WAIT)?;
        let events: Vec<Event> = Store::load()?
            .events
            .iter()
            .map(|e| match e {
                Stored::Sent(m) => Event::MessageSent(message(m)),
                Stored::Read(r) => Event::MessageRead(ReadMark {
                    id: r.id.clone(),
                    msg_id: r.msg_id.clone(),
                    team: r.team.clone(),
                    agent: r.agent.clone(),
                    at: r.at.clone(),
                }),
            })
            .collect();
        Ok(Box::new(Exporter { events: events.into_iter(), _lock: lock }))
    }

    fn import_events(&self) -> Result<Box<dyn EventImporter>, DriverError> {
        let lock = StoreLock::acquire(LOCK_WAIT)?;
        Ok(Box::new(Importer { staged: Vec::new(), _lock: lock }))
    }

    fn compact(&self) -> Result<(), DriverError> {
        with_store(|store| {
            let mut seen = HashSet::new();
            let before = store.events.len();
            store.events.retain(|e| match e {
                Stored::Sent(_) => true,
                // The first read mark per (team, agent, msg_id) stays.
                Stored::Read(r) => seen.insert((r.team.clone(), r.agent.clone(), r.msg_id.clone())),
            });
            let changed = store.events.len() != before;
            Ok(((), changed))
        })
    }
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

/// Staged events; `commit` applies them all or none (one write of the whole store).
struct Importer {
    staged: Vec<Event>,
    _lock: StoreLock,
}

impl EventImporter for Importer {
    fn push_page(&mut self, events: Vec<Event>) -> Result<(), DriverError> {
        self.staged.extend(events);
        Ok(())
    }

    fn commit(&mut self) -> Result<(), DriverError> {
        let mut store = Store::load()?;
        for event in self.staged.drain(..) {
            match event {
                Event::MessageSent(m) => {
                    let sent = Sent { id: m.id, team: m.team, from: m.from, to: m.to, body: m.body, at: m.at };
                    let existing = store.messages().find(|(_, old)| old.id == sent.id).map(|(_, old)| old.clone());
                    match existing {
                        Some(old) if old == sent => {}
                        Some(_) => return Err(DriverError::runtime(format!("import conflict: message {} already exists with different content", sent.id))),
                        None => store.events.push(Stored::Sent(sent)),
                    }
                }
                Event::MessageRead(r) => {
                    if !store.is_read(&r.team, &r.agent, &r.msg_id) {
                        store.events.push(Stored::Read(Read { id: r.id, msg_id: r.msg_id, team: r.team, agent: r.agent, at: r.at }));
                    }
                }
            }
        }
        store.save()
    }
}
