//! The optional `rename` interface (agmsg:storage 1.2.0): an agent or a team renamed inside the log and
//! the read cursors, as agmsg's jsonl driver does it, so that agmsg's rename.sh and rename-team.sh
//! (which rename the roster) leave every message readable under the new name.
//!
//! Under the store lock, the log is streamed into a temp file with the names rewritten (lines that do
//! not change are copied byte for byte). Then, in this order: the cursor file is replaced by one
//! holding both the old and the new pair's lines, the log is renamed over, and the cursor file is
//! replaced by one without the old pair's lines. A crash between the steps leaves at worst a redundant
//! cursor line, never a message whose pair has no frontier. The index is removed before the log is
//! replaced and rebuilt before the op returns: a rename of equal length (bob -> rob) keeps the log's
//! size and, when the last line is another team's, its tail too, so the index could not tell.

use std::io::{BufRead, BufReader, Write};

use agmsg_contract::records;
use agmsg_guest_sdk::ids::new_id;
use agmsg_guest_sdk::storage::{DriverError, RenameDriver};
use serde_json::Value;

use crate::index::Index;
use crate::{CURSORS_FILE, Jsonl, LOG_FILE, ensure_store, rewrite, store_path};

fn io_error(e: std::io::Error) -> DriverError {
    DriverError::runtime(format!("jsonl: {e}"))
}

/// One rename: which records change, and how.
enum Rename<'a> {
    Agent { team: &'a str, old: &'a str, new: &'a str },
    Team { old: &'a str, new: &'a str },
}

fn set_if(value: &mut Value, key: &str, old: &str, new: &str) -> bool {
    match value.get_mut(key) {
        Some(field) if field.as_str() == Some(old) => {
            *field = Value::String(new.to_owned());
            true
        }
        _ => false,
    }
}

impl Rename<'_> {
    /// Rename inside one message event (a top-level record or a sync commit's `local_event`).
    fn event(&self, event: &mut Value) -> bool {
        match *self {
            Rename::Agent { team, old, new } => {
                if event.get("team").and_then(Value::as_str) != Some(team) {
                    return false;
                }
                match event.get("type").and_then(Value::as_str) {
                    Some("message_read") => set_if(event, "agent", old, new),
                    // A sync commit's local event may carry no type: it is a sent message.
                    Some("message_sent") | None => set_if(event, "from", old, new) | set_if(event, "to", old, new),
                    Some(_) => false,
                }
            }
            Rename::Team { old, new } => set_if(event, "team", old, new),
        }
    }

    /// Rename inside one log record; whether it changed.
    fn record(&self, record: &mut Value) -> bool {
        let mut changed = false;
        if let Rename::Team { old, new } = *self
            && let Some(binding) = record.get_mut("binding")
        {
            changed |= set_if(binding, "local_team", old, new);
        }
        if record.get("type").and_then(Value::as_str) == Some("sync_pull_commit") {
            if let Some(Value::Array(messages)) = record.get_mut("messages") {
                for message in messages {
                    if let Some(event) = message.get_mut("local_event").filter(|e| e.is_object()) {
                        changed |= self.event(event);
                    }
                }
            }
            return changed;
        }
        match record.get("type").and_then(Value::as_str) {
            Some("message_sent" | "message_read") => changed | self.event(record),
            // Any other record that names the team (agmsg's rename-team renames them all).
            _ => changed | (matches!(self, Rename::Team { .. }) && self.event(record)),
        }
    }

    /// The cursor pair `(team, agent)` renamed, if this rename touches it.
    fn pair(&self, team: &str, agent: &str) -> Option<(String, String)> {
        match *self {
            Rename::Agent { team: t, old, new } => (team == t && agent == old).then(|| (team.to_owned(), new.to_owned())),
            Rename::Team { old, new } => (team == old).then(|| (new.to_owned(), agent.to_owned())),
        }
    }
}

/// A changed record as a line: the v1 events in the contract's field order, anything else as JSON.
fn line_of(record: &Value) -> String {
    let s = |key: &str| record.get(key).and_then(Value::as_str);
    let fields = record.as_object().map_or(0, |o| o.len());
    match (s("type"), fields) {
        (Some("message_sent"), 7) => {
            if let (Some(id), Some(team), Some(from), Some(to), Some(body), Some(at)) =
                (s("id"), s("team"), s("from"), s("to"), s("body"), s("at"))
            {
                return records::message_sent(id, team, from, to, body, at);
            }
        }
        (Some("message_read"), 6) => {
            if let (Some(id), Some(msg_id), Some(team), Some(agent), Some(at)) = (s("id"), s("msg_id"), s("team"), s("agent"), s("at")) {
                return records::message_read(id, msg_id, team, agent, at);
            }
        }
        _ => {}
    }
    record.to_string()
}

