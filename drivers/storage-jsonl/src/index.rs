//! The persistent index of `events.jsonl`, kept in the sidecar directory `.events-index/` of the store so
//! that no op, not even the first op of a new process, re-parses the whole log.
//!
//! - `messages.bin`: one fixed-size [`Record`] per logical `message_sent`, in log order (record `i` is
//!   the message at delivery position `i + 1`): where its line is in the log, its interned team, sender
//!   and recipient, and whether the recipient has read it.
//! - `ids.bin`: an open-addressing hash table from a message id's hash to its position, for read marks
//!   and imports. A hash match is only a candidate; the id is checked against the log line.
//! - `meta.json`: how much of the log the index covers (length, lines, and its last bytes as a
//!   fingerprint), the interned names, and read marks whose message is not in the log.
//!
//! Each op parses only the lines appended after the covered length. The log stays the truth: an index
//! that is missing, unreadable, or whose covered prefix no longer matches the log (a compaction here, a
//! rewrite by agmsg's driver) is rebuilt from it. Records and table slots are written first and
//! `meta.json` last (temp file + rename), so after a crash the meta still describes a prefix whose
//! records are on disk; the lines after it are parsed again, and applying them again changes nothing.

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};

use agmsg_guest_sdk::storage::{DriverError, Event, Message};
use serde::{Deserialize, Serialize};

use crate::events::{io_error, parse_line};
use crate::{LOG_FILE, store_path};

const DIR: &str = ".events-index";
const META: &str = "meta.json";
const RECORDS: &str = "messages.bin";
const IDS: &str = "ids.bin";
/// Bump when the sidecar layout changes: an index in another format is rebuilt.
const FORMAT: u32 = 1;
/// How many trailing bytes of the covered prefix are compared to detect a rewrite of the log.
const FINGERPRINT: u64 = 64;
const RECORD_SIZE: u64 = 32;
const SLOT_SIZE: u64 = 16;
const MIN_SLOTS: u64 = 1 << 12;
/// Log bytes read at a time while catching up, and records read at a time while scanning.
const CHUNK: u64 = 4 << 20;
const SCAN_RECORDS: u64 = 4096;
/// Messages whose lines are at most this far apart are fetched with one read.
const FETCH_GAP: u64 = 64 << 10;
const READ_BY_RECIPIENT: u32 = 1;

fn index_path(name: &str) -> String {
    store_path(&format!("{DIR}/{name}"))
}

/// One message in the index: 32 bytes on disk, little-endian.
#[derive(Clone, Copy, Debug)]
pub struct Record {
    /// The byte range of its line in the log, and which of the line's events it is (a `sync_pull_commit`
    /// line holds several).
    offset: u64,
    len: u32,
    event: u32,
    pub team: u32,
    pub from: u32,
    pub to: u32,
    flags: u32,
}

impl Record {
    /// Read by its recipient (an exact `message_read` for its team, recipient and id).
    pub fn is_read(&self) -> bool {
        self.flags & READ_BY_RECIPIENT != 0
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.offset.to_le_bytes());
        for word in [self.len, self.event, self.team, self.from, self.to, self.flags] {
            out.extend_from_slice(&word.to_le_bytes());
        }
    }

    fn decode(bytes: &[u8]) -> Record {
        let word = |i: usize| u32::from_le_bytes(bytes[8 + 4 * i..12 + 4 * i].try_into().unwrap());
        Record {
            offset: u64::from_le_bytes(bytes[..8].try_into().unwrap()),
            len: word(0),
            event: word(1),
            team: word(2),
            from: word(3),
            to: word(4),
            flags: word(5),
        }
    }
}
const FLAGS_OFFSET: u64 = 28;

#[derive(Serialize, Deserialize, Default)]
struct Meta {
    format: u32,
    covered_len: u64,
    lines: u64,
    count: u64,
    fingerprint: Vec<u8>,
    names: Vec<String>,
    /// Read marks (team, agent, msg_id) applied before any message with that id was in the log.
    pending_reads: Vec<(String, String, String)>,
}

/// FNV-1a: stable across builds and platforms, which the on-disk table needs. Never 0 (an empty slot).
fn id_hash(id: &str) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for byte in id.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash.max(1)
}

fn damaged(what: impl std::fmt::Display) -> DriverError {
    // The next op rebuilds an index without meta.
    let _ = std::fs::remove_file(index_path(META));
    DriverError::corrupt(format!("jsonl index {DIR}/ was damaged ({what}); it is rebuilt from the log on the next op"))
}

