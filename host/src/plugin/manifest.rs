//! A plugin's manifest, `agmsg-driver.toml`, beside its component: who it is, which contract version it
//! targets, and the capabilities it asks for. Data only; parsed strictly (an unknown key is an error,
//! so a typo cannot silently drop a request or a limit).
//!
//! ```toml
//! name = "notes"                 # [a-z0-9_-]+, the name users select it by
//! axis = "storage"               # storage | terminal
//! version = "0.1.0"              # the driver's own version
//! api = "1.0.0"                  # the agmsg:<axis> WIT version it was built against
//! component = "driver.wasm"      # optional; relative to this file
//! description = "..."            # optional
//!
//! [capabilities]                 # all optional; nothing is granted that is not listed
//! store = true                   # storage: its store directory
//! env = ["NOTES_COLOR"]          # environment variables it may read
//! network = ["db.example:5432"]  # host:port it may connect to
//! memory_mb = 128                # limits above the defaults
//! call_timeout_ms = 60000
//! programs = [{ name = "tmux", args = [["-V"], ["-S", "*", "**"]] }]   # terminal drivers
//!
//! [terminal]                     # terminal drivers: agmsg's terminal.conf keys
//! priority = 40
//! backend = "..."
//! capabilities = ["peek", "poke"]
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::capabilities::{Capabilities, Capability};
use crate::display::is_printable_line;

/// The longest description, component path or `[terminal]` backend; the longest `[terminal]` capability.
const MAX_TEXT_CHARS: usize = 1024;
const MAX_TOKEN_CHARS: usize = 64;

/// The file name of a plugin's manifest.
pub const MANIFEST_FILE: &str = "agmsg-driver.toml";
/// Where an installed plugin's component lives, beside its manifest.
pub const INSTALLED_COMPONENT: &str = "driver.wasm";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Axis {
    Storage,
    Terminal,
}

impl Axis {
    pub const ALL: [Axis; 2] = [Axis::Storage, Axis::Terminal];

    pub fn as_str(self) -> &'static str {
        match self {
            Axis::Storage => "storage",
            Axis::Terminal => "terminal",
        }
    }

    pub fn parse(s: &str) -> Option<Axis> {
        Axis::ALL.into_iter().find(|a| a.as_str() == s)
    }
}

impl std::fmt::Display for Axis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginManifest {
    pub name: String,
    pub axis: Axis,
    pub version: String,
    pub api: String,
    #[serde(default = "default_component")]
    pub component: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub capabilities: Requested,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal: Option<TerminalKeys>,
}

fn default_component() -> PathBuf {
    PathBuf::from(INSTALLED_COMPONENT)
}

/// The `[capabilities]` table as written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Requested {
    #[serde(default)]
    pub store: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub programs: Vec<ProgramRequest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mb: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_timeout_ms: Option<u64>,
    /// See [`Capability::InertSockets`].
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inert_sockets: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgramRequest {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<Vec<String>>>,
}

/// agmsg's `terminal.conf` keys, for a terminal plugin.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TerminalKeys {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<u32>,
    #[serde(default)]
    pub backend: String,
    #[serde(default)]
    pub capabilities: Vec<String>,
}

