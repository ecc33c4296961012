//! Quoting the boot command for the `{cmd}` slot of an `AGMSG_TERMINAL` template.
//!
//! The template is a shell command line that `bash -c` runs, so the boot words must come out of bash's
//! parse exactly as they went in. agmsg uses `printf %q`; single quotes give the same words back with a
//! rule small enough to check by eye: wrap each word in `'...'` and write a `'` inside it as `'\''`.

/// The words, each single-quoted, joined by spaces. No words quotes as `''`, as `printf %q ""` does.
pub fn shell_words(words: &[String]) -> String {
    if words.is_empty() {
        return "''".to_owned();
    }
    words.iter().map(|word| agmsg_guest_sdk::terminal::shell_quote(word)).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn quotes_every_word() {
        assert_eq!(shell_words(&words(&["claude", "--resume"])), "'claude' '--resume'");
        assert_eq!(shell_words(&words(&["it's $HOME; rm -rf /"])), r"'it'\''s $HOME; rm -rf /'");
        assert_eq!(shell_words(&words(&[""])), "''");
        assert_eq!(shell_words(&[]), "''");
    }
}
