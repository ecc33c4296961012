//! What the environment says about the herdr pane this driver was called from.
//!
//! herdr sets `HERDR_ENV=1`, `HERDR_PANE_ID` (`wN:pX`), `HERDR_SOCKET_PATH` and `HERDR_WORKSPACE_ID` in
//! every pane. They are read only for the ops that ask about the caller itself (detect, spawn,
//! find-by-label) and for routing (which instance the herdr CLI reaches). An empty variable counts as
//! unset, as bash's `${VAR:-}` tests do.

use std::env::{self, VarError};

use crate::id;

fn var(name: &str) -> Result<Option<String>, String> {
    match env::var(name) {
        Ok(value) if value.is_empty() => Ok(None),
        Ok(value) => Ok(Some(value)),
        Err(VarError::NotPresent) => Ok(None),
        Err(VarError::NotUnicode(_)) => Err(format!("herdr: ${name} is not UTF-8")),
    }
}

/// Presence: `HERDR_ENV=1` alone. Whether herdr is installed is `check`'s question, not this one.
pub fn present() -> bool {
    matches!(var("HERDR_ENV"), Ok(Some(v)) if v == "1")
}

/// The instance this session runs in (`HERDR_SOCKET_PATH`), which every recorded id is qualified with;
/// `Err(reason)` when unset or unusable in the id grammar.
pub fn socket() -> Result<String, String> {
    match var("HERDR_SOCKET_PATH")? {
        None => Err("herdr: HERDR_SOCKET_PATH is unset — cannot identify this pane's instance".to_owned()),
        Some(sock) if id::socket_ok(&sock) => Ok(sock),
        Some(_) => Err(concat!(
            "herdr: HERDR_SOCKET_PATH is malformed (not an absolute path without control characters) — ",
            "cannot identify this pane's instance"
        )
        .to_owned()),
    }
}

/// The socket the herdr CLI reaches when the driver runs it: `HERDR_SOCKET_PATH` as the host passed it.
pub fn ambient_socket() -> Option<String> {
    var("HERDR_SOCKET_PATH").ok().flatten()
}

/// `HERDR_PANE_ID`, when it is a pane id of the grammar; anything else is as if unset.
pub fn pane() -> Option<String> {
    var("HERDR_PANE_ID").ok().flatten().filter(|p| id::bare_ok(p))
}

/// `HERDR_WORKSPACE_ID`, which a `window` spawn needs. Only passed on as one argv entry.
pub fn workspace() -> Option<String> {
    var("HERDR_WORKSPACE_ID").ok().flatten()
}

/// The team agmsg's spawn hands in (`AGMSG_SPAWN_TEAM`), when it is a valid team name.
pub fn spawn_team() -> Option<String> {
    var("AGMSG_SPAWN_TEAM").ok().flatten().filter(|team| agmsg_guest_sdk::check_name("team", team).is_ok())
}
