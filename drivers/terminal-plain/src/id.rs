//! The plain driver's id grammar.
//!
//! A plain placement usually has no addressable pane at all, recorded as the `-` sentinel. agmsg also
//! writes emulator-qualified ttys (`iterm:/dev/ttys3`, `terminal:/dev/ttys3`) for windows a macOS
//! emulator adapter could reach. Both are accepted as ids; nothing else is.

/// A validated plain id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlainId<'a> {
    /// `-`: a window was opened, but nothing can address it.
    Sentinel,
    /// `<emulator>:<tty>`, e.g. `iterm` and `/dev/ttys3`.
    Tty { emulator: &'a str, tty: &'a str },
}

/// The sentinel id `detect` and `spawn` print.
pub const SENTINEL: &str = "-";

const EMULATORS: [&str; 2] = ["iterm", "terminal"];
const TTY_PREFIX: &str = "/dev/ttys";

pub fn parse(id: &str) -> Option<PlainId<'_>> {
    if id == SENTINEL {
        return Some(PlainId::Sentinel);
    }
    let (emulator, tty) = id.split_once(':')?;
    let number = tty.strip_prefix(TTY_PREFIX)?;
    let known = EMULATORS.contains(&emulator);
    (known && !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit())).then_some(PlainId::Tty { emulator, tty })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_sentinel_and_emulator_ttys() {
        assert_eq!(parse("-"), Some(PlainId::Sentinel));
        assert_eq!(parse("iterm:/dev/ttys12"), Some(PlainId::Tty { emulator: "iterm", tty: "/dev/ttys12" }));
        assert_eq!(parse("terminal:/dev/ttys0"), Some(PlainId::Tty { emulator: "terminal", tty: "/dev/ttys0" }));
    }

    #[test]
    fn refuses_everything_else() {
        for bad in [
            "",
            "x",
            "--",
            "iterm:",
            "iterm:/dev/ttys",
            "iterm:/dev/ttys1;x",
            "xterm:/dev/ttys1",
            "iterm:/dev/pts/1",
            "iterm:/dev/ttys1\n",
            "iterm:/dev/ttys1:x",
        ] {
            assert!(parse(bad).is_none(), "{bad:?} must be refused");
        }
    }
}
