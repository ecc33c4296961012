//! The header check agmsg runs on every age file it seals or opens (`validateAgeHeader`): canonical
//! ASCII lines, bounded sizes, only X25519 stanzas plus GREASE, and the X25519 stanza count.

use base64::Engine;

use crate::SealError;

const MAX_HEADER_BYTES: usize = 65_536;
const MAX_LINE_BYTES: usize = 4096;
const MAX_STANZAS: usize = 512;
const MAX_X25519_STANZAS: usize = 256;

fn bad(message: &str) -> SealError {
    SealError::malformed(message)
}

/// Unpadded base64 with zero trailing bits, the only form a GREASE body may take.
const CANONICAL_UNPADDED: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireNone),
);

struct Lines<'a> {
    file: &'a [u8],
    offset: usize,
}

impl<'a> Lines<'a> {
    fn next(&mut self) -> Result<&'a str, SealError> {
        let rest = &self.file[self.offset..];
        let end = match rest.iter().position(|&b| b == b'\n') {
            Some(end) if end <= MAX_LINE_BYTES => end,
            _ => return Err(bad("age header is incomplete")),
        };
        let line = &rest[..end];
        if !line.iter().all(|&b| (0x20..=0x7e).contains(&b)) {
            return Err(bad("age header is not canonical ASCII"));
        }
        self.offset += end + 1;
        if self.offset > MAX_HEADER_BYTES {
            return Err(bad("age header size limit exceeded"));
        }
        Ok(std::str::from_utf8(line).expect("ASCII"))
    }
}

fn short_field(field: &str) -> bool {
    (1..=8).contains(&field.len()) && field.bytes().all(|b| (b'!'..=b'~').contains(&b))
}