impl PluginManifest {
    /// Parse and validate a manifest's text; `origin` names the file in errors.
    pub fn parse(text: &str, origin: &Path) -> Result<PluginManifest, String> {
        let manifest: PluginManifest = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(String::new(), |span| format!(":{}", text[..span.start].matches('\n').count() + 1));
            format!("{}{line}: {}", origin.display(), e.message())
        })?;
        manifest.validate().map_err(|e| format!("{}: {e}", origin.display()))?;
        Ok(manifest)
    }

    /// Read and parse a manifest file; also the sha256 of its bytes (trust pins it).
    pub fn read(path: &Path) -> Result<(PluginManifest, String), String> {
        let bytes = super::read_file(path, super::MAX_TEXT_BYTES)?;
        let text = String::from_utf8(bytes).map_err(|_| format!("{} is not UTF-8", path.display()))?;
        Ok((PluginManifest::parse(&text, path)?, super::registry::sha256_hex(text.as_bytes())))
    }

    fn validate(&self) -> Result<(), String> {
        if self.name.is_empty() || !self.name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_') {
            return Err(format!("name must match [a-z0-9_-]+, not {:?}", self.name));
        }
        // Everything below is shown to the user asked to consent: text that could drive the terminal
        // (`ESC[8m` hides what follows), reorder it or flood it is refused here, and printed through
        // `crate::display` anyway.
        if !is_semver(&self.version) {
            return Err(format!("version must be MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD] (semver), not {:?}", self.version));
        }
        if !is_semver(&self.api) {
            return Err(format!("api must be the WIT version MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD] (semver), not {:?}", self.api));
        }
        if self.component.is_absolute() || self.component.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
            return Err(format!("component must be a path inside the package, not {}", self.component.display()));
        }
        if !self.component.to_str().is_some_and(|c| is_printable_line(c, MAX_TEXT_CHARS)) {
            return Err(format!("component must be a printable path on one line, not {:?}", self.component));
        }
        if let Some(description) = &self.description
            && !is_printable_line(description, MAX_TEXT_CHARS)
        {
            return Err(format!(
                "description must be one line of at most {MAX_TEXT_CHARS} printable characters (no control or bidi characters), not {description:?}"
            ));
        }
        if let Some(keys) = &self.terminal {
            if !is_printable_line(&keys.backend, MAX_TEXT_CHARS) {
                return Err(format!("[terminal] backend must be one printable line, not {:?}", keys.backend));
            }
            if let Some(c) = keys.capabilities.iter().find(|c| c.is_empty() || c.contains(char::is_whitespace) || !is_printable_line(c, MAX_TOKEN_CHARS)) {
                return Err(format!("[terminal] capabilities must be printable words, not {c:?}"));
            }
        }
        match (self.axis, &self.terminal) {
            (Axis::Storage, Some(_)) => return Err("a storage driver has no [terminal] table".into()),
            (Axis::Terminal, _) if self.capabilities.store => return Err("a terminal driver cannot ask for a store".into()),
            (Axis::Storage, _) if !self.capabilities.programs.is_empty() => {
                return Err("a storage driver cannot run programs (only terminal drivers can)".into());
            }
            _ => {}
        }
        for cap in &self.capabilities().0 {
            cap.validate()?;
        }
        if self.capabilities.memory_mb == Some(0) || self.capabilities.call_timeout_ms == Some(0) {
            return Err("limits must be positive".into());
        }
        Ok(())
    }

    /// The capabilities it asks for, as items.
    pub fn capabilities(&self) -> Capabilities {
        let r = &self.capabilities;
        let mut caps = Vec::new();
        if r.store {
            caps.push(Capability::Store);
        }
        caps.extend(r.env.iter().map(|name| Capability::Env { name: name.clone() }));
        caps.extend(r.programs.iter().map(|p| Capability::Program { name: p.name.clone(), args: p.args.clone() }));
        caps.extend(r.network.iter().map(|endpoint| Capability::Network { endpoint: endpoint.clone() }));
        caps.extend(r.memory_mb.map(|mb| Capability::Memory { mb }));
        caps.extend(r.call_timeout_ms.map(|ms| Capability::Timeout { ms }));
        if r.inert_sockets {
            caps.push(Capability::InertSockets);
        }
        Capabilities(caps)
    }

    /// The manifest text of the installed copy: the same, with the component beside it.
    pub fn installed_text(&self) -> String {
        let installed = PluginManifest { component: default_component(), ..self.clone() };
        let body = toml::to_string(&installed).expect("a manifest serializes");
        format!("# Installed by agmsg-host plugin install; the component is {INSTALLED_COMPONENT} beside this file.\n{body}")
    }
}

