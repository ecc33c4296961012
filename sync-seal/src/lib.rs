//! Sealing agmsg remote-sync push envelopes inside a storage driver.
//!
//! agmsg's Stage-1 remote sync (its `storage_sync_prepare_push`) has the storage driver seal each local
//! message it reserves for the relay server: agmsg's Node helper (`sync-cipher.mjs`, `sealEnvelope`)
//! does it there. This crate does the same inside a wasm component, with no process, no `age` binary and
//! no secret: sealing needs only the public recipients the engine hands to prepare.
//!
//! - [`canonical_message`]: the message projection agmsg signs and seals, `JSON.stringify` of
//!   `{body, created_at, from_agent, to_agent}` in that order, after agmsg's validation of each field.
//! - [`seal`]: the envelope `{"v":1,"cipher","key_id","blob"}`. Profile `none` is deterministic and byte
//!   for byte agmsg's (pinned by golden vectors made with agmsg's helper, in `tests/data`); `age-v1` is
//!   a standard age v1 file to X25519 recipients around agmsg's binding frame ([`age_frame`]),
//!   randomized like every age file, which agmsg's engine and the `age` CLI open.
//!
//! Errors say which rule failed and carry agmsg's state (`malformed`, `unsupported_cipher`); their text
//! starts with agmsg's own message for the same failure. Beyond agmsg's helper, `none` also refuses
//! recipients (agmsg's prepare already does).
//!
//! ```
//! use agmsg_sync_seal::{seal, Message, SealRequest};
//!
//! let message = Message { body: "hi", created_at: "2026-07-20T06:30:00.000000Z", from_agent: "alice", to_agent: "bob" };
//! let request = SealRequest::none("018f3f7e-0000-7000-8000-000000000001", "550e8400-e29b-41d4-a716-446655440000");
//! let envelope = seal(&message, &request).unwrap();
//! assert_eq!(envelope.to_json(), r#"{"v":1,"cipher":"none","key_id":null,"blob":"eyJib2R5IjoiaGkiLCJjcmVhdGVkX2F0IjoiMjAyNi0wNy0yMFQwNjozMDowMC4wMDAwMDBaIiwiZnJvbV9hZ2VudCI6ImFsaWNlIiwidG9fYWdlbnQiOiJib2IifQ=="}"#);
//! ```

use std::borrow::Cow;
use std::io::Write;
use std::str::FromStr;

use agmsg_contract::sync::{is_key_id, is_lower_uuid, is_recipient_form};
use base64::Engine;
use serde::Serialize;

#[doc(hidden)] // Public for the fuzz targets (fuzz/src/targets.rs).
pub mod header;

/// The envelope version agmsg's protocol 1 uses.
pub const ENVELOPE_V: u32 = 1;
/// The largest blob any envelope may carry (agmsg's `MAX_BLOB_BYTES`), whatever `max_blob_bytes` says.
pub const MAX_BLOB_BYTES: u64 = 1_048_576;
/// The largest message body, in UTF-8 bytes.
pub const MAX_BODY_BYTES: usize = 1_000_000;
/// The most recipients an age-v1 envelope is sealed to.
pub const MAX_RECIPIENTS: usize = 256;

/// One local message as agmsg's projection has it. `created_at` must already be in the six-digit form
/// (`2026-07-20T06:30:00.000000Z`): pass a stored timestamp through [`canonical_created_at`] first.
#[derive(Clone, Copy, Debug)]
pub struct Message<'a> {
    pub body: &'a str,
    pub created_at: &'a str,
    pub from_agent: &'a str,
    pub to_agent: &'a str,
}

