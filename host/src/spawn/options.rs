//! `spawn_options.yaml`: extra launch arguments per agent type (and per role), agmsg's opt-in file,
//! read with agmsg's meaning and refused when it is malformed.
//!
//! The file is `AGMSG_SPAWN_OPTIONS_FILE`, else `~/.agmsg/config/spawn_options.yaml`; a missing file
//! means no options. Its dialect is agmsg's flat one: a section header `<type>:` or
//! `<type>@<role>:` at the start of a line, then options indented by exactly two spaces,
//! `<flag>: <value>` (two tokens), `<flag>: true` or `<flag>:` (the flag alone), `<flag>: false`
//! (nothing). A ` #` comment may end a header or a value; `#` lines and blank lines are skipped.
//!
//! agmsg's reader skips what it does not understand without a word, so a slip (a tab, three spaces,
//! a missing colon, CRLF line ends) silently launches the agent without the options the user wrote.
//! Here each of those is an error naming the line, and spawn stops before anything runs.
//!
//! Roles: `--role R`, else a role read from an agent named `<…>_<role>_<vendor>` whose `<vendor>` is
//! some known type's `vendor=`. A role's `<type>@<role>` section overrides the type's keys of the same
//! name (`false` there removes the base flag) and adds its own after them. An explicit role needs its
//! section; a derived one falls back to the type's options. The metadata section
//! `agmsg.require-role-overlay` (`<type>: true`) makes a role and its section mandatory for that type,
//! and for a type whose manifest declares a profile contract (`role_overlay_profile_args`, `_home_env`,
//! `_default_dir`, `_suffix`: codex's `-p`/`--profile` under `CODEX_HOME`) the role's section must
//! select exactly one profile whose file exists, the type's own section none, and the boot exports the
//! profile directory.

use std::path::{Path, PathBuf};

use crate::error::HostError;

/// The metadata section of agmsg's required-role-overlay policy.
const POLICY_SECTION: &str = "agmsg.require-role-overlay";

/// One section: its header's name and its entries, in file order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Section {
    name: String,
    entries: Vec<(String, String)>,
}

/// A parsed options file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpawnOptions {
    sections: Vec<Section>,
}

/// The file spawn reads: `AGMSG_SPAWN_OPTIONS_FILE`, else `$HOME/.agmsg/config/spawn_options.yaml`.
pub fn path_from_env() -> Option<PathBuf> {
    if let Some(file) = std::env::var_os("AGMSG_SPAWN_OPTIONS_FILE").filter(|f| !f.is_empty()) {
        return Some(PathBuf::from(file));
    }
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty())?;
    Some(PathBuf::from(home).join(".agmsg/config/spawn_options.yaml"))
}

/// The largest options file read (agmsg's are a few lines).
const MAX_FILE: u64 = 1 << 20;

/// The file at `path`, parsed; `None` when there is none. It is the user's file, so a link to it is
/// followed (dotfile managers make one), but what is opened must be a regular file of at most
/// [`MAX_FILE`] bytes: it is opened without blocking, so a FIFO is refused instead of hanging spawn,
/// and a device such as `/dev/zero` is refused instead of being read without end.
pub fn load(path: &Path) -> Result<Option<SpawnOptions>, HostError> {
    use std::io::Read;
    let failed = |e: std::io::Error| HostError::refused(format!("spawn options file {}: {e}", path.display()));
    let file = match open_regular(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(failed(e)),
    };
    let mut bytes = Vec::new();
    file.take(MAX_FILE + 1).read_to_end(&mut bytes).map_err(failed)?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(HostError::refused(format!("spawn options file {}: larger than {} KiB", path.display(), MAX_FILE >> 10)));
    }
    let text = String::from_utf8(bytes).map_err(|_| HostError::refused(format!("spawn options file {}: not UTF-8", path.display())))?;
    SpawnOptions::parse(&text).map(Some).map_err(|e| e.context(format_args!("spawn options file {}", path.display())))
}

/// The regular file at `path` (links followed: the user's), opened without blocking and checked on
/// the open descriptor, so neither a FIFO nor one swapped in after a check can hang spawn.
fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok(file)
}

