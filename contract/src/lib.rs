//! Rules of the agmsg driver contract shared by the host and by drivers (through the guest SDK), so that
//! both sides refuse exactly the same input.
//!
//! It compiles for the host and for `wasm32-wasip2` alike; the `records` feature adds agmsg's JSONL
//! record lines (and serde).

use std::fmt;

/// The §1.4 status codes, with their names and exit codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    MissingDeps,
    CorruptState,
    RuntimeError,
}

impl Status {
    /// The status word printed as the last stdout line of a control op.
    pub fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::MissingDeps => "missing_deps",
            Status::CorruptState => "corrupt_state",
            Status::RuntimeError => "runtime_error",
        }
    }

    /// The process exit code that goes with the status.
    pub fn exit_code(self) -> u8 {
        match self {
            Status::Ok => 0,
            Status::MissingDeps => 10,
            Status::CorruptState => 12,
            Status::RuntimeError => 13,
        }
    }
}

/// Why a team or agent name was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameError {
    pub what: &'static str,
    pub name: String,
    pub reason: &'static str,
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid {} name {:?}: {}", self.what, self.name, self.reason)
    }
}

impl std::error::Error for NameError {}

/// Check a team or agent name. `what` names the position (`team`, `agent`, `sender`, `recipient`) for
/// the error message.
///
/// Names become path segments (per-team partitions) and halves of `<team>:<agent>` pairs, so a name is
/// refused when it is empty or contains `:`, `/`, `\`, `..` or a control character.
pub fn check_name(what: &'static str, name: &str) -> Result<(), NameError> {
    let refuse = |reason| Err(NameError { what, name: name.to_owned(), reason });
    if name.is_empty() {
        return refuse("must not be empty");
    }
    if name.contains(':') {
        return refuse("must not contain ':'");
    }
    if name.contains('/') || name.contains('\\') {
        return refuse("must not contain '/' or '\\'");
    }
    if name.contains("..") {
        return refuse("must not contain '..'");
    }
    // A name is a path segment (`teams/<team>/config.json`, a partition): `.` would be its parent.
    if name == "." {
        return refuse("must not be '.'");
    }
    if name.chars().any(char::is_control) {
        return refuse("must not contain control characters");
    }
    Ok(())
}

/// Split a `<team>:<agent>` subscription pair at its first `:` and check both halves.
pub fn split_pair(pair: &str) -> Result<(&str, &str), String> {
    let (team, agent) = pair.split_once(':').ok_or_else(|| format!("not a team:agent pair: {pair:?}"))?;
    check_name("team", team).map_err(|e| format!("not a team:agent pair: {pair:?} ({e})"))?;
    check_name("agent", agent).map_err(|e| format!("not a team:agent pair: {pair:?} ({e})"))?;
    Ok((team, agent))
}

/// Why the pairs of one watch call were refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PairsError {
    /// No pair at all.
    Empty,
    /// A pair that is not `<team>:<agent>` with valid names (the message says which).
    Pair(String),
    /// Two pairs of different teams.
    Teams { first: String, other: String },
}

impl fmt::Display for PairsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PairsError::Empty => f.write_str("at least one team:agent pair is required"),
            PairsError::Pair(message) => f.write_str(message),
            PairsError::Teams { first, other } => {
                write!(f, "one call cannot span teams ({first}, {other})")
            }
        }
    }
}

impl std::error::Error for PairsError {}

/// Check the already split `(team, agent)` pairs of one watch call and return their team: at least one
/// pair, valid names, and one team for all (a call reads one team's store partition).
pub fn check_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<&'a str, PairsError> {
    let mut first = None;
    for (team, agent) in pairs {
        check_name("team", team).map_err(|e| PairsError::Pair(e.to_string()))?;
        check_name("agent", agent).map_err(|e| PairsError::Pair(e.to_string()))?;
        let first = *first.get_or_insert(team);
        if team != first {
            return Err(PairsError::Teams { first: first.to_owned(), other: team.to_owned() });
        }
    }
    first.ok_or(PairsError::Empty)
}