/// What to seal with and for whom: agmsg's `sync_seal` request without the message.
#[derive(Clone, Copy, Debug)]
pub struct SealRequest<'a> {
    /// Always [`ENVELOPE_V`] today.
    pub envelope_v: u32,
    /// `"none"` or `"age-v1"`; anything else is `unsupported_cipher`.
    pub cipher: &'a str,
    /// `None` for `none`; the engine's key id (`^[a-z0-9][a-z0-9._-]{0,63}$`) for `age-v1`.
    pub key_id: Option<&'a str>,
    /// `age1…` X25519 recipients, 1 to 256 and distinct, for `age-v1`; none for `none`.
    pub recipients: &'a [String],
    /// The engine's bound on the blob's decoded size: 1 to [`MAX_BLOB_BYTES`].
    pub max_blob_bytes: u64,
    /// The remote team id (a lowercase UUIDv7), bound into an age-v1 frame.
    pub team_id: &'a str,
    /// This message's wire id (a lowercase UUIDv4), bound into an age-v1 frame.
    pub wire_id: &'a str,
    /// Always 1 today.
    pub protocol_version: u32,
}

impl<'a> SealRequest<'a> {
    /// A `none` request with agmsg's defaults (protocol 1, the largest blob).
    pub fn none(team_id: &'a str, wire_id: &'a str) -> SealRequest<'a> {
        SealRequest {
            envelope_v: ENVELOPE_V,
            cipher: "none",
            key_id: None,
            recipients: &[],
            max_blob_bytes: MAX_BLOB_BYTES,
            team_id,
            wire_id,
            protocol_version: 1,
        }
    }
}

/// A sealed envelope. [`Envelope::to_json`] (or serde) writes it in agmsg's key order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Envelope {
    pub v: u32,
    pub cipher: String,
    pub key_id: Option<String>,
    /// Standard padded base64 of the plaintext message (`none`) or of the binary age file (`age-v1`).
    pub blob: String,
}

impl Envelope {
    /// `{"v":1,"cipher":…,"key_id":…,"blob":…}`, as agmsg's `JSON.stringify` writes it.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("an envelope serializes")
    }
}

/// Which of agmsg's cipher states a failure is (`CipherStateError.state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SealState {
    /// The request or the message breaks a rule: sealing it again will fail again.
    Malformed,
    /// A cipher this crate (and agmsg) does not know.
    UnsupportedCipher,
}

impl SealState {
    /// agmsg's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            SealState::Malformed => "malformed",
            SealState::UnsupportedCipher => "unsupported_cipher",
        }
    }
}

/// Why a message was not sealed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SealError {
    pub state: SealState,
    /// agmsg's message for the failure, then (after `": "`) what exactly was wrong where it helps.
    pub message: String,
}

impl SealError {
    fn malformed(message: impl Into<String>) -> SealError {
        SealError { state: SealState::Malformed, message: message.into() }
    }
}

impl std::fmt::Display for SealError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.state.as_str())
    }
}

impl std::error::Error for SealError {}

/// agmsg's drivers store second-resolution times (`…:SSZ`); its projection wants six digits. Any other
/// form is returned unchanged (and then refused by [`canonical_message`] if it is not canonical).
pub fn canonical_created_at(at: &str) -> Cow<'_, str> {
    let b = at.as_bytes();
    let digits = |range: std::ops::Range<usize>| b[range].iter().all(u8::is_ascii_digit);
    if b.len() == 20
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19)
        && b[19] == b'Z'
    {
        Cow::Owned(format!("{}.000000Z", &at[..19]))
    } else {
        Cow::Borrowed(at)
    }
}

/// The message's canonical bytes: `{"body","created_at","from_agent","to_agent"}` as
/// `JSON.stringify` writes it, once the body (1 to 1,000,000 UTF-8 bytes), the timestamp (six-digit
/// fraction, a real date) and both names pass agmsg's rules.
pub fn canonical_message(message: &Message<'_>) -> Result<Vec<u8>, SealError> {
    let body_len = message.body.len();
    if !(1..=MAX_BODY_BYTES).contains(&body_len) {
        return Err(SealError::malformed(format!(
            "message projection is invalid: the body is {body_len} bytes (1 to {MAX_BODY_BYTES} allowed)"
        )));
    }
    if !valid_timestamp(message.created_at) {
        return Err(SealError::malformed(format!(
            "message projection is invalid: created_at {:?} is not YYYY-MM-DDTHH:MM:SS.ffffffZ with a real date",
            message.created_at
        )));
    }
    require_name(message.from_agent, "from_agent")?;
    require_name(message.to_agent, "to_agent")?;
    #[derive(Serialize)]
    struct Canonical<'a> {
        body: &'a str,
        created_at: &'a str,
        from_agent: &'a str,
        to_agent: &'a str,
    }
    // serde_json escapes strings as JSON.stringify does for well-formed text (short escapes for
    // \b \t \n \f \r, lowercase \u00xx for other controls, everything else raw); the golden vectors pin it.
    Ok(serde_json::to_vec(&Canonical {
        body: message.body,
        created_at: message.created_at,
        from_agent: message.from_agent,
        to_agent: message.to_agent,
    })
    .expect("strings serialize"))
}

