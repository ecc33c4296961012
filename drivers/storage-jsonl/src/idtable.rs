//! An on-disk hash table from a 64-bit hash to a value (a message's position, a line's offset), read
//! and written a few slots at a time, so that no op holds it in memory whatever its size.
//!
//! Open addressing with linear probing, in *levels*: when the newest level is half full, a new level at
//! least four times the entries so far is added after it instead of rehashing (a rehash would need the
//! whole table in memory, or a random write per entry); a lookup probes every level. Levels grow
//! geometrically, so there are few. A slot is 16 bytes, little-endian: the hash (never 0, which marks an
//! empty slot) and the value. A hash match is only a candidate: the caller checks it against the data.

use std::fs::File;

use agmsg_guest_sdk::storage::DriverError;

use crate::events::{io_error, read_full_at, write_all_at};

pub const SLOT_SIZE: u64 = 16;
pub const MIN_SLOTS: u64 = 1 << 12;
/// Slots read at once while probing: a probe rarely goes further at load 1/2.
const GROUP: u64 = 16;
/// Batch inserts go through the table in segments sized to hold about `PER_SEGMENT` of the batch's
/// entries (between `MIN_SEGMENT` and `MAX_SEGMENT` slots), plus a margin for probes that run past a
/// segment's end; a segment with fewer than `DENSE` entries takes them one by one. So the bytes moved
/// stay about a kilobyte per entry however sparse the batch is in a big table.
const PER_SEGMENT: u64 = 32;
const MIN_SEGMENT: u64 = 256;
const MAX_SEGMENT: u64 = 4096;
const MARGIN: u64 = 64;
const DENSE: usize = 8;

/// FNV-1a: stable across builds and platforms, which the on-disk table needs. Never 0 (an empty slot).
pub fn hash_bytes(parts: &[&[u8]]) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            // A separator no name or id holds: ("a b", "c") and ("a", "b c") differ.
            hash ^= 0xff;
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        for &byte in *part {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    hash.max(1)
}

/// One level: where its slots start in the file, how many there are (a power of two), and how many
/// entries it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Level {
    pub start: u64,
    pub slots: u64,
    pub entries: u64,
}

fn first_slots(expected_entries: u64) -> u64 {
    (expected_entries * 2).next_power_of_two().max(MIN_SLOTS)
}

pub struct IdTable {
    file: File,
    levels: Vec<Level>,
    /// How many slots the first level gets (the expected number of entries, times two).
    first_slots: u64,
}

impl IdTable {
    /// A table in `file` with these levels (the file holds at least their slots).
    pub fn new(file: File, levels: Vec<Level>, expected_entries: u64) -> IdTable {
        IdTable { file, levels, first_slots: first_slots(expected_entries) }
    }

    /// Take the table as saved: these levels, and the size of a first level if there is none.
    pub fn reopen(&mut self, levels: Vec<Level>, expected_entries: u64) {
        self.levels = levels;
        self.first_slots = first_slots(expected_entries);
    }

    /// Empty the table.
    pub fn clear(&mut self, expected_entries: u64) -> Result<(), DriverError> {
        self.file.set_len(0).map_err(io_error)?;
        self.reopen(Vec::new(), expected_entries);
        Ok(())
    }

    pub fn levels(&self) -> &[Level] {
        &self.levels
    }

    /// The slots the levels span: the file must be at least this long, in slots.
    pub fn span(levels: &[Level]) -> u64 {
        levels.last().map_or(0, |l| l.start + l.slots)
    }

    /// Whether `levels` is a well-formed layout for a file of `file_slots` slots. Levels read from a
    /// damaged meta may hold any numbers: a product or sum past u64 is not a layout (fuzzing findings:
    /// both overflowed, a panic natively and a wrap in the component).
    pub fn valid(levels: &[Level], file_slots: u64) -> bool {
        let mut start = 0u64;
        for level in levels {
            let half_full = level.entries.checked_mul(2).is_some_and(|n| n <= level.slots);
            if level.start != start || !level.slots.is_power_of_two() || !half_full {
                return false;
            }
            let Some(end) = start.checked_add(level.slots) else { return false };
            start = end;
        }
        start <= file_slots
    }

