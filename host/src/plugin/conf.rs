//! The `KEY=value` manifest format of agmsg's own packages (an agent type's `type.conf`), read exactly
//! as agmsg's `agmsg_type_get` reads it (`scripts/lib/type-registry.sh`):
//!
//! - the manifest is data: never sourced, never executed (`cli=$(touch x)` is the literal text);
//! - the value of `KEY` is taken from the **first** line matching `^[[:space:]]*KEY[[:space:]]*=`;
//! - it is everything after that line's first `=`, with surrounding whitespace trimmed and one pair of
//!   surrounding `"` stripped;
//! - a missing key reads as the empty string (or the caller's default); an empty value (`KEY=`) is
//!   present and empty, not missing;
//! - a `#` line never matches (the key pattern is anchored); multi-value keys are whitespace-separated.
//!
//! Whitespace is POSIX `[[:space:]]` (space, tab, newline, vertical tab, form feed, carriage return),
//! and lines are split at `\n` only, as `grep` does. What agmsg cannot read as text (a NUL byte, bytes
//! that are not UTF-8) is refused as malformed here instead of being half-read.
//!
//! Only the format: what the keys mean is the axis's (`agent::manifest`), which plugin/ asks through
//! [`super::DirPackage`].

use crate::error::HostError;

/// POSIX `[[:space:]]` in the C locale.
pub fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\u{0b}' | '\u{0c}' | '\r')
}

fn trim(s: &str) -> &str {
    s.trim_matches(is_space)
}

/// Whether `key` is a manifest key: ASCII letters, digits and `_`, non-empty. (agmsg puts the key
/// into a `grep -E` pattern; anything else is not a key it could mean.)
pub fn is_key(key: &str) -> bool {
    !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// One `KEY=value` line of a manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyLine<'a> {
    pub key: &'a str,
    /// The value as the reader returns it (trimmed, one pair of quotes stripped).
    pub value: &'a str,
    /// 1-based line number.
    pub line: usize,
    /// Whether an earlier line already set this key (so this line is never read).
    pub ignored: bool,
}

/// A manifest's text, read as agmsg reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    text: String,
}

/// The largest manifest read.
pub const MAX_MANIFEST_BYTES: u64 = 256 << 10;

impl Manifest {
    /// A manifest from its bytes; `origin` names it in errors. Refused (malformed): bytes that are not
    /// UTF-8, a NUL byte.
    pub fn parse(bytes: &[u8], origin: &str) -> Result<Manifest, HostError> {
        let text =
            std::str::from_utf8(bytes).map_err(|e| HostError::refused(format!("{origin}: malformed manifest: not UTF-8 text ({e})")))?;
        if text.contains('\0') {
            return Err(HostError::refused(format!("{origin}: malformed manifest: contains a NUL byte")));
        }
        Ok(Manifest { text: text.to_owned() })
    }

    /// Read `path` (a regular file, at most [`MAX_MANIFEST_BYTES`]).
    pub fn read(path: &std::path::Path) -> Result<Manifest, HostError> {
        let bytes = crate::plugin::read_file(path, MAX_MANIFEST_BYTES)?;
        Manifest::parse(&bytes, &path.display().to_string())
    }

    /// The manifest's text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The first line setting `key`, as agmsg reads it; `None` when no line does (or `key` is not a
    /// key).
    pub fn entry(&self, key: &str) -> Option<KeyLine<'_>> {
        if !is_key(key) {
            return None;
        }
        self.text.split('\n').enumerate().find_map(|(i, line)| {
            let value = value_of(line, key)?;
            Some(KeyLine { key: &line.trim_start_matches(is_space)[..key.len()], value, line: i + 1, ignored: false })
        })
    }

    /// `key`'s value; `None` when missing.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entry(key).map(|e| e.value)
    }

    /// `key`'s value, or `default` when missing (agmsg's `agmsg_type_get <type> <key> [default]`).
    pub fn get_or<'a>(&'a self, key: &str, default: &'a str) -> &'a str {
        self.get(key).unwrap_or(default)
    }

    /// `key`'s value, or `""` when missing.
    pub fn value(&self, key: &str) -> &str {
        self.get_or(key, "")
    }

    /// A multi-value key's words (whitespace-separated, never glob-expanded); missing is empty.
    pub fn words(&self, key: &str) -> Vec<&str> {
        self.value(key).split(is_space).filter(|w| !w.is_empty()).collect()
    }

    /// Whether `key`'s list holds `token` (agmsg's `agmsg_type_has`).
    pub fn has(&self, key: &str, token: &str) -> bool {
        self.words(key).contains(&token)
    }

    /// Every `KEY=value` line in file order (keys as [`is_key`] allows), each marked `ignored` when an
    /// earlier line set the same key.
    pub fn entries(&self) -> Vec<KeyLine<'_>> {
        let mut seen: Vec<&str> = Vec::new();
        let mut out = Vec::new();
        for (i, line) in self.text.split('\n').enumerate() {
            let Some((key, value)) = key_value(line) else { continue };
            let ignored = seen.contains(&key);
            if !ignored {
                seen.push(key);
            }
            out.push(KeyLine { key, value, line: i + 1, ignored });
        }
        out
    }

    /// Lines that are neither blank, nor a `#` comment, nor `KEY=value`: agmsg never reads them.
    pub fn stray_lines(&self) -> Vec<(usize, &str)> {
        self.text
            .split('\n')
            .enumerate()
            .filter(|(_, line)| {
                let t = trim(line);
                !t.is_empty() && !t.starts_with('#') && key_value(line).is_none()
            })
            .map(|(i, line)| (i + 1, line))
            .collect()
    }
}

/// The value `line` gives `key`, if the line matches `^[[:space:]]*KEY[[:space:]]*=`.
fn value_of<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let rest = line.trim_start_matches(is_space).strip_prefix(key)?;
    let rest = rest.trim_start_matches(is_space).strip_prefix('=')?;
    Some(unquote(trim(rest)))
}

/// The key and value of a `KEY=value` line, for any key.
fn key_value(line: &str) -> Option<(&str, &str)> {
    let start = line.trim_start_matches(is_space);
    let end = start.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(start.len());
    let key = &start[..end];
    if key.is_empty() {
        return None;
    }
    value_of(line, key).map(|v| (key, v))
}

/// One pair of surrounding double quotes stripped (`case "$val" in \"*\")`: at least two characters).
fn unquote(v: &str) -> &str {
    if v.len() >= 2 && v.starts_with('"') && v.ends_with('"') { &v[1..v.len() - 1] } else { v }
}
