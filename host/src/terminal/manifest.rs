//! A terminal driver's manifest (`terminal.conf`): agmsg's read-only `key=value` file, never sourced,
//! plus the two keys that are the driver's grants here: `programs=` (the programs it may run, by bare
//! name) and `env=` (the environment variables it may read and pass on).

use std::fmt;

use crate::capabilities::{is_env_name, is_program_name};

/// What a terminal driver declares about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TerminalManifest {
    pub name: String,
    /// Lower is tried first during detection; missing or malformed is 50, as in agmsg.
    pub priority: u32,
    pub backend: String,
    pub capabilities: Vec<String>,
    pub programs: Vec<String>,
    pub env: Vec<String>,
}

#[derive(Debug)]
pub struct ManifestError(pub String);

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ManifestError {}

// agmsg's manifest reader lives in the contract: drivers describe themselves from the same file.
pub use agmsg_contract::terminal_conf::DEFAULT_PRIORITY;
use agmsg_contract::terminal_conf::value;

fn words(text: &str, key: &str) -> Vec<String> {
    agmsg_contract::terminal_conf::words(text, key).into_iter().map(str::to_owned).collect()
}

impl TerminalManifest {
    pub fn parse(text: &str) -> Result<TerminalManifest, ManifestError> {
        let name = value(text, "name").unwrap_or_default().to_owned();
        agmsg_contract::check_driver_name(&name).map_err(|e| ManifestError(format!("manifest: {e}")))?;
        let bad = |what: &str, v: &str| ManifestError(format!("manifest of '{name}': invalid {what} {v:?}"));
        let programs = words(text, "programs");
        if let Some(p) = programs.iter().find(|p| !is_program_name(p)) {
            return Err(bad("program name (programs are named, never given by path)", p));
        }
        let env = words(text, "env");
        if let Some(v) = env.iter().find(|v| !is_env_name(v)) {
            return Err(bad("environment variable name", v));
        }
        // Shown by `terminal list` and printed by `describe`: printable text on one line.
        let backend = value(text, "backend").unwrap_or_default().to_owned();
        if !crate::display::is_printable_line(&backend, 1024) {
            return Err(bad("backend (one printable line)", &backend));
        }
        let capabilities = words(text, "capabilities");
        if let Some(c) = capabilities.iter().find(|c| !crate::display::is_printable_line(c, 64)) {
            return Err(bad("capability", c));
        }
        Ok(TerminalManifest { priority: agmsg_contract::terminal_conf::priority(text), backend, capabilities, programs, env, name })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_agmsg_manifests_and_the_grants() {
        let m = TerminalManifest::parse(
            "# comment\nname=tmux\n priority = \"20\"\nbackend=tmux pane/window\nbackend=ignored\ncapabilities=spawn peek\nprograms=tmux ps\nenv=TMUX TMUX_PANE\n",
        )
        .unwrap();
        assert_eq!((m.name.as_str(), m.priority, m.backend.as_str()), ("tmux", 20, "tmux pane/window"));
        assert_eq!(m.capabilities, ["spawn", "peek"]);
        assert_eq!((m.programs.len(), m.env.len()), (2, 2));
        assert_eq!(TerminalManifest::parse("name=x\npriority=high").unwrap().priority, DEFAULT_PRIORITY);
    }

    #[test]
    fn refuses_paths_and_bad_names() {
        assert!(TerminalManifest::parse("name=x\nprograms=/usr/bin/tmux").is_err());
        assert!(TerminalManifest::parse("name=x\nprograms=../tmux").is_err());
        assert!(TerminalManifest::parse("name=x\nenv=A-B").is_err());
        assert!(TerminalManifest::parse("name=a/b").is_err());
        assert!(TerminalManifest::parse("name=x\nbackend=a\x1b[8mb").is_err());
        assert!(TerminalManifest::parse("name=x\ncapabilities=peek \u{202e}poke").is_err());
        assert!(TerminalManifest::parse("").is_err());
    }
}
