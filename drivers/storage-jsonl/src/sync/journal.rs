//! Reading and appending `events.jsonl` as agmsg's sync journal.
//!
//! Reading is as strict as agmsg's `readRecords`: every record ends with a newline (a torn last line
//! refuses the whole log), is UTF-8 and exactly one JSON value with no duplicate key at any depth;
//! empty lines are skipped. Appending is one journaled write: the log's old length goes to the
//! driver's append journal first, so a write cut short (an error, a kill, the call deadline) is cut
//! back, now or by the next op, and agmsg's reader never meets a torn record; then one `fsync`. The
//! journal's creation and its removal (the commit point) are each made durable with a directory sync.
//!
//! Bulk (a page of 1,000 sealed envelopes of up to 1 MiB each) never sits in memory whole: entries are
//! staged in a file in the index directory and written as several records of at most
//! [`RECORD_BYTES`] each (agmsg's fold reads consecutive commits of one binding as one), in one append.

use std::fs::File;

use agmsg_guest_sdk::storage::DriverError;
use serde_json::Value;

use super::fold::{State, Target};
use super::records::{check_ending, record_line};

use crate::events::{LineReader, io_error, line_at, read_full_at, write_all_at};
use crate::index::index_path;
use crate::{LOG_FILE, store_path};

/// Above this many bytes of entries, a commit's entries continue in another record of the same append.
pub const RECORD_BYTES: u64 = 4 << 20;

fn fail(message: impl Into<String>) -> DriverError {
    DriverError::runtime(message)
}

/// Visit every record of the log with the byte offsets of its line (start, and end just after the
/// `\n`), under agmsg's strict rules. A missing log has no records.
pub fn read_records(mut visit: impl FnMut(u64, u64, Value) -> Result<(), DriverError>) -> Result<(), DriverError> {
    let file = match File::open(store_path(LOG_FILE)) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_error(e)),
    };
    let len = file.metadata().map_err(io_error)?.len();
    if len > 0 {
        let mut last = [0u8; 1];
        read_full_at(&file, &mut last, len - 1).map_err(io_error)?;
        check_ending(Some(last[0]))?;
    }
    let mut reader = LineReader::new(file, 0);
    let mut number = 0u64;
    while let Some((start, line)) = reader.next_line().map_err(io_error)? {
        if start >= len {
            break;
        }
        number += 1;
        record_line(number, start, line, &mut visit)?;
    }
    Ok(())
}

impl State {
    /// Read the whole log once and fold `target`'s records.
    pub fn load(target: &Target<'_>) -> Result<State, DriverError> {
        State::fold(target, |visit| read_records(visit))
    }
}

/// The record whose line starts at `offset`, parsed.
pub fn record_at(file: &File, offset: u64) -> Result<Value, DriverError> {
    let line = line_at(file, offset).map_err(io_error)?;
    serde_json::from_slice(&line).map_err(|e| DriverError::corrupt(format!("{LOG_FILE}: no record at byte {offset}: {e}")))
}

/// Append the lines `next` yields (each without its `\n`) to the log as one journaled, synced write;
/// answers the offset the first line starts at. On any failure the log is cut back to its old length.
pub fn append_lines(mut next: impl FnMut() -> Result<Option<Vec<u8>>, DriverError>) -> Result<u64, DriverError> {
    let log =
        std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(store_path(LOG_FILE)).map_err(io_error)?;
    let start = log.metadata().map_err(io_error)?.len();
    // The journal first: until it is removed, the next op cuts the log back to `start`. The index
    // directory it is kept in is missing in a store agmsg made until an op here reads through the index.
    std::fs::create_dir_all(index_path("")).map_err(io_error)?;
    crate::rewrite(&format!("{}/{}", crate::index::DIR, crate::APPEND_JOURNAL), start.to_string().as_bytes())?;
    crate::sync_dir(index_path(""));
    super::crash::crash_point("append:journaled");
    let mut at = start;
    let written = (|| {
        while let Some(mut line) = next()? {
            line.push(b'\n');
            write_all_at(&log, &line, at).map_err(io_error)?;
            at += line.len() as u64;
            super::crash::crash_point("append:line");
        }
        log.sync_all().map_err(io_error)
    })();
    let undo = |e: DriverError| -> DriverError {
        match log.set_len(start).and_then(|()| log.sync_all()) {
            Ok(()) => {
                let _ = std::fs::remove_file(index_path(crate::APPEND_JOURNAL));
                e
            }
            // The journal stays: the next op cuts the log back.
            Err(undo) => fail(format!("{}; and cutting {LOG_FILE} back to {start} bytes failed: {undo}", e.message)),
        }
    };
    if let Err(e) = written {
        return Err(undo(e));
    }
    super::crash::crash_point("append:synced");
    if let Err(e) = std::fs::remove_file(index_path(crate::APPEND_JOURNAL)) {
        return Err(undo(io_error(e)));
    }
    // The commit point: a journal that came back after a power cut would cut the lines away.
    crate::sync_dir(index_path(""));
    super::crash::crash_point("append:committed");
    Ok(start)
}

