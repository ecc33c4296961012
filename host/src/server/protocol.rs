//! The frames on a server's socket. A client sends one request: `AGMH`, a version byte, a kind byte,
//! the length of the rest, then (for a run) the caller's parent pid, umask, argv and environment, each
//! string length-prefixed; with its first byte go the caller's descriptors (stdin, stdout, stderr and
//! its working directory, `SCM_RIGHTS`). Then, while the op runs, a byte per signal the client got, to
//! be delivered to the op. The server's side answers `A` (accepted: the op runs; if the connection
//! closes before this, nothing ran) or `D` + a reason (declined: run in-process); the child says `x` +
//! the op's exit code once the op has returned and let go of the caller's descriptors, which ends the
//! client's wait; the server says `X` + the code or `K` + the signal once the child has exited (what a
//! client hears of an op that never returned: a signal). A status request is answered `T` + its text.

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

pub const MAGIC: &[u8; 4] = b"AGMH";
pub const VERSION: u8 = 1;
/// The most a request may hold: argv and environment together (Linux's own limit is about 2 MiB).
pub const REQUEST_MAX: usize = 8 << 20;
/// The descriptors a run request carries, in this order.
pub const FDS: usize = 4;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Run,
    Status,
    Stop,
}

impl Kind {
    fn byte(self) -> u8 {
        match self {
            Kind::Run => b'R',
            Kind::Status => b'T',
            Kind::Stop => b'Q',
        }
    }

    fn from_byte(b: u8) -> Option<Kind> {
        [Kind::Run, Kind::Status, Kind::Stop].into_iter().find(|k| k.byte() == b)
    }
}

/// What the client asks.
#[derive(Debug, PartialEq, Eq)]
pub struct Request {
    pub kind: Kind,
    pub caller_parent: u32,
    pub umask: u32,
    pub args: Vec<OsString>,
    /// `NAME=value` entries, as `environ` holds them.
    pub env: Vec<OsString>,
}

/// The fixed part before the body: magic, version, kind, the body's length.
pub const HEADER: usize = 4 + 1 + 1 + 4;

impl Request {
    pub fn encode(&self) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&self.caller_parent.to_le_bytes());
        body.extend_from_slice(&self.umask.to_le_bytes());
        for list in [&self.args, &self.env] {
            body.extend_from_slice(&(list.len() as u32).to_le_bytes());
            for s in list {
                body.extend_from_slice(&(s.len() as u32).to_le_bytes());
                body.extend_from_slice(s.as_bytes());
            }
        }
        let mut out = Vec::with_capacity(HEADER + body.len());
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        out.push(self.kind.byte());
        out.extend_from_slice(&(body.len() as u32).to_le_bytes());
        out.extend_from_slice(&body);
        out
    }

    /// The kind and the body's length from a request's header.
    pub fn header(header: &[u8; HEADER]) -> Result<(Kind, usize), String> {
        if &header[..4] != MAGIC || header[4] != VERSION {
            return Err("not a request of this build".into());
        }
        let kind = Kind::from_byte(header[5]).ok_or("an unknown request kind")?;
        let len = u32::from_le_bytes(header[6..10].try_into().unwrap()) as usize;
        if len > REQUEST_MAX {
            return Err(format!("a request of {len} bytes (at most {REQUEST_MAX})"));
        }
        Ok((kind, len))
    }

    /// A whole request as [`Request::encode`] made it: header and body.
    pub fn parse(bytes: &[u8]) -> Result<Request, String> {
        let (header, body) = bytes.split_first_chunk::<HEADER>().ok_or("a request cut short")?;
        let (kind, len) = Request::header(header)?;
        if body.len() != len {
            return Err("a request of another length than its header says".into());
        }
        Request::decode(kind, body)
    }

    pub fn decode(kind: Kind, body: &[u8]) -> Result<Request, String> {
        let mut at = body;
        let mut u32_ = || -> Result<u32, String> {
            let (n, rest) = at.split_first_chunk::<4>().ok_or("a request cut short")?;
            at = rest;
            Ok(u32::from_le_bytes(*n))
        };
        let caller_parent = u32_()?;
        let umask = u32_()?;
        let _ = u32_;
        let mut lists = [Vec::new(), Vec::new()];
        for list in &mut lists {
            let (n, rest) = at.split_first_chunk::<4>().ok_or("a request cut short")?;
            at = rest;
            for _ in 0..u32::from_le_bytes(*n) {
                let (len, rest) = at.split_first_chunk::<4>().ok_or("a request cut short")?;
                let len = u32::from_le_bytes(*len) as usize;
                if rest.len() < len {
                    return Err("a request cut short".into());
                }
                list.push(OsString::from_vec(rest[..len].to_vec()));
                at = &rest[len..];
            }
        }
        if !at.is_empty() {
            return Err("a request with bytes after its end".into());
        }
        let [args, env] = lists;
        Ok(Request { kind, caller_parent, umask, args, env })
    }
}

