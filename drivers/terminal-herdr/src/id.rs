//! The one grammar every herdr id passes before it reaches `herdr`.
//!
//! A herdr pane id is `w<workspace>:p<pane>` (measured by agmsg: `w1:p4`, `w1:pB`, `w5:p3`): `w`, one or
//! more ASCII alphanumerics, exactly one `:`, `p`, one or more ASCII alphanumerics. Pane ids repeat across
//! running herdr instances, so an id may carry the socket of the instance that owns it, as
//! `<socket>:w1:p4` (agmsg #1055). The socket is everything before the last two colon fields, so a socket
//! path may itself contain a colon or a space, as agmsg's driver allows.
//!
//! What a socket may be, stricter than agmsg's bash grammar (which asks only for no control characters):
//! - no control characters: a placement record is one TAB-separated line;
//! - absolute: the host runs herdr with cwd `/`, so a relative socket would name a different path here
//!   than where it was recorded.
//!
//! Anything else (`w1:p4;kill`, `%3`, `:w1:p4`, `w1`, `w1:x:p4`) is refused before a program runs.

/// A validated id, borrowing from the string it was parsed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HerdrId<'a> {
    /// The owning instance's socket, when the id names one.
    pub socket: Option<&'a str>,
    /// `wN:pX`: what the herdr CLI is given.
    pub bare: &'a str,
}

/// Parse `id`, or `None` when it is not in the grammar.
pub fn parse(id: &str) -> Option<HerdrId<'_>> {
    // Checked on the whole id first, so no half can smuggle one.
    if id.chars().any(char::is_control) {
        return None;
    }
    let (head, _) = id.rsplit_once(':')?;
    let (socket, bare) = match head.rsplit_once(':') {
        Some((socket, _)) => (Some(socket), &id[socket.len() + 1..]),
        None => (None, id),
    };
    if socket.is_some_and(|s| !socket_ok(s)) || !bare_ok(bare) {
        return None;
    }
    Some(HerdrId { socket, bare })
}

/// `w` + alphanumerics, one `:`, `p` + alphanumerics; ASCII alphanumerics and that one colon only.
pub fn bare_ok(bare: &str) -> bool {
    let Some((workspace, pane)) = bare.split_once(':') else { return false };
    let part = |s: &str, lead: u8| s.as_bytes().first() == Some(&lead) && s.len() > 1 && s.bytes().all(|b| b.is_ascii_alphanumeric());
    part(workspace, b'w') && part(pane, b'p')
}

/// Whether `socket` may name an instance (see the module docs).
pub fn socket_ok(socket: &str) -> bool {
    socket.starts_with('/') && !socket.chars().any(char::is_control)
}

/// `<socket>:<bare>`.
pub fn qualify(socket: &str, bare: &str) -> String {
    format!("{socket}:{bare}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_qualified_and_bare_ids() {
        assert_eq!(parse("w1:p4"), Some(HerdrId { socket: None, bare: "w1:p4" }));
        assert_eq!(parse("wC:pB"), Some(HerdrId { socket: None, bare: "wC:pB" }));
        assert_eq!(parse("/run/herdr-a.sock:w1:p7"), Some(HerdrId { socket: Some("/run/herdr-a.sock"), bare: "w1:p7" }));
        assert_eq!(parse("/run/a:b.sock:w1:p7"), Some(HerdrId { socket: Some("/run/a:b.sock"), bare: "w1:p7" }));
        assert_eq!(parse("/tmp/server with space:w1:pB"), Some(HerdrId { socket: Some("/tmp/server with space"), bare: "w1:pB" }));
    }

    #[test]
    fn refuses_malformed_and_hostile_ids() {
        for bad in [
            "",
            "w1",
            "w1:",
            ":w1:p4",
            "w:p4",
            "w1:p",
            "w1:t1",
            "w1:p4;kill",
            "w1:p4 ",
            " w1:p4",
            "%3",
            "w1:x:p4",
            "rel.sock:w1:p4",
            "/s\n:w1:p4",
            "/s:w1:p4\n",
            "/s\t:w1:p4",
            "/s:w1:p4:",
            "/s:w1:p-4",
            "/s:wé:p4",
            "w1:p4|x",
        ] {
            assert!(parse(bad).is_none(), "{bad:?} must be refused");
        }
    }
}