pub struct Index {
    /// The log as opened by this op: every offset refers to this file, even if someone renames a new
    /// log into place meanwhile.
    log: File,
    records: File,
    ids: File,
    meta: Meta,
    name_ids: HashMap<String, u32>,
    /// Applied since the last flush: records after `meta.count`, their ids, flags set on older records.
    new_records: Vec<Record>,
    new_ids: HashMap<String, Vec<u64>>,
    flagged: HashSet<u64>,
    meta_changed: bool,
}

impl Index {
    /// Open the index of the store's log (which must exist) and bring it up to date.
    pub fn open() -> Result<Index, DriverError> {
        let log = File::open(store_path(LOG_FILE)).map_err(io_error)?;
        std::fs::create_dir_all(index_path("")).map_err(io_error)?;
        let open_rw = |name: &str| OpenOptions::new().read(true).write(true).create(true).truncate(false).open(index_path(name));
        let mut index = Index {
            log,
            records: open_rw(RECORDS).map_err(io_error)?,
            ids: open_rw(IDS).map_err(io_error)?,
            meta: Meta::default(),
            name_ids: HashMap::new(),
            new_records: Vec::new(),
            new_ids: HashMap::new(),
            flagged: HashSet::new(),
            meta_changed: false,
        };
        match index.load_meta()? {
            Some(meta) => {
                index.name_ids = meta.names.iter().enumerate().map(|(i, n)| (n.clone(), i as u32)).collect();
                index.meta = meta;
            }
            None => {
                agmsg_guest_sdk::log::debug("jsonl index: none that matches the log; rebuilding it from the log");
                index.reset()?;
            }
        }
        index.refresh()?;
        Ok(index)
    }

    /// The saved meta, if it is readable, in this format, and consistent with the log and the files.
    fn load_meta(&mut self) -> Result<Option<Meta>, DriverError> {
        let Ok(text) = std::fs::read(index_path(META)) else { return Ok(None) };
        let Ok(meta) = serde_json::from_slice::<Meta>(&text) else { return Ok(None) };
        let log_len = self.log.metadata().map_err(io_error)?.len();
        let records_len = self.records.metadata().map_err(io_error)?.len();
        let slots = self.ids.metadata().map_err(io_error)?.len() / SLOT_SIZE;
        let consistent = meta.format == FORMAT
            && meta.covered_len <= log_len
            && meta.fingerprint.len() as u64 == FINGERPRINT.min(meta.covered_len)
            && records_len >= meta.count * RECORD_SIZE
            && slots.is_power_of_two()
            && slots >= MIN_SLOTS.max(meta.count * 2)
            && self.log_bytes(meta.covered_len - meta.fingerprint.len() as u64, meta.fingerprint.len())? == meta.fingerprint;
        Ok(consistent.then_some(meta))
    }

    /// Start over from an empty index covering nothing.
    fn reset(&mut self) -> Result<(), DriverError> {
        let _ = std::fs::remove_file(index_path(META));
        self.records.set_len(0).map_err(io_error)?;
        self.ids.set_len(0).map_err(io_error)?;
        self.ids.set_len(MIN_SLOTS * SLOT_SIZE).map_err(io_error)?;
        self.meta = Meta { format: FORMAT, ..Meta::default() };
        self.name_ids.clear();
        self.meta_changed = true;
        Ok(())
    }

    fn log_bytes(&mut self, offset: u64, len: usize) -> Result<Vec<u8>, DriverError> {
        let mut bytes = vec![0u8; len];
        self.log.seek(SeekFrom::Start(offset)).map_err(io_error)?;
        self.log.read_exact(&mut bytes).map_err(io_error)?;
        Ok(bytes)
    }

    /// Apply the complete lines appended to the log since the covered length and save the index. A
    /// torn final line (a writer that died mid-append, or one still writing) is left for later.
    pub fn refresh(&mut self) -> Result<(), DriverError> {
        let log_len = self.log.metadata().map_err(io_error)?.len();
        let mut start = self.meta.covered_len;
        while start < log_len {
            let mut size = CHUNK.min(log_len - start);
            let (chunk, complete) = loop {
                let chunk = self.log_bytes(start, size as usize)?;
                if let Some(last_newline) = chunk.iter().rposition(|&b| b == b'\n') {
                    break (chunk, last_newline + 1);
                }
                if start + size >= log_len {
                    break (chunk, 0);
                }
                size = (size * 2).min(log_len - start);
            };
            if complete == 0 {
                break;
            }
            let mut offset = start;
            for line in chunk[..complete].split_inclusive(|&b| b == b'\n') {
                // On a corrupt line nothing of this catch-up is saved: every op fails the same way,
                // with the line number, until the line is fixed.
                self.meta.lines += 1;
                self.apply_line(&line[..line.len() - 1], offset)?;
                offset += line.len() as u64;
            }
            start += complete as u64;
        }
        if start != self.meta.covered_len {
            agmsg_guest_sdk::log::debug(&format!(
                "jsonl index: parsed bytes {}..{start} of the log ({} lines so far)",
                self.meta.covered_len, self.meta.lines
            ));
            let keep = FINGERPRINT.min(start);
            self.meta.fingerprint = self.log_bytes(start - keep, keep as usize)?;
            self.meta.covered_len = start;
            self.meta_changed = true;
        }
        self.flush()
    }

