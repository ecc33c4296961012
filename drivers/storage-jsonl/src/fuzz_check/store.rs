//! The jsonl driver's store files besides `events.jsonl`'s message lines (lines.rs): `read-cursors.tsv`
//! (`jsonl_cursors`), the log read as agmsg's sync journal and folded into a binding's state
//! (`jsonl_journal`), and the index's `meta.json` and `messages.bin` (`jsonl_index`). Any process with
//! the store's directory can write them; the driver reads them before every op.

use agmsg_guest_sdk::storage::{DriverError, is_lower_uuid, is_sequence};

use crate::cursors::Cursors;
use crate::index_files::{FINGERPRINT, RECORD_SIZE, Record, checked_meta, decode_records};
use crate::sync::fold::{State, Target};
use crate::sync::records::{parse_strict, records_in};

/// `read-cursors.tsv`: read (`Cursors::parse`); a file read gives each pair its last line's position,
/// in first-seen order; what the driver saves (`text`) reads back as the same cursors, and saves again
/// as the same text.
pub fn jsonl_cursors(data: &[u8]) {
    // The driver reads the file with `read_to_string`: bytes that are not UTF-8 are an error.
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(cursors) = Cursors::parse(text) else { return };
    let mut order: Vec<(&str, &str)> = Vec::new();
    let mut last = std::collections::HashMap::new();
    for line in text.lines().filter(|l| !l.is_empty()) {
        let fields: Vec<&str> = line.split('\t').collect();
        let [team, agent, position] = fields[..] else { panic!("accepted the line {line:?}") };
        let position: u64 = position.parse().unwrap_or_else(|_| panic!("accepted the position in {line:?}"));
        if last.insert((team, agent), position).is_none() {
            order.push((team, agent));
        }
    }
    assert_eq!(cursors.order.len(), order.len());
    for (key, (team, agent)) in cursors.order.iter().zip(&order) {
        assert_eq!((key.0.as_str(), key.1.as_str()), (*team, *agent));
        assert_eq!(cursors.get(team, agent), last[&(*team, *agent)]);
    }
    assert_eq!(cursors.positions.len(), order.len());
    let saved = cursors.text();
    let again = Cursors::parse(&saved).unwrap_or_else(|e| panic!("saved cursors do not read back: {}\n{saved:?}", e.message));
    assert_eq!(again.order, cursors.order, "{saved:?}");
    assert_eq!(again.positions, cursors.positions, "{saved:?}");
    assert_eq!(again.text(), saved);
}

/// `events.jsonl` read as agmsg's sync journal (`records_in`, the steps `read_records` takes on the
/// store's log) and folded into a binding's state (`State::fold`): each record visited is its line,
/// parsed strictly, with the line's offsets; a log read whole visits every non-empty line; a state
/// folded holds only what its records said (sequences, UUIDs, offsets of lines, consistent maps).
pub fn jsonl_journal(data: &[u8]) {
    let mut visited = Vec::new();
    let read = records_in(data, |start, end, value| {
        visited.push((start, end, value));
        Ok(())
    });
    let mut last_end = 0u64;
    for (start, end, value) in &visited {
        let (start, end) = (*start as usize, *end as usize);
        assert!(start as u64 >= last_end && start < end && end <= data.len(), "{start}..{end}");
        assert!(start == 0 || data[start - 1] == b'\n', "a record starts mid-line at {start}");
        assert_eq!(data[end - 1], b'\n');
        let line = &data[start..end - 1];
        assert!(!line.is_empty() && !line.contains(&b'\n'));
        assert_eq!(parse_strict(line).as_ref(), Ok(value));
        last_end = end as u64;
    }
    if read.is_ok() {
        let lines = data.split_inclusive(|&b| b == b'\n').filter(|l| *l != b"\n").count();
        assert_eq!(visited.len(), lines, "a record left out");
    }
    let target = Target { local_team: "t", server: "s", remote: "r" };
    let Ok(state) = State::fold(&target, |visit| records_in(data, visit)) else { return };
    assert!(read.is_ok(), "folded a log that does not read");
    assert!(is_sequence(&state.transport), "{:?}", state.transport);
    if let Some(g) = &state.generation {
        assert!(is_lower_uuid(g, 4) || is_lower_uuid(g, 7), "{g:?}");
    }
    for (local, &i) in &state.by_local {
        assert_eq!(&state.reservations[i].local_id, local);
    }
    for (wire, &i) in &state.by_wire {
        assert_eq!(&state.reservations[i].wire, wire);
        assert!(is_lower_uuid(wire, 4));
    }
    for r in &state.reservations {
        assert!(is_sequence(&r.position) && (r.place.record as usize) < data.len());
    }
    for p in state.pulled.values() {
        assert!(is_sequence(&p.seq) && is_lower_uuid(&p.wire, 4) && (p.place.record as usize) < data.len());
    }
    for (seq, wire) in &state.wire_by_seq {
        assert!(is_sequence(seq) && !wire.is_empty());
    }
    for local in &state.locals {
        let (line, position) = (local.line as usize, local.position as usize);
        assert!(line < position && position <= data.len() && data[position - 1] == b'\n', "{local:?}");
    }
    let cursor = state.push_cursor();
    assert!(cursor == 0 || state.locals.iter().any(|l| l.position == cursor), "push cursor {cursor}");
}