/// Split the `<team>:<agent>` arguments of one watch call ([`split_pair`]) and check them as
/// [`check_pairs`] does, in argument order.
pub fn split_pairs<S: AsRef<str>>(args: &[S]) -> Result<Vec<(&str, &str)>, PairsError> {
    let mut pairs: Vec<(&str, &str)> = Vec::with_capacity(args.len());
    for arg in args {
        let (team, agent) = split_pair(arg.as_ref()).map_err(PairsError::Pair)?;
        if let Some(&(first, _)) = pairs.first()
            && team != first
        {
            return Err(PairsError::Teams { first: first.to_owned(), other: team.to_owned() });
        }
        pairs.push((team, agent));
    }
    if pairs.is_empty() {
        return Err(PairsError::Empty);
    }
    Ok(pairs)
}

/// The driver-name alphabet, as agmsg's registry matches driver directories.
pub const DRIVER_NAME_PATTERN: &str = "[a-zA-Z0-9_-]+";

/// A name refused by [`check_driver_name`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverNameError {
    pub name: String,
}

impl fmt::Display for DriverNameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "name must match {DRIVER_NAME_PATTERN}, not {:?}", self.name)
    }
}

impl std::error::Error for DriverNameError {}

/// Check a driver's name (storage or terminal, bundled or plugin): [`DRIVER_NAME_PATTERN`], the names
/// agmsg's registry accepts. A driver is selected by it and it is a directory name, so it is never a
/// path and never empty.
pub fn check_driver_name(name: &str) -> Result<(), DriverNameError> {
    if is_driver_name(name) { Ok(()) } else { Err(DriverNameError { name: name.to_owned() }) }
}

/// Whether [`check_driver_name`] accepts `name`.
pub fn is_driver_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The §2.3 failure classes of a terminal op, with their exit codes (the terminal counterpart of
/// [`Status`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TermFailKind {
    /// The terminal is unreachable or could not be asked (including a driver that trapped).
    Unreachable,
    /// The terminal answered, but the operation failed.
    Failed,
    /// No path: unsupported here, a malformed or foreign id, an op the driver does not implement.
    Unsupported,
    /// From `check` only: something the driver needs is not installed.
    MissingDeps,
}

impl TermFailKind {
    /// The process exit code: 10 unreachable or missing deps, 12 failed, 13 unsupported.
    pub fn exit_code(self) -> u8 {
        match self {
            TermFailKind::Unreachable | TermFailKind::MissingDeps => 10,
            TermFailKind::Failed => 12,
            TermFailKind::Unsupported => 13,
        }
    }
}

/// What starts a §1.6 directive line on stdout; the JSON object follows
/// ([`records::directive`] with the `records` feature).
pub const DIRECTIVE_PREFIX: &str = "AGMSG-DIRECTIVE: ";

/// `value` as one POSIX shell word in single quotes, each `'` as `'\''` (agmsg's `agmsg_shq`): nothing
/// in it is read as syntax, line breaks included. Shared by the host and the guest SDK.
pub fn shell_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}

/// Whether `value` is one shell word as it is: non-empty, only ASCII letters, digits and `/._-+:,=@%`
/// (nothing a shell expands, splits or reads as syntax, even when words are joined by spaces).
pub fn is_plain_word(value: &str) -> bool {
    !value.is_empty() && value.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+:,=@%".contains(&b))
}

/// `value` as one shell word: as it is when [`is_plain_word`], else [`shell_quote`]d. For command lines a
/// person or a shell reads (commands users paste, a boot typed into a terminal's shell).
pub fn shell_word(value: &str) -> String {
    if is_plain_word(value) { value.to_owned() } else { shell_quote(value) }
}

