//! The one grammar every tmux id passes before it reaches `tmux`.
//!
//! A pane id (`%N`) or window id (`@N`) is unique within one tmux server and nowhere else: two servers
//! both hold `%0` (agmsg #1051). So an id may carry the server that owns it, as `<socket>:%N`, and every
//! call on it goes to that server with `tmux -S <socket>`. The bare `%N` / `@N` of records written before
//! ids carried a socket is still accepted; it is asked of the ambient server, and `pane_state` refuses to
//! call such a pane gone.
//!
//! The socket is split off at the LAST `:` (a socket path may contain one), and only the bare part ever
//! goes to `-t`: `tmux kill-pane -t '<socket>:%0'` reads the target as session:window and silently does
//! nothing.
//!
//! What a socket may be, and why it is stricter than agmsg's bash grammar (which asks only for a
//! non-empty socket without control characters):
//! - non-empty, and no control characters: a record is one TAB-separated line, and a control byte is
//!   also the first thing a hostile id would smuggle;
//! - no `,`: tmux publishes the socket in `$TMUX` as `<socket>,<pid>,<session>` and agmsg reads it back
//!   with `${TMUX%%,*}`, so a socket with a comma could never have been produced by `detect` or `spawn`;
//! - absolute: the host runs tmux with cwd `/`, not the caller's directory, so a relative socket would
//!   name a different path here than where it was recorded. Asking the wrong path gets "no server
//!   running", which `pane_state` must read as `gone`, and `gone` deletes the placement record.
//!
//! Anything else (`%9;kill`, `alice`, `%`, `:%3`, `/tmp/s:%3x`) is refused before a program runs.

/// Which kind of tmux object an id names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Pane,
    Window,
}

impl Kind {
    /// The format field through which tmux reports this kind's own id: the identity canary of a query.
    /// Asking `#{pane_id}` about a window returns its active pane, so each kind needs its own field.
    pub fn identity_field(self) -> &'static str {
        match self {
            Kind::Pane => "#{pane_id}",
            Kind::Window => "#{window_id}",
        }
    }
}

/// A validated id, borrowing from the string it was parsed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TmuxId<'a> {
    /// The server's socket, when the id names one.
    pub socket: Option<&'a str>,
    /// `%N` or `@N`: what goes to `-t`.
    pub bare: &'a str,
    pub kind: Kind,
}

impl TmuxId<'_> {
    /// `other` (a bare id on the same server), exactly as server-qualified as this id: a socket-less
    /// question gets a socket-less answer rather than a precision it does not have.
    pub fn sibling(&self, other: &str) -> String {
        qualify(self.socket, other)
    }
}

/// Parse `id`, or `None` when it is not in the grammar.
pub fn parse(id: &str) -> Option<TmuxId<'_>> {
    let (socket, bare) = match id.rsplit_once(':') {
        Some((socket, bare)) => (Some(socket), bare),
        None => (None, id),
    };
    if socket.is_some_and(|s| !socket_ok(s)) {
        return None;
    }
    let kind = kind_of(bare)?;
    Some(TmuxId { socket, bare, kind })
}

/// The kind of a bare id: `%` or `@` followed by one or more ASCII digits, and nothing else.
pub fn kind_of(bare: &str) -> Option<Kind> {
    let kind = match bare.as_bytes().first()? {
        b'%' => Kind::Pane,
        b'@' => Kind::Window,
        _ => return None,
    };
    let digits = &bare[1..];
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then_some(kind)
}

/// Whether `socket` may name a server (see the module docs).
pub fn socket_ok(socket: &str) -> bool {
    socket.starts_with('/') && !socket.chars().any(|c| c.is_control() || c == ',')
}

/// The socket part of a `$TMUX` value (`<socket>,<pid>,<session>`): bash's `${TMUX%%,*}`.
pub fn socket_of_env(tmux: &str) -> &str {
    tmux.split_once(',').map_or(tmux, |(socket, _)| socket)
}

/// `<socket>:<bare>`, or `bare` alone without a socket.
pub fn qualify(socket: Option<&str>, bare: &str) -> String {
    match socket {
        Some(socket) => format!("{socket}:{bare}"),
        None => bare.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_qualified_and_legacy_ids() {
        let id = parse("/tmp/tmux-1000/default:%3").expect("qualified pane");
        assert_eq!((id.socket, id.bare, id.kind), (Some("/tmp/tmux-1000/default"), "%3", Kind::Pane));
        let id = parse("@12").expect("legacy window");
        assert_eq!((id.socket, id.bare, id.kind), (None, "@12", Kind::Window));
        // Split at the last colon; a space in a socket path is ordinary.
        let id = parse("/home/a b/x:y:%0").expect("colon in socket");
        assert_eq!((id.socket, id.bare), (Some("/home/a b/x:y"), "%0"));
    }

    #[test]
    fn refuses_malformed_and_hostile_ids() {
        for bad in [
            "",
            "%",
            "@",
            "%9;kill",
            "alice",
            ":%3",
            "/tmp/s:%3x",
            "/tmp/s:",
            "%3 ",
            " %3",
            "%-1",
            "%+1",
            "%٣",
            "tmp/s:%3",
            "/tmp/a,b:%3",
            "/tmp/\ts:%3",
            "/tmp/s\n:%3",
            "/tmp/s\u{7f}:%3",
            "/tmp/s:%3\n",
            "#3",
        ] {
            assert!(parse(bad).is_none(), "{bad:?} must be refused");
        }
    }

    #[test]
    fn reads_the_socket_out_of_tmux_env() {
        assert_eq!(socket_of_env("/tmp/tmux-1000/default,4242,0"), "/tmp/tmux-1000/default");
        assert_eq!(socket_of_env("/tmp/x"), "/tmp/x");
        assert_eq!(socket_of_env(",1,2"), "");
    }

    #[test]
    fn answers_as_qualified_as_asked() {
        let q = parse("/s:%1").expect("valid");
        assert_eq!(q.sibling("@2"), "/s:@2");
        let b = parse("%1").expect("valid");
        assert_eq!(b.sibling("@2"), "@2");
    }
}