/// The index's `meta.json` (`checked_meta`) against a log, a `messages.bin` length and an `ids.bin`
/// size, and `messages.bin`'s records (`decode_records`). The input: 8 bytes of `ids.bin` slots and 8
/// of `messages.bin` length (little-endian), then the meta's text, the log and the records' bytes,
/// separated by 0xff. A meta let through is consistent with them (computed without overflow), and
/// saved again reads back the same; a record let through points inside the log at interned names, and
/// encodes back to its bytes.
pub fn jsonl_index(data: &[u8]) {
    let mut head = [0u8; 16];
    let n = data.len().min(16);
    head[..n].copy_from_slice(&data[..n]);
    let slots = u64::from_le_bytes(head[..8].try_into().unwrap());
    let records_len = u64::from_le_bytes(head[8..].try_into().unwrap());
    let mut parts = data[n..].splitn(3, |&b| b == 0xff);
    let (text, log, records) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    let log_len = log.len() as u64;
    let read_log = |offset: u64, buf: &mut [u8]| match usize::try_from(offset).ok().and_then(|o| log.get(o..o.checked_add(buf.len())?)) {
        Some(bytes) => {
            buf.copy_from_slice(bytes);
            Ok(())
        }
        None => Err(DriverError::runtime("the log ends early")),
    };
    let mut names = 3;
    if let Ok(Some(meta)) = checked_meta(text, log_len, records_len, slots, read_log) {
        let covered = meta.covered_len as usize;
        assert!(covered <= log.len());
        assert_eq!(meta.fingerprint.len() as u64, FINGERPRINT.min(meta.covered_len));
        assert_eq!(meta.fingerprint, log[covered - meta.fingerprint.len()..covered]);
        assert!(u128::from(meta.count) * u128::from(RECORD_SIZE) <= u128::from(records_len), "{} records", meta.count);
        let mut start = 0u128;
        let mut entries = 0u128;
        for &(first, level_slots, level_entries) in &meta.levels {
            assert!(u128::from(first) == start && level_slots.is_power_of_two(), "{:?}", meta.levels);
            assert!(u128::from(level_entries) * 2 <= u128::from(level_slots), "{:?}", meta.levels);
            start += u128::from(level_slots);
            entries += u128::from(level_entries);
        }
        assert!(start <= u128::from(slots), "levels {:?} past {slots} slots", meta.levels);
        assert_eq!(entries, u128::from(meta.count));
        let saved = serde_json::to_vec(&meta).expect("a meta serializes");
        let again = checked_meta(&saved, log_len, records_len, slots, read_log).expect("no error").expect("a saved meta reads back");
        assert_eq!(serde_json::to_vec(&again).unwrap(), saved);
        names = meta.names.len();
    }
    let whole = records.len() / RECORD_SIZE as usize;
    let valid = |r: &Record| {
        r.len != 0
            && u128::from(r.offset) + u128::from(r.len) <= u128::from(log_len)
            && [r.team, r.from, r.to].iter().all(|&id| (id as usize) < names)
    };
    match decode_records(records, log_len, names) {
        Ok(decoded) => {
            assert_eq!(decoded.len(), whole);
            let mut bytes = Vec::new();
            for r in &decoded {
                assert!(valid(r), "{r:?}");
                r.encode(&mut bytes);
            }
            assert_eq!(bytes, records[..whole * RECORD_SIZE as usize]);
        }
        Err(i) => {
            assert!(i < whole);
            let at = |k: usize| Record::decode(&records[k * RECORD_SIZE as usize..(k + 1) * RECORD_SIZE as usize]);
            assert!(!valid(&at(i)) && (0..i).all(|k| valid(&at(k))), "record {i}");
        }
    }
}
