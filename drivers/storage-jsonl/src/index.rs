//! The persistent index of `events.jsonl`, kept in the sidecar directory `.events-index/` of the store so
//! that no op, not even the first op of a new process, re-parses the whole log.
//!
//! - `messages.bin`: one fixed-size [`Record`] per logical `message_sent`, in log order (record `i` is
//!   the message at delivery position `i + 1`): where its line is in the log, its interned team, sender
//!   and recipient, and whether the recipient has read it.
//! - `ids.bin`: an on-disk hash table ([`IdTable`]) from a message id's hash to its position, for read
//!   marks and imports. A hash match is only a candidate; the id is checked against the log line.
//! - `meta.json`: how much of the log the index covers (length, lines, and its last bytes as a
//!   fingerprint), the id table's levels, the interned names, and read marks whose message is not in
//!   the log.
//!
//! Each op parses only the lines appended after the covered length, in bounded memory: records, flags
//! and table slots are written every [`BATCH`] messages, and `meta.json` is saved every
//! [`CHECKPOINT_BYTES`] of log, so a first build of a big log that is stopped (the call deadline, a
//! kill) resumes from its last checkpoint instead of starting over. The log stays the truth: an index
//! that is missing, unreadable, or whose covered prefix no longer matches the log (a compaction here, a
//! rewrite by agmsg's driver) is rebuilt from it. Records and table slots are written first and
//! `meta.json` last (temp file + rename), so after a crash the meta still describes a prefix whose
//! records are on disk; the lines after it are parsed again, and applying them again changes nothing.

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};

use agmsg_guest_sdk::storage::{DriverError, Event, Message};

use crate::events::{LineEvent, io_error, parse_line, read_exact_at, read_full_at, visit_line, write_all_at};
use crate::idtable::{IdTable, Level, SLOT_SIZE, hash_bytes};
use crate::index_files::{FINGERPRINT, FLAGS_OFFSET, FORMAT, Meta, READ_BY_RECIPIENT, RECORD_SIZE, Record, checked_meta, decode_records};
use crate::{LOG_FILE, store_path};

pub const DIR: &str = ".events-index";
const META: &str = "meta.json";
const RECORDS: &str = "messages.bin";
const IDS: &str = "ids.bin";
/// Log bytes read at a time while catching up, and records read at a time while scanning.
const CHUNK: u64 = 1 << 20;
const SCAN_RECORDS: u64 = 4096;
/// Messages (or read flags) applied in memory before they are written out: what bounds an op's memory
/// while it catches up with a log of any size.
const BATCH: usize = 1 << 15;
/// A catch-up saves a checkpoint after this much log or this much time since the last one, whichever
/// comes first: whatever the machine's speed, an op stopped by its deadline leaves progress behind.
const CHECKPOINT_BYTES: u64 = 8 << 20;
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(200);
/// A catch-up of at least this much log saves its final meta synced (see [`Index::refresh`]).
const SYNCED_CATCH_UP: u64 = CHECKPOINT_BYTES;
/// A catch-up longer than this says what it is doing (the first op on a big log).
const ANNOUNCE_BYTES: u64 = 64 << 20;
/// Log bytes per message, to size the id table of a first build (a typical agmsg message line is about
/// 230 bytes; a log of shorter lines only gets a second level).
const BYTES_PER_MESSAGE: u64 = 256;
/// Messages whose lines are at most this far apart are fetched with one read.
const FETCH_GAP: u64 = 64 << 10;

pub fn index_path(name: &str) -> String {
    store_path(&format!("{DIR}/{name}"))
}

pub fn id_hash(id: &str) -> u64 {
    hash_bytes(&[id.as_bytes()])
}

fn damaged(what: impl std::fmt::Display) -> DriverError {
    // The next op rebuilds an index without meta.
    let _ = std::fs::remove_file(index_path(META));
    DriverError::corrupt(format!("jsonl index {DIR}/ was damaged ({what}); it is rebuilt from the log on the next op"))
}

/// Progress of a long catch-up, as info lines through the host's log.
struct Progress {
    from: u64,
    to: u64,
    started: std::time::Instant,
    /// When the last line was logged: one every couple of seconds.
    reported: std::time::Instant,
}

/// The saved meta, if it is readable, in this format, and consistent with the log and the files.
fn load_meta(log: &File, records: &File, ids: &File) -> Result<Option<Meta>, DriverError> {
    let Ok(text) = std::fs::read(index_path(META)) else { return Ok(None) };
    let log_len = log.metadata().map_err(io_error)?.len();
    let records_len = records.metadata().map_err(io_error)?.len();
    let slots = ids.metadata().map_err(io_error)?.len() / SLOT_SIZE;
    checked_meta(&text, log_len, records_len, slots, |offset, tail| read_exact_at(log, tail, offset).map_err(io_error))
}

