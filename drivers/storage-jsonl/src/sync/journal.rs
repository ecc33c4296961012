//! Reading and appending `events.jsonl` as agmsg's sync journal.
//!
//! Reading is as strict as agmsg's `readRecords`: every record ends with a newline (a torn last line
//! refuses the whole log), is UTF-8 and exactly one JSON value with no duplicate key at any depth;
//! empty lines are skipped. Appending is one journaled write: the log's old length goes to the
//! driver's append journal first, so a write cut short (an error, a kill, the call deadline) is cut
//! back, now or by the next op, and agmsg's reader never meets a torn record; then one `fsync`.
//!
//! Bulk (a page of 1,000 sealed envelopes of up to 1 MiB each) never sits in memory whole: entries are
//! staged in a file in the index directory and written as several records of at most
//! [`RECORD_BYTES`] each (agmsg's fold reads consecutive commits of one binding as one), in one append.

use std::collections::HashSet;
use std::fs::File;

use agmsg_guest_sdk::storage::DriverError;
use serde::de::{DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::events::{LineReader, io_error, line_at, read_full_at, write_all_at};
use crate::index::index_path;
use crate::{LOG_FILE, store_path};

/// Above this many bytes of entries, a commit's entries continue in another record of the same append.
pub const RECORD_BYTES: u64 = 4 << 20;

fn fail(message: impl Into<String>) -> DriverError {
    DriverError::runtime(message)
}

/// One JSON value, refusing a duplicate object key at any depth (serde_json's `Value` keeps the last).
struct Strict;

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = Value;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(Strict)
    }
}

impl<'de> Visitor<'de> for Strict {
    type Value = Value;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Strict)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        let mut keys = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !keys.insert(key.clone()) {
                return Err(A::Error::custom(format!("duplicate key {key:?}")));
            }
            let value = map.next_value_seed(Strict)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

/// `text` as exactly one JSON value without duplicate keys.
pub fn parse_strict(text: &[u8]) -> Result<Value, String> {
    let mut de = serde_json::Deserializer::from_slice(text);
    let value = Strict.deserialize(&mut de).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(value)
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
        if last[0] != b'\n' {
            return Err(fail("JSONL log ends with an incomplete record"));
        }
    }
    let mut reader = LineReader::new(file, 0);
    let mut number = 0u64;
    while let Some((start, line)) = reader.next_line().map_err(io_error)? {
        if start >= len {
            break;
        }
        number += 1;
        if line.is_empty() {
            continue;
        }
        let end = start + line.len() as u64 + 1;
        let value = parse_strict(line).map_err(|e| fail(format!("JSONL log contains an invalid record (line {number}: {e})")))?;
        visit(start, end, value)?;
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::parse_strict;

    #[test]
    fn a_duplicate_key_at_any_depth_or_a_second_value_is_refused() {
        assert!(parse_strict(br#"{"a":{"b":[{"c":1}]},"d":null}"#).is_ok());
        assert!(parse_strict(br#"{"a":1,"a":2}"#).unwrap_err().contains("duplicate key"));
        assert!(parse_strict(br#"{"a":{"b":[{"c":1,"c":1}]}}"#).unwrap_err().contains("duplicate key"));
        assert!(parse_strict(br#"{"a":1} {"b":2}"#).is_err());
        assert!(parse_strict(b"{\"a\":\"\xff\"}").is_err(), "not UTF-8");
    }
}