/// bash's `printf %q`, which agmsg uses to quote the words of a command it prints for an agent to run
/// (the monitor directive's `watch.sh` command, opencode's rule): `''` when empty; text with a control,
/// bidi or line-separator character as one ANSI-C word, `$'...'`, each such character escaped (`\n`,
/// `\E`, `\u202e`; bash itself would print C1, bidi and separator characters raw), so the word is one
/// printable line whatever the text holds; else each character the shell reads as syntax
/// backslash-escaped. Shared by the host and the guest SDK: one quoting for every directive.
pub fn printf_q(value: &str) -> String {
    if value.is_empty() {
        return "''".to_owned();
    }
    let mut out = String::with_capacity(value.len() + 8);
    if value.chars().any(is_unprintable) {
        out.push_str("$'");
        for c in value.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\'' => out.push_str("\\'"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                '\u{1b}' => out.push_str("\\E"),
                '\u{7}' => out.push_str("\\a"),
                '\u{8}' => out.push_str("\\b"),
                '\u{b}' => out.push_str("\\v"),
                '\u{c}' => out.push_str("\\f"),
                c if (c as u32) < 0x80 && is_unprintable(c) => out.push_str(&format!("\\{:03o}", c as u32)),
                c if is_unprintable(c) => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('\'');
        return out;
    }
    for (i, c) in value.chars().enumerate() {
        let special = matches!(
            c,
            ' ' | '\''
                | '"'
                | '\\'
                | '|'
                | '&'
                | ';'
                | '('
                | ')'
                | '<'
                | '>'
                | '!'
                | '{'
                | '}'
                | '*'
                | '['
                | '?'
                | ']'
                | '^'
                | '$'
                | '`'
                | ','
        ) || (i == 0 && matches!(c, '~' | '#'));
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The text `word` is the [`printf_q`] of, if it is one: `Some(text)` exactly when
/// `printf_q(&text) == word`. The host reads back the one word a plug may fill into a directive (a
/// session id) this way: anything that is not exactly one such word (a second word, an operator, an
/// unescaped quote) is `None`.
pub fn printf_q_word(word: &str) -> Option<String> {
    let text = if word == "''" {
        String::new()
    } else if let Some(body) = word.strip_prefix("$'").and_then(|w| w.strip_suffix('\'')) {
        let mut text = String::new();
        let mut chars = body.chars();
        while let Some(c) = chars.next() {
            if c != '\\' {
                text.push(c);
                continue;
            }
            match chars.next()? {
                '\\' => text.push('\\'),
                '\'' => text.push('\''),
                'n' => text.push('\n'),
                't' => text.push('\t'),
                'r' => text.push('\r'),
                'E' => text.push('\u{1b}'),
                'a' => text.push('\u{7}'),
                'b' => text.push('\u{8}'),
                'v' => text.push('\u{b}'),
                'f' => text.push('\u{c}'),
                'u' => {
                    let hex: String = chars.by_ref().take(4).collect();
                    text.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                }
                d @ '0'..='7' => {
                    let rest: String = chars.by_ref().take(2).collect();
                    text.push(char::from_u32(u32::from_str_radix(&format!("{d}{rest}"), 8).ok()?)?);
                }
                _ => return None,
            }
        }
        text
    } else {
        let mut text = String::new();
        let mut chars = word.chars();
        while let Some(c) = chars.next() {
            text.push(if c == '\\' { chars.next()? } else { c });
        }
        text
    };
    (printf_q(&text) == word).then_some(text)
}

/// The texts agmsg prints for a running agent to act on when delivery changes: the directives. They
/// are the host's: a delivery plug may say one only exactly as written here (the host refuses any
/// other line that reads as a directive), with nothing filled in but the words the host checks
/// (agmsg's directory, the project, the type, one session id word). Bundled plugs build them with
/// these functions, so the two sides cannot drift.
pub mod delivery_texts {
    use super::printf_q;

    /// The tools a runtime starts a resident watcher with: Claude Code's `Monitor`, Grok Build's `monitor`.
    pub const WATCH_TOOLS: [&str; 2] = ["Monitor", "monitor"];

    /// `<skill_dir>/scripts/watch.sh <session> <project> <type>`, each word quoted by [`printf_q`]:
    /// the command a start directive hands the agent.
    pub fn watch_command(skill_dir: &str, session_id: &str, project: &str, agent_type: &str) -> String {
        let watch = format!("{skill_dir}/scripts/watch.sh");
        [watch.as_str(), session_id, project, agent_type].map(printf_q).join(" ")
    }

    /// The directive that has the running session start its watcher with `tool` (one of
    /// [`WATCH_TOOLS`]) now, running `watch_command`: four lines, then a blank line or the end.
    pub fn start_watch_directive(tool: &str, watch_command: &str) -> [String; 4] {
        [
            format!("AGMSG-DIRECTIVE: For this running session, invoke the {tool} tool now with:"),
            format!("  command: {watch_command}"),
            "  description: agmsg inbox stream".to_owned(),
            "  persistent: true".to_owned(),
        ]
    }

    /// agmsg's default stop directive (`emit_stop_directive`, a blank line first), for runtimes whose
    /// watcher is a Monitor task.
    pub const STOP_TASK_DIRECTIVE: &str = "\nAGMSG-DIRECTIVE: If an agmsg watch Monitor task is running in this session,\n\
         find it with TaskList (description starts with \"agmsg inbox stream\") and\n\
         stop it with TaskStop.";

    /// The stop directive for a watcher run by Grok Build's `monitor` tool.
    pub const STOP_MONITOR_TOOL_DIRECTIVE: &str = "\nAGMSG-DIRECTIVE: If an agmsg inbox watcher is streaming into this session via\n\
         the monitor tool, stop it with kill_command_or_subagent on its task id.";

    /// Every stop directive there is.
    pub const STOP_DIRECTIVES: [&str; 2] = [STOP_TASK_DIRECTIVE, STOP_MONITOR_TOOL_DIRECTIVE];
}

/// agmsg's `terminal.conf` reader (§6.1: read-only `key=value`, never sourced), shared by the host,
/// which reads a driver's manifest, and drivers, which describe themselves from the same file.
pub mod terminal_conf {
    /// The priority of a manifest whose `priority` is missing or not a number, as in agmsg.
    pub const DEFAULT_PRIORITY: u32 = 50;

    /// The value of the first line `^\s*key\s*=`, with surrounding spaces and one pair of double
    /// quotes stripped; `#` lines are comments.
    pub fn value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
        text.lines().find_map(|line| {
            let (k, v) = line.split_once('=')?;
            if k.trim() != key || k.trim_start().starts_with('#') {
                return None;
            }
            let v = v.trim();
            Some(v.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(v))
        })
    }

    /// A space-separated list value (`capabilities`, `programs`, `env`); missing is empty.
    pub fn words<'a>(text: &'a str, key: &str) -> Vec<&'a str> {
        value(text, key).map(|v| v.split_whitespace().collect()).unwrap_or_default()
    }

    /// `priority`, or [`DEFAULT_PRIORITY`] when it is missing or not a number.
    pub fn priority(text: &str) -> u32 {
        value(text, "priority").and_then(|p| p.parse().ok()).unwrap_or(DEFAULT_PRIORITY)
    }
}

