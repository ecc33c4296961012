//! agmsg's default delivery: JSON event hooks in the type's `hooks_file`, as `delivery.sh` edits it
//! with SQLite's `json_set`/`json_remove`. The output is what SQLite writes: minified, every member in
//! its place, every scalar's text as it was (string escapes and number spellings untouched), a new
//! member appended at the end of its object, no trailing newline.
//!
//! Steps (agmsg's order): strip agmsg's entries from `hooks.SessionStart`, `hooks.SessionEnd` and
//! `hooks.Stop` (an event left with none is removed); add the mode's entries (monitor: SessionStart +
//! SessionEnd; turn: Stop; both: all three), each `{"matcher":"","hooks":[{"type":"command",
//! "command":...}]}` (plus `commandWindows` for `hook_windows_wrap=yes`); remove an empty `hooks`.
//!
//! An entry is agmsg's only in exactly the form the host writes it ([`entry`]): one hook whose command
//! is one of agmsg's three scripts in agmsg's install directory, a type name and an absolute project,
//! each word quoted as `agmsg_shq` quotes it, and `commandWindows`, if any, exactly agmsg's wrapper of
//! that command. Nothing is agmsg's by containing agmsg's directory (agmsg's own substring rule would
//! count `'<skill>/scripts/check-inbox.sh' 't' '/p'; touch x` as its own), so whatever else is in the
//! file is the user's and kept byte for byte, and `status` reports only what agmsg-host would write.

use super::{Context, FileAnswer, Mode, OffDetail, Status};
use crate::error::HostError;

/// The events agmsg owns entries in, in its order.
pub const EVENTS: [&str; 3] = ["SessionStart", "SessionEnd", "Stop"];

/// The largest hooks file read (agmsg has no limit; a settings file this large is not one).
pub const MAX_BYTES: usize = 4 << 20;

/// A JSON value with its scalars kept as their source text.
#[derive(Clone, Debug, PartialEq)]
enum Node<'a> {
    /// Members in order: the key's source text (with quotes) and the value.
    Object(Vec<(&'a str, Node<'a>)>),
    Array(Vec<Node<'a>>),
    /// A string (with quotes), number, `true`, `false` or `null`, as written.
    Scalar(&'a str),
    /// Built here (agmsg's entries), already minified.
    Owned(String),
}

impl Node<'_> {
    fn render(&self, out: &mut String) {
        match self {
            Node::Object(members) => {
                out.push('{');
                for (i, (key, value)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(key);
                    out.push(':');
                    value.render(out);
                }
                out.push('}');
            }
            Node::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.render(out);
                }
                out.push(']');
            }
            Node::Scalar(text) => out.push_str(text),
            Node::Owned(text) => out.push_str(text),
        }
    }

    fn is_null(&self) -> bool {
        matches!(self, Node::Scalar("null"))
    }

    /// The first member named `name` (SQLite's `json_extract` takes the first).
    fn member(&self, name: &str) -> Option<&Node<'_>> {
        match self {
            Node::Object(members) => members.iter().find(|(k, _)| key_is(k, name)).map(|(_, v)| v),
            _ => None,
        }
    }

    fn member_index(&self, name: &str) -> Option<usize> {
        match self {
            Node::Object(members) => members.iter().position(|(k, _)| key_is(k, name)),
            _ => None,
        }
    }
}

fn key_is(raw: &str, name: &str) -> bool {
    raw.len() >= 2 && (raw[1..raw.len() - 1] == *name || serde_json::from_str::<String>(raw).is_ok_and(|k| k == name))
}

