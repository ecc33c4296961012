//! Reading `events.jsonl` lines as agmsg's logical events, and positional file I/O.

use std::borrow::Cow;
use std::fs::File;

use agmsg_contract::records;
use agmsg_guest_sdk::storage::{DriverError, Event, Message, ReadMark};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::LOG_FILE;

/// The v1 events line `number` of the log stands for, in order: one for a `message_sent` or
/// `message_read` line; the nested `messages[].local_event`s of a `sync_pull_commit` (how agmsg's sync
/// records imported messages); none for a blank line or an event type this version does not know
/// (forward compatibility). A line that is not a JSON object with a string `type`, or a v1 event with a
/// missing field, is corrupt.
pub fn parse_line(line: &[u8], number: u64) -> Result<Vec<Event>, DriverError> {
    if let Some(fast) = parse_fast(line) {
        return Ok(fast.map(LineEvent::into_event).into_iter().collect());
    }
    parse_line_slow(line, number)
}

/// The fields of a line the index needs, borrowed from the line where JSON escapes allow.
pub enum LineEvent<'a> {
    Sent { id: Cow<'a, str>, team: Cow<'a, str>, from: Cow<'a, str>, to: Cow<'a, str>, body: Cow<'a, str>, at: Cow<'a, str> },
    Read { id: Cow<'a, str>, msg_id: Cow<'a, str>, team: Cow<'a, str>, agent: Cow<'a, str>, at: Cow<'a, str> },
}

impl LineEvent<'_> {
    pub fn into_event(self) -> Event {
        match self {
            LineEvent::Sent { id, team, from, to, body, at } => Event::MessageSent(Message {
                id: id.into_owned(),
                team: team.into_owned(),
                from: from.into_owned(),
                to: to.into_owned(),
                body: body.into_owned(),
                at: at.into_owned(),
            }),
            LineEvent::Read { id, msg_id, team, agent, at } => Event::MessageRead(ReadMark {
                id: id.into_owned(),
                msg_id: msg_id.into_owned(),
                team: team.into_owned(),
                agent: agent.into_owned(),
                at: at.into_owned(),
            }),
        }
    }

    fn from_event(event: Event) -> LineEvent<'static> {
        match event {
            Event::MessageSent(m) => LineEvent::Sent {
                id: m.id.into(),
                team: m.team.into(),
                from: m.from.into(),
                to: m.to.into(),
                body: m.body.into(),
                at: m.at.into(),
            },
            Event::MessageRead(r) => {
                LineEvent::Read { id: r.id.into(), msg_id: r.msg_id.into(), team: r.team.into(), agent: r.agent.into(), at: r.at.into() }
            }
        }
    }
}

/// Visit the v1 events of a line as [`parse_line`] finds them, without copying the strings of the common
/// lines (a whole log is parsed this way when the index is built).
pub fn visit_line(line: &[u8], number: u64, mut visit: impl FnMut(LineEvent<'_>) -> Result<(), DriverError>) -> Result<(), DriverError> {
    match parse_fast(line) {
        Some(Some(event)) => visit(event),
        Some(None) => Ok(()),
        None => {
            for event in parse_line_slow(line, number)? {
                visit(LineEvent::from_event(event))?;
            }
            Ok(())
        }
    }
}

/// A `message_sent` or `message_read` line as agmsg writes it: every field a string, no duplicate keys.
/// Anything else (another type, a missing or non-string field, a sync record, bad JSON) is `None` and
/// goes the slow way, which also words the error.
#[derive(Deserialize)]
struct Fast<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    id: Option<Str<'a>>,
    #[serde(borrow)]
    team: Option<Str<'a>>,
    #[serde(borrow)]
    from: Option<Str<'a>>,
    #[serde(borrow)]
    to: Option<Str<'a>>,
    #[serde(borrow)]
    body: Option<Str<'a>>,
    #[serde(borrow)]
    at: Option<Str<'a>>,
    #[serde(borrow)]
    msg_id: Option<Str<'a>>,
    #[serde(borrow)]
    agent: Option<Str<'a>>,
}