/// A character that must never reach a terminal, a log or a line another program parses as it is: a
/// control (C0, DEL, C1), a bidi override, embedding, isolate or mark, or a line or paragraph separator.
/// One set for every rule that prints (ids, directives, `printf %q`, the host's display).
pub fn is_unprintable(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}')
}

/// Whether `token` can travel as an id or a delivery cursor (§2.2): non-empty, single-line,
/// whitespace-free, printable (no [`is_unprintable`] character), and of a sane length.
pub fn is_transport_token(token: &str) -> bool {
    const MAX_TOKEN_LEN: usize = 512;
    !token.is_empty() && token.len() <= MAX_TOKEN_LEN && token.chars().all(|c| !c.is_whitespace() && !is_unprintable(c))
}

/// The values of agmsg's remote-sync records (spec §2.8), one rule each, for the host, the guest SDK and
/// the sealer alike.
pub mod sync {
    /// A canonical decimal sequence or cursor: digits, no leading zero (but `0` itself), at most
    /// 2^63-1.
    pub fn is_sequence(text: &str) -> bool {
        !text.is_empty()
            && text.len() <= 19
            && text.bytes().all(|b| b.is_ascii_digit())
            && (text == "0" || !text.starts_with('0'))
            && text.parse::<i64>().is_ok()
    }

    /// A lowercase hyphenated UUID of `version` (7: binding and member ids, 4: wire ids) with the RFC
    /// 9562 variant, the only form agmsg's sync accepts.
    pub fn is_lower_uuid(text: &str, version: u8) -> bool {
        let b = text.as_bytes();
        b.len() == 36
            && b.iter().enumerate().all(|(i, &c)| match i {
                8 | 13 | 18 | 23 => c == b'-',
                _ => c.is_ascii_digit() || (b'a'..=b'f').contains(&c),
            })
            && b[14] == b'0' + version
            && matches!(b[19], b'8' | b'9' | b'a' | b'b')
    }

