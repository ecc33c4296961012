//! The index's files as bytes (see [`crate::index`]): `messages.bin`'s fixed-size records and
//! `meta.json`, decoded and checked against the log and the other files. No file is opened here, so
//! the fuzz check `jsonl_index` (src/fuzz_check/store.rs, issue 39) hands it bytes: an index file is
//! the driver's to write, but any process with the store's directory can change it.

use serde::{Deserialize, Serialize};

use agmsg_guest_sdk::storage::DriverError;

use crate::idtable::{IdTable, Level};

/// Bump when the sidecar layout changes: an index in another format is rebuilt. 2: the id table in
/// levels (`IdTable`), listed in the meta.
pub const FORMAT: u32 = 2;
/// How many trailing bytes of the covered prefix are compared to detect a rewrite of the log.
pub const FINGERPRINT: u64 = 64;
pub const RECORD_SIZE: u64 = 32;
pub const READ_BY_RECIPIENT: u32 = 1;
/// Where a record's flags are, from its start.
pub const FLAGS_OFFSET: u64 = 28;

/// One message in the index: 32 bytes on disk, little-endian.
#[derive(Clone, Copy, Debug)]
pub struct Record {
    /// The byte range of its line in the log, and which of the line's events it is (a `sync_pull_commit`
    /// line holds several).
    pub offset: u64,
    pub len: u32,
    pub event: u32,
    pub team: u32,
    pub from: u32,
    pub to: u32,
    pub flags: u32,
}

impl Record {
    /// Read by its recipient (an exact `message_read` for its team, recipient and id).
    pub fn is_read(&self) -> bool {
        self.flags & READ_BY_RECIPIENT != 0
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.offset.to_le_bytes());
        for word in [self.len, self.event, self.team, self.from, self.to, self.flags] {
            out.extend_from_slice(&word.to_le_bytes());
        }
    }

    pub fn decode(bytes: &[u8]) -> Record {
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

/// `messages.bin`'s records in `bytes` (whole records), each checked against a log of `log_len` bytes
/// and `names` interned names: its line inside the log, its names interned. `Err(i)`: record `i` (of
/// these) is not valid.
pub fn decode_records(bytes: &[u8], log_len: u64, names: usize) -> Result<Vec<Record>, usize> {
    let records: Vec<Record> = bytes.chunks_exact(RECORD_SIZE as usize).map(Record::decode).collect();
    let names = names as u32;
    for (i, r) in records.iter().enumerate() {
        // The line's end computed without overflow: a record near u64::MAX is not inside the log
        // (a fuzzing finding: the sum overflowed, a panic natively and a wrap in the component).
        let inside = r.offset.checked_add(u64::from(r.len)).is_some_and(|end| end <= log_len);
        if r.len == 0 || !inside || r.team >= names || r.from >= names || r.to >= names {
            return Err(i);
        }
    }
    Ok(records)
}

#[derive(Serialize, Deserialize, Default)]
pub struct Meta {
    pub format: u32,
    pub covered_len: u64,
    pub lines: u64,
    pub count: u64,
    pub fingerprint: Vec<u8>,
    /// The id table's levels: (first slot, slots, entries).
    pub levels: Vec<(u64, u64, u64)>,
    pub names: Vec<String>,
    /// Read marks (team, agent, msg_id) applied before any message with that id was in the log.
    pub pending_reads: Vec<(String, String, String)>,
}

/// `meta.json`'s text, if it reads as a meta in this format consistent with a log of `log_len` bytes,
/// a `messages.bin` of `records_len` bytes and an `ids.bin` of `slots` slots; `read_log(offset, buf)`
/// fills `buf` with the log's bytes at `offset` (the fingerprint they must equal).
pub fn checked_meta(
    text: &[u8],
    log_len: u64,
    records_len: u64,
    slots: u64,
    read_log: impl FnOnce(u64, &mut [u8]) -> Result<(), DriverError>,
) -> Result<Option<Meta>, DriverError> {
    let Ok(meta) = serde_json::from_slice::<Meta>(text) else { return Ok(None) };
    let levels: Vec<Level> = meta.levels.iter().map(|&(start, slots, entries)| Level { start, slots, entries }).collect();
    let consistent = meta.format == FORMAT
        && meta.covered_len <= log_len
        && meta.fingerprint.len() as u64 == FINGERPRINT.min(meta.covered_len)
        && meta.count.checked_mul(RECORD_SIZE).is_some_and(|bytes| records_len >= bytes)
        && IdTable::valid(&levels, slots)
        && levels.iter().map(|l| l.entries).sum::<u64>() == meta.count
        && {
            let mut tail = vec![0u8; meta.fingerprint.len()];
            read_log(meta.covered_len - meta.fingerprint.len() as u64, &mut tail)?;
            tail == meta.fingerprint
        };
    Ok(consistent.then_some(meta))
}