/// Whether `version` is semver text (semver.org 2.0.0): `MAJOR.MINOR.PATCH` without leading zeros,
/// then optionally `-PRERELEASE` and `+BUILD`, each dot-separated identifiers of `[0-9A-Za-z-]`
/// (numeric pre-release identifiers without leading zeros); at most 64 characters.
pub fn is_semver(version: &str) -> bool {
    let number = |n: &str| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && (n == "0" || !n.starts_with('0'));
    let identifiers = |s: &str, numeric_rule: bool| {
        s.split('.').all(|id| {
            !id.is_empty()
                && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && (!numeric_rule || !id.bytes().all(|b| b.is_ascii_digit()) || number(id))
        })
    };
    let (rest, build) = match version.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (version, None),
    };
    let (core, pre) = match rest.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (rest, None),
    };
    let parts: Vec<&str> = core.split('.').collect();
    version.len() <= 64
        && parts.len() == 3
        && parts.iter().all(|p| number(p) && p.parse::<u64>().is_ok())
        && pre.is_none_or(|p| identifiers(p, true))
        && build.is_none_or(|b| identifiers(b, false))
}

/// `MAJOR.MINOR.PATCH` (a pre-release or build suffix is ignored).
pub fn semver_parts(version: &str) -> Option<(u64, u64, u64)> {
    let core = version.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
    let parsed = (parts.next()??, parts.next()??, parts.next()??);
    parts.next().is_none().then_some(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_full_manifest_and_refuses_mistakes() {
        let text = r#"
name = "notes"
axis = "terminal"
version = "0.2.0"
api = "1.0.0"
[capabilities]
env = ["TMUX"]
programs = [{ name = "tmux", args = [["-V"]] }]
memory_mb = 128
[terminal]
priority = 40
capabilities = ["peek"]
"#;
        let m = PluginManifest::parse(text, Path::new("m.toml")).unwrap();
        assert_eq!(m.capabilities().summary(), "env:TMUX, program:tmux (arguments: -V), memory:128 (MiB)");
        assert_eq!(m.component, PathBuf::from("driver.wasm"));
        let reparsed = PluginManifest::parse(&m.installed_text(), Path::new("x")).unwrap();
        assert_eq!(reparsed, m);

        for (bad, why) in [
            (text.replace("axis = \"terminal\"", "axis = \"storage\""), "no [terminal]"),
            (text.replace("memory_mb", "memroy_mb"), "unknown field"),
            (text.replace("\"tmux\", args", "\"/bin/tmux\", args"), "never given by path"),
            (text.replace("0.2.0", "two"), "MAJOR.MINOR.PATCH"),
            (text.replace("name = \"notes\"", "name = \"../x\""), "name must match"),
            (format!("component = \"../../etc/passwd\"\n{text}"), "inside the package"),
            (text.replace("0.2.0", "0.2.0-\\u001b[8m"), "semver"),
            (text.replace("0.2.0", "0.2.0+x\u{202e}"), "semver"),
            (text.replace("api = \"1.0.0\"", "api = \"1.0.0-rc\\n\""), "semver"),
            (format!("description = \"hi\\u001b[8m\"\n{text}"), "description must be one line"),
            (format!("description = \"a\\nb\"\n{text}"), "description must be one line"),
            (format!("description = \"{}\"\n{text}", "x".repeat(2000)), "description must be one line"),
            (text.replace("capabilities = [\"peek\"]", "capabilities = [\"pe\\u001bek\"]"), "printable words"),
            (format!("component = \"d\\u001b.wasm\"\n{text}"), "printable path"),
        ] {
            let err = PluginManifest::parse(&bad, Path::new("m.toml")).unwrap_err();
            assert!(err.contains(why), "{why}: {err}");
        }
    }

    #[test]
    fn semver_text() {
        for good in ["0.1.0", "1.2.3", "1.0.0-rc.1", "1.0.0-alpha-2+build.5", "10.20.30+20260101"] {
            assert!(is_semver(good), "{good}");
        }
        for bad in ["1.2", "01.2.3", "1.2.3-", "1.2.3-01", "1.2.3+", "1.2.3-a..b", "1.2.3-\u{1b}[8m", "1.2.3 ", "+1.2.3", "1.2.3-ü"] {
            assert!(!is_semver(bad), "{bad:?}");
        }
    }

    #[test]
    fn semver() {
        assert_eq!(semver_parts("1.2.3"), Some((1, 2, 3)));
        assert_eq!(semver_parts("1.2.3-rc.1"), Some((1, 2, 3)));
        assert_eq!(semver_parts("1.2"), None);
        assert_eq!(semver_parts("1.2.3.4"), None);
    }
}
