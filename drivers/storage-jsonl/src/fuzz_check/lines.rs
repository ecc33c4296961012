//! The jsonl driver's `events.jsonl` lines (agmsg's log: any process with the store's directory writes
//! it): `parse_line` never panics, and its fast path (a borrowing serde struct, for the lines agmsg
//! writes) gives exactly what the reference reading does: a line is a JSON object with a string
//! `type`; a `message_sent` / `message_read` one holds its fields as strings (others are ignored); a
//! `sync_pull_commit` holds the imported messages' `local_event`s; blank lines and other types hold
//! none. `visit_line` (the index's borrowing walk) gives the same events.

use agmsg_guest_sdk::storage::{Event, Message, ReadMark};
use serde_json::{Map, Value};

use crate::events::{parse_line, visit_line};

/// The reference reading of one line: `Ok(events)`, or `Err(())` for a corrupt line.
fn reference(line: &[u8]) -> Result<Vec<Event>, ()> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(Vec::new());
    }
    let value: Value = serde_json::from_slice(line).map_err(|_| ())?;
    let object = value.as_object().ok_or(())?;
    fn event(o: &Map<String, Value>) -> Result<Option<Event>, ()> {
        let f = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_owned).ok_or(());
        Ok(match o.get("type").and_then(Value::as_str).ok_or(())? {
            "message_sent" => Some(Event::MessageSent(Message {
                id: f("id")?,
                team: f("team")?,
                from: f("from")?,
                to: f("to")?,
                body: f("body")?,
                at: f("at")?,
            })),
            "message_read" => Some(Event::MessageRead(ReadMark {
                id: f("id")?,
                msg_id: f("msg_id")?,
                team: f("team")?,
                agent: f("agent")?,
                at: f("at")?,
            })),
            _ => None,
        })
    }
    match object.get("type").and_then(Value::as_str).ok_or(())? {
        "sync_pull_commit" => {
            let mut events = Vec::new();
            for m in object.get("messages").and_then(Value::as_array).map_or(&[][..], Vec::as_slice) {
                if m.get("status").and_then(Value::as_str) != Some("imported") {
                    continue;
                }
                match m.get("local_event") {
                    None | Some(Value::Null) => {}
                    Some(Value::Object(local)) => events.extend(event(local)?),
                    Some(_) => return Err(()),
                }
            }
            Ok(events)
        }
        _ => Ok(event(object)?.into_iter().collect()),
    }
}

fn same(a: &Event, b: &Event) -> bool {
    match (a, b) {
        (Event::MessageSent(a), Event::MessageSent(b)) => {
            (&a.id, &a.team, &a.from, &a.to, &a.body, &a.at) == (&b.id, &b.team, &b.from, &b.to, &b.body, &b.at)
        }
        (Event::MessageRead(a), Event::MessageRead(b)) => {
            (&a.id, &a.msg_id, &a.team, &a.agent, &a.at) == (&b.id, &b.msg_id, &b.team, &b.agent, &b.at)
        }
        _ => false,
    }
}

fn describe(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e {
            Event::MessageSent(m) => format!("sent {:?} {:?} {:?} {:?} {:?} {:?}", m.id, m.team, m.from, m.to, m.body, m.at),
            Event::MessageRead(r) => format!("read {:?} {:?} {:?} {:?} {:?}", r.id, r.msg_id, r.team, r.agent, r.at),
        })
        .collect()
}

/// Each line of `data` (split at `\n`, as the driver's line reader does).
pub fn jsonl_line(data: &[u8]) {
    for line in data.split(|b| *b == b'\n') {
        let parsed = parse_line(line, 1);
        let want = reference(line);
        match (&parsed, &want) {
            (Ok(got), Ok(want)) => assert!(
                got.len() == want.len() && got.iter().zip(want).all(|(a, b)| same(a, b)),
                "line {:?}: parse_line {:?}, the reference {:?}",
                String::from_utf8_lossy(line),
                describe(got),
                describe(want)
            ),
            (Err(_), Err(())) => {}
            (got, want) => panic!(
                "line {:?}: parse_line {}, the reference {}",
                String::from_utf8_lossy(line),
                if got.is_ok() { "accepts it" } else { "refuses it" },
                if want.is_ok() { "accepts it" } else { "refuses it" }
            ),
        }
        let mut visited = Vec::new();
        let walked = visit_line(line, 1, |e| {
            visited.push(e.into_event());
            Ok(())
        });
        assert_eq!(walked.is_ok(), parsed.is_ok());
        if let Ok(got) = &parsed {
            assert!(visited.len() == got.len() && visited.iter().zip(got).all(|(a, b)| same(a, b)));
        }
    }
}