/// A trailing ` # comment` (whitespace, then `#`) removed, as agmsg removes it.
fn strip_comment(text: &str) -> &str {
    let bytes = text.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'#' && i > 0 && matches!(bytes[i - 1], b' ' | b'\t') {
            return text[..i].trim_end_matches([' ', '\t']);
        }
    }
    text
}

impl SpawnOptions {
    /// A file agmsg would misread is refused, naming its line.
    pub fn parse(text: &str) -> Result<SpawnOptions, HostError> {
        let mut sections: Vec<Section> = Vec::new();
        for (n, line) in text.split('\n').enumerate() {
            let n = n + 1;
            let bad = |why: &str| Err(HostError::refused(format!("line {n}: {why}: {line:?}")));
            if line.contains('\r') {
                return bad("a carriage return (CRLF line ends are not read as the options they look like)");
            }
            if line.contains('\0') {
                return bad("a NUL character");
            }
            if line.trim_matches([' ', '\t']).is_empty() || line.starts_with('#') {
                continue;
            }
            if line.starts_with('\t') {
                return bad("indented with a tab; options are indented by exactly two spaces");
            }
            if !line.starts_with(' ') {
                let header = strip_comment(line).trim_end_matches([' ', '\t']);
                let Some(name) = header.strip_suffix(':').filter(|n| !n.is_empty() && !n.contains([':', ' ', '\t'])) else {
                    return bad("a section header is `<type>:` or `<type>@<role>:` alone on its line");
                };
                sections.push(Section { name: name.to_owned(), entries: Vec::new() });
                continue;
            }
            let Some(option) = line.strip_prefix("  ").filter(|o| !o.starts_with([' ', '\t'])) else {
                return bad("options are indented by exactly two spaces");
            };
            if option.starts_with('#') {
                return bad("an indented comment (agmsg reads an indented line as an option)");
            }
            let Some(section) = sections.last_mut() else {
                return bad("an option before any section header");
            };
            let Some((key, value)) = option.split_once(':') else {
                return bad("an option is `<flag>: <value>`, and this one has no colon");
            };
            if key.trim_matches([' ', '\t']).is_empty() {
                return bad("an option with no flag before its colon");
            }
            let value = strip_comment(value).trim_matches([' ', '\t']);
            section.entries.push((key.to_owned(), value.to_owned()));
        }
        Ok(SpawnOptions { sections })
    }

    fn entries<'a>(&'a self, section: &'a str) -> impl Iterator<Item = &'a (String, String)> + 'a {
        self.sections.iter().filter(move |s| s.name == section).flat_map(|s| &s.entries)
    }

    pub fn has_section(&self, section: &str) -> bool {
        self.sections.iter().any(|s| s.name == section)
    }

    /// The tokens of one section, without the keys in `suppressed`.
    fn section_tokens(&self, section: &str, suppressed: &[&str], out: &mut Vec<String>) {
        for (key, value) in self.entries(section) {
            if suppressed.contains(&key.as_str()) || value == "false" {
                continue;
            }
            out.push(key.clone());
            if !value.is_empty() && value != "true" {
                out.push(value.clone());
            }
        }
    }

    /// The launch tokens for `agent_type`, with `role`'s section over the type's.
    pub fn tokens(&self, agent_type: &str, role: Option<&str>) -> Vec<String> {
        let mut out = Vec::new();
        let Some(role) = role.filter(|r| !r.is_empty()) else {
            self.section_tokens(agent_type, &[], &mut out);
            return out;
        };
        let overlay = format!("{agent_type}@{role}");
        let overridden: Vec<&str> = self.entries(&overlay).map(|(k, _)| k.as_str()).collect();
        self.section_tokens(agent_type, &overridden, &mut out);
        self.section_tokens(&overlay, &[], &mut out);
        out
    }

    /// agmsg's required-role-overlay policy for `agent_type`: whether the type must be spawned with
    /// a role whose section exists. A value other than `true` or `false` is an error.
    fn requires_role(&self, agent_type: &str) -> Result<bool, HostError> {
        match self.entries(POLICY_SECTION).find(|(k, _)| k.trim_end_matches([' ', '\t']) == agent_type).map(|(_, v)| v.as_str()) {
            None | Some("false") => Ok(false),
            Some("true") => Ok(true),
            Some(other) => {
                Err(HostError::refused(format!("{POLICY_SECTION} for type {agent_type:?} must be true or false (got {other:?})")))
            }
        }
    }
}