/// Parse (already validated by serde_json) JSON into a `Node` tree of source spans.
struct Parser<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn ws(&mut self) {
        while self.text[self.pos..].starts_with([' ', '\t', '\n', '\r']) {
            self.pos += 1;
        }
    }

    fn value(&mut self) -> Result<Node<'a>, String> {
        self.ws();
        let bytes = self.text.as_bytes();
        match bytes.get(self.pos) {
            Some(b'{') => {
                self.pos += 1;
                let mut members = Vec::new();
                self.ws();
                if bytes.get(self.pos) == Some(&b'}') {
                    self.pos += 1;
                    return Ok(Node::Object(members));
                }
                loop {
                    self.ws();
                    let key = self.string()?;
                    self.ws();
                    self.expect(b':')?;
                    let value = self.value()?;
                    members.push((key, value));
                    self.ws();
                    match bytes.get(self.pos) {
                        Some(b',') => self.pos += 1,
                        Some(b'}') => {
                            self.pos += 1;
                            return Ok(Node::Object(members));
                        }
                        _ => return Err(self.error()),
                    }
                }
            }
            Some(b'[') => {
                self.pos += 1;
                let mut items = Vec::new();
                self.ws();
                if bytes.get(self.pos) == Some(&b']') {
                    self.pos += 1;
                    return Ok(Node::Array(items));
                }
                loop {
                    items.push(self.value()?);
                    self.ws();
                    match bytes.get(self.pos) {
                        Some(b',') => self.pos += 1,
                        Some(b']') => {
                            self.pos += 1;
                            return Ok(Node::Array(items));
                        }
                        _ => return Err(self.error()),
                    }
                }
            }
            Some(b'"') => Ok(Node::Scalar(self.string()?)),
            Some(_) => {
                let start = self.pos;
                while self.pos < bytes.len() && !matches!(bytes[self.pos], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                    self.pos += 1;
                }
                if start == self.pos {
                    return Err(self.error());
                }
                Ok(Node::Scalar(&self.text[start..self.pos]))
            }
            None => Err(self.error()),
        }
    }

    fn string(&mut self) -> Result<&'a str, String> {
        let bytes = self.text.as_bytes();
        let start = self.pos;
        self.expect(b'"')?;
        while let Some(&b) = bytes.get(self.pos) {
            self.pos += 1;
            match b {
                b'\\' => self.pos += 1,
                b'"' => return Ok(&self.text[start..self.pos]),
                _ => {}
            }
        }
        Err(self.error())
    }

    fn expect(&mut self, b: u8) -> Result<(), String> {
        if self.text.as_bytes().get(self.pos) == Some(&b) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.error())
        }
    }

    fn error(&self) -> String {
        format!("unexpected input at byte {}", self.pos)
    }
}

/// The file's JSON, checked: valid JSON (serde_json's message, with line and column), an object at
/// the top. An absent file is `{}`, as agmsg reads it; so is an empty one.
/// A file that is not so is refused: delivery leaves it as it is.
fn parse(current: Option<&str>) -> Result<Node<'_>, HostError> {
    let text = current.unwrap_or("{}");
    let text = if text.trim().is_empty() { "{}" } else { text };
    if text.len() > MAX_BYTES {
        return Err(HostError::refused(format!("it is larger than {} MiB", MAX_BYTES >> 20)));
    }
    serde_json::from_str::<serde::de::IgnoredAny>(text).map_err(|e| HostError::refused(format!("it is not valid JSON ({e})")))?;
    let mut parser = Parser { text, pos: 0 };
    let root = parser.value().map_err(HostError::refused)?;
    let Node::Object(members) = &root else {
        return Err(HostError::refused("its top level is not a JSON object"));
    };
    // The objects delivery looks members up in by name: a key there twice is read as its first by
    // SQLite (agmsg) and this host, as its last by JavaScript (the agent), so what delivery removes and
    // what the agent runs could differ (a fuzzing finding: a second "Stop" kept agmsg's turn hook after
    // `delivery set monitor`, and status said both). Refused: delivery leaves the file as it is.
    let hooks = members.iter().find(|(k, _)| key_is(k, "hooks")).and_then(|(_, v)| match v {
        Node::Object(hooks) => Some(hooks),
        _ => None,
    });
    for object in std::iter::once(members).chain(hooks) {
        if let Some(key) = duplicate_key(object) {
            return Err(HostError::refused(format!(
                "its JSON has the key {} twice in one object (readers disagree on which one counts)",
                crate::display::line(key)
            )));
        }
    }
    Ok(root)
}