/// Entries (JSON texts) staged in a file until their commit, with their lengths.
pub struct Staged {
    file: File,
    path: String,
    lengths: Vec<u64>,
    len: u64,
}

impl Staged {
    /// A fresh staging file; the caller holds the store's locks, so one left there is a dead op's.
    pub fn new(name: &str) -> Result<Staged, DriverError> {
        std::fs::create_dir_all(index_path("")).map_err(io_error)?;
        let path = index_path(name);
        let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path).map_err(io_error)?;
        Ok(Staged { file, path, lengths: Vec::new(), len: 0 })
    }

    pub fn push(&mut self, entry: &[u8]) -> Result<(), DriverError> {
        write_all_at(&self.file, entry, self.len).map_err(io_error)?;
        self.len += entry.len() as u64;
        self.lengths.push(entry.len() as u64);
        Ok(())
    }

    pub fn count(&self) -> usize {
        self.lengths.len()
    }

    /// The entries grouped into records of at most [`RECORD_BYTES`] (at least one entry each; one empty
    /// group when there are none): the index ranges.
    fn groups(&self) -> Vec<std::ops::Range<usize>> {
        let mut groups = Vec::new();
        let (mut first, mut bytes) = (0, 0u64);
        for (i, &n) in self.lengths.iter().enumerate() {
            if i > first && bytes + n > RECORD_BYTES {
                groups.push(first..i);
                (first, bytes) = (i, 0);
            }
            bytes += n + 1;
        }
        groups.push(first..self.lengths.len());
        groups
    }

    /// Append the entries as records `render(group, is_last)` builds around them, in one journaled
    /// append: `render` answers the record's text before and after the entries' array contents. Answers,
    /// for each entry in order, the log offset of its record and its index in the record's array.
    pub fn commit(&self, mut render: impl FnMut(usize, bool) -> (String, String)) -> Result<Vec<(u64, usize)>, DriverError> {
        let groups = self.groups();
        let mut placed = Vec::with_capacity(self.count());
        let mut next_group = 0;
        let mut offset = 0u64;
        let mut relative = Vec::new();
        let start = append_lines(|| {
            let Some(group) = groups.get(next_group).cloned() else { return Ok(None) };
            let (head, tail) = render(next_group, next_group + 1 == groups.len());
            let mut line = head.into_bytes();
            let from: u64 = self.lengths[..group.start].iter().sum();
            let bytes: u64 = self.lengths[group.clone()].iter().sum();
            let mut buf = vec![0u8; bytes as usize];
            crate::events::read_exact_at(&self.file, &mut buf, from).map_err(io_error)?;
            let mut at = 0usize;
            for (k, i) in group.clone().enumerate() {
                if k > 0 {
                    line.push(b',');
                }
                let n = self.lengths[i] as usize;
                line.extend_from_slice(&buf[at..at + n]);
                at += n;
                relative.push((offset, k));
            }
            line.extend_from_slice(tail.as_bytes());
            offset += line.len() as u64 + 1;
            next_group += 1;
            Ok(Some(line))
        })?;
        for (rel, k) in relative {
            placed.push((start + rel, k));
        }
        Ok(placed)
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A record's text with no entries: what a small commit appends.
pub fn append_record(line: String) -> Result<u64, DriverError> {
    let mut once = Some(line.into_bytes());
    append_lines(|| Ok(once.take()))
}
