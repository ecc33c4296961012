//! The types axis's descriptor for the host's shared commands (see [`crate::axis_module`]): its
//! bundled plugs and its `driver new` template. It has no contract suite yet: `driver test` refuses.

use std::borrow::Cow;

use crate::axis::Axis;
use crate::axis_module::{AxisModule, Suite};
use crate::bundled;
use crate::capabilities::Capabilities;
use crate::runtime::DriverSource;

pub struct AgentModule;

/// `driver new types`: a plug that overrides nothing (every op falls back to agmsg's default).
const TEMPLATE: &[(&str, &str)] = &[
    ("Cargo.toml", include_str!("template/Cargo.toml")),
    ("README.md", include_str!("template/README.md")),
    ("agmsg-driver.toml", include_str!("template/agmsg-driver.toml")),
    ("src/lib.rs", include_str!("template/src/lib.rs")),
];

impl AxisModule for AgentModule {
    /// The name of a bundled plug.
    fn claims(&self, reference: &str) -> bool {
        bundled::of(Axis::Types).any(|d| d.name == reference)
    }

    fn suite(&self, reference: &str) -> Result<Suite, String> {
        Err(format!("'{reference}' is a delivery plug: the types axis has no contract suite yet (tests/agent_delivery.rs checks the bundled ones)"))
    }

    fn template(&self) -> &'static [(&'static str, &'static str)] {
        TEMPLATE
    }

    fn bundled_source(&self, name: &str) -> Option<DriverSource> {
        bundled_plug(name)
    }
}

/// The bundled plug of type `name`, as it runs: no capabilities (no filesystem, no programs, no
/// variables), the log only.
pub fn bundled_plug(name: &str) -> Option<DriverSource> {
    bundled::of(Axis::Types).find(|d| d.name == name).map(|d| DriverSource {
        name: d.name.to_owned(),
        sha256: d.sha256.to_owned(),
        wasm: Cow::Borrowed(d.wasm),
        path: None,
        capabilities: Capabilities::default(),
        settings: Vec::new(),
    })
}