/// A key an object holds twice (keys compared as the strings they decode to).
fn duplicate_key<'a>(members: &[(&'a str, Node<'_>)]) -> Option<&'a str> {
    let mut seen = std::collections::HashSet::new();
    members.iter().map(|(k, _)| *k).find(|k| !seen.insert(serde_json::from_str::<String>(k).unwrap_or_else(|_| (*k).to_owned())))
}

/// The scripts agmsg's hook entries run.
const SCRIPTS: [&str; 3] = ["session-start.sh", "session-end.sh", "check-inbox.sh"];

/// Whether an event entry is agmsg's: exactly an [`entry`] the host writes (with or without
/// `commandWindows`) for an [`is_agmsg_command`].
fn owned(node: &Node<'_>, skill_dir: &str) -> bool {
    let mut text = String::new();
    node.render(&mut text);
    let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else { return false };
    let Some(command) = value.pointer("/hooks/0/command").and_then(serde_json::Value::as_str) else { return false };
    is_agmsg_command(command, skill_dir)
        && [false, true]
            .into_iter()
            .any(|wrap| serde_json::from_str::<serde_json::Value>(&entry(command, wrap)).is_ok_and(|own| own == value))
}

/// `'<skill_dir>/scripts/<script>' '<type>' '<project>'`: one of agmsg's scripts, a type name and an
/// absolute path, each word exactly as `agmsg_shq` quotes it, nothing before, between or after.
fn is_agmsg_command(command: &str, skill_dir: &str) -> bool {
    SCRIPTS.iter().any(|script| {
        let head = format!("{} ", super::shq(&format!("{skill_dir}/scripts/{script}")));
        command
            .strip_prefix(&head)
            .and_then(quoted_words)
            .is_some_and(|words| matches!(words.as_slice(), [t, p] if agmsg_contract::is_driver_name(t) && p.starts_with('/')))
    })
}

/// The words of `text` when it is exactly words quoted by `agmsg_shq`, one space apart.
fn quoted_words(text: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut rest = text;
    loop {
        let mut word = String::new();
        rest = rest.strip_prefix('\'')?;
        loop {
            let close = rest.find('\'')?;
            word.push_str(&rest[..close]);
            rest = &rest[close + 1..];
            match rest.strip_prefix("\\''") {
                Some(after) => {
                    word.push('\'');
                    rest = after;
                }
                None => break,
            }
        }
        words.push(word);
        match rest.strip_prefix(' ') {
            Some(after) => rest = after,
            None if rest.is_empty() => break,
            None => return None,
        }
    }
    let again: Vec<String> = words.iter().map(|w| super::shq(w)).collect();
    (again.join(" ") == text).then_some(words)
}

/// `hooks`, as an object (`None`: absent or null).
fn hooks_mut<'n, 'a>(root: &'n mut Node<'a>) -> Result<Option<&'n mut Vec<(&'a str, Node<'a>)>>, HostError> {
    let Node::Object(members) = root else { unreachable!("checked by parse") };
    match members.iter_mut().find(|(k, _)| key_is(k, "hooks")) {
        None => Ok(None),
        Some((_, v)) if v.is_null() => Ok(None),
        Some((_, Node::Object(hooks))) => Ok(Some(hooks)),
        Some(_) => Err(HostError::refused("its \"hooks\" is not a JSON object")),
    }
}

