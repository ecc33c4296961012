//! Shell words: the one way the host writes text into a POSIX shell command line or script (the
//! boot script, the `_delivery.sh` and storage shims, delivery hook commands, commands users paste).

/// `value` as one shell word in single quotes, each `'` as `'\''` (agmsg's `agmsg_shq`): nothing in
/// it is read as syntax, line breaks included. The same function delivery plugs use (`agmsg-contract`).
pub use agmsg_contract::shell_quote as quote;

/// Whether `value` is one shell word as it is, and `value` as one shell word (as it is when plain, else
/// quoted): agmsg-contract's, shared with drivers through the SDK.
pub use agmsg_contract::{is_plain_word as is_plain, shell_word as word};

#[cfg(test)]
mod tests {
    use super::*;

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
