//! The log's sync generation, as agmsg's Stage-1 jsonl journal keeps it.
//!
//! agmsg's remote sync addresses a local message by the byte offset just after its `message_sent` line,
//! read together with the log's generation: the last `sync_generation.generation` or `driver_generation`
//! in the log. A rewrite that may move bytes (compaction, a rename) must therefore give a log that holds
//! sync state a fresh generation, written into the replacement file before it is renamed over the log,
//! so that no crash can leave rewritten offsets under the old generation. agmsg's jsonl driver decides
//! "holds sync state" by the two markers in [`is_sync_record`] and appends the record [`line`] builds.

use serde_json::Value;

/// Whether a log line is one of agmsg's sync records that carry a generation: a `sync_generation`, or
/// any commit naming its `driver_generation`. agmsg's driver greps the raw line for
/// `"type":"sync_generation"` or `"driver_generation":`; the parsed check also catches a record written
/// with other spacing, for which rotating is just as right.
pub fn is_sync_record(line: &[u8], value: &Value) -> bool {
    fn contains(haystack: &[u8], needle: &[u8]) -> bool {
        haystack.windows(needle.len()).any(|w| w == needle)
    }
    contains(line, br#""type":"sync_generation""#)
        || contains(line, br#""driver_generation":"#)
        || value.get("type").and_then(Value::as_str) == Some("sync_generation")
        || value.get("driver_generation").is_some()
}

/// A new generation record, in agmsg's shape and key order: a random (v4) UUID and the time in
/// JavaScript's `toISOString` form (milliseconds, `Z`). No trailing newline.
pub fn line() -> String {
    let generation = uuid::Uuid::new_v4();
    let created_at = humantime::format_rfc3339_millis(std::time::SystemTime::now());
    // Neither value needs JSON escaping.
    format!(r#"{{"type":"sync_generation","generation":"{generation}","created_at":"{created_at}"}}"#)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_agmsg_markers_and_builds_its_record() {
        let check = |text: &str| is_sync_record(text.as_bytes(), &serde_json::from_str(text).unwrap());
        assert!(check(r#"{"type":"sync_generation","generation":"x","created_at":"t"}"#));
        assert!(check(r#"{"type":"sync_prepare_commit","binding":{},"driver_generation":"g"}"#));
        assert!(check(r#"{"type": "sync_generation"}"#), "other spacing");
        assert!(!check(r#"{"type":"message_sent","id":"1","team":"t","from":"a","to":"b","body":"\"driver_generation\":","at":"t"}"#));

        let record: Value = serde_json::from_str(&line()).unwrap();
        let keys: Vec<&str> = record.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys.len(), 3);
        let text = line();
        assert!(text.starts_with(r#"{"type":"sync_generation","generation":""#), "{text}");
        let generation = record["generation"].as_str().unwrap();
        assert_eq!((generation.len(), &generation[14..15]), (36, "4"), "{generation}");
        assert!(matches!(&generation[19..20], "8" | "9" | "a" | "b"));
        let at = record["created_at"].as_str().unwrap();
        assert_eq!((at.len(), &at[19..20], &at[23..]), (24, ".", "Z"), "{at}");
        assert_ne!(line(), line());
    }
}