/// Seal `message` as `request` says: agmsg's `sealEnvelope`.
pub fn seal(message: &Message<'_>, request: &SealRequest<'_>) -> Result<Envelope, SealError> {
    if request.envelope_v != ENVELOPE_V
        || !(1..=MAX_BLOB_BYTES).contains(&request.max_blob_bytes)
        || !is_lower_uuid(request.wire_id, 4)
        || !is_lower_uuid(request.team_id, 7)
        || request.protocol_version != 1
    {
        return Err(SealError::malformed(format!(
            "seal request is invalid: needs envelope_v 1 (got {}), max_blob_bytes 1 to {MAX_BLOB_BYTES} (got {}), a lowercase \
             UUIDv4 wire id (got {:?}), a lowercase UUIDv7 team id (got {:?}) and protocol 1 (got {})",
            request.envelope_v, request.max_blob_bytes, request.wire_id, request.team_id, request.protocol_version
        )));
    }
    let cipher = match request.cipher {
        "none" => Cipher::None,
        "age-v1" => Cipher::AgeV1,
        other => return Err(SealError { state: SealState::UnsupportedCipher, message: format!("unsupported cipher {other}") }),
    };
    let plaintext = canonical_message(message)?;
    match cipher {
        Cipher::None => seal_none(request, plaintext),
        Cipher::AgeV1 => seal_age(request, &plaintext),
    }
}

enum Cipher {
    None,
    AgeV1,
}

const BASE64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

fn seal_none(request: &SealRequest<'_>, plaintext: Vec<u8>) -> Result<Envelope, SealError> {
    if let Some(key_id) = request.key_id {
        return Err(SealError::malformed(format!("none requires null key_id: got {key_id:?}")));
    }
    if !request.recipients.is_empty() {
        return Err(SealError::malformed(format!("none takes no recipients: got {}", request.recipients.len())));
    }
    let len = plaintext.len() as u64;
    if len > request.max_blob_bytes {
        return Err(SealError::malformed(format!(
            "plaintext exceeds max_blob_bytes: the message is {len} bytes, max_blob_bytes {}",
            request.max_blob_bytes
        )));
    }
    Ok(Envelope { v: ENVELOPE_V, cipher: "none".into(), key_id: None, blob: BASE64.encode(plaintext) })
}

