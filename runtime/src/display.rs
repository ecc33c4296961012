//! The one rule for printing text that a driver or a manifest supplied (message bodies, names, error
//! and panic messages, describe values, manifest fields).
//!
//! A driver is a stranger's code, and a message body any agent's: such text may hold escape sequences
//! (an OSC title, `ESC[2J`, `ESC[8m` that hides what follows), a carriage return or cursor movement that
//! rewrites an earlier line, bidi controls that reorder what the user reads, line breaks that forge an
//! `agmsg-host: ...` line on stderr or a `key=value` line for agmsg to parse, or megabytes of text. So:
//!
//! - [`is_unsafe`] says which characters never reach a terminal as themselves: C0 controls, DEL, C1
//!   controls, the bidi controls (U+061C, U+200E/U+200F, U+202A–U+202E, U+2066–U+2069) and the Unicode
//!   line and paragraph separators (U+2028/U+2029).
//! - [`visible`] renders them visibly (`\n`, `\r`, `\t`, else `\u{1b}`), so nothing is hidden and
//!   nothing acts on the terminal. In [`Layout::Line`] (error messages, one-line fields) line breaks
//!   are escaped too and the result is cut after [`MAX_LINE_CHARS`] characters with
//!   `… (N more bytes)`; in [`Layout::Text`] (a message body the user asked to read) newlines and tabs
//!   are kept and nothing is cut.
//! - [`is_printable_line`] is the same rule as a check, for values validated where they are read
//!   (describe answers, manifest fields): none of those characters, at most a given length.
//!
//! Text without any such character (and within the cap) is printed unchanged, byte for byte.

use std::borrow::Cow;
use std::fmt::Write;

/// A one-line rendering is cut after this many characters.
pub const MAX_LINE_CHARS: usize = 4096;

/// How much of the text's shape survives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// One line: every line break and tab escaped, cut after [`MAX_LINE_CHARS`] characters.
    Line,
    /// Text to read (a message body): newlines and tabs kept, nothing cut.
    Text,
}

/// Whether `c` must not reach a terminal as itself: a C0 control, DEL, a C1 control, a bidi control,
/// or a Unicode line or paragraph separator.
pub fn is_unsafe(c: char) -> bool {
    // The same set as `agmsg_contract::is_unprintable` (this crate depends on none of the workspace's;
    // a host test checks the two agree for every character).
    c.is_control()
        || matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}')
}

/// `text` made safe to print: every [`is_unsafe`] character shown as an escape (`\n`, `\r`, `\t`,
/// `\u{1b}`), except newlines and tabs in [`Layout::Text`]; in [`Layout::Line`], cut after
/// [`MAX_LINE_CHARS`] characters with `… (N more bytes)`. Unchanged (borrowed) when already safe.
pub fn visible(text: &str, layout: Layout) -> Cow<'_, str> {
    let kept = |c: char| layout == Layout::Text && (c == '\n' || c == '\t');
    let needs_escape = text.chars().any(|c| is_unsafe(c) && !kept(c));
    let too_long = layout == Layout::Line && text.len() > MAX_LINE_CHARS && text.chars().nth(MAX_LINE_CHARS).is_some();
    if !needs_escape && !too_long {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len().min(MAX_LINE_CHARS * 2) + 16);
    let mut shown = 0usize;
    for (at, c) in text.char_indices() {
        let escaped: Option<Cow<'static, str>> = match c {
            _ if !is_unsafe(c) || kept(c) => None,
            '\n' => Some(Cow::Borrowed("\\n")),
            '\r' => Some(Cow::Borrowed("\\r")),
            '\t' => Some(Cow::Borrowed("\\t")),
            _ => Some(Cow::Owned(format!("\\u{{{:x}}}", c as u32))),
        };
        let width = escaped.as_ref().map_or(1, |e| e.chars().count());
        if layout == Layout::Line && shown + width > MAX_LINE_CHARS {
            let _ = write!(out, "… ({} more bytes)", text.len() - at);
            return Cow::Owned(out);
        }
        match escaped {
            Some(e) => out.push_str(&e),
            None => out.push(c),
        }
        shown += width;
    }
    Cow::Owned(out)
}

/// [`visible`] as one line: for error messages and one-line fields.
pub fn line(text: &str) -> Cow<'_, str> {
    visible(text, Layout::Line)
}

/// [`visible`] keeping newlines and tabs: for message bodies.
pub fn text(text: &str) -> Cow<'_, str> {
    visible(text, Layout::Text)
}

/// Whether `value` prints as itself on one line: no [`is_unsafe`] character (tabs and line breaks
/// included) and at most `max_chars` characters.
pub fn is_printable_line(value: &str, max_chars: usize) -> bool {
    value.chars().count() <= max_chars && !value.chars().any(is_unsafe)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_text_is_unchanged() {
        for s in ["", "hello", "héllo 日本 → ok", "tab\tand\nnewline in a body"] {
            assert!(matches!(text(s), Cow::Borrowed(b) if b == s), "{s:?}");
        }
        assert!(matches!(line("one line, \"quoted\" \\ backslash"), Cow::Borrowed(_)));
    }

    #[test]
    fn controls_are_shown_not_emitted() {
        assert_eq!(line("a\x1b]0;x\x07b"), "a\\u{1b}]0;x\\u{7}b");
        assert_eq!(line("x\nagmsg-host: forged"), "x\\nagmsg-host: forged");
        assert_eq!(line("\r\x1b[1A"), "\\r\\u{1b}[1A");
        assert_eq!(line("\u{7f}\u{85}\u{9b}"), "\\u{7f}\\u{85}\\u{9b}");
        assert_eq!(line("a\u{202e}b\u{2066}\u{200f}\u{61c}"), "a\\u{202e}b\\u{2066}\\u{200f}\\u{61c}");
        assert_eq!(text("line 1\nline\t2\r\x1b[2J"), "line 1\nline\t2\\r\\u{1b}[2J");
        assert_eq!(line("a\tb"), "a\\tb");
        assert_eq!(text("\u{2028}"), "\\u{2028}");
    }

    #[test]
    fn one_line_is_capped() {
        let long = "x".repeat(MAX_LINE_CHARS + 10);
        let shown = line(&long);
        assert_eq!(shown, format!("{}… (10 more bytes)", "x".repeat(MAX_LINE_CHARS)));
        assert!(matches!(line(&"x".repeat(MAX_LINE_CHARS)), Cow::Borrowed(_)));
        let escapes = "\x1b".repeat(MAX_LINE_CHARS);
        let shown = line(&escapes);
        assert!(shown.chars().count() < MAX_LINE_CHARS + 30, "{}", shown.len());
        assert!(shown.ends_with(" more bytes)"));
        // Multi-byte characters count once and are never split.
        let wide = "日".repeat(MAX_LINE_CHARS + 1);
        assert_eq!(line(&wide), format!("{}… (3 more bytes)", "日".repeat(MAX_LINE_CHARS)));
        // Bodies are not cut.
        assert!(matches!(text(&long), Cow::Borrowed(_)));
    }

    #[test]
    fn printable_lines() {
        assert!(is_printable_line("SQLite 3.50 event log", 64));
        assert!(!is_printable_line("a\nname=x", 64));
        assert!(!is_printable_line("a\tb", 64));
        assert!(!is_printable_line("\u{1b}[8m", 64));
        assert!(!is_printable_line("a\u{202e}", 64));
        assert!(!is_printable_line("abcd", 3));
    }
}
