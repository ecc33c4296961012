//! Shell words: the one way the host writes text into a POSIX shell command line or script (the
//! boot script, the `_delivery.sh` and storage shims, delivery hook commands, commands users paste).

/// `value` as one shell word in single quotes, each `'` as `'\''` (agmsg's `agmsg_shq`): nothing in
/// it is read as syntax, line breaks included. The same function delivery plugs use (`agmsg-contract`).
pub use agmsg_contract::shell_quote as quote;

/// Whether `value` is one shell word as it is, and `value` as one shell word (as it is when plain, else
/// quoted): agmsg-contract's, shared with drivers through the SDK.
pub use agmsg_contract::{is_plain_word as is_plain, shell_word as word};

/// What a shell's command substitution (`"$(cat)"`) makes of `text`: every trailing newline removed,
/// nothing else. agmsg's `send.sh` takes a body only as an argument, so a body piped to it goes through
/// one; `agmsg-host send ... -` reads its body from stdin by the same rule, so `echo x | agmsg-host send
/// t a b -` and `send.sh t a b "$(echo x)"` store the same body.
pub fn substituted(text: &str) -> &str {
    text.trim_end_matches('\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The contract's unprintable set (ids, `printf %q`) and the runtime's display set are one rule
    /// written twice (the runtime crate depends on no workspace crate): they agree for every character.
    #[test]
    fn the_contracts_unprintable_characters_are_the_displays_unsafe_ones() {
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            assert_eq!(agmsg_contract::is_unprintable(c), crate::display::is_unsafe(c), "U+{:04X}", c as u32);
        }
    }

    #[test]
    fn a_substituted_body_loses_its_trailing_newlines_only() {
        assert_eq!(substituted("x\n"), "x");
        assert_eq!(substituted("a\n\nb\n\n\n"), "a\n\nb");
        assert_eq!(substituted("\n  x \r\n \n"), "\n  x \r\n ");
        assert_eq!(substituted("\n\n"), "");
    }

    #[test]
    fn words() {
        assert_eq!(word("/tmp/plugins/storage/x"), "/tmp/plugins/storage/x");
        assert_eq!(word("/tmp/my plugins/it's"), r"'/tmp/my plugins/it'\''s'");
        assert_eq!(quote("a'b\n$(x)"), "'a'\\''b\n$(x)'");
        for odd in ["", "a b", "$x", "a;b", "~", "*", "a\nb", "é"] {
            assert!(!is_plain(odd), "{odd:?}");
        }
    }

    /// What `sh` reads back from a quoted word is the text itself, whatever it holds.
    #[test]
    fn sh_reads_a_quoted_word_back_unchanged() {
        for text in ["it's", "$(touch /tmp/x) `id` $HOME", "a\nb\n'\n", "\\'\"", "-n"] {
            let out = std::process::Command::new("/bin/sh").arg("-c").arg(format!("printf %s {}", quote(text))).output().unwrap();
            assert_eq!(String::from_utf8(out.stdout).unwrap(), text);
        }
    }
}
