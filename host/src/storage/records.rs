//! agmsg's JSONL records: the exact key order agmsg prints, and the validated parse of an import file.

use agmsg_contract::{check_name, is_transport_token, records};

use crate::runtime::sandbox::bindings::storage::agmsg::storage::types::{Event, Message, ReadMark};

/// A `message_sent` record with the keys in the order `type,id,team,from,to,body,at`.
pub fn message_line(m: &Message) -> String {
    records::message_sent(&m.id, &m.team, &m.from, &m.to, &m.body, &m.at)
}

pub fn event_line(event: &Event) -> String {
    match event {
        Event::MessageSent(m) => message_line(m),
        Event::MessageRead(r) => records::message_read(&r.id, &r.msg_id, &r.team, &r.agent, &r.at),
    }
}

/// The trailing record of `watch-after`.
pub fn cursor_line(cursor: &str) -> String {
    records::cursor(cursor)
}

/// Parse and validate a whole import file before anything is applied. Unknown event types are
/// skipped and unknown fields ignored (§2.3 forward compatibility); blank lines are skipped. The first
/// bad line is an error naming its line number.
pub fn parse_import(text: &str) -> Result<Vec<Event>, String> {
    let mut events = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        let event = parse_event(line).map_err(|e| format!("line {number}: {e}"))?;
        events.extend(event);
    }
    Ok(events)
}

fn parse_event(line: &str) -> Result<Option<Event>, String> {
    let value: serde_json::Value = serde_json::from_str(line).map_err(|e| format!("invalid JSON record: {e}"))?;
    let object = value.as_object().ok_or("invalid JSON record: not an object")?;
    let kind = object.get("type").and_then(|t| t.as_str()).ok_or("invalid JSON record: no string \"type\"")?;
    let field = |name: &str| -> Result<String, String> {
        object
            .get(name)
            .and_then(|v| v.as_str())
            .map(str::to_owned)
            .ok_or_else(|| format!("{kind} record: \"{name}\" must be a string"))
    };
    let id_field = |name: &str| -> Result<String, String> {
        let id = field(name)?;
        if is_transport_token(&id) { Ok(id) } else { Err(format!("{kind} record: malformed \"{name}\" {id:?}")) }
    };
    let name_field = |name: &'static str| -> Result<String, String> {
        let value = field(name)?;
        check_name(name, &value).map_err(|e| format!("{kind} record: {e}"))?;
        Ok(value)
    };
    match kind {
        "message_sent" => Ok(Some(Event::MessageSent(Message {
            id: id_field("id")?,
            team: name_field("team")?,
            from: name_field("from")?,
            to: name_field("to")?,
            body: field("body")?,
            at: timestamp(field("at")?, kind)?,
        }))),
        "message_read" => Ok(Some(Event::MessageRead(ReadMark {
            id: id_field("id")?,
            msg_id: id_field("msg_id")?,
            team: name_field("team")?,
            agent: name_field("agent")?,
            at: timestamp(field("at")?, kind)?,
        }))),
        _ => Ok(None),
    }
}

fn timestamp(at: String, kind: &str) -> Result<String, String> {
    if is_transport_token(&at) { Ok(at) } else { Err(format!("{kind} record: malformed \"at\" {at:?}")) }
}