fn seal_age(request: &SealRequest<'_>, plaintext: &[u8]) -> Result<Envelope, SealError> {
    let key_id = request.key_id.filter(|k| is_key_id(k));
    let manifest = |why: String| SealError::malformed(format!("age-v1 recipient manifest is invalid: {why}"));
    let Some(key_id) = key_id else {
        return Err(manifest(format!("key_id {:?} must match ^[a-z0-9][a-z0-9._-]{{0,63}}$", request.key_id)));
    };
    let count = request.recipients.len();
    if !(1..=MAX_RECIPIENTS).contains(&count) {
        return Err(manifest(format!("{count} recipients (1 to {MAX_RECIPIENTS} allowed)")));
    }
    let mut parsed = Vec::with_capacity(count);
    for (i, recipient) in request.recipients.iter().enumerate() {
        if !is_recipient_form(recipient) {
            return Err(manifest(format!("recipient {} is not age1 followed by 58 lowercase letters or digits", i + 1)));
        }
        if request.recipients[..i].contains(recipient) {
            return Err(manifest(format!("recipient {} repeats an earlier one", i + 1)));
        }
        // The form is agmsg's check; the key itself (bech32 checksum, a curve point) is the age tool's.
        let key = age::x25519::Recipient::from_str(recipient)
            .map_err(|e| manifest(format!("recipient {} is not an X25519 public key: {e}", i + 1)))?;
        parsed.push(key);
    }
    let frame = frame(request.protocol_version, request.team_id, request.wire_id, key_id, plaintext)?;
    let encryptor = age::Encryptor::with_recipients(parsed.iter().map(|r| r as &dyn age::Recipient))
        // Only mixing recipient kinds fails here, and these are all X25519. (age's own error text is
        // localized through files this crate does not ship, so it is not shown.)
        .map_err(|_| manifest("age refused the recipient set".into()))?;
    let mut file = Vec::with_capacity(frame.len() + frame.len() / 4 + 128 * count + 256);
    let written = encryptor.wrap_output(&mut file).and_then(|mut writer| {
        writer.write_all(&frame)?;
        writer.finish().map(|_| ())
    });
    // Writing into memory cannot fail.
    written.expect("age writes into a Vec");
    let len = file.len() as u64;
    if len > request.max_blob_bytes || len > MAX_BLOB_BYTES {
        return Err(SealError::malformed(format!(
            "encrypted age file exceeds max_blob_bytes: {len} bytes, max_blob_bytes {}",
            request.max_blob_bytes.min(MAX_BLOB_BYTES)
        )));
    }
    // Fail closed if the file does not carry exactly one X25519 stanza per manifest entry.
    let stanzas = header::x25519_stanzas(&file)?;
    if stanzas != count {
        return Err(SealError::malformed(format!(
            "age recipient stanza count differs from the manifest: {stanzas} stanzas for {count} recipients"
        )));
    }
    Ok(Envelope { v: ENVELOPE_V, cipher: "age-v1".into(), key_id: Some(key_id.into()), blob: BASE64.encode(file) })
}

/// The plaintext an age-v1 envelope encrypts (agmsg's `agePlaintextFrame`): `agmsg-age-v1` and four zero
/// bytes, the u32 length of the binding context, the context (u32 protocol, the team and wire UUIDs as
/// 16 bytes each, u16-length-prefixed `age-v1` and key id), the u32 length of the message, the
/// canonical message. Big-endian throughout. Deterministic.
pub fn age_frame(protocol_version: u32, team_id: &str, wire_id: &str, key_id: &str, message: &Message<'_>) -> Result<Vec<u8>, SealError> {
    frame(protocol_version, team_id, wire_id, key_id, &canonical_message(message)?)
}

/// [`age_frame`] around an already canonical message.
fn frame(protocol_version: u32, team_id: &str, wire_id: &str, key_id: &str, message: &[u8]) -> Result<Vec<u8>, SealError> {
    let (Some(team), Some(wire)) = (uuid_bytes(team_id, 7), uuid_bytes(wire_id, 4)) else {
        return Err(SealError::malformed(format!("team_id is invalid or wire_id is invalid: {team_id:?}, {wire_id:?}")));
    };
    if !is_key_id(key_id) {
        return Err(SealError::malformed(format!("age-v1 binding metadata is invalid: key_id {key_id:?}")));
    }
    let mut context = Vec::with_capacity(4 + 32 + 8 + 6 + key_id.len());
    context.extend_from_slice(&protocol_version.to_be_bytes());
    context.extend_from_slice(&team);
    context.extend_from_slice(&wire);
    for part in ["age-v1", key_id] {
        context.extend_from_slice(&(part.len() as u16).to_be_bytes());
        context.extend_from_slice(part.as_bytes());
    }
    let mut frame = Vec::with_capacity(16 + 8 + context.len() + message.len());
    frame.extend_from_slice(b"agmsg-age-v1\0\0\0\0");
    frame.extend_from_slice(&(context.len() as u32).to_be_bytes());
    frame.extend_from_slice(&context);
    frame.extend_from_slice(&(message.len() as u32).to_be_bytes());
    frame.extend_from_slice(message);
    Ok(frame)
}

