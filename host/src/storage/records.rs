//! agmsg's JSONL records: the exact key order agmsg prints, the validated parse of an import file, and
//! the rules an event meets (import and export check the same).

use agmsg_contract::{check_name, is_transport_token, records};

use super::types::{Event, Message, ReadMark};

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

/// The longest line an import file may have (a message body is at most this, give or take its JSON).
pub const MAX_IMPORT_LINE: usize = 64 << 20;

/// Parse and validate a whole import file before anything is applied. Unknown event types are
/// skipped and unknown fields ignored (§2.3 forward compatibility); blank lines are skipped. The first
/// bad line is an error naming its line number.
pub fn parse_import(text: &str) -> Result<Vec<Event>, String> {
    let mut events = Vec::new();
    scan_import(text.as_bytes(), |event| {
        events.push(event);
        Ok::<(), String>(())
    })
    .map_err(|e| e.to_string())?;
    Ok(events)
}

/// Why [`scan_import`] stopped: a line of the file (its number and what is wrong), reading it, or what
/// the visitor returned.
#[derive(Debug)]
pub enum ScanError<E> {
    Line(String),
    Io(std::io::Error),
    Visit(E),
}

impl<E: std::fmt::Display> std::fmt::Display for ScanError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScanError::Line(e) => f.write_str(e),
            ScanError::Io(e) => write!(f, "cannot read it: {e}"),
            ScanError::Visit(e) => e.fmt(f),
        }
    }
}

/// Read an import file line by line, each line parsed and checked as [`parse_import`] does, and give
/// its event to `visit`, one at a time: memory holds one line, whatever the file's size. Returns how
/// many events there were.
pub fn scan_import<E>(mut reader: impl std::io::BufRead, mut visit: impl FnMut(Event) -> Result<(), E>) -> Result<u64, ScanError<E>> {
    use std::io::{BufRead, Read};
    let mut line = Vec::new();
    let mut number = 0u64;
    let mut events = 0u64;
    loop {
        line.clear();
        let read = reader.by_ref().take(MAX_IMPORT_LINE as u64 + 1).read_until(b'\n', &mut line).map_err(ScanError::Io)?;
        if read == 0 {
            return Ok(events);
        }
        number += 1;
        if line.last() == Some(&b'\n') {
            line.pop();
            // As `str::lines`: a CRLF file reads the same.
            if line.last() == Some(&b'\r') {
                line.pop();
            }
        } else if line.len() > MAX_IMPORT_LINE {
            return Err(ScanError::Line(format!("line {number}: longer than {} MiB", MAX_IMPORT_LINE >> 20)));
        }
        let text = std::str::from_utf8(&line).map_err(|_| ScanError::Line(format!("line {number}: not UTF-8")))?;
        if text.trim().is_empty() {
            continue;
        }
        if let Some(event) = parse_event(text).map_err(|e| ScanError::Line(format!("line {number}: {e}")))? {
            events += 1;
            visit(event).map_err(ScanError::Visit)?;
        }
    }
}

fn parse_event(line: &str) -> Result<Option<Event>, String> {
    let value: serde_json::Value = serde_json::from_str(line).map_err(|e| format!("invalid JSON record: {e}"))?;
    let object = value.as_object().ok_or("invalid JSON record: not an object")?;
    let event = match records::v1_event(object) {
        Ok(Some(records::V1Event::MessageSent { id, team, from, to, body, at })) => {
            Event::MessageSent(Message { id, team, from, to, body, at })
        }
        Ok(Some(records::V1Event::MessageRead { id, msg_id, team, agent, at })) => {
            Event::MessageRead(ReadMark { id, msg_id, team, agent, at })
        }
        Ok(None) => return Ok(None),
        Err(records::V1Error::NoType) => return Err("invalid JSON record: no string \"type\"".into()),
        Err(records::V1Error::NotAString { kind, field }) => return Err(format!("{kind} record: \"{field}\" must be a string")),
    };
    check_event(&event)?;
    Ok(Some(event))
}

/// An event's record type, its ids, its names and its timestamp, each id and name with its key.
type EventFields<'a> = (&'a str, Vec<(&'a str, &'a str)>, Vec<(&'static str, &'a str)>, &'a str);

/// The rules an event of the v1 log must meet, for `import` (a parsed line) and for `export` (what a
/// driver returns): ids and timestamps are transport tokens, team and agent names pass the name rule.
/// The error names the record type and the first bad field.
pub fn check_event(event: &Event) -> Result<(), String> {
    let (kind, ids, names, at): EventFields<'_> = match event {
        Event::MessageSent(m) => {
            let names = vec![("team", m.team.as_str()), ("from", m.from.as_str()), ("to", m.to.as_str())];
            ("message_sent", vec![("id", m.id.as_str())], names, m.at.as_str())
        }
        Event::MessageRead(r) => {
            let names = vec![("team", r.team.as_str()), ("agent", r.agent.as_str())];
            ("message_read", vec![("id", r.id.as_str()), ("msg_id", r.msg_id.as_str())], names, r.at.as_str())
        }
    };
    for (name, id) in ids {
        if !is_transport_token(id) {
            return Err(format!("{kind} record: malformed \"{name}\" {id:?}"));
        }
    }
    for (name, value) in names {
        check_name(name, value).map_err(|e| format!("{kind} record: {e}"))?;
    }
    if !is_transport_token(at) {
        return Err(format!("{kind} record: malformed \"at\" {at:?}"));
    }
    Ok(())
}
