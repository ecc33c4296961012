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

/// Whether `token` can travel as an id or a delivery cursor (§2.2): non-empty, single-line,
/// whitespace-free, printable, and of a sane length.
pub fn is_transport_token(token: &str) -> bool {
    const MAX_TOKEN_LEN: usize = 512;
    !token.is_empty()
        && token.len() <= MAX_TOKEN_LEN
        && token.chars().all(|c| !c.is_whitespace() && !c.is_control())
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for good in ["alice", "team-1", "bob.smith", "日本", "-dash"] {
            assert!(check_name("agent", good).is_ok(), "{good}");
        }
        for bad in ["", "a:b", "a/b", "a\\b", "..", "a..b", "a\nb", "a\tb", "\u{7f}"] {
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
}