fn strip(root: &mut Node<'_>, event: &str, skill_dir: &str) -> Result<(), HostError> {
    let Some(hooks) = hooks_mut(root)? else { return Ok(()) };
    let Some(i) = hooks.iter().position(|(k, _)| key_is(k, event)) else { return Ok(()) };
    match &mut hooks[i].1 {
        v if v.is_null() => {}
        Node::Array(entries) => {
            entries.retain(|e| !owned(e, skill_dir));
            if entries.is_empty() {
                hooks.remove(i);
            }
        }
        _ => return Err(not_an_array(event)),
    }
    Ok(())
}

fn not_an_array(event: &str) -> HostError {
    HostError::refused(format!("its \"hooks\".\"{event}\" is not a JSON array"))
}

fn add<'a>(root: &mut Node<'a>, event: &'static str, entry: String) -> Result<(), HostError> {
    if hooks_mut(root)?.is_none() {
        let Node::Object(members) = root else { unreachable!() };
        match members.iter_mut().find(|(k, _)| key_is(k, "hooks")) {
            Some((_, v)) => *v = Node::Object(Vec::new()),
            None => members.push(("\"hooks\"", Node::Object(Vec::new()))),
        }
    }
    let hooks = hooks_mut(root)?.expect("just set");
    let entry = Node::Owned(entry);
    match hooks.iter_mut().find(|(k, _)| key_is(k, event)) {
        None => hooks.push((quoted(event), Node::Array(vec![entry]))),
        Some((_, v)) if v.is_null() => *v = Node::Array(vec![entry]),
        Some((_, Node::Array(entries))) => entries.push(entry),
        Some(_) => return Err(not_an_array(event)),
    }
    Ok(())
}