    /// Every value stored under `hash`, in no particular order (a crash may leave a value twice).
    pub fn candidates(&self, hash: u64) -> Result<Vec<u64>, DriverError> {
        let mut found = Vec::new();
        for level in &self.levels {
            self.probe(level, hash, |slot_hash, value| {
                if slot_hash == hash {
                    found.push(value);
                }
                false
            })?;
        }
        Ok(found)
    }

    /// Store `value` under `hash`, unless that very entry is there already (an entry applied again
    /// after a crash). Each value is inserted once per run, so either way it counts as an entry.
    pub fn insert(&mut self, hash: u64, value: u64) -> Result<(), DriverError> {
        let needs_level = self.levels.last().is_none_or(|l| (l.entries + 1) * 2 > l.slots);
        if needs_level {
            let entries: u64 = self.levels.iter().map(|l| l.entries).sum();
            let slots = if self.levels.is_empty() { self.first_slots } else { ((entries + 1) * 4).next_power_of_two().max(MIN_SLOTS) };
            self.add_level(slots)?;
        }
        let level = *self.levels.last().expect("a level was just ensured");
        let mut empty = None;
        let mut present = false;
        self.probe(&level, hash, |slot_hash, slot_value| {
            present = slot_hash == hash && slot_value == value;
            present
        })
        .map(|end| empty = end)?;
        if present {
            // Written by a process that stopped before its checkpoint counted it.
            self.levels.last_mut().expect("a level exists").entries += 1;
            return Ok(());
        }
        let slot = empty.ok_or_else(|| DriverError::corrupt("jsonl index: id table has no free slot"))?;
        let mut bytes = [0u8; SLOT_SIZE as usize];
        bytes[..8].copy_from_slice(&hash.to_le_bytes());
        bytes[8..].copy_from_slice(&value.to_le_bytes());
        write_all_at(&self.file, &bytes, (level.start + slot) * SLOT_SIZE).map_err(io_error)?;
        self.levels.last_mut().expect("a level exists").entries += 1;
        Ok(())
    }

    /// Insert many entries at once (as [`IdTable::insert`] each): sorted by home slot, those that land
    /// close together share one read and one write of their stretch of the table. A catch-up inserts a
    /// batch of thousands; one descriptor call per slot would dominate it.
    pub fn insert_batch(&mut self, entries: &mut [(u64, u64)]) -> Result<(), DriverError> {
        if entries.is_empty() {
            return Ok(());
        }
        // A level that takes the whole batch (one more level is enough: it is sized for it).
        let fits = self.levels.last().is_some_and(|l| (l.entries + entries.len() as u64) * 2 <= l.slots);
        if !fits {
            let entries_so_far: u64 = self.levels.iter().map(|l| l.entries).sum();
            let wanted = entries_so_far + entries.len() as u64;
            let slots = if self.levels.is_empty() {
                self.first_slots.max((wanted * 2).next_power_of_two())
            } else {
                (wanted * 4).next_power_of_two().max(MIN_SLOTS)
            };
            self.add_level(slots)?;
        }
        let level = *self.levels.last().expect("a level exists");
        let mask = level.slots - 1;
        entries.sort_unstable_by_key(|&(hash, value)| (hash & mask, value));
        let segment_slots =
            (level.slots * PER_SEGMENT / entries.len() as u64).next_power_of_two().clamp(MIN_SEGMENT, MAX_SEGMENT).min(level.slots);
        let mut rest: &[(u64, u64)] = entries;
        while let Some(&(first, _)) = rest.first() {
            let segment = (first & mask) / segment_slots;
            let n = rest.iter().take_while(|(hash, _)| (hash & mask) / segment_slots == segment).count();
            let (here, later) = rest.split_at(n);
            if n < DENSE {
                for &(hash, value) in here {
                    self.insert(hash, value)?;
                }
            } else {
                self.insert_in_segment(&level, segment * segment_slots, segment_slots, here)?;
            }
            rest = later;
        }
        Ok(())
    }