/// A role as agmsg accepts one: letters, digits, `_` and `-`.
pub fn is_safe_role(role: &str) -> bool {
    !role.is_empty() && role.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}

/// The role agmsg reads from an agent named `<…>_<role>_<vendor>` (at least three `_`-separated
/// parts, the last a declared vendor); `None` otherwise.
pub fn derived_role(agent: &str, vendors: &[&str]) -> Option<String> {
    let mut parts: Vec<&str> = agent.split('_').collect();
    // A trailing separator ends the last field rather than starting an empty one (bash's `read -a`).
    if parts.len() > 1 && parts.last() == Some(&"") {
        parts.pop();
    }
    if parts.len() < 3 {
        return None;
    }
    let vendor = parts[parts.len() - 1];
    let role = parts[parts.len() - 2];
    (!vendor.is_empty() && vendors.contains(&vendor) && is_safe_role(role)).then(|| role.to_owned())
}

/// A type's role-overlay profile contract (its manifest's `role_overlay_profile_*` keys).
#[derive(Clone, Debug)]
pub struct ProfileContract<'a> {
    /// The flags that select a profile (`-p --profile`).
    pub args: Vec<&'a str>,
    /// The variable naming the profiles' directory (`CODEX_HOME`).
    pub home_env: &'a str,
    /// The directory when that variable is unset, under `$HOME` unless absolute (`.codex`).
    pub default_dir: &'a str,
    /// A profile's file is `<alias><suffix>` there (`.config.toml`).
    pub suffix: &'a str,
}

impl<'a> ProfileContract<'a> {
    /// The contract a manifest declares: all four keys, or none.
    pub fn of(value: impl Fn(&str) -> &'a str) -> Option<ProfileContract<'a>> {
        let contract = ProfileContract {
            args: value("role_overlay_profile_args").split([' ', '\t']).filter(|a| !a.is_empty()).collect(),
            home_env: value("role_overlay_profile_home_env"),
            default_dir: value("role_overlay_profile_default_dir"),
            suffix: value("role_overlay_profile_suffix"),
        };
        let complete = !contract.args.is_empty() && ![contract.home_env, contract.default_dir, contract.suffix].contains(&"");
        complete.then_some(contract)
    }
}

/// How a token spells one of the profile flags.
#[derive(Debug, PartialEq, Eq)]
enum FlagForm<'t> {
    /// The flag itself.
    Exact,
    /// `<flag>=<alias>`.
    Equals(&'t str),
    /// The flag with something glued on (`-parchitect`, `--profilex`): refused, never guessed.
    Glued,
}

fn flag_form<'t>(token: &'t str, flags: &[&str]) -> Option<FlagForm<'t>> {
    for flag in flags {
        if token == *flag {
            return Some(FlagForm::Exact);
        }
        if let Some(alias) = token.strip_prefix(flag).and_then(|rest| rest.strip_prefix('=')) {
            return Some(FlagForm::Equals(alias));
        }
        let short = flag.starts_with('-') && !flag.starts_with("--") && (2..=3).contains(&flag.len());
        if (short || flag.starts_with("--")) && token.len() > flag.len() && token.starts_with(flag) {
            return Some(FlagForm::Glued);
        }
    }
    None
}

