//! Text from users (names, labels, the project path, poked text) as tmux data, never tmux syntax.
//!
//! No shell stands between this driver and tmux, but tmux itself interprets two things, checked
//! against a real tmux 3.3a server:
//!
//! - **Its argv.** `tmux a b ; c` is two commands: any argument that ENDS in `;` ends a command there
//!   (the `;` dropped, what follows parsed as the next command), and one ending in `\;` loses the
//!   backslash. [`arg`] applies to every argument the driver passes ([`crate::run::Server::run`]):
//!   a `\` before a final `;` makes it a plain character again (`x;` is sent as `x\;`, `x\;` as
//!   `x\\;`), and nothing else in an argument is touched.
//! - **Formats.** Some arguments are expanded as formats before use: `new-window -n`, `rename-window`,
//!   `select-pane -T` and the start directory `-c` (not `set-option` without `-F`, not `send-keys -l`,
//!   not a pane's command). There `#(cmd)` runs `cmd` with the user's rights, `#{..}` and `#W`-style
//!   aliases expand, `##` is `#`. [`format`] makes such an argument expand to itself.
//!
//! A leading `-` is the callers' business: a value given to an option (`-n`, `-T`, `-c`) is taken as it
//! is, and a positional value goes after `--`.

use std::borrow::Cow;

/// `value` as one argv entry tmux's command parser keeps whole: a final `;` escaped as `\;`.
pub fn arg(value: &str) -> Cow<'_, str> {
    match value.strip_suffix(';') {
        Some(head) => Cow::Owned(format!("{head}\\;")),
        None => Cow::Borrowed(value),
    }
}

/// `value` as a format that expands to exactly `value`: every run of `#` doubled (`##` expands to
/// `#`), except a run right before `[`. tmux copies `#[` and `##…#[` through unexpanded (a style is
/// left for drawing), so doubling those would change the text, and leaving them cannot start an
/// expansion.
pub fn format(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 8);
    let mut rest = value;
    while let Some(start) = rest.find('#') {
        out.push_str(&rest[..start]);
        let run = rest[start..].bytes().take_while(|b| *b == b'#').count();
        let hashes = &rest[start..start + run];
        rest = &rest[start + run..];
        out.push_str(hashes);
        if !rest.starts_with('[') {
            out.push_str(hashes);
        }
    }
    out.push_str(rest);
    out
}

/// Why a name cannot be shown as given, if so. tmux keeps no control character in a pane title
/// (`select-pane -T` leaves the title as it was) and shows one in a window name escaped
/// (`rename-window` stores `\n` as the two characters `\n`), so the name would silently become
/// something else; a name never needs one.
pub fn unshowable(name: &str) -> Option<String> {
    name.chars()
        .any(char::is_control)
        .then(|| format!("unsupported: the name {name:?} holds a control character, which tmux cannot show as given"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_final_semicolon_is_escaped_and_nothing_else() {
        assert_eq!(arg("plain"), "plain");
        assert_eq!(arg("a;b"), "a;b");
        assert_eq!(arg("a;"), "a\\;");
        assert_eq!(arg(";"), "\\;");
        assert_eq!(arg("x\\;"), "x\\\\;");
        assert_eq!(arg("c;;"), "c;\\;");
        assert_eq!(arg(""), "");
    }

    #[test]
    fn formats_expand_to_themselves() {
        for (value, escaped) in [
            ("crew:bob", "crew:bob"),
            ("#(touch x)", "##(touch x)"),
            ("#{pane_id}", "##{pane_id}"),
            ("##", "####"),
            ("a#", "a##"),
            ("#W#S", "##W##S"),
            ("#[fg=red]x", "#[fg=red]x"),
            ("##[x]", "##[x]"),
            ("#(a)#[b]##c", "##(a)#[b]####c"),
            ("é#ü", "é##ü"),
        ] {
            assert_eq!(format(value), escaped, "{value:?}");
        }
    }

    #[test]
    fn control_characters_are_unshowable() {
        assert!(unshowable("a\nb").is_some());
        assert!(unshowable("a\tb").is_some());
        assert!(unshowable("#(x);'\"-").is_none());
    }
}