fn uuid_bytes(value: &str, version: u8) -> Option<[u8; 16]> {
    if !is_lower_uuid(value, version) {
        return None;
    }
    let hex: Vec<u8> = value.bytes().filter(|&c| c != b'-').collect();
    let mut out = [0u8; 16];
    for (i, pair) in hex.chunks(2).enumerate() {
        out[i] = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(out)
}

/// `YYYY-MM-DDTHH:MM:SS.ffffffZ` (ASCII digits) naming a real instant of the proleptic Gregorian
/// calendar, as agmsg's `validTimestamp`.
fn valid_timestamp(at: &str) -> bool {
    let b = at.as_bytes();
    if b.len() != 27 {
        return false;
    }
    let shape_ok = b.iter().enumerate().all(|(i, &c)| match i {
        4 | 7 => c == b'-',
        10 => c == b'T',
        13 | 16 => c == b':',
        19 => c == b'.',
        26 => c == b'Z',
        _ => c.is_ascii_digit(),
    });
    if !shape_ok {
        return false;
    }
    let num = |range: std::ops::Range<usize>| at[range].parse::<u32>().unwrap_or(u32::MAX);
    let (year, month, day, hour, minute, second) = (num(0..4), num(5..7), num(8..10), num(11..13), num(14..16), num(17..19));
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day) && hour <= 23 && minute <= 59 && second <= 59
}

/// agmsg's `requireName`: 1 to 128 scalars, no leading `-`, none of `. / \ " [ ]` or a control
/// character, and already in NFC.
fn require_name(name: &str, label: &str) -> Result<(), SealError> {
    let scalars = name.chars().count();
    let why = if !(1..=128).contains(&scalars) {
        Some(format!("{scalars} characters (1 to 128 allowed)"))
    } else if name.starts_with('-') {
        Some("starts with '-'".to_owned())
    } else if let Some(c) = name.chars().find(|&c| matches!(c, '.' | '/' | '\\' | '"' | '[' | ']' | '\u{0}'..='\u{1f}' | '\u{7f}')) {
        Some(format!("contains {c:?}"))
    } else if !unicode_normalization::is_nfc(name) {
        Some("is not in Unicode NFC".to_owned())
    } else {
        None
    };
    match why {
        Some(why) => Err(SealError::malformed(format!("{label} is invalid: {name:?} {why}"))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_at_is_widened_from_seconds_only() {
        assert_eq!(canonical_created_at("2026-05-30T19:00:00Z"), "2026-05-30T19:00:00.000000Z");
        assert_eq!(canonical_created_at("2026-05-30T19:00:00.000000Z"), "2026-05-30T19:00:00.000000Z");
        assert_eq!(canonical_created_at("2026-05-30 19:00:00Z"), "2026-05-30 19:00:00Z");
    }

    #[test]
    fn timestamps_must_name_real_dates() {
        assert!(valid_timestamp("2000-02-29T00:00:00.000000Z"));
        assert!(!valid_timestamp("1900-02-29T00:00:00.000000Z"));
        assert!(!valid_timestamp("2026-00-10T00:00:00.000000Z"));
        assert!(!valid_timestamp("2026-01-00T00:00:00.000000Z"));
        assert!(!valid_timestamp("+2026-01-01T00:00:00.000000Z"));
    }

    #[test]
    fn uuids_and_key_ids() {
        assert!(is_lower_uuid("550e8400-e29b-41d4-a716-446655440000", 4));
        assert!(!is_lower_uuid("550e8400-e29b-41d4-c716-446655440000", 4), "variant");
        assert!(!is_lower_uuid("550e8400e29b-41d4-a716-4466554400000", 4), "dashes");
        assert_eq!(uuid_bytes("018f3f7e-0000-7000-8000-000000000001", 7).unwrap()[..3], [0x01, 0x8f, 0x3f]);
        assert!(is_key_id("epoch-1") && is_key_id(&"a".repeat(64)) && !is_key_id(&"a".repeat(65)) && !is_key_id("-a") && !is_key_id(""));
    }
}