/// A profile name that is one safe file name.
fn is_safe_alias(alias: &str) -> bool {
    alias != ".."
        && alias.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
        && alias.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// agmsg's profile check of a required role overlay; the variable and directory the boot exports.
fn check_profile(file: &SpawnOptions, agent_type: &str, role: &str, contract: &ProfileContract<'_>) -> Result<(String, String), HostError> {
    let fail = |why: String| Err(HostError::refused(format!("required role overlay for type {agent_type:?} role {role:?}: {why}")));
    let env = contract.home_env;
    if !(env.starts_with(|c: char| c == '_' || c.is_ascii_alphabetic()) && env.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())) {
        return fail(format!("the manifest's profile home variable {env:?} is not a variable name"));
    }
    let overlay = format!("{agent_type}@{role}");
    // The type's own section may not select a profile, even one the role's section turns off.
    for (key, value) in file.entries(agent_type) {
        if flag_form(key.trim_end_matches([' ', '\t']), &contract.args).is_some() || flag_form(value, &contract.args).is_some() {
            return fail(format!("section {agent_type} selects a profile ({key}: {value}); move it to {overlay}"));
        }
    }
    let mut aliases = Vec::new();
    for (key, value) in file.entries(&overlay) {
        match flag_form(key.trim_end_matches([' ', '\t']), &contract.args) {
            Some(FlagForm::Exact) if value.is_empty() || value == "true" || value == "false" => {
                return fail(format!("profile flag {key:?} needs one profile name, not {value:?}"));
            }
            Some(FlagForm::Exact) => aliases.push(value.as_str()),
            Some(FlagForm::Equals(alias)) if !alias.is_empty() && (value.is_empty() || value == "true") => aliases.push(alias),
            Some(FlagForm::Equals(_)) => return fail(format!("profile flag {key:?} needs a profile name and a true or empty value")),
            Some(FlagForm::Glued) => return fail(format!("profile flag {key:?} has its profile glued on; give the profile as its value")),
            None if flag_form(value, &contract.args).is_some() => {
                return fail(format!("the value {value:?} of {key:?} is a profile flag, not a profile selection"));
            }
            None => {}
        }
    }
    let [alias] = aliases[..] else {
        return fail(format!("section {overlay} must select exactly one profile with {}", contract.args.join(" or ")));
    };
    if !is_safe_alias(alias) {
        return fail(format!("profile name {alias:?} is not a safe file name"));
    }
    let dir = match std::env::var(env).ok().filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None if contract.default_dir.starts_with('/') => PathBuf::from(contract.default_dir),
        None => PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(contract.default_dir),
    };
    // As `cd dir && pwd -P`: the physical directory, when there is one.
    let home = std::fs::canonicalize(&dir)
        .or_else(|_| std::path::absolute(&dir))
        .map_err(|e| HostError::refused(format!("{}: {e}", dir.display())))?;
    let profile = home.join(format!("{alias}{}", contract.suffix));
    let readable = open_regular(&profile).is_ok();
    if !readable {
        return fail(format!("profile {alias:?} needs the readable file {}", profile.display()));
    }
    let home = home
        .into_os_string()
        .into_string()
        .map_err(|h| HostError::refused(format!("the profile directory {} is not UTF-8", PathBuf::from(h).display())))?;
    Ok((env.to_owned(), home))
}

/// What the options file adds to a spawn.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentOptions {
    /// Launch tokens, in agmsg's order.
    pub tokens: Vec<String>,
    /// A variable the boot script exports (a required role's checked profile directory).
    pub env: Option<(String, String)>,
}