/// A JSON string, borrowed from the line unless it has escapes (serde's own `Cow` always copies).
struct Str<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}

/// `Some(Some(event))` for a well-formed v1 line, `Some(None)` for a blank line, `None` when the slow
/// path must decide.
fn parse_fast(line: &[u8]) -> Option<Option<LineEvent<'_>>> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Some(None);
    }
    // Only an object is a record: serde reads a struct from a JSON array too (`["message_sent",...]`),
    // which agmsg and the slow path refuse as corrupt (found by fuzzing: fuzz/corpus/jsonl_line).
    if line.trim_ascii_start().first() != Some(&b'{') {
        return None;
    }
    // Nor is a line that is not UTF-8: serde skips a field the struct does not name without checking its
    // text, so `"x":"\xff"` passed here where the slow path refuses the line (found by fuzzing).
    if std::str::from_utf8(line).is_err() {
        return None;
    }
    let fast: Fast<'_> = serde_json::from_slice(line).ok()?;
    match fast.kind.0.as_ref() {
        "message_sent" => Some(Some(LineEvent::Sent {
            id: fast.id?.0,
            team: fast.team?.0,
            from: fast.from?.0,
            to: fast.to?.0,
            body: fast.body?.0,
            at: fast.at?.0,
        })),
        "message_read" => {
            Some(Some(LineEvent::Read { id: fast.id?.0, msg_id: fast.msg_id?.0, team: fast.team?.0, agent: fast.agent?.0, at: fast.at?.0 }))
        }
        _ => None,
    }
}

fn parse_line_slow(line: &[u8], number: u64) -> Result<Vec<Event>, DriverError> {
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
            // As agmsg's projection: an imported message's non-null local_event (every other outcome
            // carries `"local_event":null`).
            let imported = nested.iter().filter(|m| m.get("status").and_then(Value::as_str) == Some("imported"));
            for local in imported.filter_map(|m| m.get("local_event")).filter(|l| !l.is_null()) {
                let local = local.as_object().ok_or_else(|| corrupt("a local_event is not a JSON object".into()))?;
                events.extend(v1_event(local).map_err(|what| corrupt(format!("local_event: {what}")))?);
            }
            Ok(events)
        }
        Some(_) => Ok(v1_event(object).map_err(corrupt)?.into_iter().collect()),
        None => Err(corrupt("no string \"type\"".into())),
    }
}

/// The v1 event an object holds (the contract's one reading, [`records::v1_event`]), `None` for
/// another type; `Err` names what is malformed.
fn v1_event(object: &Map<String, Value>) -> Result<Option<Event>, String> {
    match records::v1_event(object) {
        Ok(Some(records::V1Event::MessageSent { id, team, from, to, body, at })) => {
            Ok(Some(Event::MessageSent(Message { id, team, from, to, body, at })))
        }
        Ok(Some(records::V1Event::MessageRead { id, msg_id, team, agent, at })) => {
            Ok(Some(Event::MessageRead(ReadMark { id, msg_id, team, agent, at })))
        }
        Ok(None) => Ok(None),
        Err(records::V1Error::NoType) => Err("no string \"type\"".into()),
        Err(records::V1Error::NotAString { field, .. }) => Err(format!("\"{field}\" must be a string")),
    }
}

pub fn io_error(e: std::io::Error) -> DriverError {
    DriverError::runtime(format!("jsonl: {e}"))
}

// Positional reads and writes: one WASI descriptor call each (`seek` + `read` on a WASI file goes
// through a stream per call), and no shared file position to get wrong.
#[cfg(target_os = "wasi")]
mod sys {
    use std::fs::File;
    use std::os::fd::AsRawFd;

    unsafe extern "C" {
        fn pread(fd: i32, buf: *mut u8, count: usize, offset: i64) -> isize;
        fn pwrite(fd: i32, buf: *const u8, count: usize, offset: i64) -> isize;
    }

    pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        // SAFETY: `buf` is valid for `buf.len()` bytes of writes; the fd is open for `file`'s lifetime.
        let n = unsafe { pread(file.as_raw_fd(), buf.as_mut_ptr(), buf.len(), offset as i64) };
        if n < 0 { Err(std::io::Error::last_os_error()) } else { Ok(n as usize) }
    }

    pub fn write_at(file: &File, buf: &[u8], offset: u64) -> std::io::Result<usize> {
        // SAFETY: `buf` is valid for `buf.len()` bytes of reads; the fd is open for `file`'s lifetime.
        let n = unsafe { pwrite(file.as_raw_fd(), buf.as_ptr(), buf.len(), offset as i64) };
        if n < 0 { Err(std::io::Error::last_os_error()) } else { Ok(n as usize) }
    }
}

#[cfg(not(target_os = "wasi"))]
mod sys {
    use std::fs::File;
    use std::os::unix::fs::FileExt;

    pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        file.read_at(buf, offset)
    }

    pub fn write_at(file: &File, buf: &[u8], offset: u64) -> std::io::Result<usize> {
        file.write_at(buf, offset)
    }
}

/// Fill `buf` from `offset`; fewer bytes only at the end of the file. Returns how many were read.
pub fn read_full_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match sys::read_at(file, &mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Read exactly `buf.len()` bytes at `offset`.
pub fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    if read_full_at(file, buf, offset)? < buf.len() {
        return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the file ends early"));
    }
    Ok(())
}

pub fn write_all_at(file: &File, mut buf: &[u8], mut offset: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        match sys::write_at(file, buf, offset) {
            Ok(0) => return Err(std::io::Error::new(std::io::ErrorKind::WriteZero, "wrote nothing")),
            Ok(n) => {
                buf = &buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The line that starts at `offset` (without its `\n`), read in growing pieces.
pub fn line_at(file: &File, offset: u64) -> std::io::Result<Vec<u8>> {
    let mut line = Vec::new();
    let mut piece = vec![0u8; 4096];
    loop {
        let n = read_full_at(file, &mut piece, offset + line.len() as u64)?;
        if let Some(end) = piece[..n].iter().position(|&b| b == b'\n') {
            line.extend_from_slice(&piece[..end]);
            return Ok(line);
        }
        line.extend_from_slice(&piece[..n]);
        if n < piece.len() {
            return Ok(line);
        }
        if piece.len() < 1 << 20 {
            piece.resize(piece.len() * 2, 0);
        }
    }
}

/// A file's lines, read forward through a bounded buffer (it grows only for a line longer than it).
pub struct LineReader {
    file: File,
    /// The file offset of `buf[0]`.
    base: u64,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
}

impl LineReader {
    const BUFFER: usize = 1 << 20;

    pub fn new(file: File, offset: u64) -> LineReader {
        LineReader { file, base: offset, buf: vec![0; Self::BUFFER], start: 0, end: 0, eof: false }
    }

    /// The next line (without its `\n`) and its offset; a last line without a newline counts too.
    pub fn next_line(&mut self) -> std::io::Result<Option<(u64, &[u8])>> {
        loop {
            if let Some(n) = self.buf[self.start..self.end].iter().position(|&b| b == b'\n') {
                let (from, offset) = (self.start, self.base + self.start as u64);
                self.start += n + 1;
                return Ok(Some((offset, &self.buf[from..from + n])));
            }
            if self.eof {
                if self.start == self.end {
                    return Ok(None);
                }
                let (from, offset) = (self.start, self.base + self.start as u64);
                self.start = self.end;
                return Ok(Some((offset, &self.buf[from..self.end])));
            }
            // Keep the partial line at the front; grow only if it fills the buffer.
            self.buf.copy_within(self.start..self.end, 0);
            self.base += self.start as u64;
            self.end -= self.start;
            self.start = 0;
            if self.end == self.buf.len() {
                self.buf.resize(self.buf.len() * 2, 0);
            }
            let end = self.end;
            let read = read_full_at(&self.file, &mut self.buf[end..], self.base + end as u64)?;
            self.end += read;
            self.eof = read == 0;
        }
    }
}