    /// agmsg's age-v1 key id: `^[a-z0-9][a-z0-9._-]{0,63}$`.
    pub fn is_key_id(text: &str) -> bool {
        let b = text.as_bytes();
        (1..=64).contains(&b.len())
            && matches!(b[0], b'a'..=b'z' | b'0'..=b'9')
            && b.iter().all(|c| matches!(c, b'a'..=b'z' | b'0'..=b'9' | b'.' | b'_' | b'-'))
    }

    /// The form of an age X25519 recipient agmsg's manifests hold: `^age1[0-9a-z]{58}$`.
    pub fn is_recipient_form(text: &str) -> bool {
        text.len() == 62 && text.starts_with("age1") && text.bytes().skip(4).all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'z'))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn sync_values_have_one_form_each() {
            assert!(is_sequence("0") && is_sequence("42") && is_sequence("9223372036854775807"));
            for bad in ["", "007", "-1", "+1", "1.0", "9223372036854775808", " 1", "00000000000000000001"] {
                assert!(!is_sequence(bad), "{bad:?}");
            }
            assert!(is_lower_uuid("0196f3a2-7c1e-7000-8000-000000000000", 7));
            assert!(is_lower_uuid("6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b", 4));
            assert!(!is_lower_uuid("0196F3A2-7C1E-7000-8000-000000000000", 7));
            assert!(!is_lower_uuid("6f1c2a3b-4d5e-4f60-ca7b-9c0d1e2f3a4b", 4));
            assert!(is_key_id("k1") && is_key_id("team.key-2_x") && !is_key_id("K1") && !is_key_id("-k") && !is_key_id(&"k".repeat(65)));
            assert!(is_recipient_form(&format!("age1{}", "q".repeat(58))) && !is_recipient_form("age1Q"));
        }
    }
}

/// agmsg's JSONL records, with their keys in the order agmsg writes them.
#[cfg(feature = "records")]
pub mod records {
    use serde::Serialize;