/// What spawn launches with from the options file, or why it must not launch.
///
/// `role`: `--role`, if given. `vendors`: every known type's `vendor=`. `contract`: the type's
/// profile contract, if its manifest declares one.
pub fn resolve(
    file: Option<&SpawnOptions>,
    agent_type: &str,
    agent: &str,
    role: Option<&str>,
    vendors: &[&str],
    contract: Option<&ProfileContract<'_>>,
) -> Result<AgentOptions, HostError> {
    let role = match role {
        Some(explicit) => {
            if !is_safe_role(explicit) {
                return Err(HostError::refused("--role must contain only letters, digits, '_' or '-'"));
            }
            let section = format!("{agent_type}@{explicit}");
            if !file.is_some_and(|f| f.has_section(&section)) {
                return Err(HostError::refused(format!("an explicit --role needs the spawn options section {section}")));
            }
            Some(explicit.to_owned())
        }
        None => derived_role(agent, vendors),
    };
    let Some(file) = file else { return Ok(AgentOptions::default()) };
    let mut env = None;
    if file.requires_role(agent_type)? {
        let Some(role) = &role else {
            return Err(HostError::refused(format!(
                "spawn options require a role overlay for type {agent_type:?}: pass --role <role> or name the agent <project>_<role>_<vendor>"
            )));
        };
        let section = format!("{agent_type}@{role}");
        if !file.has_section(&section) {
            return Err(HostError::refused(format!(
                "spawn options require a role overlay for type {agent_type:?}: section {section} is missing"
            )));
        }
        if let Some(contract) = contract {
            env = Some(check_profile(file, agent_type, role, contract)?);
        }
    }
    Ok(AgentOptions { tokens: file.tokens(agent_type, role.as_deref()), env })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> SpawnOptions {
        SpawnOptions::parse(text).unwrap_or_else(|e| panic!("{e}"))
    }

    /// agmsg's legacy fixture: strings, a `true` flag, a value with spaces, `false` suppressed, and
    /// only the asked type's section.
    #[test]
    fn legacy_file() {
        let file = parse(
            "claude-code:\n  --permission-mode: acceptEdits\n  --dangerously-skip-permissions: true\n  \
             --append-system-prompt: preserve spaces exactly\n  --disabled: false\ncodex:\n  --sandbox: workspace-write\n  \
             --ask-for-approval: never\n  --disabled: false\n",
        );
        assert_eq!(
            file.tokens("claude-code", None),
            ["--permission-mode", "acceptEdits", "--dangerously-skip-permissions", "--append-system-prompt", "preserve spaces exactly"]
        );
        assert_eq!(file.tokens("codex", None), ["--sandbox", "workspace-write", "--ask-for-approval", "never"]);
        assert!(file.tokens("gemini", None).is_empty());
        assert!(parse("").tokens("codex", None).is_empty());
    }

    /// Header whitespace and comments, and a role overlay with a trailing-space header.
    #[test]
    fn header_comments_and_roles() {
        let file = parse("codex:   # base options\n  --sandbox: workspace-write\ncodex@architect:    \n  -p: architect\n");
        assert_eq!(file.tokens("codex", None), ["--sandbox", "workspace-write"]);
        assert_eq!(file.tokens("codex", Some("architect")), ["--sandbox", "workspace-write", "-p", "architect"]);
        assert!(parse("codex@architect:\n  -p: architect\n").tokens("codex", None).is_empty(), "a role section is not the type's");
        let file = parse(
            "codex:\n  --keep: value with spaces ; $HOME * [meta] # note\n  --omit flag: base\n  --also$omit: base\n\
             codex@architect:\n  --omit flag: false\n  --also$omit: false\n  --extra:\n",
        );
        assert_eq!(file.tokens("codex", Some("architect")), ["--keep", "value with spaces ; $HOME * [meta]", "--extra"]);
        let file = parse("codex:\n  -m: a\n  -x: 1\ncodex@lead:\n  -m: b\n");
        assert_eq!(file.tokens("codex", Some("lead")), ["-x", "1", "-m", "b"], "the role's value replaces the base's, after the rest");
    }

    #[test]
    fn malformed_files_are_refused_with_their_line() {
        for (text, why) in [
            ("codex:\n\t--sandbox: x\n", "line 2: indented with a tab"),
            ("codex:\n   --sandbox: x\n", "line 2: options are indented by exactly two spaces"),
            ("codex:\n --sandbox: x\n", "line 2: options are indented by exactly two spaces"),
            ("codex:\n  --sandbox\n", "line 2: an option is `<flag>: <value>`"),
            ("codex:\r\n  --sandbox: x\r\n", "line 1: a carriage return"),
            ("  --sandbox: x\n", "line 1: an option before any section header"),
            ("codex: --sandbox\n", "line 1: a section header"),
            ("codex\n", "line 1: a section header"),
            ("codex:\n  : x\n", "line 2: an option with no flag"),
            ("codex:\n  # off: x\n", "line 2: an indented comment"),
        ] {
            let err = SpawnOptions::parse(text).unwrap_err();
            assert!(err.message.starts_with(why), "{text:?}: {err}");
            assert_eq!(err.class, crate::error::ExitClass::Refused);
        }
        // Comments and blank lines anywhere are fine.
        assert_eq!(parse("# mine\n\ncodex:\n\n  -a: b\n# end\n").tokens("codex", None), ["-a", "b"]);
    }

    #[test]
    fn roles_derived_explicit_and_required() {
        let vendors = ["claude", "codex"];
        assert_eq!(derived_role("proj_architect_codex", &vendors).as_deref(), Some("architect"));
        assert_eq!(derived_role("architect_codex", &vendors), None, "two parts");
        assert_eq!(derived_role("proj_architect_gpt", &vendors), None, "not a vendor");
        let file = parse("codex:\n  -a: 1\ncodex@architect:\n  -p: architect\n");
        assert_eq!(
            resolve(Some(&file), "codex", "proj_architect_codex", None, &vendors, None).unwrap().tokens,
            ["-a", "1", "-p", "architect"]
        );
        assert_eq!(
            resolve(Some(&file), "codex", "proj_writer_codex", None, &vendors, None).unwrap().tokens,
            ["-a", "1"],
            "a derived role without a section"
        );
        assert!(resolve(Some(&file), "codex", "bob", Some("writer"), &vendors, None).unwrap_err().message.contains("codex@writer"));
        assert!(resolve(None, "codex", "bob", Some("architect"), &vendors, None).unwrap_err().message.contains("codex@architect"));
        assert!(resolve(Some(&file), "codex", "bob", Some("a b"), &vendors, None).unwrap_err().message.contains("--role must contain"));
        assert_eq!(resolve(None, "codex", "bob", None, &vendors, None).unwrap(), AgentOptions::default());
        let policy = parse("agmsg.require-role-overlay:\n  codex: true\ncodex@architect:\n  -p: architect\n");
        assert!(resolve(Some(&policy), "codex", "bob", None, &vendors, None).unwrap_err().message.contains("require a role overlay"));
        assert_eq!(resolve(Some(&policy), "codex", "bob", Some("architect"), &vendors, None).unwrap().tokens, ["-p", "architect"]);
        assert_eq!(
            resolve(Some(&policy), "claude-code", "bob", None, &vendors, None).unwrap(),
            AgentOptions::default(),
            "metadata is never a token"
        );
        let odd = parse("agmsg.require-role-overlay:\n  codex: yes\n");
        assert!(resolve(Some(&odd), "codex", "bob", None, &vendors, None).unwrap_err().message.contains("true or false"));
    }

    /// agmsg's profile cases for codex's contract (`-p --profile`, a directory, `.config.toml`).
    #[test]
    fn a_required_role_selects_exactly_one_existing_profile() {
        let profiles = tempfile::tempdir().unwrap();
        let dir = profiles.path().to_str().unwrap();
        let contract = ProfileContract {
            args: vec!["-p", "--profile"],
            home_env: "AGMSG_TEST_NO_SUCH_VARIABLE",
            default_dir: dir,
            suffix: ".config.toml",
        };
        let check = |text: &str| resolve(Some(&parse(text)), "codex", "bob", Some("architect"), &["codex"], Some(&contract));
        let policy = "agmsg.require-role-overlay:\n  codex: true\n";
        let missing = check(&format!("{policy}codex@architect:\n  -p: architect\n")).unwrap_err().message;
        assert!(missing.contains("architect.config.toml"), "{missing}");
        std::fs::write(profiles.path().join("architect.config.toml"), "").unwrap();
        let home = profiles.path().canonicalize().unwrap().to_str().unwrap().to_owned();
        let ok = check(&format!("{policy}codex@architect:\n  -p: architect\n")).unwrap();
        assert_eq!(
            (ok.tokens, ok.env),
            (vec!["-p".to_owned(), "architect".to_owned()], Some(("AGMSG_TEST_NO_SUCH_VARIABLE".to_owned(), home)))
        );
        assert!(check(&format!("{policy}codex@architect:\n  --profile=architect: true\n")).is_ok(), "the long equals form");
        for (text, why) in [
            ("codex:\n  -p: base\ncodex@architect:\n  -p: false\n  --sandbox: x\n", "section codex selects a profile"),
            ("codex@architect:\n  --sandbox: x\n", "exactly one profile"),
            ("codex@architect:\n  -p: architect\n  --profile: architect\n", "exactly one profile"),
            ("codex@architect:\n  -parchitect: true\n", "glued on"),
            ("codex@architect:\n  -p: true\n", "needs one profile name"),
            ("codex@architect:\n  --x: --profile\n", "is a profile flag"),
            ("codex@architect:\n  -p: ../x\n", "not a safe file name"),
        ] {
            let err = check(&format!("{policy}{text}")).unwrap_err().message;
            assert!(err.contains(why), "{text:?}: {err}");
        }
        // Without the policy: no profile check, nothing exported.
        assert_eq!(check("codex@architect:\n  -p: nothere\n").unwrap().env, None);
    }
}
