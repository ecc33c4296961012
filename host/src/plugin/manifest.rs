//! A plugin's manifest, `agmsg-driver.toml`, beside its component: who it is, which contract version it
//! targets, and the capabilities it asks for. Data only; parsed strictly (an unknown key is an error,
//! so a typo cannot silently drop a request or a limit).
//!
//! ```toml
//! name = "notes"                 # [a-zA-Z0-9_-]+, the name users select it by
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

use crate::error::HostError;

use crate::axis::Axis;
use crate::capabilities::{Capabilities, Capability};
use crate::display::is_printable_line;
use crate::semver::is_semver;

/// The longest description, component path or `[terminal]` backend; the longest `[terminal]` capability.
const MAX_TEXT_CHARS: usize = 1024;
const MAX_TOKEN_CHARS: usize = 64;

/// The file name of a plugin's manifest.
pub const MANIFEST_FILE: &str = "agmsg-driver.toml";
/// Where an installed plugin's component lives, beside its manifest.
pub const INSTALLED_COMPONENT: &str = "driver.wasm";

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
    /// A manifest that cannot be read or is refused is [`ExitClass::Refused`](crate::error::ExitClass).
    pub fn parse(text: &str, origin: &Path) -> Result<PluginManifest, HostError> {
        let manifest: PluginManifest = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(String::new(), |span| format!(":{}", text[..span.start].matches('\n').count() + 1));
            HostError::refused(format!("{}{line}: {}", origin.display(), e.message()))
        })?;
        manifest.validate().map_err(|e| HostError::refused(format!("{}: {e}", origin.display())))?;
        Ok(manifest)
    }

    /// Read and parse a manifest file; also the sha256 of its bytes (trust pins it).
    pub fn read(path: &Path) -> Result<(PluginManifest, String), HostError> {
        let bytes = super::read_file(path, super::MAX_TEXT_BYTES)?;
        let text = String::from_utf8(bytes).map_err(|_| HostError::refused(format!("{} is not UTF-8", path.display())))?;
        Ok((PluginManifest::parse(&text, path)?, super::sha256_hex(text.as_bytes())))
    }

    fn validate(&self) -> Result<(), String> {
        agmsg_contract::check_driver_name(&self.name).map_err(|e| e.to_string())?;
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
            if let Some(c) =
                keys.capabilities.iter().find(|c| c.is_empty() || c.contains(char::is_whitespace) || !is_printable_line(c, MAX_TOKEN_CHARS))
            {
                return Err(format!("[terminal] capabilities must be printable words, not {c:?}"));
            }
        }
        let axis = self.axis;
        if self.terminal.is_some() && axis.manifest_table() != Some("terminal") {
            return Err(format!("a {axis} driver has no [terminal] table"));
        }
        if self.capabilities.store && !axis.has_store() {
            return Err(format!("a {axis} driver cannot ask for a store"));
        }
        if !self.capabilities.programs.is_empty() && !axis.runs_programs() {
            return Err(format!("a {axis} driver cannot run programs (only terminal drivers can)"));
        }
        if !self.capabilities.network.is_empty() && !axis.reaches_network() {
            return Err(format!("a {axis} driver cannot reach the network (a delivery plug computes; the host touches the world)"));
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
            (
                "name = \"p\"\naxis = \"types\"\nversion = \"0.1.0\"\napi = \"1.0.0\"\n[capabilities]\nnetwork = [\"example.org:443\"]\n"
                    .to_owned(),
                "cannot reach the network",
            ),
        ] {
            let err = PluginManifest::parse(&bad, Path::new("m.toml")).unwrap_err();
            assert!(err.message.contains(why), "{why}: {err}");
            assert_eq!(err.class, crate::error::ExitClass::Refused, "{why}");
        }
    }
}
