//! The log read as agmsg's sync journal, from its bytes: as strict as agmsg's `readRecords` (every
//! record ends with a newline, so a torn last line refuses the whole log; each is UTF-8 and exactly one
//! JSON value with no duplicate key at any depth; empty lines are skipped). [`super::journal`] reads the
//! store's log through these steps; [`records_in`] reads a buffer through the same ones (the fuzz check
//! `jsonl_journal` hands it bytes: src/fuzz_check/store.rs, issue 39).

use std::collections::HashSet;

use agmsg_guest_sdk::storage::DriverError;
use serde::de::{DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

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

/// A log whose last byte is `last` (`None`: empty) holds only complete records.
pub fn check_ending(last: Option<u8>) -> Result<(), DriverError> {
    match last {
        Some(b) if b != b'\n' => Err(fail("JSONL log ends with an incomplete record")),
        _ => Ok(()),
    }
}

/// Line `number` of the log (1-based), starting at byte `start`, without its `\n`: nothing when empty,
/// else one strict record, visited with its line's offsets (start, and end just after the `\n`).
pub fn record_line(
    number: u64,
    start: u64,
    line: &[u8],
    visit: &mut impl FnMut(u64, u64, Value) -> Result<(), DriverError>,
) -> Result<(), DriverError> {
    if line.is_empty() {
        return Ok(());
    }
    let end = start + line.len() as u64 + 1;
    let value = parse_strict(line).map_err(|e| fail(format!("JSONL log contains an invalid record (line {number}: {e})")))?;
    visit(start, end, value)
}

/// Visit every record of a log held in `log`, as [`super::journal::read_records`] visits the store's.
/// Only the fuzz target and its replay read a buffer (the driver streams its log).
#[allow(dead_code)]
pub fn records_in(log: &[u8], mut visit: impl FnMut(u64, u64, Value) -> Result<(), DriverError>) -> Result<(), DriverError> {
    check_ending(log.last().copied())?;
    let mut start = 0u64;
    for (i, line) in log.split_inclusive(|&b| b == b'\n').enumerate() {
        let text = line.strip_suffix(b"\n").unwrap_or(line);
        record_line(i as u64 + 1, start, text, &mut visit)?;
        start += line.len() as u64;
    }
    Ok(())
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
