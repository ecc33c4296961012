//! Reading `events.jsonl` lines as agmsg's logical events.

use agmsg_guest_sdk::storage::{DriverError, Event, Message, ReadMark};
use serde_json::{Map, Value};

use crate::LOG_FILE;

/// The v1 events line `number` of the log stands for, in order: one for a `message_sent` or
/// `message_read` line; the nested `messages[].local_event`s of a `sync_pull_commit` (how agmsg's sync
/// records imported messages); none for a blank line or an event type this version does not know
/// (forward compatibility). A line that is not a JSON object with a string `type`, or a v1 event with a
/// missing field, is corrupt.
pub fn parse_line(line: &[u8], number: u64) -> Result<Vec<Event>, DriverError> {
    let corrupt = |what: String| DriverError::corrupt(format!("{LOG_FILE} line {number}: {what}"));
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(Vec::new());
    }
    let value: Value = serde_json::from_slice(line).map_err(|e| corrupt(format!("invalid JSON: {e}")))?;
    let object = value.as_object().ok_or_else(|| corrupt("not a JSON object".into()))?;
    match object.get("type").and_then(Value::as_str) {
        Some("sync_pull_commit") => {
            let nested = object.get("messages").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
            let mut events = Vec::new();
            for local in nested.iter().filter_map(|m| m.get("local_event")) {
                let local = local.as_object().ok_or_else(|| corrupt("a local_event is not a JSON object".into()))?;
                events.extend(v1_event(local).map_err(|what| corrupt(format!("local_event: {what}")))?);
            }
            Ok(events)
        }
        Some(_) => Ok(v1_event(object).map_err(corrupt)?.into_iter().collect()),
        None => Err(corrupt("no string \"type\"".into())),
    }
}

/// The v1 event an object holds, `None` for another type; `Err` names what is malformed.
fn v1_event(object: &Map<String, Value>) -> Result<Option<Event>, String> {
    let field = |name: &str| -> Result<String, String> {
        object.get(name).and_then(Value::as_str).map(str::to_owned).ok_or_else(|| format!("\"{name}\" must be a string"))
    };
    Ok(match object.get("type").and_then(Value::as_str) {
        Some("message_sent") => Some(Event::MessageSent(Message {
            id: field("id")?,
            team: field("team")?,
            from: field("from")?,
            to: field("to")?,
            body: field("body")?,
            at: field("at")?,
        })),
        Some("message_read") => Some(Event::MessageRead(ReadMark {
            id: field("id")?,
            msg_id: field("msg_id")?,
            team: field("team")?,
            agent: field("agent")?,
            at: field("at")?,
        })),
        Some(_) => None,
        None => return Err("no string \"type\"".into()),
    })
}

pub fn io_error(e: std::io::Error) -> DriverError {
    DriverError::runtime(format!("jsonl: {e}"))
}