/// Stream the log into `tmp` with `rename` applied; the number of records changed. When something
/// changed and the log holds sync state, `tmp` ends with a fresh sync generation (offsets may move), as
/// agmsg's rename does before it moves its replacement into place.
fn rewrite_log(rename: &Rename<'_>, tmp: &str) -> Result<u64, DriverError> {
    let input = match std::fs::File::open(store_path(LOG_FILE)) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(io_error(e)),
    };
    let mut reader = BufReader::with_capacity(1 << 16, input);
    let out = std::fs::OpenOptions::new().write(true).create_new(true).open(tmp).map_err(io_error)?;
    let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
    let (mut line, mut number, mut changed, mut sync_state) = (Vec::new(), 0u64, 0u64, false);
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(io_error)? == 0 {
            break;
        }
        number += 1;
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let mut record: Value = match serde_json::from_slice(text) {
            Ok(record) => record,
            Err(_) if text.iter().all(u8::is_ascii_whitespace) => {
                out.write_all(&line).map_err(io_error)?;
                continue;
            }
            Err(e) => return Err(DriverError::corrupt(format!("{LOG_FILE} line {number}: invalid JSON: {e}"))),
        };
        sync_state = sync_state || crate::generation::is_sync_record(text, &record);
        if rename.record(&mut record) {
            changed += 1;
            out.write_all(line_of(&record).as_bytes()).map_err(io_error)?;
            out.write_all(b"\n").map_err(io_error)?;
        } else {
            out.write_all(&line).map_err(io_error)?;
        }
    }
    if changed > 0 && sync_state {
        out.write_all(crate::generation::line().as_bytes()).map_err(io_error)?;
        out.write_all(b"\n").map_err(io_error)?;
    }
    let out = out.into_inner().map_err(|e| io_error(e.into_error()))?;
    out.sync_all().map_err(io_error)?;
    Ok(changed)
}

/// The cursor file's text with, after every line of a renamed pair, the same line under the new name
/// (`keep_old`), or with the old pair's lines dropped (`!keep_old`).
fn cursors_text(rename: &Rename<'_>, text: &str, keep_old: bool) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for line in text.lines() {
        let mut fields = line.splitn(3, '\t');
        let renamed = match (fields.next(), fields.next(), fields.next()) {
            (Some(team), Some(agent), Some(position)) => rename.pair(team, agent).map(|(t, a)| format!("{t}\t{a}\t{position}")),
            _ => None,
        };
        match renamed {
            Some(renamed) => {
                if keep_old {
                    out.push_str(line);
                    out.push('\n');
                }
                out.push_str(&renamed);
                out.push('\n');
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// Lock the store and apply `rename` to it.
fn rename_store(rename: &Rename<'_>) -> Result<(), DriverError> {
    let _lock = crate::lock_log()?;
    ensure_store()?;
    let tmp = store_path(&format!("{LOG_FILE}.rename.{}", new_id()));
    let result = (|| {
        let changed = rewrite_log(rename, &tmp)?;
        let cursors = match std::fs::read_to_string(store_path(CURSORS_FILE)) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(io_error(e)),
        };
        let dual = cursors_text(rename, &cursors, true);
        if dual != cursors {
            rewrite(CURSORS_FILE, dual.as_bytes())?;
        }
        if changed > 0 {
            // The index goes first: a crash after this leaves an index to rebuild, never a stale one.
            match std::fs::remove_dir_all(store_path(crate::index::DIR)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io_error(e)),
                _ => {}
            }
            std::fs::rename(&tmp, store_path(LOG_FILE)).map_err(io_error)?;
            crate::sync_store_dir();
        }
        if dual != cursors {
            rewrite(CURSORS_FILE, cursors_text(rename, &cursors, false).as_bytes())?;
        }
        Ok(changed > 0)
    })();
    let _ = std::fs::remove_file(&tmp);
    if result? {
        // Rebuild the index now rather than in the next op.
        Index::open()?;
    }
    Ok(())
}

impl RenameDriver for Jsonl {
    fn rename_agent(&self, team: &str, old: &str, new: &str) -> Result<(), DriverError> {
        if old == new {
            return Ok(());
        }
        rename_store(&Rename::Agent { team, old, new })
    }

    fn rename_team(&self, old: &str, new: &str) -> Result<(), DriverError> {
        if old == new {
            return Ok(());
        }
        rename_store(&Rename::Team { old, new })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renames_records_and_cursor_lines() {
        let agent = Rename::Agent { team: "dev", old: "bob", new: "rob" };
        let mut sent: Value = serde_json::from_str(&records::message_sent("1", "dev", "al", "bob", "hi", "t")).unwrap();
        assert!(agent.record(&mut sent));
        assert_eq!(line_of(&sent), records::message_sent("1", "dev", "al", "rob", "hi", "t"));
        let mut other_team: Value = serde_json::from_str(&records::message_sent("2", "ops", "al", "bob", "hi", "t")).unwrap();
        assert!(!agent.record(&mut other_team));
        let mut read: Value = serde_json::from_str(&records::message_read("3", "1", "dev", "bob", "t")).unwrap();
        assert!(agent.record(&mut read));
        assert_eq!(cursors_text(&agent, "dev\tbob\t4\nops\tbob\t1\n", true), "dev\tbob\t4\ndev\trob\t4\nops\tbob\t1\n");
        assert_eq!(cursors_text(&agent, "dev\tbob\t4\nops\tbob\t1\n", false), "dev\trob\t4\nops\tbob\t1\n");
        let team = Rename::Team { old: "dev", new: "core" };
        let mut commit: Value = serde_json::json!({"type": "sync_pull_commit", "binding": {"local_team": "dev"},
            "messages": [{"local_event": {"team": "dev", "from": "a", "to": "b"}}]});
        assert!(team.record(&mut commit));
        assert_eq!(commit["binding"]["local_team"], "core");
        assert_eq!(commit["messages"][0]["local_event"]["team"], "core");
    }
}
