//! What the environment says about the tmux session this driver was called from.
//!
//! tmux sets `$TMUX` (`<socket>,<pid>,<session>`) and `$TMUX_PANE` (`%N`) in every pane. They are read
//! here only for the ops that ask about the caller itself (detect, spawn, find-by-label); ops on a
//! recorded id never consult them, because the id says which server it lives on. An empty variable
//! counts as unset, as bash's `-n "${TMUX:-}"` does.

use std::env::{self, VarError};

use crate::id;

/// One environment variable.
pub enum Var {
    Unset,
    Set(String),
    /// Set, but not UTF-8: present, and unusable as an id.
    Garbled,
}

pub fn var(name: &str) -> Var {
    match env::var(name) {
        Ok(value) if value.is_empty() => Var::Unset,
        Ok(value) => Var::Set(value),
        Err(VarError::NotPresent) => Var::Unset,
        Err(VarError::NotUnicode(_)) => Var::Garbled,
    }
}

/// The socket of `$TMUX`: `Ok(None)` when not under tmux, `Err(reason)` when under tmux but its socket
/// could not name a server in the id grammar.
pub fn socket() -> Result<Option<String>, String> {
    match var("TMUX") {
        Var::Unset => Ok(None),
        Var::Garbled => Err("tmux: $TMUX is not UTF-8; cannot name this server".to_owned()),
        Var::Set(value) => {
            let socket = id::socket_of_env(&value);
            if id::socket_ok(socket) {
                Ok(Some(socket.to_owned()))
            } else {
                Err(format!("tmux: the socket in $TMUX ({socket:?}) is not an absolute path without control characters or ','"))
            }
        }
    }
}

/// `$TMUX_PANE`, when it is a well-formed pane id: `Ok(None)` when unset, `Err(reason)` when malformed.
pub fn pane() -> Result<Option<String>, String> {
    match var("TMUX_PANE") {
        Var::Unset => Ok(None),
        Var::Garbled => Err("tmux: $TMUX_PANE is not UTF-8".to_owned()),
        Var::Set(pane) if id::kind_of(&pane) == Some(id::Kind::Pane) => Ok(Some(pane)),
        Var::Set(pane) => Err(format!("tmux: $TMUX_PANE ({pane:?}) is not a pane id (%N)")),
    }
}