fn quoted(event: &'static str) -> &'static str {
    match event {
        "SessionStart" => "\"SessionStart\"",
        "SessionEnd" => "\"SessionEnd\"",
        _ => "\"Stop\"",
    }
}

/// One hook entry, as SQLite's `json_object` writes it.
pub fn entry(command: &str, windows_wrap: bool) -> String {
    let q = |s: &str| serde_json::to_string(s).expect("a string");
    let mut hook = format!("{{\"type\":\"command\",\"command\":{}", q(command));
    if windows_wrap {
        hook.push_str(&format!(",\"commandWindows\":{}", q(&windows_command(command))));
    }
    format!("{{\"matcher\":\"\",\"hooks\":[{hook}}}]}}")
}

/// agmsg's `windows_wrap`: run the POSIX command through Git Bash from PowerShell (codex on Windows).
pub fn windows_command(posix: &str) -> String {
    format!(
        "$b=$env:GIT_BASH; if (-not $b) {{ $b=$env:AGMSG_BASH }}; if (-not $b) {{ $b='C:\\Program Files\\Git\\bin\\bash.exe' }}; & $b -lc '{}'",
        posix.replace('\'', "''")
    )
}

/// The file's new text for `mode`.
pub fn apply(ctx: &Context, mode: Mode, current: Option<&str>) -> Result<FileAnswer, HostError> {
    let mut root = parse(current)?;
    for event in EVENTS {
        strip(&mut root, event, &ctx.skill_dir)?;
    }
    let events: &[(&'static str, &str)] = match mode {
        Mode::Monitor => &[("SessionStart", "session-start.sh"), ("SessionEnd", "session-end.sh")],
        Mode::Turn => &[("Stop", "check-inbox.sh")],
        Mode::Both => &[("SessionStart", "session-start.sh"), ("SessionEnd", "session-end.sh"), ("Stop", "check-inbox.sh")],
        Mode::Off => &[],
    };
    for (event, script) in events {
        add(&mut root, event, entry(&ctx.script_command(script), ctx.windows_wrap))?;
    }
    if let Some(i) = root.member_index("hooks") {
        let Node::Object(members) = &mut root else { unreachable!() };
        if matches!(&members[i].1, Node::Object(h) if h.is_empty()) {
            members.remove(i);
        }
    }
    let mut out = String::new();
    root.render(&mut out);
    Ok(FileAnswer::Write(out))
}

/// The mode the file's agmsg entries say (SessionStart: monitor, Stop: turn, both: both), and every
/// event's entry count (all entries, agmsg's or not, as agmsg counts them). As agmsg's, a status never
/// fails: an absent file, or one that is not JSON, is off saying so ([`OffDetail`]); JSON of another
/// shape has no agmsg entries and no counts.
pub fn status(ctx: &Context, current: Option<&str>) -> Result<Status, HostError> {
    let Some(text) = current else { return Ok(Status { mode: Mode::Off, entries: None, off: Some(OffDetail::NoFile) }) };
    let zeros = Some(EVENTS.iter().map(|e| (*e, 0)).collect());
    if serde_json::from_str::<serde::de::IgnoredAny>(text).is_err() {
        return Ok(Status { mode: Mode::Off, entries: zeros, off: Some(OffDetail::NotJson) });
    }
    let Ok(root) = parse(Some(text)) else { return Ok(Status { mode: Mode::Off, entries: zeros, off: Some(OffDetail::NoHooks) }) };
    let event = |name: &str| match root.member("hooks").and_then(|h| h.member(name)) {
        Some(Node::Array(entries)) => (entries.len(), entries.iter().any(|e| owned(e, &ctx.skill_dir))),
        _ => (0, false),
    };
    let (ss, se, st) = (event("SessionStart"), event("SessionEnd"), event("Stop"));
    let mode = match (ss.1, st.1) {
        (true, true) => Mode::Both,
        (true, false) => Mode::Monitor,
        (false, true) => Mode::Turn,
        (false, false) => Mode::Off,
    };
    let off = (mode == Mode::Off).then_some(OffDetail::NoHooks);
    Ok(Status { mode, entries: Some(vec![("SessionStart", ss.0), ("SessionEnd", se.0), ("Stop", st.0)]), off })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(windows: bool) -> Context {
        Context {
            agent_type: "claude-code".into(),
            project: "/p".into(),
            skill_dir: "/h/.agents/skills/agmsg".into(),
            windows_wrap: windows,
        }
    }

    fn write(a: FileAnswer) -> String {
        match a {
            FileAnswer::Write(t) => t,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn keeps_members_scalars_and_order() {
        let user = "{\n  \"z\": 1.50,\n  \"hooks\": {\"Stop\": [{\"hooks\":[{\"command\":\"mine \\u00e9\"}]}], \"Pre\": []},\n  \"a\": \"\\/x\"\n}\n";
        let on = write(apply(&ctx(false), Mode::Turn, Some(user)).unwrap());
        let agmsg = r#"{"matcher":"","hooks":[{"type":"command","command":"'/h/.agents/skills/agmsg/scripts/check-inbox.sh' 'claude-code' '/p'"}]}"#;
        assert_eq!(
            on,
            format!(r#"{{"z":1.50,"hooks":{{"Stop":[{{"hooks":[{{"command":"mine \u00e9"}}]}},{agmsg}],"Pre":[]}},"a":"\/x"}}"#)
        );
        let off = write(apply(&ctx(false), Mode::Off, Some(&on)).unwrap());
        assert_eq!(off, r#"{"z":1.50,"hooks":{"Stop":[{"hooks":[{"command":"mine \u00e9"}]}],"Pre":[]},"a":"\/x"}"#);
        assert_eq!(status(&ctx(false), Some(&on)).unwrap().mode, Mode::Turn);
    }

    #[test]
    fn an_event_emptied_moves_to_the_end_and_empty_hooks_go() {
        let on = write(apply(&ctx(false), Mode::Both, None).unwrap());
        assert!(on.starts_with(r#"{"hooks":{"SessionStart":[{"matcher":"""#), "{on}");
        assert_eq!(status(&ctx(false), Some(&on)).unwrap().entries, Some(vec![("SessionStart", 1), ("SessionEnd", 1), ("Stop", 1)]));
        let turn = write(apply(&ctx(false), Mode::Turn, Some(&on)).unwrap());
        assert_eq!(turn.matches("check-inbox").count(), 1);
        assert_eq!(write(apply(&ctx(false), Mode::Off, Some(&on)).unwrap()), "{}");
    }

    #[test]
    fn windows_wrap_as_agmsg() {
        let e = entry("'/a/check-inbox.sh' 'codex' '/p'", true);
        assert!(e.contains(r#""commandWindows":"$b=$env:GIT_BASH; if (-not $b) { $b=$env:AGMSG_BASH }; if (-not $b) { $b='C:\\Program Files\\Git\\bin\\bash.exe' }; & $b -lc '''/a/check-inbox.sh'' ''codex'' ''/p'''"}"#), "{e}");
    }

    #[test]
    fn only_the_exact_form_is_agmsgs() {
        let c = ctx(false);
        let own = entry(&c.script_command("check-inbox.sh"), false);
        let wrapped = entry(&c.script_command("check-inbox.sh"), true);
        let lookalike = entry(&format!("{}; touch '/p/PWNED'", c.script_command("check-inbox.sh")), false);
        let extra = own.replace(r#""matcher":"""#, r#""matcher":"","timeout":1"#);
        let two = own.replace("}]}", r#"},{"type":"command","command":"touch x"}]}"#);
        let quoted = entry("'/h/.agents/skills/agmsg/scripts/check-inbox.sh' 'claude-code' '/p/o'\\''b x'", false);
        let file = |e: &str| format!(r#"{{"hooks":{{"Stop":[{e}]}}}}"#);
        for (e, agmsgs) in [(&own, true), (&wrapped, true), (&quoted, true), (&lookalike, false), (&extra, false), (&two, false)] {
            let mode = status(&c, Some(&file(e))).unwrap().mode;
            assert_eq!(mode == Mode::Turn, agmsgs, "{e}");
            // Not agmsg's: off keeps it, byte for byte.
            let off = write(apply(&c, Mode::Off, Some(&file(e))).unwrap());
            assert_eq!(off == "{}", agmsgs, "{e}: {off}");
        }
        assert_eq!(quoted_words("'a' 'b c' 'o'\\''b'"), Some(vec!["a".into(), "b c".into(), "o'b".into()]));
        for not in ["'a'; x", "'a' b", "'a''b'", "'a'  'b'", "'a"] {
            assert_eq!(quoted_words(not), None, "{not}");
        }
    }

    #[test]
    fn malformed_is_an_error() {
        assert!(apply(&ctx(false), Mode::Turn, Some("{\"a\":")).unwrap_err().message.contains("not valid JSON"));
        assert!(apply(&ctx(false), Mode::Turn, Some("[]")).is_err());
        assert!(apply(&ctx(false), Mode::Turn, Some("{\"hooks\":[]}")).is_err());
        assert!(apply(&ctx(false), Mode::Turn, Some("{\"hooks\":{\"Stop\":{}}}")).is_err());
    }

    /// A key twice where delivery looks members up (the top level, `hooks`) is refused, also when one
    /// spelling escapes it; elsewhere it is the user's and kept.
    #[test]
    fn a_duplicate_key_where_delivery_looks_is_refused() {
        for text in [r#"{"hooks":{"Stop":[],"Stop":[]}}"#, r#"{"hooks":{"Stop":[],"\u0053top":[]}}"#, r#"{"a":1,"hooks":{},"a":2}"#] {
            let e = apply(&ctx(false), Mode::Monitor, Some(text)).unwrap_err();
            assert!(e.message.contains("twice in one object"), "{text}: {}", e.message);
            assert_eq!(status(&ctx(false), Some(text)).unwrap().mode, Mode::Off);
        }
        assert!(apply(&ctx(false), Mode::Turn, Some(r#"{"permissions":{"allow":[],"allow":[]}}"#)).is_ok());
    }
}
