//! The in-memory index of `events.jsonl`, kept up to date incrementally: an op reads only the bytes
//! appended since the previous op of this instance, so a warm process never re-parses the whole log.
//! A log that shrank or whose already-parsed bytes changed (a compaction or rewrite by someone else) is
//! re-parsed from the start.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use agmsg_guest_sdk::storage::{DriverError, Event, Message, ReadMark};
use serde_json::Value;

use crate::{LOG_FILE, store_path};

/// How many trailing bytes of the parsed prefix are compared to detect a rewrite.
const FINGERPRINT: u64 = 64;

#[derive(Default)]
pub struct Index {
    /// Bytes of the log parsed so far, and lines seen (for error messages).
    parsed_len: u64,
    lines: usize,
    fingerprint: Vec<u8>,
    /// Every message_sent in log order; a message's delivery position is its index + 1.
    pub sent: Vec<Message>,
    pub sent_by_id: HashMap<String, usize>,
    /// Exact reads: (team, agent, msg_id).
    pub reads: HashSet<(String, String, String)>,
    /// Positions (indexes into `sent`) by (team, recipient), by team, and by (team, sender or recipient).
    pub to_recipient: HashMap<(String, String), Vec<usize>>,
    pub in_team: HashMap<String, Vec<usize>>,
    pub with_member: HashMap<(String, String), Vec<usize>>,
}

impl Index {
    /// The delivery tip: how many messages the log holds.
    pub fn tip(&self) -> u64 {
        self.sent.len() as u64
    }

    pub fn is_read(&self, team: &str, agent: &str, msg_id: &str) -> bool {
        self.reads.contains(&(team.to_owned(), agent.to_owned(), msg_id.to_owned()))
    }

    /// Bring the index up to date with the log.
    pub fn refresh(&mut self) -> Result<(), DriverError> {
        let path = store_path(LOG_FILE);
        let mut file = match File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                *self = Index::default();
                return Ok(());
            }
            Err(e) => return Err(io_error(e)),
        };
        let len = file.metadata().map_err(io_error)?.len();
        if len < self.parsed_len || !self.prefix_unchanged(&mut file)? {
            *self = Index::default();
        }
        if len == self.parsed_len {
            return Ok(());
        }
        file.seek(SeekFrom::Start(self.parsed_len)).map_err(io_error)?;
        let mut appended = Vec::with_capacity((len - self.parsed_len) as usize);
        file.read_to_end(&mut appended).map_err(io_error)?;
        // Parse complete lines only; a torn final line (a writer that died mid-append) is left for later.
        let complete = match appended.iter().rposition(|&b| b == b'\n') {
            Some(last_newline) => last_newline + 1,
            None => 0,
        };
        for line in appended[..complete].split_inclusive(|&b| b == b'\n') {
            self.lines += 1;
            if let Err(e) = self.apply_line(&line[..line.len() - 1]) {
                // Half-applied: start over next time (and fail the same way until the line is fixed).
                *self = Index::default();
                return Err(e);
            }
        }
        self.parsed_len += complete as u64;
        let keep = FINGERPRINT.min(self.parsed_len) as usize;
        let tail_start = complete.saturating_sub(keep);
        let mut fingerprint = if complete >= keep { Vec::new() } else { std::mem::take(&mut self.fingerprint) };
        fingerprint.extend_from_slice(&appended[tail_start..complete]);
        let excess = fingerprint.len().saturating_sub(keep);
        fingerprint.drain(..excess);
        self.fingerprint = fingerprint;
        Ok(())
    }

    fn prefix_unchanged(&self, file: &mut File) -> Result<bool, DriverError> {
        if self.parsed_len == 0 {
            return Ok(true);
        }
        let start = self.parsed_len - self.fingerprint.len() as u64;
        file.seek(SeekFrom::Start(start)).map_err(io_error)?;
        let mut bytes = vec![0u8; self.fingerprint.len()];
        file.read_exact(&mut bytes).map_err(io_error)?;
        Ok(bytes == self.fingerprint)
    }

    fn apply_line(&mut self, line: &[u8]) -> Result<(), DriverError> {
        match parse_line(line, self.lines)? {
            Some(Event::MessageSent(message)) => self.add_message(message),
            Some(Event::MessageRead(read)) => {
                self.reads.insert((read.team, read.agent, read.msg_id));
            }
            None => {}
        }
        Ok(())
    }

    fn add_message(&mut self, m: Message) {
        let index = self.sent.len();
        self.sent_by_id.entry(m.id.clone()).or_insert(index);
        self.to_recipient.entry((m.team.clone(), m.to.clone())).or_default().push(index);
        self.in_team.entry(m.team.clone()).or_default().push(index);
        self.with_member.entry((m.team.clone(), m.from.clone())).or_default().push(index);
        if m.to != m.from {
            self.with_member.entry((m.team.clone(), m.to.clone())).or_default().push(index);
        }
        self.sent.push(m);
    }
}

/// Parse line `number` of the log: a v1 event, or `None` for a blank line or an event type this version
/// does not know (forward compatibility). A line that is not a JSON object with a string `type`, or a
/// known event with a missing field, is corrupt.
pub fn parse_line(line: &[u8], number: usize) -> Result<Option<Event>, DriverError> {
    let corrupt = |what: String| DriverError::corrupt(format!("{LOG_FILE} line {number}: {what}"));
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let value: Value = serde_json::from_slice(line).map_err(|e| corrupt(format!("invalid JSON: {e}")))?;
    let object = value.as_object().ok_or_else(|| corrupt("not a JSON object".into()))?;
    let field = |name: &str| -> Result<String, DriverError> {
        object
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| corrupt(format!("\"{name}\" must be a string")))
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
        None => return Err(corrupt("no string \"type\"".into())),
    })
}

pub fn io_error(e: std::io::Error) -> DriverError {
    DriverError::runtime(format!("jsonl: {e}"))
}