/// What the server's side says back.
#[derive(Debug, PartialEq, Eq)]
pub enum Reply {
    Accepted,
    Declined(String),
    /// The op returned this code (the child, before it exits).
    OpEnded(u8),
    /// The child exited with this code (the server).
    Exited(u8),
    Signalled(i32),
    Status(String),
}

impl Reply {
    pub fn write_to(&self, w: &mut impl Write) -> io::Result<()> {
        let mut out = Vec::new();
        match self {
            Reply::Accepted => out.push(b'A'),
            Reply::OpEnded(code) => out.extend_from_slice(&[b'x', *code]),
            Reply::Exited(code) => out.extend_from_slice(&[b'X', *code]),
            Reply::Signalled(sig) => {
                out.push(b'K');
                out.extend_from_slice(&sig.to_le_bytes());
            }
            Reply::Declined(text) | Reply::Status(text) => {
                out.push(if matches!(self, Reply::Declined(_)) { b'D' } else { b'T' });
                out.extend_from_slice(&(text.len() as u32).to_le_bytes());
                out.extend_from_slice(text.as_bytes());
            }
        }
        w.write_all(&out)
    }

    /// The next reply, `None` at the end of the stream before one starts.
    pub fn read_from(r: &mut impl Read) -> io::Result<Option<Reply>> {
        let mut tag = [0u8];
        if r.read(&mut tag)? == 0 {
            return Ok(None);
        }
        let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, format!("the server sent {what}"));
        Ok(Some(match tag[0] {
            b'A' => Reply::Accepted,
            tag @ (b'X' | b'x') => {
                let mut code = [0u8];
                r.read_exact(&mut code)?;
                if tag == b'X' { Reply::Exited(code[0]) } else { Reply::OpEnded(code[0]) }
            }
            b'K' => {
                let mut sig = [0u8; 4];
                r.read_exact(&mut sig)?;
                Reply::Signalled(i32::from_le_bytes(sig))
            }
            tag @ (b'D' | b'T') => {
                let mut len = [0u8; 4];
                r.read_exact(&mut len)?;
                let len = u32::from_le_bytes(len) as usize;
                if len > 1 << 20 {
                    return Err(bad("an oversized text"));
                }
                let mut text = vec![0u8; len];
                r.read_exact(&mut text)?;
                let text = String::from_utf8(text).map_err(|_| bad("a text that is not UTF-8"))?;
                if tag == b'D' { Reply::Declined(text) } else { Reply::Status(text) }
            }
            _ => return Err(bad("an unknown reply")),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_round_trips_and_a_cut_one_is_refused() {
        let req = Request {
            kind: Kind::Run,
            caller_parent: 42,
            umask: 0o077,
            args: vec!["agmsg-host".into(), "send".into(), OsString::from_vec(vec![0xff, b'x'])],
            env: vec!["HOME=/h".into(), "A=".into()],
        };
        let bytes = req.encode();
        let (kind, len) = Request::header(bytes[..HEADER].try_into().unwrap()).unwrap();
        assert_eq!(len, bytes.len() - HEADER);
        assert_eq!(Request::decode(kind, &bytes[HEADER..]).unwrap(), req);
        for cut in 0..bytes.len() - HEADER {
            assert!(Request::decode(kind, &bytes[HEADER..HEADER + cut]).is_err(), "cut at {cut}");
        }
        let mut long = bytes.clone();
        long.push(0);
        assert!(Request::decode(kind, &long[HEADER..]).is_err());
        let mut other = bytes[..HEADER].to_vec();
        other[4] = VERSION + 1;
        assert!(Request::header(other[..].try_into().unwrap()).is_err());
        // Whole, as a child reports it to the server for the next spare: the same request, and nothing
        // cut short, padded or of another build taken.
        assert_eq!(Request::parse(&bytes).unwrap(), req);
        for cut in 0..bytes.len() {
            assert!(Request::parse(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        assert!(Request::parse(&long).is_err());
        let mut foreign = bytes.clone();
        foreign[4] = VERSION + 1;
        assert!(Request::parse(&foreign).is_err());
        assert!(Request::parse(&[0]).is_err(), "a child's 'nothing to warm' byte");
    }

    #[test]
    fn replies_round_trip() {
        for reply in [
            Reply::Accepted,
            Reply::Declined("why".into()),
            Reply::OpEnded(3),
            Reply::Exited(13),
            Reply::Signalled(2),
            Reply::Status("{}".into()),
        ] {
            let mut bytes = Vec::new();
            reply.write_to(&mut bytes).unwrap();
            assert_eq!(Reply::read_from(&mut &bytes[..]).unwrap(), Some(reply));
        }
        assert_eq!(Reply::read_from(&mut &b""[..]).unwrap(), None);
        assert!(Reply::read_from(&mut &b"?"[..]).is_err());
    }
}