    fn apply_line(&mut self, line: &[u8], offset: u64) -> Result<(), DriverError> {
        for (event, parsed) in parse_line(line, self.meta.lines)?.into_iter().enumerate() {
            match parsed {
                Event::MessageSent(m) => {
                    let position = self.meta.count + self.new_records.len() as u64;
                    let pending = (m.team.clone(), m.to.clone(), m.id.clone());
                    let was_pending = self.meta.pending_reads.contains(&pending);
                    if was_pending {
                        self.meta.pending_reads.retain(|read| read != &pending);
                    }
                    let record = Record {
                        offset,
                        len: u32::try_from(line.len()).map_err(|_| DriverError::corrupt(format!("{LOG_FILE} line {}: longer than 4 GiB", self.meta.lines)))?,
                        event: event as u32,
                        team: self.intern(&m.team),
                        from: self.intern(&m.from),
                        to: self.intern(&m.to),
                        flags: if was_pending { READ_BY_RECIPIENT } else { 0 },
                    };
                    self.new_ids.entry(m.id).or_default().push(position);
                    self.new_records.push(record);
                }
                Event::MessageRead(r) => {
                    let positions = self.positions_of(&r.msg_id)?;
                    if positions.is_empty() {
                        let pending = (r.team, r.agent, r.msg_id);
                        if !self.meta.pending_reads.contains(&pending) {
                            self.meta.pending_reads.push(pending);
                            self.meta_changed = true;
                        }
                        continue;
                    }
                    // A read by anyone but the message's recipient never changes what anyone sees.
                    for position in positions {
                        let record = self.record(position)?;
                        if !record.is_read() && self.name(record.team) == r.team && self.name(record.to) == r.agent {
                            self.set_read(position);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.name_ids.get(name) {
            return id;
        }
        let id = self.meta.names.len() as u32;
        self.meta.names.push(name.to_owned());
        self.name_ids.insert(name.to_owned(), id);
        self.meta_changed = true;
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

    /// Write what was applied: records and flags, table slots, then the meta.
    fn flush(&mut self) -> Result<(), DriverError> {
        if !self.meta_changed && self.new_records.is_empty() && self.flagged.is_empty() {
            return Ok(());
        }
        if !self.new_records.is_empty() {
            let mut bytes = Vec::with_capacity(self.new_records.len() * RECORD_SIZE as usize);
            for record in &self.new_records {
                record.encode(&mut bytes);
            }
            self.records.seek(SeekFrom::Start(self.meta.count * RECORD_SIZE)).map_err(io_error)?;
            self.records.write_all(&bytes).map_err(io_error)?;
        }
        for &position in &self.flagged {
            self.records.seek(SeekFrom::Start(position * RECORD_SIZE + FLAGS_OFFSET)).map_err(io_error)?;
            self.records.write_all(&READ_BY_RECIPIENT.to_le_bytes()).map_err(io_error)?;
        }
        let count = self.meta.count + self.new_records.len() as u64;
        let new_slots: Vec<(u64, u64)> =
            self.new_ids.iter().flat_map(|(id, positions)| positions.iter().map(|&p| (id_hash(id), p))).collect();
        let slots = self.ids.metadata().map_err(io_error)?.len() / SLOT_SIZE;
        if count * 2 > slots {
            self.grow_table(count, &new_slots)?;
        } else {
            for (hash, position) in new_slots {
                self.insert_slot(slots, hash, position)?;
            }
        }
        self.meta.count = count;
        let text = serde_json::to_vec(&self.meta).map_err(|e| DriverError::runtime(format!("jsonl index: {e}")))?;
        crate::rewrite(&format!("{DIR}/{META}"), &text)?;
        self.new_records.clear();
        self.new_ids.clear();
        self.flagged.clear();
        self.meta_changed = false;
        Ok(())
    }

    fn read_slot(&mut self, slot: u64) -> Result<(u64, u64), DriverError> {
        let mut bytes = [0u8; SLOT_SIZE as usize];
        self.ids.seek(SeekFrom::Start(slot * SLOT_SIZE)).map_err(io_error)?;
        self.ids.read_exact(&mut bytes).map_err(io_error)?;
        Ok((u64::from_le_bytes(bytes[..8].try_into().unwrap()), u64::from_le_bytes(bytes[8..].try_into().unwrap())))
    }

    fn insert_slot(&mut self, slots: u64, hash: u64, position: u64) -> Result<(), DriverError> {
        let mut slot = hash & (slots - 1);
        loop {
            let (existing, existing_position) = self.read_slot(slot)?;
            if existing == 0 || (existing == hash && existing_position == position) {
                break;
            }
            slot = (slot + 1) & (slots - 1);
        }
        let mut bytes = hash.to_le_bytes().to_vec();
        bytes.extend_from_slice(&position.to_le_bytes());
        self.ids.seek(SeekFrom::Start(slot * SLOT_SIZE)).map_err(io_error)?;
        self.ids.write_all(&bytes).map_err(io_error)
    }

    /// Rehash into a table four times the message count, written beside the old one and renamed over it.
    fn grow_table(&mut self, count: u64, new_slots: &[(u64, u64)]) -> Result<(), DriverError> {
        let mut old = Vec::new();
        self.ids.seek(SeekFrom::Start(0)).map_err(io_error)?;
        self.ids.read_to_end(&mut old).map_err(io_error)?;
        let slots = (count * 4).next_power_of_two().max(MIN_SLOTS);
        let mut table = vec![0u8; (slots * SLOT_SIZE) as usize];
        let old_slots = old.chunks_exact(SLOT_SIZE as usize).map(|s| {
            (u64::from_le_bytes(s[..8].try_into().unwrap()), u64::from_le_bytes(s[8..].try_into().unwrap()))
        });
        // Slots left by a crashed flush point past the saved count: they are dropped here.
        let live = old_slots.filter(|&(hash, position)| hash != 0 && position < self.meta.count);
        for (hash, position) in live.chain(new_slots.iter().copied()) {
            let mut slot = hash & (slots - 1);
            while table[(slot * SLOT_SIZE) as usize..][..8] != [0u8; 8] {
                slot = (slot + 1) & (slots - 1);
            }
            let at = (slot * SLOT_SIZE) as usize;
            table[at..at + 8].copy_from_slice(&hash.to_le_bytes());
            table[at + 8..at + 16].copy_from_slice(&position.to_le_bytes());
        }
        crate::rewrite(&format!("{DIR}/{IDS}"), &table)?;
        self.ids = OpenOptions::new().read(true).write(true).open(index_path(IDS)).map_err(io_error)?;
        Ok(())
    }

    /// Every position holding a message with this id (an id may repeat in a hand-edited log).
    fn positions_of(&mut self, id: &str) -> Result<Vec<u64>, DriverError> {
        let hash = id_hash(id);
        let slots = self.ids.metadata().map_err(io_error)?.len() / SLOT_SIZE;
        let mut candidates = Vec::new();
        let mut slot = hash & (slots - 1);
        loop {
            let (existing, position) = self.read_slot(slot)?;
            if existing == 0 {
                break;
            }
            if existing == hash && position < self.meta.count {
                candidates.push(position);
            }
            slot = (slot + 1) & (slots - 1);
        }
        candidates.sort_unstable();
        candidates.dedup();
        let mut positions = Vec::new();
        for position in candidates {
            if self.message(position)?.id == id {
                positions.push(position);
            }
        }
        positions.extend(self.new_ids.get(id).into_iter().flatten());
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
        self.records.seek(SeekFrom::Start(start * RECORD_SIZE)).map_err(io_error)?;
        self.records.read_exact(&mut bytes).map_err(|e| damaged(format!("{RECORDS}: {e}")))?;
        let records: Vec<Record> = bytes.chunks_exact(RECORD_SIZE as usize).map(Record::decode).collect();
        let names = self.meta.names.len() as u32;
        for (i, r) in records.iter().enumerate() {
            if r.len == 0 || r.offset + u64::from(r.len) > self.meta.covered_len || r.team >= names || r.from >= names || r.to >= names {
                return Err(damaged(format!("record {} is not valid", start + i as u64)));
            }
        }
        Ok(records)
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
        Ok(self.meta.pending_reads.iter().any(|(t, a, m)| t == team && a == agent && m == msg_id))
    }
}