    /// Insert entries whose home slots are all in the segment of `level` from `first_slot`, through one
    /// buffer holding the segment and a margin after it for probes that run on; one that runs past that
    /// goes alone.
    fn insert_in_segment(&mut self, level: &Level, first_slot: u64, segment_slots: u64, entries: &[(u64, u64)]) -> Result<(), DriverError> {
        let slots = (segment_slots + MARGIN).min(level.slots - first_slot);
        let mut buf = vec![0u8; (slots * SLOT_SIZE) as usize];
        let at = (level.start + first_slot) * SLOT_SIZE;
        let read = read_full_at(&self.file, &mut buf, at).map_err(io_error)?;
        buf[read..].fill(0);
        let mut added = 0;
        let mut overflow = Vec::new();
        'entries: for &(hash, value) in entries {
            let mut slot = (hash & (level.slots - 1)) - first_slot;
            while slot < slots {
                let s = &mut buf[(slot * SLOT_SIZE) as usize..][..SLOT_SIZE as usize];
                let slot_hash = u64::from_le_bytes(s[..8].try_into().unwrap());
                if slot_hash == 0 {
                    s[..8].copy_from_slice(&hash.to_le_bytes());
                    s[8..].copy_from_slice(&value.to_le_bytes());
                    added += 1;
                    continue 'entries;
                }
                if slot_hash == hash && u64::from_le_bytes(s[8..].try_into().unwrap()) == value {
                    added += 1;
                    continue 'entries;
                }
                slot += 1;
            }
            overflow.push((hash, value));
        }
        write_all_at(&self.file, &buf, at).map_err(io_error)?;
        self.levels.last_mut().expect("a level exists").entries += added;
        for (hash, value) in overflow {
            self.insert(hash, value)?;
        }
        Ok(())
    }

    fn add_level(&mut self, slots: u64) -> Result<(), DriverError> {
        let start = Self::span(&self.levels);
        // Zero the level's slots: a crashed process may have left a bigger file behind.
        self.file.set_len(start * SLOT_SIZE).map_err(io_error)?;
        self.file.set_len((start + slots) * SLOT_SIZE).map_err(io_error)?;
        self.levels.push(Level { start, slots, entries: 0 });
        Ok(())
    }

    /// Visit the occupied slots of `level` from `hash`'s home until an empty slot (returned, as an index
    /// in the level) or until `visit` says stop (`None`). A level with no empty slot is damaged.
    fn probe(&self, level: &Level, hash: u64, mut visit: impl FnMut(u64, u64) -> bool) -> Result<Option<u64>, DriverError> {
        let mask = level.slots - 1;
        let mut slot = hash & mask;
        let mut seen = 0;
        let mut bytes = vec![0u8; (GROUP * SLOT_SIZE) as usize];
        while seen < level.slots {
            let n = GROUP.min(level.slots - slot);
            let buf = &mut bytes[..(n * SLOT_SIZE) as usize];
            let read = read_full_at(&self.file, buf, (level.start + slot) * SLOT_SIZE).map_err(io_error)?;
            // Past the end of a short (crashed) file the slots are empty.
            buf[read..].fill(0);
            for (i, s) in buf.chunks_exact(SLOT_SIZE as usize).enumerate() {
                let slot_hash = u64::from_le_bytes(s[..8].try_into().unwrap());
                if slot_hash == 0 {
                    return Ok(Some(slot + i as u64));
                }
                if visit(slot_hash, u64::from_le_bytes(s[8..].try_into().unwrap())) {
                    return Ok(None);
                }
            }
            seen += n;
            slot = (slot + n) & mask;
        }
        Err(DriverError::corrupt("jsonl index: an id table level has no empty slot"))
    }
}