    #[derive(Serialize)]
    struct Sent<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        id: &'a str,
        team: &'a str,
        from: &'a str,
        to: &'a str,
        body: &'a str,
        at: &'a str,
    }

    #[derive(Serialize)]
    struct Read<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        id: &'a str,
        msg_id: &'a str,
        team: &'a str,
        agent: &'a str,
        at: &'a str,
    }

    #[derive(Serialize)]
    struct Cursor<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        cursor: &'a str,
    }

    fn line(record: &impl Serialize) -> String {
        serde_json::to_string(record).expect("records of strings always serialize")
    }

    /// An event of agmsg's v1 log, as a line's JSON object holds it: every field a string. The one
    /// reading of a v1 record, for the host (`import` files) and the jsonl driver (its log).
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub enum V1Event {
        MessageSent { id: String, team: String, from: String, to: String, body: String, at: String },
        MessageRead { id: String, msg_id: String, team: String, agent: String, at: String },
    }

    /// Why a JSON object is not a v1 record (each reader words it its own way).
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub enum V1Error {
        /// It has no string `type`.
        NoType,
        /// A `kind` record whose `field` is missing or not a string (the first such, in agmsg's key
        /// order).
        NotAString { kind: &'static str, field: &'static str },
    }

    /// The v1 event `object` holds: `Ok(None)` for a record of another type (which v1 readers skip);
    /// keys beyond a record's own are ignored.
    pub fn v1_event(object: &serde_json::Map<String, serde_json::Value>) -> Result<Option<V1Event>, V1Error> {
        let kind = object.get("type").and_then(serde_json::Value::as_str).ok_or(V1Error::NoType)?;
        let field = |kind: &'static str, field: &'static str| {
            object.get(field).and_then(serde_json::Value::as_str).map(str::to_owned).ok_or(V1Error::NotAString { kind, field })
        };
        Ok(Some(match kind {
            "message_sent" => {
                let f = |name| field("message_sent", name);
                V1Event::MessageSent { id: f("id")?, team: f("team")?, from: f("from")?, to: f("to")?, body: f("body")?, at: f("at")? }
            }
            "message_read" => {
                let f = |name| field("message_read", name);
                V1Event::MessageRead { id: f("id")?, msg_id: f("msg_id")?, team: f("team")?, agent: f("agent")?, at: f("at")? }
            }
            _ => return Ok(None),
        }))
    }

    /// `{"type":"message_sent","id",...}` with the keys in the order `type,id,team,from,to,body,at`.
    pub fn message_sent(id: &str, team: &str, from: &str, to: &str, body: &str, at: &str) -> String {
        line(&Sent { kind: "message_sent", id, team, from, to, body, at })
    }

    /// `{"type":"message_read",...}` in the spec's order `type,id,msg_id,team,agent,at`.
    pub fn message_read(id: &str, msg_id: &str, team: &str, agent: &str, at: &str) -> String {
        line(&Read { kind: "message_read", id, msg_id, team, agent, at })
    }

    /// The trailing `{"type":"cursor","cursor":"..."}` record of a watch.
    pub fn cursor(cursor: &str) -> String {
        line(&Cursor { kind: "cursor", cursor })
    }

    /// Keys in alphabetical order, as agmsg's drivers print them.
    #[derive(Serialize)]
    struct Directive<'a> {
        #[serde(skip_serializing_if = "Option::is_none")]
        commands: Option<&'a [String]>,
        driver: &'a str,
        reason: &'a str,
        #[serde(rename = "type")]
        kind: &'a str,
    }

    /// A §1.6 directive line (without its newline): [`crate::DIRECTIVE_PREFIX`] and the JSON object
    /// `{"commands":[...],"driver":...,"reason":...,"type":...}`; `commands` is left out when `None`.
    /// The caller makes the strings safe to print.
    pub fn directive(kind: &str, driver: &str, commands: Option<&[String]>, reason: &str) -> String {
        format!("{}{}", crate::DIRECTIVE_PREFIX, line(&Directive { commands, driver, reason, kind }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for good in ["alice", "team-1", "bob.smith", "日本", "-dash"] {
            assert!(check_name("agent", good).is_ok(), "{good}");
        }
        for bad in ["", "a:b", "a/b", "a\\b", ".", "..", "a..b", "a\nb", "a\tb", "\u{7f}"] {
            assert!(check_name("agent", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn pairs() {
        assert_eq!(split_pair("t:a").unwrap(), ("t", "a"));
        assert!(split_pair("t").is_err());
        assert!(split_pair("t:a:b").is_err());
        assert!(split_pair(":a").is_err());
    }

    #[test]
    fn watch_pairs_span_one_team() {
        assert_eq!(split_pairs(&["t:a", "t:b"]).unwrap(), [("t", "a"), ("t", "b")]);
        assert_eq!(split_pairs::<&str>(&[]), Err(PairsError::Empty));
        assert_eq!(split_pairs(&["t:a", "u:b"]).unwrap_err().to_string(), "one call cannot span teams (t, u)");
        assert!(matches!(split_pairs(&["t:a", "t:"]), Err(PairsError::Pair(_))));
        assert_eq!(check_pairs([("t", "a"), ("t", "b")]), Ok("t"));
        assert_eq!(check_pairs([]), Err(PairsError::Empty));
        assert_eq!(check_pairs([("t", "a"), ("u", "a")]).unwrap_err().to_string(), "one call cannot span teams (t, u)");
        assert_eq!(check_pairs([("t", "a/b")]).unwrap_err().to_string(), r#"invalid agent name "a/b": must not contain '/' or '\'"#);
    }

    #[test]
    fn driver_names() {
        // Every bundled driver, the names the tests use, and agmsg's own alphabet.
        for good in ["sqlite", "jsonl", "tmux", "plain", "herdr", "orca", "hostile-text", "scaffold-term", "case1", "My_Driver"] {
            assert!(check_driver_name(good).is_ok(), "{good}");
        }
        for bad in ["", "../x", "a/b", "Bad Name", "a.b", "a:b", "日本", "x\n"] {
            assert_eq!(check_driver_name(bad).unwrap_err().to_string(), format!("name must match [a-zA-Z0-9_-]+, not {bad:?}"));
        }
    }

    #[test]
    fn terminal_fail_kinds() {
        let codes = [TermFailKind::Unreachable, TermFailKind::Failed, TermFailKind::Unsupported, TermFailKind::MissingDeps]
            .map(TermFailKind::exit_code);
        assert_eq!(codes, [10, 12, 13, 10]);
    }

    #[test]
    fn terminal_conf() {
        let conf = "# name=commented\nname=tmux\n priority = \"20\"\nbackend=tmux pane/window\nbackend=ignored\ncapabilities=spawn  peek\n";
        assert_eq!(terminal_conf::value(conf, "name"), Some("tmux"));
        assert_eq!(terminal_conf::priority(conf), 20);
        assert_eq!(terminal_conf::value(conf, "backend"), Some("tmux pane/window"));
        assert_eq!(terminal_conf::words(conf, "capabilities"), ["spawn", "peek"]);
        assert!(terminal_conf::words(conf, "env").is_empty());
        assert_eq!(terminal_conf::priority("priority=high"), terminal_conf::DEFAULT_PRIORITY);
    }

    #[cfg(feature = "records")]
    #[test]
    fn directives() {
        let commands = ["apt-get install tmux".to_owned()];
        assert_eq!(
            records::directive("install_deps", "sqlite", Some(&commands), "no tmux"),
            r#"AGMSG-DIRECTIVE: {"commands":["apt-get install tmux"],"driver":"sqlite","reason":"no tmux","type":"install_deps"}"#
        );
        assert_eq!(
            records::directive("install_deps", "terminals/tmux", None, "tmux not found"),
            r#"AGMSG-DIRECTIVE: {"driver":"terminals/tmux","reason":"tmux not found","type":"install_deps"}"#
        );
    }

    #[test]
    fn tokens() {
        assert!(is_transport_token("12345"));
        assert!(is_transport_token("0192abcd-0000-7000-8000-000000000000"));
        for bad in ["", "a b", "a\nb", "a\tb", "\u{0}"] {
            assert!(!is_transport_token(bad), "{bad:?}");
        }
    }

    #[test]
    fn statuses() {
        assert_eq!(Status::MissingDeps.exit_code(), 10);
        assert_eq!(Status::CorruptState.word(), "corrupt_state");
    }

    #[test]
    fn printf_q_word_reads_back_exactly_one_word() {
        for text in ["", "plain-id", "/p/o'brien x", "$(touch /tmp/x) `id`", "a\nb'\x1b[2J\u{202e}\u{1}", "~x", "#a", "é"] {
            assert_eq!(printf_q_word(&printf_q(text)).as_deref(), Some(text), "{text:?}");
        }
        for not_one in ["a b", "x;touch y", "$(id)", "'a'", "a\\", "$'a", "$'\\q'", "\\a", "x'", "a\u{200b}b\u{202e}"] {
            assert_eq!(printf_q_word(not_one), None, "{not_one:?}");
        }
    }

    #[test]
    fn printf_q_is_bashs_and_one_printable_word() {
        for (text, q) in [
            ("a,b", r"a\,b"),
            ("~x", r"\~x"),
            ("a~b", "a~b"),
            ("#a", r"\#a"),
            ("a=b", "a=b"),
            ("é", "é"),
            ("it's", r"it\'s"),
            ("/tmp/p q", r"/tmp/p\ q"),
            ("", "''"),
        ] {
            assert_eq!(printf_q(text), q, "{text}");
        }
        assert_eq!(printf_q("a\nb'\x1b[2J\u{202e}\u{1}"), r"$'a\nb\'\E[2J\u202e\001'");
        // bash reads each word back as the text itself, and the word is one line of printable text.
        let texts = [
            "plain-id",
            "/p/o'brien x",
            "$(touch /tmp/x) `id` \"q\" \\",
            "a\nAGMSG-DIRECTIVE: forged\n",
            "\x1b]0;t\x07\r\t\u{7f}\u{85}\u{202e}x",
        ];
        for text in texts {
            let word = printf_q(text);
            assert!(!word.chars().any(|c| c.is_control() || c == '\u{202e}'), "{word:?}");
            let Ok(out) = std::process::Command::new("bash").arg("-c").arg(format!("printf %s {word}")).output() else {
                return;
            };
            assert_eq!(String::from_utf8(out.stdout).unwrap(), text, "{word}");
            if !text.chars().any(|c| c.is_control() || c == '\u{202e}') {
                let bash = std::process::Command::new("bash").arg("-c").arg("printf %q \"$1\"").arg("-").arg(text).output().unwrap();
                assert_eq!(String::from_utf8(bash.stdout).unwrap(), word, "bash's own printf %q of {text:?}");
            }
        }
    }
}