/// Temp files a killed op left in the index directory (a checkpoint's `meta.json.tmp.<id>`). Only the
/// holder of the store lock writes here, so any there now is a leftover.
fn remove_stale_temp_files() {
    if let Ok(entries) = std::fs::read_dir(index_path("")) {
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().contains(".tmp.") {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

pub struct Index {
    /// The log as opened by this op: every offset refers to this file, even if someone renames a new
    /// log into place meanwhile.
    log: File,
    records: File,
    ids: IdTable,
    /// What the index covers now. `count` and `levels` count what is written to `messages.bin` and
    /// `ids.bin`; the saved `meta.json` may lag behind (it is written at checkpoints).
    meta: Meta,
    name_ids: HashMap<String, u32>,
    pending: HashSet<(String, String, String)>,
    /// Applied since the last write: records after `meta.count`, their id hashes, flags set on older
    /// records. At most about [`BATCH`] of each.
    new_records: Vec<Record>,
    new_ids: HashMap<u64, Vec<u64>>,
    flagged: HashSet<u64>,
    /// The meta differs from the saved one.
    dirty: bool,
    /// The log's length when last looked at: no record points beyond it.
    log_len: u64,
}

impl Index {
    /// Open the index of the store's log (which must exist) and bring it up to date.
    pub fn open() -> Result<Index, DriverError> {
        let log = File::open(store_path(LOG_FILE)).map_err(io_error)?;
        std::fs::create_dir_all(index_path("")).map_err(io_error)?;
        let open_rw = |name: &str| OpenOptions::new().read(true).write(true).create(true).truncate(false).open(index_path(name));
        let ids = open_rw(IDS).map_err(io_error)?;
        let records = open_rw(RECORDS).map_err(io_error)?;
        let log_len = log.metadata().map_err(io_error)?.len();
        let saved = load_meta(&log, &records, &ids)?;
        let mut index = Index {
            log,
            records,
            ids: IdTable::new(ids, Vec::new(), 0),
            meta: Meta::default(),
            name_ids: HashMap::new(),
            pending: HashSet::new(),
            new_records: Vec::new(),
            new_ids: HashMap::new(),
            flagged: HashSet::new(),
            dirty: false,
            log_len,
        };
        match saved {
            Some(meta) => {
                index.name_ids = meta.names.iter().enumerate().map(|(i, n)| (n.clone(), i as u32)).collect();
                index.pending = meta.pending_reads.iter().cloned().collect();
                let levels = meta.levels.iter().map(|&(start, slots, entries)| Level { start, slots, entries }).collect();
                index.ids.reopen(levels, log_len / BYTES_PER_MESSAGE);
                index.meta = meta;
            }
            None => {
                crate::host::debug("jsonl index: none that matches the log; rebuilding it from the log");
                index.reset(log_len)?;
            }
        }
        index.refresh()?;
        Ok(index)
    }

    /// Start over from an empty index covering nothing; the id table is sized for a log of `log_len`.
    fn reset(&mut self, log_len: u64) -> Result<(), DriverError> {
        let _ = std::fs::remove_file(index_path(META));
        self.records.set_len(0).map_err(io_error)?;
        self.ids.clear(log_len / BYTES_PER_MESSAGE)?;
        self.meta = Meta { format: FORMAT, ..Meta::default() };
        self.name_ids.clear();
        self.pending.clear();
        self.dirty = true;
        Ok(())
    }

    fn log_bytes(&self, offset: u64, len: usize) -> Result<Vec<u8>, DriverError> {
        let mut bytes = vec![0u8; len];
        read_exact_at(&self.log, &mut bytes, offset).map_err(io_error)?;
        Ok(bytes)
    }

    /// Apply the complete lines appended to the log since the covered length and save the index. A
    /// torn final line (a writer that died mid-append, or one still writing) is left for later.
    pub fn refresh(&mut self) -> Result<(), DriverError> {
        let log_len = self.log.metadata().map_err(io_error)?.len();
        self.log_len = log_len;
        let first = self.meta.covered_len;
        let mut progress = (log_len.saturating_sub(first) > ANNOUNCE_BYTES).then(|| Progress {
            from: first,
            to: log_len,
            started: std::time::Instant::now(),
            reported: std::time::Instant::now(),
        });
        if let Some(p) = &progress {
            crate::host::info(&format!(
                "jsonl index: indexing {LOG_FILE} from byte {} to {} ({} MiB); saved as it goes, so a stopped run resumes",
                p.from,
                p.to,
                (p.to - p.from) >> 20
            ));
        }
        if first < log_len {
            remove_stale_temp_files();
        }
        let mut start = first;
        let mut checkpoint_at = start + CHECKPOINT_BYTES;
        let mut last_checkpoint = std::time::Instant::now();
        let mut chunk = Vec::new();
        while start < log_len {
            let mut size = CHUNK.min(log_len - start);
            let complete = loop {
                chunk.resize(size as usize, 0);
                let read = read_full_at(&self.log, &mut chunk, start).map_err(io_error)?;
                chunk.truncate(read);
                if let Some(last_newline) = chunk.iter().rposition(|&b| b == b'\n') {
                    break last_newline + 1;
                }
                if start + size >= log_len || read < size as usize {
                    break 0;
                }
                size = (size * 2).min(log_len - start);
            };
            if complete == 0 {
                break;
            }
            let mut offset = start;
            for line in chunk[..complete].split_inclusive(|&b| b == b'\n') {
                // On a corrupt line nothing after the last checkpoint is saved: every op fails the same
                // way, with the line number, until the line is fixed.
                self.meta.lines += 1;
                self.apply_line(&line[..line.len() - 1], offset)?;
                offset += line.len() as u64;
                if self.new_records.len() >= BATCH || self.flagged.len() >= BATCH {
                    self.write_batch()?;
                }
            }
            start += complete as u64;
            self.meta.covered_len = start;
            self.dirty = true;
            if (start >= checkpoint_at || last_checkpoint.elapsed() >= CHECKPOINT_EVERY) && start < log_len {
                checkpoint_at = start + CHECKPOINT_BYTES;
                // Not synced: an fsync here would make the filesystem write out all the index data
                // written so far, every 200 ms. A kill keeps what the page cache has; a power cut may
                // lose the checkpoint, and the next op starts from the last synced one (or over).
                self.save(false)?;
                last_checkpoint = std::time::Instant::now();
                if let Some(p) = progress.as_mut().filter(|p| p.reported.elapsed() >= std::time::Duration::from_secs(2)) {
                    p.reported = std::time::Instant::now();
                    crate::host::info(&format!(
                        "jsonl index: {} of {} MiB indexed ({}%, {} messages, {:.1} s)",
                        (start - p.from) >> 20,
                        (p.to - p.from) >> 20,
                        (start - p.from) * 100 / (p.to - p.from).max(1),
                        self.tip(),
                        p.started.elapsed().as_secs_f64()
                    ));
                }
            }
        }
        if start != first {
            crate::host::debug(&format!("jsonl index: parsed bytes {first}..{start} of the log ({} lines so far)", self.meta.lines));
        }
        // Synced only after a long catch-up. The index is the log's cache: a meta that a power cut
        // loses or tears is rebuilt, and one that lags is caught up again. A watcher catching up one
        // new message should not wait for the disk (an fsync here was half its send-to-print time);
        // a first build of a big log should not be lost to a power cut and redone.
        self.save(start - first >= SYNCED_CATCH_UP)?;
        if let Some(p) = &progress {
            crate::host::info(&format!("jsonl index: done, {} messages in {:.1} s", self.tip(), p.started.elapsed().as_secs_f64()));
        }
        Ok(())
    }

    fn apply_line(&mut self, line: &[u8], offset: u64) -> Result<(), DriverError> {
        let number = self.meta.lines;
        let len = u32::try_from(line.len()).map_err(|_| DriverError::corrupt(format!("{LOG_FILE} line {number}: longer than 4 GiB")))?;
        let mut event = 0u32;
        visit_line(line, number, |parsed| {
            match parsed {
                LineEvent::Sent { id, team, from, to, .. } => {
                    let position = self.meta.count + self.new_records.len() as u64;
                    let was_pending = !self.pending.is_empty() && self.pending.remove(&(team.to_string(), to.to_string(), id.to_string()));
                    if was_pending {
                        self.dirty = true;
                    }
                    let record = Record {
                        offset,
                        len,
                        event,
                        team: self.intern(&team),
                        from: self.intern(&from),
                        to: self.intern(&to),
                        flags: if was_pending { READ_BY_RECIPIENT } else { 0 },
                    };
                    self.new_ids.entry(id_hash(&id)).or_default().push(position);
                    self.new_records.push(record);
                }
                LineEvent::Read { msg_id, team, agent, .. } => {
                    let positions = self.positions_of(&msg_id)?;
                    if positions.is_empty() {
                        if self.pending.insert((team.into_owned(), agent.into_owned(), msg_id.into_owned())) {
                            self.dirty = true;
                        }
                    } else {
                        // A read by anyone but the message's recipient never changes what anyone sees.
                        for position in positions {
                            let record = self.record(position)?;
                            if !record.is_read() && self.name(record.team) == team && self.name(record.to) == agent {
                                self.set_read(position);
                            }
                        }
                    }
                }
            }
            event += 1;
            Ok(())
        })
    }

    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.name_ids.get(name) {
            return id;
        }
        let id = self.meta.names.len() as u32;
        self.meta.names.push(name.to_owned());
        self.name_ids.insert(name.to_owned(), id);
        self.dirty = true;
        id
    }

    fn set_read(&mut self, position: u64) {
        match position.checked_sub(self.meta.count) {
            Some(new) => self.new_records[new as usize].flags |= READ_BY_RECIPIENT,
            None => {
                self.flagged.insert(position);
            }
        }
    }

    /// Write what was applied in memory: records and flags, then table slots.
    fn write_batch(&mut self) -> Result<(), DriverError> {
        if !self.new_records.is_empty() {
            let mut bytes = Vec::with_capacity(self.new_records.len() * RECORD_SIZE as usize);
            for record in &self.new_records {
                record.encode(&mut bytes);
            }
            write_all_at(&self.records, &bytes, self.meta.count * RECORD_SIZE).map_err(io_error)?;
        }
        let mut flagged: Vec<u64> = self.flagged.drain().collect();
        flagged.sort_unstable();
        for position in flagged {
            write_all_at(&self.records, &READ_BY_RECIPIENT.to_le_bytes(), position * RECORD_SIZE + FLAGS_OFFSET).map_err(io_error)?;
        }
        let mut slots: Vec<(u64, u64)> =
            self.new_ids.drain().flat_map(|(hash, positions)| positions.into_iter().map(move |p| (hash, p))).collect();
        self.ids.insert_batch(&mut slots).map_err(|e| damaged(e.message))?;
        self.meta.count += self.new_records.len() as u64;
        self.new_records.clear();
        if self.new_records.capacity() > BATCH * 2 {
            self.new_records.shrink_to(BATCH);
        }
        self.dirty = true;
        Ok(())
    }

    /// Write everything applied, then the meta (a checkpoint: the next op starts from here).
    fn save(&mut self, durable: bool) -> Result<(), DriverError> {
        if !self.dirty && self.new_records.is_empty() && self.flagged.is_empty() {
            return Ok(());
        }
        self.write_batch()?;
        crate::sync::crash::crash_point("index:batch-written");
        let keep = FINGERPRINT.min(self.meta.covered_len);
        self.meta.fingerprint = self.log_bytes(self.meta.covered_len - keep, keep as usize)?;
        self.meta.levels = self.ids.levels().iter().map(|l| (l.start, l.slots, l.entries)).collect();
        self.meta.pending_reads = self.pending.iter().cloned().collect();
        self.meta.pending_reads.sort();
        let text = serde_json::to_vec(&self.meta).map_err(|e| DriverError::runtime(format!("jsonl index: {e}")))?;
        self.meta.pending_reads = Vec::new();
        crate::rewrite_with(&format!("{DIR}/{META}"), &text, durable)?;
        self.dirty = false;
        Ok(())
    }

    /// Every position holding a message with this id (an id may repeat in a hand-edited log).
    fn positions_of(&mut self, id: &str) -> Result<Vec<u64>, DriverError> {
        let hash = id_hash(id);
        let mut candidates: Vec<u64> = self.ids.candidates(hash).map_err(|e| damaged(e.message))?;
        candidates.retain(|&p| p < self.meta.count);
        candidates.sort_unstable();
        candidates.dedup();
        candidates.extend(self.new_ids.get(&hash).into_iter().flatten());
        let mut positions = Vec::new();
        for position in candidates {
            if self.message(position)?.id == id {
                positions.push(position);
            }
        }
        Ok(positions)
    }

    fn record(&mut self, position: u64) -> Result<Record, DriverError> {
        if let Some(new) = position.checked_sub(self.meta.count) {
            return Ok(self.new_records[new as usize]);
        }
        let mut record = self.records_range(position, 1)?[0];
        if self.flagged.contains(&position) {
            record.flags |= READ_BY_RECIPIENT;
        }
        Ok(record)
    }

    fn records_range(&mut self, start: u64, count: u64) -> Result<Vec<Record>, DriverError> {
        let mut bytes = vec![0u8; (count * RECORD_SIZE) as usize];
        read_exact_at(&self.records, &mut bytes, start * RECORD_SIZE).map_err(|e| damaged(format!("{RECORDS}: {e}")))?;
        decode_records(&bytes, self.log_len, self.meta.names.len())
            .map_err(|i| damaged(format!("record {} is not valid", start + i as u64)))
    }

    /// The delivery tip: how many messages the log holds.
    pub fn tip(&self) -> u64 {
        self.meta.count
    }

    pub fn name(&self, id: u32) -> &str {
        &self.meta.names[id as usize]
    }

    /// The interned id of a team or agent name; `None` if no message names it.
    pub fn name_id(&self, name: &str) -> Option<u32> {
        self.name_ids.get(name).copied()
    }

    /// Visit records from position index `start` (0-based) onward, in log order, while `visit` says
    /// to go on.
    pub fn scan(&mut self, start: u64, mut visit: impl FnMut(u64, &Record) -> bool) -> Result<(), DriverError> {
        let mut at = start;
        while at < self.tip() {
            let n = SCAN_RECORDS.min(self.tip() - at);
            for (i, record) in self.records_range(at, n)?.iter().enumerate() {
                if !visit(at + i as u64, record) {
                    return Ok(());
                }
            }
            at += n;
        }
        Ok(())
    }

    /// Visit records from the newest back, while `visit` says to go on.
    pub fn scan_back(&mut self, mut visit: impl FnMut(u64, &Record) -> bool) -> Result<(), DriverError> {
        let mut end = self.tip();
        while end > 0 {
            let n = SCAN_RECORDS.min(end);
            for (i, record) in self.records_range(end - n, n)?.iter().enumerate().rev() {
                if !visit(end - n + i as u64, record) {
                    return Ok(());
                }
            }
            end -= n;
        }
        Ok(())
    }

    /// The messages at these positions (ascending), read from the log; nearby lines share one read.
    pub fn messages(&mut self, positions: &[u64]) -> Result<Vec<Message>, DriverError> {
        let mut records = Vec::with_capacity(positions.len());
        for &position in positions {
            records.push((position, self.record(position)?));
        }
        let mut messages = Vec::with_capacity(records.len());
        let mut group_start = 0;
        while group_start < records.len() {
            let mut group_end = group_start + 1;
            let span_start = records[group_start].1.offset;
            let mut span_end = span_start + u64::from(records[group_start].1.len);
            while let Some((_, next)) = records.get(group_end) {
                if next.offset < span_start || next.offset > span_end + FETCH_GAP || next.offset - span_start > CHUNK {
                    break;
                }
                span_end = span_end.max(next.offset + u64::from(next.len));
                group_end += 1;
            }
            let span = self.log_bytes(span_start, (span_end - span_start) as usize)?;
            for &(position, record) in &records[group_start..group_end] {
                let start = (record.offset - span_start) as usize;
                let line = &span[start..start + record.len as usize];
                let events = parse_line(line, 0).map_err(|e| damaged(format!("record {position}: {}", e.message)))?;
                match events.into_iter().nth(record.event as usize) {
                    Some(Event::MessageSent(m)) => messages.push(m),
                    _ => return Err(damaged(format!("record {position} does not point at a message"))),
                }
            }
            group_start = group_end;
        }
        Ok(messages)
    }

    pub fn message(&mut self, position: u64) -> Result<Message, DriverError> {
        Ok(self.messages(&[position])?.remove(0))
    }

    /// The first message with this id, if any.
    pub fn message_with_id(&mut self, id: &str) -> Result<Option<Message>, DriverError> {
        match self.positions_of(id)?.first() {
            Some(&position) => Ok(Some(self.message(position)?)),
            None => Ok(None),
        }
    }

    /// Whether an exact read mark (team, agent, msg_id) is in the log.
    pub fn is_read(&mut self, team: &str, agent: &str, msg_id: &str) -> Result<bool, DriverError> {
        for position in self.positions_of(msg_id)? {
            let record = self.record(position)?;
            if record.is_read() && self.name(record.team) == team && self.name(record.to) == agent {
                return Ok(true);
            }
        }
        Ok(!self.pending.is_empty() && self.pending.contains(&(team.to_owned(), agent.to_owned(), msg_id.to_owned())))
    }
}