fn base64_chars(line: &str) -> bool {
    line.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

#[derive(Default)]
struct Stanza {
    has_body: bool,
    grease: bool,
    body_bytes: usize,
    body: String,
    short_seen: bool,
}

impl Stanza {
    fn finish(&self) -> Result<(), SealError> {
        if !self.has_body {
            return Err(bad("age recipient stanza header is invalid"));
        }
        if self.grease && CANONICAL_UNPADDED.decode(&self.body).is_err() {
            return Err(bad("age GREASE stanza body is not canonical base64"));
        }
        Ok(())
    }
}

/// The number of X25519 stanzas in a valid age v1 header, or why the header is refused.
pub fn x25519_stanzas(file: &[u8]) -> Result<usize, SealError> {
    let mut lines = Lines { file, offset: 0 };
    if lines.next()? != "age-encryption.org/v1" {
        return Err(bad("blob is not an age v1 file"));
    }
    let (mut total, mut x25519) = (0usize, 0usize);
    let mut stanza: Option<Stanza> = None;
    while lines.offset < file.len() {
        let line = lines.next()?;
        if line.starts_with("-> ") {
            if let Some(previous) = stanza.take() {
                previous.finish()?;
            }
            let fields: Vec<&str> = line.split(' ').collect();
            if fields.len() < 2 || fields.iter().any(|f| f.is_empty()) {
                return Err(bad("age recipient stanza header is invalid"));
            }
            total += 1;
            if total > MAX_STANZAS {
                return Err(bad("age total stanza limit exceeded"));
            }
            let grease = if fields[1] == "X25519" {
                if fields.len() != 3 {
                    return Err(bad("age X25519 stanza header is invalid"));
                }
                x25519 += 1;
                if x25519 > MAX_X25519_STANZAS {
                    return Err(bad("age-v1 X25519 stanza limit exceeded"));
                }
                false
            } else {
                let kind = fields[1];
                let active = matches!(kind, "scrypt" | "ssh-rsa" | "ssh-ed25519") || kind.starts_with("plugin-");
                let grease = !active
                    && kind.strip_suffix("-grease").is_some_and(short_field)
                    && fields.len() <= 6
                    && fields[2..].iter().all(|f| short_field(f));
                if !grease {
                    return Err(bad("age-v1 rejects active non-X25519 recipient stanzas"));
                }
                true
            };
            stanza = Some(Stanza { grease, ..Stanza::default() });
        } else if line.starts_with("--- ") {
            match stanza.take() {
                Some(last) => last.finish()?,
                None => return Err(bad("age recipient stanza header is invalid")),
            }
            if x25519 < 1 || line.split(' ').count() != 2 || lines.offset >= file.len() {
                return Err(bad("age header footer is invalid"));
            }
            return Ok(x25519);
        } else {
            let Some(current) = stanza.as_mut() else { return Err(bad("age recipient stanza body is invalid")) };
            let valid = if current.grease {
                base64_chars(line)
            } else {
                let data = line.trim_end_matches('=');
                !data.is_empty() && line.len() - data.len() <= 2 && base64_chars(data)
            };
            if !valid {
                return Err(bad("age recipient stanza body is invalid"));
            }
            current.has_body = true;
            if current.grease {
                if line.len() > 64 || line.len() % 4 == 1 || current.short_seen {
                    return Err(bad("age GREASE stanza body framing is invalid"));
                }
                current.body_bytes += line.len() * 3 / 4;
                if current.body_bytes > 100 {
                    return Err(bad("age GREASE stanza body limit exceeded"));
                }
                current.body.push_str(line);
                current.short_seen = line.len() < 64;
            }
        }
    }
    Err(bad("age header footer is missing"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(stanzas: &str) -> Vec<u8> {
        format!("age-encryption.org/v1\n{stanzas}--- AAAA\npayload").into_bytes()
    }

    const X: &str = "-> X25519 UHwSYuqz0nETnk0k8pTzWX5dUSwX32+mdzrgiooZ5FM\nfHRC1X2S0nMkexfGaMYo7k1WeRjMXouDB6VI1ERX1ho\n";

    #[test]
    fn counts_x25519_and_accepts_grease() {
        assert_eq!(x25519_stanzas(&header(X)), Ok(1));
        assert_eq!(x25519_stanzas(&header(&format!("{X}{X}"))), Ok(2));
        assert_eq!(x25519_stanzas(&header(&format!("{X}-> a-grease b c\nAAAA\n"))), Ok(1));
        assert_eq!(x25519_stanzas(&header(&format!("-> a-grease\n\n{X}"))), Ok(1), "an empty GREASE body line");
    }

    #[test]
    fn refuses_what_agmsg_refuses() {
        let refused = |stanzas: &str, why: &str| {
            let err = x25519_stanzas(&header(stanzas)).unwrap_err();
            assert!(err.message.starts_with(why), "{stanzas:?}: {err}");
        };
        refused("", "age recipient stanza header is invalid");
        refused("-> scrypt abc 10\nAAAA\n", "age-v1 rejects active non-X25519");
        refused("-> plugin-yubikey x\nAAAA\n", "age-v1 rejects active non-X25519");
        refused("-> X25519 a b\nAAAA\n", "age X25519 stanza header is invalid");
        refused("-> X25519 a\n", "age recipient stanza header is invalid");
        refused(&format!("{X}-> a-grease\nAB\n"), "age GREASE stanza body is not canonical base64");
        refused(&format!("-> a-grease\nA\n{X}"), "age GREASE stanza body framing is invalid");
        refused("-> X25519 a\nAA=B\n", "age recipient stanza body is invalid");
        assert_eq!(x25519_stanzas(b"age-encryption.org/v2\n").unwrap_err().message, "blob is not an age v1 file");
        assert_eq!(x25519_stanzas(format!("age-encryption.org/v1\n{X}").as_bytes()).unwrap_err().message, "age header footer is missing");
        assert_eq!(
            x25519_stanzas(format!("age-encryption.org/v1\n{X}--- AAAA\n").as_bytes()).unwrap_err().message,
            "age header footer is invalid"
        );
    }
}
